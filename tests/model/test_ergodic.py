"""The law of the small-scale array gain and its ergodic gain (``model.ergodic``).

E[ln(1 + rho X)] against quadrature over the law's density (Gamma(M, 1) for i.i.d. Rayleigh
elements, the hypoexponential density for correlated ones), against Alouini and Goldsmith's
closed form for i.i.d. elements where its e^(1/rho) does not overflow, and against the channel
vectors the engine draws; the ergodic gain's limits; no fading; one antenna unchanged.
"""
import math

import numpy as np
import pytest
from scipy import integrate, special

from multispin_sim.model.antennas import ServerArray, exponential_correlation
from multispin_sim.model.ergodic import GainLaw, mean_log1p
from multispin_sim.model.rates import ergodic_gain, shannon_rate

SNRS = [1e-4, 1e-2, 0.3, 1.0, 10.0, 1e3, 1e5, 1e7]


def quad_mean_log1p(rho, density):
    """E[ln(1 + rho X)] by adaptive quadrature over X's density (relative 1e-13 asked)."""
    value, _ = integrate.quad(lambda x: math.log1p(rho * x) * density(x), 0, math.inf,
                              limit=400, epsabs=0, epsrel=1e-13)
    return value


def gamma_density(m):
    return lambda x: math.exp((m - 1) * math.log(x) - x - math.lgamma(m)) if x > 0 else (
        1.0 if m == 1 else 0.0)


def hypoexponential_density(lam):
    """Density of sum_i lam_i E_i for distinct lam_i: sum_i A_i e^(-x / lam_i) / lam_i with
    A_i = prod_{j != i} lam_i / (lam_i - lam_j)."""
    lam = np.asarray(lam, dtype=float)
    a = [np.prod([lam[i] / (lam[i] - lam[j]) for j in range(lam.size) if j != i])
         for i in range(lam.size)]
    return lambda x: sum(a[i] * math.exp(-x / lam[i]) / lam[i] for i in range(lam.size))


@pytest.mark.parametrize("m", [1, 2, 4, 8, 64])
@pytest.mark.parametrize("rho", SNRS)
def test_iid_elements_give_the_gamma_mean_rate(m, rho):
    """The trapezoid sum's own error is near e^-39 (module docstring) and the quadrature's
    1e-13: 1e-9 leaves room for both and for the sum's rounding over a few hundred terms."""
    got = mean_log1p(np.array([rho]), np.ones(m))[0]
    assert got == pytest.approx(quad_mean_log1p(rho, gamma_density(m)), rel=1e-9)


@pytest.mark.parametrize("m", [1, 2, 4, 16])
@pytest.mark.parametrize("rho", [1e-2, 1.0, 10.0, 1e4, 1e7])
def test_iid_elements_match_alouini_goldsmith(m, rho):
    """E[ln(1 + rho X)], X ~ Gamma(M, 1) = e^(1/rho) sum_{k=1..M} E_k(1/rho), evaluated here
    only where e^(1/rho) is finite (1/rho <= 100)."""
    x = 1.0 / rho
    closed = math.exp(x) * sum(special.expn(k, x) for k in range(1, m + 1))
    assert mean_log1p(np.array([rho]), np.ones(m))[0] == pytest.approx(closed, rel=1e-9)


@pytest.mark.parametrize("m, corr", [(2, 0.5), (4, 0.5), (3, 0.9)])
@pytest.mark.parametrize("rho", SNRS)
def test_correlated_elements_give_the_hypoexponential_mean_rate(m, corr, rho):
    lam = np.linalg.eigvalsh(exponential_correlation(m, corr))
    law = GainLaw.of("rayleigh", m, corr)
    np.testing.assert_allclose(np.sort(law.eigenvalues), np.sort(lam), rtol=1e-12)
    got = mean_log1p(np.array([rho]), law.eigenvalues)[0]
    assert got == pytest.approx(quad_mean_log1p(rho, hypoexponential_density(lam)), rel=1e-9)


@pytest.mark.parametrize("m, corr", [(4, 0.0), (4, 0.7)])
def test_the_law_is_that_of_the_vectors_the_channel_draws(m, corr):
    """20,000 draws of ||h||^2 from the array's Rayleigh source at SNR 10: their mean
    ln(1 + rho X) lies within 4 standard errors of the law's (a false alarm about 6e-5)."""
    source = ServerArray(m, corr).rounds("rayleigh", np.random.default_rng(3), 20, True, 0.0,
                                         block=1000)
    x = np.concatenate([np.sum(np.abs(source.round_powers(0.0)[0]) ** 2, axis=1)
                        for _ in range(1000)])
    sample = np.log1p(10.0 * x)
    se = sample.std(ddof=1) / math.sqrt(sample.size)
    want = mean_log1p(np.array([10.0]), GainLaw.of("rayleigh", m, corr).eigenvalues)[0]
    assert abs(sample.mean() - want) < 4 * se


def test_its_rate_is_the_mean_rate_and_its_limits():
    """Shannon's rate at the ergodic gain is the mean rate; the factor on G falls from E[X] = M
    (low SNR, the log is linear) to e^psi(M) (high SNR: E[ln X] = psi(M) for Gamma(M, 1))."""
    law = GainLaw.of("rayleigh", 4)
    b, p, n0, g = 1e6, 1.0, 1e-20, 1e-13             # rho = P G / (N0 b) = 10
    mean = quad_mean_log1p(10.0, gamma_density(4)) / math.log(2)
    assert shannon_rate(b, p, law.ergodic_gain(g, p, b, n0), n0) == pytest.approx(b * mean,
                                                                                  rel=1e-9)
    factor = law.ergodic_gain(2e-9, 10 ** np.linspace(-10, 2, 25), 1e6, 1e-20) / 2e-9
    assert np.all(np.diff(factor) < 0)                        # rho 2e-5 .. 2e7
    assert factor[0] == pytest.approx(4.0, rel=1e-4)          # 4 (1 - rho / 2): 1e-5 below
    high = law.ergodic_gain(2e-9, 1e12, 1e6, 1e-20) / 2e-9    # rho = 2e17
    assert high == pytest.approx(math.exp(special.digamma(4)), rel=1e-9)
    assert law.ergodic_gain(3.0, 0.0, 1e6, 1e-20) == pytest.approx(12.0)   # no power: E[X] G


def test_no_fading_prices_at_the_gain_itself():
    """Without fading the mean rate is the rate: the ergodic gain is G (one antenna) or G M
    (h = 1 on every element), whatever the SNR and the correlation."""
    g = np.array([1e-12, 3e-9, 0.0])
    for m, corr in [(1, 0.0), (4, 0.0), (4, 0.6)]:
        law = GainLaw.of("none", m, corr)
        np.testing.assert_array_equal(law.ergodic_gain(g, 0.2, 1e6, 4e-21), g * m)


def test_one_rayleigh_element_keeps_the_closed_form():
    g = np.array([1e-12, 3e-9, 2e-13])
    for fading in ("rayleigh", "gauss-markov", "jakes"):
        law = GainLaw.of(fading)
        assert law.one_rayleigh
        np.testing.assert_array_equal(law.ergodic_gain(g, 0.2, 1e6, 4e-21),
                                      ergodic_gain(g, 0.2, 1e6, 4e-21))


@pytest.mark.parametrize("bad", [np.inf, np.nan, -1.0])
def test_a_snr_that_is_not_finite_and_non_negative_is_refused(bad):
    """No mean rate exists there: one clear error rather than a gain of 0 or a failed grid."""
    with pytest.raises(ValueError, match="finite and non-negative"):
        mean_log1p(np.array([1.0, bad]), np.ones(4))
