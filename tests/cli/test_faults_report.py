"""Fault injection: ``report`` on damaged folders and bad output locations (the method of
tests/cli/test_faults.py): exit 2 with one line naming the file (and line) and what is expected,
before any figure is drawn; nothing written."""
import json
import shutil

import pytest

from test_faults import cli, error_line, scenario

pytest.importorskip("matplotlib", reason="the report draws figures with matplotlib")


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("good")
    out = base / "run"
    assert cli("run", scenario(base), "--out", out, "--quiet", cwd=base).rc == 0
    return out


def _cut(name, size):
    return lambda d: (d / name).write_bytes((d / name).read_bytes()[:size])


def _infinite_round(d):
    lines = (d / "rounds.csv").read_text().splitlines()
    col = lines[0].split(",").index("duration_s")
    row = lines[3].split(",")
    row[col] = "inf"
    lines[3] = ",".join(row)
    (d / "rounds.csv").write_text("\n".join(lines) + "\n")


def _zero_rounds(d):
    for name in ("rounds.csv", "device_rounds.csv"):
        (d / name).write_text((d / name).read_text().splitlines()[0] + "\n")
    summary = json.loads((d / "summary.json").read_text())
    (d / "summary.json").write_text(json.dumps(dict(summary, rounds=0)))


DAMAGE = {
    "cut-summary": (_cut("summary.json", 200), "summary.json:", "not valid JSON"),
    "garbage-rounds": (lambda d: (d / "rounds.csv").write_bytes(b"hello\x00\xff world\n,,,\n"),
                       "rounds.csv:1:", "not UTF-8"),
    "cut-mid-row": (_cut("rounds.csv", 1500), "rounds.csv:", "cut mid-row"),
    "infinite-round": (_infinite_round, "rounds.csv:4:", "expected a finite number"),
    "zero-rounds": (_zero_rounds, "zero-rounds:", "no rounds"),
    "summary-list": (lambda d: (d / "summary.json").write_text("[1, 2]\n"), "summary.json:",
                     "expected an object"),
    "missing-column": (lambda d: (d / "rounds.csv").write_text("round,start_s\n0,0.0\n"),
                       "rounds.csv:1:", "no column"),
    "short-row": (lambda d: (d / "devices.csv").write_text(
        (d / "devices.csv").read_text().splitlines()[0] + "\n0,1\n"), "devices.csv:2:", "fields"),
}


@pytest.mark.parametrize("command", ["report", "timeline"])
@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_report_refuses_damaged_run_folder(good_run, tmp_path, name, command):
    """FAULT_CLASS report: a damaged run folder gave "internal error" or a silent page (and
    ``plot --timeline`` an internal error for a cut rounds.csv); now the file, the line and what
    is expected, exit 2, nothing written."""
    damage, where, why = DAMAGE[name]
    folder = tmp_path / name
    shutil.copytree(good_run, folder)
    damage(folder)
    before = sorted(p.name for p in folder.iterdir())
    args = ("report", folder) if command == "report" else ("plot", "--timeline", folder)
    line = error_line(cli(*args, cwd=tmp_path), 2)
    assert where in line and why in line and "internal error" not in line
    assert sorted(p.name for p in folder.iterdir()) == before


@pytest.mark.parametrize("out, why", [("", "is empty"), (".", "is a folder"),
                                      ("summary.json/x.html", "is a file")])
def test_report_checks_its_output_before_any_work(good_run, tmp_path, out, why):
    """FAULT_CLASS output locations: a bad --out is refused before any figure (it was exit 1
    after drawing every figure, or '' wrote RESULTS_DIR/report.html)."""
    folder = tmp_path / "run"
    shutil.copytree(good_run, folder)
    line = error_line(cli("report", folder, "--out", out, cwd=folder), 2)
    assert "--out" in line and why in line
    assert not (folder / "report.html").exists()


@pytest.fixture(scope="module")
def good_sweep(tmp_path_factory):
    base = tmp_path_factory.mktemp("sweep")
    sw = base / "s.yaml"
    sw.write_text("name: s\nbase: {devices: {count: 2}, run: {rounds: 10}}\n"
                  "sweep: {grid: {devices.count: [2, 3]}, replications: 1, seed: 1}\n")
    out = base / "out"
    assert cli("sweep", sw, "--out", out, "--executor", "serial", cwd=base).rc == 0
    return out


SWEEP_DAMAGE = {
    "cut-mid-row": (lambda d: (d / "cells.csv").write_bytes((d / "cells.csv").read_bytes()[:-5]),
                    "cells.csv:", "cut mid-row"),
    "empty-cells": (lambda d: (d / "cells.csv").write_text(""), "cells.csv:", "empty"),
    "header-only": (lambda d: (d / "cells.csv").write_text(
        (d / "cells.csv").read_text().splitlines()[0] + "\n"), "cells.csv:", "no cells"),
    "no-key-column": (lambda d: (d / "cells.csv").write_text("x,y\n1,2\n"), "cells.csv:1:",
                      "no column cell, n, devices.count"),
    "sweep-json-list": (lambda d: (d / "sweep.json").write_text("[]"), "sweep.json:",
                        "expected an object"),
    # a sweep killed before it wrote its tables (SIGKILL): say how to finish it
    "no-tables": (lambda d: (d / "cells.csv").unlink(), "cells.csv: not found",
                  "rerun the sweep command to finish it"),
}


@pytest.mark.parametrize("command", ["report", "plot"])
@pytest.mark.parametrize("name", sorted(SWEEP_DAMAGE))
def test_report_refuses_damaged_sweep_folder(good_sweep, tmp_path, name, command):
    """FAULT_CLASS report: a damaged sweep folder (``plot`` gave internal errors, KeyError,
    "range() arg 3 must not be zero", and left an empty figures/ folder)."""
    damage, where, why = SWEEP_DAMAGE[name]
    folder = tmp_path / name
    shutil.copytree(good_sweep, folder)
    damage(folder)
    before = sorted(p.name for p in folder.iterdir())
    line = error_line(cli(command, folder, cwd=tmp_path), 2)
    assert where in line and why in line, line
    assert sorted(p.name for p in folder.iterdir()) == before


def test_report_and_timeline_of_a_run_stopped_before_its_first_round_give_the_reason(tmp_path):
    """A run a limit stopped during its first round: report and plot --timeline give the
    stop reason (exit 2), not advice to run more rounds."""
    path = scenario(tmp_path, link={"model": "mcs"}, channel={"fading": "gauss-markov"},
                    devices={"distance_m": 1e5}, run={"rounds": 5},
                    limits={"max_blocks_per_transmission": 100})
    out = tmp_path / "out"
    assert cli("run", path, "--out", out, "--quiet", cwd=tmp_path).rc == 1
    for command in (("report", out), ("plot", "--timeline", out, "--out", tmp_path / "t.png")):
        line = error_line(cli(*command, cwd=tmp_path), 2)
        assert "before its first round ended" in line and "fading blocks" in line, line
    assert not (out / "report.html").exists() and not (tmp_path / "t.png").exists()
