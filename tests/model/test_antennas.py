"""The antenna array and its transmission schemes against theory and independent references.

Laws: ||h||^2 ~ Gamma(M, 1) for i.i.d. Rayleigh (MRC/MRT), the ZF stream gain / beta ~
Gamma(M - n + 1, 1) for n streams; spatial covariance R = rho^|i-j|; per-antenna AR(1)
correlation. M = 1 reductions to the paper's closed forms within rtol 1e-12; the exhaustive
split against brute force over mode vectors and DL power grids written here.
"""
import itertools
import math

import numpy as np
import pytest
from scipy import stats

from multispin_sim.model.antennas import (ArrayGains, ServerArray, exponential_correlation,
                                          vectors_of)
from multispin_sim.model.mimo import Transmission, mmse_sinr
from multispin_sim.model.mimo_batch import zf_gains_stack
from multispin_sim.model.reactive import (DL, UL, ReactiveProblem, evaluate_assignment,
                                          exhaustive_split, optimal_split)

P_MIN = 1e-3
S, B, N0, P_UL, P_DL = 12_000.0, 10e6, 4e-21, 0.01, 0.04


def _cn(rng, shape):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) / math.sqrt(2)


def _problem(transmission, rejected, a_ul, a_dl, p_ul=P_UL, p_dl=P_DL):
    class _Sys:  # the constants System.reactive_problem reads
        p_ul_w, p_dl_w, payload_bits, bandwidth_hz, n0 = p_ul, p_dl, S, B, N0
    return transmission.problem(_Sys, rejected, _gains(a_ul), _gains(a_dl))


def _gains(a):
    return ArrayGains.of(a)


def test_iid_vectors_norm_is_gamma_m():
    m = 8
    src = ServerArray(m).rounds("rayleigh", np.random.default_rng(1), 50, True, 0.0, block=64)
    h = np.concatenate([src.round_powers(0.0)[0] for _ in range(40)])
    x = np.sum(np.abs(h) ** 2, axis=1)
    assert stats.kstest(x, stats.gamma(m).cdf).pvalue > P_MIN


@pytest.mark.parametrize("rho", [0.5, 0.9])
def test_correlated_vectors_have_exponential_covariance(rho):
    m, n = 4, 20000
    src = ServerArray(m, rho).rounds("rayleigh", np.random.default_rng(2), 100, True, 0.0, 200)
    h = np.concatenate([src.round_powers(0.0)[0] for _ in range(n // 100)])
    cov = h.T @ h.conj() / len(h)
    # each entry is a mean of n products of unit-variance CN variables: sd <= 1 / sqrt(n)
    assert np.abs(cov - exponential_correlation(m, rho)).max() < 5 / math.sqrt(n)


def test_gauss_markov_applies_per_antenna():
    m, k, f_d, dt = 4, 200, 10.0, 0.01
    src = ServerArray(m).rounds("gauss-markov", np.random.default_rng(3), k, True, f_d, 16)
    h0 = src.round_powers(0.0)[0]
    h1 = src.round_powers(dt)[0]
    from scipy.special import j0
    rho = j0(2 * np.pi * f_d * dt)
    corr = np.mean(h1 * h0.conj())   # k m pairs of CN(0, 1): sd <= 1 / sqrt(k m)
    assert abs(corr.real - rho) < 5 / math.sqrt(k * m)
    assert abs(np.mean(np.abs(h1) ** 2) - 1) < 5 / math.sqrt(k * m)


def test_jakes_applies_per_antenna():
    src = ServerArray(4).rounds("jakes", np.random.default_rng(4), 500, True, 50.0, 16)
    h = src.round_powers(0.3)[0]
    assert h.shape == (500, 4)
    # independent processes per element: the mean power is 1 and elements are uncorrelated
    assert abs(np.mean(np.abs(h) ** 2) - 1) < 0.1
    assert abs(np.mean(h[:, 0] * h[:, 1].conj())) < 0.1


def test_derived_arrays_carry_no_vectors():
    g = _gains(_cn(np.random.default_rng(5), (3, 2)))
    assert vectors_of(g) is not None
    assert vectors_of(g * 2) is None and vectors_of(g[:2]) is None


def test_zf_gain_law():
    rng = np.random.default_rng(6)
    m, n = 8, 3
    x = np.concatenate([zf_gains_stack(_cn(rng, (n, m))[None])[0] for _ in range(3000)])
    assert stats.kstest(x, stats.gamma(m - n + 1).cdf).pvalue > P_MIN


def test_mmse_sinr_matches_the_interference_plus_noise_formula():
    rng = np.random.default_rng(7)
    m, n = 4, 6
    a, p, noise = _cn(rng, (n, m)), rng.uniform(0.5, 2.0, n), 0.3
    ref = []
    for k in range(n):
        others = [j for j in range(n) if j != k]
        c = noise * np.eye(m) + sum(p[j] * np.outer(a[j], a[j].conj()) for j in others)
        ref.append(p[k] * np.real(a[k].conj() @ np.linalg.solve(c, a[k])))
    np.testing.assert_allclose(mmse_sinr(a, p, noise), ref, rtol=1e-10)


def _scalar_problem(rejected, g_ul, g_dl):
    return ReactiveProblem(rejected, g_ul, g_dl, P_UL, P_DL, S, B, N0)


@pytest.mark.parametrize("seed", range(5))
def test_single_antenna_shared_schemes_reduce_to_the_paper_with_one_device_per_link(seed):
    """M = 1: ZF with one DL device and MMSE with one UL device are the paper's links."""
    rng = np.random.default_rng(seed)
    k = 6
    g = 1e-11 * rng.standard_exponential(k)
    a = np.sqrt(g)[:, None].astype(complex)
    rejected = np.zeros(k, dtype=bool)
    rejected[rng.choice(k, 2, replace=False)] = True
    t = Transmission(1, "mu-mimo-zf", "mu-mimo-mmse")
    prob = _problem(t, rejected, a, a)
    ref = _scalar_problem(rejected, g, g)
    for ul in itertools.product((False, True), repeat=2):
        mask = np.zeros(k, dtype=bool)
        mask[np.flatnonzero(rejected)] = ul
        if sum(ul) != 1:   # one per link
            continue
        got, want = evaluate_assignment(prob, mask), evaluate_assignment(ref, mask)
        np.testing.assert_allclose(got.delay_s, want.delay_s, rtol=1e-12)
        np.testing.assert_allclose(got.power_w, want.power_w, rtol=1e-12)
        np.testing.assert_array_equal(got.mode, want.mode)


@pytest.mark.parametrize("seed", range(5))
def test_orthogonal_schemes_as_an_array_problem_are_the_paper_at_m_1(seed):
    """The array problem with MRT/MRC (forced through the scheme evaluation) equals the paper's
    evaluation and optimal split at M = 1 for any sets."""
    rng = np.random.default_rng(10 + seed)
    k = 7
    g_ul, g_dl = 1e-11 * rng.standard_exponential((2, k))
    rejected = rng.random(k) < 0.7
    rejected[0] = True
    t = Transmission(1, "ofdma-mrt", "ofdma-mrc")
    t.multi_user = True   # evaluate through the schemes, not the closed forms
    prob = _problem(t, rejected, np.sqrt(g_ul)[:, None] + 0j, np.sqrt(g_dl)[:, None] + 0j)
    ref = _scalar_problem(rejected, g_ul, g_dl)
    mask = rng.random(k) < 0.5
    np.testing.assert_allclose(evaluate_assignment(prob, mask).t_comm,
                               evaluate_assignment(ref, mask).t_comm, rtol=1e-12)
    np.testing.assert_allclose(optimal_split(prob).t_comm, optimal_split(ref).t_comm,
                               rtol=1e-12)
    np.testing.assert_allclose(exhaustive_split(prob).t_comm, optimal_split(ref).t_comm,
                               rtol=1e-12)


def _brute_force(rejected, a_ul, a_dl, transmission, steps=60):
    """min over mode vectors and a grid of DL power splits (UL at full power) of the slowest
    delay, with the rates written here: ZF (one group, |D| <= M) on the pooled band |D| b, MMSE
    with the interference-plus-noise covariance on |U| b."""
    idx = np.flatnonzero(rejected)
    b = B / len(idx)
    best = (math.inf, None)
    for modes in itertools.product((UL, DL), repeat=len(idx)):
        ul = idx[np.array(modes) == UL]
        dl = idx[np.array(modes) == DL]
        t_ul = 0.0
        if len(ul):
            band = b * len(ul)
            for k in ul:
                c = N0 * band * np.eye(a_ul.shape[1]) + sum(
                    P_UL * np.outer(a_ul[j], a_ul[j].conj()) for j in ul if j != k)
                sinr = P_UL * np.real(a_ul[k].conj() @ np.linalg.solve(c, a_ul[k]))
                t_ul = max(t_ul, S / (band * math.log2(1 + sinr)))
        t_dl = 0.0
        if len(dl):
            band = b * len(dl)
            h = a_dl[dl].T                      # M x |D|
            w = h @ np.linalg.inv(h.conj().T @ h)
            w /= np.linalg.norm(w, axis=0)      # unit-norm ZF columns
            gain = np.abs(np.einsum("mk,mk->k", h.conj(), w)) ** 2
            t_dl = math.inf
            for split in itertools.product(range(1, steps), repeat=len(dl) - 1):
                if sum(split) >= steps:
                    continue
                share = np.array(split + (steps - sum(split),)) / steps
                rate = band * np.log2(1 + P_DL * share * gain / (N0 * band))
                t_dl = min(t_dl, float(np.max(S / rate)))
        t = max(t_ul, t_dl)
        if t < best[0]:
            best = (t, modes)
    return best


@pytest.mark.parametrize("seed", range(4))
def test_exhaustive_equals_brute_force_over_modes_and_power_grids(seed):
    rng = np.random.default_rng(20 + seed)
    k, m = 3, 4
    beta = 1e-11 * rng.uniform(0.2, 3.0, k)
    a = np.sqrt(beta)[:, None] * _cn(rng, (k, m))
    rejected = np.ones(k, dtype=bool)
    t = Transmission(m, "mu-mimo-zf", "mu-mimo-mmse")
    d = exhaustive_split(_problem(t, rejected, a, a))
    t_bf, modes = _brute_force(rejected, a, a, t)
    assert tuple(d.mode[0]) == modes
    # the grid's best split is at most one grid step of power from the equalised one
    assert d.t_comm[0] <= t_bf * (1 + 1e-12)
    assert t_bf <= d.t_comm[0] * 1.05


@pytest.mark.parametrize("schemes", [("mu-mimo-zf", "ofdma-mrc"), ("ofdma-mrt", "mu-mimo-mmse"),
                                     ("mu-mimo-zf", "mu-mimo-mmse")])
def test_local_search_between_prefix_and_exhaustive(schemes):
    rng = np.random.default_rng(30)
    k, m = 8, 4
    t = Transmission(m, *schemes)
    for _ in range(10):
        a = np.sqrt(1e-11 * rng.uniform(0.1, 3, k))[:, None] * _cn(rng, (k, m))
        rejected = rng.random(k) < 0.8
        rejected[0] = True
        prob = _problem(t, rejected, a, a)
        opt = exhaustive_split(prob).t_comm[0]
        pre = optimal_split(prob).t_comm[0]
        loc = prob.local_search().t_comm[0]
        assert opt <= loc * (1 + 1e-12) and loc <= pre * (1 + 1e-12)


@pytest.mark.parametrize("schemes", [("mu-mimo-zf", "mu-mimo-mmse"), ("mu-mimo-zf", "ofdma-mrc")])
def test_local_search_ends_at_a_local_optimum_of_every_outcome(schemes):
    """Many outcomes searched together (one batch of moves a pass): without a pass limit each
    ends where no single mode change and no UL/DL exchange is faster by more than 1e-12
    relative (checked move by move here), and none is slower than its prefix split."""
    rng = np.random.default_rng(31)
    k, m = 7, 2
    t = Transmission(m, *schemes)
    a = np.sqrt(1e-11 * rng.uniform(0.1, 3, k))[:, None] * _cn(rng, (k, m))
    rejected = rng.random((40, k)) < rng.uniform(0.2, 1.0, (40, 1))
    prob = _problem(t, rejected, a, a)
    loc = prob.local_search(max_passes=10 * k)
    pre = optimal_split(prob)
    assert np.all(loc.t_comm <= pre.t_comm * (1 + 1e-12))
    moved = 0
    for i in range(len(rejected)):
        ul = loc.mode[i] == UL
        idx = np.flatnonzero(rejected[i])
        moves = [[j] for j in idx] + [[u, d] for u in idx[ul[idx]] for d in idx[~ul[idx]]]
        for move in moves:
            trial = ul.copy()
            trial[move] = ~trial[move]
            assert not prob.t_comm(i, trial) < loc.t_comm[i] * (1 - 1e-12), (i, move)
        moved += not np.array_equal(ul, pre.mode[i] == UL)
    assert moved > 3   # the search left the prefix split in some outcomes


def test_zf_groups_serve_more_devices_than_antennas_in_turn():
    rng = np.random.default_rng(40)
    k, m = 5, 2
    a = np.sqrt(1e-11)[None, None] * _cn(rng, (k, m))
    t = Transmission(m, "mu-mimo-zf", "ofdma-mrc")
    rejected = np.ones(k, dtype=bool)
    d = evaluate_assignment(_problem(t, rejected, a, a), np.zeros(k, dtype=bool))
    ends = np.unique(d.delay_s[0])
    assert len(ends) == 3               # ceil(5 / 2) groups, one after another
    assert d.t_comm[0] == ends.max()


def test_memo_of_a_channel_state_changes_no_decision():
    import dataclasses
    rng = np.random.default_rng(50)
    k, m = 8, 4
    a = np.sqrt(1e-11 * rng.uniform(0.1, 3, k))[:, None] * _cn(rng, (k, m))
    t = Transmission(m, "mu-mimo-zf", "mu-mimo-mmse")
    rejected = rng.random((6, k)) < 0.7
    with_memo = _problem(t, rejected, a, a)
    assert with_memo.memo is not None
    without = dataclasses.replace(with_memo, memo=None)
    for solve in (optimal_split, exhaustive_split, lambda p: p.local_search()):
        first, again, plain = solve(with_memo), solve(with_memo), solve(without)
        for d in (again, plain):
            np.testing.assert_array_equal(first.t_comm, d.t_comm)
            np.testing.assert_array_equal(first.power_w, d.power_w)


def test_best_zf_grouping_is_no_slower_than_fewest_groups_or_one_stream_at_a_time():
    rng = np.random.default_rng(60)
    k, m = 9, 4
    rejected = np.ones(k, dtype=bool)
    fewest = Transmission(m, "mu-mimo-zf", "ofdma-mrc")
    best = Transmission(m, "mu-mimo-zf", "ofdma-mrc", zf_groups="best")
    for _ in range(20):
        a = np.sqrt(1e-11 * rng.uniform(0.1, 3, k))[:, None] * _cn(rng, (k, m))
        dl = np.zeros(k, dtype=bool)
        t_best = evaluate_assignment(_problem(best, rejected, a, a), dl).t_comm[0]
        t_fewest = evaluate_assignment(_problem(fewest, rejected, a, a), dl).t_comm[0]
        band = B   # every device on DL: the whole band
        g = np.sum(np.abs(a) ** 2, axis=1)
        t_tdma = np.sum(S / (band * np.log2(1 + P_DL * g / (N0 * band))))
        assert t_best <= t_fewest * (1 + 1e-12)
        assert t_best <= t_tdma * (1 + 1e-12)


@pytest.mark.parametrize("fading", ["rayleigh", "gauss-markov"])
def test_vector_draws_do_not_depend_on_the_block_size(fading):
    def seq(block):
        src = ServerArray(3, 0.5).rounds(fading, np.random.default_rng(70), 4, False, 10.0, block)
        return np.array([np.concatenate(src.round_powers(0.01 * i)) for i in range(40)])
    np.testing.assert_array_equal(seq(1), seq(16))
    np.testing.assert_array_equal(seq(7), seq(64))


def _symbol_sinr(rx, s, k):
    """SINR of symbol stream k estimated from received samples rx (T,) and the sent symbols
    s (T, n): |c|^2 / E|rx - c s_k|^2 with c = E[rx s_k*] (the rest is independent of s_k)."""
    c = np.mean(rx * s[:, k].conj())
    return abs(c) ** 2 / np.mean(np.abs(rx - c * s[:, k]) ** 2)


@pytest.mark.parametrize("m, n", [(4, 3), (4, 4), (8, 5), (2, 2)])
def test_imperfect_csi_streams_have_the_sinr_of_their_symbols(m, n):
    """Streams planned on estimated vectors and met by the true ones (``realise``), against a
    symbol-level simulation that knows nothing of the formulas: 200,000 unit Gaussian
    symbols per stream through y_k = a_k^H sum_j sqrt(p_j) w_j s_j + noise (DL, ZF columns of
    the estimates) and y = sum_j a_j sqrt(p_j) s_j + noise, s_k ~ w_k^H y (UL, MMSE filters of
    the estimates). From T samples (all Gaussian) c has relative error sqrt(1 / (x T)) at SINR
    x, so |c|^2 twice that, and the residual's mean power sqrt(1 / T): 5 standard errors of
    the two together (0.6% at SINR 10)."""
    rng = np.random.default_rng(m * 10 + n)
    scale = np.sqrt(1e-11 * rng.uniform(0.3, 3.0, n))[:, None]
    est = scale * _cn(rng, (n, m))
    a = est + scale * math.sqrt(0.05) * _cn(rng, (n, m))    # h = h_hat + e, s2 = 0.05
    b = B / n
    tr = Transmission(m, "mu-mimo-zf", "mu-mimo-mmse")
    t = 200_000
    s = _cn(rng, (t, n))
    for code, scheme in ((DL, tr.dl), (UL, tr.ul)):
        p = np.full(n, P_UL)
        planned, powers = scheme.serve(est, P_DL, S, b, N0)[:2] if code == DL else (
            scheme.serve(est, p, S, b, N0)[0], p)
        delays, on_air, sinr = scheme.realise(a, est, planned, powers, S, b, N0)
        noise = N0 * b * n
        z = math.sqrt(noise) * _cn(rng, (t, m))
        if code == DL:
            w = np.linalg.pinv(est.conj())                    # (M, n): a_hat_k^H w_j = delta
            w = w / np.linalg.norm(w, axis=0)
            x = (s * np.sqrt(powers)) @ w.T                   # (T, M) sent
            got = [_symbol_sinr(x @ a[k].conj() + z[:, 0], s, k) for k in range(n)]
        else:
            y = (s * np.sqrt(powers)) @ a + z                 # (T, M) received
            cov = noise * np.eye(m) + (est.T * powers) @ est.conj()
            w = np.linalg.solve(cov, est.T)
            got = [_symbol_sinr(y @ w[:, k].conj(), s, k) for k in range(n)]
        got = np.array(got)
        tol = 5 * np.sqrt((4 / sinr + 1) / t)
        assert np.all(np.abs(got / sinr - 1) < tol), (code, got, sinr)
        # and the delays are Shannon's at those SINRs on the pooled band
        np.testing.assert_allclose(on_air * np.log2(1 + sinr), S / (b * n), rtol=1e-12)
        assert np.all(sinr < P_DL * 1e12 if code == DL else sinr > 0)


@pytest.mark.parametrize("power", ["full", "descent"])
def test_realised_with_exact_estimates_is_the_plan(power):
    """est = a: the schemes' ``realise`` gives back what ``links`` planned (delays, the ZF
    groups' turns, SINRs) within rtol 1e-12."""
    rng = np.random.default_rng(3)
    for m, k, groups in [(4, 9, "fewest"), (4, 9, "best"), (2, 5, "best"), (8, 6, "fewest")]:
        a = np.sqrt(1e-11 * rng.uniform(0.05, 5, k))[:, None] * _cn(rng, (k, m))
        tr = Transmission(m, "mu-mimo-zf", "mu-mimo-mmse", zf_groups=groups, ul_power=power)
        mode = np.where(rng.random(k) < 0.5, UL, DL).astype(np.int8)
        b = B / k
        delay, power_w, gain, band = tr.links(a, a, np.flatnonzero(mode == UL),
                                              np.flatnonzero(mode == DL), np.full(k, P_UL),
                                              P_DL, S, b, N0)
        d, air, sinr = tr.realise(a, a, a, a, mode, delay, power_w, S, b, N0)
        np.testing.assert_allclose(d, delay, rtol=1e-12)
        dl = mode == DL
        np.testing.assert_allclose(air[dl], tr.dl.on_air(delay[dl]), rtol=1e-12)
        np.testing.assert_allclose(sinr, power_w * gain / (N0 * band), rtol=1e-12)


def test_realise_of_a_stack_of_channels_is_each_channel_alone():
    """``realise`` and ``realised_t_comm`` over a stack (N, K, M) of true channels: each
    sample's results as if it were given alone (rtol 1e-12); an orthogonal link's stream
    alone on its subband at the gain |a_hat^H a|^2 / ||a_hat||^2 of its estimate's beam
    (written here); with exact estimates, T_comm is the plan's."""
    rng = np.random.default_rng(8)
    m, k, n = 4, 9, 5
    scale = np.sqrt(1e-11 * rng.uniform(0.1, 3, k))[:, None]
    est = scale * _cn(rng, (k, m))
    stack = est + 0.4 * scale * _cn(rng, (n, k, m))
    b = B / k
    for dl, ul in [("mu-mimo-zf", "mu-mimo-mmse"), ("ofdma-mrt", "mu-mimo-mmse"),
                   ("mu-mimo-zf", "ofdma-mrc")]:
        tr = Transmission(m, dl, ul)
        mode = np.where(rng.random(k) < 0.5, UL, DL).astype(np.int8)
        delay, power, _, _ = tr.links(est, est, np.flatnonzero(mode == UL),
                                      np.flatnonzero(mode == DL), np.full(k, P_UL), P_DL, S,
                                      b, N0)
        got = tr.realise(stack, stack, est, est, mode, delay, power, S, b, N0)
        t = tr.realised_t_comm(stack, stack, est, est, mode, delay, power, S, b, N0)
        for s in range(n):
            one = tr.realise(stack[s], stack[s], est, est, mode, delay, power, S, b, N0)
            np.testing.assert_allclose(got[:, s], one, rtol=1e-12)
            alone = np.nan_to_num(one[0], nan=0.0)
            for code, scheme in ((UL, tr.ul), (DL, tr.dl)):
                for d in np.flatnonzero(mode == code) if not scheme.shared else ():
                    g = abs(np.vdot(est[d], stack[s, d])) ** 2 / np.vdot(est[d], est[d]).real
                    alone[d] = S / (b * np.log2(1 + power[d] * g / (N0 * b)))
            assert t[s] == pytest.approx(alone.max(), rel=1e-12)
        exact = tr.realised_t_comm(est, est, est, est, mode, delay, power, S, b, N0)
        assert exact == pytest.approx(delay.max(), rel=1e-12)
