"""The draft-length objective G(gamma) (multispin_sim.model.goodput, docs/model.md sections 6, 7, 10).

Oracles, independent of the module under test: the closed forms of E[N] and of the ratio, and
from-scratch evaluation of every move the stateful objective scores incrementally.
"""
import numpy as np
import pytest

from goodput_systems import make_system
from multispin_sim.model.estimators import ExactTcomm
from multispin_sim.model.goodput import DraftObjective, en_table, goodput
from multispin_sim.model.speculative import expected_tokens
from multispin_sim.policies.draft_search import make_objective
from multispin_sim.policies.reactive import OptimalSplit, RandomSplit, make_reactive_policy


def test_objective_closed_forms():
    s = make_system(4, seed=2)
    obj = DraftObjective(s.alpha, s.draft_latency_s, 0.1, np.full(4, 8), np.ones(4, bool),
                         ExactTcomm(s.alpha, np.ones(4, bool), lambda rej, rows: np.zeros(len(rej))))
    gamma = np.array([4, 3, 0, 7])
    tok = expected_tokens(s.alpha, gamma).sum()
    d = max(gamma * s.draft_latency_s)
    assert obj.value_of(gamma) == pytest.approx(tok / (d + 0.1), rel=1e-14)
    assert float(goodput(10.0, 0.0, 0.0, 0.0)) == 0.0
    # docs/model.md section 10 reference values of E[N]
    np.testing.assert_allclose(expected_tokens([0.8, 0.6, 0.9], [4, 3, 7]),
                               [3.3616, 2.176, 5.6953279], rtol=1e-7)


def test_saa_draws_from_the_controller_stream_only():
    """Same stream state -> same samples; the draws advance the stream by a fixed amount."""
    s = make_system(6, seed=1)
    g = s.pathloss
    a = make_objective(s, g, g, np.ones(6, bool), np.full(6, 8), "optimal", np.random.default_rng(5), 300)
    b = make_objective(s, g, g, np.ones(6, bool), np.full(6, 8), "random", np.random.default_rng(5), 300)
    np.testing.assert_array_equal(a.tcomm.runs, b.tcomm.runs)
    r1, r2 = np.random.default_rng(5), np.random.default_rng(5)
    make_objective(s, g, g, np.ones(6, bool), np.full(6, 8), "optimal", r1, 300)
    make_objective(s, g, g, np.ones(6, bool), np.full(6, 8), "all-dl", r2, 300)
    assert r1.random() == r2.random()
    assert isinstance(make_reactive_policy("random"), RandomSplit)
    assert isinstance(make_reactive_policy("optimal"), OptimalSplit)


def test_screened_moves_evaluate_the_best_exactly():
    s = make_system(16, seed=7, p_dl_dbm=10.0)
    g = s.pathloss * np.random.default_rng(3).exponential(size=16)
    obj = make_objective(s, g, g, np.ones(16, bool), np.full(16, 12), "optimal",
                         np.random.default_rng(1), 800)
    obj.reset(np.full(16, 8))
    dev = np.arange(16)
    full = obj.move_values(dev, 0)
    screened = obj.move_values(dev, 0, screen=(200, 3))
    kept = np.isfinite(screened)
    assert kept.sum() == 3
    np.testing.assert_allclose(screened[kept], full[kept], rtol=1e-12)
    assert np.argmax(screened) == np.argmax(full)     # the screen keeps the winner here


@pytest.mark.parametrize("mode", ["optimal", "random"])
def test_plus_one_cache_holds_over_a_long_chain_of_steps(mode):
    """The +1 cache's column sums follow each step's changes; after many consecutive +1 steps
    (no reset in between) they still give the from-scratch values."""
    k = 12
    s = make_system(k, seed=9)
    rng = np.random.default_rng(4)
    g = s.pathloss * rng.exponential(size=k)
    caps = np.full(k, 10)
    obj = make_objective(s, g, g, np.ones(k, bool), caps, mode, np.random.default_rng(1), 500)
    obj.reset(np.zeros(k, dtype=np.int64))
    for _ in range(k * 10):
        plus = obj.plus_one_values()
        ok = np.flatnonzero(np.isfinite(plus))
        if ok.size == 0:
            break
        cand = np.repeat(obj.gamma[None], ok.size, 0)
        cand[np.arange(ok.size), ok] += 1
        np.testing.assert_allclose(plus[ok], obj.values(cand), rtol=1e-12)
        j = ok[rng.integers(ok.size)]
        obj.apply_move(j, obj.gamma[j] + 1)
    assert (obj.gamma == caps).all()


def test_en_table_is_expected_tokens_at_every_length():
    """Row g of the E[N] table is ``expected_tokens(alpha, g)`` bit for bit, as the (K,) and
    (n, K) calls of the objective compute it (the table replaces them)."""
    s = make_system(9, seed=6)
    tab = en_table(s.alpha, 20)
    assert tab.shape == (21, 9) and not tab.flags.writeable
    for g in range(21):
        np.testing.assert_array_equal(tab[g], expected_tokens(s.alpha, np.full(9, g)))
    gammas = np.random.default_rng(1).integers(0, 21, (50, 9))
    np.testing.assert_array_equal(tab[gammas, np.arange(9)], expected_tokens(s.alpha, gammas))
