"""Sweeps: a stop signal as a run finishes, resume across code and input changes, the cell
statistics' counts, device-rounds of a run without rounds, Parquet column types, --set options
the sweep would drop, plot metrics and ranges. Each test recomputes its claim from the outputs
(summary.json, runs.csv, done.json) rather than trusting the tables."""
import json
import math
import os
import shutil
import signal
from pathlib import Path

import numpy as np
import pytest
import yaml

from multispin_sim import errors
from multispin_sim.cli import main
from multispin_sim.experiments import load_sweep, run_sweep
from multispin_sim.experiments.tables import derived_metrics
from multispin_sim.outputs.records import read_table
from multispin_sim.scenario import ScenarioError

ROOT = Path(__file__).resolve().parents[2]
WALL_CLOCK = ("wall_time_s", "rounds_per_s")

SMALL = {
    "name": "small",
    "base": {"devices": {"count": 3}, "run": {"rounds": 20}},
    "sweep": {"grid": {"policy.mode": ["optimal", "all-dl"], "server.dl_power_dbm": [10, 25]},
              "replications": 2, "seed": 11},
}


def _doc(**changes):
    doc = json.loads(json.dumps(SMALL))
    doc.update(changes)
    return doc


def _write(path, doc):
    path.write_text(yaml.safe_dump(doc))
    return path


def _floats(values):
    """A table column as floats: an empty field (null in summary.json) is NaN."""
    return np.array([math.nan if v == "" else float(v) for v in values.tolist()])


def _summaries(folder):
    """{run_dir: summary.json} of every run of a sweep folder."""
    return {str(p.parent.relative_to(folder)): json.loads(p.read_text())
            for p in Path(folder).glob("runs/*/summary.json")}


# ------------------------------------------------------------------------------ F1

def test_a_stop_signal_as_a_run_writes_its_outputs_stops_the_sweep(tmp_path, monkeypatch,
                                                                   capsys):
    """A stop signal that lands after the engine decided the run complete (it is writing the
    run's files) is taken by the engine's handler; the sweep went on to the end and exited 0.
    Now the complete run is kept and the sweep stops there: status interrupted, exit 128 + N,
    and a rerun makes the other runs."""
    from multispin_sim.engine import simulation

    original = simulation.write_topology
    calls = []

    # SIGTERM, as a batch system's stop (a background job, CI's too, is started ignoring
    # SIGINT, and the engine keeps a signal ignored at start ignored)
    def write_topology(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGTERM)
        return original(*args, **kwargs)

    monkeypatch.setattr(simulation, "write_topology", write_topology)
    f = _write(tmp_path / "s.yaml", SMALL)
    out = tmp_path / "out"
    received = len(errors.RECEIVED)
    try:
        rc = main(["sweep", str(f), "--executor", "serial", "--out", str(out)])
    finally:
        del errors.RECEIVED[received:]
    assert rc == 128 + signal.SIGTERM
    assert "interrupted" in capsys.readouterr().err
    meta = json.loads((out / "sweep.json").read_text())
    assert meta["status"] == "interrupted" and meta["ran"] == 3 and len(calls) == 3
    runs = read_table(out / "runs.csv")
    assert list(runs["status"]) == ["ok"] * 3
    summaries = _summaries(out)
    assert len(summaries) == 3 and all(s["complete"] for s in summaries.values())
    assert len(list(out.glob("runs/*/done.json"))) == 3   # the run in hand was kept
    monkeypatch.undo()
    assert main(["sweep", str(f), "--executor", "serial", "--out", str(out)]) == 0
    assert "5 runs now, 3 reused" in capsys.readouterr().out


# ------------------------------------------------------------------------------ F2

def test_runs_made_by_other_code_are_redone_not_mixed(tmp_path, capsys):
    """A run's identity is its scenario; an engine fix changes results without changing the
    scenario. Runs whose done.json records another code fingerprint (or none: made before
    fingerprints were recorded) are made again, and the sweep says how many and why."""
    from multispin_sim.outputs import metadata as fingerprint

    sw = load_sweep(_doc())
    out = tmp_path / "out"
    run_sweep(sw, out, executor="serial")
    markers = sorted(out.glob("runs/*/done.json"))
    assert {json.loads(m.read_text())["code"] for m in markers} == {
        fingerprint.code_fingerprint()}
    older = json.loads(markers[1].read_text())
    older["code"] = "0" * 64                       # made by other code
    older["summary"]["goodput_tps"] = -1.0         # ... which gave another value
    markers[1].write_text(json.dumps(older))
    unversioned = json.loads(markers[4].read_text())
    del unversioned["code"]
    markers[4].write_text(json.dumps(unversioned))
    capsys.readouterr()
    again = run_sweep(sw, out, executor="serial", stream=None)
    assert again.ran == 2 and again.reused == 6 and again.redone == {"made by other code": 2}
    assert "2 finished runs redone (2 made by other code)" in capsys.readouterr().err
    assert json.loads((out / "sweep.json").read_text())["redone"] == {"made by other code": 2}
    runs = read_table(out / "runs.csv")
    summaries = _summaries(out)
    for run_dir, goodput in zip(runs["run_dir"], runs["goodput_tps"]):
        assert goodput == summaries[run_dir]["goodput_tps"] > 0
    assert {json.loads(m.read_text())["code"] for m in markers} == {
        fingerprint.code_fingerprint()}
    assert run_sweep(sw, out, executor="serial").reused == 8


def test_the_code_fingerprint_follows_the_package_source(tmp_path, monkeypatch):
    """The fingerprint covers every .py file of the package: a one-line change in a copy of
    the package changes it, and undoing the change gives the first value back."""
    from multispin_sim.outputs import metadata as fingerprint

    copy = tmp_path / "multispin_sim"
    shutil.copytree(fingerprint.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(fingerprint, "PACKAGE", copy)
    listed = {p.relative_to(copy).as_posix() for p in fingerprint._source_files()}
    assert {p.relative_to(copy).as_posix() for p in copy.rglob("*.py")} <= listed
    compute = fingerprint.code_fingerprint.__wrapped__
    first = compute()
    energy = copy / "outputs" / "energy.py"
    text = energy.read_text()
    energy.write_text(text + "\n# another line\n")
    assert compute() != first
    energy.write_text(text)
    assert compute() == first


def test_runs_from_an_input_file_changed_in_place_are_redone(tmp_path, monkeypatch):
    """A trace named by path (acceptance.trace_file) edited in place: the scenario is the same,
    the results are not; the runs are made again from the new file."""
    from multispin_sim.experiments import fingerprint

    monkeypatch.chdir(tmp_path)
    trace = tmp_path / "agree.csv"
    rng = np.random.default_rng(5)
    trace.write_text("agree\n" + "\n".join(str(int(v)) for v in rng.random(400) < 0.8) + "\n")
    doc = _doc(base={"devices": {"count": 3}, "run": {"rounds": 20},
                     "acceptance": {"model": "trace", "trace_file": "agree.csv"}})
    sw = load_sweep(doc)
    first = run_sweep(sw, tmp_path / "out", executor="serial")
    assert first.ran == 8
    marker = json.loads(next((tmp_path / "out").glob("runs/*/done.json")).read_text())
    assert marker["inputs"] == {"acceptance.trace_file": fingerprint.file_hash("agree.csv")}
    before = read_table(tmp_path / "out" / "runs.csv")["tokens"]
    trace.write_text("agree\n" + "0\n" * 400)      # nothing agrees any more
    again = run_sweep(sw, tmp_path / "out", executor="serial")
    assert again.ran == 8 and again.redone == {"an input file changed": 8}
    after = read_table(tmp_path / "out" / "runs.csv")
    assert (after["tokens"] < before).all()
    for run_dir, tokens in zip(after["run_dir"], after["tokens"]):
        assert tokens == _summaries(tmp_path / "out")[run_dir]["tokens"]


# ------------------------------------------------------------------------------ F4, F5

QUEUEING = {
    "name": "sparse",
    "base_file": str(ROOT / "scenarios" / "default.yaml"),
    "base": {"devices": {"count": 4},
             "workload": {"arrivals": "poisson", "length": "fixed", "length_tokens": 32},
             "serving": {"slo_ttft_s": 2.0, "slo_tpot_s": 0.1},
             "run": {"rounds": 100000, "max_time_s": 30}},
    "sweep": {"grid": {"workload.rate_per_s": [0.005, 0.1]}, "replications": 3, "seed": 7},
}


@pytest.fixture(scope="module")
def sparse(swept):
    """Poisson arrivals so rare that some runs see no request, hence no round."""
    return swept(QUEUEING, "sparse")


def test_a_run_without_rounds_has_zero_device_rounds(sparse):
    """The engine's device_rounds 0 (no round) was turned into NaN and left out of the cell's
    mean; only the shares lack a denominator."""
    runs = read_table(sparse / "runs.csv")
    summaries = _summaries(sparse)
    assert any(s["device_rounds"] == 0 for s in summaries.values())
    for i, run_dir in enumerate(runs["run_dir"]):
        s = summaries[run_dir]
        assert runs["device_rounds"][i] == s["device_rounds"]
        if s["device_rounds"] == 0:
            assert all(math.isnan(runs[k][i]) for k in ("share_accepted", "share_ul", "share_dl"))
    cells = read_table(sparse / "cells.csv")
    for c in range(len(cells["cell"])):
        mine = [s["device_rounds"] for d, s in summaries.items()
                if runs["cell"][list(runs["run_dir"]).index(d)] == c]
        assert cells["device_rounds_mean"][c] == pytest.approx(np.mean(mine))
        assert cells["device_rounds_n"][c] == cells["n"][c] == 3
    assert derived_metrics({"device_rounds": 0, "rounds": 0, "rejections": 0,
                            "ul_corrections": 0, "dl_corrections": 0},
                           {"devices": {"count": 4}})["device_rounds"] == 0


def test_every_cell_statistic_says_how_many_replications_it_has(sparse):
    """A mean over the replications that have a value, next to n that counts every successful
    one, read as if it were over n. ``<metric>_n`` gives the count behind each mean; recomputed
    here from runs.csv with an independent t quantile."""
    from scipy import stats

    runs = read_table(sparse / "runs.csv")
    cells = read_table(sparse / "cells.csv")
    metrics = [c[:-len("_mean")] for c in cells if c.endswith("_mean")]
    fewer = set()
    for m in metrics:
        assert f"{m}_n" in cells, m
        for c in range(len(cells["cell"])):
            x = _floats(runs[m][(runs["cell"] == c) & (runs["status"] == "ok")])
            x = x[np.isfinite(x)]
            assert cells[f"{m}_n"][c] == x.size, (m, c)
            if x.size < cells["n"][c]:
                fewer.add(m)
            if x.size:
                assert cells[f"{m}_mean"][c] == pytest.approx(x.mean())
            if x.size >= 2:
                half = stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
                assert cells[f"{m}_ci95_hi"][c] == pytest.approx(x.mean() + half, abs=1e-9)
    assert "requests_slo_attainment" in fewer   # a run that counted no request has none


# ------------------------------------------------------------------------------ F6

def test_a_mixed_type_swept_column_leaves_the_other_parquet_columns_typed(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    doc = _doc(sweep={"grid": {"policy.draft_update": ["every-round", 5]}, "replications": 2,
                      "seed": 3})
    run_sweep(load_sweep(doc), tmp_path / "out", executor="serial")
    for name in ("runs", "cells"):
        table = pq.read_table(tmp_path / "out" / f"{name}.parquet")
        csv_table = read_table(tmp_path / "out" / f"{name}.csv")
        assert table.schema.field("policy.draft_update").type == pa.string()
        expected = ["every-round", "5"] if name == "cells" else ["every-round"] * 2 + ["5"] * 2
        assert table.column("policy.draft_update").to_pylist() == expected
        goodput = "goodput_tps" if name == "runs" else "goodput_tps_mean"
        assert table.schema.field(goodput).type == pa.float64()
        assert table.column(goodput).to_pylist() == list(csv_table[goodput])
        assert pa.types.is_integer(table.schema.field("cell").type)


# ------------------------------------------------------------------------------ F7

@pytest.mark.parametrize("grid, option, words", [
    ({"server.dl_power_dbm": [10, 20]}, "server.dl_power_ratio=16", "server.dl_power_dbm excludes"),
    ({"server.dl_power_dbm": [10, 20]}, "server={dl_power_ratio: 16}", "server.dl_power_dbm"),
    ({"server.dl_power_dbm": [10, 20]}, "server={dl_power_dbm: 16}", "holds the swept key"),
    ({"server": [{"dl_power_dbm": 10}, {"dl_power_dbm": 20}]}, "server.dl_power_dbm=16",
     "part of the swept key server"),
])
def test_a_set_option_the_sweep_overrides_is_refused(tmp_path, capsys, grid, option, words):
    """--set server.dl_power_ratio=16 under a swept server.dl_power_dbm had no effect (the
    swept key clears its exclusive sibling in every cell) and nothing said so; same with a
    parent or sub-key of a swept key. One line, exit 2, nothing written."""
    f = _write(tmp_path / "s.yaml", _doc(sweep={"grid": grid, "seed": 1}))
    out = tmp_path / "out"
    assert main(["sweep", str(f), "--out", str(out), "--set", option]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "--set" in err
    assert not out.exists()


def test_a_set_option_the_sweep_keeps_is_applied():
    """A sibling of a swept key under a --set of their parent is not overridden: applied."""
    sw = load_sweep(_doc(sweep={"grid": {"server.dl_power_dbm": [10, 20]}}),
                    overrides=["server={verify_fixed_ms: 3}"])
    assert {c.scenario["server"]["verify_fixed_ms"] for c in sw.cells} == {3}


def test_set_seed_against_sweep_seed_is_refused(tmp_path, capsys):
    f = _write(tmp_path / "s.yaml", SMALL)
    assert main(["sweep", str(f), "--out", str(tmp_path / "o"), "--set", "seed=99"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "sweep.seed" in err and not (tmp_path / "o").exists()
    # without sweep.seed, --set seed is the master seed
    doc = _doc()
    del doc["sweep"]["seed"]
    assert load_sweep(doc, overrides=["seed=99"]).seed == 99


# ------------------------------------------------------------------------------ F11

@pytest.mark.parametrize("spec", [{"start": 4, "stop": 4, "num": 3},
                                  {"start": 1.0, "stop": 1.0 + 1e-13, "num": 3},
                                  {"start": 1.0, "stop": 1.0 + 2e-13, "step": 1e-13}])
def test_a_range_with_repeated_values_is_refused_like_a_list(spec):
    with pytest.raises(ScenarioError, match="more than once") as info:
        load_sweep({"sweep": {"grid": {"server.dl_power_dbm": spec}}})
    assert info.value.path == "sweep.grid.server.dl_power_dbm"


@pytest.mark.parametrize("key, value, said", [("start", math.nan, "nan is not allowed"),
                                              ("stop", math.inf, "inf is not allowed"),
                                              ("start", "a", "a string is not allowed")])
def test_a_range_end_that_is_not_a_finite_number_is_named_by_its_value(key, value, said):
    with pytest.raises(ScenarioError) as info:
        load_sweep({"sweep": {"grid": {"devices.count": {"start": 2, "stop": 10, "step": 2,
                                                         key: value}}}})
    assert info.value.path == f"sweep.grid.devices.count.{key}"
    assert said in str(info.value) and "expected a finite number" in str(info.value)


def test_every_metric_of_cells_csv_is_a_plot_y(tmp_path):
    """Figures may plot any metric cells.csv has (link, asynchronous, acceptance, interference,
    load balance, ...): each one of three small sweeps' cells.csv is accepted as plot y."""
    bases = {
        "cells": (ROOT / "scenarios" / "cells" / "hex7.yaml", {"devices": {"count": 2},
                                                               "run": {"rounds": 4}}),
        "link": (ROOT / "scenarios" / "link" / "mcs.yaml", {"devices": {"count": 3},
                                                            "run": {"rounds": 4}}),
        "async": (ROOT / "scenarios" / "serving" / "base.yaml",
                  {"serving": {"protocol": "asynchronous"},
                   "run": {"rounds": 1000, "max_time_s": 3}}),
    }
    seen = set()
    for name, (base_file, base) in bases.items():
        doc = {"name": name, "base_file": str(base_file), "base": base,
               "sweep": {"grid": {"policy.mode": ["optimal"]}}}
        run_sweep(load_sweep(doc), tmp_path / name, executor="serial")
        cells = read_table(tmp_path / name / "cells.csv")
        metrics = [c[:-len("_mean")] for c in cells if c.endswith("_mean")]
        seen.update(m.split("_")[0] for m in metrics)
        doc["plot"] = [{"name": "all", "x": "policy.mode", "y": metrics}]
        assert load_sweep(doc).plot[0]["y"] == metrics
    assert {"link", "asynchronous", "acceptance", "interference", "load", "ul"} <= seen


def test_the_outputs_page_names_every_column_of_the_tables(sparse):
    """docs/guide/outputs.md describes runs.csv and cells.csv: every column that is not a
    flattened summary metric, and each per-metric suffix of cells.csv."""
    page = (ROOT / "docs" / "guide" / "outputs.md").read_text()
    section = page[page.index("## A sweep's tables: runs.csv and cells.csv"):]
    runs = read_table(sparse / "runs.csv")
    cells = read_table(sparse / "cells.csv")
    from multispin_sim.experiments.tables import flatten_summary

    # every run's metrics: a run that saw no request has no round and so fewer of them
    flat = set().union(*(flatten_summary(s) for s in _summaries(sparse).values()))
    suffixes = ("_mean", "_ci95_lo", "_ci95_hi", "_n")
    fixed = [c for c in runs if c not in flat] + [c for c in cells if not c.endswith(suffixes)]
    for column in fixed:
        if column != "workload.rate_per_s":   # the swept key: "one column per swept key"
            assert column in section, column
    for suffix in suffixes:
        assert f"`<metric>{suffix}`" in section


# ------------------------------------------------------------------ inputs checked per cell

def _refused(tmp_path, capsys, doc, *words):
    """The sweep ``doc`` through the CLI: exit 2, one error line holding ``words``, no folder."""
    f = _write(tmp_path / "s.yaml", doc)
    out = tmp_path / "out"
    assert main(["sweep", str(f), "--out", str(out), "--executor", "serial"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {f}: "), err
    for w in words:
        assert w in err, (w, err)
    assert not out.exists()
    return err


def test_a_cell_with_fewer_prbs_than_devices_is_refused_before_any_run(tmp_path, capsys):
    """A cell that passes the schema but fails a check that needs the model (5 MHz at 30 kHz:
    11 PRBs in TS 38.101-1 Table 5.3.2-1, fewer than 200 devices) ran cell 0, then failed with
    exit 1; it is refused up front as `validate` refuses that scenario."""
    doc = {"name": "prb", "base": {"run": {"rounds": 5}, "link": {"model": "mcs"},
                                   "channel": {"bandwidth_mhz": 5}},
           "sweep": {"grid": {"devices.count": [2, 200]}}}
    _refused(tmp_path, capsys, doc, "link.subcarrier_spacing_khz", "11 usable PRBs",
             "(in sweep cell 1: devices.count=200)")


def test_a_trace_device_valid_in_some_cells_only_is_refused_naming_the_cell(tmp_path, capsys):
    trace = tmp_path / "trace.csv"
    trace.write_text("time_s,device\n0.5,1\n0.7,4\n")
    doc = {"name": "trc", "base": {"run": {"rounds": 5},
                                   "workload": {"arrivals": "trace", "trace_file": str(trace)}},
           "sweep": {"grid": {"devices.count": [6, 3]}}}
    _refused(tmp_path, capsys, doc, "workload.trace_file", "line 3", "out of range",
             "(in sweep cell 1: devices.count=3)")


def test_a_swept_trace_file_that_is_bad_is_named_under_the_sweep(tmp_path, capsys):
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text("time_s,device\n0.5,1\n")
    bad.write_text("time_s,device\n0.5,x\n")
    doc = {"name": "trc", "base": {"run": {"rounds": 5}, "workload": {"arrivals": "trace"}},
           "sweep": {"grid": {"workload.trace_file": [str(good), str(bad)]}}}
    _refused(tmp_path, capsys, doc, "sweep.grid.workload.trace_file", "line 2", "not valid",
             "in sweep cell 1")


def test_each_input_file_is_read_once_for_all_the_cells(tmp_path, monkeypatch):
    """Checking every cell must not read a shared file once per cell (hundreds of cells)."""
    from multispin_sim.engine import workload

    trace = tmp_path / "trace.csv"
    trace.write_text("time_s,device\n0.5,0\n0.25,4\n")
    reads = []
    parse = workload._parse_trace
    monkeypatch.setattr(workload, "_parse_trace", lambda path: reads.append(path) or parse(path))
    doc = {"name": "trc", "base": {"workload": {"arrivals": "trace", "trace_file": str(trace)}},
           "sweep": {"grid": {"devices.count": [5, 6, 7], "policy.mode": ["optimal", "all-ul"]}}}
    assert len(load_sweep(doc).cells) == 6
    assert reads == [str(trace)]
    # outside a sweep's check every read is made afresh, sorted by time
    times, devices, tokens = workload.read_trace(str(trace), 5)
    assert times.tolist() == [0.25, 0.5] and devices.tolist() == [4, 0] and tokens is None
    assert len(reads) == 2


def test_a_poisson_layout_without_servers_in_some_cell_is_refused(tmp_path, capsys):
    """cells.density_per_km2 1e-7 in a disc of 1 km: P(no server) = exp(-pi 1e-7) > 1 - 1e-6
    at any seed; 100 per km2: P(none) = exp(-100 pi), nil. So cell 1 is refused, cell 0 not."""
    doc = {"name": "ppp", "base": {"run": {"rounds": 5},
                                   "cells": {"layout": "ppp", "region_m": 1000.0}},
           "sweep": {"grid": {"cells.density_per_km2": [100.0, 1e-7]}, "seed": 4}}
    _refused(tmp_path, capsys, doc, "sweep.grid.cells.density_per_km2", "drew no server",
             "(in sweep cell 1: cells.density_per_km2=1e-07")


def test_every_replication_seed_of_a_poisson_layout_is_checked():
    """Each replication draws its own layout: at density ln 2 / pi per km2 in a 1 km disc the
    mean is ln 2, so P(no server) = 1/2 per seed, independently; with 40 replications some
    seed draws none with P = 1 - 2^-40. Checking replication 0's seed alone would let the
    sweep through half the time."""
    doc = {"name": "ppp", "base": {"run": {"rounds": 5},
                                   "cells": {"layout": "ppp", "region_m": 1000.0,
                                             "density_per_km2": math.log(2) / math.pi}},
           "sweep": {"grid": {"policy.mode": ["optimal"]}, "replications": 40, "seed": 8}}
    with pytest.raises(ScenarioError) as info:
        load_sweep(doc)
    assert info.value.path == "cells.density_per_km2" and "in sweep cell 0" in str(info.value)


def test_an_error_of_the_set_options_alone_does_not_name_the_sweep_file(tmp_path):
    """Both DL powers given by --set over a sound sweep file: the error is the options', with no
    file prefix; the same powers written in the file's base name the file."""
    path = tmp_path / "sw.yaml"
    path.write_text("base: {run: {rounds: 5}}\nsweep:\n  grid:\n    devices.count: [2, 3]\n")
    with pytest.raises(ScenarioError) as info:
        load_sweep(str(path), ["server.dl_power_dbm=16", "server.dl_power_ratio=4"])
    assert info.value.path == "server" and info.value.source is None
    path.write_text("base: {run: {rounds: 5}, server: {dl_power_dbm: 16, dl_power_ratio: 4}}\n"
                    "sweep:\n  grid:\n    devices.count: [2, 3]\n")
    with pytest.raises(ScenarioError) as info:
        load_sweep(str(path), ["run.rounds=7"])
    assert info.value.source == str(path)
