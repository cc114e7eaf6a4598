"""Oracle tests for multispin_sim.model.reactive (docs/model.md sections 6 and 10).

Oracles, all independent of the module:
- the UL delay S / (b log2(1 + P g / (N0 b))) and the DL closed form
  S / (b log2(1 + P / (N0 b sum 1/g))) written here with math;
- scipy.optimize.minimize(SLSQP) on the epigraph form of the DL power problem;
- a brute-force min-max over every UL/DL assignment enumerated here;
- the module's own exhaustive_split, compared in objective value only (ties).
"""
import itertools
import math

import numpy as np
import pytest
from scipy.optimize import minimize

from multispin_sim.model import reactive as R

S_BITS = 34_816.0
B_HZ = 10e6
N0 = 10 ** (-174 / 10) * 1e-3
P_UL = 10 ** (10 / 10) * 1e-3
REL = 1e-9


# ---------------------------------------------------------------------------- test-side oracles


def o_ul_delay(bits, b, p, g, n0=N0):
    return bits / (b * math.log2(1 + p * g / (n0 * b)))


def o_dl_tau(bits, b, p_dl, gains, n0=N0):
    """Equalised DL delay of a set (equal S and b); 0 for an empty set, inf with no power."""
    if len(gains) == 0:
        return 0.0
    if p_dl <= 0:
        return math.inf
    return bits / (b * math.log2(1 + p_dl / (n0 * b * math.fsum(1.0 / g for g in gains))))


def o_dl_power(tau, bits, b, g, n0=N0):
    return n0 * b / g * (2 ** (bits / (b * tau)) - 1)


def o_brute_force(rejected, g_ul, g_dl, p_ul, p_dl, bits=S_BITS, bw=B_HZ, n0=N0):
    """min over all 2^|R| assignments of max(max UL delay, DL tau); 0 with nobody rejected."""
    idx = [k for k in range(len(rejected)) if rejected[k]]
    if not idx:
        return 0.0
    b = bw / len(idx)
    p_ul = np.broadcast_to(p_ul, (len(rejected),))
    best = math.inf
    for modes in itertools.product((0, 1), repeat=len(idx)):
        ul = [k for k, m in zip(idx, modes) if m]
        dl = [k for k, m in zip(idx, modes) if not m]
        t = max([o_ul_delay(bits, b, p_ul[k], g_ul[k], n0) for k in ul] + [o_dl_tau(bits, b, p_dl, [g_dl[k] for k in dl], n0)])
        best = min(best, t)
    return best


def random_instances(rng, k, m, reciprocal, p_rej=None):
    """M outcomes over K devices: distances U[100, 500], Rayleigh gains (M, K), random rejected sets."""
    d = rng.uniform(100, 500, size=(m, k))
    G = 1e-3 * d ** -3.5
    h_ul = rng.standard_exponential((m, k))
    h_dl = h_ul if reciprocal else rng.standard_exponential((m, k))
    p = rng.uniform(0.2, 1.0, size=(m, 1)) if p_rej is None else p_rej
    rejected = rng.random((m, k)) < p
    return rejected, G * h_ul, G * h_dl


def make_problem(rejected, g_ul, g_dl, p_dl, p_ul=P_UL):
    return R.ReactiveProblem(rejected, g_ul, g_dl, p_ul, p_dl, S_BITS, B_HZ, N0)


def seeded_problem(seed, k, m, p_dl, reciprocal=False, p_ul=P_UL):
    """``random_instances`` from ``default_rng(seed)`` and their problem:
    (rejected, g_ul, g_dl, problem)."""
    rejected, g_ul, g_dl = random_instances(np.random.default_rng(seed), k, m, reciprocal)
    return rejected, g_ul, g_dl, make_problem(rejected, g_ul, g_dl, p_dl, p_ul=p_ul)


def check_decision(problem, dec, rel=REL):
    """Feasibility and internal consistency of a decision, checked with the oracle formulas."""
    m, k = problem.shape
    rej = problem.rejected
    g_ul = np.broadcast_to(problem.g_ul, (m, k))
    g_dl = np.broadcast_to(problem.g_dl, (m, k))
    assert dec.mode.shape == dec.power_w.shape == dec.delay_s.shape == (m, k)
    assert dec.t_comm.shape == dec.bandwidth_hz.shape == (m,)
    for i in range(m):
        n = int(rej[i].sum())
        if n == 0:
            assert dec.t_comm[i] == 0.0 and dec.bandwidth_hz[i] == 0.0
            assert np.all(dec.mode[i] == R.NONE) and np.all(dec.power_w[i] == 0) and np.all(dec.delay_s[i] == 0)
            continue
        b = B_HZ / n
        assert dec.bandwidth_hz[i] == pytest.approx(b, rel=1e-15)
        assert np.all((dec.mode[i] != R.NONE) == rej[i])
        assert np.all(dec.power_w[i][~rej[i]] == 0) and np.all(dec.delay_s[i][~rej[i]] == 0)
        dl = np.flatnonzero(dec.mode[i] == R.DL)
        ul = np.flatnonzero(dec.mode[i] == R.UL)
        for kk in ul:
            assert dec.power_w[i, kk] == problem.p_ul[kk]
            assert dec.delay_s[i, kk] == pytest.approx(o_ul_delay(S_BITS, b, problem.p_ul[kk], g_ul[i, kk]), rel=rel)
        if dl.size:
            tau = o_dl_tau(S_BITS, b, problem.p_dl, g_dl[i, dl])
            np.testing.assert_allclose(dec.delay_s[i, dl], tau, rtol=rel)
            if problem.p_dl > 0:
                assert dec.power_w[i, dl].sum() == pytest.approx(problem.p_dl, rel=rel)
                # the power each DL device gets delivers S in its reported delay
                for kk in dl:
                    assert o_ul_delay(S_BITS, b, dec.power_w[i, kk], g_dl[i, kk]) == pytest.approx(dec.delay_s[i, kk], rel=rel)
        assert dec.t_comm[i] == pytest.approx(dec.delay_s[i].max(), rel=1e-15)
    np.testing.assert_array_equal(dec.n_ul + dec.n_dl, rej.sum(axis=1))


# ---------------------------------------------------------------------------- closed forms


def test_mode_codes():
    assert (R.NONE, R.UL, R.DL) == (0, 1, 2)


def test_ul_full_power_delay_formula():
    rng = np.random.default_rng(1)
    g = 1e-3 * rng.uniform(100, 500, 50) ** -3.5 * rng.standard_exponential(50)
    b = B_HZ / rng.integers(1, 21, 50)
    got = R.ul_full_power_delay(S_BITS, b, P_UL, g, N0)
    want = [o_ul_delay(S_BITS, bi, P_UL, gi) for bi, gi in zip(b, g)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_dl_common_delay_formula_and_edges():
    rng = np.random.default_rng(2)
    for _ in range(50):
        n = int(rng.integers(1, 11))
        g = 1e-3 * rng.uniform(100, 500, n) ** -3.5 * rng.standard_exponential(n)
        p_dl = 10 ** rng.uniform(-3, 1)
        b = B_HZ / n
        got = float(R.dl_common_delay(S_BITS, b, p_dl, np.sum(1 / g), N0))
        assert got == pytest.approx(o_dl_tau(S_BITS, b, p_dl, g), rel=1e-12)
    assert float(R.dl_common_delay(S_BITS, B_HZ, 1.0, 0.0, N0)) == 0.0  # empty DL set
    assert float(R.dl_common_delay(S_BITS, B_HZ, 0.0, 1e10, N0)) == math.inf  # no budget


@pytest.mark.parametrize("seed", range(5))
def test_dl_equalising_equals_closed_form_equal_s_b(seed):
    rng = np.random.default_rng(10 + seed)
    for n in (1, 2, 3, 5, 10):
        g = 1e-3 * rng.uniform(100, 500, n) ** -3.5 * rng.standard_exponential(n)
        p_dl = 10 ** rng.uniform(-3, 1)
        b = B_HZ / n
        tau, p = R.dl_delay_equalising(S_BITS, b, g, p_dl, N0)
        assert tau == pytest.approx(o_dl_tau(S_BITS, b, p_dl, g), rel=REL)
        assert p.sum() == pytest.approx(p_dl, rel=REL)
        assert np.all(p > 0)
        for pk, gk in zip(p, g):
            assert o_ul_delay(S_BITS, b, pk, gk) == pytest.approx(tau, rel=REL)


def test_dl_equalising_identical_devices():
    g = np.full(4, 3e-11)
    tau, p = R.dl_delay_equalising(S_BITS, B_HZ / 4, g, 0.1, N0)
    np.testing.assert_allclose(p, 0.025, rtol=REL)
    assert tau == pytest.approx(o_dl_tau(S_BITS, B_HZ / 4, 0.1, g), rel=REL)


def test_dl_equalising_edges():
    tau, p = R.dl_delay_equalising([], [], [], 1.0, N0)
    assert tau == 0.0 and p.size == 0
    tau, p = R.dl_delay_equalising(S_BITS, B_HZ / 2, [1e-10, 2e-11], 0.0, N0)
    assert tau == math.inf and np.all(p == 0) and p.shape == (2,)
    tau, p = R.dl_delay_equalising(S_BITS, B_HZ, 1e-10, 0.5, N0)  # one device: all the power
    assert tau == pytest.approx(o_ul_delay(S_BITS, B_HZ, 0.5, 1e-10), rel=REL)
    assert p.sum() == pytest.approx(0.5, rel=REL)


def slsqp_epigraph(bits, b, g, p_dl, n0=N0):
    """min t s.t. S_k / (b_k log2(1 + p_k g_k / (N0 b_k))) <= t, sum p <= P, p >= 0.

    Solved in scaled variables q = p / P, s = t / t0 with the constraints in the smooth
    rate form t b_k log2(1 + p_k g_k/(N0 b_k)) / S_k >= 1.
    """
    n = len(g)
    snr = p_dl * g / (n0 * b)  # SNR of device k with all of the power
    eq = bits / (b * np.log2(1 + snr / n))  # delays under the equal split: feasible
    t0 = eq.max()
    cons = [
        {"type": "ineq", "fun": lambda x: x[n] * t0 * b * np.log2(1 + snr * x[:n]) / bits - 1.0},
        {"type": "ineq", "fun": lambda x: 1.0 - np.sum(x[:n])},
    ]
    x0 = np.append(np.full(n, 1.0 / n), 1.0)
    res = minimize(lambda x: x[n], x0, method="SLSQP", constraints=cons,
                   bounds=[(0.0, 1.0)] * n + [(0.0, None)],
                   options={"ftol": 1e-14, "maxiter": 1000})
    assert res.success, res.message
    return res.x[n] * t0, res.x[:n] * p_dl


@pytest.mark.parametrize("seed", range(12))
def test_dl_equalising_equals_slsqp_unequal_s_b(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(2, 7))
    bits = rng.uniform(1e4, 1e5, n)
    b = rng.uniform(0.5e6, 5e6, n)
    g = 1e-3 * rng.uniform(100, 500, n) ** -3.5 * rng.standard_exponential(n)
    p_dl = 10 ** rng.uniform(-3, 1)
    tau, p = R.dl_delay_equalising(bits, b, g, p_dl, N0)
    t_ref, _ = slsqp_epigraph(bits, b, g, p_dl)
    assert tau == pytest.approx(t_ref, rel=1e-6)
    assert tau <= t_ref * (1 + 1e-9)  # the root is the optimum: SLSQP cannot do better
    assert p.sum() == pytest.approx(p_dl, rel=REL)
    delays = [o_ul_delay(sk, bk, pk, gk) for sk, bk, pk, gk in zip(bits, b, p, g)]
    np.testing.assert_allclose(delays, tau, rtol=REL)


# ---------------------------------------------------------------------------- optimal split


@pytest.mark.parametrize("reciprocal", [True, False])
def test_optimal_equals_exhaustive_random_instances(reciprocal):
    rng = np.random.default_rng(1000 + reciprocal)
    count = 0
    for k in range(1, 11):
        for _ in range(3):
            p_dl = 10 ** rng.uniform(-3, 1)  # 1 mW .. 10 W
            rejected, g_ul, g_dl = random_instances(rng, k, 10, reciprocal)
            prob = make_problem(rejected, g_ul, g_dl, p_dl)
            opt = R.optimal_split(prob)
            exh = R.exhaustive_split(prob)
            np.testing.assert_allclose(opt.t_comm, exh.t_comm, rtol=REL)
            check_decision(prob, opt)
            check_decision(prob, exh)
            count += rejected.shape[0]
    assert count == 300


@pytest.mark.parametrize("reciprocal", [True, False])
def test_optimal_equals_independent_brute_force(reciprocal):
    rng = np.random.default_rng(2000 + reciprocal)
    for k in range(1, 8):
        for _ in range(4):
            p_dl = 10 ** rng.uniform(-3, 1)
            rejected, g_ul, g_dl = random_instances(rng, k, 5, reciprocal)
            opt = R.optimal_split(make_problem(rejected, g_ul, g_dl, p_dl))
            for i in range(rejected.shape[0]):
                want = o_brute_force(rejected[i], g_ul[i], g_dl[i], P_UL, p_dl)
                assert opt.t_comm[i] == pytest.approx(want, rel=REL)


def test_optimal_heterogeneous_ul_budgets_brute_force():
    rng = np.random.default_rng(3000)
    for k in range(2, 8):
        p_ul = 10 ** (rng.uniform(0, 23, k) / 10) * 1e-3  # 0 .. 23 dBm per device
        for reciprocal in (True, False):
            rejected, g_ul, g_dl = random_instances(rng, k, 6, reciprocal)
            p_dl = 10 ** rng.uniform(-3, 1)
            prob = make_problem(rejected, g_ul, g_dl, p_dl, p_ul=p_ul)
            opt = R.optimal_split(prob)
            check_decision(prob, opt)
            for i in range(rejected.shape[0]):
                want = o_brute_force(rejected[i], g_ul[i], g_dl[i], p_ul, p_dl)
                assert opt.t_comm[i] == pytest.approx(want, rel=REL)


def test_prefix_split_delays_against_oracle():
    rng = np.random.default_rng(3100)
    for reciprocal in (True, False):
        rejected, g_ul, g_dl = random_instances(rng, 8, 20, reciprocal)
        p_dl = 0.05
        f, cols = R.prefix_split_delays(make_problem(rejected, g_ul, g_dl, p_dl))
        assert f.shape == (20, 9)
        for i in range(20):
            idx = np.flatnonzero(rejected[i])
            n = idx.size
            b = B_HZ / max(n, 1)
            d = {kk: o_ul_delay(S_BITS, b, P_UL, g_ul[i, kk]) for kk in idx}
            order = sorted(idx, key=lambda kk: d[kk])  # ascending UL delay
            for j in range(n + 1):
                ul, dl = order[:j], order[j:]
                want = max([d[kk] for kk in ul] + [o_dl_tau(S_BITS, b, p_dl, g_dl[i, dl])])
                assert f[i, j] == pytest.approx(want, rel=REL)
            assert np.all(np.isinf(f[i, n + 1:]))


@pytest.mark.parametrize("shared_gains", [True, False])
def test_vectorised_rows_equal_single_outcome_problems(shared_gains):
    rng = np.random.default_rng(4000 + shared_gains)
    k, m = 9, 200
    rejected, g_ul, g_dl = random_instances(rng, k, m, reciprocal=False)
    if shared_gains:  # one channel state, many outcomes (the draft-length search)
        g_ul, g_dl = g_ul[0], g_dl[0]
    p_dl = 0.02
    big = R.optimal_split(make_problem(rejected, g_ul, g_dl, p_dl))
    for i in range(m):
        gu = g_ul if shared_gains else g_ul[i]
        gd = g_dl if shared_gains else g_dl[i]
        one = R.optimal_split(make_problem(rejected[i], gu, gd, p_dl))
        assert one.t_comm.shape == (1,)
        assert big.t_comm[i] == pytest.approx(one.t_comm[0], rel=1e-12)
        np.testing.assert_array_equal(big.mode[i], one.mode[0])
        np.testing.assert_allclose(big.power_w[i], one.power_w[0], rtol=1e-12)


# ---------------------------------------------------------------------------- edge cases


def test_nobody_rejected():
    rng = np.random.default_rng(5000)
    _, g_ul, g_dl = random_instances(rng, 5, 3, reciprocal=True)
    rejected = np.zeros((3, 5), dtype=bool)
    rejected[1, 2] = True  # a mixed batch: rows 0 and 2 are empty
    prob = make_problem(rejected, g_ul, g_dl, 0.1)
    for fn in (R.optimal_split, R.all_ul, R.all_dl, R.exhaustive_split,
               lambda p: R.random_split(p, np.random.default_rng(0))):
        dec = fn(prob)
        check_decision(prob, dec)
        assert dec.t_comm[0] == 0.0 and dec.t_comm[2] == 0.0
        assert np.all(dec.mode[[0, 2]] == R.NONE)
        assert np.isfinite(dec.t_comm).all()


@pytest.mark.parametrize("reciprocal", [True, False])
def test_one_device(reciprocal):
    rng = np.random.default_rng(5100 + reciprocal)
    for _ in range(50):
        g_ul = 1e-3 * rng.uniform(100, 500) ** -3.5 * rng.standard_exponential()
        g_dl = g_ul if reciprocal else 1e-3 * rng.uniform(100, 500) ** -3.5 * rng.standard_exponential()
        p_dl = 10 ** rng.uniform(-3, 1)
        dec = R.optimal_split(make_problem([[True]], [g_ul], [g_dl], p_dl))
        want = min(o_ul_delay(S_BITS, B_HZ, P_UL, g_ul), o_ul_delay(S_BITS, B_HZ, p_dl, g_dl))
        assert dec.t_comm[0] == pytest.approx(want, rel=REL)
        assert dec.bandwidth_hz[0] == B_HZ


def test_ties_identical_gains():
    for k in (1, 2, 5, 8):
        for p_dl in (1e-3, 0.01, 0.1, 1.0, 10.0):
            g = np.full(k, 2e-11)
            rejected = np.ones((1, k), dtype=bool)
            prob = make_problem(rejected, g, g, p_dl)
            opt = R.optimal_split(prob)
            exh = R.exhaustive_split(prob)
            want = o_brute_force(rejected[0], g, g, P_UL, p_dl)
            assert opt.t_comm[0] == pytest.approx(want, rel=REL)
            assert exh.t_comm[0] == pytest.approx(want, rel=REL)
            check_decision(prob, opt)


def test_zero_dl_budget_all_ul():
    rejected, g_ul, g_dl, prob = seeded_problem(5200, 6, 30, 0.0)
    dec = R.optimal_split(prob)
    assert np.all(dec.n_dl == 0)
    assert np.all(np.isfinite(dec.t_comm))
    np.testing.assert_array_equal(dec.mode == R.UL, rejected)
    for i in range(30):
        b = B_HZ / max(rejected[i].sum(), 1)
        want = max([o_ul_delay(S_BITS, b, P_UL, g_ul[i, kk]) for kk in np.flatnonzero(rejected[i])], default=0.0)
        assert dec.t_comm[i] == pytest.approx(want, rel=REL)
    check_decision(prob, dec)
    # all-DL with no budget cannot deliver: infinite delay, zero power
    dl = R.all_dl(prob)
    some = rejected.any(axis=1)
    assert np.all(np.isinf(dl.t_comm[some])) and np.all(dl.power_w == 0)


def test_all_ul_fields():
    p_ul = np.linspace(5e-3, 2e-2, 7)
    rejected, g_ul, g_dl, prob = seeded_problem(5300, 7, 40, 0.3, p_ul=p_ul)
    dec = R.all_ul(prob)
    np.testing.assert_array_equal(dec.mode, np.where(rejected, R.UL, R.NONE))
    np.testing.assert_array_equal(dec.power_w, np.where(rejected, p_ul, 0.0))
    np.testing.assert_array_equal(dec.n_dl, 0)
    check_decision(prob, dec)


def test_all_dl_fields():
    rejected, g_ul, g_dl, prob = seeded_problem(5400, 7, 40, 0.3)
    dec = R.all_dl(prob)
    np.testing.assert_array_equal(dec.mode, np.where(rejected, R.DL, R.NONE))
    np.testing.assert_array_equal(dec.n_ul, 0)
    some = rejected.any(axis=1)
    np.testing.assert_allclose(dec.power_w.sum(axis=1)[some], 0.3, rtol=REL)
    for i in np.flatnonzero(some):
        d = dec.delay_s[i][rejected[i]]
        np.testing.assert_allclose(d, d[0], rtol=REL)
        assert dec.t_comm[i] == pytest.approx(
            o_dl_tau(S_BITS, B_HZ / rejected[i].sum(), 0.3, g_dl[i][rejected[i]]), rel=REL)
    check_decision(prob, dec)


def test_evaluate_assignment_ignores_non_rejected_in_mask():
    rejected, g_ul, g_dl, prob = seeded_problem(5500, 5, 10, 0.1, reciprocal=True)
    a = R.evaluate_assignment(prob, np.ones_like(rejected))
    b = R.all_ul(prob)
    np.testing.assert_array_equal(a.mode, b.mode)
    np.testing.assert_array_equal(a.t_comm, b.t_comm)


def test_optimal_monotone_in_budgets_and_rejected_set():
    """More DL power, more UL power, or one rejected device fewer never slows the optimum."""
    rng = np.random.default_rng(5600)
    rejected, g_ul, g_dl = random_instances(rng, 8, 100, reciprocal=False, p_rej=0.7)
    base = R.optimal_split(make_problem(rejected, g_ul, g_dl, 0.05)).t_comm
    more_dl = R.optimal_split(make_problem(rejected, g_ul, g_dl, 0.5)).t_comm
    more_ul = R.optimal_split(make_problem(rejected, g_ul, g_dl, 0.05, p_ul=4 * P_UL)).t_comm
    assert np.all(more_dl <= base * (1 + 1e-12))
    assert np.all(more_ul <= base * (1 + 1e-12))
    fewer = rejected.copy()
    for i in range(100):
        on = np.flatnonzero(fewer[i])
        if on.size:
            fewer[i, rng.choice(on)] = False
    smaller = R.optimal_split(make_problem(fewer, g_ul, g_dl, 0.05)).t_comm
    assert np.all(smaller <= base * (1 + 1e-12))
