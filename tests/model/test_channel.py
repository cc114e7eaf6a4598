"""Oracle tests for the channel part of the model core (docs/model.md sections 5 and 10):
units, pathloss, fading, rates, payload.

References are closed forms computed here (scipy.special.exp1, the Rayleigh delay CDF,
hand arithmetic for dB / path loss / payload), with fixed seeds and p-value / CI thresholds.
"""
import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from multispin_sim.model import fading, pathloss, payload, rates, units

P_MIN = 1e-3
Z = 4.5
LOG2E = 1.0 / math.log(2.0)

S_BITS = 34_816
B_HZ = 10e6
N0 = 10 ** (-174 / 10) * 1e-3  # W/Hz, computed here from -174 dBm/Hz
P_UL = 10 ** (10 / 10) * 1e-3  # 10 dBm


# ---------------------------------------------------------------------------- units


def test_dbm_conversions():
    assert float(units.dbm_to_watt(10.0)) == pytest.approx(0.01, rel=1e-12)
    assert float(units.dbm_to_watt(0.0)) == pytest.approx(1e-3, rel=1e-12)
    assert float(units.dbm_to_watt(30.0)) == pytest.approx(1.0, rel=1e-12)
    assert float(units.dbm_to_watt(40.0)) == pytest.approx(10.0, rel=1e-12)
    x = np.linspace(-50, 50, 101)
    np.testing.assert_allclose(units.linear_to_db(1e3 * units.dbm_to_watt(x)), x, atol=1e-10)


def test_db_linear_conversions():
    assert float(units.db_to_linear(0.0)) == 1.0
    assert float(units.db_to_linear(-30.0)) == pytest.approx(1e-3, rel=1e-12)
    assert float(units.db_to_linear(3.0)) == pytest.approx(1.9952623149688795, rel=1e-12)
    assert float(units.linear_to_db(100.0)) == pytest.approx(20.0, abs=1e-12)
    x = np.logspace(-12, 3, 50)
    np.testing.assert_allclose(units.db_to_linear(units.linear_to_db(x)), x, rtol=1e-12)
    with np.errstate(all="raise"):
        assert units.linear_to_db(0.0) == -np.inf


def test_noise_psd():
    n0 = rates.noise_psd_watt_per_hz(-174.0)
    assert n0 == pytest.approx(3.981071705534972e-21, rel=1e-12)
    assert rates.noise_psd_watt_per_hz() == pytest.approx(N0, rel=1e-12)
    # noise power over 10 MHz is -174 + 70 = -104 dBm
    assert float(units.linear_to_db(1e3 * n0 * B_HZ)) == pytest.approx(-104.0, abs=1e-9)


# ---------------------------------------------------------------------------- path loss


def test_pathloss_at_100m_is_minus_100_db():
    g = pathloss.pathloss_gain(100.0)
    assert float(units.linear_to_db(g)) == pytest.approx(-30.0 - 35.0 * 2.0, abs=1e-9)
    assert float(g) == pytest.approx(1e-10, rel=1e-12)


def test_pathloss_formula():
    d = np.array([1.0, 100.0, 250.0, 500.0])
    want_db = -30.0 - 35.0 * np.log10(d)
    np.testing.assert_allclose(units.linear_to_db(pathloss.pathloss_gain(d)), want_db, atol=1e-9)
    # other parameters: G0 = -20 dB, eta = 2 at 10 m: -20 - 20 = -40 dB
    assert float(pathloss.pathloss_gain(10.0, ref_gain_db=-20.0, exponent=2)) == pytest.approx(1e-4, rel=1e-12)
    assert np.all(np.diff(pathloss.pathloss_gain(np.linspace(100, 500, 50))) < 0)


# ---------------------------------------------------------------------------- payload


def test_payload_defaults():
    assert payload.payload_bits() == 34_816
    assert payload.payload_bits() == 1024 * (math.ceil(math.log2(151_665)) + 16)
    assert payload.payload_bits("dense", 152_064) == 2_433_024
    assert payload.payload_bits(payload.DENSE, 152_064, 16) == 152_064 * 16


@pytest.mark.parametrize("vocab, index_bits", [(2, 1), (65_536, 16), (65_537, 17), (131_072, 17), (131_073, 18)])
def test_payload_index_bits(vocab, index_bits):
    assert payload.payload_bits(100, vocab, 8) == 100 * (index_bits + 8)


# ---------------------------------------------------------------------------- rates


def test_shannon_rate_values():
    b = 1e6
    n0 = 1e-20
    # SNR 1 -> 1 bit/s/Hz, SNR 3 -> 2, SNR 0 -> 0
    for snr_val, eff in ((1.0, 1.0), (3.0, 2.0), (15.0, 4.0), (0.0, 0.0)):
        gain = 1e-10
        power = snr_val * n0 * b / gain
        assert float(rates.snr(power, gain, b, n0)) == pytest.approx(snr_val, rel=1e-12, abs=1e-15)
        assert float(rates.shannon_rate(b, power, gain, n0)) == pytest.approx(b * eff, rel=1e-12, abs=1e-6)
    assert S_BITS / float(rates.shannon_rate(b, 3.0 * n0 * b / 1e-10, 1e-10, n0)) == pytest.approx(S_BITS / 2e6, rel=1e-12)


def test_shannon_rate_default_link_vectorised():
    # the default link: 10 dBm at 100 m (G = 1e-10) on the whole 10 MHz
    d = np.array([100.0, 200.0, 500.0])
    g = 1e-3 * d ** -3.5
    got = rates.shannon_rate(B_HZ, P_UL, g, N0)
    want = np.array([B_HZ * math.log2(1 + P_UL * gi / (N0 * B_HZ)) for gi in g])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # mean SNR at 100 m: 1e-2 * 1e-10 / (N0 * 1e7) = 25.1 (14.0 dB)
    assert float(rates.snr(P_UL, 1e-10, B_HZ, N0)) == pytest.approx(1e-12 / (N0 * B_HZ), rel=1e-12)


# ---------------------------------------------------------------------------- fading


def test_rayleigh_block_fading_power_is_exponential():
    h = fading.small_scale_powers(np.random.default_rng(101), 20_000, reciprocal=False)[1]
    assert h.shape == (20_000,)
    assert stats.kstest(h, "expon").pvalue > P_MIN
    assert abs(h.mean() - 1.0) < Z / math.sqrt(h.size)


@pytest.mark.parametrize("reciprocal", [True, False])
def test_small_scale_marginals_exponential(reciprocal):
    h_ul, h_dl = fading.small_scale_powers(np.random.default_rng(102), (400, 25), reciprocal=reciprocal)
    assert h_ul.shape == h_dl.shape == (400, 25)
    assert stats.kstest(h_ul.ravel(), "expon").pvalue > P_MIN
    assert stats.kstest(h_dl.ravel(), "expon").pvalue > P_MIN


def test_reciprocal_gives_identical_ul_dl():
    h_ul, h_dl = fading.small_scale_powers(np.random.default_rng(103), 1000, reciprocal=True)
    np.testing.assert_array_equal(h_ul, h_dl)


def test_independent_gives_uncorrelated_draws():
    n = 20_000
    h_ul, h_dl = fading.small_scale_powers(np.random.default_rng(104), n, reciprocal=False)
    assert not np.any(h_ul == h_dl)
    r = np.corrcoef(h_ul, h_dl)[0, 1]
    assert abs(r) < Z / math.sqrt(n)
    assert stats.spearmanr(h_ul, h_dl).pvalue > P_MIN
    # independence of the joint law: P(both > median) = 1/4
    both = int(np.sum((h_ul > math.log(2)) & (h_dl > math.log(2))))
    assert stats.binomtest(both, n, 0.25).pvalue > P_MIN


def test_reciprocal_switch_does_not_shift_stream():
    r1, r2 = np.random.default_rng(105), np.random.default_rng(105)
    a_ul, _ = fading.small_scale_powers(r1, 50, reciprocal=True)
    b_ul, _ = fading.small_scale_powers(r2, 50, reciprocal=False)
    np.testing.assert_array_equal(a_ul, b_ul)
    np.testing.assert_array_equal(r1.random(10), r2.random(10))


def test_no_fading_and_unknown_model():
    h_ul, h_dl = fading.small_scale_powers(np.random.default_rng(0), (3, 4), fading="none")
    np.testing.assert_array_equal(h_ul, np.ones((3, 4)))
    np.testing.assert_array_equal(h_dl, np.ones((3, 4)))
    with pytest.raises(ValueError):
        fading.small_scale_powers(np.random.default_rng(0), 3, fading="rician")


def test_fading_model_switch_does_not_shift_stream():
    r1, r2 = np.random.default_rng(106), np.random.default_rng(106)
    fading.small_scale_powers(r1, 50, fading="none")
    fading.small_scale_powers(r2, 50, fading="rayleigh")
    np.testing.assert_array_equal(r1.random(10), r2.random(10))


@pytest.mark.parametrize("reciprocal", [True, False])
def test_channel_gains(reciprocal):
    d = np.array([100.0, 250.0, 400.0, 500.0])
    G = 1e-3 * d ** -3.5
    rng_a, rng_b = np.random.default_rng(107), np.random.default_rng(107)
    g_ul, g_dl = fading.channel_gains(rng_a, G, reciprocal=reciprocal)
    both = rng_b.standard_exponential((4, 2))  # the documented draw layout: (K, 2), UL then DL
    np.testing.assert_allclose(g_ul, G * both[:, 0], rtol=1e-15)
    np.testing.assert_allclose(g_dl, G * (both[:, 0] if reciprocal else both[:, 1]), rtol=1e-15)
    # normalised gains are Exp(1)
    rng = np.random.default_rng(108)
    hs = np.stack([fading.channel_gains(rng, G, reciprocal=reciprocal)[1] / G for _ in range(3000)])
    assert stats.kstest(hs.ravel(), "expon").pvalue > P_MIN


def test_block_draws_equal_round_by_round_draws():
    """Drawing B rounds at once gives the numbers of B draws of one round each."""
    rng_a, rng_b = np.random.default_rng(109), np.random.default_rng(109)
    ul_block, dl_block = fading.small_scale_powers(rng_a, (5, 3), reciprocal=False)
    for r in range(5):
        ul, dl = fading.small_scale_powers(rng_b, 3, reciprocal=False)
        np.testing.assert_array_equal(ul, ul_block[r])
        np.testing.assert_array_equal(dl, dl_block[r])


# ---------------------------------------------------------------------------- ergodic capacity


def ergodic_closed_form(rho):
    """E[log2(1 + rho X)], X ~ Exp(1): log2(e) e^(1/rho) E1(1/rho)."""
    return LOG2E * math.exp(1.0 / rho) * special.exp1(1.0 / rho)


@pytest.mark.parametrize("rho_db, ref", [(0, 0.860347), (10, 2.906515), (20, 5.884048)])
def test_ergodic_capacity_closed_form_reference(rho_db, ref):
    rho = 10 ** (rho_db / 10)
    assert ergodic_closed_form(rho) == pytest.approx(ref, abs=1e-5)
    # and the closed form against direct numerical integration
    val, _ = integrate.quad(lambda x: math.log2(1 + rho * x) * math.exp(-x), 0, np.inf, epsabs=1e-12)
    assert ergodic_closed_form(rho) == pytest.approx(val, rel=1e-9)


@pytest.mark.parametrize("rho_db, seed", [(0, 201), (10, 202), (20, 203)])
def test_ergodic_capacity_monte_carlo(rho_db, seed):
    rho = 10 ** (rho_db / 10)
    n = 200_000
    h = np.random.default_rng(seed).standard_exponential(n)
    # spectral efficiency through the code's rate: b = 1 Hz, N0 = 1, P = rho, g = |h|^2
    eff = rates.shannon_rate(1.0, rho, h, 1.0)
    se = eff.std(ddof=1) / math.sqrt(n)
    assert abs(eff.mean() - ergodic_closed_form(rho)) < Z * se


# ---------------------------------------------------------------------------- delay law


def delay_cdf(t, bits, b, rho):
    """P(T <= t) for T = S / (b log2(1 + rho X)), X ~ Exp(1): exp(-(2^(S/(b t)) - 1) / rho)."""
    t = np.asarray(t, dtype=float)
    return np.exp(-np.expm1(bits / (b * t) * math.log(2)) / rho)


def test_delay_cdf_median_closed_form():
    for rho in (0.5, 3.0, 25.0):
        med = S_BITS / (B_HZ * math.log2(1 + rho * math.log(2)))
        assert float(delay_cdf(med, S_BITS, B_HZ, rho)) == pytest.approx(0.5, rel=1e-12)


@pytest.mark.parametrize("dist_m, n_rejected, seed", [(100.0, 1, 301), (300.0, 4, 302), (500.0, 20, 303)])
def test_single_link_delay_distribution(dist_m, n_rejected, seed):
    b = B_HZ / n_rejected
    G = 1e-3 * dist_m ** -3.5
    rho = P_UL * G / (N0 * b)  # mean SNR
    n = 20_000
    h = np.random.default_rng(seed).standard_exponential(n)
    t = S_BITS / rates.shannon_rate(b, P_UL, G * h, N0)
    assert stats.kstest(t, lambda x: delay_cdf(x, S_BITS, b, rho)).pvalue > P_MIN
    # the median: the fraction below the closed-form median is 1/2
    med = S_BITS / (b * math.log2(1 + rho * math.log(2)))
    assert stats.binomtest(int(np.sum(t <= med)), n, 0.5).pvalue > P_MIN
