"""The draft-length objective G(gamma) (multispin_sim.model.goodput, docs/model.md sections 6, 7, 10).

Oracles, independent of the module under test:
- the reactive solvers of multispin_sim.model.reactive (optimal prefix split, all-UL, all-DL,
  the split of a given coin) on every rejected set;
- E[T_comm] by a plain Python loop over all 2^K outcomes with their product probabilities;
- the SAA estimate against the exact expectation: its error within a few standard errors,
  shrinking like 1/sqrt(M);
- the incremental estimators (moves, +1 cache, paths) against from-scratch evaluation.
"""
import itertools
import math

import numpy as np
import pytest

from multispin_sim.model import reactive as R
from multispin_sim.model.goodput import (DraftObjective, ExactTcomm, TcommKernel, acceptance_runs,
                                         goodput)
from multispin_sim.model.pathloss import pathloss_gain
from multispin_sim.model.speculative import acceptance_uniforms, expected_tokens
from multispin_sim.model.system import System
from multispin_sim.policies.draft_search import (budget_path, make_kernel, make_objective,
                                                 uniform_path)
from multispin_sim.policies.reactive import OptimalSplit, RandomSplit, make_reactive_policy

N0 = 10 ** (-174 / 10) * 1e-3
MODES = ("optimal", "all-ul", "all-dl", "random")


def make_system(k, seed=0, p_dl_dbm=16.0, payload=34_816.0, alpha=None, t_spread=(1.0, 1.15)):
    rng = np.random.default_rng(seed)
    d = rng.uniform(100, 500, k)
    return System(
        alpha=np.asarray(alpha, float) if alpha is not None else rng.choice([0.93, 0.91, 0.86, 0.83], k),
        draft_latency_s=15.2e-3 * rng.uniform(*t_spread, k), p_ul_w=np.full(k, 0.01),
        pathloss=pathloss_gain(d), p_dl_w=10 ** (p_dl_dbm / 10) * 1e-3, payload_bits=payload,
        bandwidth_hz=10e6, n0=N0, verify_fixed_s=42.8e-3, verify_per_device_s=7.6e-3)


class Coins:
    """A stand-in stream: ``random`` returns a fixed coin table (the random split's draws)."""

    def __init__(self, table):
        self.table = table

    def random(self, size):
        assert tuple(size) == self.table.shape
        return self.table.copy()


# ---------------------------------------------------------------------------- kernels


@pytest.mark.parametrize("per_sample", [False, True])
@pytest.mark.parametrize("mode", MODES + ("exhaustive",))
def test_kernel_equals_reactive_solvers(mode, per_sample):
    rng = np.random.default_rng(11)
    k, m = 12, 600
    s = make_system(k, seed=3)
    shape = (m, k) if per_sample else (k,)
    g_ul = s.pathloss * rng.exponential(size=shape)
    g_dl = s.pathloss * rng.exponential(size=shape)
    rej = rng.random((m, k)) < rng.uniform(0, 1, (m, 1))
    rej[0] = False                       # nobody rejected
    rej[1] = False
    rej[1, 4] = True                     # one device
    coin_u = rng.random((m, k))
    problem = s.reactive_problem(rej, g_ul, g_dl)
    if mode == "random":
        ref = R.random_split(problem, Coins(coin_u)).t_comm
    elif mode == "exhaustive":
        ref = R.optimal_split(problem).t_comm
    else:
        ref = make_reactive_policy(mode).decide(problem).t_comm
    got = TcommKernel(s, g_ul, g_dl, mode, coin=coin_u < 0.5)(rej, np.arange(m))
    assert got[0] == 0.0
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=0)


@pytest.mark.parametrize("per_sample", [False, True])
@pytest.mark.parametrize("mode", MODES)
def test_kernel_grid_equals_reactive_solvers(mode, per_sample, monkeypatch):
    """``grid``: every sample under every row of draft lengths (in passes of a few hundred
    outcomes here, to take the multi-pass branch), as the reactive solvers find it."""
    from multispin_sim.model import tcomm
    monkeypatch.setattr(tcomm, "_SPLIT_COLUMNS", 512)
    rng = np.random.default_rng(12)
    k, m = 10, 300
    s = make_system(k, seed=4)
    shape = (m, k) if per_sample else (k,)
    g_ul = s.pathloss * rng.exponential(size=shape)
    g_dl = s.pathloss * rng.exponential(size=shape)
    runs = acceptance_runs(acceptance_uniforms(rng, (m, k)), s.alpha)
    bounds = rng.integers(0, 12, (7, k)).astype(np.int32)
    bounds[0] = 0
    coin_u = rng.random((m, k))
    got = TcommKernel(s, g_ul, g_dl, mode, coin=coin_u < 0.5).grid(np.ascontiguousarray(runs.T),
                                                                   bounds)
    assert got.shape == (7, m) and np.all(got[0] == 0.0)
    for row, b in enumerate(bounds):
        problem = s.reactive_problem(runs < b, g_ul, g_dl)
        ref = (R.random_split(problem, Coins(coin_u)) if mode == "random"
               else make_reactive_policy(mode).decide(problem)).t_comm
        np.testing.assert_allclose(got[row], ref, rtol=1e-12, atol=0)


def test_kernel_optimal_against_exhaustive_assignments():
    rng = np.random.default_rng(5)
    s = make_system(7, seed=8, p_dl_dbm=12.0)
    g = s.pathloss * rng.exponential(size=7)
    rej = rng.random((60, 7)) < 0.6
    ref = R.exhaustive_split(s.reactive_problem(rej, g, g)).t_comm
    got = TcommKernel(s, g, g, "optimal")(rej)
    np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_kernel_edge_cases():
    rng = np.random.default_rng(2)
    s = make_system(6, seed=1)
    g = s.pathloss * rng.exponential(size=6)
    rej = rng.random((40, 6)) < 0.5
    # no DL power: the optimum is all-UL; all-DL is infinitely slow
    s0 = System(**{**s.__dict__, "p_dl_w": 0.0})
    p0 = s0.reactive_problem(rej, g, g)
    np.testing.assert_allclose(TcommKernel(s0, g, g, "optimal")(rej), R.optimal_split(p0).t_comm, rtol=1e-12)
    t_dl = TcommKernel(s0, g, g, "all-dl")(rej)
    assert np.all(np.isinf(t_dl[rej.any(axis=1)]))
    # zero payload: nothing to send
    sz = System(**{**s.__dict__, "payload_bits": 0.0})
    for mode in MODES:
        t = TcommKernel(sz, g, g, mode, coin=rej)(rej)
        assert np.all(t == 0.0)


@pytest.mark.parametrize("mode", MODES)
def test_policy_kernel_equals_fast_kernel(mode):
    """A reactive policy the kernel does not know is called as is; randomised policies see the
    same per-sample uniforms whatever batch a sample is evaluated in."""
    rng = np.random.default_rng(4)
    s = make_system(10, seed=2)
    g = s.pathloss * rng.exponential(size=10)
    base = type(make_reactive_policy(mode))

    class Custom(base):
        def decide(self, problem, rng=None):       # same decisions, unknown to the fast path
            return base.decide(self, problem, rng)

    coin_u = rng.random((300, 10))
    fast = make_kernel(s, g, g, make_reactive_policy(mode), coin_u)
    slow = make_kernel(s, g, g, Custom(), coin_u, seed=1)
    assert isinstance(fast, TcommKernel) and not isinstance(slow, TcommKernel)
    rej = rng.random((300, 10)) < 0.4
    rows = rng.permutation(300)[:120]
    np.testing.assert_allclose(slow(rej[rows], rows), fast(rej[rows], rows), rtol=1e-12)


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
            obj.apply(target)
            assert obj.value == pytest.approx(obj.value_of(target), rel=1e-12)
    for path in (uniform_path(caps), budget_path(caps, s.draft_latency_s, active),
                 np.where(active, rng.integers(0, 12, (9, k)), 0)):
        np.testing.assert_allclose(obj.path_values(path), obj.values(path), rtol=1e-12)
    # a path in pieces, each starting where the last ended (its per-sample T_comm is reused),
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
        if getattr(obj.tcomm.kernel, "path_means", None) is None:   # numpy's own scans
            assert (obj.tcomm._path[1] is None) == grid  # the scan this path is meant to take
        obj.reset(piece[-2])
        assert obj.tcomm.t == pytest.approx(obj.tcomm.per_sample(piece[-2]), rel=1e-12)
        obj.apply_move(dev[0], piece[-2][dev[0]] + 1)
        assert obj.value == pytest.approx(obj.value_of(obj.gamma), rel=1e-12)
        # moving on from a point of the path leaves the path's own values as they were
        assert obj.reset(piece[-2]) == pytest.approx(obj.value_of(piece[-2]), rel=1e-12)


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
