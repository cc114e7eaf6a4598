"""The 'robust' split on a shared band (policies/straggler.py): each prefix split, planned on
the estimated vectors, met by draws of the true ones given the estimates; the split with the
smallest quantile of the realised T_comm.

Checked against fresh draws made here (4,000 per outcome, common to the splits compared), the
true vector a = a_hat + sqrt(G s2) w of the MMSE error model (rho = 1, i.i.d. elements), and
T_comm realised by ``Transmission.realised_t_comm`` (itself checked stream by stream in
tests/model/test_antennas.py).
"""
import math

import numpy as np
import pytest

from multispin_sim.model.antennas import ArrayGains
from multispin_sim.model.mimo import Transmission
from multispin_sim.model.reactive import optimal_split
from multispin_sim.policies.straggler import RobustSplit

S, B, N0, P_UL, P_DL = 12_000.0, 10e6, 4e-21, 0.01, 0.04


def _cn(rng, shape):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) / math.sqrt(2)


class _System:   # the constants Transmission.problem reads
    p_ul_w, p_dl_w, payload_bits, bandwidth_hz, n0 = P_UL, P_DL, S, B, N0


def _setting(rng, k, m, n):
    pl = 1e-11 * rng.uniform(0.1, 3.0, k)
    est = np.sqrt(pl)[:, None] * _cn(rng, (k, m))
    rejected = rng.random((n, k)) < 0.6
    rejected[rejected.sum(axis=1) == 0, 0] = True
    tr = Transmission(m, "mu-mimo-zf", "mu-mimo-mmse")
    gains = ArrayGains.of(est)
    return tr, tr.problem(_System, rejected, gains, gains), pl, est


def _realised_quantile(tr, problem, pl, est, masks, s2, q, rng, draws=4000):
    """The q-quantile of T_comm of each outcome's split ``masks`` (n, K), from ``draws`` true
    channels per outcome (the same for every call with the same ``rng`` state)."""
    out = []
    for i in range(problem.shape[0]):
        a = est + np.sqrt(pl * s2)[:, None] * _cn(rng, (draws,) + est.shape)
        mode, power, delay, _, _ = problem.row(i, masks[i])
        t = tr.realised_t_comm(a, a, est, est, mode, delay, power, S,
                               float(problem.bandwidth_per_device[i]), N0)
        out.append(np.quantile(t, q))
    return np.array(out)


def test_robust_split_on_a_shared_band_lowers_the_quantile_of_t_comm():
    """60 outcomes of K = 6 on M = 2, s2 = 0.2, the 90% quantile: paired on fresh draws, the
    robust split's quantile is below the optimal split's on average (the mean paired
    difference more than 3 standard errors below 0) and never far above it."""
    rng = np.random.default_rng(11)
    tr, problem, pl, est = _setting(rng, 6, 2, 60)
    s2, q = 0.2, 0.9
    robust = RobustSplit(quantile=q, samples=256, error_variance=s2, pathloss=pl)
    chosen = robust.decide(problem, np.random.default_rng(5)).mode[:] == 1
    plain = optimal_split(problem).mode == 1
    assert np.any(chosen != plain)
    ours = _realised_quantile(tr, problem, pl, est, chosen, s2, q, np.random.default_rng(7))
    theirs = _realised_quantile(tr, problem, pl, est, plain, s2, q, np.random.default_rng(7))
    diff = ours / theirs - 1.0
    assert diff.mean() < -3 * diff.std(ddof=1) / math.sqrt(diff.size), diff
    assert diff.max() < 0.1


def test_robust_split_with_a_vanishing_error_plans_as_the_optimal_split():
    rng = np.random.default_rng(12)
    tr, problem, pl, est = _setting(rng, 7, 4, 40)
    robust = RobustSplit(quantile=0.9, samples=32, error_variance=1e-12, pathloss=pl)
    got = robust.decide(problem, np.random.default_rng(1))
    np.testing.assert_allclose(got.t_comm, optimal_split(problem).t_comm, rtol=1e-6)
