"""Bounds of single keys and checks of the files a scenario refers to: accepted values that
crashed (internal error), ran to infinite or NaN outputs, or were refused only once a run had
started, and errors that did not name the scenario file or named the wrong key.

Each fault goes through the real CLI in a subprocess: exit 2, one ``error: <file>: <key>: ...;
...`` line (the scenario file first, then the key), nothing written.
"""
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
TINY = {"name": "tiny", "devices": {"count": 2}, "run": {"rounds": 3}}
BIG = 10 ** 19            # beyond numpy's 64-bit integers
LONG_NAME = "a" * 300
MOVING = {"mobility": {"model": "random-waypoint"}}


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("MULTISPIN_SIM_DEBUG", None)
    return env


def cli(*args, cwd, timeout=120):
    return subprocess.run([sys.executable, "-m", "multispin_sim", *map(str, args)], cwd=cwd,
                          env=_env(), capture_output=True, text=True, timeout=timeout)


def one_error_line(p, status=2):
    assert p.returncode == status, (p.returncode, p.stderr[-2000:])
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr, p.stderr
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr
    assert "; " in lines[0], lines[0]
    return lines[0]


def merged(sections):
    data = json.loads(json.dumps(TINY))
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    return data


# files the content checks read (written next to the scenario)
FILES = {
    "bad.graphml": "not xml\n",
    "table.csv": "tokens,ms\n1,x\n",
    "arrivals.csv": "time_s,device\n0,99\n",
    "long.csv": f"time_s,device,tokens\n0,0,{10 ** 20}\n",
    "pairs.npz": "not an npz\n",
}

# case: (scenario sections, the key the error line names)
FAULTS = {
    # 1. accepted values that crashed with an internal error
    "ppp-density-1e308": ({"cells": {"layout": "ppp", "density_per_km2": 1e308}},
                          "cells.density_per_km2"),
    "ppp-region-1e308": ({"cells": {"layout": "ppp", "region_m": 1e308}}, "cells.region_m"),
    "length-tokens-1e19": ({"workload": {"arrivals": "poisson", "length_tokens": BIG}},
                           "workload.length_tokens"),
    "length-per-task-1e19": ({"workload": {"arrivals": "poisson", "length": "per-task",
                                           "length_per_task": {"gsm8k": BIG}}},
                             "workload.length_per_task.gsm8k"),
    "backoff-increase-1e20": ({"policy": {"draft": "backoff"},
                               "adaptive": {"backoff_increase": 10 ** 20}},
                              "adaptive.backoff_increase"),
    "backoff-decrease-1e20": ({"policy": {"draft": "backoff"},
                               "adaptive": {"backoff_decrease": 10 ** 20}},
                              "adaptive.backoff_decrease"),
    # 2. the memory of the robust policy's samples
    "robust-samples-1e19": ({"policy": {"mode": "robust"},
                             "csi": {"estimation_error_variance": 0.1},
                             "straggler": {"robust_samples": BIG}}, "straggler.robust_samples"),
    "hex-isd-1e308": ({"cells": {"layout": "hex", "count": 7, "isd_m": 1e308}}, "cells.isd_m"),
    # 3. powers, noise, distances and times that gave infinite or NaN outputs
    "ul-power-4000": ({"devices": {"ul_power_dbm": 4000}}, "devices.ul_power_dbm"),
    "ul-power--4000": ({"devices": {"ul_power_dbm": -4000}}, "devices.ul_power_dbm"),
    "dl-power-4000": ({"server": {"dl_power_dbm": 4000}}, "server.dl_power_dbm"),
    "dl-ratio-1e300": ({"server": {"dl_power_ratio": 1e300}}, "server.dl_power_ratio"),
    "override-ul-power": ({"devices": {"overrides": {0: {"ul_power_dbm": 1e308}}}},
                          "devices.overrides.0.ul_power_dbm"),
    "cell-dl-power": ({"cells": {"layout": "hex", "count": 7,
                                 "servers": {0: {"dl_power_dbm": 1e308}}}},
                      "cells.servers.0.dl_power_dbm"),
    "distance-1e-100": ({"devices": {"distance_m": 1e-100}}, "devices.distance_m"),
    "override-distance": ({"devices": {"overrides": {1: {"distance_m": 0.5}}}},
                          "devices.overrides.1.distance_m"),
    "coordinates-1e-300": ({"topology": {"layout": "coordinates",
                                         "device_xy_m": [[1e-300, 0.0], [50.0, 0.0]]}},
                           "topology.device_xy_m.0"),
    "noise-figure-4000": ({"channel": {"noise_figure_db": 4000}}, "channel.noise_figure_db"),
    "shadowing-decorrelation-1e-20": ({**MOVING, "channel": {"shadowing_db": 4.0,
                                                              "shadowing_decorrelation_m": 1e-20}},
                                      "channel.shadowing_decorrelation_m"),
    "cell-server-beyond-the-grid": ({"cells": {"layout": "hex", "count": 7,
                                               "servers": {7: {"verify_fixed_ms": 5.0}}}},
                                    "cells.servers.7"),
    "cell-server-one-cell": ({"cells": {"servers": {0: {"verify_fixed_ms": 5.0}}}},
                             "cells.servers"),
    "csi-delay-1e308": ({"channel": {"fading": "jakes"}, "csi": {"delay_ms": 1e308}},
                        "csi.delay_ms"),
    "verify-per-token-1e308": ({"server": {"verify_model": "tokens",
                                           "verify_per_token_ms": 1e308}},
                               "server.verify_per_token_ms"),
    "draft-latency-1e308": ({"devices": {"draft_latency_ms": 1e308}},
                            "devices.draft_latency_ms"),
    "server-power-1e308": ({"server": {"power_w": 1e308}}, "server.power_w"),
    "measurement-period-1e-300": ({**MOVING, "cells": {"layout": "hex", "count": 7,
                                                       "measurement_period_ms": 1e-300}},
                                  "cells.measurement_period_ms"),
    # 9. per-cell times that made the network's horizon absurd
    "cell-verify-1e12": ({"cells": {"layout": "hex", "count": 7,
                                    "servers": {0: {"verify_fixed_ms": 1e12}}}},
                         "cells.servers.0.verify_fixed_ms"),
    "backhaul-latency-1e12": ({"cells": {"layout": "hex", "count": 7,
                                         "backhaul_latency_ms": 1e12}},
                              "cells.backhaul_latency_ms"),
    # 4. file-content and model checks: the scenario file, then the right key
    "trace-benchmark": ({"acceptance": {"model": "trace", "trace_benchmark": "spec-bench"}},
                        "acceptance.trace_benchmark"),
    "trace-categories": ({"acceptance": {"model": "trace", "trace_categories": ["nosuch"]}},
                         "acceptance.trace_categories"),
    "trace-model": ({"acceptance": {"model": "trace", "trace_model": "nosuch"}},
                    "acceptance.trace_model"),
    "graphml-file": ({"topology": {"layout": "graphml", "graphml_file": "bad.graphml"}},
                     "topology.graphml_file"),
    "graphml-cells": ({"cells": {"layout": "graphml"}, "topology": {"graphml_file":
                                                                    "bad.graphml"}},
                      "topology.graphml_file"),
    "verify-table": ({"server": {"verify_model": "table", "verify_table": "table.csv"}},
                     "server.verify_table"),
    "workload-trace": ({"workload": {"arrivals": "trace", "trace_file": "arrivals.csv"}},
                       "workload.trace_file"),
    "workload-trace-tokens-1e20": ({"workload": {"arrivals": "trace", "trace_file": "long.csv"}},
                                   "workload.trace_file"),
    "pairs-file": ({"payload": {"model": "token", "pairs_file": "pairs.npz"}},
                   "payload.pairs_file"),
    "too-few-prbs": ({"devices": {"count": 300}, "link": {"model": "mcs"}},
                     "link.subcarrier_spacing_khz"),
    "zero-verification": ({"server": {"verify_fixed_ms": 0, "verify_per_device_ms": 0},
                           "policy": {"draft_length": 0}}, "server.verify_fixed_ms"),
    # 5. a Poisson layout that draws no server at the scenario's seed
    "ppp-no-server": ({"cells": {"layout": "ppp", "density_per_km2": 0.1}},
                      "cells.density_per_km2"),
    # 6. the memory blamed on the key that takes it
    "memory-saa-samples": ({"policy": {"saa_samples": 10 ** 11}}, "policy.saa_samples"),
    "memory-ppp-cells": ({"cells": {"layout": "ppp", "density_per_km2": 10000},
                          "devices": {"count": 20}}, "cells.density_per_km2"),
    "memory-hex-cells": ({"cells": {"layout": "hex", "count": 9919}, "devices": {"count": 20}},
                         "cells.count"),
    # 7. a name too long for a folder
    "long-name": ({"name": LONG_NAME}, "name"),
}


# validate makes the same checks as run (the loader, then read_inputs): these cases check it
# for the checks run made only once it had started, or that validate did not make
VALIDATE_TOO = ("ppp-no-server", "long-name", "trace-benchmark", "graphml-cells",
                "too-few-prbs", "zero-verification", "memory-ppp-cells", "ul-power-4000",
                "cell-server-beyond-the-grid")
CASES = [(case, "run") for case in sorted(FAULTS)] + [(case, "validate") for case in VALIDATE_TOO]


@pytest.mark.parametrize("case, command", CASES)
def test_fault_refused_up_front_naming_file_and_key(tmp_path, case, command):
    sections, key = FAULTS[case]
    for name, text in FILES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(merged(sections), sort_keys=False), encoding="utf-8")
    before = sorted(p.name for p in tmp_path.iterdir())
    args = ("run", path, "--out", tmp_path / "out", "--quiet") if command == "run" else \
        ("validate", path)
    line = one_error_line(cli(*args, cwd=tmp_path))
    assert line.startswith(f"error: {path}: {key}: "), line
    assert sorted(p.name for p in tmp_path.iterdir()) == before   # no out/, no results/
    if case.startswith("memory"):   # sizes and counts written compactly
        assert len(line) < 600 and not re.search(r"\d{10}", line.replace(str(path), "")), line


def test_override_of_a_file_content_key_does_not_blame_the_file(tmp_path):
    """As the schema errors: a key given by --set is named without the file."""
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(merged({"acceptance": {"model": "trace"}})), encoding="utf-8")
    line = one_error_line(cli("validate", path, "--set", "acceptance.trace_benchmark=xx",
                              cwd=tmp_path))
    assert line.startswith("error: acceptance.trace_benchmark: "), line


def test_sweep_empty_out_refused(tmp_path):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"name": "s", "base": TINY,
                                     "sweep": {"devices.count": [1, 2]}}), encoding="utf-8")
    line = one_error_line(cli("sweep", sweep, "--out", "", "--executor", "serial",
                              cwd=tmp_path))
    assert "--out" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.yaml"]


# ------------------------------------------------------------------------------------------
# in process: the loader, the memory estimate and the corners the bounds allow


def error_of(data):
    from multispin_sim.scenario import ScenarioError, load_scenario

    with pytest.raises(ScenarioError) as info:
        load_scenario(data)
    return info.value


@pytest.mark.parametrize("data, key", [
    ({"seed": 2 ** 64}, "seed"),
    ({"name": "b" * 201}, "name"),
    ({"cells": {"layout": "hex", "count": 10 ** 400}}, "cells.count"),
    ({"cells": {"context_prompt_tokens": 10 ** 30}}, "cells.context_prompt_tokens"),
    ({"cells": {"backhaul_rate_mbps": 1e-300}}, "cells.backhaul_rate_mbps"),
    ({"channel": {"bandwidth_mhz": 1e-300}}, "channel.bandwidth_mhz"),
    ({"devices": {"draft_latency_spread": [1, 1e308]}}, "devices.draft_latency_spread"),
    ({"compute": {"throttle_factor": 1e308}}, "compute.throttle_factor"),
    ({"energy": {"idle_power_w": 1e308}}, "energy.idle_power_w"),
    ({"link": {"retry_block_ms": 1e308}}, "link.retry_block_ms"),
    ({"serving": {"window_ms": 1e308}}, "serving.window_ms"),
    ({"limits": {"max_memory_mb": 1e300}}, "limits.max_memory_mb"),
    ({"devices": {"ul_power_dbm": -100}, "server": {"dl_power_ratio": 1e-10}},
     "server.dl_power_ratio"),
    # integers beyond any float: refused, not an OverflowError of the memory estimate
    ({"devices": {"count": 10 ** 400}}, "devices.count"),
    ({"policy": {"saa_samples": 10 ** 400}}, "policy.saa_samples"),
    ({"run": {"rounds": 10 ** 400}, "cells": {"layout": "hex", "count": 7}}, "run.rounds"),
    ({"payload": {"prob_bits": 10 ** 400}}, "payload.prob_bits"),
    ({"payload": {"vocab": 10 ** 400}}, "payload.vocab"),
])
def test_absurd_values_refused_by_the_loader(data, key):
    err = error_of(data)
    assert err.path == key and "\n" not in str(err), str(err)


def test_bounds_admit_what_they_document():
    from multispin_sim.scenario import load_scenario

    sc = load_scenario({"name": "n" * 200, "seed": 2 ** 64 - 1,
                        "devices": {"distance_m": [1, 100000], "ul_power_dbm": 100},
                        "server": {"dl_power_dbm": -100, "verify_fixed_ms": 60000},
                        "channel": {"noise_figure_db": 100}})
    assert sc.devices.distance_m == (1.0, 100000.0)


def test_memory_terms_count_the_sample_counts():
    """policy.saa_samples and straggler.robust_samples have their own terms; the estimate (the
    sum) is the one it was for the other keys."""
    from multispin_sim.scenario import load_scenario
    from multispin_sim.scenario.limits import (BASE_BYTES, PER_ROBUST_DRAW_BYTES,
                                               ROBUST_SLICE_DRAWS, estimated_memory_bytes,
                                               memory_terms)

    sc = load_scenario(None)
    terms = memory_terms(sc)
    assert terms["policy.saa_samples"] == 20 * 2 * sc.policy.saa_samples
    assert "straggler.robust_samples" not in terms
    assert estimated_memory_bytes(sc) == BASE_BYTES + sum(terms.values())
    robust = memory_terms(load_scenario(None, {"policy.mode": "robust",
                                              "csi.estimation_error_variance": 0.1,
                                              "straggler.robust_samples": 10 ** 6}))
    assert robust["straggler.robust_samples"] == PER_ROBUST_DRAW_BYTES * 20 * 10 ** 6
    exact = memory_terms(load_scenario(None, {"policy.mode": "robust"}))   # exact CSI: no draws
    assert "straggler.robust_samples" not in exact
    small = memory_terms(load_scenario(None, {"policy.mode": "robust",
                                              "csi.estimation_error_variance": 0.1}))
    assert small["straggler.robust_samples"] == PER_ROBUST_DRAW_BYTES * ROBUST_SLICE_DRAWS


def test_the_token_models_memory_grows_with_its_table_rows():
    """One row of the token model's table per distinct alpha, each V x (48 + 16 x formats)
    bytes: twenty devices of their own alphas need twenty rows (measured: 427 MB at the full
    vocabulary against 116 MB for one row), which a 400 MB limit refuses, naming payload.vocab;
    the same devices on the tasks' four rates fit."""
    from multispin_sim.scenario import load_scenario
    from multispin_sim.scenario.limits import memory_terms

    own = {i: {"alpha": 0.80 + 0.005 * i} for i in range(20)}
    base = {"payload": {"model": "token"}, "limits": {"max_memory_mb": 400}}
    err = error_of({**base, "devices": {"count": 20, "overrides": own}})
    assert err.path == "payload.vocab", str(err)
    load_scenario({**base, "devices": {"count": 20}})   # the tasks' rates: fits
    roomy = {**base, "limits": {"max_memory_mb": 4096}}
    tasks = memory_terms(load_scenario(roomy))["payload.vocab"]
    assert memory_terms(load_scenario({**roomy, "devices": {"count": 20, "overrides": own}}))[
        "payload.vocab"] > 3 * tasks


def test_memory_of_many_cells_names_the_cells_and_stays_short():
    err = error_of({"cells": {"layout": "ppp", "density_per_km2": 1e6, "region_m": 1e5},
                    "limits": {"max_memory_mb": 1e9}})
    assert err.path == "cells.density_per_km2" and len(str(err)) < 500, str(err)
    assert not re.search(r"\d{10}", str(err)), str(err)
    # rounds, not the 7 cells, take the memory here
    err = error_of({"run": {"rounds": 10 ** 8}, "cells": {"layout": "hex", "count": 7},
                    "limits": {"max_memory_mb": 20000}})
    assert err.path == "run.rounds", str(err)


# the peak resident memory of this process alone (VmHWM: ru_maxrss would keep the parent's
# across the exec, a pytest worker's hundreds of MB)
_PEAK = """import re, sys, tempfile
import multispin_sim as ms
with tempfile.TemporaryDirectory() as tmp:
    ms.simulate({"cells": {"layout": "hex", "count": int(sys.argv[1])}, "devices": {"count": 1},
                 "run": {"rounds": 3}}, tmp + "/run")
with open("/proc/self/status") as f:
    print(int(re.search(r"VmHWM:\\s*(\\d+) kB", f.read()).group(1)) * 1024)"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc")
def test_the_memory_estimate_of_a_cell_bounds_what_a_cell_takes():
    """Thousands of cells: the estimate grows by at least what each added cell takes at the
    peak (measured between 37 and 127 cells of one device; 9,919 such cells were accepted at
    739 MB and passed 3.4 GB), so a network too large for limits.max_memory_mb is refused."""
    from multispin_sim.scenario import load_scenario
    from multispin_sim.scenario.limits import estimated_memory_bytes

    peak, estimate = {}, {}
    for n in (37, 127):
        out = subprocess.run([sys.executable, "-c", _PEAK, str(n)], capture_output=True,
                             text=True, env=_env(), timeout=300, check=True)
        peak[n] = int(out.stdout.split()[-1])
        estimate[n] = estimated_memory_bytes(load_scenario(
            None, {"cells.layout": "hex", "cells.count": n, "devices.count": 1,
                   "run.rounds": 3}))
    assert estimate[127] - estimate[37] >= peak[127] - peak[37] > 0, (peak, estimate)
    assert estimate[127] >= peak[127]
    err = error_of({"cells": {"layout": "hex", "count": 9919}, "devices": {"count": 1}})
    assert err.path == "cells.count", str(err)


def _finite(value):
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(_finite(v) for v in value)
    return not isinstance(value, float) or math.isfinite(value)


@pytest.mark.parametrize("overrides", [
    {"devices.ul_power_dbm": -100, "server.dl_power_dbm": -100, "channel.noise_psd_dbm_hz": 30,
     "channel.noise_figure_db": 100, "channel.ref_gain_db": -300,
     "channel.pathloss_exponent": 10, "devices.distance_m": 100000, "channel.shadowing_db": 40,
     "channel.bandwidth_mhz": 0.001},
    {"devices.ul_power_dbm": 100, "server.dl_power_dbm": 100, "channel.noise_psd_dbm_hz": -300,
     "channel.ref_gain_db": 100, "devices.distance_m": 1, "channel.shadowing_db": 40,
     "channel.bandwidth_mhz": 100000},
    {"server.verify_fixed_ms": 60000, "server.verify_per_device_ms": 60000,
     "devices.draft_latency_ms": 60000, "devices.draft_latency_spread": [100, 100],
     "compute.thermal": True, "compute.throttle_factor": 100, "channel.fading": "jakes",
     "csi.delay_ms": 60000, "server.power_w": 1e6, "energy.idle_power_w": 1e6},
], ids=["weakest-link", "strongest-link", "slowest-steps"])
def test_corners_the_bounds_allow_simulate_to_finite_numbers(overrides):
    import multispin_sim as ms

    sc = ms.load_scenario(None, {"devices.count": 3, "run.rounds": 5, **overrides})
    res = ms.simulate(sc)
    assert res.complete and _finite(res.summary), res.summary
    assert all(v is not None for k, v in res.summary.get("energy", {}).items()), res.summary
