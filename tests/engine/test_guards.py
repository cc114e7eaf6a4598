"""engine/guards.py: a run whose rounds stop being finite ends there, flagged incomplete.

Value limits refuse every known cause up front, so the test makes a round infinite from the
inside: devices whose drafting takes forever."""
import dataclasses
import json
import math

import numpy as np
import pytest

import multispin_sim as ms
from multispin_sim.engine import simulation


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # inf - inf in the records
@pytest.mark.parametrize("protocol", ["synchronous", "asynchronous"])
def test_a_round_at_infinite_time_stops_the_run_incomplete(tmp_path, monkeypatch, protocol):
    real = simulation.build_population

    def build_population(*args, **kw):
        population = real(*args, **kw)
        t = np.full_like(population.system.draft_latency_s, math.inf)
        return dataclasses.replace(population, system=dataclasses.replace(
            population.system, draft_latency_s=t))
    monkeypatch.setattr(simulation, "build_population", build_population)
    overrides = {"devices.count": 3, "run.rounds": 20, "serving.protocol": protocol}
    sc = ms.load_scenario(None, overrides=overrides)
    result = ms.simulate(sc, tmp_path / "run")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["complete"] is False
    assert "not finite" in summary["stop_reason"]
    assert "keys" in result.stop_todo
    assert summary["rounds"] <= 1
