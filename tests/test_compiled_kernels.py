"""The compiled pieces of the draft search give numpy's values bit for bit.

Each compiled piece is compared with the numpy code it replaces, with numba switched off for the
reference (``greedy_fast._kernels = False``): the T_comm kernel on arbitrary rejected rows (every
closed form, edge cases: nobody rejected, zero and infinite gains, no DL power), the acceptance
runs (alpha = 1, U = 1), skipping the unread coin table (the controller stream ends in the same
state), and whole decisions (greedy, uniform, budget) for several K, including K > 62 where the
bit-mask loads step aside.
"""
import numpy as np
import pytest

from multispin_sim.model.goodput import RUN_CAP, TcommKernel, acceptance_runs
from multispin_sim.model.pathloss import pathloss_gain
from multispin_sim.model.speculative import acceptance_uniforms
from multispin_sim.model.system import System
from multispin_sim.policies import draft_search, greedy_fast, make_reactive_policy

N0 = 10 ** (-174 / 10) * 1e-3
MODES = ("optimal", "all-ul", "all-dl", "random", "exhaustive")

needs_numba = pytest.mark.skipif(not greedy_fast.available(),
                                 reason="numba not installed or MULTISPIN_NUMBA=0")


def make_system(k, seed=0, p_dl_dbm=16.0, alpha=None):
    rng = np.random.default_rng(seed)
    d = rng.uniform(100, 500, k)
    return System(
        alpha=(np.asarray(alpha, float) if alpha is not None
               else rng.choice([0.93, 0.91, 0.86, 0.8], k)),
        draft_latency_s=15.2e-3 * rng.uniform(1.0, 1.15, k), p_ul_w=np.full(k, 0.01),
        pathloss=pathloss_gain(d),
        p_dl_w=10 ** (p_dl_dbm / 10) * 1e-3 if p_dl_dbm is not None else 0.0,
        payload_bits=34_816.0, bandwidth_hz=10e6, n0=N0, verify_fixed_s=42.8e-3,
        verify_per_device_s=7.6e-3)


@pytest.fixture
def numpy_only(monkeypatch):
    """Run a callable with the compiled path switched off (the reference)."""
    real = greedy_fast._load()

    def run(fn, *args, **kwargs):
        monkeypatch.setattr(greedy_fast, "_kernels", False)
        try:
            return fn(*args, **kwargs)
        finally:
            monkeypatch.setattr(greedy_fast, "_kernels", real)
    return run


@needs_numba
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", [1, 7, 20, 70])
def test_kernel_on_any_rows_equals_numpy(mode, k, numpy_only):
    rng = np.random.default_rng(k)
    for case in range(6):
        system = make_system(k, seed=case, p_dl_dbm=None if case == 5 else 16.0)
        g_ul = system.pathloss * rng.exponential(size=k)
        g_dl = system.pathloss * rng.exponential(size=k)
        if case == 3:   # a zero and an infinite gain, a device on the other's gain
            g_ul[0], g_dl[-1] = 0.0, np.inf
        if case == 4:
            g_dl = g_ul
        m = 300
        coin = rng.random((m, k)) < 0.5
        kern = TcommKernel(system, g_ul, g_dl, mode, coin=coin)
        rej = rng.random((m, k)) < rng.uniform(0.05, 0.95)
        rej[0] = False                 # nobody rejected
        rej[1] = True                  # everybody
        rows = rng.permutation(m)
        fast = kern(rej, rows)
        assert greedy_fast.kernel_times(kern, rej, rows) is not None
        ref = numpy_only(kern, rej, rows)
        np.testing.assert_array_equal(fast, ref)
        assert fast[0] == 0.0
        # a fresh kernel (no cached arrays) and one row
        kern2 = TcommKernel(system, g_ul, g_dl, mode, coin=coin)
        np.testing.assert_array_equal(kern2(rej[5], rows[5:6]),
                                      numpy_only(kern2, rej[5], rows[5:6]))


@needs_numba
def test_kernel_per_sample_gains_and_subclasses_stay_numpy():
    system = make_system(4)
    g = system.pathloss * np.random.default_rng(0).exponential(size=(10, 4))
    kern = TcommKernel(system, g, g, "optimal")
    assert greedy_fast.kernel_times(kern, np.ones((10, 4), bool), np.arange(10)) is None

    class Other(TcommKernel):
        pass

    other = Other(system, system.pathloss, system.pathloss, "optimal")
    assert greedy_fast.kernel_times(other, np.ones((2, 4), bool), np.arange(2)) is None


@needs_numba
@pytest.mark.parametrize("cols", [slice(0, 8), slice(2, 7), slice(None)])
def test_acceptance_runs_compiled_equal_numpy(cols):
    """Rows shorter than 8 (one pass) and of 8 or more (branch-free rows, then transposed)."""
    rng = np.random.default_rng(3)
    alpha = np.array([0.5, 0.8, 0.93, 0.999999, 1.0, 1.5, 1e-300, 0.0])
    alpha = (alpha if cols.stop else np.tile(alpha, 3))[cols]
    u = acceptance_uniforms(rng, (4000, alpha.size))
    u[0] = 1.0
    u[1] = np.nextafter(0.0, 1.0)
    u[2] = 1e-300
    fast = greedy_fast.acceptance_runs(u, alpha)
    ref = acceptance_runs(u, alpha)
    assert fast.dtype == ref.dtype == np.int32
    np.testing.assert_array_equal(fast, ref)
    np.testing.assert_array_equal(greedy_fast._runs_t(fast), ref.T)
    assert (fast[:, alpha >= 1] == RUN_CAP).all()


def test_skipped_coin_table_leaves_the_stream_where_drawing_does():
    # PCG64: advanced instead of drawn
    for n in (1, 7, 20_000):
        a, b = np.random.default_rng(9), np.random.default_rng(9)
        a.random(3), b.random(3)
        draft_search._skip_uniforms(a, n)
        b.random(n)
        assert a.bit_generator.state == b.bit_generator.state
    # a buffered 32-bit half (which advancing would drop) or another generator: drawn
    a, b = np.random.default_rng(9), np.random.default_rng(9)
    a.integers(10, dtype=np.int32), b.integers(10, dtype=np.int32)
    assert a.bit_generator.state["has_uint32"]
    draft_search._skip_uniforms(a, 100)
    b.random(100)
    assert a.bit_generator.state == b.bit_generator.state
    assert a.integers(2**31, dtype=np.int32) == b.integers(2**31, dtype=np.int32)
    a, b = np.random.Generator(np.random.MT19937(4)), np.random.Generator(np.random.MT19937(4))
    draft_search._skip_uniforms(a, 50)
    b.random(50)
    assert a.random() == b.random()


class _Unknown:
    """A stream that is not a numpy Generator: every uniform is drawn."""

    def __init__(self, rng):
        self.rng = rng

    def random(self, size=None):
        return self.rng.random(size)

    def integers(self, *args, **kwargs):
        return self.rng.integers(*args, **kwargs)


@pytest.mark.parametrize("mode", ["optimal", "all-ul", "all-dl", "exhaustive"])
def test_objective_without_coin_draws_the_same_samples(mode, numpy_only):
    """A coin-free kernel skips the coin table: same runs, same seed, same stream state after,
    as the random split's objective (which draws it) and as the numpy reference."""
    system = make_system(6, seed=2)
    g = system.pathloss
    args = (system, g, g, np.ones(6, bool), np.full(6, 20))
    r1, r2, r3 = (np.random.default_rng(5) for _ in range(3))
    a = draft_search.make_objective(*args, mode, r1, 500)
    b = draft_search.make_objective(*args, "random", r2, 500)
    c = numpy_only(draft_search.make_objective, *args, mode, r3, 500)
    assert a.tcomm.kernel.coin is None and b.tcomm.kernel.coin is not None
    d = draft_search.make_objective(*args, mode, _Unknown(np.random.default_rng(5)), 500)
    np.testing.assert_array_equal(a.tcomm.runs, d.tcomm.runs)
    np.testing.assert_array_equal(a.tcomm.runs, b.tcomm.runs)
    np.testing.assert_array_equal(a.tcomm.runs, c.tcomm.runs)
    assert r1.bit_generator.state == r2.bit_generator.state == r3.bit_generator.state


@needs_numba
@pytest.mark.parametrize("mode,k,rounds", [("optimal", 20, 120), ("optimal", 70, 10),
                                           ("optimal", 2, 40), ("all-dl", 9, 30),
                                           ("random", 12, 30), ("exhaustive", 5, 20),
                                           ("all-ul", 20, 60), ("all-dl", 20, 60),
                                           ("random", 20, 60), ("all-ul", 3, 30),
                                           ("all-dl", 7, 30), ("all-dl", 8, 30),
                                           ("random", 16, 30), ("all-ul", 62, 6),
                                           ("all-dl", 62, 6), ("random", 62, 6),
                                           ("all-dl", 63, 4), ("random", 70, 4)])
def test_decisions_equal_numpy_reference(mode, k, rounds, numpy_only):
    """Greedy, uniform and budget with every compiled piece against the numpy code alone: the
    same lengths, G, evaluation counts and details, and the same stream state after."""
    system = make_system(k, seed=k, p_dl_dbm=10.0 + k % 20)
    policy = make_reactive_policy(mode)
    rng = np.random.default_rng(100 + k)
    searches = [draft_search.greedy_search, draft_search.uniform_search]
    for r, g_ul, g_dl, active, caps in random_rounds(system, rng, rounds):
        run = searches + ([draft_search.budget_search] if r % 5 == 0 else [])
        for search in run:
            assert_same_decision(search, (system, g_ul, g_dl, active, caps, policy), [k, r],
                                 800, numpy_only, (search.__name__, r))


def random_rounds(system, rng, rounds):
    """(r, g_ul, g_dl, active, caps) of ``rounds`` random rounds: fading gains, reciprocal
    every other round, every fourth round with devices left out and random caps."""
    k = system.k
    for r in range(rounds):
        g_ul = system.pathloss * rng.exponential(size=k)
        g_dl = g_ul if r % 2 else system.pathloss * rng.exponential(size=k)
        active, caps = np.ones(k, bool), np.full(k, 20)
        if r % 4 == 3:
            active = rng.random(k) < 0.7
            caps = rng.integers(0, 21, k)
        yield r, g_ul, g_dl, active, caps


def assert_same_decision(search, args, seed, samples, numpy_only, where):
    """``search`` on the objective of ``args`` (make_objective's first six) drawn from a stream
    seeded ``seed``, compiled and with numpy alone: the same lengths, G, evaluation counts and
    details, and the same stream state after."""
    out = []
    for compiled in (True, False):
        stream = np.random.default_rng(seed)

        def decide():
            obj = draft_search.make_objective(*args, stream, samples)
            return search(obj), stream.bit_generator.state

        out.append(decide() if compiled else numpy_only(decide))
    (fast, s1), (ref, s2) = out
    assert np.array_equal(fast.gamma, ref.gamma), where
    assert fast.value == ref.value, where
    assert fast.evaluations == ref.evaluations, where
    assert repr(fast.info) == repr(ref.info), where
    assert s1 == s2, where


@needs_numba
@pytest.mark.parametrize("m", [1, 5, 8, 9, 100, 128, 129, 300, 1000, 4097, 8192])
def test_sparse_pairwise_sum_equals_numpy_sum(m):
    """The +1 cache's column sums over its nonzero terms only: numpy's pairwise sum bit for
    bit (the terms are nonnegative or negative, never -0.0)."""
    from multispin_sim.policies import _greedy_numba as nb

    lof, linfo, plan = nb.pairwise_plan(m)
    lacc, stk = np.empty((linfo.shape[1], 9)), np.empty(plan.size + 1)
    rng = np.random.default_rng(m)
    for density in (0.0, 0.01, 0.05, 0.3, 1.0):
        for _ in range(5):
            a = np.zeros(m)
            nz = rng.random(m) < density
            a[nz] = rng.standard_normal(nz.sum()) * 10.0 ** rng.integers(-8, 8, nz.sum())
            pos = np.flatnonzero(nz).astype(np.int64)
            got = nb._sparse_pw(a, pos, pos.size, lof, linfo, plan, lacc, stk)
            assert got == a.sum() == nb._pw(a, 0, m, 1)
            # a superset of the nonzero positions (zeros listed too) gives the same sum
            more = np.union1d(pos, rng.choice(m, min(m, 7), replace=False)).astype(np.int64)
            assert nb._sparse_pw(a, more, more.size, lof, linfo, plan, lacc, stk) == a.sum()


@needs_numba
@pytest.mark.parametrize("k", [3, 20])
def test_move_means_equal_numpy(k, numpy_only):
    """Single-device moves (+1, -1, to 0, long moves, screened on the first samples) from many
    states: the compiled sums equal numpy's bincount of the kernel's deltas."""
    rng = np.random.default_rng(k)
    system = make_system(k, seed=4)
    for case in range(15):
        g_ul = system.pathloss * rng.exponential(size=k)
        obj = draft_search.make_objective(system, g_ul, g_ul, np.ones(k, bool), np.full(k, 20),
                                          "optimal", np.random.default_rng(case), 700)
        tc = obj.tcomm
        tc.reset(rng.integers(0, 12, k))
        dev = rng.integers(0, k, 2 * k)
        new = rng.integers(0, 21, 2 * k)
        for samples in (None, 256, 700, 5000):
            fast = tc.move_means(dev, new, samples)
            screen = None if samples in (700, 5000) else samples
            assert greedy_fast.move_means(tc, dev, new, screen) is not None
            ref = numpy_only(tc.move_means, dev, new, samples)
            np.testing.assert_array_equal(fast, ref)
        np.testing.assert_array_equal(tc.move_means(dev[:1], 0),
                                      numpy_only(tc.move_means, dev[:1], 0))


@needs_numba
@pytest.mark.parametrize("mode", ["optimal", "all-ul", "all-dl", "random"])
@pytest.mark.parametrize("k", [2, 3, 8, 20, 64, 130])
def test_dense_paths_equal_sparse_paths_and_numpy(mode, k, numpy_only, monkeypatch):
    """Phase 1's dense path (every point of every sample, each split) against the event path
    (``path_loads``) and the numpy ``path_mean``: the same G along the uniform path, chunk by
    chunk as the lazy phase 1 evaluates it (a later chunk from a known start), the same
    per-sample T_comm table, on random gains, activity, caps and edge gains (zero, infinite)."""
    system = make_system(k, seed=3 * k, p_dl_dbm=10.0 + k % 20)
    policy = make_reactive_policy(mode)
    rng = np.random.default_rng(7 + k)
    for r in range(12 if k > 60 else 30):
        g_ul = system.pathloss * rng.exponential(size=k)
        g_dl = g_ul if r % 2 else system.pathloss * rng.exponential(size=k)
        if r % 7 == 5:
            g_ul, g_dl = g_ul.copy(), g_dl.copy()
            g_ul[0], g_dl[-1] = 0.0, np.inf
        active, caps = np.ones(k, bool), np.full(k, 20)
        if r % 4 == 3:
            active = rng.random(k) < 0.7
            caps = rng.integers(0, 21, k)
        seed = [k, r, 1]
        objs = [draft_search.make_objective(system, g_ul, g_dl, active, caps, policy,
                                            np.random.default_rng(seed), 300) for _ in range(2)]
        ref = numpy_only(draft_search.make_objective, system, g_ul, g_dl, active, caps, policy,
                         np.random.default_rng(seed), 300)
        path = draft_search.uniform_path(objs[0].caps)
        chunks = [(path[:9], None)] + ([(path[8:14], 8)] if len(path) > 9 else [])
        out = []
        for obj, dense in zip(objs, (32, 0)):   # dense, then events only
            monkeypatch.setattr(greedy_fast, "_DENSE", dense)
            su = greedy_fast._setup(obj)
            vals, tables = [], []
            for seg, first in chunks:
                start = None if first is None else tables[0][first].copy()
                vals.append(greedy_fast._path_values(obj, su, seg, start, table=True))
                tables.append(su.ws.table[:len(seg)].copy())
            out.append((vals, tables, obj.evaluations))
        monkeypatch.undo()
        ref_vals = [numpy_only(ref.path_values, seg) for seg, _ in chunks]
        for (vals, tables, ev) in out:
            for v, w in zip(vals, ref_vals):
                assert np.array_equal(v, w), (mode, k, r)
            for t, u in zip(tables, out[1][1]):
                assert np.array_equal(t, u), (mode, k, r)
            assert ev == ref.evaluations
        last = chunks[-1][0][-1]
        np.testing.assert_array_equal(out[0][1][-1][-1], ref.tcomm.per_sample(last))


@needs_numba
@pytest.mark.parametrize("mode", ["optimal", "all-ul", "all-dl", "random"])
@pytest.mark.parametrize("k,rounds", [(2, 150), (3, 150), (20, 60), (64, 12)])
def test_greedy_decisions_equal_numpy_over_many_rounds(mode, k, rounds, numpy_only):
    """The whole compiled greedy (objective, dense phase 1, phase 2) against the numpy code
    alone over many rounds: the same lengths, G, evaluation counts, details and stream state."""
    system = make_system(k, seed=5 + k, p_dl_dbm=8.0 + k % 20)
    policy = make_reactive_policy(mode)
    rng = np.random.default_rng(11 + k)
    for r, g_ul, g_dl, active, caps in random_rounds(system, rng, rounds):
        assert_same_decision(draft_search.greedy_search,
                             (system, g_ul, g_dl, active, caps, policy), [k, r, 2], 500,
                             numpy_only, r)


@needs_numba
@pytest.mark.parametrize("mode,k", [("optimal", 20), ("optimal", 2), ("random", 9),
                                    ("all-dl", 12), ("all-ul", 5), ("optimal", 62)])
def test_budget_scans_equal_numpy_paths(mode, k, numpy_only):
    """The compiled budget scans (a chain of exclusions, in any order, and back) give the path
    of ``budget_path``, numpy's G along it and the kernel's per-sample T_comm at its points."""
    rng = np.random.default_rng(k)
    system = make_system(k, seed=k, p_dl_dbm=8.0 + k % 13)
    for case in range(6):
        g_ul = system.pathloss * rng.exponential(size=k)
        caps = np.full(k, 20) if case % 2 else rng.integers(0, 21, k)
        obj = draft_search.make_objective(system, g_ul, g_ul, np.ones(k, bool), caps, mode,
                                          np.random.default_rng([k, case]), 500)
        ref_obj = numpy_only(draft_search.make_objective, system, g_ul, g_ul, np.ones(k, bool),
                             caps, mode, np.random.default_rng([k, case]), 500)
        include = obj.caps > 0
        scans = greedy_fast.budget_scans(obj)
        assert scans is not None
        for step in range(8):
            bpath, values = scans.scan(include)
            ref_path = draft_search.budget_path(obj.caps, obj.draft_s, include)
            np.testing.assert_array_equal(bpath, ref_path)
            assert bpath.dtype == ref_path.dtype
            ev = ref_obj.evaluations
            np.testing.assert_array_equal(values, numpy_only(ref_obj.path_values, ref_path))
            assert obj.evaluations == ref_obj.evaluations and ref_obj.evaluations > ev
            for ref in {0, bpath.shape[0] // 3, bpath.shape[0] - 1}:
                np.testing.assert_array_equal(scans.times(ref), numpy_only(
                    ref_obj.tcomm.per_sample, bpath[ref]))
            flip = rng.integers(0, k, 1 + step % 3)
            include = include.copy()
            include[flip] = ~include[flip]


@needs_numba
@pytest.mark.parametrize("mode,k,p_dl_dbm,rounds", [
    ("optimal", 20, 10.0, 60), ("optimal", 20, 16.0, 40), ("optimal", 20, 25.0, 40),
    ("optimal", 2, 16.0, 60), ("optimal", 3, 10.0, 60), ("optimal", 3, 25.0, 40),
    ("random", 20, 16.0, 15), ("all-dl", 3, 16.0, 30), ("all-ul", 20, 16.0, 15),
    ("exhaustive", 7, 13.0, 20)])
def test_budget_decisions_equal_numpy_reference(mode, k, p_dl_dbm, rounds, numpy_only):
    """budget with its compiled scans and moves against the numpy code alone, DL/UL power
    ratios from 1 to 30 (P_ul = 10 dBm): the same lengths, G, evaluation counts and details,
    and the same stream state after; full and partial rounds."""
    system = make_system(k, seed=3 * k + 1, p_dl_dbm=p_dl_dbm)
    policy = make_reactive_policy(mode)
    rng = np.random.default_rng(int(p_dl_dbm) + k)
    for r, g_ul, g_dl, active, caps in random_rounds(system, rng, rounds):
        assert_same_decision(draft_search.budget_search,
                             (system, g_ul, g_dl, active, caps, policy), [k, r, 7], 1000,
                             numpy_only, r)


@needs_numba
@pytest.mark.parametrize("mode,k,rounds", [("optimal", 20, 30), ("optimal", 3, 40),
                                           ("all-ul", 8, 20), ("all-dl", 20, 20),
                                           ("random", 12, 20), ("optimal", 70, 3)])
def test_decisions_with_logs_from_python_equal_numpy_reference(mode, k, rounds, numpy_only,
                                                               monkeypatch):
    """With numpy's log1p called from Python between the kernels (what runs where
    ``_numpy_logs.pointer`` finds no numpy log1p to call from a kernel) the decisions are the
    numpy code's too: greedy, uniform and budget."""
    monkeypatch.setattr(greedy_fast, "fused_logs", False)
    system = make_system(k, seed=2 * k, p_dl_dbm=9.0 + k % 17)
    policy = make_reactive_policy(mode)
    rng = np.random.default_rng(200 + k)
    searches = (draft_search.greedy_search, draft_search.uniform_search,
                draft_search.budget_search)
    for r, g_ul, g_dl, active, caps in random_rounds(system, rng, rounds):
        for search in searches[:3 if r % 3 == 0 else 2]:
            assert_same_decision(search, (system, g_ul, g_dl, active, caps, policy), [k, r, 3],
                                 600, numpy_only, (search.__name__, r))
