"""Fault injection: the real CLI in subprocesses, fed what a careless user, a full disk or a
batch scheduler would feed it.

Every case asserts the exit status, that stderr carries one ``error: <what>: <why>; <what to
do>`` line and no traceback, and the state of the output folder (nothing written, or a complete
set of valid files: whole CSV rows, rounds.csv and device_rounds.csv holding the same rounds,
a strict-JSON summary.json). Subprocesses run under an address-space limit (a case that would
exhaust memory fails fast instead of eating the machine) and a timeout (one that would hang
fails).

Classes (the ``FAULT_CLASS`` marker names the class of each case): limits (accepted values that
hung or exhausted memory), geometry, output locations (full disk included), signals (SIGTERM,
SIGHUP, double signals at seeded random points, SIGKILL of a sweep and of its workers, a Dask
worker killed), concurrency (two sweeps into one folder), strict JSON, error path, fuzzing.
"""
import csv
import json
import math
import os
import random
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = 3 << 30          # address space of a CLI subprocess
TIMEOUT_S = 60

TINY = {"name": "tiny", "devices": {"count": 3}, "run": {"rounds": 30}}


# ------------------------------------------------------------------------------------------
# helpers

def _limits(memory=MEMORY_LIMIT, fsize=None, ignore=()):
    def apply():
        # the stop signals as a terminal leaves them, whatever started these tests (a script's
        # background job ignores SIGINT); ``ignore``: those the command is started ignoring
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN if sig in ignore else signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        if fsize is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    return apply


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("MULTISPIN_SIM_DEBUG", None)
    return env


class Outcome:
    def __init__(self, rc, out, err, elapsed):
        self.rc, self.out, self.err, self.elapsed = rc, out, err, elapsed

    def __repr__(self):
        return f"Outcome(rc={self.rc}, err={self.err[-2000:]!r})"


def cli(*args, cwd, timeout=TIMEOUT_S, memory=MEMORY_LIMIT, fsize=None):
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-m", "multispin_sim", *map(str, args)], cwd=cwd,
                           env=_env(), capture_output=True, text=True, timeout=timeout,
                           preexec_fn=_limits(memory, fsize))
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{' '.join(map(str, args))} did not finish in {timeout} s "
                    f"(stderr: {(exc.stderr or b'')[-500:]!r})")
    return Outcome(p.returncode, p.stdout, p.stderr, time.perf_counter() - t0)


def start(*args, cwd, ignore=()):
    return subprocess.Popen([sys.executable, "-m", "multispin_sim", *map(str, args)], cwd=cwd,
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, preexec_fn=_limits(ignore=ignore))


def error_line(o, status):
    """The outcome failed cleanly: ``status``, no traceback, one ``error: what: why; do`` line."""
    assert o.rc == status, o
    assert "Traceback" not in o.err, o
    lines = [line for line in o.err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, o
    assert ": " in lines[0][len("error: "):] and "; " in lines[0], lines[0]
    return lines[0]


def write_yaml(path, data):
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def scenario(tmp_path, **sections):
    data = json.loads(json.dumps(TINY))
    for key, value in sections.items():
        if isinstance(value, dict):
            data.setdefault(key, {}).update(value)
        else:
            data[key] = value
    return write_yaml(tmp_path / "scenario.yaml", data)


def strict_json(path):
    def refuse(token):
        raise ValueError(f"{path}: {token} is not JSON")
    return json.loads(Path(path).read_text(encoding="utf-8"), parse_constant=refuse)


def read_csv(path):
    """Rows of a CSV; asserts every row is whole (as many fields as the header, newline-ended)."""
    text = Path(path).read_text(encoding="utf-8")
    assert text.endswith("\n"), f"{path}: last row cut"
    rows = list(csv.reader(text.splitlines()))
    header = rows[0]
    for row in rows[1:]:
        assert len(row) == len(header), f"{path}: row {row} cut"
    return header, rows[1:]


def consistent_run_folder(folder):
    """A complete set of valid files: whole rows, equal rounds in both tables, strict JSON."""
    folder = Path(folder)
    summary = strict_json(folder / "summary.json")
    strict_json(folder / "run.json")
    header, rounds = read_csv(folder / "rounds.csv")
    dheader, drows = read_csv(folder / "device_rounds.csv")
    read_csv(folder / "devices.csv")
    ids = [int(r[0]) for r in rounds]
    assert ids == list(range(len(ids)))
    device_round_ids = sorted({int(r[0]) for r in drows})
    assert device_round_ids == ids, "rounds.csv and device_rounds.csv hold different rounds"
    assert summary["rounds"] == len(ids)
    return summary


def no_folder_or_empty(path):
    path = Path(path)
    return not path.exists() or (path.is_dir() and not any(path.iterdir()))


def children_of(pid):
    """Pids of the live descendants of ``pid`` (from /proc)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if fields[0] != "Z":
                parents.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def alive(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def wait_dead(pids, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


def sweep_file(tmp_path, name="faults", rounds=40, counts=(2, 3, 4), reps=2):
    return write_yaml(tmp_path / f"{name}.yaml", {
        "name": name,
        "base": {"run": {"rounds": rounds}},
        "sweep": {"grid": {"devices.count": list(counts)}, "replications": reps, "seed": 7},
    })


def deterministic_runs(folder):
    with open(Path(folder) / "runs.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    drop = ("wall_time_s", "rounds_per_s", "elapsed_s", "run_dir")
    return [{k: v for k, v in r.items() if k not in drop} for r in rows]


# ------------------------------------------------------------------------------------------
# limits: accepted values that hung or exhausted memory

LIMIT_CASES = {
    "coherence-1e-5": ({"channel": {"coherence_time_ms": 1e-5}}, "channel.coherence_time_ms"),
    "coherence-1e-9": ({"channel": {"coherence_time_ms": 1e-9}}, "channel.coherence_time_ms"),
    "region-zero": ({"mobility": {"model": "random-waypoint", "region_m": [0, 0]}},
                    "mobility.region_m"),
    "region-tiny": ({"mobility": {"model": "random-waypoint", "region_m": [0, 1e-300]}},
                    "mobility.region_m"),
    "speed-absurd": ({"mobility": {"model": "random-waypoint", "speed_mps": 1e9}},
                     "mobility.speed_mps"),
    "zero-rounds": ({"server": {"verify_fixed_ms": 0, "verify_per_device_ms": 0},
                     "policy": {"draft_length": 0}}, "server.verify_fixed_ms"),
    "zero-rounds-tokens": ({"server": {"verify_model": "tokens", "verify_fixed_ms": 0,
                                       "verify_per_token_ms": 0},
                            "policy": {"draft": "greedy"}}, "server.verify_fixed_ms"),
    "devices-1e7": ({"devices": {"count": 10_000_000}}, "devices.count"),
    "rounds-1e12": ({"run": {"rounds": 10**12}}, "run.rounds"),
    "distance-1e100": ({"devices": {"distance_m": 1e100}}, "devices.distance_m"),
    # a gain or the noise power that underflows to 0 divided a rate by zero mid-run
    "noise-1e308": ({"channel": {"noise_psd_dbm_hz": -1e308}}, "channel.noise_psd_dbm_hz"),
    "ref-gain-1e308": ({"channel": {"ref_gain_db": -1e308}}, "channel.ref_gain_db"),
    "pathloss-1e15": ({"channel": {"pathloss_exponent": 1e15}}, "channel.pathloss_exponent"),
}


@pytest.mark.parametrize("channel, devices", [
    ({"ref_gain_db": -300, "pathloss_exponent": 10, "noise_psd_dbm_hz": 30, "shadowing_db": 40},
     {"distance_m": 1e5}),
    ({"ref_gain_db": 100, "noise_psd_dbm_hz": -300}, {"distance_m": 1}),
])
def test_limit_corners_of_the_link_budget_simulate_to_finite_numbers(tmp_path, channel, devices):
    """FAULT_CLASS limits: the extreme corners the bounds allow give a complete, finite run."""
    path = scenario(tmp_path, channel=channel, devices=devices, run={"rounds": 10})
    o = cli("run", path, "--out", tmp_path / "out", "--quiet", cwd=tmp_path, timeout=45)
    assert o.rc == 0, o
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["complete"] and math.isfinite(summary["goodput_tps"])


@pytest.mark.parametrize("case", sorted(LIMIT_CASES))
def test_limit_refused_up_front(tmp_path, case):
    """FAULT_CLASS limits: refused at validation, naming the key, before any file is written."""
    sections, key = LIMIT_CASES[case]
    path = scenario(tmp_path, **sections)
    o = cli("run", path, "--out", tmp_path / "out", "--quiet", cwd=tmp_path, timeout=30)
    line = error_line(o, 2)
    assert key in line
    assert no_folder_or_empty(tmp_path / "out")
    assert o.elapsed < 45


FAR_NR = {"link": {"model": "mcs"}, "devices": {"distance_m": 1e5}}
YEARS = {"channel": {"noise_figure_db": 100}, "mobility": {"model": "random-waypoint"},
         "limits": {"max_legs_per_round": 1000}}
# case: (scenario sections, words of the error line, words it must not have, words of the
# stop reason in the run's summary.json)
LIMIT_STOPS = {
    "nr-static-outage": (dict(FAR_NR, channel={"fading": "none"}),
                         ("outage for good", "raise the power"), (), "outage"),
    "nr-fading-outage": (dict(FAR_NR, channel={"fading": "gauss-markov"},
                              limits={"max_blocks_per_transmission": 1000}),
                         ("more than 1,000 fading blocks", "limits.max_blocks_per_transmission"),
                         ("does not change",), "fading blocks"),
    "shannon-grid": ({"channel": {"fading": "gauss-markov", "coherence_time_ms": 1.0},
                      "devices": {"distance_m": 1e5},
                      "limits": {"max_blocks_per_transmission": 5000}},
                     ("more than 5,000 fading blocks of 1 ms",), (), "fading blocks"),
    "waypoint-legs": (YEARS, ("more than 1,000 waypoint legs", "link budget"), (),
                      "waypoint legs"),
    "waypoint-legs-7-cells": (dict(YEARS, devices={"count": 2}, cells={
        "layout": "hex", "count": 7, "handover": "association"}),
        ("more than 1,000 waypoint legs", "link budget"), (), "waypoint legs"),
}


@pytest.mark.parametrize("case", sorted(LIMIT_STOPS))
def test_limit_stops_the_run_naming_its_reason(tmp_path, case):
    """FAULT_CLASS limits: the run stops (exit 1, complete: false) with the reason and what to
    change, not an internal error:
    - nr-static-outage: an NR correction below the lowest MCS on a channel that never changes;
    - nr-fading-outage: the same on a fading channel waits limits.max_blocks_per_transmission
      blocks and does not claim that the channel never changes;
    - shannon-grid: on a fading grid, a bound that is no power of 8 (blocks are read 16, 128,
      1024, then 4,096 at a time) is the one reported, with the block length;
    - waypoint-legs: a link budget with almost no rate makes rounds of years, through which a
      moving device would walk millions of legs (limits.max_legs_per_round);
    - waypoint-legs-7-cells: the same in one cell of several: the run's own summary.json has
      the cell's reason and the error line the limit's advice."""
    sections, words, absent, reason = LIMIT_STOPS[case]
    path = scenario(tmp_path, run={"rounds": 5}, **sections)
    o = cli("run", path, "--out", tmp_path / "out", "--quiet", cwd=tmp_path, timeout=60)
    line = error_line(o, 1)
    assert all(w in line for w in words) and not any(w in line for w in absent), line
    if "cells" in sections:
        summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    else:
        summary = consistent_run_folder(tmp_path / "out")
    assert summary["complete"] is False and reason in summary["stop_reason"]


def test_limit_unstable_queue_stops_at_backlog_bound(tmp_path):
    """FAULT_CLASS limits: an overloaded Poisson workload stops at a bound, complete: false."""
    path = scenario(tmp_path, workload={"arrivals": "poisson", "rate_per_s": 1e6},
                    run={"rounds": 100000}, limits={"max_backlog_requests": 20000})
    o = cli("run", path, "--out", tmp_path / "out", "--quiet", cwd=tmp_path,
            memory=2 << 30, timeout=45)
    line = error_line(o, 1)
    assert "backlog" in line
    summary = consistent_run_folder(tmp_path / "out")
    assert summary["complete"] is False and "backlog" in summary["stop_reason"]


def test_limit_many_devices_bounded_memory(tmp_path):
    """FAULT_CLASS limits: many devices run within the memory the validator estimated (the
    estimate is an upper bound of the measured peak), and a count beyond limits.max_memory_mb
    is refused (see test_limit_refused_up_front[devices-1e7])."""
    from multispin_sim.scenario import load_scenario
    from multispin_sim.scenario.limits import estimated_memory_bytes

    path = scenario(tmp_path, devices={"count": 4000}, run={"rounds": 3})
    # the peak of this process's own memory (VmHWM): getrusage's ru_maxrss would also count the
    # pytest process this child was forked from (Linux keeps the maximum across execve)
    code = ("import resource, sys; from multispin_sim.cli import main; s = main(sys.argv[1:]); "
            "hwm = [int(l.split()[1]) * 1024 for l in open('/proc/self/status') "
            "if l.startswith('VmHWM:')] if sys.platform.startswith('linux') else []; "
            "print(hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024); "
            "sys.exit(s)")
    p = subprocess.run([sys.executable, "-c", code, "run", str(path), "--out",
                        str(tmp_path / "out"), "--quiet"], cwd=tmp_path, env=_env(),
                       capture_output=True, text=True, timeout=TIMEOUT_S,
                       preexec_fn=_limits())
    assert p.returncode == 0, p.stderr
    peak = int(p.stdout.split()[-1])
    assert peak <= estimated_memory_bytes(load_scenario(path))
    consistent_run_folder(tmp_path / "out")


def _alias_bomb(levels=9):
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    lines.append(f"name: *a{levels - 1}")
    return "\n".join(lines) + "\n"


def test_limit_yaml_alias_bomb(tmp_path):
    """FAULT_CLASS limits: a 1 KB alias bomb under a valid key is refused at once."""
    path = tmp_path / "bomb.yaml"
    path.write_text(_alias_bomb(), encoding="utf-8")
    assert path.stat().st_size < 2000
    o = cli("validate", path, cwd=tmp_path, memory=1 << 30, timeout=20)
    assert "alias" in error_line(o, 2)


def test_limit_yaml_nesting(tmp_path):
    """FAULT_CLASS limits: 5,000 nested levels give one line, not a RecursionError."""
    path = tmp_path / "deep.yaml"
    path.write_text("name: " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    o = cli("validate", path, cwd=tmp_path, timeout=20)
    assert "nest" in error_line(o, 2)


def test_limit_set_nesting(tmp_path):
    """FAULT_CLASS limits: the same through --set."""
    o = cli("validate", "--set", "name=" + "[" * 5000 + "]" * 5000, cwd=tmp_path, timeout=20)
    assert "nest" in error_line(o, 2)


def test_limit_sweep_grid_size(tmp_path):
    """FAULT_CLASS limits: a sweep of 1e12 cells is refused before it is expanded."""
    path = write_yaml(tmp_path / "huge.yaml", {
        "name": "huge", "sweep": {"grid": {
            "devices.count": {"start": 1, "stop": 10000, "num": 10000},
            "policy.saa_samples": {"start": 1, "stop": 10000, "num": 10000},
            "payload.prob_bits": {"start": 1, "stop": 10000, "num": 10000}}}})
    o = cli("sweep", path, "--out", tmp_path / "out", cwd=tmp_path, timeout=20)
    assert "cells" in error_line(o, 2)
    assert o.elapsed < 45
    assert no_folder_or_empty(tmp_path / "out")


# ------------------------------------------------------------------------------------------
# geometry

def _graphml(tmp_path, x):
    path = tmp_path / "topo.graphml"
    path.write_text(f"""<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="x" for="node" attr.name="x" attr.type="double"/>
  <key id="y" for="node" attr.name="y" attr.type="double"/>
  <key id="role" for="node" attr.name="role" attr.type="string"/>
  <graph edgedefault="undirected">
    <node id="server"><data key="role">server</data><data key="x">0</data><data key="y">0</data></node>
    <node id="a"><data key="x">{x}</data><data key="y">10</data></node>
    <node id="b"><data key="x">100</data><data key="y">20</data></node>
    <node id="c"><data key="x">-50</data><data key="y">200</data></node>
  </graph>
</graphml>
""", encoding="utf-8")
    return path


@pytest.mark.parametrize("x", ["NaN", "INF", "-INF", "1e200"])
def test_geometry_graphml_refused(tmp_path, x):
    """FAULT_CLASS geometry: NaN/INF/absurd GraphML coordinates are refused before any output."""
    g = _graphml(tmp_path, x)
    path = scenario(tmp_path, topology={"layout": "graphml", "graphml_file": str(g)})
    o = cli("run", path, "--out", tmp_path / "out", "--quiet", cwd=tmp_path)
    assert "topology.graphml_file" in error_line(o, 2)
    assert no_folder_or_empty(tmp_path / "out")


@pytest.mark.parametrize("xy", [[".nan", 0.0], [1e200, 0.0], [".inf", 5.0]])
def test_geometry_coordinates_refused(tmp_path, xy):
    """FAULT_CLASS geometry: device_xy_m that are not finite or absurdly far are refused."""
    text = (f"name: c\ndevices: {{count: 1}}\nrun: {{rounds: 5}}\ntopology: {{layout: "
            f"coordinates, device_xy_m: [[{xy[0]}, {xy[1]}]]}}\n")
    path = tmp_path / "coords.yaml"
    path.write_text(text, encoding="utf-8")
    o = cli("run", path, "--out", tmp_path / "out", "--quiet", cwd=tmp_path)
    assert "topology.device_xy_m" in error_line(o, 2)


def test_geometry_server_inf_refused(tmp_path):
    """FAULT_CLASS geometry: a server at infinity."""
    path = tmp_path / "s.yaml"
    path.write_text("devices: {count: 2}\nrun: {rounds: 5}\ntopology: {server_xy_m: [.inf, 0]}\n",
                    encoding="utf-8")
    o = cli("run", path, "--out", tmp_path / "out", "--quiet", cwd=tmp_path)
    assert "topology.server_xy_m" in error_line(o, 2)


# ------------------------------------------------------------------------------------------
# output locations

def _readonly_dir(tmp_path):
    """A folder this process cannot write into (a read-only tmpfs when running as root)."""
    d = tmp_path / "ro"
    d.mkdir()
    if os.geteuid() == 0:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(d)],
                           capture_output=True)
        if r.returncode != 0:  # no mount here: a path under /proc is read-only for root too
            return Path("/proc/self/multispin-ro"), None
        return d, d
    d.chmod(0o555)
    return d, None


def _unmount(mounted):
    if mounted is not None:
        subprocess.run(["umount", str(mounted)], capture_output=True)


def test_output_out_is_file(tmp_path):
    """FAULT_CLASS outputs: --out names an existing file (left untouched)."""
    f = tmp_path / "file.txt"
    f.write_text("keep me\n")
    o = cli("run", scenario(tmp_path), "--out", f, "--quiet", cwd=tmp_path)
    assert "--out" in error_line(o, 2)
    assert f.read_text() == "keep me\n"


def test_output_out_under_file(tmp_path):
    """FAULT_CLASS outputs: --out under a file."""
    f = tmp_path / "file.txt"
    f.write_text("x")
    o = cli("run", scenario(tmp_path), "--out", f / "sub", "--quiet", cwd=tmp_path)
    error_line(o, 2)


def test_output_dev_null(tmp_path):
    """FAULT_CLASS outputs: --out /dev/null."""
    o = cli("run", scenario(tmp_path), "--out", "/dev/null", "--quiet", cwd=tmp_path)
    error_line(o, 2)


def test_output_read_only(tmp_path):
    """FAULT_CLASS outputs: --out inside a read-only folder."""
    d, mounted = _readonly_dir(tmp_path)
    try:
        o = cli("run", scenario(tmp_path), "--out", d / "run", "--quiet", cwd=tmp_path)
        error_line(o, 2)
    finally:
        _unmount(mounted)


def test_output_results_is_file(tmp_path):
    """FAULT_CLASS outputs: the default results/ is a file."""
    (tmp_path / "results").write_text("not a folder")
    o = cli("run", scenario(tmp_path), "--quiet", cwd=tmp_path)
    assert "results" in error_line(o, 2)


def test_output_results_read_only(tmp_path):
    """FAULT_CLASS outputs: the default results/ is read-only."""
    d, mounted = _readonly_dir(tmp_path)
    try:
        if mounted is None and str(d).startswith("/proc"):
            cwd = Path("/proc/self")
        else:
            os.rename(d, tmp_path / "results") if mounted is None else None
            cwd = tmp_path
        if mounted is not None:
            _unmount(mounted)
            (tmp_path / "results").mkdir()
            subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs",
                            str(tmp_path / "results")], check=True)
            mounted = tmp_path / "results"
        o = cli("run", scenario(tmp_path), "--quiet", cwd=cwd)
        error_line(o, 2)
    finally:
        _unmount(mounted)


def test_output_sweep_out_is_file(tmp_path):
    """FAULT_CLASS outputs: sweep --out names a file."""
    f = tmp_path / "f"
    f.write_text("x")
    o = cli("sweep", sweep_file(tmp_path), "--out", f, "--executor", "serial", cwd=tmp_path)
    error_line(o, 2)
    assert f.read_text() == "x"


def test_output_sweep_dev_null(tmp_path):
    """FAULT_CLASS outputs: sweep --out /dev/null."""
    o = cli("sweep", sweep_file(tmp_path), "--out", "/dev/null", "--executor", "serial",
            cwd=tmp_path)
    error_line(o, 2)


def test_output_timeline_onto_file(tmp_path):
    """FAULT_CLASS outputs: plot --timeline --out under a file; a run folder that is not one."""
    run = tmp_path / "run"
    assert cli("run", scenario(tmp_path), "--out", run, "--quiet", cwd=tmp_path).rc == 0
    f = tmp_path / "f"
    f.write_text("x")
    o = cli("plot", "--timeline", run, "--out", f / "t.png", cwd=tmp_path)
    error_line(o, 2)
    o = cli("plot", "--timeline", f, cwd=tmp_path)
    error_line(o, 2)


def test_output_plot_out_onto_file(tmp_path):
    """FAULT_CLASS outputs: plot --out (a folder of figures) onto an existing file."""
    out = tmp_path / "sw"
    assert cli("sweep", sweep_file(tmp_path, counts=(2, 3), reps=1, rounds=10), "--out", out,
               "--executor", "serial", cwd=tmp_path).rc == 0
    f = tmp_path / "figs"
    f.write_text("x")
    o = cli("plot", out, "--out", f, cwd=tmp_path)
    error_line(o, 2)
    assert f.read_text() == "x"


def _tmpfs(path, size):
    path.mkdir()
    if os.geteuid() != 0:
        return None
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                       capture_output=True)
    return path if r.returncode == 0 else None


@pytest.mark.parametrize("how", ["tmpfs", "fsize"])
def test_output_full_disk(tmp_path, how):
    """FAULT_CLASS outputs: the disk fills mid-run: one line, exit 1, and nothing half-written
    (the folder is removed, or holds a complete set of files)."""
    disk = tmp_path / "disk"
    mounted = _tmpfs(disk, "96k") if how == "tmpfs" else (disk.mkdir() or None)
    fsize = None if mounted is not None else 48 * 1024  # no tmpfs: writes past 48 KB fail
    try:
        path = scenario(tmp_path, devices={"count": 20}, run={"rounds": 3000})
        o = cli("run", path, "--out", disk / "out", "--quiet", cwd=tmp_path, fsize=fsize)
        line = error_line(o, 1)
        assert "space" in line or "large" in line or "disk" in line
        out = disk / "out"
        if out.exists() and any(out.iterdir()):
            consistent_run_folder(out)
    finally:
        _unmount(mounted)


def test_output_full_disk_as_a_sweep_starts(tmp_path):
    """FAULT_CLASS outputs: no room for the sweep's lock file: the line named "a file", not the
    file, and the empty lock left behind made the rerun refuse the folder as somebody else's."""
    sw = sweep_file(tmp_path, rounds=10, counts=(2,), reps=1)
    line = error_line(cli("sweep", sw, "--out", tmp_path / "o", cwd=tmp_path, fsize=0), 1)
    assert line.startswith(f"error: {tmp_path / 'o' / '.lock'}: ") and "large" in line
    o = cli("sweep", sw, "--out", tmp_path / "o", cwd=tmp_path)   # room again: it runs
    assert o.rc == 0, o
    assert json.loads((tmp_path / "o" / "sweep.json").read_text())["status"] == "complete"


# ------------------------------------------------------------------------------------------
# signals

LONG = {"name": "long", "devices": {"count": 20}, "run": {"rounds": 30000}}


def _long_run(tmp_path, name="out"):
    path = write_yaml(tmp_path / "long.yaml", LONG)
    p = start("run", path, "--out", tmp_path / name, "--quiet", cwd=tmp_path)
    return p, tmp_path / name


def _wait_started(folder, p, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        f = folder / "rounds.csv"
        if f.exists() and f.stat().st_size > 200:
            return
        if p.poll() is not None:
            pytest.fail(f"ended early: {p.communicate()}")
        time.sleep(0.05)
    pytest.fail("the run did not start writing rounds")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_first_stops_at_round_boundary(tmp_path, sig):
    """FAULT_CLASS signals: one SIGTERM / SIGHUP / SIGINT: stop, write everything, 128+sig."""
    p, out = _long_run(tmp_path)
    _wait_started(out, p)
    p.send_signal(sig)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 128 + sig, err
    assert "Traceback" not in err
    summary = consistent_run_folder(out)
    assert summary["complete"] is False
    assert strict_json(out / "run.json")["complete"] is False


@pytest.mark.parametrize("seed", range(4))
def test_signal_double_at_random_points(tmp_path, seed):
    """FAULT_CLASS signals: a second signal at a seeded random moment (during the run or the
    shutdown), to the whole process group (the CSV writer process too): whole rows, both tables
    with the same rounds, a summary."""
    rng = random.Random(seed)
    p, out = _long_run(tmp_path)
    _wait_started(out, p)
    time.sleep(rng.uniform(0.0, 0.5))
    first = rng.choice([signal.SIGINT, signal.SIGTERM])
    os.killpg(p.pid, first)
    time.sleep(rng.uniform(0.0, 0.4))
    try:
        os.killpg(p.pid, rng.choice([signal.SIGINT, signal.SIGTERM, signal.SIGHUP]))
    except ProcessLookupError:
        pass
    _, err = p.communicate(timeout=30)
    assert p.returncode in (128 + signal.SIGINT, 128 + signal.SIGTERM, 128 + signal.SIGHUP), err
    assert "Traceback" not in err
    summary = consistent_run_folder(out)
    assert summary["complete"] is False


@pytest.mark.parametrize("second", [signal.SIGHUP, signal.SIGTERM, signal.SIGINT])
def test_signal_second_after_the_outputs(tmp_path, second):
    """FAULT_CLASS signals: a second signal aimed at the process's last moments (after it has
    printed that it was interrupted, while Python shuts down): still a 128+N status (never killed
    by the signal's default action), a complete summary."""
    p, out = _long_run(tmp_path)
    _wait_started(out, p)
    os.killpg(p.pid, signal.SIGTERM)
    line = p.stderr.readline()          # printed once the outputs are written
    try:
        os.killpg(p.pid, second)
    except ProcessLookupError:
        pass
    _, err = p.communicate(timeout=30)
    assert p.returncode in (128 + signal.SIGTERM, 128 + second), line + err
    assert "interrupted" in line
    assert consistent_run_folder(out)["complete"] is False


def test_signal_sigterm_sweep_then_resume(tmp_path):
    """FAULT_CLASS signals: SIGTERM to a sweep's main process: exit 143, no worker left, and
    the resumed sweep's tables equal an uninterrupted one's."""
    sw = sweep_file(tmp_path, rounds=40000, counts=(2, 3, 4, 5), reps=1)  # seconds per run
    p = start("sweep", sw, "--out", tmp_path / "a", "--jobs", "2", cwd=tmp_path)
    deadline = time.monotonic() + 30
    while len(children_of(p.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)
    kids = children_of(p.pid)
    assert p.poll() is None, "the sweep ended before the signal: make its runs longer"
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=40)
    assert p.returncode == 143, err
    assert "Traceback" not in err
    assert wait_dead(kids)
    assert cli("sweep", sw, "--out", tmp_path / "a", "--jobs", "2", cwd=tmp_path).rc == 0
    assert cli("sweep", sw, "--out", tmp_path / "b", "--executor", "serial",
               cwd=tmp_path).rc == 0
    assert deterministic_runs(tmp_path / "a") == deterministic_runs(tmp_path / "b")


def test_signal_sigkill_sweep_main_kills_workers(tmp_path):
    """FAULT_CLASS signals: SIGKILL of a sweep's main process: its workers die too."""
    sw = sweep_file(tmp_path, rounds=100000, counts=(2, 3, 4, 5), reps=1)
    p = start("sweep", sw, "--out", tmp_path / "a", "--jobs", "2", cwd=tmp_path)
    deadline = time.monotonic() + 20
    kids = []
    while time.monotonic() < deadline and len(kids) < 2:
        time.sleep(0.2)
        kids = children_of(p.pid)
    assert kids, "no worker started"
    p.kill()
    p.wait(timeout=10)  # not communicate(): surviving workers would hold its pipes open
    try:
        assert wait_dead(kids, timeout=10), "workers outlived the sweep's main process"
    finally:
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
            except OSError:
                pass
        p.stdout.close()
        p.stderr.close()


def test_signal_sigkill_worker_then_resume(tmp_path):
    """FAULT_CLASS signals: SIGKILL of a worker: failed runs are reported (exit 1, one line
    each, no traceback); rerunning completes, tables equal an uninterrupted sweep's."""
    sw = sweep_file(tmp_path, rounds=30000, counts=(2, 3, 4, 5), reps=1)
    p = start("sweep", sw, "--out", tmp_path / "a", "--jobs", "2", cwd=tmp_path)
    deadline = time.monotonic() + 20
    kids = []
    while time.monotonic() < deadline and not kids:
        time.sleep(0.2)
        kids = [k for k in children_of(p.pid) if alive(k)]
    time.sleep(0.5)
    os.kill(kids[-1], signal.SIGKILL)
    _, err = p.communicate(timeout=60)
    assert p.returncode in (0, 1), err
    assert "Traceback" not in err
    assert cli("sweep", sw, "--out", tmp_path / "a", "--jobs", "2", cwd=tmp_path).rc == 0
    assert cli("sweep", sw, "--out", tmp_path / "b", "--executor", "serial",
               cwd=tmp_path).rc == 0
    assert deterministic_runs(tmp_path / "a") == deterministic_runs(tmp_path / "b")


def _without_resource_tracker(err):
    """stderr less the traceback that CPython's multiprocessing resource tracker (a helper
    process, not ours) prints when a Dask worker is killed while holding a semaphore."""
    out, skip = [], False
    for line in err.splitlines():
        if line.startswith("Traceback"):
            skip = True
            block = [line]
            continue
        if skip:
            block.append(line)
            if not line.startswith((" ", "\t")):
                skip = False
                if not any("resource_tracker.py" in b for b in block):
                    out.extend(block)
            continue
        out.append(line)
    return "\n".join(out)


def test_signal_dask_worker_killed(tmp_path):
    """FAULT_CLASS signals: a Dask worker killed mid-sweep: the sweep finishes (retried by
    Dask) or reports the lost runs; a rerun completes with the same tables as a serial sweep."""
    pytest.importorskip("dask.distributed")
    sw = sweep_file(tmp_path, rounds=20000, counts=(2, 3, 4), reps=1)
    p = start("sweep", sw, "--out", tmp_path / "a", "--executor", "dask", "--jobs", "2",
              cwd=tmp_path)
    deadline = time.monotonic() + 40
    victim = None
    while time.monotonic() < deadline and victim is None:
        time.sleep(0.3)
        for k in children_of(p.pid):
            try:
                cmd = Path(f"/proc/{k}/cmdline").read_bytes()
            except OSError:
                continue
            if b"multiprocessing" in cmd or b"spawn" in cmd:
                # the grandchildren are the workers (nanny -> worker); take a leaf
                if not children_of(k):
                    victim = k
                    break
    assert victim is not None, "no dask worker found"
    time.sleep(1.0)
    os.kill(victim, signal.SIGKILL)
    _, err = p.communicate(timeout=90)
    assert p.returncode in (0, 1), err
    assert "Traceback" not in _without_resource_tracker(err)
    if p.returncode == 1:
        assert cli("sweep", sw, "--out", tmp_path / "a", "--executor", "serial",
                   cwd=tmp_path).rc == 0
    assert cli("sweep", sw, "--out", tmp_path / "b", "--executor", "serial",
               cwd=tmp_path).rc == 0
    assert deterministic_runs(tmp_path / "a") == deterministic_runs(tmp_path / "b")


def test_concurrency_two_sweeps_one_folder(tmp_path):
    """FAULT_CLASS concurrency: a second sweep into a folder in use is refused (exit 2, one
    line) and the first one completes without failures."""
    sw = sweep_file(tmp_path, rounds=30000, counts=(2, 3), reps=2)
    p = start("sweep", sw, "--out", tmp_path / "a", "--jobs", "1", cwd=tmp_path)
    deadline = time.monotonic() + 20
    while not (tmp_path / "a" / "sweep.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    o = cli("sweep", sw, "--out", tmp_path / "a", "--jobs", "1", cwd=tmp_path)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert "in use" in error_line(o, 2)


# ------------------------------------------------------------------------------------------
# strict JSON and precision

def test_json_strict_with_undefined_interval(tmp_path):
    """FAULT_CLASS json: a one-round run has no CI: null, never a bare NaN."""
    o = cli("run", scenario(tmp_path, run={"rounds": 1}), "--out", tmp_path / "o", "--quiet",
            cwd=tmp_path)
    assert o.rc == 0, o
    summary = strict_json(tmp_path / "o" / "summary.json")
    assert summary["goodput_ci95"] == [None, None]


def test_json_strict_sweep_files(tmp_path):
    """FAULT_CLASS json: sweep.json and every done.json are strict JSON."""
    out = tmp_path / "sw"
    o = cli("sweep", sweep_file(tmp_path, counts=(2,), reps=1, rounds=1), "--out", out,
            "--executor", "serial", cwd=tmp_path)
    assert o.rc == 0, o
    strict_json(out / "sweep.json")
    for marker in (out / "runs").glob("*/done.json"):
        strict_json(marker)


def test_json_summary_statistics_float64(tmp_path):
    """FAULT_CLASS json: summary quantiles are the CSV's float64 values (not float32)."""
    o = cli("run", scenario(tmp_path, run={"rounds": 50}), "--out", tmp_path / "o", "--quiet",
            cwd=tmp_path)
    assert o.rc == 0
    summary = strict_json(tmp_path / "o" / "summary.json")
    header, rows = read_csv(tmp_path / "o" / "rounds.csv")
    col = header.index("duration_s")
    assert summary["duration_s"]["max"] == max(float(r[col]) for r in rows)


# ------------------------------------------------------------------------------------------
# the error path

def test_error_missing_file(tmp_path):
    """FAULT_CLASS errors: a scenario or sweep file that does not exist, named as what it is."""
    line = error_line(cli("run", tmp_path / "nope.yaml", cwd=tmp_path), 2)
    assert "cannot read scenario file" in line and "give the path" in line
    line = error_line(cli("sweep", tmp_path / "nope.yaml", cwd=tmp_path), 2)
    assert "cannot read sweep file" in line and "give the path" in line
    assert not any(tmp_path.iterdir())


def test_error_a_file_of_the_other_kind(tmp_path):
    """FAULT_CLASS errors: a sweep file given to run (or validate), a scenario file given to
    sweep: named as what it is, with the command that takes it; a misspelt sweep key is still
    an unknown key."""
    sweep = write_yaml(tmp_path / "s.yaml", {"base": {"run": {"rounds": 5}},
                                             "sweep": {"grid": {"devices.count": [2, 3]}}})
    plain = write_yaml(tmp_path / "p.yaml", {"devices": {"count": 3}, "seed": 4})
    typo = write_yaml(tmp_path / "t.yaml", {"base": {}, "swep": {"grid": {}}})
    for args in (("run", sweep, "--out", tmp_path / "o"), ("validate", sweep)):
        line = error_line(cli(*args, cwd=tmp_path), 2)
        assert "is a sweep file" in line and "multispin-sim sweep" in line
    line = error_line(cli("sweep", plain, "--out", tmp_path / "o", cwd=tmp_path), 2)
    assert "is a scenario file" in line and "multispin-sim run" in line
    line = error_line(cli("sweep", typo, "--out", tmp_path / "o", cwd=tmp_path), 2)
    assert "swep: unknown key; did you mean 'sweep'?" in line
    assert not (tmp_path / "o").exists() and not (tmp_path / "results").exists()


def test_error_debug_shows_traceback(tmp_path):
    """FAULT_CLASS errors: a failure during the run: one line; --debug adds the traceback."""
    disk = tmp_path / "d"
    disk.mkdir()
    path = scenario(tmp_path, devices={"count": 20}, run={"rounds": 3000})
    o = cli("run", path, "--out", disk / "o", "--quiet", cwd=tmp_path, fsize=48 * 1024)
    error_line(o, 1)
    o = cli("--debug", "run", path, "--out", disk / "o2", "--quiet", cwd=tmp_path,
            fsize=48 * 1024)
    assert o.rc == 1 and "Traceback" in o.err
    # after the command too, where the error lines' "rerun with --debug" invites it
    o = cli("run", path, "--out", disk / "o3", "--quiet", "--debug", cwd=tmp_path,
            fsize=48 * 1024)
    assert o.rc == 1 and "Traceback" in o.err


# ------------------------------------------------------------------------------------------
# fuzzing: random YAML documents and --set strings, in-process through main()

def _guarded_main(argv):
    """cli.main(argv) under a memory cap; returns (status, stderr)."""
    import contextlib
    import io

    from multispin_sim.cli import main

    err = io.StringIO()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    usage = int(Path("/proc/self/statm").read_text().split()[0]) * resource.getpagesize()
    cap = usage + (1 << 30)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    t0 = time.perf_counter()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                status = main(argv)
            except SystemExit as exc:  # argparse
                status = exc.code
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    return status, err.getvalue(), time.perf_counter() - t0


def _yaml_values():
    from hypothesis import strategies as st

    scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30),
                        st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
                        st.sampled_from(["rayleigh", "poisson", "graphml", "random-waypoint",
                                         "dense", "optimal", "budget", ".nan", "-.inf"]))
    return st.recursive(scalars, lambda kids: st.one_of(
        st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=10), kids, max_size=4)),
        max_leaves=12)


KEYS = ["devices.count", "devices.distance_m", "channel.coherence_time_ms", "run.rounds",
        "workload.rate_per_s", "mobility.region_m", "mobility.speed_mps", "topology.device_xy_m",
        "policy.draft_length", "payload.effective_vocab", "server.verify_fixed_ms", "name",
        "devices.overrides.1.alpha", "topology.server_xy_m", "run.max_time_s"]


def _check_fuzz(status, err, elapsed):
    assert status in (0, 2), err
    assert "Traceback" not in err
    if status == 2:
        assert err.startswith("error: ") and err.count("\n") == 1, err
    assert elapsed < 10


def test_fuzz_yaml_documents(tmp_path):
    """FAULT_CLASS fuzz: random YAML documents (sections of the schema, random values)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    sections = st.dictionaries(
        st.sampled_from(["devices", "channel", "run", "workload", "mobility", "topology",
                         "policy", "payload", "server", "name", "seed", "junk"]),
        st.one_of(_yaml_values(), st.dictionaries(st.sampled_from(
            ["count", "distance_m", "coherence_time_ms", "rounds", "rate_per_s", "region_m",
             "speed_mps", "device_xy_m", "draft_length", "effective_vocab", "model", "layout",
             "arrivals", "fading", "verify_fixed_ms", "overrides"]), _yaml_values(),
            max_size=4)), max_size=5)

    @settings(max_examples=120, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(sections)
    def check(doc):
        path = tmp_path / "fuzz.yaml"
        path.write_text(yaml.safe_dump(doc), encoding="utf-8")
        _check_fuzz(*_guarded_main(["validate", str(path)]))

    check()


def test_fuzz_set_strings(tmp_path):
    """FAULT_CLASS fuzz: random --set strings (random keys, random YAML-ish text)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    option = st.one_of(
        st.tuples(st.sampled_from(KEYS), st.text(max_size=30)).map(lambda kv: "=".join(kv)),
        st.tuples(st.sampled_from(KEYS), _yaml_values()).map(
            lambda kv: kv[0] + "=" + yaml.safe_dump(kv[1], default_flow_style=True).strip()),
        st.text(max_size=40))

    @settings(max_examples=150, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(option, min_size=1, max_size=3))
    def check(options):
        argv = ["validate"]
        for o in options:
            argv += ["--set", o]
        status, err, elapsed = _guarded_main(argv)
        _check_fuzz(status, err, elapsed)

    check()


def test_late_signal_while_ignoring_them_is_not_lost(monkeypatch):
    """A Ctrl-C that lands while the exit path replaces the handlers (Python raises it inside
    ``signal.signal``) does not escape: the handlers are set again, and all end ignored."""
    from multispin_sim import cli

    real = signal.signal
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT,) + cli._STOP_SIGNALS}
    calls = []

    def flaky(sig, handler):
        calls.append(sig)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return real(sig, handler)

    monkeypatch.setattr(cli.signal, "signal", flaky)
    try:
        cli._ignore_late_signals()
        assert all(signal.getsignal(sig) == signal.SIG_IGN for sig in saved)
    finally:
        for sig, handler in saved.items():
            real(sig, handler)
    assert calls[0] == calls[1] == signal.SIGINT
