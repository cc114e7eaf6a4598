"""Small-scale fading draws.

Rayleigh block fading: the channel power |h|^2 ~ Exp(1) is drawn once per round (block) and held
constant within it. UL and DL are either the same draw (reciprocal: same subband, TDD) or two
independent draws.
"""
import numpy as np

FADING_MODELS = ("rayleigh", "none")


def rayleigh_power(rng, size):
    """|h|^2 of Rayleigh fading: Exp(1) samples of the given shape."""
    return rng.standard_exponential(size)


def small_scale_powers(rng, size, fading="rayleigh", reciprocal=True):
    """Return (|h_ul|^2, |h_dl|^2) arrays of shape ``size``.

    The generator is always advanced by the same amount for a given shape (two draws per
    entry, UL then DL, the second unused when reciprocal), so that switching ``reciprocal`` or
    the fading model does not shift any later draw of the same stream; and drawing shape
    (B, K) at once gives the same numbers as B draws of shape (K,).
    """
    if fading not in FADING_MODELS:
        raise ValueError(f"unknown fading model {fading!r}; allowed: {FADING_MODELS}")
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
