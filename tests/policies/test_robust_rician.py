"""The 'robust' split in a Rician channel (policies/straggler.py): its draws of the truth given
an estimate against the channel and CSI models themselves.

Simulation-based calibration: draw true channels h = a s + b w (``model.antennas.Rician``) and
their estimates as the engine makes them (``ImperfectCsi.estimate_vectors``: aging, then the
MMSE error, on the scattered part); for each pair the policy draws N truths given the estimate
alone. If its law of the truth given the estimate is right, the rank of the actual truth among
the N draws is uniform on 0..N (whatever the estimate), which a chi-square test checks. The
zero-mean law (no direct path) fails the same test, so the test tells the two apart.
"""
import math

import numpy as np
import pytest
from scipy import stats

import multispin_sim as ms
from multispin_sim.model.antennas import (LineOfSight, Rician, channel_vectors, direct_share,
                                          matched_gain, rician_weights, squared_norms)
from multispin_sim.model.csi import ImperfectCsi
from multispin_sim.policies.straggler import RobustSplit

P_MIN = 1e-3
DRAWS = 31    # truths drawn by the policy per estimate: ranks 0..31, 32 bins
PAIRS = 4000  # (truth, estimate) pairs


def _pairs(m, k_db, rho_csi, seed):
    """True vectors a (n, M) and their estimates a_hat, the direct paths d (abs. units), the
    path losses G, the CSI's rho and the scattered power b^2."""
    rng = np.random.default_rng(seed)
    n = PAIRS
    phi = rng.uniform(-1.5, 1.5, n)   # every device in its own direction
    rician = Rician(k_db, LineOfSight(lambda: phi, n, m))
    pl = 10 ** rng.uniform(-11, -9, n)
    w = (rng.standard_normal((n, m)) + 1j * rng.standard_normal((n, m))) / math.sqrt(2)
    h = rician.of(w)
    csi = ImperfectCsi(delay_s=5e-3, doppler_hz=rho_csi, error_variance=0.3)
    est = csi.estimate_vectors(h, None, True, rng, pl, None, rician)[0].vectors
    return channel_vectors(pl, h), est, channel_vectors(pl, rician.direct()), pl, csi, rician.b


def _uniform_ranks(truth, draws):
    """p-value of the chi-square test that the rank of each truth (n,) among its draws
    (N, n) is uniform on 0..N."""
    ranks = (draws < truth).sum(axis=0)
    counts = np.bincount(ranks, minlength=draws.shape[0] + 1)
    return stats.chisquare(counts).pvalue


@pytest.mark.parametrize("m,k_db", [(1, 6.0), (4, 3.0)])
def test_the_gain_through_the_beam_is_drawn_from_its_law_given_the_estimate(m, k_db):
    """Orthogonal schemes: the gain met through the beam on the estimate, |a_hat^H a|^2 /
    ||a_hat||^2, against ``true_gains`` given the estimate's gain and the share c of the
    direct path along it (aged CSI: rho about 0.47, and an MMSE error 0.3)."""
    truth, est, direct, pl, csi, b = _pairs(m, k_db, 50.0, seed=m)
    rho, s2 = csi.rho, csi.s2
    assert 0.3 < rho < 0.6
    met = matched_gain(est, truth)                                   # (n,)
    g_hat = squared_norms(est)
    c = direct_share(est, direct)
    var = (1 - rho ** 2 + rho ** 2 * s2) * b * b
    shape = (DRAWS, PAIRS)
    rng = np.random.default_rng(10 + m)
    right = RobustSplit.true_gains(g_hat, pl, np.abs(rho + (1 - rho) * c), var, shape, rng)
    assert _uniform_ranks(met, right) > P_MIN
    # the law of zero-mean elements (no direct path) is told apart
    wrong = RobustSplit.true_gains(g_hat, pl, rho, 1 - rho ** 2 + rho ** 2 * s2, shape, rng)
    assert _uniform_ranks(met, wrong) < 1e-6


def test_the_vectors_of_a_shared_band_are_drawn_from_their_law_given_the_estimate():
    """Shared band: the true vectors against ``true_vectors`` given the estimated ones and the
    direct paths: the ranks of an element's real part, of its imaginary part and of the
    squared norm are uniform."""
    m = 4
    truth, est, direct, pl, csi, b = _pairs(m, 6.0, 50.0, seed=7)
    rho = np.full((PAIRS, 1), csi.rho)
    spread = np.sqrt(pl * (1 - csi.rho ** 2 + csi.rho ** 2 * csi.s2) * b * b)[:, None]
    draws = RobustSplit.true_vectors(est, rho, spread, direct, (DRAWS, PAIRS, m),
                                     np.random.default_rng(8))
    for stat in (lambda a: a[..., 1].real, lambda a: a[..., 2].imag, squared_norms):
        assert _uniform_ranks(stat(truth), stat(draws)) > P_MIN
    wrong = RobustSplit.true_vectors(est, rho, spread / b, None, (DRAWS, PAIRS, m),
                                     np.random.default_rng(8))
    assert _uniform_ranks(squared_norms(truth), squared_norms(wrong)) < 1e-6


def test_without_aging_only_the_scattered_power_changes():
    """rho = 1 (no CSI delay): the mean is the estimate's own gain whatever the direct path
    (|1 + 0 c| = 1), the spread b^2 s2."""
    truth, est, direct, pl, _, b = _pairs(1, 10.0, 0.0, seed=3)
    csi = ImperfectCsi(error_variance=0.3)
    assert csi.rho == 1.0
    rician_est = csi.estimate_vectors(truth / np.sqrt(pl)[:, None], None, True,
                                      np.random.default_rng(4), pl, None,
                                      Rician(10.0, LineOfSight(lambda: np.zeros(PAIRS), PAIRS,
                                                               1)))[0].vectors
    truth = channel_vectors(pl, truth / np.sqrt(pl)[:, None])
    draws = RobustSplit.true_gains(squared_norms(rician_est), pl, 1.0, 0.3 * b * b,
                                   (DRAWS, PAIRS), np.random.default_rng(5))
    assert _uniform_ranks(matched_gain(rician_est, truth), draws) > P_MIN


def _run(overrides):
    base = {"devices.count": 6, "run.rounds": 200, "seed": 2, "channel.rician_k_db": 6.0,
            "channel.fading": "gauss-markov", "channel.doppler_hz": 50.0}
    return ms.simulate(ms.load_scenario(None, overrides={**base, **overrides}))


@pytest.mark.parametrize("antennas,scheme", [(1, "ofdma-mrt"), (4, "ofdma-mrt"),
                                             (4, "mu-mimo-zf")])
def test_exact_csi_in_a_rician_channel_is_the_optimal_split(antennas, scheme):
    """With exact CSI the robust split has nothing to hedge: the optimal split's modes."""
    modes = []
    for mode in ("robust", "optimal"):
        res = _run({"policy.mode": mode, "server.antennas": antennas,
                    "server.dl_scheme": scheme})
        modes.append(np.asarray(res.device_rounds["mode"]))
    np.testing.assert_array_equal(*modes)


def test_a_strong_line_of_sight_leaves_little_to_hedge():
    """K = 30 dB: the error and the aging act on a scattered part of power b^2 = 0.001, so the
    truth given the estimate is nearly the estimate and the robust split is the optimal one on
    almost every outcome; a law that ignored the direct path would hedge against a spread of
    power 1 - rho^2 + rho^2 s2 (about 0.8 here) and move many devices."""
    common = {"channel.rician_k_db": 30.0, "csi.estimation_error_variance": 0.3,
              "csi.delay_ms": 5.0, "run.rounds": 300}
    robust = _run({**common, "policy.mode": "robust"})
    optimal = _run({**common, "policy.mode": "optimal"})
    a, b = (np.asarray(r.device_rounds["mode"]) for r in (robust, optimal))
    rejected = b != ""   # devices with a correction ('ul' or 'dl')
    assert rejected.sum() > 500
    # (the zero-mean law agrees on 96% of them in this run)
    assert np.mean(a[rejected] == b[rejected]) > 0.99
