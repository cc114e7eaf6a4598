"""The Rician channel's parts against their laws: h = a s + b w, a^2 = K / (K + 1),
b^2 = 1 / (K + 1). For M uncorrelated elements X = ||h||^2 has 2 X / b^2 ~ noncentral
chi-square with 2M degrees of freedom and noncentrality 2 a^2 M / b^2 (scipy's ncx2), whatever
the direction of s; the ergodic gain is checked against quadrature of that density, the grid's
Gauss-Markov blocks against the power autocorrelation (2 a^2 b^2 rho + b^4 rho^2) /
(2 a^2 b^2 + b^4) of a line of sight plus an AR(1) scattered part."""
import math

import numpy as np
import pytest
from scipy import integrate, stats

from multispin_sim.model.antennas import LineOfSight, Rician, ServerArray, rician_weights
from multispin_sim.model.ergodic import GainLaw

P_MIN = 1e-3


def _ncx2(k_db, m):
    a, b = rician_weights(k_db)
    return stats.ncx2(2 * m, 2 * a * a * m / (b * b)), b * b / 2


def test_weights_keep_the_mean_power():
    for k_db in (-10.0, 0.0, 6.0, 20.0):
        a, b = rician_weights(k_db)
        assert a * a + b * b == pytest.approx(1.0, rel=1e-15)
        assert a * a / (b * b) == pytest.approx(10 ** (k_db / 10), rel=1e-12)


@pytest.mark.parametrize("m,k_db", [(1, 6.0), (4, 0.0), (4, 10.0)])
def test_sampled_array_gain_is_noncentral_chi_square(m, k_db):
    law = GainLaw.of("rayleigh", m, 0.0, Rician(k_db))
    x = law.sample(np.random.default_rng(m), (20000,))
    dist, scale = _ncx2(k_db, m)
    assert stats.kstest(x / scale, dist.cdf).pvalue > P_MIN
    assert not law.one_rayleigh


@pytest.mark.parametrize("m,k_db", [(1, 6.0), (1, -5.0), (4, 10.0), (8, 3.0)])
def test_ergodic_gain_against_quadrature(m, k_db):
    law = GainLaw.of("rayleigh", m, 0.0, Rician(k_db))
    dist, scale = _ncx2(k_db, m)
    g, p, band, n0 = 1e-10, 0.01, 1e6, 10 ** (-174 / 10) * 1e-3
    for power in (p * 1e-3, p, p * 1e3):
        rho = power * g / (n0 * band)
        mean_log, _ = integrate.quad(lambda y: math.log1p(rho * scale * y) * dist.pdf(y), 0,
                                     np.inf, epsabs=0, epsrel=1e-12, limit=400)
        want = g * math.expm1(mean_log) / rho
        assert law.ergodic_gain(g, power, band, n0) == pytest.approx(want, rel=1e-9)


def test_the_line_of_sight_is_kept_in_every_round_and_block():
    """The rounds' and the grid's vectors are a s + b L w: their mean over draws is a s (the
    steering vector toward each device), their covariance b^2 I."""
    k_db, m = 6.0, 4
    a, b = rician_weights(k_db)
    array = ServerArray(m, k_factor_db=k_db)
    phi = np.array([0.0, 0.7])
    los = LineOfSight(lambda: phi, 2, m)
    s = los.vectors()
    rician = array.rician(los)
    for source in (array.rounds("rayleigh", np.random.default_rng(1), 2, True, 0.0,
                                rician=rician),
                   array.grid("rayleigh", np.random.default_rng(2), 2, True, 0.0, 1e-3,
                              rician=rician)):
        if hasattr(source, "round_powers"):
            h = np.stack([source.round_powers(0.0)[0] for _ in range(6000)])
        else:
            h = source.powers(0, 6000)[0]
        err = h.mean(axis=0) - a * s
        assert np.abs(err).max() < 5 * b / math.sqrt(2 * 6000) * math.sqrt(2)
        scat = (h - a * s).reshape(-1, m)
        cov = scat.T @ scat.conj() / scat.shape[0]
        assert np.abs(cov - b * b * np.eye(m)).max() < 6 * b * b / math.sqrt(scat.shape[0])


@pytest.mark.parametrize("m", [1, 4])
def test_one_devices_jakes_gains_are_its_row_of_the_whole_channel(m):
    """A correction over Jakes blocks reads one device's ||a s + b w(t)||^2 at many instants
    (``power``): each its row of the vectors of every device at that instant."""
    array = ServerArray(m, k_factor_db=6.0)
    phi = np.array([0.0, 0.4, -0.9])
    grid = array.grid("jakes", np.random.default_rng(9), 3, False, 30.0, 1e-3,
                      rician=array.rician(LineOfSight(lambda: phi, 3, m)))
    times = np.array([0.0, 2e-3, 7e-3, 0.031])
    for device in range(3):
        for dl in (False, True):
            want = [np.sum(np.abs(grid.vectors_at(t)[int(dl)][device]) ** 2) for t in times]
            np.testing.assert_allclose(grid.power(device, dl, times), want, rtol=1e-12)


def test_gauss_markov_blocks_decorrelate_only_the_scattered_part():
    k_db, doppler, block_s = 3.0, 40.0, 2e-3
    a, b = rician_weights(k_db)
    array = ServerArray(1, k_factor_db=k_db)
    grid = array.grid("gauss-markov", np.random.default_rng(5), 1, True, doppler, block_s,
                      rician=array.rician(LineOfSight(None, 1, 1)))
    x = np.abs(grid.powers(0, 40000)[0][:, 0, 0]) ** 2
    rho = float(grid.rho)
    for lag in (1, 3, 10):
        want = ((2 * a * a * b * b * rho ** lag + b ** 4 * rho ** (2 * lag))
                / (2 * a * a * b * b + b ** 4))
        got = np.corrcoef(x[:-lag], x[lag:])[0, 1]
        # an AR(1) series of 40,000 blocks: a few times 1 / sqrt(n (1 - rho) / (1 + rho))
        tol = 5 * math.sqrt((1 + rho) / (1 - rho) / x.size)
        assert abs(got - want) < tol, (lag, got, want)


def test_csi_estimates_the_scattered_part_and_knows_the_direct_path():
    """With a direct path d = a s the estimate is d + (1 - s2) (h - d) + noise of variance
    (1 - s2) s2 b^2 (the MMSE estimate of the scattered part, of variance b^2); aging steps
    the scattered part only: rho (h - d) + sqrt(1 - rho^2) b w."""
    from multispin_sim.model.csi import ImperfectCsi

    a, b = rician_weights(6.0)
    m, n = 3, 20000
    # every device at the bearing whose steering phases are 0, 0.4, 0.8
    phi = np.full(n, math.asin(0.4 / math.pi))
    rician = Rician(6.0, LineOfSight(lambda: phi, n, m))
    direct = rician.direct()[:1]
    assert np.allclose(direct, a * np.exp(1j * np.array([[0.0, 0.4, 0.8]])))
    h = direct + b * np.array([[0.3 - 0.2j, -0.5j, 0.1]])
    for csi, mean, var in (
            (ImperfectCsi(error_variance=0.3), direct + 0.7 * (h - direct), 0.7 * 0.3 * b * b),
            (ImperfectCsi(delay_s=0.01, doppler_hz=20.0), None, None)):
        rho = csi.rho
        if mean is None:
            mean, var = direct + rho * (h - direct), (1 - rho * rho) * b * b
        est = csi.estimate_vectors(np.repeat(h, n, axis=0), None, True, np.random.default_rng(4),
                                   np.ones(n), None, rician)[0].vectors
        assert np.abs(est.mean(axis=0) - mean[0]).max() < 5 * math.sqrt(var / n)
        assert np.abs(np.var(est - mean, axis=0) - var).max() < 0.05 * var


def test_correlated_elements_plan_on_each_devices_direction():
    """With correlated elements the law of ||a s_k + b L w||^2 depends on device k's direction:
    the per-device law's samples against draws of the channel itself (two-sample KS), and its
    ergodic gain against the Monte Carlo mean of ln(1 + rho X) over those draws."""
    from multispin_sim.model.antennas import correlated, exponential_correlation
    from multispin_sim.model.fading import complex_gaussian

    k_db, m, rho_c = 6.0, 4, 0.8
    a, b = rician_weights(k_db)
    phi = np.array([0.0, 0.5, -1.0])
    los = LineOfSight(lambda: phi, 3, m)
    law = GainLaw.of("rayleigh", m, rho_c, Rician(k_db, los))
    factor = np.linalg.cholesky(exponential_correlation(m, rho_c))
    rng = np.random.default_rng(11)
    n = 40000
    h = a * los.vectors() + b * correlated(complex_gaussian(rng, (n, 3, m)), factor)
    truth = (np.abs(h) ** 2).sum(axis=-1)                               # (n, 3)
    drawn = law.sample(np.random.default_rng(12), (n, 3))
    for k in range(3):
        assert stats.ks_2samp(drawn[:, k], truth[:, k]).pvalue > P_MIN
    # the directions differ in law: broadside against -57 degrees
    assert stats.ks_2samp(truth[:, 0], truth[:, 2]).pvalue < 1e-6
    g, p, band, n0 = np.full(3, 1e-10), 0.01, 1e6, 10 ** (-174 / 10) * 1e-3
    rho = p * 1e-10 / (n0 * band)
    logs = np.log1p(rho * truth)
    want = g * np.expm1(logs.mean(axis=0)) / rho
    err = g * np.exp(logs.mean(axis=0)) * logs.std(axis=0) / math.sqrt(n) / rho
    got = law.ergodic_gain(g, p, band, n0)
    assert np.all(np.abs(got - want) < 5 * err), (got, want, err)
