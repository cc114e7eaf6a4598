"""``PathProcess``: shadowing along a device's path is N(0, sigma^2) at every distance, has
Gudmundson's correlation exp(-m / d_corr) between values m metres apart on different grid
intervals (and the Gauss-Markov bridge's within one), and depends on the seed and the
distances only, not on how often it is read.

Tolerances: the sample correlation r of n normal pairs with correlation rho has standard
deviation (1 - rho^2) / sqrt(n) to first order, the sample standard deviation of n normals
sigma / sqrt(2 n), their mean sigma / sqrt(n); every check allows 4.5 of these (a false
failure about once in 3e5 per check)."""
import math

import numpy as np
import pytest

from multispin_sim.model.shadowing import GRID_POINTS_PER_DECORRELATION, PathProcess

SIGMA, CORR_M = 8.0, 50.0
SPACING = CORR_M / GRID_POINTS_PER_DECORRELATION
N = 8000


def _pairs(s0, s1, seed):
    """Values of N devices at s0, then at s1, each device's X(0) drawn N(0, sigma^2)."""
    rng = np.random.default_rng(seed)
    path = PathProcess(SIGMA * rng.standard_normal(N), CORR_M, rng, scale=SIGMA)
    return path.at(np.full(N, s0)), path.at(np.full(N, s1))


def _bridge(a):
    """(alpha, beta, gamma) of the Gauss-Markov bridge a metres into a grid interval: the
    conditional mean weights of both ends and the residual's standard deviation."""
    r, r1, r2 = (math.exp(-x / CORR_M) for x in (SPACING, a, SPACING - a))
    alpha = r1 * (1 - r2 * r2) / (1 - r * r)
    beta = r2 * (1 - r1 * r1) / (1 - r * r)
    return alpha, beta, math.sqrt((1 - r1 * r1) * (1 - r2 * r2) / (1 - r * r))


@pytest.mark.parametrize("s0, s1", [(0.0, 4 * SPACING),        # grid points
                                    (1.0, 36.0),               # other intervals, off the grid
                                    (2.5, 2.5 + 3 * SPACING),  # same place in other intervals
                                    (0.0, 150.0)])             # three decorrelation distances
def test_correlation_is_gudmundsons_across_grid_intervals(s0, s1):
    x0, x1 = _pairs(s0, s1, seed=int(10 * s1))
    rho = math.exp(-(s1 - s0) / CORR_M)
    r = np.corrcoef(x0, x1)[0, 1]
    assert abs(r - rho) < 4.5 * (1 - rho * rho) / math.sqrt(N)


def test_correlation_within_one_interval_is_the_bridges():
    # two points of one interval share its residual: corr = alpha alpha' + beta beta'
    # + rho (alpha beta' + alpha' beta) + gamma gamma', above exp(-m / d_corr) by < Delta / 4 d
    s0, s1 = 0.25 * SPACING, 0.75 * SPACING
    (a0, b0, g0), (a1, b1, g1) = _bridge(s0), _bridge(s1)
    grid = math.exp(-SPACING / CORR_M)
    expect = a0 * a1 + b0 * b1 + grid * (a0 * b1 + a1 * b0) + g0 * g1
    gudmundson = math.exp(-(s1 - s0) / CORR_M)
    assert 0 < expect - gudmundson < SPACING / (4 * CORR_M)
    x0, x1 = _pairs(s0, s1, seed=5)
    r = np.corrcoef(x0, x1)[0, 1]
    assert abs(r - expect) < 4.5 * (1 - expect * expect) / math.sqrt(N)


@pytest.mark.parametrize("s", [0.5 * SPACING, 41.7, 500.0])
def test_marginal_is_normal_with_the_shadowing_std(s):
    _, x = _pairs(0.0, s, seed=int(100 * s))
    assert abs(x.std() / SIGMA - 1) < 4.5 / math.sqrt(2 * N)
    assert abs(x.mean()) < 4.5 * SIGMA / math.sqrt(N)


def test_a_device_that_has_not_moved_keeps_its_value():
    x0 = np.array([3.0, -1.5, 0.25])
    path = PathProcess(x0, CORR_M, np.random.default_rng(1), scale=SIGMA)
    assert np.array_equal(path.at(np.zeros(3)), x0)
    assert np.array_equal(path.at(np.array([0.0, 2 * SPACING, 0.0]))[[0, 2]], x0[[0, 2]])


@pytest.mark.parametrize("shape", [(6,), (6, 3)])
def test_values_do_not_depend_on_how_often_they_are_read(shape):
    """Read at 400 random distances per device, or only at a few of them, or one device at a
    time: the same values where the reads meet (grid points and the bridge alike)."""
    x0 = np.random.default_rng(2).standard_normal(shape)
    speeds = np.linspace(0.5, 3.0, shape[0])
    times = np.sort(np.random.default_rng(3).uniform(0, 200.0, 400))
    often = PathProcess(x0, CORR_M, np.random.default_rng(4))
    seen = [often.at(speeds * t) for t in times]
    rarely = PathProcess(x0, CORR_M, np.random.default_rng(4))
    for k in (57, 58, 201, 399):
        np.testing.assert_allclose(rarely.at(speeds * times[k]), seen[k], rtol=0, atol=1e-12)
    # a pausing device: the others walk on while device 0 stays at its first distance
    paused = PathProcess(x0, CORR_M, np.random.default_rng(4))
    for k in (57, 201):
        s = speeds * times[k]
        s[0] = speeds[0] * times[57]
        got = paused.at(s)
        np.testing.assert_allclose(got[1:], seen[k][1:], rtol=0, atol=1e-12)
        np.testing.assert_allclose(got[0], seen[57][0], rtol=0, atol=1e-12)


def test_going_back_is_refused():
    path = PathProcess(np.zeros(2), CORR_M, np.random.default_rng(1))
    path.at(np.array([10.0, 10.0]))
    with pytest.raises(ValueError, match="went back"):
        path.at(np.array([10.0, 1.0]))


@pytest.mark.parametrize("shape", [(50,), (7, 3)])
def test_a_long_gap_gives_the_values_of_many_short_reads(shape):
    """Devices going thousands of grid points in one read (their own recursion) and the same
    devices read 400 times on the way (all at once, step by step): the same values, exactly,
    and a million grid points in one read take a bounded array, not one per step and device."""
    x0 = np.random.default_rng(1).standard_normal(shape)
    short, long = (PathProcess(x0, 16.0, np.random.default_rng(5), scale=3.0) for _ in range(2))
    end = np.linspace(0.0, 5000.0, shape[0]) + 0.37
    for t in np.linspace(0.0, 1.0, 400):
        stepped = short.at(end * t)
    long.at(np.zeros(shape[0]))
    assert np.array_equal(long.at(end), stepped)
    far = PathProcess(np.zeros(3), 16.0, np.random.default_rng(2))
    far.at(np.zeros(3))
    far.at(np.array([1e6, 1.5, 1.5]))   # 1e6 grid points of one device, one of the others
    assert far.index.tolist() == [1_000_000, 1, 1]
