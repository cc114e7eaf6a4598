"""The engine in a Rician channel: the recorded array gains against the noncentral chi-square
law of ||a s + b w||^2 (one antenna and four), a strong line of sight against the path loss,
the NR link's retries, and the paper's run untouched when the K-factor is null."""
import numpy as np
import pytest
from scipy import stats

import multispin_sim as ms
from multispin_sim.model.antennas import rician_weights

P_MIN = 1e-3


def _gains(overrides):
    res = ms.simulate(ms.load_scenario(None, overrides=overrides))
    dr = res.device_rounds
    return np.asarray(dr["gain_ul"]) / np.asarray(res.devices["pathloss_gain"])[dr["device"]], res


@pytest.mark.parametrize("m,k_db,fading", [(1, 6.0, "rayleigh"), (4, 3.0, "rayleigh"),
                                           (1, 10.0, "gauss-markov")])
def test_recorded_array_gains_are_noncentral_chi_square(m, k_db, fading):
    x, _ = _gains({"devices.count": 2, "server.antennas": m, "channel.rician_k_db": k_db,
                   "channel.fading": fading, "channel.doppler_hz": 5.0, "run.rounds": 1500,
                   "seed": 3})
    a, b = rician_weights(k_db)
    # one device's rounds (devices differ in direction, not in law); Gauss-Markov rounds are
    # correlated: every tenth round, about 0.4 s apart at 5 Hz
    x = x[0::2][:: 10 if fading == "gauss-markov" else 1]
    dist = stats.ncx2(2 * m, 2 * a * a * m / (b * b))
    assert stats.kstest(2 * x / (b * b), dist.cdf).pvalue > P_MIN


def test_a_strong_line_of_sight_leaves_the_path_loss():
    x, _ = _gains({"channel.rician_k_db": 40.0, "run.rounds": 200, "seed": 1})
    # b = 0.01: |h|^2 = |a + b w|^2 is within 2 b |w| + b^2 of 1
    assert np.abs(x - 1).max() < 0.1 and abs(x.mean() - 1) < 2e-3


@pytest.mark.parametrize("fading", ["rayleigh", "gauss-markov"])
def test_the_nr_link_retries_keep_the_line_of_sight(tmp_path, fading):
    """A retry on a new fading block draws the scattered part only: given the vector h before
    it, the new vector has mean a s + rho (h - a s) (rho = 0 for i.i.d. blocks) and covariance
    b^2 (1 - rho^2) I, s the steering vector toward the device."""
    from multispin_sim.engine.simulation import build_run

    sc = ms.load_scenario(None, overrides={"link.model": "mcs", "server.antennas": 2,
                                           "channel.rician_k_db": 6.0, "channel.fading": fading,
                                           "run.rounds": 2, "seed": 1})
    channel = build_run(sc, tmp_path, {}).channel
    channel.new_block(0.0)
    a, b = rician_weights(6.0)
    s = channel.los.vectors()[3]
    h = s * 0.3 + 0.5j
    rho = channel.retry_rho if fading == "gauss-markov" else 0.0
    rng = np.random.default_rng(7)
    new = np.array([channel.retry_vector(rng, 3, h)[1] for _ in range(4000)])
    mean = a * s + rho * (h - a * s)
    sd = b * np.sqrt(1 - rho * rho)
    assert np.abs(new.mean(axis=0) - mean).max() < 5 * sd / np.sqrt(new.shape[0])
    assert abs(np.var(new - mean, axis=0).mean() - sd * sd) < 0.1 * sd * sd


def test_a_null_k_factor_is_the_paper():
    base = ms.simulate(ms.load_scenario(None, overrides={"run.rounds": 100, "seed": 4}))
    same = ms.simulate(ms.load_scenario(None, overrides={"run.rounds": 100, "seed": 4,
                                                         "channel.rician_k_db": None}))
    for column in ("gain_ul", "delay_s", "mode"):
        np.testing.assert_array_equal(np.asarray(base.device_rounds[column]),
                                      np.asarray(same.device_rounds[column]))


@pytest.mark.parametrize("m", [1, 4])
def test_the_decisions_see_the_estimate_of_the_scattered_part(m):
    """With an MMSE error s2 the decisions' array gain is ||a s + x_hat||^2, x_hat ~
    CN(0, b^2 (1 - s2) I): noncentral chi-square with scale b^2 (1 - s2) / 2."""
    k_db, s2 = 6.0, 0.3
    x, _ = _gains({"devices.count": 2, "server.antennas": m, "channel.rician_k_db": k_db,
                   "csi.estimation_error_variance": s2, "run.rounds": 1500, "seed": 5})
    a, b = rician_weights(k_db)
    var = b * b * (1 - s2)
    dist = stats.ncx2(2 * m, 2 * a * a * m / var)
    assert stats.kstest(2 * x[0::2] / var, dist.cdf).pvalue > P_MIN
