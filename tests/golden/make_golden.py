"""Regenerate the golden runs (ONLY when a change is meant to alter the paper's default outputs).

The golden files pin the outputs of a few scenarios as they were before the components
(acceptance models, link layer, compute/energy, payloads, protocols) were added: each
component's default must leave them value-for-value identical (tests/test_golden.py).

    python tests/golden/make_golden.py
"""
import gzip
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

import multispin_sim as ms  # noqa: E402

# name -> (scenario file, overrides); small enough to run in a few seconds each
GOLDEN = {
    "default": ("scenarios/default.yaml", {"run.rounds": 300, "seed": 7}),
    "greedy": ("scenarios/default.yaml", {"run.rounds": 40, "seed": 3, "policy.draft": "greedy",
                                          "policy.saa_samples": 200}),
    "budget": ("scenarios/default.yaml", {"run.rounds": 10, "seed": 5, "policy.draft": "budget",
                                          "policy.saa_samples": 200}),
    "light-load": ("scenarios/light-load.yaml", {"run.max_time_s": 300, "seed": 2}),
    "all-dl-indep": ("scenarios/default.yaml", {"run.rounds": 200, "seed": 9,
                                                "policy.mode": "all-dl",
                                                "channel.reciprocal": False}),
}
TABLES = ("rounds", "device_rounds", "devices", "requests")


def main():
    root = HERE.parent.parent
    for name, (path, overrides) in GOLDEN.items():
        with tempfile.TemporaryDirectory() as tmp:
            sc = ms.load_scenario(root / path, overrides=overrides)
            ms.simulate(sc, out=Path(tmp) / "out")
            for table in TABLES:
                src = Path(tmp) / "out" / f"{table}.csv"
                if src.exists():
                    with open(src, "rb") as f, open(HERE / f"{name}.{table}.csv.gz", "wb") as raw, \
                            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as g:
                        shutil.copyfileobj(f, g)
        print("wrote", name)


if __name__ == "__main__":
    main()
