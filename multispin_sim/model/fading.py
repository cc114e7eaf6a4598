"""Small-scale fading processes: i.i.d. block fading, the Gauss-Markov AR(1), and Jakes.

What the channel asks a fading model (``Fading``): a source of the small-scale powers once per
round (``rounds``) or on a grid of blocks of the coherence time T_c (``grid``). Both return
(|h_ul|^2, |h_dl|^2), the DL the UL array itself when the links are reciprocal.

Rayleigh block fading: |h|^2 ~ Exp(1) is drawn once per round (or grid block) and held
constant within it. UL and DL are either the same draw (reciprocal: same subband, TDD) or two
independent draws.

Gauss-Markov fading (docs/components/fading.md) is a first-order autoregression per block:
h[n+1] = rho h[n] + sqrt(1 - rho^2) w, w ~ CN(0, 1) independent, rho = J0(2 pi f_D T) for the
time T between the two blocks (the grid's T_c, or the time between two round starts). Its
marginal is CN(0, 1) (|h|^2 ~ Exp(1)), and one step matches Jakes' correlation, but the
correlation after n blocks is rho^n, not J0(2 pi f_D n T): it depends on the block length
(for circular Gaussian h, the correlation of |h|^2 is its square, rho^(2n)).

Jakes fading (``jakes``, ``model/jakes.py``): a sum-of-sinusoids process in continuous time
with E[h(t) h*(t + tau)] = J0(2 pi f_D tau) at every lag, sampled at the channel's event times;
given a ``clock`` of the distance each device has walked (``follows_distance``), J0(2 pi
Delta_s / lambda) instead: each device's Doppler follows its own speed.

Blocks in time: a transmission that outlasts its fading block continues over the next ones, its
bits accumulating at each block's rate (``time_to_deliver``).
"""
import math

import numpy as np

from .jakes import JakesProcess
from .registry import Registry

# channel.fading -> class: what the channel asks of a fading process
FADING_MODELS = Registry("fading model")


class Fading:
    """A fading model. ``iid``: independent per block (``small_scale_powers`` draws them);
    ``static``: |h|^2 = 1 always; ``continuous``: a process in continuous time, so the CSI of
    an earlier instant is the same process read then (``csi.delay_ms``)."""

    iid = True
    static = False
    continuous = False
    follows_distance = False   # ``rounds`` / ``grid`` take a ``clock`` of distance walked

    @classmethod
    def correlation(cls, doppler_hz, dt_s):
        """Correlation of the complex gain over ``dt_s`` (0: independent blocks)."""
        return 0.0

    @classmethod
    def rounds(cls, rng, k, reciprocal, doppler_hz, block=1024):
        """A source of one block per round: ``round_powers(now)`` -> (ul, dl), each (K,)."""
        return IidRounds(rng, k, cls.name, reciprocal, block)

    @classmethod
    def grid(cls, rng, k, reciprocal, doppler_hz, block_s, chunk=1024):
        """The powers of K devices on a grid of blocks of ``block_s`` seconds (``GridFading``'s
        interface: ``powers_at``, ``segments``, ``block_power``, ``sample_key``, ...)."""
        return GridFading(rng.integers(2**63), k, cls.name, reciprocal, doppler_hz, block_s,
                          chunk=chunk)


@FADING_MODELS.register("rayleigh")
class RayleighFading(Fading):
    """|h|^2 ~ Exp(1), i.i.d. per block (the paper)."""


@FADING_MODELS.register("none")
class NoFading(Fading):
    """|h|^2 = 1: the large-scale gain only."""

    static = True


class _DopplerFading(Fading):
    """A time-correlated model whose correlation over dt is Jakes' J0(2 pi f_D dt)."""

    iid = False

    @classmethod
    def correlation(cls, doppler_hz, dt_s):
        return float(jakes_correlation(doppler_hz, dt_s))


@FADING_MODELS.register("gauss-markov")
class GaussMarkovFading(_DopplerFading):
    """AR(1) per block: rho = J0(2 pi f_D T) over one block of T seconds, rho^n over n blocks."""

    @classmethod
    def rounds(cls, rng, k, reciprocal, doppler_hz, block=1024):
        return GaussMarkovRounds(rng, k, reciprocal, doppler_hz, block)


@FADING_MODELS.register("jakes")
class JakesFading(_DopplerFading):
    """Sum-of-sinusoids Rayleigh process in continuous time: J0(2 pi f_D tau) at every lag."""

    continuous = True
    follows_distance = True

    @classmethod
    def rounds(cls, rng, k, reciprocal, doppler_hz, block=1024, clock=None):
        return JakesProcess(rng, k, reciprocal, doppler_hz, clock=clock)

    @classmethod
    def grid(cls, rng, k, reciprocal, doppler_hz, block_s, chunk=1024, clock=None):
        return JakesProcess(rng, k, reciprocal, doppler_hz, block_s, clock=clock)


IID_FADING = tuple(name for name, cls in FADING_MODELS.items() if cls.iid)


def small_scale_powers(rng, size, fading="rayleigh", reciprocal=True):
    """(|h_ul|^2, |h_dl|^2) arrays of shape ``size`` (i.i.d. models only). The generator
    advances by two draws per entry, UL then DL, whatever ``reciprocal`` or the model, so
    neither shifts a later draw of the stream; a (B, K) draw equals B draws of shape (K,)."""
    if fading not in IID_FADING:
        extra = ("; it has a state in time: ask FADING_MODELS.lookup(name).rounds / .grid"
                 if fading in FADING_MODELS else "")
        raise ValueError(f"unknown i.i.d. fading model {fading!r}; allowed: {IID_FADING}{extra}")
    both = rng.standard_exponential(tuple(np.atleast_1d(size)) + (2,))   # Rayleigh: Exp(1)
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
    """CN(0, 1) samples: independent real and imaginary parts of variance 1/2 each, drawn as 2
    normals per entry (real then imaginary), so a (B, ...) draw equals B draws of shape (...)."""
    z = rng.standard_normal(tuple(np.atleast_1d(size)) + (2,))
    return (z[..., 0] + 1j * z[..., 1]) * np.sqrt(0.5)


def gauss_markov_step(h, rho, w):
    """One Gauss-Markov step: rho h + sqrt(1 - rho^2) w (``w`` ~ CN(0, 1), |rho| <= 1)."""
    rho = np.asarray(rho, dtype=float)
    return rho * h + np.sqrt(np.maximum(1.0 - rho * rho, 0.0)) * w


def gauss_markov_series(h_prev, rho, w):
    """The series (N, ...) h_n = rho h_{n-1} + sqrt(1 - rho^2) w_n, n = 0..N-1 along axis 0,
    from the state ``h_prev`` (shape ``w.shape[1:]``) and the CN(0, 1) innovations ``w``
    (N, ...): a first-order IIR filter (scipy's ``lfilter``)."""
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


def time_to_deliver(bits, rates_bps, durations_s, start=0, carried=0.0):
    """(seconds, blocks used, bits carried by the blocks read) to deliver ``bits`` over
    consecutive fading blocks (seconds inf if they do not suffice). Block j lasts
    ``durations_s[j]`` (the first one may be the remainder of a block already running) at rate
    ``rates_bps[j - start]``; the bits accumulate at each block's rate, so the transmission
    ends inside the first block whose cumulative capacity reaches ``bits``. A long
    transmission is read in chunks: blocks before ``start`` were read already and carried
    ``carried`` bits."""
    rates = np.asarray(rates_bps, dtype=float)
    durations = np.asarray(durations_s, dtype=float)
    end = start + rates.size
    cum = np.cumsum(np.concatenate(([carried], rates * durations[start:end])))[1:]
    j = int(np.searchsorted(cum, bits, side="left"))
    if j >= cum.size:
        return float("inf"), end, float(cum[-1]) if cum.size else carried
    before = cum[j - 1] if j else carried
    return float(np.sum(durations[:start + j])) + (bits - before) / rates[j], start + j + 1, bits


# ---------------------------------------------------------------------------- sources in time


class BlockRows:
    """Rows of random blocks, one at a time: ``draw()`` returns the next block (its rows along
    the first axis), ``take()`` the next row. One numpy call per block instead of one per row,
    and the same numbers: a generator fills a block in the order its rows are taken."""

    def __init__(self, draw, block=()):
        self.draw = draw
        self.block = block
        self.i = -1  # the row taken last

    def take(self):
        self.i += 1
        if self.i == len(self.block):
            self.block = self.draw()
            self.i = 0
        return self.block[self.i]


class RoundChain:
    """Gauss-Markov gains from round start to round start: h = rho h_prev + sqrt(1 - rho^2) w,
    rho = J0(2 pi f_D dt), dt the time between the two starts (the first round: h = w, a
    CN(0, 1) draw)."""

    def __init__(self, doppler_hz):
        self.doppler_hz = float(doppler_hz)
        self.h = self.t = None

    def step(self, now, w):
        rho = 0.0 if self.h is None else jakes_correlation(self.doppler_hz, now - self.t)
        self.h = gauss_markov_step(w if self.h is None else self.h, rho, w)
        self.t = now
        return self.h


class IidRounds:
    """One i.i.d. block per round, drawn ``block`` rounds at a time (the same numbers as round
    by round: each round takes 2K exponentials from ``rng``, UL then DL)."""

    def __init__(self, rng, k, fading, reciprocal, block=1024):
        self.rng, self.k, self.fading = rng, int(k), fading
        self.reciprocal, self.block = reciprocal, int(block)
        self._ul = self._dl = np.empty((0, self.k))   # the block drawn (DL: the UL if reciprocal)
        self._i = -1   # the row of the round returned last

    def round_powers(self, now):
        self._i += 1
        if self._i == len(self._ul):
            h_ul, h_dl = small_scale_powers(self.rng, (self.block, self.k), self.fading,
                                            self.reciprocal)
            self._ul, self._dl, self._i = h_ul, (h_ul if self.reciprocal else h_dl), 0
        ul = self._ul[self._i]
        return ul, (ul if self.reciprocal else self._dl[self._i])

    def ahead(self):
        """(UL block, DL block, row of the round ``round_powers`` returned last): the rounds
        drawn ahead, for a caller that works out many rounds at once
        (``OFDMAChannel.gains_ahead``)."""
        return self._ul, self._dl, self._i


class GaussMarkovRounds:
    """One AR(1) block per round (``RoundChain``). Innovations come ``block`` rounds at a time:
    2K complex normals per round, UL then DL."""

    def __init__(self, rng, k, reciprocal, doppler_hz, block=1024):
        self.reciprocal = reciprocal
        self._w = BlockRows(lambda: complex_gaussian(rng, (int(block), int(k), 2)))
        self._chain = RoundChain(doppler_hz)

    def round_powers(self, now):
        p = power(self._chain.step(now, self._w.take()))
        ul = p[:, 0]
        return ul, (ul if self.reciprocal else p[:, 1])


class GridFading:
    """Small-scale powers of K devices on a time grid of blocks (block n = [n T_c, (n+1) T_c)),
    i.i.d. or AR(1) from block to block (rho = J0(2 pi f_D T_c)); an event at time t meets the
    value of its block. Block values are generated in chunks of ``chunk`` blocks; chunk c's
    draws come from its own generator, seeded by (entropy, c), so a block's value depends on
    its index only (the same channel whatever the policy or the workload). Gauss-Markov chunks
    continue the previous chunk's state: every chunk from 0 up to the one asked is generated in
    order, except that a gap of more than ``max_gap`` chunks (idle stretches much longer than
    the correlation time) is bridged by the exact AR(1) transition in one step; later blocks
    then have the right law but depend on when the gap occurred."""

    continuous = False

    def __init__(self, entropy, k, fading, reciprocal, doppler_hz, block_s, chunk=1024,
                 max_gap=256):
        self.entropy = int(entropy)
        self.k = k
        self.fading = fading
        model = FADING_MODELS.lookup(fading)
        self.iid = model.iid
        self.reciprocal = reciprocal
        self.block_s = float(block_s)
        self.chunk = int(chunk)
        self.max_gap = max_gap
        self.rho = model.correlation(doppler_hz, block_s)
        self._chunks = {}
        self._last = -1
        self._state = None  # Gauss-Markov: complex (K, 2) gains of the last generated block

    def _rng(self, c, extra=()):
        seed = np.random.SeedSequence((self.entropy, c) + extra)
        return np.random.Generator(np.random.PCG64(seed))

    def _generate(self, c):
        rng = self._rng(c)
        if self.iid:
            return small_scale_powers(rng, (self.chunk, self.k), self.fading, self.reciprocal)
        # UL innovations first, then DL (not drawn when reciprocal: the UL draws stay the same)
        links = 1 if self.reciprocal else 2
        w = np.stack([complex_gaussian(rng, (self.chunk, self.k)) for _ in range(links)], axis=-1)
        if self._state is None:
            start = self._rng(c, (1,))  # a stationary start, UL then DL like the innovations
            prev = np.stack([complex_gaussian(start, self.k) for _ in range(links)], axis=-1)
        else:
            prev = self._state
        h = gauss_markov_series(prev, self.rho, w)
        self._state = h[-1]
        p = power(h)
        h_ul = p[..., 0]
        return h_ul, (h_ul if self.reciprocal else p[..., 1])

    def _chunk(self, c):
        got = self._chunks.get(c)
        if got is not None:
            return got
        if not self.iid and c <= self._last:
            raise RuntimeError(f"fading chunk {c} asked after chunk {self._last} "
                               "(time goes forward)")
        if not self.iid and c > self._last + 1:
            gap = c - self._last - 1
            if gap > self.max_gap:
                if self._state is not None:
                    # exact in distribution: h after n steps = rho^n h + sqrt(1 - rho^2n) w
                    r = self.rho ** (gap * self.chunk)
                    w = complex_gaussian(self._rng(c, (2,)), self._state.shape)
                    self._state = gauss_markov_step(self._state, r, w)
                # else: chunk c starts the chain from a stationary draw
            else:
                for j in range(self._last + 1, c):
                    self._generate(j)
        got = self._generate(c)
        self._last = max(self._last, c)
        self._chunks[c] = got
        return got

    def powers(self, n0, n1):
        """Small-scale powers of blocks n0..n1-1 (n0 < n1), each (n1 - n0, K)."""
        c0, c1 = n0 // self.chunk, (n1 - 1) // self.chunk
        if c0 == c1:
            ul, dl = self._chunk(c0)
        else:
            parts = [self._chunk(c) for c in range(c0, c1 + 1)]
            ul, dl = (np.concatenate([p[i] for p in parts]) for i in (0, 1))
        lo = n0 - c0 * self.chunk
        return ul[lo:lo + n1 - n0], dl[lo:lo + n1 - n0]

    def at(self, n):
        ul, dl = self._chunk(n // self.chunk)
        i = n % self.chunk
        return ul[i], dl[i]

    # -- what the channel asks (the interface JakesProcess shares) ---------------------------
    def index(self, t):
        """The block of time t: floor(t / T_c)."""
        return math.floor(t / self.block_s)

    def powers_at(self, t):
        """(UL, DL) powers (K,) at time t: its block's."""
        return self.at(self.index(t))

    def sample_key(self, t):
        """Equal keys mean the same channel value: the block index."""
        return self.index(t)

    def planned_holds(self, t0, t_decided):
        """Whether a transmission starting at ``t0`` starts in the block its plan was made on
        at ``t_decided`` (it may start later: a correction waiting for a carried one)."""
        return t_decided is not None and self.index(t0) == self.index(t_decided)

    def blocks(self, t0, m, start=0):
        """(UL, DL) channel vectors (m - start, K, 1) of blocks start..m-1 counted from the one
        holding ``t0``: sqrt(|h|^2) (a phase changes nothing with one antenna)."""
        n0 = self.index(t0)
        return tuple(np.sqrt(x)[..., None] for x in self.powers(n0 + start, n0 + m))

    def segments(self, device, dl, t0, m, start=0):
        """|h|^2 of ``device`` over blocks start..m-1 counted from the one holding ``t0``."""
        n0 = self.index(t0)
        h_ul, h_dl = self.powers(n0 + start, n0 + m)
        return (h_dl if dl else h_ul)[:, device]

    def block_power(self, device, dl, t0, n):
        """|h|^2 of ``device`` in block n (whenever the transmission started)."""
        h_ul, h_dl = self.at(n)
        return (h_dl if dl else h_ul)[device]

    def block_powers(self, device, dl, t0, n, most):
        """``block_power`` of blocks n, n + 1, ...: at least one and at most ``most``, up to
        the end of n's chunk (so that no chunk is made before a block of it is asked)."""
        c = n // self.chunk
        ul, dl_ = self._chunk(c)
        lo = n - c * self.chunk
        return (dl_ if dl else ul)[lo:lo + max(1, most), device]

    def prune_before(self, t):
        """Forget the chunks that end before the block of ``t`` (time only moves forward)."""
        keep = self.index(t) // self.chunk
        for c in [c for c in self._chunks if c < keep]:
            del self._chunks[c]
