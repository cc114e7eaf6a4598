"""The estimators of E[T_comm] (multispin_sim.model.estimators, docs/model.md section 7).

Oracles, independent of the module under test:
- E[T_comm] by a plain Python loop over all 2^K outcomes with their product probabilities;
- the SAA estimate against the exact expectation: its error within a few standard errors,
  shrinking like 1/sqrt(M);
- the incremental estimators (moves, +1 cache, paths) against from-scratch evaluation.
"""
import itertools
import math

import numpy as np
import pytest

from goodput_systems import MODES, make_system
from multispin_sim.model import reactive as R
from multispin_sim.model.estimators import acceptance_runs
from multispin_sim.model.speculative import acceptance_uniforms, expected_tokens
from multispin_sim.model.system import System
from multispin_sim.policies.draft_search import budget_path, make_objective, uniform_path
from multispin_sim.policies.reactive import make_reactive_policy


# ---------------------------------------------------------------------------- exact expectation


def _python_expectation(s, g, gamma, mode):
    """E[T_comm] by a plain loop over all outcomes (and coins) with the reactive solvers."""
    k = len(gamma)
    q = [1 - s.alpha[i] ** gamma[i] for i in range(k)]
    total = 0.0
    for mask in itertools.product((0, 1), repeat=k):
        p = math.prod(q[i] if mask[i] else 1 - q[i] for i in range(k))
        if p == 0:
            continue
        rej = np.array(mask, bool)[None, :]
        problem = s.reactive_problem(rej, g, g)
        if mode == "random":
            idx = np.flatnonzero(rej[0])
            t = 0.0
            for coins in itertools.product((False, True), repeat=idx.size):
                ul = np.zeros((1, k), bool)
                ul[0, idx] = coins
                t += R.evaluate_assignment(problem, ul).t_comm[0] / 2 ** idx.size
        else:
            t = make_reactive_policy(mode).decide(problem).t_comm[0]
        total += p * t
    return total


@pytest.mark.parametrize("mode", MODES)
def test_exact_enumeration_against_python_loop(mode):
    rng = np.random.default_rng(9)
    k = 5
    s = make_system(k, seed=4, p_dl_dbm=13.0)
    g = s.pathloss * rng.exponential(size=k)
    obj = make_objective(s, g, g, np.ones(k, bool), np.full(k, 8), mode, estimator="exact")
    gammas = rng.integers(0, 9, (4, k))
    got = obj.tcomm.mean(gammas)
    ref = [_python_expectation(s, g, gm, mode) for gm in gammas]
    np.testing.assert_allclose(got, ref, rtol=1e-10)
    # and the whole ratio
    tok = expected_tokens(s.alpha, gammas).sum(axis=1)
    draft = (gammas * s.draft_latency_s).max(axis=1)
    np.testing.assert_allclose(obj.values(gammas), tok / (draft + s.verification_s(k) + np.array(ref)),
                               rtol=1e-10)


def test_exact_inactive_devices_do_not_count():
    rng = np.random.default_rng(1)
    s = make_system(5, seed=6)
    g = s.pathloss * rng.exponential(size=5)
    active = np.array([True, False, True, True, False])
    obj = make_objective(s, g, g, active, np.full(5, 8), "optimal", estimator="exact")
    assert obj.verify_s == pytest.approx(s.verification_s(3))
    assert list(obj.caps) == [8, 0, 8, 8, 0]
    gamma = np.array([3, 0, 5, 2, 0])
    per_device = ("alpha", "draft_latency_s", "p_ul_w", "pathloss")
    sub = System(**{**s.__dict__, **{f: getattr(s, f)[active] for f in per_device}})
    ref = _python_expectation(sub, g[active], gamma[active], "optimal")
    assert obj.tcomm.mean(gamma[None])[0] == pytest.approx(ref, rel=1e-10)
    assert obj.tokens(gamma) == pytest.approx(expected_tokens(s.alpha[active], gamma[active]).sum())



@pytest.mark.parametrize("mode", ["optimal", "random"])
def test_exact_with_no_active_device_has_no_communication(mode):
    # a round where every device only sends a carried correction (policy.mode: deadline):
    # the one outcome is "nobody rejected", T_comm 0, and the searches answer gamma = 0
    s = make_system(3, seed=2)
    g = s.pathloss * np.ones(3)
    obj = make_objective(s, g, g, np.zeros(3, bool), np.full(3, 5), mode, estimator="exact")
    assert obj.tcomm.mean(np.array([[0, 0, 0], [2, 1, 3]])).tolist() == [0.0, 0.0]


# ---------------------------------------------------------------------------- SAA


@pytest.mark.parametrize("mode", ["optimal", "random"])
def test_saa_converges_to_exact(mode):
    """Error within a few standard errors, RMS over seeds shrinking like 1/sqrt(M)."""
    k = 8
    rng = np.random.default_rng(21)
    s = make_system(k, seed=12, p_dl_dbm=12.0)
    g = s.pathloss * rng.exponential(size=k)
    gamma = rng.integers(1, 9, k)
    exact_obj = make_objective(s, g, g, np.ones(k, bool), np.full(k, 8), mode, estimator="exact")
    exact = exact_obj.tcomm.mean(gamma[None])[0]
    g_exact = exact_obj.value_of(gamma)
    sizes = (250, 1000, 4000, 16000)
    rms = []
    for m in sizes:
        errs, zs = [], []
        for seed in range(20):
            obj = make_objective(s, g, g, np.ones(k, bool), np.full(k, 8), mode,
                                 np.random.default_rng(1000 * m + seed), m)
            t = obj.tcomm.per_sample(gamma)
            est, se = t.mean(), t.std(ddof=1) / math.sqrt(m)
            assert obj.tcomm.mean(gamma[None])[0] == pytest.approx(est, rel=1e-12)
            errs.append(est - exact)
            zs.append((est - exact) / se)
            if m == sizes[-1]:
                assert obj.value_of(gamma) == pytest.approx(g_exact, rel=0.02)
        zs = np.array(zs)
        assert np.max(np.abs(zs)) < 4.0, (m, zs)
        assert 0.3 < np.mean(zs ** 2) < 2.2, (m, zs)       # chi-square(20)/20: 99.9% range
        rms.append(math.sqrt(np.mean(np.square(errs))))
    # 64x the samples: RMS error about 8x smaller (allow 4x for the spread of 20 seeds)
    assert rms[-1] < rms[0] / 4
    assert all(b < a * 1.3 for a, b in zip(rms, rms[1:]))


def test_saa_common_random_numbers_monotone_coupling():
    """One uniform table per decision: rejected iff run < gamma, the same draws for all gammas."""
    rng = np.random.default_rng(3)
    alpha = np.array([0.6, 0.8, 0.93, 1.0])
    u = acceptance_uniforms(rng, (5000, 4))
    runs = acceptance_runs(u, alpha)
    from multispin_sim.model.speculative import draft_outcome
    for gamma in ([0, 0, 0, 0], [1, 3, 5, 7], [8, 2, 20, 4]):
        _, _, rejected = draft_outcome(u, alpha, np.array(gamma))
        np.testing.assert_array_equal(runs < np.array(gamma), rejected)
    assert np.all(runs[:, 3] >= 20)       # alpha = 1: never rejected
    # rejection frequencies are 1 - alpha^gamma
    freq = (runs < 3).mean(axis=0)
    np.testing.assert_allclose(freq[:3], 1 - alpha[:3] ** 3, atol=4 * 0.5 / math.sqrt(5000))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sampled_fading", [False, True])
def test_saa_incremental_equals_from_scratch(mode, sampled_fading):
    k = 14
    s = make_system(k, seed=5)
    rng = np.random.default_rng(8)
    g = s.pathloss * rng.exponential(size=k)
    active = np.ones(k, bool)
    active[[2, 9]] = False
    caps = np.where(active, 12, 0)
    obj = make_objective(s, g, g, active, caps, mode, np.random.default_rng(0), 400,
                         sampled_fading=sampled_fading)
    obj.reset(np.where(active, rng.integers(0, 6, k), 0))
    dev = np.flatnonzero(active)
    for it in range(25):
        new = np.clip(obj.gamma[dev] + rng.integers(-3, 4, dev.size), 0, 12)
        cand = np.repeat(obj.gamma[None], dev.size, 0)
        cand[np.arange(dev.size), dev] = new
        np.testing.assert_allclose(obj.move_values(dev, new), obj.values(cand), rtol=1e-12)
        plus = obj.plus_one_values()
        ok = np.flatnonzero(np.isfinite(plus))
        cand = np.repeat(obj.gamma[None], ok.size, 0)
        cand[np.arange(ok.size), ok] += 1
        np.testing.assert_allclose(plus[ok], obj.values(cand), rtol=1e-12)
        assert set(ok) == set(np.flatnonzero(obj.gamma < caps))
        j = ok[int(np.argmax(plus[ok]))]
        obj.apply_move(j, obj.gamma[j] + 1)                 # keeps the +1 cache
        assert obj.value == pytest.approx(obj.value_of(obj.gamma), rel=1e-12)
        if it % 5 == 2:
            j = dev[it % dev.size]
            obj.apply_move(j, max(obj.gamma[j] - 2, 0))      # any other move drops it
            assert obj.value == pytest.approx(obj.value_of(obj.gamma), rel=1e-12)
        if it % 7 == 6:
            target = np.where(active, rng.integers(0, 12, k), 0)
            obj.reset(target)
            assert obj.value == pytest.approx(obj.value_of(target), rel=1e-12)
    for path in (uniform_path(caps), budget_path(caps, s.draft_latency_s, active),
                 np.where(active, rng.integers(0, 12, (9, k)), 0)):
        np.testing.assert_allclose(obj.path_values(path), obj.values(path), rtol=1e-12)
    # a path in pieces, each starting where the last ended,
    # and a reset to a point of the last path
    path = budget_path(caps, s.draft_latency_s, active)
    cut = [0, 7, 30, 31, len(path)]
    for a, b in zip(cut, cut[1:]):
        piece = path[max(a - 1, 0):b]
        np.testing.assert_allclose(obj.path_values(piece), obj.values(piece), rtol=1e-12)
    assert obj.reset(path[-3]) == pytest.approx(obj.value_of(path[-3]), rel=1e-12)
    obj.reset(path[5])
    np.testing.assert_allclose(obj.path_values(path[5:12]), obj.values(path[5:12]), rtol=1e-12)
    # both scans of a path: every (step, sample) pair (the uniform path: every step raises
    # every device) and the flip events (the budget path: one device a step), each leaving
    # the per-sample T_comm of its points for a reset
    for piece, grid in ((uniform_path(caps)[2:9], True), (path[3:3 + k + 1], False)):
        assert obj.path_values(piece)[-1] == pytest.approx(obj.value_of(piece[-1]), rel=1e-12)
        assert (obj.tcomm._path[1] is None) == grid  # the scan this path is meant to take
        obj.reset(piece[-2])
        assert obj.tcomm.t == pytest.approx(obj.tcomm.per_sample(piece[-2]), rel=1e-12)
        obj.apply_move(dev[0], piece[-2][dev[0]] + 1)
        assert obj.value == pytest.approx(obj.value_of(obj.gamma), rel=1e-12)
        # moving on from a point of the path leaves the path's own values as they were
        assert obj.reset(piece[-2]) == pytest.approx(obj.value_of(piece[-2]), rel=1e-12)
