"""Jakes fading that follows the distance a device walks (``channel.doppler`` 'speed'): the
process read at s_k(t) / lambda instead of f_D t, and ``RandomWaypoint.travelled_at``.

Statistics are over N independent processes (a finite sum of sinusoids is not ergodic). For
E[h0 h*] = rho (real), Re(h0 h*) has variance (1 + rho^2) / 2 for circular Gaussian h, so the
sample mean of N has standard error sqrt((1 + rho^2) / (2 N)) (the imaginary part: sqrt(1 /
(2 N))); tolerances are 4.5 standard errors, plus 1e-3 for the sum's finite M (the complex
correlation is exactly J0 for every M; only higher moments deviate, ``model.jakes``).
"""
import math

import numpy as np
import pytest
from scipy.special import j0

from multispin_sim.model.fading import FADING_MODELS
from multispin_sim.model.jakes import SumOfSinusoids
from multispin_sim.model.mobility import RandomWaypoint, Wavelengths

N = 6000
LAMBDA = 299_792_458.0 / 3.5e9   # metres, 3.5 GHz


def _tol(rho):
    return 4.5 * math.sqrt((1 + rho * rho) / 2 / N) + 1e-3


def _pair(x0, x1, seed):
    """h of N processes of one wavelength per unit of clock, at clocks x0 and x1 (each (N,))."""
    proc = SumOfSinusoids(np.random.default_rng(seed), (N,), 1.0)
    return proc.gains(x0, each=True), proc.gains(x1, each=True)


@pytest.mark.parametrize("v, tau", [(1.4, 0.004), (1.4, 0.02), (16.7, 0.001), (16.7, 0.004)])
def test_constant_speed_is_jakes_at_v_over_lambda(v, tau):
    """(1) a device at speed v: E[h(t) h*(t + tau)] = J0(2 pi v tau / lambda)."""
    rng = np.random.default_rng(int(v * 100 + tau * 1e4))
    t0 = rng.uniform(0.0, 100.0, N)
    h0, h1 = _pair(v * t0 / LAMBDA, v * (t0 + tau) / LAMBDA, seed=int(v * 10 + tau * 1e3))
    rho = j0(2 * np.pi * v * tau / LAMBDA)
    r = np.mean(h0 * np.conj(h1))
    assert abs(r.real - rho) < _tol(rho)
    assert abs(r.imag) < 4.5 * math.sqrt(0.5 / N) + 1e-3


def test_two_speeds_at_one_lag_differ_as_j0_says():
    """(2) walking and driving at the same lag: each at its own J0, and told apart."""
    tau = 0.005
    rhos = {}
    for v, seed in ((1.4, 11), (8.0, 12)):
        t0 = np.random.default_rng(seed).uniform(0.0, 50.0, N)
        h0, h1 = _pair(v * t0 / LAMBDA, v * (t0 + tau) / LAMBDA, seed)
        rhos[v] = np.mean(h0 * np.conj(h1)).real
        rho = j0(2 * np.pi * v * tau / LAMBDA)
        assert abs(rhos[v] - rho) < _tol(rho)
    # 0.94 - (-0.24)
    want = j0(2 * np.pi * 1.4 * tau / LAMBDA) - j0(2 * np.pi * 8.0 * tau / LAMBDA)
    assert abs((rhos[1.4] - rhos[8.0]) - want) < 2 * _tol(0.0)


def test_correlation_follows_the_distance_not_the_time():
    """(4) v for T, then 2v: h at T - a and T + b correlate as J0(2 pi (v a + 2 v b) /
    lambda), not as J0 of either speed times the lag (both rejected by the same test)."""
    v, T, a, b = 3.0, 10.0, 0.002, 0.003   # J0: 0.36; the wrong ones 0.72 and 0.11

    def clock(t, device=None):   # wavelengths walked: the same path for every process
        t = np.asarray(t, dtype=float)
        s = np.where(t < T, v * t, v * T + 2 * v * (t - T)) / LAMBDA
        return s if device is not None else np.multiply.outer(s, np.ones(N))

    proc = FADING_MODELS.lookup("jakes").rounds(np.random.default_rng(21), N, True, 0.0,
                                                clock=clock)
    sos = proc.ul
    h0 = sos.gains(clock(T - a), each=True)
    h1 = sos.gains(clock(T + b), each=True)
    r = np.mean(h0 * np.conj(h1)).real
    rho = j0(2 * np.pi * (v * a + 2 * v * b) / LAMBDA)
    assert abs(r - rho) < _tol(rho)
    for wrong in (j0(2 * np.pi * v * (a + b) / LAMBDA), j0(2 * np.pi * 2 * v * (a + b) / LAMBDA)):
        assert abs(r - wrong) > _tol(wrong)
    # the powers the channel reads are |h|^2 of the same process
    np.testing.assert_allclose(proc.powers_at(T + b)[0], np.abs(h1) ** 2, rtol=1e-12)


def _walk(k=40, pause=3.0, speed=(1.0, 10.0), seed=5):
    rng = np.random.default_rng(seed)
    start = np.column_stack([rng.uniform(100, 300, k), np.zeros(k)])
    return RandomWaypoint(start, (0.0, 0.0), (50.0, 300.0), speed, pause,
                          np.random.default_rng(seed + 1))


def test_travelled_at_is_the_walk_ahead_and_behind_and_does_not_move_it():
    """s_k(t) asked ahead of the walk, and behind it back to the previous leg, is the
    ``travelled`` the walk reaches at t, back through the pause before the previous leg;
    asking leaves the trajectory as it was."""
    times = np.arange(0.0, 300.0, 0.25)
    plain = _walk()
    truth = []
    for t in times:
        plain.advance(t)
        truth.append((plain.travelled.copy(), plain.pos.copy()))
    asked = _walk()
    np.testing.assert_allclose(asked.travelled_at(times), [s for s, _ in truth], atol=1e-9)
    for i, t in enumerate(times):
        asked.advance(t)
        np.testing.assert_array_equal(asked.pos, truth[i][1])   # the same trajectory
        back = max(i - 4, 0)   # one second behind: within the leg before the current one
        np.testing.assert_allclose(asked.travelled_at(times[back]), truth[back][0], atol=1e-9)
        np.testing.assert_allclose(asked.travelled_at(times[back:i + 1], 3),
                                   [s[3] for s, _ in truth[back:i + 1]], atol=1e-9)
    # exact back through the pause before the previous leg (every device, every instant)
    again = _walk()
    for i, t in enumerate(times):
        again.advance(t)
        for d in range(again.k):
            since = times[(times >= again._pdep[d] - again.pause_s) & (times <= t)]
            if again._pdep[d] > 0 and len(since):
                rows = np.searchsorted(times, since)
                np.testing.assert_allclose(again.travelled_at(since, d),
                                           [truth[j][0][d] for j in rows], atol=1e-9)
        if i > 200:
            break
    # before t = 0 the first leg's speed runs backwards
    fresh = _walk()
    np.testing.assert_allclose(fresh.travelled_at(-0.5), -0.5 * fresh._v)


@pytest.mark.parametrize("pause, speed, region, far", [(5.0, (10.0, 20.0), (100.0, 500.0), 2237.0),
                                                       (0.0, (10.0, 20.0), (0.0, 1.0), 7.0)])
def test_looking_ahead_leaves_the_walk_bit_for_bit(pause, speed, region, far):
    """Driving walks whose legs end between rounds (short legs, long gaps now and then): a
    walk asked for s_k(t) ahead and behind at every round reaches the same positions and
    distances, to the bit, as one never asked (the legs drawn ahead must not change how the
    walk batches, and so rounds, its sums of leg times)."""
    def make():
        rng = np.random.default_rng(3)
        start = np.column_stack([rng.uniform(-300, 300, 60), rng.uniform(-300, 300, 60)])
        return RandomWaypoint(start, (0.0, 0.0), region, speed, pause, rng)
    asked, plain = make(), make()
    gaps = np.random.default_rng(11)
    t = 0.0
    for r in range(300):
        t += float(gaps.exponential(0.3 if r % 50 else far / 5))
        for lag in (-0.005, -2.0, 0.005, far):
            asked.travelled_at(t + lag)
        np.testing.assert_array_equal(asked.advance(t), plain.advance(t))
        np.testing.assert_array_equal(asked.travelled, plain.travelled)


def test_paused_device_keeps_its_gain_exactly():
    """(3) between arriving at a waypoint and leaving it the device's channel does not move."""
    walk = _walk(k=8, pause=5.0)
    proc = FADING_MODELS.lookup("jakes").grid(np.random.default_rng(2), 8, False, 0.0, 1e-3,
                                              clock=Wavelengths(walk, LAMBDA))
    walk.advance(1.0)
    checked = 0
    for i in range(8):
        arrive = walk._dep[i] + walk._length[i] / walk._v[i]
        if walk._end[i] - arrive < 5.0 - 1e-9:
            continue
        inside = arrive + np.array([0.1, 1.7, 4.9])
        for dl in (False, True):
            p = proc.power(i, dl, inside)
            assert p[0] == p[1] == p[2]
            assert proc.block_power(i, dl, inside[0], proc.index(inside[2])) == p[0]
        walking = walk._dep[i] + 0.3 * walk._length[i] / walk._v[i] + np.array([0.0, 0.05])
        assert proc.power(i, False, walking)[0] != proc.power(i, False, walking)[1]
        checked += 1
    assert checked == 8
