"""The budget controller's shortcuts give the values of the code they replace, bit for bit.

The E[N] table of ``DraftObjective`` against ``expected_tokens`` (it is used with and without
numba); the compiled pieces against numpy with numba switched off (``greedy_fast._kernels =
False``, as tests/test_compiled_kernels.py does): the early-stopping optimal-split loads, the
+1 / -1 moves read from the budget scans' buckets, ``_set`` and ``_move_g``, the rejected sets
left to first use after a ``reset`` given its T_comm, a scan's repeated point, and the
communication-free budget kept across rounds.
"""
import numpy as np
import pytest

from multispin_sim.model.goodput import en_table
from multispin_sim.model.speculative import expected_tokens
from multispin_sim.policies import draft_search, greedy_fast

from test_compiled_kernels import make_system, numpy_only  # noqa: F401 (fixture)

needs_numba = pytest.mark.skipif(not greedy_fast.available(),
                                 reason="numba not installed or MULTISPIN_NUMBA=0")


def objective(k, seed, caps=20, samples=700, p_dl_dbm=16.0, mode="optimal"):
    rng = np.random.default_rng(seed)
    system = make_system(k, seed=seed, p_dl_dbm=p_dl_dbm)
    g_ul = system.pathloss * rng.exponential(size=k)
    caps = np.full(k, caps) if np.isscalar(caps) else caps
    return draft_search.make_objective(system, g_ul, g_ul, np.ones(k, bool), caps, mode,
                                       np.random.default_rng([seed, 1]), samples)


@pytest.mark.parametrize("k", [1, 3, 8, 20, 45])
def test_en_table_equals_expected_tokens(k):
    """Every entry of the table is expected_tokens' value for that rate and length, in the
    forms the objective uses: (K,) vectors, (n, K) paths, device subsets with their lengths
    (one length for all too), rates of 1 included."""
    rng = np.random.default_rng(k)
    for case in range(40):
        alpha = rng.uniform(0.05, 1.0, k)
        if case % 5 == 0:
            alpha[rng.integers(0, k)] = 1.0
        top = int(rng.integers(0, 40))
        tab = en_table(alpha, top)
        assert tab.shape == (top + 1, k) and not tab.flags.writeable
        g = rng.integers(0, top + 1, k)
        assert np.array_equal(tab[g, np.arange(k)], expected_tokens(alpha, g))
        paths = rng.integers(0, top + 1, (int(rng.integers(1, 30)), k))
        assert np.array_equal(tab[paths, np.arange(k)], expected_tokens(alpha, paths))
        dev = rng.integers(0, k, int(rng.integers(1, 3 * k)))
        new = rng.integers(0, top + 1, dev.size)
        assert np.array_equal(tab[new, dev], expected_tokens(alpha[dev], new))
        one = np.broadcast_to(np.int64(top // 2), dev.shape)
        assert np.array_equal(tab[one, dev], expected_tokens(alpha[dev], one))
        assert en_table(alpha, top) is tab   # kept


def test_objective_tokens_and_moves_use_exact_values():
    """``tokens`` / ``_set`` / ``_move_g`` from the table equal the closed form computed
    directly, inside the table and past it (lengths above the caps take expected_tokens)."""
    obj = objective(7, 3, caps=np.array([0, 3, 9, 20, 1, 5, 12]))
    rng = np.random.default_rng(0)
    for _ in range(30):
        paths = rng.integers(0, 30, (12, 7))   # some past the largest cap (20)
        want = expected_tokens(obj.alpha, paths) @ obj._w
        assert np.array_equal(obj.tokens(paths), want)
        inside = np.minimum(paths, obj.caps)
        assert np.array_equal(obj.tokens(inside), expected_tokens(obj.alpha, inside) @ obj._w)
    obj.reset(np.minimum(np.arange(7) * 3, obj.caps))
    en = expected_tokens(obj.alpha, obj.gamma) * obj._w
    assert np.array_equal(obj._en, en) and obj._tok == float(en.sum())


@needs_numba
@pytest.mark.parametrize("k", [1, 2, 9, 20, 62])
def test_early_loads_equal_vectorised_loads(k):
    """``_mask_loads_early`` (each set walked up to its crossing, or the vectorised loads when
    a probe says the walks are long) equals ``_mask_loads`` on any sets, for DL/UL power ratios
    from 1/100 (short walks) to 100 (long: the vectorised path), with zero and infinite gains
    and empty and full sets."""
    nb = greedy_fast._load()
    rng = np.random.default_rng(k)
    for case in range(60):
        n = int(rng.integers(0, 2500))
        pm = rng.integers(0, 1 << k, n, dtype=np.int64)
        if case % 3 == 0:
            pm &= rng.integers(0, 1 << k, n, dtype=np.int64)   # small sets
        if n > 2:
            pm[0], pm[1] = 0, (1 << k) - 1
        ratio = 10.0 ** rng.uniform(-2, 2)
        g = np.sort(10.0 ** rng.uniform(-3, 3, k))   # UL power ascending: u descending
        if case % 4 == 1:
            g[0] = 0.0
        if case % 4 == 2:
            g[-1] = np.inf
        with np.errstate(divide="ignore"):
            ua = ratio / g
            va = 1.0 / (g * 10.0 ** rng.uniform(-0.5, 0.5, k))
        cst = np.array([1e-3, 1e-6 * 10.0 ** rng.uniform(-2, 2), ratio, 0.04])
        out = []
        for fn in (nb._mask_loads, nb._mask_loads_early):
            arrays = [np.zeros(n), np.zeros(n), np.zeros(n, np.int64), np.zeros(n, np.int64),
                      np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)]
            fn(pm, n, ua, va, cst, *arrays)
            out.append(arrays)
        for j in (3, 4, 5, 6):   # counts, loads, s2, log1p arguments
            np.testing.assert_array_equal(out[1][j], out[0][j])


@needs_numba
@pytest.mark.parametrize("k", [3, 20])
def test_moves_from_buckets_equal_numpy(k, numpy_only):
    """With the budget scans alive, +1 / -1 moves read their samples from the buckets: the
    same means as numpy's (screened or not), the same as without buckets, for any point and
    caps; longer moves and moves at a cap scan as before."""
    rng = np.random.default_rng(k)
    for case in range(10):
        caps = np.full(k, 20) if case % 2 else rng.integers(0, 21, k)
        obj = objective(k, 10 + case, caps=caps)
        scans = greedy_fast.budget_scans(obj)
        assert scans is not None
        tc = obj.tcomm
        for _ in range(4):
            obj.reset(rng.integers(0, obj.caps + 1))
            g = obj.gamma
            act = np.flatnonzero(obj.caps > 0)
            dev = np.concatenate([act[g[act] < obj.caps[act]], act[g[act] > 0], act])
            new = np.concatenate([g[act][g[act] < obj.caps[act]] + 1, g[act][g[act] > 0] - 1,
                                  rng.integers(0, 21, act.size)])
            for samples in (None, 256, 5000):
                fast = tc.move_means(dev, new, samples)
                held, tc._buckets = tc._buckets, None   # no buckets: every move scans
                plain = tc.move_means(dev, new, samples)
                tc._buckets = held
                np.testing.assert_array_equal(fast, plain)
                np.testing.assert_array_equal(fast, numpy_only(tc.move_means, dev, new, samples))
        del scans


@needs_numba
def test_set_point_and_move_values_equal_numpy(numpy_only):
    """``_set`` and ``_move_g`` compiled against numpy: the same G, E[N], drafting leaders and
    evaluation counts from random points, for moves inside the table and past it."""
    rng = np.random.default_rng(5)
    for case in range(12):
        k = int(rng.integers(1, 25))
        obj = objective(k, 30 + case, caps=rng.integers(0, 21, k) if case % 2 else 20)
        ref = objective(k, 30 + case, caps=obj.caps)
        for _ in range(5):
            gamma = rng.integers(0, obj.caps + 1)
            v = obj.reset(gamma)
            w = numpy_only(ref.reset, gamma)
            assert v == w
            assert (obj._tok, obj._i1, obj._d1, obj._d2) == (ref._tok, ref._i1, ref._d1, ref._d2)
            np.testing.assert_array_equal(obj._en, ref._en)
            dev = rng.integers(0, k, 3 * k)
            new = rng.integers(0, 25, dev.size)   # some past the caps' table
            for screen in (None, (256, 3)):
                a = obj.move_values(dev, new, screen)
                b = numpy_only(ref.move_values, dev, new, screen)
                np.testing.assert_array_equal(a, b)
            assert obj.evaluations == ref.evaluations


@needs_numba
def test_reset_with_times_makes_rejected_sets_on_demand():
    """After a ``reset`` given its T_comm the rejected sets are made at first use: the same
    as runs < gamma, and the compiled moves' bit masks equal those of the rejected sets."""
    obj = objective(9, 4)
    tc = obj.tcomm
    nb = greedy_fast._load()
    gamma = np.arange(9) % 7
    t = tc.per_sample(gamma)
    obj.reset(gamma, t.copy())
    assert tc._rej is None
    tc.move_means(np.arange(9), gamma + 1)   # masks from the runs, rejected sets not made
    assert tc._rej is None
    masks = tc._rmask[2].copy()
    np.testing.assert_array_equal(tc.rej, tc.runs < gamma[None, :])
    bits = np.empty(tc.m, dtype=np.int64)
    nb.coin_bits(tc.rej, tc.kernel._fast_arrays.posbit, bits)
    np.testing.assert_array_equal(masks, bits)
    obj.apply_move(2, gamma[2] + 3)   # changes the rejected sets in place
    np.testing.assert_array_equal(tc.rej, tc.runs < obj.gamma[None, :])
    np.testing.assert_array_equal(tc.t, tc.per_sample(obj.gamma))


@needs_numba
def test_repeated_scan_point_is_an_independent_copy(numpy_only):
    """``times(ref)`` twice on the same scan: equal arrays, not the same object (the
    estimator changes the one it is given in place)."""
    obj = objective(12, 8, samples=500)
    scans = greedy_fast.budget_scans(obj)
    bpath, _ = scans.scan(obj.caps > 0)
    ref = bpath.shape[0] // 2
    a = scans.times(ref)
    b = scans.times(ref)
    assert a is not b
    np.testing.assert_array_equal(a, b)
    a[:] = -1.0
    np.testing.assert_array_equal(scans.times(ref), b)
    np.testing.assert_array_equal(b, numpy_only(obj.tcomm.per_sample, bpath[ref]))


def test_free_budget_kept_equals_direct():
    """The communication-free budget, computed or kept, is the drafting time of the best
    communication-free point of the uniform path."""
    for seed in range(4):
        obj = objective(6, 50 + seed, caps=np.array([20, 0, 7, 20, 3, 11]))
        path = draft_search.uniform_path(obj.caps)
        g_free = obj.tokens(path) / (obj.drafting(path) + obj.t_ver(path))
        want = float(obj.drafting(path[int(np.argmax(g_free))]))
        assert draft_search._free_budget(obj, path) == want
        assert draft_search._free_budget(obj, path) == want   # kept
