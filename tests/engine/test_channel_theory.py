"""The engine's recorded channel against theory where rounds are irregular or the CSI imperfect.

Rounds start at times the traffic and the channel decide, so fading correlation must follow the
elapsed time between rounds, not their index. Samples of one device are correlated in time:
standard errors are taken over independent devices. Tolerances are 4 standard errors.
"""
import math

import numpy as np
from scipy import stats
from scipy.special import j0

import multispin_sim as ms
from multispin_sim.model.antennas import exponential_correlation
from multispin_sim.model.jakes import SINUSOIDS

NSIG = 4.0


def run(seed=1, **overrides):
    return ms.simulate(ms.load_scenario(None, overrides={**overrides, "seed": seed}))


def power_series(res):
    """Per device: (round start times, |h|^2 without path loss, round indices)."""
    d = res.device_rounds
    p = d["gain_ul"] / res.devices["pathloss_gain"][d["device"]]
    t = res.rounds["start_s"][d["round"]]
    return [(t[d["device"] == k], p[d["device"] == k], d["round"][d["device"] == k])
            for k in np.unique(d["device"])]


def lag_excess(series, lag, theory):
    """Mean over devices of (p_i - 1)(p_{i+lag} - 1) minus its theoretical covariance, and the
    standard error of that mean over devices."""
    d = np.array([np.mean((p[:-lag] - 1) * (p[lag:] - 1)
                          - theory(t[:-lag], t[lag:], r[:-lag], r[lag:]))
                  for t, p, r in series if len(p) > lag])
    return d.mean(), d.std(ddof=1) / math.sqrt(d.size)


def sum_of_sinusoids_power_cov(x, m=SINUSOIDS, phases=64):
    """Cov(|h(t)|^2, |h(t + tau)|^2) of the M-sinusoid model (x = 2 pi f_D tau), averaged over
    its random angle offset: about J0(x)^2 - 1/(2M), the M-term correction Clarke's J0^2 leaves
    out (it matters at this test's precision)."""
    th = -np.pi + (np.arange(phases) + 0.5) * 2 * np.pi / phases
    a = (2 * np.pi * np.arange(1, m + 1)[None] - np.pi + th[:, None]) / (4 * m)
    out = []
    for xi in np.atleast_1d(x):
        sc, ss = np.cos(xi * np.cos(a)).sum(1), np.cos(xi * np.sin(a)).sum(1)
        c2 = (np.cos(2 * xi * np.cos(a)) + np.cos(2 * xi * np.sin(a))).sum(1)
        out.append(np.mean((sc ** 2 + ss ** 2) / (2 * m * m)) - 1 / (2 * m)
                   - np.mean(c2) / (8 * m * m))
    return np.array(out)


def test_jakes_power_correlation_follows_the_elapsed_time_of_irregular_rounds():
    """Poisson requests leave idle gaps of 0.05 to 30 s between rounds: the recorded powers
    covary as the sinusoid model at the elapsed time."""
    f_d = 1.0
    res = run(seed=2, **{"devices.count": 60, "devices.distance_m": 10.0,
                         "workload.arrivals": "poisson", "workload.rate_per_s": 0.05,
                         "workload.length_tokens": 8, "run.rounds": 15000,
                         "channel.fading": "jakes", "channel.doppler_hz": f_d})
    xs = np.linspace(0, 80, 1601)
    table = sum_of_sinusoids_power_cov(xs)

    def theory(t1, t2, *_):
        return np.interp(2 * np.pi * f_d * (t2 - t1), xs, table, right=0.0)

    series = power_series(res)
    gaps = np.diff(res.rounds["start_s"])
    assert gaps.max() > 20 * np.median(gaps)   # the rounds are irregular indeed
    for lag in (1, 2, 3):
        excess, se = lag_excess(series, lag, theory)
        assert abs(excess) < NSIG * se + 1e-3, (lag, excess, se)


def test_gauss_markov_lag_covariance_uses_the_actual_round_spacing():
    """Saturated rounds last what the channel makes them last: the power covariance at lag n is
    the product of the AR(1) steps' J0(2 pi f_D dt)^2 over the recorded round starts."""
    f_d = 1.0
    res = run(**{"devices.count": 20, "run.rounds": 5000, "channel.fading": "gauss-markov",
                 "channel.doppler_hz": f_d})
    steps = 2 * np.log(np.abs(j0(2 * np.pi * f_d * np.diff(res.rounds["start_s"]))))
    log_cov = np.concatenate(([0.0], np.cumsum(steps)))

    def theory(t1, t2, r1, r2):
        return np.exp(log_cov[r2] - log_cov[r1])

    series = power_series(res)
    for lag in (1, 2, 3):
        excess, se = lag_excess(series, lag, theory)
        assert abs(excess) < NSIG * se, (lag, excess, se)


def test_imperfect_csi_estimate_and_truth_have_the_mmse_statistics():
    """h = h_hat + e with e ~ CN(0, s2): the recorded gain is the estimate (E|h_hat|^2 = 1 - s2),
    the truth comes back from each all-UL correction's realised Shannon delay (E|h|^2 = 1), their
    difference has mean s2 and their correlation is 1 - s2."""
    s2 = 0.4
    res = run(**{"devices.count": 20, "devices.distance_m": 200.0, "policy.mode": "all-ul",
                 "run.rounds": 3000, "csi.estimation_error_variance": s2})
    d, system = res.device_rounds, res.population.system
    m = d["rejected"] == 1
    pl = res.devices["pathloss_gain"][d["device"][m]]
    b, delay, p = d["bandwidth_hz"][m], d["delay_s"][m], d["power_w"][m]
    true = np.expm1(math.log(2) * system.payload_bits / (b * delay)) * system.n0 * b / p / pl
    est = d["gain_ul"][m] / pl
    n = true.size
    assert abs(true.mean() - 1) < NSIG * true.std() / math.sqrt(n)
    assert abs(est.mean() - (1 - s2)) < NSIG * est.std() / math.sqrt(n)
    diff = true - est
    assert abs(diff.mean() - s2) < NSIG * diff.std() / math.sqrt(n)
    # the sample correlation's standard error is about (1 - r^2) / sqrt(n) ~ 0.005 here
    assert abs(np.corrcoef(true, est)[0, 1] - (1 - s2)) < 0.02


def test_correlated_array_gain_is_hypoexponential():
    """M = 4 antennas with exponential correlation 0.7: ||h||^2 = sum_i lam_i Exp(1), lam the
    eigenvalues of the correlation matrix (mean M, variance sum lam^2)."""
    m, rho = 4, 0.7
    lam = np.linalg.eigvalsh(exponential_correlation(m, rho))
    w = np.array([np.prod([li / (li - lj) for lj in lam if lj != li]) for li in lam])

    def cdf(x):
        return 1 - np.sum(w * np.exp(-np.asarray(x)[..., None] / lam), -1)

    res = run(**{"devices.count": 20, "server.antennas": m, "server.antenna_correlation": rho,
                 "run.rounds": 1500})
    d = res.device_rounds
    g = d["gain_ul"] / res.devices["pathloss_gain"][d["device"]]
    # rounds of one device are independent (Rayleigh per round): plain standard error
    assert abs(g.mean() - m) < NSIG * math.sqrt(np.sum(lam ** 2) / g.size)
    assert stats.kstest(g, cdf).pvalue > 1e-3
