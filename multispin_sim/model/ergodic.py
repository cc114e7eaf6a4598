"""The law of the small-scale gain a correction meets, and its ergodic gain.

A device's gain is G X: G its large-scale gain, X its small-scale array gain ||h||^2 under
maximum-ratio transmission and combining on an orthogonal band (``model.antennas``; |h|^2 for
one antenna). With M Rayleigh elements correlated by R = L L^H, h = L w with w ~ CN(0, I), so
X = w^H R w = sum_i lambda_i E_i, lambda_i the eigenvalues of R and E_i ~ Exp(1) independent:
Gamma(M, 1) for i.i.d. elements (R = I), Exp(1) for one antenna. Without fading h = 1 on every
antenna: X = M.

The ergodic gain is the gain whose Shannon rate is the mean rate over that law:
E[ln(1 + rho X)] = ln(1 + rho g_e / G), rho = P G / (N0 b). One Rayleigh element has the closed
form of ``model.rates.ergodic_gain``. For M elements, E[ln(1 + rho X)] = int_0^inf (1 - Phi(s))
e^(-s / rho) ds / s (from ln(1 + a) = int_0^inf (1 - e^(-a s)) e^(-s) ds / s), Phi(s) =
E[e^(-s X)] = prod_i 1 / (1 + s lambda_i) the Laplace transform; i.i.d. elements give
e^(1/rho) sum_{k=1..M} E_k(1/rho) (Alouini and Goldsmith 1999, MRC capacity), whose e^(1/rho)
overflows at low SNR. The integral is taken with s = rho e^v by the trapezoid rule in v: the
integrand is analytic in the strip |Im v| < pi / 2 and decays like e^v on the left and
exp(-e^v) on the right, so steps of 1/4 leave an error near e^(-2 pi (pi / 2) / 0.25) = 7e-18,
below the rounding of the sum of a few hundred terms (about 1e-14 relative, measured from SNR
1e-4 to 1e7; tests/model/test_ergodic.py asks 1e-9 of it against quadrature).
"""
import math

import numpy as np

from .antennas import exponential_correlation
from .fading import FADING_MODELS, complex_gaussian
from .rates import ergodic_gain, snr

_STEP = 0.25         # trapezoid step in v = ln(s / rho)
_RIGHT = 4.0         # exp(-e^4) = 2e-24: the integrand is nothing beyond
_LEFT = 36.0         # the left tail beyond e^-36 of the integrand's scale: relative 2e-16


class GainLaw:
    """The law of the small-scale array gain X of every device: ``fixed`` (no fading: X = M)
    or a sum of Rayleigh elements with the correlation eigenvalues ``eigenvalues`` (M,), each
    with a line of sight of power ``direct`` (M,) in a Rician channel (None: none).
    ``ergodic_gain(G, P, b, N0)``: the gain whose Shannon rate is the mean over X;
    ``sample(rng, shape)``: draws of X; ``channel(G, X)``: the gains G X."""

    def __init__(self, eigenvalues=(1.0,), fixed=False, direct=None, paths=None, basis=None):
        lam = np.clip(np.asarray(eigenvalues, dtype=float).ravel(), 0.0, None)
        if lam.size < 1:
            raise ValueError("a gain law needs at least one antenna element")
        self.eigenvalues = lam
        self.m = lam.size
        self.fixed = bool(fixed)
        self._direct = None if direct is None else np.asarray(direct, dtype=float)
        self._paths, self._basis = paths, basis

    @property
    def direct(self):
        """The line of sight's power along each eigen-direction: (M,) for every device, or
        (K, M), |U^H d_k|^2 of each device's direct path d_k now (``paths``: a callable giving
        the direct paths a s (K, M); ``basis`` U: the eigenvectors of R); None: Rayleigh."""
        if self._paths is None:
            return self._direct
        return np.abs(self._paths() @ self._basis.conj()) ** 2

    @classmethod
    def of(cls, fading="rayleigh", antennas=1, correlation=0.0, rician=None):
        """The law under ``fading`` (a name of ``model.fading.FADING_MODELS``: every model but
        'none' has Rayleigh elements) at M = ``antennas`` elements with the exponential
        correlation ``correlation`` (``model.antennas.exponential_correlation``); with
        ``rician`` (``model.antennas.Rician``) a Rician channel, h = a s + b L w: for i.i.d.
        elements X / b^2 is a noncentral chi-square of 2M degrees of freedom (halved), whatever
        the direction of s; with correlated elements the law depends on each device's
        direction, its direct path read in R's eigenbasis at each use (without its line of
        sight: spread evenly over the eigen-directions)."""
        m = int(antennas)
        if FADING_MODELS.lookup(fading).static:
            return cls(np.ones(m), fixed=True)
        iid = m == 1 or correlation == 0
        lam = np.ones(m) if iid else np.linalg.eigvalsh(exponential_correlation(m, correlation))
        if rician is None:
            return cls(lam)
        a, b = rician.a, rician.b
        if iid or rician.los is None:
            return cls(b * b * lam, direct=np.full(m, a * a))
        # the eigenvectors in the order of eigvalsh's eigenvalues (both ascending)
        lam, basis = np.linalg.eigh(exponential_correlation(m, correlation))
        return cls(b * b * lam, paths=rician.direct, basis=basis)

    @property
    def one_rayleigh(self):
        """One Rayleigh element (the paper's |h|^2 ~ Exp(1))."""
        return (not self.fixed and self.direct is None and self.m == 1
                and self.eigenvalues[0] == 1.0)

    def sample(self, rng, shape):
        """Draws of X (``shape``): sum_i lambda_i E_i from ``shape`` x M exponentials (one
        Rayleigh element: ``shape`` exponentials, the paper's draws); M without fading; in a
        Rician channel sum_i |sqrt(direct_i) + sqrt(lambda_i) w_i|^2 from ``shape`` x M complex
        normals."""
        if self.fixed:
            return np.full(shape, float(self.m))
        direct = self.direct
        if direct is not None:   # (M,), or (K, M) against the last axis of shape
            w = complex_gaussian(rng, tuple(shape) + (self.m,))
            x = np.sqrt(direct) + np.sqrt(self.eigenvalues) * w
            return (x.real ** 2 + x.imag ** 2).sum(axis=-1)
        if self.one_rayleigh:
            return rng.standard_exponential(shape)
        return rng.standard_exponential(tuple(shape) + (self.m,)) @ self.eigenvalues

    @staticmethod
    def channel(pathloss, x):
        """The gains G X of draws X (..., K) (``model.antennas.VectorLaw.channel``'s twin)."""
        return pathloss * x

    def ergodic_gain(self, mean_gain, power_w, bandwidth_hz, n0):
        """The gain whose Shannon rate at ``power_w`` on ``bandwidth_hz`` is the mean rate of
        the gain ``mean_gain`` X (``mean_gain`` the large-scale gain; G M without fading)."""
        g = np.asarray(mean_gain, dtype=float)
        if self.fixed:
            return g * float(self.m)
        if self.one_rayleigh:
            return ergodic_gain(g, power_w, bandwidth_hz, n0)
        g, rho = np.broadcast_arrays(g, snr(power_w, g, bandwidth_hz, n0))
        direct = self.direct   # (M,), or (K, M): one row per device of g
        mean_log = mean_log1p(rho, self.eigenvalues, direct)
        some = rho > 0
        # expm1(E[ln(1 + rho X)]) / rho; at rho = 0 the log is linear: g E[X]
        mean_x = self.eigenvalues.sum() + (0.0 if direct is None else direct.sum(axis=-1))
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = np.where(some, np.expm1(mean_log) / np.where(some, rho, 1.0), mean_x)
        return g * factor


def mean_log1p(rho, eigenvalues, direct=None):
    """E[ln(1 + rho X)] for X = sum_i lambda_i E_i (E_i ~ Exp(1) independent), elementwise in
    ``rho`` >= 0: the trapezoid rule of the module docstring on one grid for every rho. With
    ``direct`` (M,), or (K, M) for ``rho`` (K,), X = sum_i |sqrt(direct_i) + sqrt(lambda_i)
    w_i|^2 (a Rician channel): Phi(s) gains the factor prod_i exp(-s direct_i / (1 + s
    lambda_i)), analytic in the same strip."""
    rho = np.asarray(rho, dtype=float)
    lam = np.asarray(eigenvalues, dtype=float)
    if not np.all(np.isfinite(rho) & (rho >= 0)):
        raise ValueError("the SNR of an ergodic gain must be finite and non-negative")
    if direct is not None:   # one row of line-of-sight powers per entry of rho
        direct = np.broadcast_to(np.asarray(direct, dtype=float), rho.shape + lam.shape)
        direct = direct.reshape(-1, lam.size)
    mean_x = lam.sum() if direct is None else lam.sum() + direct.sum(axis=-1)
    scale = rho.ravel() * mean_x
    out = np.zeros(scale.shape)
    some = scale > 0
    if not some.any():
        return out.reshape(rho.shape)
    left = -_LEFT - max(0.0, math.log(float(scale[some].max())))
    v = np.arange(left, _RIGHT + _STEP, _STEP)
    weight = np.exp(-np.exp(v)) * _STEP
    s = rho.ravel()[some, None] * np.exp(v)[None, :]                     # (n, V)
    if direct is None:
        lam, count = np.unique(lam, return_counts=True)   # i.i.d. elements: one term, M times
        log_phi = np.log1p(s[..., None] * lam) @ count.astype(float)      # -ln Phi(s)
    else:
        x = s[..., None]
        d = direct[some][:, None, :]
        log_phi = (np.log1p(x * lam) + x * d / (1.0 + x * lam)).sum(axis=-1)
    out[some] = -np.expm1(-log_phi) @ weight                               # 1 - Phi, no loss
    return out.reshape(rho.shape)
