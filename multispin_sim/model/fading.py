"""Small-scale fading draws: i.i.d. block fading and time-correlated (Gauss-Markov) fading.

Rayleigh block fading: the channel power |h|^2 ~ Exp(1) is drawn once per round (block) and held
constant within it. UL and DL are either the same draw (reciprocal: same subband, TDD) or two
independent draws.

Gauss-Markov fading (docs/model.md section 9): the complex gain h ~ CN(0, 1) evolves as
h(t + dt) = rho h(t) + sqrt(1 - rho^2) w, w ~ CN(0, 1) independent, with the Jakes correlation
rho = J0(2 pi f_D dt) over the time dt elapsed (f_D: the maximum Doppler frequency). The
marginal stays CN(0, 1), so |h|^2 stays Exp(1) (Rayleigh); the lag correlation of |h|^2 is
rho^2 (for a circular complex Gaussian pair, cov(|x|^2, |y|^2) = |E[x y*]|^2).

Blocks in time: a transmission that outlasts its fading block continues over the next ones, its
bits accumulating at each block's rate (``time_to_deliver``).
"""
import numpy as np

from .registry import Registry

# channel.fading -> class: what the channel asks of a fading process (it draws the numbers with
# the functions below)
FADING_MODELS = Registry("fading model")


class Fading:
    """A fading process. ``iid``: independent per block, drawn by ``small_scale_powers``
    (else a state that evolves in time with ``correlation``); ``static``: |h|^2 = 1 always."""

    iid = True
    static = False

    @classmethod
    def correlation(cls, doppler_hz, dt_s):
        """Correlation of the complex gain over ``dt_s`` (0: independent blocks)."""
        return 0.0


@FADING_MODELS.register("rayleigh")
class RayleighFading(Fading):
    """|h|^2 ~ Exp(1), i.i.d. per block (the paper)."""


@FADING_MODELS.register("none")
class NoFading(Fading):
    """|h|^2 = 1: the large-scale gain only."""

    static = True


@FADING_MODELS.register("gauss-markov")
class GaussMarkovFading(Fading):
    """h ~ CN(0, 1) with the Jakes correlation over the time elapsed (below)."""

    iid = False

    @classmethod
    def correlation(cls, doppler_hz, dt_s):
        return float(jakes_correlation(doppler_hz, dt_s))


IID_FADING = tuple(name for name, cls in FADING_MODELS.items() if cls.iid)


def rayleigh_power(rng, size):
    """|h|^2 of Rayleigh fading: Exp(1) samples of the given shape."""
    return rng.standard_exponential(size)


def small_scale_powers(rng, size, fading="rayleigh", reciprocal=True):
    """Return (|h_ul|^2, |h_dl|^2) arrays of shape ``size`` (i.i.d. models only).

    The generator is always advanced by the same amount for a given shape (two draws per
    entry, UL then DL, the second unused when reciprocal), so that switching ``reciprocal`` or
    the fading model does not shift any later draw of the same stream; and drawing shape
    (B, K) at once gives the same numbers as B draws of shape (K,).
    """
    if fading not in IID_FADING:
        extra = ("; 'gauss-markov' has a state: use gauss_markov_step / gauss_markov_series"
                 if fading == "gauss-markov" else "")
        raise ValueError(f"unknown i.i.d. fading model {fading!r}; allowed: {IID_FADING}{extra}")
    both = rayleigh_power(rng, tuple(np.atleast_1d(size)) + (2,))
    if fading == "none":
        ones = np.ones(both.shape[:-1])
        return ones, ones
    h_ul = both[..., 0]
    h_dl = h_ul if reciprocal else both[..., 1]
    return h_ul, h_dl


def channel_gains(rng, pathloss, fading="rayleigh", reciprocal=True):
    """Per-device (g_ul, g_dl) = G_k |h_k|^2 for one block; ``pathloss`` has shape (K,)."""
    pathloss = np.asarray(pathloss, dtype=float)
    h_ul, h_dl = small_scale_powers(rng, pathloss.shape, fading, reciprocal)
    return pathloss * h_ul, pathloss * h_dl


# ---------------------------------------------------------------------------- Gauss-Markov


def jakes_correlation(doppler_hz, dt_s):
    """rho = J0(2 pi f_D dt): the Jakes (Clarke) autocorrelation of h after ``dt_s`` seconds."""
    from scipy.special import j0  # imported here: scipy.special costs ~0.4 s to load

    return j0(2.0 * np.pi * np.asarray(doppler_hz, dtype=float) * np.asarray(dt_s, dtype=float))


def complex_gaussian(rng, size):
    """CN(0, 1) samples: independent real and imaginary parts of variance 1/2 each.

    Draws 2 normals per entry (real then imaginary, the last axis), so a (B, ...) draw equals B
    draws of shape (...).
    """
    z = rng.standard_normal(tuple(np.atleast_1d(size)) + (2,))
    return (z[..., 0] + 1j * z[..., 1]) * np.sqrt(0.5)


def gauss_markov_step(h, rho, w):
    """One Gauss-Markov step: rho h + sqrt(1 - rho^2) w (``w`` ~ CN(0, 1), |rho| <= 1)."""
    rho = np.asarray(rho, dtype=float)
    return rho * h + np.sqrt(np.maximum(1.0 - rho * rho, 0.0)) * w


def gauss_markov_series(h_prev, rho, w):
    """h_n = rho h_{n-1} + sqrt(1 - rho^2) w_n for n = 0..N-1 along axis 0 (constant rho).

    ``h_prev``: the state before the first step, shape ``w.shape[1:]``; ``w``: (N, ...) CN(0, 1)
    innovations. Returns the (N, ...) series (a first-order IIR filter, scipy's ``lfilter``).
    """
    from scipy.signal import lfilter

    rho = float(rho)
    b = np.sqrt(max(1.0 - rho * rho, 0.0))
    zi = (rho * np.asarray(h_prev))[None, ...]
    y, _ = lfilter([b], [1.0, -rho], w, axis=0, zi=zi)
    return y


def power(h):
    """|h|^2 of complex gains."""
    return h.real * h.real + h.imag * h.imag


# ---------------------------------------------------------------------------- blocks in time


def time_to_deliver(bits, rates_bps, durations_s):
    """Seconds to deliver ``bits`` over consecutive fading blocks, or inf if they do not suffice.

    Block j lasts ``durations_s[j]`` (the first one may be the remainder of a block already
    running) at ``rates_bps[j]``; the bits accumulate at each block's rate, so the transmission
    ends inside the first block whose cumulative capacity reaches ``bits``.
    Returns (seconds, blocks used).
    """
    rates = np.asarray(rates_bps, dtype=float)
    durations = np.asarray(durations_s, dtype=float)
    cum = np.cumsum(rates * durations)
    j = int(np.searchsorted(cum, bits, side="left"))
    if j >= cum.size:
        return float("inf"), cum.size
    before = cum[j - 1] if j else 0.0
    return float(np.sum(durations[:j])) + (bits - before) / rates[j], j + 1
