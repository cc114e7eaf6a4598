"""Shadowing of moving devices is a function of each device's walk and the seed: a ``Mover``
gives the same shadowing at an instant however often it was asked before, and two runs that
differ only in the policy (so start their rounds at other instants) see the same shadowing
wherever they ask at the same instant (common random numbers)."""
import copy
from pathlib import Path

import numpy as np

import multispin_sim as ms
from multispin_sim.engine import simulation
from multispin_sim.engine.population import build_population
from multispin_sim.engine.streams import RandomStreams
from multispin_sim.engine.topology import Mover

MOBILITY = Path(__file__).resolve().parents[2] / "scenarios" / "mobility.yaml"


def _mover(sc, seed):
    streams = RandomStreams(seed)
    pop = build_population(sc, streams.devices, streams.topology, streams.shadowing)
    return Mover(sc, pop, streams.mobility, np.random.default_rng(17))


def test_a_mover_asked_on_different_grids_agrees_where_they_meet():
    sc = ms.load_scenario(MOBILITY)
    grids = [np.arange(0.0, 60.0 + 1e-9, 0.5), np.arange(0.0, 60.0 + 1e-9, 1.5),
             np.array([0.0, 30.0, 60.0])]
    seen = []
    for grid in grids:
        mover = _mover(sc, 4)
        seen.append({float(t): (mover.gains(float(t)).copy(), mover.shadow_db.copy())
                     for t in grid})
    moved = seen[2][60.0][1] != seen[2][0.0][1]
    assert moved.sum() >= 15   # 20 devices walking 0.5-2 m/s with 5 s pauses, for a minute
    for other in seen[1:]:
        for t, (gain, shadow) in other.items():
            if t in seen[0]:
                np.testing.assert_allclose(shadow, seen[0][t][1], rtol=0, atol=1e-12)
                np.testing.assert_allclose(gain, seen[0][t][0], rtol=1e-12, atol=0)


def test_policies_see_the_same_shadowing_at_the_same_instant(tmp_path, monkeypatch):
    """Each run's mover is copied before its first round; that untouched copy, asked at the
    round starts of both runs in time order, must give each run's own records: the shadowing
    of a device at an instant does not depend on which instants were asked before."""
    built = []

    class Recording(Mover):
        def __init__(self, *args):
            super().__init__(*args)
            self.seen = []
            self.fresh = copy.deepcopy(self)
            built.append(self)

        def gains(self, t):
            gain = super().gains(t)
            self.seen.append((t, self.shadow_db.copy()))
            return gain

    monkeypatch.setattr(simulation, "Mover", Recording)
    for mode in ("optimal", "all-ul"):
        sc = ms.load_scenario(MOBILITY, overrides={"channel.fading": "none", "run.rounds": 150,
                                                   "policy.mode": mode})
        ms.simulate(sc, out=tmp_path / mode)
    a, b = (dict(m.seen) for m in built)
    assert len(a) >= 100 and len(b) >= 100 and set(a) != set(b)   # other round starts
    reference = built[0].fresh
    for t in sorted(set(a) | set(b)):
        reference.gains(t)
        for run in (a, b):
            if t in run:
                np.testing.assert_allclose(run[t], reference.shadow_db, rtol=0, atol=1e-12)
