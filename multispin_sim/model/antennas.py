"""An antenna array at the edge server: per-device channel vectors h_k in C^M (devices: one
antenna).

Small-scale vectors are h_k = L w_k, with w_k of M independent unit-variance CN(0, 1) entries
(one fading process per antenna element, the same fading model the channel uses for one
antenna) and L the Cholesky factor of the spatial correlation R (L L^H = R): the exponential
model R_ij = rho^|i - j| (rho = 0: i.i.d. Rayleigh; ``server.antenna_correlation``). The full
channel of device k is a_k = sqrt(G_k) h_k, G_k its large-scale gain.

The per-device scalar the paper's formulas read is the array gain G_k ||h_k||^2 (maximum-ratio
transmission and combining on an orthogonal band; |h_k|^2 for M = 1). ``ArrayGains`` is that
(K,) float array with the vectors attached (``vectors``: (K, M) complex a_k), so the schemes
that need the vectors (``model.mimo``) find them where the gains travel, and every consumer of
plain gains (the recorder, the closed-form kernels of the orthogonal schemes) reads the array.

Sources in time (one block per round, the fading stream, drawn ``block`` rounds at a time):
i.i.d. Rayleigh (2 normals per entry: real then imaginary, UL then DL), none (the line of
sight toward each device, ``steering_vectors``), Gauss-Markov (AR(1) per antenna element,
rho = J0(2 pi f_D dt) between round starts) and Jakes (one sum-of-sinusoids process per
antenna element). For M = 1 the channel keeps the fading model's own source (the same draws as
without this module).
"""
import math

import numpy as np

from .fading import (FADING_MODELS, BlockRows, GridFading, RoundChain, complex_gaussian,
                     gauss_markov_series)
from .jakes import ContinuousGrid, SumOfSinusoids
from .registry import Registry

# channel.fading -> the per-antenna source of that fading model
VECTOR_SOURCES = Registry("fading model (antenna array)")


def exponential_correlation(m, rho):
    """R_ij = rho^|i - j| (M, M): the exponential spatial correlation of a uniform linear array."""
    i = np.arange(int(m))
    return float(rho) ** np.abs(i[:, None] - i[None, :])


class ArrayGains(np.ndarray):
    """The (K,) array gains G_k ||h_k||^2 with the channel vectors ``vectors`` (K, M) attached:
    only the array the channel builds carries them; anything computed from it (a slice, a
    product) is a plain gain (``vectors`` None), so stale vectors never travel. ``memo``: the
    evaluations of assignments on this channel state (``model.mimo``), kept as long as the
    state: the draft objective asks the same assignments many times a round."""

    @classmethod
    def of(cls, vectors, gains=None):
        """The gains of channel vectors a_k (K, M): ||a_k||^2 (or ``gains`` where they are known
        exactly: a reported CQI bin's edge), with ``vectors`` attached."""
        vectors = np.asarray(vectors)
        out = (squared_norms(vectors) if gains is None else np.array(gains, float)).view(cls)
        out.vectors = vectors
        out.memo = {}
        return out

    @classmethod
    def scalar(cls, gains):
        """One antenna: the gains themselves, with a_k = sqrt(g_k) (a phase changes nothing)."""
        g = np.asarray(gains, dtype=float)
        out = g.view(cls)
        out.vectors = np.sqrt(g)[:, None].astype(complex)
        out.memo = {}
        return out

    def __array_finalize__(self, obj):
        self.vectors = None
        self.memo = None

    def __reduce__(self):  # pickles as a plain array (workers, record copies)
        return np.asarray(self).__reduce__()


def steering_vectors(bearing_rad, m, spacing=0.5, broadside_rad=0.0):
    """Line-of-sight vectors (K, M) of a uniform linear array: element i sits i d wavelengths
    along the array's axis (d = ``spacing``), so the plane wave of a device at bearing phi meets
    it with phase 2 pi d i sin(phi - broadside); unit modulus, ||s||^2 = M. A device on the
    broadside (or opposite it) sees 1 on every element; two devices mirrored across the axis
    (the same sin) see the same vector: a linear array cannot tell front from back."""
    sin = np.sin(np.asarray(bearing_rad, dtype=float) - broadside_rad)
    return np.exp((2j * np.pi * float(spacing)) * sin[:, None] * np.arange(int(m))[None, :])


def rician_weights(k_factor_db):
    """(a, b): the amplitudes of the line of sight and of the scattered part of a Rician
    element h = a s + b w at the K-factor ``k_factor_db`` (dB): a^2 = K / (K + 1),
    b^2 = 1 / (K + 1), so that E|h|^2 = 1 as for a Rayleigh element."""
    k = 10.0 ** (float(k_factor_db) / 10.0)
    return math.sqrt(k / (k + 1.0)), math.sqrt(1.0 / (k + 1.0))


class LineOfSight:
    """The devices' line-of-sight vectors now (K, M): the steering vectors of the array toward
    the bearings ``bearings()`` gives (``steering_vectors``; None: every device on the
    broadside, 1 on every element), made again only when the bearings change (a provider hands
    out the same array while they stay, so most reads compare nothing)."""

    def __init__(self, bearings, k, m, spacing=0.5, broadside_rad=0.0):
        self.bearings, self.m = bearings, int(m)
        self.spacing, self.broadside_rad = float(spacing), float(broadside_rad)
        self._src = self._phi = None
        self._s = np.ones((int(k), self.m), dtype=complex)

    def vectors(self):
        if self.bearings is not None:
            phi = self.bearings()
            if phi is not self._src:
                if self._phi is None or not np.array_equal(phi, self._phi):
                    self._phi = np.array(phi, dtype=float)
                    self._s = steering_vectors(self._phi, self.m, self.spacing,
                                               self.broadside_rad)
                self._src = phi
        return self._s


class Rician:
    """A Rician channel's elements h = a s + b w (``rician_weights`` of ``k_factor_db``): the
    direct path a s, s the devices' line of sight now (``los``, a ``LineOfSight``), and the
    scattered part w, of unit variance, the fading model's. ``device``: one device's rows."""

    def __init__(self, k_factor_db, los=None):
        self.a, self.b = rician_weights(k_factor_db)
        self.los = los

    def direct(self, device=slice(None)):
        return self.a * self.los.vectors()[device]

    def of(self, w, device=slice(None)):
        """a s + b w of scattered vectors w (..., K, M)."""
        return self.direct(device) + self.b * w

    def scattered(self, h, device=slice(None)):
        """w = (h - a s) / b of elements h (..., K, M)."""
        return (h - self.direct(device)) / self.b


def squared_norms(vectors):
    """||a||^2 of complex vectors along the last axis (the antennas): (K,) for rows (K, M)."""
    return np.einsum("...m,...m->...", vectors.real, vectors.real) + np.einsum(
        "...m,...m->...", vectors.imag, vectors.imag)


def channel_vectors(pathloss, h):
    """a = sqrt(G) h: the channel vectors of small-scale vectors h (..., K, M) under the
    large-scale gains G (K,)."""
    return np.sqrt(np.asarray(pathloss, dtype=float))[:, None] * h


def correlated(w, factor):
    """h = L w for white vectors w (K, M), or any shape with the antennas last: ``factor`` L of
    the correlation R = L L^H applied (None: i.i.d. elements, w itself)."""
    return w if factor is None else w @ factor.T


def matched_gain(estimate, truth):
    """|a_hat^H a|^2 / ||a_hat||^2 (K,): the gain of each stream whose maximum-ratio beam
    (MRT on the DL, MRC on the UL) follows the estimated vector a_hat (K, M) while the channel
    is a (K, M) (or a stack of channels (..., K, M): gains (..., K)); ||a||^2 when the estimate
    is exact, at most that (Cauchy-Schwarz). A zero estimate gives no beam: gain 0."""
    inner, norm = _along(estimate, truth)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(norm > 0, (inner.real ** 2 + inner.imag ** 2) / norm, 0.0)


def direct_share(estimate, direct):
    """c = a_hat^H d / ||a_hat||^2 (K,): the share of a direct path d (K, M) along each
    estimated vector a_hat (K, M); 0 for a zero estimate (no beam)."""
    inner, norm = _along(estimate, direct)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(norm > 0, inner / norm, 0.0)


def _along(estimate, x):
    """(a_hat^H x, ||a_hat||^2) of each estimated vector a_hat and vector x (..., K, M)."""
    return np.einsum("...km,...km->...k", np.conj(estimate), x), squared_norms(estimate)


def vectors_of(gains):
    """The channel vectors (K, M) travelling with ``gains``, or None (plain gains)."""
    return getattr(gains, "vectors", None)


class ServerArray:
    """The channel's antenna part: M antennas with the lower-triangular correlation factor
    ``factor`` L, L L^H = R (``exponential_correlation``; None for i.i.d. elements, rho = 0),
    a uniform linear array of element spacing ``spacing`` wavelengths facing ``broadside_rad``
    (the line of sight without fading: ``line_of_sight``); ``rounds`` gives the per-round
    source of small-scale vectors, ``gains`` a block's ``ArrayGains``."""

    def __init__(self, antennas=1, correlation=0.0, spacing=0.5, broadside_rad=0.0,
                 k_factor_db=None):
        self.m = int(antennas)
        if self.m < 1:
            raise ValueError(f"antennas = {self.m}: at least one is needed")
        self.rho = float(correlation)
        self.factor = (None if self.rho == 0
                       else np.linalg.cholesky(exponential_correlation(self.m, self.rho)))
        self.spacing, self.broadside_rad = float(spacing), float(broadside_rad)
        self.k_factor_db = k_factor_db

    @classmethod
    def from_scenario(cls, scenario):
        s = scenario.server
        return cls(s.antennas, s.antenna_correlation, s.antenna_spacing,
                   np.deg2rad(s.array_broadside_deg), scenario.channel.rician_k_db)

    @property
    def vectors(self):
        """Whether the channel is made of vectors: several antennas, or a line of sight in a
        fading channel (a Rician element is a complex gain, not a power)."""
        return self.m > 1 or self.k_factor_db is not None

    def line_of_sight(self, bearings, k):
        """The ``LineOfSight`` of ``k`` devices whose bearings from the server ``bearings()``
        gives (None: on the broadside)."""
        return LineOfSight(bearings, k, self.m, self.spacing, self.broadside_rad)

    def rician(self, los):
        """The ``Rician`` elements over the line of sight ``los``; None without a K-factor."""
        return None if self.k_factor_db is None else Rician(self.k_factor_db, los)

    @staticmethod
    def _extra(source, clock, los, rician):
        extra = {} if clock is None else {"clock": clock}
        if source.line_of_sight:
            extra["los"] = los
        elif rician is not None:
            extra["rician"] = rician
        return extra

    def rounds(self, fading, rng, k, reciprocal, doppler_hz, block=1024, clock=None, los=None,
               rician=None):
        """The per-round source of ``fading`` (a name of ``model.fading.FADING_MODELS``);
        ``clock``: the distance walked, for a source that follows it (``model.jakes``);
        ``los``: the devices' ``LineOfSight``, for the line of sight without fading;
        ``rician``: a ``Rician`` channel's elements."""
        source = VECTOR_SOURCES.lookup(fading)
        return source(rng, k, self.m, reciprocal, doppler_hz, block, self.factor,
                      **self._extra(source, clock, los, rician))

    def grid(self, fading, rng, k, reciprocal, doppler_hz, block_s, chunk=1024, clock=None,
             los=None, rician=None):
        """The small-scale vectors on a grid of fading blocks of ``block_s`` seconds (the
        interface of ``model.fading.GridFading``: ``powers_at`` gives the vectors (K, M) of an
        instant, ``segments`` each block's ||h_k||^2, the array gain under maximum-ratio beams
        that follow each block's channel)."""
        source = VECTOR_SOURCES.lookup(fading)
        return source.grid(rng, k, self.m, reciprocal, doppler_hz, block_s, self.factor, chunk,
                           **self._extra(source, clock, los, rician))

    def gains(self, pathloss, h_ul, h_dl, reciprocal):
        """(g_ul, g_dl): ``ArrayGains`` of a_k = sqrt(G_k) h_k for small-scale vectors (K, M);
        given powers |h_k|^2 (K,) (one antenna: the fading model's own source), g = G_k |h_k|^2."""
        if np.ndim(h_ul) == 1:
            g_ul = ArrayGains.scalar(pathloss * h_ul)
            return g_ul, (g_ul if reciprocal else ArrayGains.scalar(pathloss * h_dl))
        g_ul = ArrayGains.of(channel_vectors(pathloss, h_ul))
        return g_ul, (g_ul if reciprocal else ArrayGains.of(channel_vectors(pathloss, h_dl)))


class VectorLaw:
    """The law of the small-scale channel vectors of every device, h = L w with w ~ CN(0, I_M)
    (``factor`` L; None: i.i.d. elements), or in a ``Rician`` channel a s + b L w: what a
    shared band's draft objective samples when it plans against the channel's law
    (``policy.draft_update: once``), a stream's gain depending on the other streams' vectors.
    ``sample(rng, shape)``: draws (shape + (M,)), complex, shape ending in K;
    ``channel(pathloss, h)``: the channel vectors of draws h."""

    def __init__(self, m, factor=None, rician=None):
        self.m, self.factor, self.rician = int(m), factor, rician

    def sample(self, rng, shape):
        h = correlated(complex_gaussian(rng, tuple(shape) + (self.m,)), self.factor)
        return h if self.rician is None else self.rician.of(h)

    channel = staticmethod(channel_vectors)


class _VectorSource:
    """h (K, M) per link and round, ``factor`` correlating the antennas (h = L w); ``_w.take()``
    gives the next (K, 2, M) complex normals, UL then DL, from blocks of ``block`` rounds (the
    DL ones drawn also when reciprocal, so the UL draws never shift). ``los``: the devices'
    ``LineOfSight``, the whole channel of a source that is the line of sight alone
    (``line_of_sight``: no fading); ``rician``: a ``Rician`` channel, a s + b L w, the direct
    path the same both ways and L w the fading model's.
    """

    line_of_sight = False

    def __init__(self, rng, k, m, reciprocal, doppler_hz, block, factor, los=None,
                 rician=None):
        self.rng, self.k, self.m = rng, int(k), int(m)
        self.reciprocal, self.doppler_hz, self.block = reciprocal, float(doppler_hz), int(block)
        self.factor, self.los, self.rician = factor, los, rician
        self._w = BlockRows(lambda: complex_gaussian(self.rng, (self.block, self.k, 2, self.m)))

    def _correlate(self, w, device=slice(None)):
        """The elements of white vectors w (..., K, M), or of one ``device``'s (..., M)."""
        h = correlated(w, self.factor)
        return h if self.rician is None else self.rician.of(h, device)

    @classmethod
    def grid(cls, rng, k, m, reciprocal, doppler_hz, block_s, factor, chunk=1024, los=None,
             rician=None):
        """The vectors on a grid of blocks (``VectorGrid``, seeded by one draw of ``rng``)."""
        return VectorGrid(rng.integers(2**63), k, m, factor, cls.name, reciprocal, doppler_hz,
                          block_s, chunk, los, rician)

    def round_powers(self, now):
        """(h_ul, h_dl) small-scale vectors (K, M) at a round start (``now``)."""
        ul, dl = self._white(now)
        ul = self._correlate(ul)
        return ul, (ul if self.reciprocal else self._correlate(dl))


@VECTOR_SOURCES.register("rayleigh")
class IidVectors(_VectorSource):
    """i.i.d. CN(0, 1) per antenna and round."""

    def _white(self, now):
        w = self._w.take()
        return w[:, 0], w[:, 1]


@VECTOR_SOURCES.register("none")
class UnitVectors(_VectorSource):
    """No fading: the line of sight, h_k = s(phi_k) the array's steering vector toward device k
    (``steering_vectors``; ``los``: the vectors now, read at each round start, as the path loss
    is); without bearings h = 1 on every antenna (every device on the broadside). Reciprocal:
    one path both ways."""

    line_of_sight = True

    def _white(self, now):
        h = np.ones((self.k, self.m), dtype=complex) if self.los is None else self.los.vectors()
        return h, h

    def _correlate(self, w, device=slice(None)):
        return w


@VECTOR_SOURCES.register("gauss-markov")
class GaussMarkovVectors(_VectorSource):
    """AR(1) per antenna element between round starts (``fading.RoundChain``)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._chain = RoundChain(self.doppler_hz)

    def _white(self, now):
        h = self._chain.step(now, self._w.take())
        return h[:, 0], h[:, 1]


@VECTOR_SOURCES.register("jakes")
class JakesVectors(_VectorSource, ContinuousGrid):
    """One sum-of-sinusoids process per antenna element (``model.jakes``), UL then DL; with
    ``clock`` (``JakesProcess``) a device's elements all follow the distance it has walked.
    With ``block_s`` it is also the grid of blocks (``model.jakes.ContinuousGrid``): each
    block's array gain is ||h_k||^2 at the instant the transmission meets it."""

    def __init__(self, rng, k, m, reciprocal, doppler_hz, block, factor, clock=None,
                 block_s=None, los=None, rician=None):
        super().__init__(rng, k, m, reciprocal, doppler_hz, block, factor, los, rician)
        self.clock = clock
        self.block_s = None if block_s is None else float(block_s)
        rate = doppler_hz if clock is None else 1.0   # cycles per second, or per wavelength
        self.ul = SumOfSinusoids(rng, (self.k, self.m), rate)
        self.dl = SumOfSinusoids(rng, (self.k, self.m), rate)

    def _white(self, now):
        if self.clock is not None:
            x = self.clock(now)[:, None]   # (K, 1): one distance for a device's elements
            ul = self.ul.gains(x, each=True)
            return ul, (ul if self.reciprocal else self.dl.gains(x, each=True))
        ul = self.ul.gains(now)
        return ul, (ul if self.reciprocal else self.dl.gains(now))

    @classmethod
    def grid(cls, rng, k, m, reciprocal, doppler_hz, block_s, factor, chunk=1024, clock=None,
             los=None, rician=None):
        return cls(rng, k, m, reciprocal, doppler_hz, 1, factor, clock=clock, block_s=block_s,
                   los=los, rician=rician)

    def powers_at(self, t):
        """The vectors (h_ul, h_dl) (K, M) at the instant ``t``."""
        return self.round_powers(t)

    vectors_at = powers_at

    def power(self, device, dl, t):
        """||h||^2 of one device's link at the time(s) ``t`` (t.shape)."""
        link = self.dl if dl and not self.reciprocal else self.ul
        h = link.gains(t if self.clock is None else self.clock(t, device), device)
        return squared_norms(self._correlate(h, device))


class VectorGrid(GridFading):
    """``model.fading.GridFading`` for an antenna array: each block holds small-scale vectors
    h = L w (K, M), the white w i.i.d. CN(0, 1) per element, or AR(1) per element from block to
    block (rho = J0(2 pi f_D T_c); the correlation L commutes with the recursion, so h is AR(1)
    with the same rho); ``none`` is h = 1 on every antenna, or the line of sight now (``los``);
    ``rician``: a Rician channel's elements over the blocks' scattered vectors. Chunk c draws
    from its own seed (entropy, c) as the one-antenna grid does: UL then DL white vectors (the
    DL not drawn when reciprocal). ``powers`` and ``at`` give vectors; ``segments`` and
    ``block_power(s)`` the array gains ||h_k||^2."""

    def __init__(self, entropy, k, m, factor, fading, reciprocal, doppler_hz, block_s,
                 chunk=1024, los=None, rician=None):
        super().__init__(entropy, k, fading, reciprocal, doppler_hz, block_s, chunk)
        self.m, self.factor = int(m), factor
        self.static = FADING_MODELS.lookup(fading).static
        self.los, self.rician = los, rician   # no fading: the line of sight; or Rician elements
        self._mixed = {}   # chunk -> (the line of sight it was mixed with, its vectors)

    def _chunk(self, c):
        # every block holds the line of sight as it is now (it moves with the devices at round
        # starts, as the path loss does)
        if self.static and self.los is not None:
            h = np.broadcast_to(self.los.vectors(), (self.chunk, self.k, self.m))
            return h, h
        if self.rician is None:
            return super()._chunk(c)
        s = self.rician.los.vectors()
        got = self._mixed.get(c)
        if got is None or got[0] is not s:
            ul, dl = super()._chunk(c)
            ul_h = self.rician.of(ul)
            got = (s, (ul_h, ul_h if self.reciprocal else self.rician.of(dl)))
            if len(self._mixed) > 4:
                self._mixed.clear()
            self._mixed[c] = got
        return got[1]

    def _generate(self, c):
        shape = (self.chunk, self.k, 1 if self.reciprocal else 2, self.m)
        if self.static:
            ones = np.ones(shape[:2] + shape[3:], dtype=complex)
            return ones, ones
        w = complex_gaussian(self._rng(c), shape)
        if not self.iid:
            prev = (complex_gaussian(self._rng(c, (1,)), shape[1:]) if self._state is None
                    else self._state)
            w = gauss_markov_series(prev, self.rho, w)
            self._state = w[-1]
        h = correlated(w, self.factor)
        return h[:, :, 0], h[:, :, -1]

    def blocks(self, t0, m, start=0):
        """(UL, DL) vectors (m - start, K, M) of blocks start..m-1 counted from the one holding
        ``t0``."""
        n0 = self.index(t0)
        return self.powers(n0 + start, n0 + m)

    def segments(self, device, dl, t0, m, start=0):
        return squared_norms(super().segments(device, dl, t0, m, start))

    def block_power(self, device, dl, t0, n):
        return float(squared_norms(super().block_power(device, dl, t0, n)))

    def block_powers(self, device, dl, t0, n, most):
        return squared_norms(super().block_powers(device, dl, t0, n, most))
