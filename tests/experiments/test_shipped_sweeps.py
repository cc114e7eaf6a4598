"""Every sweep file shipped in scenarios/ loads: each cell's scenario is valid, and its plots
name swept keys and recorded metrics (what ``load_sweep`` checks before any run starts)."""
from pathlib import Path

import pytest
import yaml

from multispin_sim.experiments import load_sweep

ROOT = Path(__file__).resolve().parents[2] / "scenarios"
SWEEPS = sorted(p for p in ROOT.rglob("*.yaml") if "sweep" in yaml.safe_load(p.read_text()))


def test_the_shipped_sweeps_are_found():
    assert {p.parent.name for p in SWEEPS} >= {"paper", "cells", "antennas", "compute"}


@pytest.mark.parametrize("path", SWEEPS, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_sweep_loads(path):
    sweep = load_sweep(str(path))
    assert sweep.n_runs == len(sweep.cells) * sweep.replications >= 1
    swept = set(sweep.keys)
    for spec in sweep.plot:
        assert spec["x"] in swept
