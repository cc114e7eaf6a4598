"""The paper's figure sweeps (scenarios/paper/) are at publication quality, and the bench that
times them reads their precision right."""
from pathlib import Path

import pytest

from multispin_sim.benchmarks.paper import goodput_curve, paper_dir, precision
from multispin_sim.experiments import load_sweep

PAPER = sorted((Path(__file__).resolve().parents[2] / "scenarios" / "paper").glob("*.yaml"))


@pytest.mark.parametrize("path", PAPER, ids=lambda p: p.stem)
def test_paper_sweeps_run_2000_rounds_x_10_stratified_drops(path):
    sweep = load_sweep(str(path))
    assert sweep.replications >= 10
    for cell in sweep.cells:
        assert cell.scenario["run"]["rounds"] >= 2000
        assert cell.scenario["devices"]["draw"] == "stratified"


def test_precision_is_the_relative_half_width_at_k20_per_curve(tmp_path):
    p = tmp_path / "cells.csv"
    p.write_text("cell,devices.count,policy.mode,goodput_tps_mean,goodput_tps_ci95_lo,"
                 "goodput_tps_ci95_hi\n0,20,optimal,200.0,198.0,202.0\n"
                 "1,10,optimal,100.0,90.0,110.0\n2,20,all-ul,50.0,45.0,55.0\n")
    assert precision(p, "policy.mode") == {"optimal": [0.01], "all-ul": [0.1]}
    q = tmp_path / "nok.csv"   # no devices.count column: every point is at the default K = 20
    q.write_text("cell,goodput_tps_mean,goodput_tps_ci95_lo,goodput_tps_ci95_hi\n0,50.0,49.0,51.0\n")
    assert precision(q) == {"all": [0.02]}


def test_goodput_curve_of_every_paper_sweep():
    """``bench paper`` reports one half-width per curve: the curve column of each paper file's
    goodput plot, read from the loaded sweep (whose ``y`` and ``curves`` are lists)."""
    want = {"fig7_8_dl_power": "model_pair", "fig9_10_devices": "policy.mode",
            "fig11_draft_control": "policy.draft"}
    for path in sorted(paper_dir().glob("*.yaml")):
        assert goodput_curve(load_sweep(str(path)).plot) == want[path.stem]
    assert goodput_curve([{"y": ["goodput_tps"], "curves": []}]) is None
    assert goodput_curve([{"y": "mean_draft_len", "curves": "x"}]) is None
