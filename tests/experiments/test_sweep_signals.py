"""Sweeps and stop signals outside a run's rounds: during the marker scan, while the tables are
written, as a run writes its files (serial), and as a worker finishes a run while the pool
stops (local). Whenever the signal comes the sweep ends the same way: every finished run with
its done.json, the tables of those runs (written whole: temporary file + rename), sweep.json
``interrupted``, exit 128 + N.

The signal is delivered by calling the handler installed for SIGTERM at that moment (the one a
real SIGTERM would run, at that very point), not by ``kill``: deterministic, and independent of
how the test process was started (CI runs the suite as a background job that ignores SIGINT)."""
import json
import os
import signal
import time
from pathlib import Path

import pytest
import yaml

from multispin_sim import errors
from multispin_sim.cli import main
from multispin_sim.experiments import load_sweep, run_sweep, tables
from multispin_sim.experiments.executors import RunInterrupted, simulate_run
from multispin_sim.outputs.records import read_table

SMALL = {
    "name": "small",
    "base": {"devices": {"count": 3}, "run": {"rounds": 20}},
    "sweep": {"grid": {"policy.mode": ["optimal", "all-dl"], "server.dl_power_dbm": [10, 25]},
              "replications": 2, "seed": 11},
}

pytestmark = pytest.mark.skipif(signal.SIGTERM in errors.IGNORED_AT_START,
                                reason="SIGTERM ignored by this process from its start")


def _sigterm():
    """What a SIGTERM arriving now does: the handler installed for it, run here."""
    handler = signal.getsignal(signal.SIGTERM)
    assert callable(handler), handler   # the CLI's, a sweep's or a run's; never the default
    handler(signal.SIGTERM, None)


def _sweep_file(tmp_path, doc=SMALL):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _cli(*args):
    received = len(errors.RECEIVED)
    try:
        return main(["sweep", *map(str, args)])
    finally:
        del errors.RECEIVED[received:]


def _no_temporary_files(folder):
    return [p.name for p in Path(folder).rglob("*") if ".tmp" in p.name]


def test_a_signal_while_the_tables_are_written_leaves_them_whole(tmp_path, monkeypatch,
                                                                 capsys):
    """A finished sweep run again (every run reused, only the tables written) and a SIGTERM
    while runs.csv is half written: runs.csv was written in place and left with some of the
    runs (whole lines: nothing told it was short), sweep.json kept "running". Now the tables
    are written whole, sweep.json says interrupted, and the exit status is 143."""
    f = _sweep_file(tmp_path)
    out = tmp_path / "out"
    assert _cli(f, "--executor", "serial", "--out", out) == 0
    before = {n: (out / n).read_bytes() for n in ("runs.csv", "cells.csv")}
    original = tables._cell_text
    count = []

    def cell_text(value):
        count.append(1)
        if len(count) == 100:   # runs.csv: in its third row
            _sigterm()
        return original(value)

    monkeypatch.setattr(tables, "_cell_text", cell_text)
    capsys.readouterr()
    assert _cli(f, "--executor", "serial", "--out", out) == 128 + signal.SIGTERM
    assert "interrupted" in capsys.readouterr().err
    meta = json.loads((out / "sweep.json").read_text())
    assert (meta["status"], meta["ran"], meta["reused"]) == ("interrupted", 0, 8)
    for name, data in before.items():   # every finished run, the same bytes as before
        assert (out / name).read_bytes() == data, name
    assert not _no_temporary_files(out)
    pq = pytest.importorskip("pyarrow.parquet")
    assert pq.read_table(out / "runs.parquet").num_rows == 8


def test_a_signal_during_the_marker_scan_starts_no_run(tmp_path, monkeypatch, capsys):
    """A SIGTERM while the sweep reads its finished runs (before any run starts) went out of
    run_sweep at once: no tables and sweep.json as the previous invocation left it. Now the
    scan ends, no run starts, and the tables hold every finished run."""
    from multispin_sim.experiments import runner

    f = _sweep_file(tmp_path)
    out = tmp_path / "out"
    sw = load_sweep(f)
    calls = []

    def stop_after_three(scenario, run_out):
        if len(calls) == 3:
            raise RunInterrupted("stopped")
        calls.append(1)
        return simulate_run(scenario, run_out)

    with pytest.raises(KeyboardInterrupt):
        run_sweep(sw, out, executor="serial", runner=stop_after_three)
    assert len(list(out.glob("runs/*/done.json"))) == 3
    original = runner.reusable
    seen = []

    def reusable(*args):
        seen.append(1)
        if len(seen) == 2:
            _sigterm()
        return original(*args)

    monkeypatch.setattr(runner, "reusable", reusable)
    assert _cli(f, "--executor", "serial", "--out", out) == 128 + signal.SIGTERM
    meta = json.loads((out / "sweep.json").read_text())
    assert (meta["status"], meta["ran"], meta["reused"]) == ("interrupted", 0, 3)
    assert len(seen) == 8   # the plan was made whole (every run looked up)
    assert len(read_table(out / "runs.csv")["cell"]) == 3
    assert len(list(out.glob("runs/*"))) == 3   # the three finished: no run started
    monkeypatch.undo()
    assert _cli(f, "--executor", "serial", "--out", out) == 0
    assert "5 runs now, 3 reused" in capsys.readouterr().out


def test_tables_are_written_to_a_temporary_file_and_renamed(tmp_path, monkeypatch):
    """runs.csv and runs.parquet were written in place: stopped in the middle, the old table
    was gone and the new one cut short. Now the old table stays until the new one is whole."""
    target = tmp_path / "runs.csv"
    target.write_text("old\n")
    rows = [{"a": i} for i in range(10)]
    original = tables._cell_text

    def cell_text(value):
        if value == 5:
            raise KeyboardInterrupt
        return original(value)

    monkeypatch.setattr(tables, "_cell_text", cell_text)
    with pytest.raises(KeyboardInterrupt):
        tables.write_csv(target, ["a"], rows)
    assert target.read_text() == "old\n" and not _no_temporary_files(tmp_path)
    monkeypatch.undo()
    tables.write_csv(target, ["a"], rows)
    assert target.read_text() == "a\n" + "".join(f"{i}\n" for i in range(10))

    pq = pytest.importorskip("pyarrow.parquet")
    parquet = tmp_path / "runs.parquet"
    assert tables.write_parquet(parquet, ["a"], rows)
    whole = parquet.read_bytes()

    def cut_short(table, where, **kwargs):
        Path(where).write_bytes(b"PAR1")   # the start of a file, then the stop
        raise KeyboardInterrupt

    monkeypatch.setattr(pq, "write_table", cut_short)
    with pytest.raises(KeyboardInterrupt):
        tables.write_parquet(parquet, ["a"], rows[:3])
    assert parquet.read_bytes() == whole and not _no_temporary_files(tmp_path)


def test_a_run_writing_its_files_when_the_signal_came_is_kept(tmp_path, monkeypatch, capsys):
    """Serial: a SIGTERM after a run's last round, while its records are closed: the run was
    marked complete: false ("stopped"), got no done.json and was made again on the next
    invocation. Now it is complete and kept, and the sweep stops after it (exit 143)."""
    from multispin_sim.outputs.recorder import Recorder

    original = Recorder.close
    closed = []

    def close(self):
        closed.append(1)
        if len(closed) == 2:
            _sigterm()
        return original(self)

    monkeypatch.setattr(Recorder, "close", close)
    f = _sweep_file(tmp_path)
    out = tmp_path / "out"
    assert _cli(f, "--executor", "serial", "--out", out) == 128 + signal.SIGTERM
    meta = json.loads((out / "sweep.json").read_text())
    assert (meta["status"], meta["ran"]) == ("interrupted", 2)
    summaries = [json.loads(p.read_text()) for p in out.glob("runs/*/summary.json")]
    assert len(summaries) == 2 and all(s["complete"] and "stop_reason" not in s
                                       for s in summaries)
    assert len(list(out.glob("runs/*/done.json"))) == 2
    monkeypatch.undo()
    capsys.readouterr()
    assert _cli(f, "--executor", "serial", "--out", out) == 0
    assert "6 runs now, 2 reused" in capsys.readouterr().out


def _late_runner(scenario, run_out):
    """Local workers: the run at 10 dBm stops (a signal in its rounds) once the other one has
    started; the other goes on until the pool is stopping (the sweep left its loop), then
    finishes: a run that was writing its files when the sweep stopped."""
    from multispin_sim.experiments import executors

    started = Path(run_out).parents[1] / "late-started"
    deadline = time.monotonic() + 60
    if scenario["server"]["dl_power_dbm"] == 10:
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        raise RunInterrupted("stopped")
    started.write_text("")
    while not executors._STOPPING.is_set() and time.monotonic() < deadline:
        time.sleep(0.01)
    return simulate_run(scenario, run_out)


def test_a_run_a_worker_finishes_as_the_pool_stops_is_kept(tmp_path):
    """Local executor: the sweep stops (one run interrupted) while another worker is finishing
    its run: that run's folder was complete but got no done.json (nobody took its outcome), so
    it was made again. Now the outcomes of the runs that succeed while the pool stops are
    taken: done.json, a row of runs.csv."""
    doc = json.loads(json.dumps(SMALL))
    doc["sweep"] = {"grid": {"server.dl_power_dbm": [10, 25]}, "replications": 1, "seed": 11}
    sw = load_sweep(doc)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        run_sweep(sw, out, executor="local", jobs=2, runner=_late_runner)
    meta = json.loads((out / "sweep.json").read_text())
    assert (meta["status"], meta["ran"]) == ("interrupted", 1)
    markers = [json.loads(p.read_text()) for p in out.glob("runs/*/done.json")]
    assert [m["values"] for m in markers] == [{"server.dl_power_dbm": 25}]
    run_dir = next(out.glob("runs/*/done.json")).parent
    assert json.loads((run_dir / "summary.json").read_text())["complete"]
    runs = read_table(out / "runs.csv")
    assert list(runs["status"]) == ["ok"] and list(runs["server.dl_power_dbm"]) == [25]
    resumed = run_sweep(sw, out, executor="serial")
    assert resumed.complete and resumed.reused == 1 and resumed.ran == 1
