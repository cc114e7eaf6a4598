"""CSI at decision time: what the draft controller and the reactive policy see (pure numpy).

The transmissions always meet the true channel; the decisions see an estimate of the small-scale
power |h|^2 of every device (UL and DL), built in three optional steps:

1. delay (``csi.delay_ms`` = tau): the CSI was measured tau before the decision. With a
   Gauss-Markov (Jakes) channel the measured h_old and the true h are jointly Gaussian with
   correlation rho = J0(2 pi f_D tau) (``channel.doppler_hz``), so given h (any phase: the law
   is rotation invariant) h_old = rho h + sqrt(1 - rho^2) w, w ~ CN(0, 1). rho = 1 (f_D = 0 or
   tau = 0) returns h exactly.
2. estimation noise (``csi.estimation_error_variance`` = s2): the MMSE estimate of h from pilots,
   h = h_hat + e with h_hat ~ CN(0, 1 - s2) and e ~ CN(0, s2) independent (orthogonality
   principle); given h, h_hat = (1 - s2) h + sqrt((1 - s2) s2) w. The decision uses |h_hat|^2.
3. CQI quantisation (``csi.cqi_quantisation``): the device reports a 4-bit CQI of its reference
   SNR P_ul G |h|^2 K / (N0 B) (full power on an equal 1/K share of the carrier, the operating
   point of a full round; set by the engine) on the link's CQI grid (the
   highest CQI whose switching SNR it reaches, ``McsLink.switch_db``); the decision takes the
   lower edge of the reported bin (CQI 0: one bin width below CQI 1's edge).

Perfect CSI (all three off) returns the very same arrays: decisions are exactly the paper's
(made on the true channel). Draws come from the ``csi`` random stream.

A server with M antennas (``estimate_vectors``) sees an estimate of each channel vector h in
C^M, the same steps element by element (the aging innovation correlated across the antennas as
the channel is; the estimation noise white), the CQI reporting the estimated array gain
||h_hat||^2. Its maximum-ratio beam (MRT, MRC) points along h_hat, so a stream meets the gain
|h_hat^H h|^2 / ||h_hat||^2 (``model.antennas.matched_gain``): for M = 1, |h|^2 as above.
"""
import numpy as np

from .antennas import ArrayGains, channel_vectors, correlated, squared_norms
from .fading import jakes_correlation


def _cn(rng, shape):
    """CN(0, 1) samples: all the real parts, then all the imaginary ones (the order of the
    CSI stream's draws; ``fading.complex_gaussian`` interleaves them, so it would move them)."""
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) / np.sqrt(2)


class PerfectCsi:
    """The decision sees the truth."""

    perfect = True

    def estimate(self, h_ul, h_dl, reciprocal, rng=None, pathloss=1.0):
        return h_ul, h_dl


class ImperfectCsi:
    """Delayed, noisy and/or quantised CSI (module docstring). ``ref_snr``: (K,) linear
    reference SNR per unit gain, P_ul K / (N0 B), used by the quantiser on the gain G |h|^2
    (with ``switch_db``, the CQI switching SNRs in dB, ascending)."""

    perfect = False

    def __init__(self, delay_s=0.0, doppler_hz=0.0, error_variance=0.0, quantise=False,
                 switch_db=None, ref_snr=None):
        self.rho = float(jakes_correlation(doppler_hz, delay_s)) if delay_s > 0 else 1.0
        self.s2 = float(error_variance)
        self.quantise = bool(quantise)
        self.switch_db = None if switch_db is None else np.asarray(switch_db, float)
        self.ref_snr = None if ref_snr is None else np.asarray(ref_snr, float)
        if self.quantise and (self.switch_db is None or self.ref_snr is None):
            raise ValueError("CQI quantisation needs the CQI grid and the reference SNRs")

    def _noisy(self, h, rng, factor=None, rician=None):
        """Steps 1 and 2 on complex gains h (any shape): aged, then the MMSE estimate;
        ``factor``: L of the antennas' correlation R = L L^H (rows of h are vectors), which the
        aging innovation shares with the channel (None: white). ``rician``: a Rician channel
        (``model.antennas.Rician``), whose direct path is known: the steps act on the
        scattered part (s2 relative to its power)."""
        if rician is not None:
            return rician.of(self._noisy(rician.scattered(h), rng, factor))
        if self.rho != 1.0:
            w = _cn(rng, h.shape)
            h = self.rho * h + np.sqrt(1.0 - self.rho ** 2) * correlated(w, factor)
        if self.s2 > 0.0:
            h = (1.0 - self.s2) * h + np.sqrt((1.0 - self.s2) * self.s2) * _cn(rng, h.shape)
        return h

    def _one(self, power, rng, pathloss):
        p = np.asarray(power, float)
        if self.rho == 1.0 and self.s2 == 0.0:
            est = p
        else:
            est = np.abs(self._noisy(np.sqrt(p).astype(complex), rng)) ** 2
        if self.quantise:
            est = self.quantised(est * pathloss) / pathloss
        return est

    @property
    def keeps_direction(self):
        """True when an estimated vector points along the true one (no aging, no noise: at
        most its length is quantised), so a beam on it is the true channel's."""
        return self.rho == 1.0 and self.s2 == 0.0

    def _vectors(self, h, rng, pathloss, factor, rician=None):
        """``ArrayGains`` of the estimated vectors a_hat = sqrt(G) h_hat; with CQI
        quantisation the reported array gain, the lower edge of its bin (exactly, as one
        antenna's), the vectors scaled to it (the beam keeps its way)."""
        h = self._noisy(np.asarray(h, complex), rng, factor, rician)
        pathloss = np.asarray(pathloss, dtype=float)
        a = channel_vectors(pathloss, h)
        if not self.quantise:
            return ArrayGains.of(a)
        power = squared_norms(h)
        reported = self.quantised(power * pathloss) / pathloss
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.sqrt(reported / power)
        return ArrayGains.of(a * np.where(power > 0, scale, 0.0)[:, None], pathloss * reported)

    def quantised(self, power):
        """A gain on the lower edge of its reported CQI bin (4 bits: CQI 0..15)."""
        edges = self.switch_db
        with np.errstate(divide="ignore"):
            snr_db = 10.0 * np.log10(power * self.ref_snr)
        cqi = np.searchsorted(edges, snr_db, side="right")
        below = edges[0] - (edges[1] - edges[0])
        lower_db = np.where(cqi > 0, edges[np.maximum(cqi - 1, 0)], below)
        return 10.0 ** (lower_db / 10.0) / self.ref_snr

    def estimate(self, h_ul, h_dl, reciprocal, rng, pathloss=1.0):
        """Estimated small-scale powers (UL, DL) from the true ones (K,); ``pathloss``: the
        large-scale gains (K,), for the quantiser."""
        est_ul = self._one(h_ul, rng, pathloss)
        est_dl = est_ul if reciprocal else self._one(h_dl, rng, pathloss)
        return est_ul, est_dl

    def estimate_vectors(self, h_ul, h_dl, reciprocal, rng, pathloss=1.0, factor=None,
                         rician=None):
        """The decisions' gains (UL, DL) of the vectors estimated from the true small-scale
        ones (K, M), with the estimates a_hat attached (``ArrayGains``); ``pathloss``: the
        large-scale gains G (K,); ``factor``: the antennas' correlation factor L (None: i.i.d.
        elements); ``rician``: a Rician channel's elements (``_noisy``)."""
        est_ul = self._vectors(h_ul, rng, pathloss, factor, rician)
        est_dl = est_ul if reciprocal else self._vectors(h_dl, rng, pathloss, factor, rician)
        return est_ul, est_dl
