"""The OFDMA channel: the fading process, and transmissions that run over it in parallel.

Three ways the small-scale fading evolves (``channel.fading`` x ``channel.coherence_time_ms``):

- one block per round, i.i.d. (``rayleigh`` / ``none`` without a coherence time; the paper):
  ``new_block`` draws the round's fading at its start, and it holds for the whole round;
- one block per round, Gauss-Markov (``gauss-markov`` without a coherence time): each round's
  block follows the previous one with rho = J0(2 pi f_D dt), dt = the time between their starts;
- blocks of the coherence time T_c on a fixed time grid (a coherence time given), i.i.d. or
  Gauss-Markov with rho = J0(2 pi f_D T_c) from block to block (``GridFading``). The round start
  and the reactive decision each see the block they fall in; a correction that outlasts its
  block continues over the next blocks, its bits accumulating at each block's rate, with the
  mode and power decided on the CSI of its start.

``new_block(now)`` is the CSI at a round start (the draft controller's), ``csi(now)`` the CSI at
the reactive decision, ``transmit(...)`` the SimPy side of one correction.
"""
import math

import numpy as np

from ..model.fading import (FADING_MODELS, complex_gaussian, gauss_markov_series, gauss_markov_step,
                            jakes_correlation, power, small_scale_powers, time_to_deliver)
from ..model.rates import shannon_rate
from ..model.reactive import UL
from .guards import LimitReached

_MAX_BLOCKS = 1 << 20  # default bound of the fading blocks of one correction (limits.py)


class GridFading:
    """Small-scale powers of K devices on a time grid of blocks (block n = [n T_c, (n+1) T_c)).

    Block values are generated in chunks of ``chunk`` blocks; chunk c's draws come from its own
    generator, seeded by (entropy, c), so a block's value depends on its index only (the same
    channel whatever the policy or the workload). Gauss-Markov chunks continue the previous
    chunk's state: every chunk from 0 up to the one asked is generated in order, except that a
    gap of more than ``max_gap`` chunks (idle stretches much longer than the correlation time)
    is bridged by the exact AR(1) transition in one step -- then later blocks have the right
    law but depend on when the gap occurred.
    ``powers(n0, n1)`` -> (|h_ul|^2, |h_dl|^2), each (n1 - n0, K).
    """

    def __init__(self, entropy, k, fading, reciprocal, doppler_hz, block_s, chunk=1024,
                 max_gap=256):
        self.entropy = int(entropy)
        self.k = k
        self.fading = fading
        self.iid = FADING_MODELS.lookup(fading).iid
        self.reciprocal = reciprocal
        self.block_s = float(block_s)
        self.chunk = int(chunk)
        self.max_gap = max_gap
        self.rho = FADING_MODELS.lookup(fading).correlation(doppler_hz, block_s)
        self._chunks = {}
        self._last = -1
        self._state = None  # Gauss-Markov: complex (K, 2) gains of the last generated block

    def _rng(self, c, extra=()):
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence((self.entropy, c) + extra)))

    def _generate(self, c):
        rng = self._rng(c)
        if self.iid:
            h_ul, h_dl = small_scale_powers(rng, (self.chunk, self.k), self.fading, self.reciprocal)
            return h_ul, h_dl
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
            raise RuntimeError(f"fading chunk {c} asked after chunk {self._last} (time goes forward)")
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
            lo = n0 - c0 * self.chunk
            return ul[lo:lo + n1 - n0], dl[lo:lo + n1 - n0]
        parts = [self._chunk(c) for c in range(c0, c1 + 1)]
        ul = np.concatenate([p[0] for p in parts])
        dl = np.concatenate([p[1] for p in parts])
        lo = n0 - c0 * self.chunk
        return ul[lo:lo + n1 - n0], dl[lo:lo + n1 - n0]

    def at(self, n):
        ul, dl = self._chunk(n // self.chunk)
        i = n % self.chunk
        return ul[i], dl[i]

    def prune(self, n):
        """Forget the chunks that end before block n (time only moves forward)."""
        keep = n // self.chunk
        for c in [c for c in self._chunks if c < keep]:
            del self._chunks[c]


class OFDMAChannel:
    """The OFDMA channel shared by the K devices of one cell.

    i.i.d. per-round fading is drawn ``block`` rounds at a time (the same numbers as round by
    round: each round takes 2K exponentials from the ``fading`` stream, UL then DL).
    ``pathloss`` is the current large-scale gain (K,); mobility replaces it (``set_pathloss``).
    """

    def __init__(self, system, rng, fading="rayleigh", reciprocal=True, block=1024,
                 doppler_hz=0.0, coherence_s=None, moving=False):
        self.system = system
        self.rng = rng
        self.fading = fading
        self.reciprocal = reciprocal
        self.block = block
        self.doppler_hz = float(doppler_hz)
        self.coherence_s = None if coherence_s is None else float(coherence_s)
        self.pathloss = system.pathloss
        self.bits = float(system.payload_bits)
        self.round_bits = None  # per-device bits of this round's corrections (token model)
        self.n0 = float(system.n0)
        self._ul = self._dl = np.empty((0, system.k))
        self._next = 0
        self._static = not moving  # path loss fixed: i.i.d. rounds use precomputed gains
        self._w = None  # Gauss-Markov per-round innovations, complex (block, K, 2)
        self._h = None  # Gauss-Markov per-round state, complex (K, 2)
        self._t = None
        self.g_ul = None
        self.g_dl = None
        self.grid = None
        if self.coherence_s is not None:
            self.grid = GridFading(rng.integers(2**63), system.k, fading, reciprocal,
                                   self.doppler_hz, self.coherence_s, chunk=block)
        elif fading not in FADING_MODELS:
            raise ValueError(f"unknown fading model {fading!r}")
        self.fading_model = FADING_MODELS.lookup(fading)
        self.max_blocks = _MAX_BLOCKS  # the scenario's limits.max_blocks_per_transmission
        self.transmissions = 0
        self.multi_block = 0
        self.blocks_used = 0

    @property
    def dynamic_csi(self):
        """True when the reactive decision's CSI may differ from the round start's."""
        return self.grid is not None

    @property
    def plain_transmit(self):
        """True when ``transmit`` is one timeout of the planned delay, which it returns (one
        fading block per round): the devices may then wait the planned delay themselves and the
        realised delays are the planned ones. A channel whose ``transmit`` does anything else
        says False (``engine.link.LinkChannel``)."""
        return self.grid is None

    def set_pathloss(self, gains):
        """New large-scale gains (K,) from now on (mobility, at a round start; needs ``moving``)."""
        if self._static:
            raise RuntimeError("OFDMAChannel(moving=False) has a fixed path loss")
        self.pathloss = gains

    # -- CSI -----------------------------------------------------------------------------------
    def block_index(self, t):
        return math.floor(t / self.coherence_s)

    def new_block(self, now=0.0):
        """The fading at a round start; returns (g_ul, g_dl), path loss included, shape (K,)."""
        if self.grid is not None:
            n = self.block_index(now)
            self.grid.prune(n)
            return self._grid_gains(n)
        if self.fading_model.iid:
            if self._next == len(self._ul):
                h_ul, h_dl = small_scale_powers(self.rng, (self.block, self.system.k), self.fading,
                                                self.reciprocal)
                if self._static:
                    self._ul = self.pathloss * h_ul
                    self._dl = self._ul if self.reciprocal else self.pathloss * h_dl
                else:
                    self._ul, self._dl = h_ul, (h_ul if self.reciprocal else h_dl)
                self._next = 0
            if self._static:
                self.g_ul = self._ul[self._next]
                self.g_dl = self.g_ul if self._dl is self._ul else self._dl[self._next]
            else:
                self.g_ul = self.pathloss * self._ul[self._next]
                self.g_dl = self.g_ul if self.reciprocal else self.pathloss * self._dl[self._next]
            self._next += 1
            return self.g_ul, self.g_dl
        # Gauss-Markov, one block per round
        if self._w is None or self._next == len(self._w):
            self._w = complex_gaussian(self.rng, (self.block, self.system.k, 2))
            self._next = 0
        w = self._w[self._next]
        self._next += 1
        rho = 0.0 if self._h is None else jakes_correlation(self.doppler_hz, now - self._t)
        self._h = gauss_markov_step(w if self._h is None else self._h, rho, w)
        self._t = now
        p = power(self._h)
        self.g_ul = self.pathloss * p[:, 0]
        self.g_dl = self.g_ul if self.reciprocal else self.pathloss * p[:, 1]
        return self.g_ul, self.g_dl

    def _grid_gains(self, n):
        h_ul, h_dl = self.grid.at(n)
        self.g_ul = self.pathloss * h_ul
        self.g_dl = self.g_ul if self.reciprocal else self.pathloss * h_dl
        return self.g_ul, self.g_dl

    def csi(self, now):
        """The CSI the reactive decision uses at ``now`` (the round start's, unless blocks are
        shorter than the round)."""
        if self.grid is None:
            return self.g_ul, self.g_dl
        return self._grid_gains(self.block_index(now))

    # -- transmissions -------------------------------------------------------------------------
    def transmit(self, env, device, mode, power_w, bandwidth_hz, planned_s):
        """SimPy: one correction of ``device`` (index) in ``mode`` (UL or DL) with the decided
        power and bandwidth; it holds its subband until its ``bits`` are delivered. Returns the
        realised delay (the planned one unless it outlasts its fading block)."""
        if self.grid is None:
            yield env.timeout(planned_s)
            return planned_s
        t0 = env.now
        n0 = self.block_index(t0)
        first = (n0 + 1) * self.coherence_s - t0
        self.transmissions += 1
        if planned_s <= first:
            self.blocks_used += 1
            yield env.timeout(planned_s)
            return planned_s
        delay = self.delivery_time(device, mode, power_w, bandwidth_hz, t0, planned_s)
        yield env.timeout(delay)
        return delay

    def delivery_time(self, device, mode, power_w, bandwidth_hz, t0, planned_s=None):
        """Seconds to deliver the payload from ``t0`` over the grid's blocks (a pure lookup)."""
        n0 = self.block_index(t0)
        first = (n0 + 1) * self.coherence_s - t0
        m = 16
        bits = self.bits if self.round_bits is None else float(self.round_bits[device])
        while True:
            h_ul, h_dl = self.grid.powers(n0, n0 + m)
            h = (h_ul if mode == UL else h_dl)[:, device]
            rates = shannon_rate(bandwidth_hz, power_w, self.pathloss[device] * h, self.n0)
            durations = np.full(m, self.coherence_s)
            durations[0] = first
            delay, used = time_to_deliver(bits, rates, durations)
            if delay < math.inf:
                break
            if m >= self.max_blocks:
                raise LimitReached(
                    f"a correction of device {device} needs more than {self.max_blocks:,} fading "
                    f"blocks of {self.coherence_s * 1e3:g} ms to deliver {bits:.0f} bits "
                    "(limits.max_blocks_per_transmission)")
            m = min(m * 8, self.max_blocks)
        self.blocks_used += used
        self.multi_block += used > 1
        return delay
