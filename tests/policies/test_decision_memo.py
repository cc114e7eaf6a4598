"""Computation-only draft control keeps its answer for rounds with the same devices: the kept
answer is the one a fresh search gives (lengths, G, evaluations), with queues that change the
active set and the caps, and whole runs are byte-identical with and without the memo."""
import filecmp

import numpy as np

from multispin_sim.engine import simulate
from multispin_sim.engine.population import build_population
from multispin_sim.engine.streams import RandomStreams
from multispin_sim.policies import DraftContext, draft_search, make_draft_controller
from multispin_sim.policies.draft import ComputationOnlyDraft
from multispin_sim.scenario import load_scenario


def test_kept_answers_equal_fresh_searches():
    sc = load_scenario(None, overrides={"devices.count": 12})
    system = build_population(sc, RandomStreams(5).devices).system
    ctl = make_draft_controller("computation-only", max_draft=20)
    rng = np.random.default_rng(3)
    for r in range(300):
        active = rng.random(12) < 0.8 if r % 3 else np.ones(12, dtype=bool)
        remaining = None if r % 2 else rng.integers(1, 30, size=12).astype(float)
        ctx = DraftContext(r, system, np.ones(12), np.ones(12), active, remaining)
        gamma = ctl.lengths(ctx)
        fresh = draft_search.greedy_search(ctl.objective(ctx))
        expect = np.where(active, fresh.gamma, 0)
        if remaining is not None:
            expect = np.minimum(expect, np.maximum(remaining - 1, 0))
        assert (gamma == expect).all()
        assert ctl.last.value == fresh.value and ctl.last.evaluations == fresh.evaluations
    assert 0 < len(ctl._memo) < 300


def test_runs_are_byte_identical_without_the_memo(tmp_path, monkeypatch):
    sc = load_scenario(None, overrides={"policy.draft": "computation-only", "run.rounds": 200,
                                        "workload.arrivals": "poisson",
                                        "workload.rate_per_s": 0.05})
    simulate(sc, out=tmp_path / "memo")
    monkeypatch.setattr(ComputationOnlyDraft, "search",
                        lambda self, objective: draft_search.greedy_search(objective))
    simulate(sc, out=tmp_path / "fresh")
    for name in ("rounds.csv", "device_rounds.csv", "devices.csv", "requests.csv"):
        if (tmp_path / "fresh" / name).exists():
            assert filecmp.cmp(tmp_path / "memo" / name, tmp_path / "fresh" / name,
                               shallow=False), name
