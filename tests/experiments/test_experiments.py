"""Tests of multispin_sim.experiments: sweep files, seeds, executors, resume, failures, tables."""
import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from multispin_sim.cli import main
from multispin_sim.experiments import (ExecutorError, OutputConflictError, load_sweep, replication_seeds,
                                       run_sweep)
from multispin_sim.experiments.executors import simulate_run
from multispin_sim.experiments.tables import mean_ci
from multispin_sim.outputs.records import read_table
from multispin_sim.scenario import ScenarioError

ROOT = Path(__file__).resolve().parents[2]
WALL_CLOCK = ("wall_time_s", "rounds_per_s")

SMALL = {
    "name": "small",
    "base": {"devices": {"count": 3}, "run": {"rounds": 20}},
    "sweep": {
        "grid": {"policy.mode": ["optimal", "all-dl"], "server.dl_power_dbm": [10, 25]},
        "replications": 2,
        "seed": 11,
    },
    "plot": [{"name": "goodput", "x": "server.dl_power_dbm", "y": "goodput_tps",
              "curves": "policy.mode"}],
}


def small_sweep(**changes):
    doc = json.loads(json.dumps(SMALL))
    doc.update(changes)
    return load_sweep(doc)


def deterministic_runs(folder):
    """runs.csv without the wall-clock columns."""
    table = read_table(Path(folder) / "runs.csv")
    return {k: v.tolist() for k, v in table.items() if k not in WALL_CLOCK}


# module-level runners: picklable for the process executor
def _fail_one_cell(engine):
    def runner(scenario, out):
        if scenario["policy"]["mode"] == "all-dl" and scenario["server"]["dl_power_dbm"] == 25:
            raise RuntimeError("injected failure")
        return engine(scenario, out)
    return runner


def failing_runner(scenario, out):
    return _fail_one_cell(simulate_run)(scenario, out)


failing_runner.__wrapped__ = _fail_one_cell(simulate_run)


# ------------------------------------------------------------------------------ sweep files

def test_grid_zip_ranges_and_cells():
    sw = load_sweep({
        "base": {"devices": {"count": 2}},
        "sweep": {"grid": {"server.dl_power_dbm": {"start": 10, "stop": 20, "step": 2.5},
                           "policy.mode": ["optimal", "all-ul"]},
                  "zip": {"devices.count": [2, 4], "name": ["k2", "k4"]}},
    })
    assert [a.keys for a in sw.axes] == [("server.dl_power_dbm",), ("policy.mode",),
                                        ("devices.count", "name")]
    assert len(sw.cells) == 5 * 2 * 2
    first, last = sw.cells[0], sw.cells[-1]
    assert first.values == {"server.dl_power_dbm": 10.0, "policy.mode": "optimal",
                            "devices.count": 2, "name": "k2"}
    assert last.values["server.dl_power_dbm"] == 20.0 and last.values["name"] == "k4"
    assert last.scenario["devices"]["count"] == 4 and last.scenario["name"] == "k4"
    # dl_power_dbm swept over a base that uses dl_power_ratio (the default): the ratio is cleared
    assert first.scenario["server"]["dl_power_ratio"] is None
    ranged = load_sweep({"sweep": {"grid": {"server.dl_power_dbm": {"start": 10, "stop": 40,
                                                                     "num": 4}}}})
    assert [c.values["server.dl_power_dbm"] for c in ranged.cells] == [10, 20, 30, 40]


def test_base_file_relative_to_the_sweep_file(tmp_path):
    (tmp_path / "scen").mkdir()
    (tmp_path / "scen" / "base.yaml").write_text("devices: {count: 5}\nseed: 3\n")
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({
        "base_file": "scen/base.yaml", "base": {"run": {"rounds": 7}},
        "sweep": {"grid": {"policy.mode": ["optimal"]}}}))
    sw = load_sweep(tmp_path / "s.yaml")
    assert sw.name == "s" and sw.seed == 3  # master seed defaults to the base's seed
    assert sw.cells[0].scenario["devices"]["count"] == 5
    assert sw.cells[0].scenario["run"]["rounds"] == 7


@pytest.mark.parametrize("doc, path, words", [
    ({"sweep": {"grid": {"server.dl_power_dmb": [1, 2]}}}, "sweep.grid.server.dl_power_dmb",
     "dl_power_dbm"),
    ({"sweep": {"grid": {"devices.count": [2, 0]}}}, "sweep.grid.devices.count", "cell 1"),
    ({"sweep": {"grid": {"devices.count": {"start": 2, "stop": 5, "num": 3}}}},
     "sweep.grid.devices.count", "integer step, or a num that lands on whole numbers"),
    ({"sweep": {"grid": {"devices.count": {"start": 2, "stop": 9}}}}, "sweep.grid.devices.count",
     "exactly one of"),
    ({"sweep": {"grid": {"devices.count": {"start": 2, "stop": 9, "step": -1}}}},
     "sweep.grid.devices.count.step", "towards stop"),
    ({"sweep": {"grid": {"seed": [1, 2]}}}, "sweep.grid.seed", "replications"),
    ({"sweep": {"grd": {}}}, "sweep.grd", "grid"),
    ({"sweep": {"zip": {"devices.count": [2, 3], "policy.mode": ["optimal"]}}}, "sweep.zip",
     "equal length"),
    ({"sweep": {"grid": {"devices.count": [2]}, "zip": {"devices.count": [3]}}},
     "sweep.zip.devices.count", "twice"),
    ({"sweep": {"replications": 0}}, "sweep.replications", ">= 1"),
    ({"swep": {}}, "swep", "sweep"),
    ({"sweep": {}, "base": {"devices": {"cnt": 3}}}, "base.devices.cnt", "count"),
    ({"sweep": {"grid": {"devices.count": [2, 3]}},
      "plot": [{"name": "a", "x": "devices.count", "y": "goodput"}]}, "plot.0.y", "goodput_tps"),
    ({"sweep": {"grid": {"devices.count": [2, 3]}},
      "plot": [{"name": "a", "x": "devices.count", "y": "wall_time_s"}]}, "plot.0.y",
     "wall-clock"),
    ({"sweep": {"grid": {"devices.count": [20], "policy.mode": ["optimal", "exhaustive"]}}},
     "sweep.grid.policy.mode", "devices.count=20"),
    # a figure without metrics, with labels that are not text, with curves of no other key
    ({"sweep": {"grid": {"devices.count": [2, 3]}},
      "plot": [{"name": "a", "x": "devices.count", "y": []}]}, "plot.0.y", "a list of them"),
    ({"sweep": {"grid": {"devices.count": [2, 3]}},
      "plot": [{"name": "a", "x": "devices.count", "y": "tokens", "title": [1, 2]}]},
     "plot.0.title", "a string"),
    ({"sweep": {"grid": {"devices.count": [2, 3]}},
      "plot": [{"name": "a", "x": "devices.count", "y": "tokens", "xlabel": {"a": 1}}]},
     "plot.0.xlabel", "a string"),
    ({"sweep": {"grid": {"devices.count": [2, 3]}},
      "plot": [{"name": "a", "x": "devices.count", "y": "tokens", "curves": "devices.count"}]},
     "plot.0.curves", "no other key is swept: remove curves"),
    # a base refused alone and in the first cell: the base's own error
    ({"base": {"policy": {"mode": "exhaustive"}},
      "sweep": {"grid": {"server.dl_power_dbm": [20, 30]}}}, "base.policy.mode", "devices"),
])
def test_invalid_sweeps_are_one_line_errors(doc, path, words):
    with pytest.raises(ScenarioError) as info:
        load_sweep(doc)
    err = info.value
    assert err.path == path
    msg = str(err)
    assert "\n" not in msg and msg.startswith(f"{path}: ") and words in msg


def test_set_options_apply_to_the_base_but_not_to_swept_keys():
    sw = small_sweep()
    sw2 = load_sweep(SMALL, overrides=["run.rounds=5"])
    assert all(c.scenario["run"]["rounds"] == 5 for c in sw2.cells)
    assert [c.values for c in sw2.cells] == [c.values for c in sw.cells]
    with pytest.raises(ScenarioError, match="swept key"):
        load_sweep(SMALL, overrides=["policy.mode=random"])


def test_replication_seeds_are_common_and_stable():
    sw = small_sweep()
    seeds = replication_seeds(11, 2)
    assert sw.seeds == seeds and len(set(seeds)) == 2
    assert replication_seeds(11, 5)[:2] == seeds  # adding replications keeps the first seeds
    assert all(0 <= s < 2**63 for s in replication_seeds(11, 50))
    runs = {(c.index, r): sw.run_scenario(c, r)["seed"] for c in sw.cells for r in range(2)}
    for c in sw.cells:
        assert [runs[(c.index, r)] for r in range(2)] == seeds


def test_paper_files_validate():
    files = sorted((ROOT / "scenarios" / "paper").glob("*.yaml"))
    assert len(files) >= 3
    seen = {}
    for f in files:
        sw = load_sweep(f)
        seen[sw.name] = sw
        assert sw.plot, f
    f78 = seen["fig7-8-dl-power"]
    assert f78.cells[0].scenario["policy"]["draft"] == "greedy"
    assert {c.values["model_pair"] for c in f78.cells} == {"qwen2.5", "deepseek-r1"}
    pw = sorted({c.values["server.dl_power_dbm"] for c in f78.cells})
    assert pw[0] == 10 and pw[-1] == 40
    f910 = seen["fig9-10-devices"]
    assert {c.values["server.dl_power_ratio"] for c in f910.cells} == {4, 16}
    assert sorted({c.values["devices.count"] for c in f910.cells})[::9] == [2, 20]
    assert {c.values["policy.mode"] for c in f910.cells} == {"optimal", "all-ul", "all-dl",
                                                             "random"}
    f11 = seen["fig11-draft-control"]
    assert {c.values["policy.draft"] for c in f11.cells} == {"greedy", "uniform",
                                                             "computation-only", "budget"}


# ------------------------------------------------------------------------------ running

def test_tables_identical_serial_local_and_dask(tmp_path):
    pytest.importorskip("dask.distributed")
    sw = small_sweep()
    serial = run_sweep(sw, tmp_path / "serial", executor="serial")
    local = run_sweep(sw, tmp_path / "local", executor="local", jobs=2)
    dask = run_sweep(sw, tmp_path / "dask", executor="dask", jobs=2, dask_processes=False)
    for result in (serial, local, dask):
        assert result.complete and result.ran == 8 and result.reused == 0
    assert (tmp_path / "serial" / "cells.csv").read_bytes() == \
        (tmp_path / "local" / "cells.csv").read_bytes() == \
        (tmp_path / "dask" / "cells.csv").read_bytes()
    ref = deterministic_runs(tmp_path / "serial")
    assert deterministic_runs(tmp_path / "local") == ref
    assert deterministic_runs(tmp_path / "dask") == ref
    assert len(ref["cell"]) == 8 and set(ref["status"]) == {"ok"}
    # the tidy table holds the swept values, the seed and every scalar metric
    for col in ("policy.mode", "server.dl_power_dbm", "seed", "goodput_tps", "comm_s_median",
                "share_accepted", "share_ul", "share_dl", "mean_draft_len"):
        assert col in ref
    try:
        import pyarrow.parquet as pq
    except ImportError:
        pass
    else:
        table = pq.read_table(tmp_path / "serial" / "runs.parquet").to_pydict()
        assert table["goodput_tps"] == ref["goodput_tps"]
        assert table["policy.mode"] == ref["policy.mode"]
    # and a run equals a direct engine run of the same scenario
    from multispin_sim import load_scenario, simulate
    direct = simulate(load_scenario(sw.run_scenario(sw.cells[3], 1))).summary
    row = next(i for i in range(8) if ref["cell"][i] == 3 and ref["replication"][i] == 1)
    assert ref["goodput_tps"][row] == direct["goodput_tps"]


def test_dask_local_cluster_of_worker_processes(tmp_path):
    pytest.importorskip("dask.distributed")
    sw = small_sweep()
    serial = run_sweep(sw, tmp_path / "serial", executor="serial")
    dask = run_sweep(sw, tmp_path / "dask", executor="dask", jobs=2)  # 2 worker processes
    assert dask.complete and dask.ran == 8
    assert (tmp_path / "dask" / "cells.csv").read_bytes() == \
        (tmp_path / "serial" / "cells.csv").read_bytes()
    assert deterministic_runs(tmp_path / "dask") == deterministic_runs(tmp_path / "serial")
    assert serial.complete


def test_shares_and_cell_statistics(tmp_path):
    result = run_sweep(small_sweep(), tmp_path / "out", executor="serial")
    runs = read_table(tmp_path / "out" / "runs.csv")
    total = runs["share_accepted"] + runs["share_ul"] + runs["share_dl"]
    np.testing.assert_allclose(total, 1.0)
    assert (runs["device_rounds"] == 20 * 3).all()
    np.testing.assert_allclose(runs["share_ul"], runs["ul_corrections"] / 60)
    all_dl = runs["policy.mode"] == "all-dl"
    assert (runs["share_ul"][all_dl] == 0).all()
    cells = read_table(tmp_path / "out" / "cells.csv")
    for c in range(4):
        g = runs["goodput_tps"][runs["cell"] == c]
        mean, lo, hi = mean_ci(g)
        assert cells["goodput_tps_mean"][c] == mean
        assert cells["goodput_tps_ci95_lo"][c] == lo and cells["goodput_tps_ci95_hi"][c] == hi
        half = 12.706204736174707 * np.std(g, ddof=1) / math.sqrt(2)  # t(0.975, 1)
        assert hi - mean == pytest.approx(half)
    assert (cells["n"] == 2).all() and (cells["n_failed"] == 0).all()
    assert "wall_time_s_mean" not in cells and "wall_time_s" in runs
    assert result.paths["cells"] == tmp_path / "out" / "cells.csv"


def test_mean_ci_small_samples():
    assert math.isnan(mean_ci([1.0])[1]) and mean_ci([1.0])[0] == 1.0
    assert all(math.isnan(v) for v in mean_ci([]))


def test_resume_skips_completed_runs(tmp_path):
    sw = small_sweep()
    calls = []

    def counting(scenario, out):
        calls.append(scenario["seed"])
        return simulate_run(scenario, out)

    first = run_sweep(sw, tmp_path / "out", executor="serial", runner=counting)
    assert len(calls) == 8 and first.ran == 8
    before = deterministic_runs(tmp_path / "out")
    cells_before = (tmp_path / "out" / "cells.csv").read_bytes()

    calls.clear()
    again = run_sweep(sw, tmp_path / "out", executor="serial", runner=counting)
    assert calls == [] and again.reused == 8 and again.ran == 0

    # a killed sweep: two runs lost their marker (in flight), one left a partial folder
    markers = sorted((tmp_path / "out" / "runs").glob("*/done.json"))
    assert len(markers) == 8
    markers[0].unlink()
    markers[5].unlink()
    third = run_sweep(sw, tmp_path / "out", executor="local", jobs=2)
    assert third.ran == 2 and third.reused == 6
    assert deterministic_runs(tmp_path / "out") == before
    assert (tmp_path / "out" / "cells.csv").read_bytes() == cells_before

    # an extended grid reuses the runs it already has, whatever their new cell index
    calls.clear()
    doc = json.loads(json.dumps(SMALL))
    doc["sweep"]["grid"]["server.dl_power_dbm"] = [5, 10, 25]
    doc["sweep"]["replications"] = 3
    bigger = run_sweep(load_sweep(doc), tmp_path / "out", executor="serial", runner=counting)
    assert bigger.reused == 8 and len(calls) == 2 * 3 * 3 - 8


def test_resumed_tables_equal_fresh_ones_with_undefined_metrics(tmp_path):
    """A metric without a value (a latency CI from one finished request) is NaN in the run's
    memory and null in its summary.json; the tables of a sweep that reads the runs back on
    resume are the same bytes as those written when the runs finished."""
    doc = {"name": "undefined", "base_file": str(ROOT / "scenarios" / "serving" / "base.yaml"),
           "base": {"run": {"rounds": 30}},
           "sweep": {"grid": {"acceptance.model": ["beta", "iid"]}, "seed": 3}}
    sw = load_sweep(doc)
    run_sweep(sw, tmp_path / "out", executor="serial")
    fresh = {n: (tmp_path / "out" / n).read_bytes() for n in ("runs.csv", "cells.csv")}
    summaries = [json.loads(p.read_text()) for p in (tmp_path / "out").glob("runs/*/summary.json")]
    assert any(None in s["requests"]["latency_s"]["ci95"] for s in summaries)
    again = run_sweep(sw, tmp_path / "out", executor="serial")
    assert again.reused == 2 and again.ran == 0
    for name, data in fresh.items():
        assert (tmp_path / "out" / name).read_bytes() == data, name


def test_interrupted_sweep_keeps_finished_runs(tmp_path):
    sw = small_sweep()
    calls = []

    def stop_after_three(scenario, out):
        if len(calls) == 3:
            raise KeyboardInterrupt
        calls.append(1)
        return simulate_run(scenario, out)

    with pytest.raises(KeyboardInterrupt):
        run_sweep(sw, tmp_path / "out", executor="serial", runner=stop_after_three)
    meta = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert meta["status"] == "interrupted"
    assert len(read_table(tmp_path / "out" / "runs.csv")["cell"]) == 3
    if importlib.util.find_spec("matplotlib"):   # its report says so, and how to finish it
        from multispin_sim.report import write_report

        page = write_report(tmp_path / "out").read_text()
        assert "the sweep is not complete (status &#x27;interrupted&#x27; in sweep.json): 3 of 8 " \
               "runs finished; rerun the sweep command to finish it" in page
    resumed = run_sweep(sw, tmp_path / "out", executor="serial")
    assert resumed.reused == 3 and resumed.ran == 5 and resumed.complete


def test_a_run_failing_with_its_own_line_is_listed_by_that_line(tmp_path):
    """A run that failed with the CLI's own one-line error (a full disk) was listed as
    "RunFailed: error: writing ...": its line, once."""
    from multispin_sim.errors import RunFailed
    from multispin_sim.experiments.executors import execute_run

    def full(scenario, out):
        raise RunFailed(f"writing {out}", "No space left on device", "free some disk space")

    outcome = execute_run({"run_dir": str(tmp_path / "r"), "scenario": {}}, full)
    assert outcome["status"] == "failed"
    assert outcome["error"] == (f"writing {tmp_path / 'r'}: No space left on device; free some "
                                "disk space")


@pytest.mark.parametrize("jobs", ["2", 0, -1, 1.5, True])
def test_jobs_that_are_not_a_count_are_refused_before_the_folder(tmp_path, jobs):
    """``run_sweep(jobs="2")`` made the folder, then raised a TypeError; 0 and -1 ran silently
    with one worker per core."""
    with pytest.raises(ExecutorError, match="expected a number of worker processes >= 1"):
        run_sweep(small_sweep(), tmp_path / "out", jobs=jobs)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("stop_at", ["lock", "planning"])
def test_a_sweep_stopped_as_it_starts_is_resumed(tmp_path, monkeypatch, stop_at):
    """A stop in the moment after the folder is made (its lock taken, the runs being planned)
    left a folder that the rerun refused as "not empty and holds no sweep.json"."""
    sw = small_sweep()
    out = tmp_path / "out"
    if stop_at == "lock":            # the state a stop between the lock and sweep.json leaves
        out.mkdir()
        (out / ".lock").write_text("")
    else:
        def stop(*_):
            raise KeyboardInterrupt
        monkeypatch.setattr(type(sw), "run_scenario", stop)
        with pytest.raises(KeyboardInterrupt):
            run_sweep(sw, out, executor="serial")
        monkeypatch.undo()
        assert json.loads((out / "sweep.json").read_text())["name"] == "small"
    resumed = run_sweep(sw, out, executor="serial")
    assert resumed.complete and resumed.ran == 8
    # anything else in a folder without sweep.json is still somebody else's
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(OutputConflictError, match="holds no sweep.json"):
        run_sweep(sw, tmp_path / "other", executor="serial")


@pytest.mark.parametrize("executor", ["serial", "local"])
def test_a_failing_cell_is_reported_and_the_others_complete(tmp_path, executor):
    sw = small_sweep()
    result = run_sweep(sw, tmp_path / "out", executor=executor, jobs=2, runner=failing_runner)
    failed_cell = next(c.index for c in sw.cells
                       if c.values == {"policy.mode": "all-dl", "server.dl_power_dbm": 25})
    assert not result.complete
    assert [(f["cell"], f["replication"]) for f in result.failures] == [(failed_cell, 0),
                                                                        (failed_cell, 1)]
    assert all("injected failure" in f["error"] for f in result.failures)
    runs = read_table(tmp_path / "out" / "runs.csv")
    assert len(runs["cell"]) == 8
    ok = runs["status"] == "ok"
    assert ok.sum() == 6 and (runs["cell"][~ok] == failed_cell).all()
    assert np.isfinite(runs["goodput_tps"][ok]).all() and np.isnan(runs["goodput_tps"][~ok]).all()
    assert "RuntimeError: injected failure" in runs["error"][~ok][0]
    cells = read_table(tmp_path / "out" / "cells.csv")
    assert cells["n_failed"][failed_cell] == 2 and cells["n"][failed_cell] == 0
    meta = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert meta["status"] == "failed" and len(meta["failures"]) == 2
    err = tmp_path / "out" / result.failures[0]["run_dir"] / "error.txt"
    assert "Traceback" in err.read_text()
    # the next invocation retries only the failed runs
    retry = run_sweep(sw, tmp_path / "out", executor="serial")
    assert retry.ran == 2 and retry.reused == 6 and retry.complete


def test_a_cell_a_limit_stops_fails_with_the_reason(tmp_path):
    """A run stopped by a limit (here a correction longer than one fading block allows) is a
    finding about its cell: the failure is the limit's reason, error.txt holds it (no
    traceback), the partial run is flagged incomplete and the other cells complete."""
    sw = small_sweep(base={"devices": {"count": 3}, "run": {"rounds": 20},
                           "channel": {"fading": "jakes", "doppler_hz": 194.0,
                                       "coherence_time_ms": 0.1}},
                     sweep={"grid": {"limits.max_blocks_per_transmission": [1, 1_000_000]},
                            "replications": 1, "seed": 11}, plot=[])
    result = run_sweep(sw, tmp_path / "out", executor="serial")
    (failure,) = result.failures
    assert failure["error"].startswith("run stopped early: ")
    assert "limits.max_blocks_per_transmission" in failure["error"]
    assert "Error" not in failure["error"].split(":")[0]
    err = (tmp_path / "out" / failure["run_dir"] / "error.txt").read_text()
    assert err.strip() == failure["error"] and "Traceback" not in err
    summary = json.loads((tmp_path / "out" / failure["run_dir"] / "summary.json").read_text())
    assert summary["complete"] is False
    runs = read_table(tmp_path / "out" / "runs.csv")
    assert list(runs["status"]) == ["failed", "ok"]


def test_output_folder_of_another_sweep_is_refused(tmp_path):
    run_sweep(small_sweep(), tmp_path / "out", executor="serial")
    with pytest.raises(OutputConflictError):
        run_sweep(small_sweep(name="other"), tmp_path / "out", executor="serial")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "x.txt").write_text("x")
    with pytest.raises(OutputConflictError):
        run_sweep(small_sweep(), tmp_path / "junk", executor="serial")



def test_a_folder_in_use_by_another_sweep_is_refused(tmp_path, capsys):
    """A second sweep into a folder whose lock another sweep holds (``runner.lock_folder``: an
    flock on ``.lock`` holding its pid) is refused with one line naming the process, exit 2,
    and changes nothing there; once the lock is released, the same command resumes."""
    import fcntl

    f = tmp_path / "small.yaml"
    f.write_text(yaml.safe_dump(SMALL))
    out = tmp_path / "out"
    args = ["sweep", str(f), "--executor", "serial", "--out", str(out), "--set", "run.rounds=10"]
    assert main(args) == 0
    capsys.readouterr()
    before = sorted(p.name for p in (out / "runs").iterdir())
    with open(out / ".lock", "r+") as held:   # another sweep's open lock
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.truncate(0)
        held.write("4242")
        held.flush()
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "in use by another sweep (process 4242)" in err
        assert sorted(p.name for p in (out / "runs").iterdir()) == before
    assert main(args) == 0
    assert "0 runs now, 8 reused" in capsys.readouterr().out

# ------------------------------------------------------------------------------ CLI

def test_cli_sweep(tmp_path, capsys):
    f = tmp_path / "small.yaml"
    f.write_text(yaml.safe_dump(SMALL))
    out = tmp_path / "out"
    assert main(["sweep", str(f), "--executor", "serial", "--out", str(out),
                 "--set", "run.rounds=10"]) == 0
    printed = capsys.readouterr().out
    assert "8 runs now" in printed and "cells.csv" in printed
    runs = read_table(out / "runs.csv")
    assert (runs["rounds"] == 10).all()
    assert "run.rounds=10" in (out / "sweep.yaml").read_text().replace(": ", "=")
    assert main(["sweep", str(f), "--jobs", "2", "--out", str(out), "--set", "run.rounds=10"]) == 0
    assert "0 runs now, 8 reused" in capsys.readouterr().out


def test_cli_sweep_bad_input_exits_2_before_any_work(tmp_path, capsys):
    f = tmp_path / "bad.yaml"
    doc = json.loads(json.dumps(SMALL))
    doc["sweep"]["grid"]["devices.count"] = [3, 0]
    f.write_text(yaml.safe_dump(doc))
    out = tmp_path / "out"
    assert main(["sweep", str(f), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {f}: sweep.grid.devices.count: 0 is not allowed")
    assert err.count("\n") == 1
    assert not out.exists()
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(SMALL))
    assert main(["sweep", str(good), "--executor", "serial", "--scheduler", "tcp://x:1",
                 "--out", str(out)]) == 2
    assert main(["sweep", str(good), "--out", str(out), "--set", "policy.mode=random"]) == 2
    assert not out.exists()


def test_cli_sweep_reports_failures_with_exit_1(tmp_path, capsys, monkeypatch):
    from multispin_sim.experiments import executors

    monkeypatch.setattr(executors, "simulate_run", failing_runner.__wrapped__)
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(SMALL))
    assert main(["sweep", str(f), "--executor", "serial", "--out", str(tmp_path / "o")]) == 1
    captured = capsys.readouterr()
    assert "6 runs now" not in captured.out and "2 failed" in captured.out
    lines = [l for l in captured.err.splitlines() if l.startswith("failed: cell")]
    assert len(lines) == 2 and all("policy.mode=all-dl, server.dl_power_dbm=25" in l and
                                   "RuntimeError: injected failure" in l for l in lines)


def test_a_base_valid_only_with_the_swept_keys_loads():
    """Every cell is validated on its own, so a base that the swept keys make valid (exhaustive
    search needs few devices; the base alone has the default 20) is not refused."""
    sw = load_sweep({"base": {"policy": {"mode": "exhaustive"}},
                     "sweep": {"grid": {"devices.count": [3, 4]}}})
    assert [c.scenario["devices"]["count"] for c in sw.cells] == [3, 4]
