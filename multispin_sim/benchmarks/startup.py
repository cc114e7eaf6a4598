"""Start-up cost: CPU time of a 10-round ``multispin-sim run`` of the default scenario and of
importing the engine, each in a fresh process (median of 3; the child's CPU via getrusage)."""
import pathlib
import resource
import subprocess
import sys
import tempfile

import numpy as np


def _child_cpu(args):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, check=True, capture_output=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def run(quick=False):
    repeat = 3
    runs, imports = [], []
    with tempfile.TemporaryDirectory() as tmp:
        scenario = pathlib.Path(tmp) / "default.yaml"
        scenario.write_text("name: default\nseed: 1\nmodel_pair: qwen2.5\ndevices:\n  count: 20\n"
                            "server:\n  dl_power_ratio: 4\npolicy:\n  mode: optimal\n"
                            "  draft: fixed\n")   # scenarios/default.yaml
        for i in range(repeat):
            argv = ["run", str(scenario), "--rounds", "10", "--quiet", "--out", f"{tmp}/out{i}"]
            runs.append(_child_cpu([sys.executable, "-c",
                                    f"import sys; from multispin_sim.cli import main; "
                                    f"sys.exit(main({argv!r}))"]))
            imports.append(_child_cpu([sys.executable, "-c",
                                       "import multispin_sim.cli, multispin_sim.engine"]))
    run_cpu, import_cpu = float(np.median(runs)), float(np.median(imports))
    print(f"10-round run of the default scenario (fresh process): {run_cpu:.2f} s CPU (median of "
          f"{repeat}); importing the CLI and the engine: {import_cpu:.2f} s CPU")
    return {"run10_cpu_s": run_cpu, "import_cpu_s": import_cpu}
