"""Jakes fading (sum of sinusoids, model/jakes.py) against the theory of Clarke's model.

Statistics are taken over many independent processes (a finite sum of sinusoids is not ergodic
per realisation). Tolerances: ~4.5 standard errors of the estimate, plus for |h|^2 the model's
documented finite-M deviation (at most 0.52 / M from J0^2, 3 / (4 M) in the variance).
"""
import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import j0

import multispin_sim as ms
from multispin_sim.model.fading import FADING_MODELS
from multispin_sim.model.jakes import SINUSOIDS, JakesProcess, SumOfSinusoids

N = 6000  # independent processes per case
BIAS = 0.52 / SINUSOIDS


def _ensemble(f_d, block_s, lags, seed):
    """h(t0) and h(t0 + lag * block) for N independent processes, t0 random."""
    rng = np.random.default_rng(seed)
    proc = SumOfSinusoids(rng, (N,), f_d)
    t0 = rng.uniform(0.0, 100.0, N)
    omega, phase = proc.omega, proc.phase

    def at(t):  # process i at t[i]
        arg = t[:, None] * omega + phase
        z = np.cos(arg)
        x, y = z[:, :proc.m].sum(1), z[:, proc.m:].sum(1)
        return (x + 1j * y) / math.sqrt(proc.m)

    h0 = at(t0)
    return h0, [at(t0 + lag * block_s) for lag in lags]


@pytest.mark.parametrize("block_ms", [1.0, 10.0, 84.6])
@pytest.mark.parametrize("f_d", [1.0, 10.0, 200.0])
def test_lag_correlation_is_j0_at_every_lag(f_d, block_ms):
    lags = [1, 2, 3, 5, 10, 20, 50]
    h0, hs = _ensemble(f_d, block_ms * 1e-3, lags, seed=int(f_d * 7 + block_ms))
    p0 = np.abs(h0) ** 2
    for lag, h in zip(lags, hs):
        rho = j0(2 * np.pi * f_d * lag * block_ms * 1e-3)
        r = np.mean(h0 * np.conj(h))
        assert abs(r.real - rho) < 4.5 * math.sqrt((1 + rho * rho) / 2 / N) + 1e-3
        assert abs(r.imag) < 4.5 * math.sqrt(0.5 / N) + 1e-3
        c = np.corrcoef(p0, np.abs(h) ** 2)[0, 1]
        assert abs(c - rho ** 2) < 4.5 * 2 * (1 - rho ** 4) / math.sqrt(N) + BIAS + 2e-3


def test_two_instants_whatever_the_block_length():
    """f_D = 5 Hz, instants 111 ms apart: J0^2 = 0.144 through the engine's grid source for
    1, 10 and 84.6 ms blocks (the block length only sets the sampling)."""
    want = j0(2 * np.pi * 5 * 0.111) ** 2
    for block in (1e-3, 1e-2, 84.6e-3):
        proc = FADING_MODELS.lookup("jakes").grid(np.random.default_rng(3), N, True, 5.0, block)
        a, _ = proc.powers_at(0.0371)
        b, _ = proc.powers_at(0.0371 + 0.111)
        c = np.corrcoef(a, b)[0, 1]
        assert abs(c - want) < 4.5 * 2 * (1 - want ** 2) / math.sqrt(N) + BIAS


def test_marginals_exponential_power_uniform_phase():
    proc = SumOfSinusoids(np.random.default_rng(11), (20000,), 10.0)
    h = proc.gains(3.21)
    assert stats.kstest(np.abs(h) ** 2, "expon").pvalue > 1e-3
    assert stats.kstest((np.angle(h) + np.pi) / (2 * np.pi), "uniform").pvalue > 1e-3
    assert abs(np.mean(np.abs(h) ** 2) - 1) < 4.5 / math.sqrt(20000)


def level_crossing_rate(doppler_hz, rho):
    """Rice's rate of upward crossings of |h| / rms through rho: sqrt(2 pi) f_D rho e^{-rho^2}."""
    return math.sqrt(2.0 * math.pi) * doppler_hz * rho * math.exp(-rho * rho)


def average_fade_duration(doppler_hz, rho):
    """Mean time below rho: (e^{rho^2} - 1) / (rho f_D sqrt(2 pi)) (P(|h| < rho) / LCR)."""
    return math.expm1(rho * rho) / (rho * doppler_hz * math.sqrt(2.0 * math.pi))


def test_level_crossing_rate_and_fade_duration():
    f_d, n, dur = 10.0, 200, 3.0
    dt = 1 / (f_d * 100)
    proc = SumOfSinusoids(np.random.default_rng(5), (n,), f_d)
    t = np.arange(0, dur, dt)
    r = np.sqrt(proc.powers(t))  # (T, n), rms 1
    for rho in (0.3, 1.0):
        below = r < rho
        ups = np.count_nonzero(below[:-1] & ~below[1:])
        lcr = ups / (n * dur)
        want = level_crossing_rate(f_d, rho)
        # crossings ~ Poisson-like over n independent processes: 4.5 sigma plus 2 % for the
        # sampling at 100 / f_D
        assert abs(lcr - want) < 4.5 * math.sqrt(want / (n * dur)) + 0.02 * want
        afd = below.mean() * n * dur / max(ups, 1)  # time below / number of fades
        assert abs(afd - average_fade_duration(f_d, rho)) < 0.1 * average_fade_duration(f_d, rho)


def test_same_channel_whatever_the_order():
    a = JakesProcess(np.random.default_rng(2), 4, False, 30.0)
    b = JakesProcess(np.random.default_rng(2), 4, False, 30.0)
    late = a.powers_at(5.0)
    np.testing.assert_array_equal(b.powers_at(1.0)[0], a.powers_at(1.0)[0])
    np.testing.assert_array_equal(b.powers_at(5.0)[1], late[1])
    r = JakesProcess(np.random.default_rng(2), 4, True, 30.0)
    ul, dl = r.powers_at(5.0)
    assert dl is ul
    np.testing.assert_array_equal(ul, late[0])
    assert b.power(2, True, 5.0) == pytest.approx(late[1][2], rel=1e-12)


def test_engine_rounds_follow_j0():
    """Rounds of a fixed 50 ms: the round gains' |h|^2 lag correlation is J0(2 pi f_D lag)^2."""
    f_d, k = 3.5, 40
    r = ms.simulate(ms.load_scenario(None, overrides={
        "devices.count": k, "devices.distance_m": 10.0, "devices.draft_latency_ms": 5.0,
        "devices.draft_latency_spread": [1, 1], "server.verify_fixed_ms": 30.0,
        "payload.effective_vocab": 1, "payload.vocab": 2, "payload.prob_bits": 1,
        "channel.fading": "jakes", "channel.doppler_hz": f_d, "run.rounds": 600,
        "seed": 21, "server.verify_per_device_ms": 0.0}))
    dt = np.diff(r.rounds["start_s"])
    np.testing.assert_allclose(dt, 0.05, rtol=1e-5)
    dr, dev = r.device_rounds, r.devices
    h = (dr["gain_ul"] / dev["pathloss_gain"][dr["device"]]).reshape(-1, k)
    for lag in (1, 3):
        rho = j0(2 * np.pi * f_d * 0.05 * lag)
        # pooled over devices and starts: ~k independent processes, correlated in time
        c = np.corrcoef(h[:-lag].ravel(), h[lag:].ravel())[0, 1]
        assert abs(c - rho ** 2) < 0.08 + BIAS
