"""The compiled greedy's building blocks against plain numpy (or the module's own scalar
reference, ``_loads``), bit for bit: the bit count of the rejected counts, the sample search of
phase 2 (``_find_eq``), the one-pass all-DL sums and four-device all-UL minima, the optimal
split's loads four devices per pass, the transposed runs kept by ``acceptance_runs``, and
``path_dense`` on paths whose flip steps need the table (not unit steps).
"""
import numpy as np
import pytest

from multispin_sim.model.goodput import acceptance_runs
from multispin_sim.model.speculative import acceptance_uniforms
from multispin_sim.policies import draft_search, greedy_fast, make_reactive_policy

from test_compiled_kernels import make_system, needs_numba, numpy_only  # noqa: F401


def _nb():
    return greedy_fast._load()


def _masks(rng, n, k):
    """Random sets of k devices, plus the empty and the full set."""
    pm = rng.integers(0, 1 << k, n, dtype=np.int64) if k else np.zeros(n, np.int64)
    pm[0] = 0
    pm[1] = (1 << k) - 1
    return pm


def _bits(pm, k):
    return ((pm[:, None] >> np.arange(k)) & 1).astype(bool)


@needs_numba
def test_bitcount_counts_bits():
    nb = _nb()
    rng = np.random.default_rng(0)
    for v in list(rng.integers(0, 1 << 62, 500)) + [0, 1, (1 << 62) - 1, 1 << 61]:
        assert nb._bitcount(np.int64(v)) == bin(int(v)).count("1")


@needs_numba
@pytest.mark.parametrize("m", [1, 5, 63, 64, 65, 128, 1000, 4097])
def test_find_eq_lists_the_equal_samples_in_order(m):
    nb = _nb()
    rng = np.random.default_rng(m)
    for hi in (1, 3, 40):
        rj = rng.integers(0, hi, m).astype(np.int32)
        out = np.full(m + 5, -7, dtype=np.int64)
        for g in range(-1, hi + 1):
            for off in (0, 3):
                c = nb._find_eq(rj, g, out, off)
                want = np.flatnonzero(rj == g)
                assert c == want.size
                np.testing.assert_array_equal(out[off:off + c], want)


@needs_numba
@pytest.mark.parametrize("k", list(range(1, 27)) + [40, 62])
def test_reactive_mask_loads_equal_numpy(k):
    """all-UL minima (four devices per pass) and all-DL sums (one pass for 8 <= K < 24) of
    the sets as bit masks: numpy's min and pairwise row sum, the counts the set sizes."""
    nb = _nb()
    rng = np.random.default_rng(k)
    n = 700
    pm = _masks(rng, n, k)
    ua = rng.exponential(size=k) * 10.0 ** rng.integers(-5, 5, k)
    va = rng.exponential(size=k) * 10.0 ** rng.integers(-5, 5, k)
    ua[rng.integers(0, k)] = np.inf
    va[rng.integers(0, k)] = 0.0
    if k > 2:
        va[1] = np.inf
        ua[2] = ua[0]   # ties
    rej = _bits(pm, k)
    out, cnt = np.empty(n), np.zeros(n, np.int64)
    nb._ul_min(pm, n, ua, out, cnt)
    np.testing.assert_array_equal(out, np.where(rej, ua, np.inf).min(axis=1))
    np.testing.assert_array_equal(cnt, rej.sum(axis=1))
    out, cnt = np.empty(n), np.full(n, 3, np.int64)
    nb._dl_pw0(pm, n, va, np.empty((8, n)), out, cnt)
    np.testing.assert_array_equal(out, np.where(rej, va, 0.0).sum(axis=1))
    np.testing.assert_array_equal(cnt, 3 + rej.sum(axis=1))


@needs_numba
@pytest.mark.parametrize("k", list(range(1, 26)) + [62])
def test_optimal_mask_loads_equal_scalar_loads(k):
    """``_mask_loads`` (first device peeled, four per pass, popcount) against the scalar
    ``_loads`` of each set: the same count, load and log1p argument."""
    nb = _nb()
    rng = np.random.default_rng(100 + k)
    n = 2500   # more than one block
    pm = _masks(rng, n, k)
    ua = np.sort(rng.exponential(size=k) * 10.0 ** rng.integers(-3, 3, k))[::-1].copy()
    va = rng.exponential(size=k) * 10.0 ** rng.integers(-3, 3, k)
    if k > 3:
        ua[0], va[1], va[2] = np.inf, np.inf, 0.0
    cst = np.array([0.3, 1e-12, 0.5, 0.01])
    r, s1, s2, x1, x2 = (np.empty(n, np.int64), np.empty(n), np.empty(n), np.empty(n),
                         np.empty(n))
    nb._mask_loads(pm, n, ua, va, cst, np.empty(n), np.empty(n), np.empty(n, np.int64), r, s1,
                   s2, x1, x2)
    order = np.arange(k, dtype=np.int64)
    for p in range(0, n, 7):
        rk = np.ascontiguousarray(_bits(pm[p:p + 1], k)[0])
        rr, a, _ = nb._loads(rk, 0, order, ua, va, np.zeros(1, bool), np.empty(k))
        assert r[p] == rr
        assert s1[p] == a or (np.isnan(s1[p]) and np.isnan(a))
        xa = nb._xargs(0, rr, a, 0.0, cst)[0]
        assert x1[p] == xa or (np.isnan(x1[p]) and np.isnan(xa))


@needs_numba
def test_acceptance_runs_keep_their_transpose_for_the_setup():
    rng = np.random.default_rng(5)
    alpha = np.array([0.5, 0.8, 1.0, 0.93, 0.0])
    u = acceptance_uniforms(rng, (300, alpha.size))
    runs = greedy_fast.acceptance_runs(u, alpha)
    np.testing.assert_array_equal(runs, acceptance_runs(u, alpha))
    held = greedy_fast._runs_t(runs)
    assert held is greedy_fast._local.runs_t[1]
    assert held.dtype == np.int32 and held.flags.c_contiguous
    np.testing.assert_array_equal(held, runs.T)
    other = runs.copy()   # not the array acceptance_runs made: transposed anew
    assert greedy_fast._runs_t(other) is not held
    np.testing.assert_array_equal(greedy_fast._runs_t(other), runs.T)


@needs_numba
def test_unit_steps_detects_the_uniform_chunks_only():
    nb = _nb()
    caps = np.array([0, 3, 20, 9, 1], dtype=np.int64)
    path = draft_search.uniform_path(caps).astype(np.int64)
    for lo, hi in ((0, 9), (8, 13), (0, len(path)), (5, 6), (19, 21)):
        seg = np.ascontiguousarray(path[lo:hi])
        table, _ = nb._flip_table(seg, caps.size)
        assert nb._unit_steps(table, seg)
    jumpy = np.ascontiguousarray(path[::2])
    table, _ = nb._flip_table(jumpy, caps.size)
    assert not nb._unit_steps(table, jumpy)


@needs_numba
@pytest.mark.parametrize("mode", ["optimal", "all-ul", "all-dl", "random"])
@pytest.mark.parametrize("k", [3, 20])
def test_dense_paths_with_jumps_equal_numpy(mode, k, numpy_only):
    """Nondecreasing paths that are not unit steps (jumps, repeats, a column rising late):
    the flip steps from the table; the same G as numpy's ``path_mean``."""
    system = make_system(k, seed=11 * k, p_dl_dbm=12.0)
    policy = make_reactive_policy(mode)
    rng = np.random.default_rng(k)
    caps = np.full(k, 20)
    g_ul = system.pathloss * rng.exponential(size=k)
    g_dl = system.pathloss * rng.exponential(size=k)
    paths = [draft_search.uniform_path(caps)[::3][:9],
             np.repeat(draft_search.uniform_path(caps)[:5], 2, axis=0)]
    late = draft_search.uniform_path(caps)[:9].copy()
    late[:, 0] = np.maximum(late[:, 0] - 4, 0) * 2
    paths.append(late)
    for i, path in enumerate(paths):
        assert np.all(np.diff(path, axis=0) >= 0)
        seed = [k, i]
        obj = draft_search.make_objective(system, g_ul, g_dl, np.ones(k, bool), caps, policy,
                                          np.random.default_rng(seed), 400)
        ref = numpy_only(draft_search.make_objective, system, g_ul, g_dl, np.ones(k, bool),
                         caps, policy, np.random.default_rng(seed), 400)
        fast = greedy_fast.path_values(obj, path)
        assert fast is not None
        np.testing.assert_array_equal(fast, numpy_only(ref.path_values, path))


@needs_numba
@pytest.mark.parametrize("mode", ["optimal", "all-ul", "all-dl", "random"])
@pytest.mark.parametrize("k", [2, 9, 20])
def test_greedy_from_a_kept_path_table_equals_the_recomputed_start(mode, k, numpy_only,
                                                                   monkeypatch):
    """``budget``'s greedy starts phase 2 from the per-sample T_comm that ``path_values(...,
    keep_table=True)`` kept along the uniform path, instead of computing that point again:
    the same search (lengths, G bit for bit, evaluations, details) as without the table and as
    numpy's; a table that another path or objective overwrote is not used."""
    system = make_system(k, seed=5 * k + 1, p_dl_dbm=14.0)
    policy = make_reactive_policy(mode)
    for trial in range(6):
        rng = np.random.default_rng([k, trial])
        caps = rng.integers(0, 16, k) if trial % 2 else np.full(k, 20)
        g_ul = system.pathloss * rng.exponential(size=k)
        g_dl = system.pathloss * rng.exponential(size=k)

        def fresh():
            return draft_search.make_objective(system, g_ul, g_dl, np.ones(k, bool), caps,
                                               policy, np.random.default_rng([trial, k]), 300)

        path = draft_search.uniform_path(caps)
        kept, plain, stale = fresh(), fresh(), fresh()
        pv_kept = greedy_fast.path_values(kept, path, keep_table=True)
        assert greedy_fast._setup(kept).ws.table_of is not None
        with monkeypatch.context() as mp:   # the start point is not computed again
            for name in ("path_run", "path_loads"):
                mp.setattr(_nb(), name, None)
            got = greedy_fast.search(kept, path_values=pv_kept)
        pv_plain = greedy_fast.path_values(plain, path)
        want = greedy_fast.search(plain, path_values=pv_plain)
        pv_stale = greedy_fast.path_values(stale, path, keep_table=True)
        other = fresh()   # the same workspace, another path: the kept table is gone
        greedy_fast.path_values(other, path[: max(2, path.shape[0] // 2)], keep_table=True)
        late = greedy_fast.search(stale, path_values=pv_stale)
        ref_obj = numpy_only(fresh)
        ref = numpy_only(draft_search.greedy_search, ref_obj,
                         numpy_only(ref_obj.path_values, path))
        np.testing.assert_array_equal(pv_kept, pv_plain)
        for res in (got, late, ref):
            np.testing.assert_array_equal(res.gamma, want.gamma)
            assert res.value == want.value
            assert res.evaluations == want.evaluations
            assert res.info == want.info


@needs_numba
def test_kernels_ask_llvm_for_512_bit_vectors():
    """``_wide()`` puts the "prefer-vector-width"="512" attribute on the function compiled
    around it (LLVM's choice for AVX-512 machines is 256 otherwise); what it computes is the
    same (every equality test here runs the marked kernels)."""
    from numba import njit

    nb = _nb()

    @njit
    def double_all(a):
        nb._wide()
        for i in range(a.size):
            a[i] = 2.0 * a[i]

    a = np.arange(5.0)
    double_all(a)
    np.testing.assert_array_equal(a, 2.0 * np.arange(5.0))
    ir = next(iter(double_all.inspect_llvm().values()))
    assert '"prefer-vector-width"="512"' in ir
