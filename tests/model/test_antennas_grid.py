"""The antenna array's small-scale vectors on a grid of fading blocks, against theory.

Per block: h = L w with L L^H = R (the exponential correlation), so the covariance across the
antennas is R and ||h||^2 ~ Gamma(M, 1) for i.i.d. elements. From block to block: i.i.d.
(Rayleigh), or AR(1) per element with rho = J0(2 pi f_D T_c) (Gauss-Markov; rho^n over n
blocks, across the chunks the blocks are generated in), or the Jakes process of each element
read at the block's instant (J0 at every lag). A block's array gain is the squared norm of its
vectors, computed here with numpy's own norm.
"""
import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import j0

from multispin_sim.model.antennas import ServerArray, exponential_correlation

P_MIN = 1e-3


def _grid(fading, m=4, rho=0.0, k=50, reciprocal=True, doppler_hz=0.0, block_s=1e-3, chunk=64,
          seed=1):
    return ServerArray(m, rho).grid(fading, np.random.default_rng(seed), k, reciprocal,
                                    doppler_hz, block_s, chunk=chunk)


def _norms(h):
    return np.linalg.norm(h, axis=-1) ** 2


@pytest.mark.parametrize("rho", [0.0, 0.6])
def test_iid_blocks_have_the_array_covariance_and_are_independent(rho):
    m, k, n = 4, 50, 400
    grid = _grid("rayleigh", m, rho, k)
    ul, _ = grid.powers(0, n)                       # (n, K, M)
    h = ul.reshape(-1, m)
    cov = h.T @ h.conj() / len(h)
    # each entry: a mean of n K products of unit-variance CN variables, sd <= 1 / sqrt(n K)
    assert np.abs(cov - exponential_correlation(m, rho)).max() < 5 / math.sqrt(n * k)
    lag = np.mean(ul[1:] * ul[:-1].conj())
    assert abs(lag) < 5 / math.sqrt((n - 1) * k * m)
    if rho == 0:
        assert stats.kstest(_norms(ul).ravel(), stats.gamma(m).cdf).pvalue > P_MIN


def test_gauss_markov_blocks_are_ar1_per_element_across_chunks():
    m, k, f_d, tc, n = 4, 200, 20.0, 2e-3, 96   # chunks of 16 blocks: 5 chunk boundaries
    grid = _grid("gauss-markov", m, 0.5, k, doppler_hz=f_d, block_s=tc, chunk=16)
    ul, _ = grid.powers(0, n)
    rho = j0(2 * np.pi * f_d * tc)
    for lag in (1, 3):
        c = np.mean(ul[lag:] * ul[:-lag].conj()).real
        assert abs(c - rho ** lag) < 5 / math.sqrt((n - lag) * k * m / 8), lag   # 8: dependence
    edge = np.arange(15, n - 1, 16)          # the last block of a chunk and the next one's first
    c = np.mean(ul[edge + 1] * ul[edge].conj()).real
    assert abs(c - rho) < 5 / math.sqrt(len(edge) * k * m)
    assert abs(np.mean(np.abs(ul) ** 2) - 1) < 0.05


@pytest.mark.parametrize("fading", ["rayleigh", "gauss-markov", "none"])
def test_segments_are_the_blocks_array_gains(fading):
    grid = _grid(fading, 3, 0.4, 6, reciprocal=False, doppler_hz=30.0, chunk=8)
    t0 = 0.0123                                  # block 12, mid-block
    ul, dl = grid.powers(12, 12 + 20)
    for dev in (0, 5):
        np.testing.assert_allclose(grid.segments(dev, False, t0, 20), _norms(ul[:, dev]),
                                   rtol=1e-12)
        np.testing.assert_allclose(grid.segments(dev, True, t0, 20, start=4),
                                   _norms(dl[4:, dev]), rtol=1e-12)
        assert grid.block_power(dev, True, t0, 15) == pytest.approx(_norms(dl[3, dev]),
                                                                    rel=1e-12)
        np.testing.assert_allclose(grid.block_powers(dev, False, t0, 17, 3),   # within a chunk
                                   _norms(ul[5:8, dev]), rtol=1e-12)
    if fading == "none":
        np.testing.assert_allclose(_norms(ul), 3.0, rtol=1e-12)
    else:   # non-reciprocal links are independent
        assert abs(np.mean(ul * dl.conj())) < 5 / math.sqrt(ul.size)


def test_a_blocks_value_depends_on_its_index_only():
    a, b = _grid("rayleigh", chunk=16), _grid("rayleigh", chunk=16)
    late = b.at(1000)[0]                         # asked first, far ahead
    for n in range(0, 1001, 7):
        a.at(n)
    np.testing.assert_array_equal(a.at(1000)[0], late)
    r = _grid("rayleigh", reciprocal=True)
    ul, dl = r.at(3)
    assert dl is ul or np.array_equal(dl, ul)


def test_jakes_grid_reads_each_element_at_the_blocks_instant():
    m, k, f_d, tc = 4, 400, 50.0, 1e-3
    grid = _grid("jakes", m, 0.3, k, doppler_hz=f_d, block_s=tc)
    t0 = 0.01234
    times = grid.sample_times(t0, 6)
    assert times[0] == t0 and np.allclose(np.diff(times[1:]), tc)
    for dev in (0, 7):
        want = [_norms(grid.powers_at(t)[0][dev]) for t in times]
        np.testing.assert_allclose(grid.segments(dev, False, t0, 6), want, rtol=1e-12)
    # J0 at any lag, element by element (k m processes of unit power)
    tau = 0.0037
    h0, h1 = grid.powers_at(0.2)[0], grid.powers_at(0.2 + tau)[0]
    w0, w1 = h0 @ np.linalg.inv(grid.factor).T, h1 @ np.linalg.inv(grid.factor).T
    c = np.mean(w1 * w0.conj()).real
    assert abs(c - j0(2 * np.pi * f_d * tau)) < 5 / math.sqrt(k * m)


@pytest.mark.parametrize("fading", ["rayleigh", "jakes"])
def test_one_antenna_grids_give_blocks_as_vectors_of_one_element(fading):
    from multispin_sim.model.fading import FADING_MODELS

    grid = FADING_MODELS.lookup(fading).grid(np.random.default_rng(3), 5, False, 30.0, 1e-3,
                                             chunk=8)
    t0 = 0.0047
    ul, dl = grid.blocks(t0, 12, start=2)
    assert ul.shape == dl.shape == (10, 5, 1)
    for dev in (0, 4):
        np.testing.assert_allclose(ul[:, dev, 0] ** 2, grid.segments(dev, False, t0, 12, 2),
                                   rtol=1e-12)
        np.testing.assert_allclose(dl[:, dev, 0] ** 2, grid.segments(dev, True, t0, 12, 2),
                                   rtol=1e-12)
