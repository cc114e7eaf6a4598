"""The OFDMA channel: the fading process, and transmissions that run over it in parallel.

The fading model (``channel.fading``, ``model.fading.FADING_MODELS``) gives the channel a
source of small-scale powers, sampled one of two ways (``channel.coherence_time_ms``):

- one block per round (no coherence time; the paper): ``new_block`` samples the round's fading
  at its start (``round_powers``: an i.i.d. draw, the AR(1) step over the time since the last
  round, or the Jakes process at that instant), and it holds for the whole round;
- blocks of the coherence time T_c on a fixed time grid: the round start and the reactive
  decision see the fading at their instant (``powers_at``: the block's value, or the Jakes
  process at that time); a correction that outlasts its block continues over the next blocks,
  its bits accumulating at each block's rate (``segments``), with the mode and power decided on
  the CSI of its start.

``new_block(now)`` is the CSI at a round start (the draft controller's), ``csi(now)`` the CSI at
the reactive decision, ``transmit(...)`` the SimPy side of one correction.
"""
import math

import numpy as np

from ..model.antennas import ServerArray, channel_vectors
from ..model.csi import PerfectCsi
from ..model.ergodic import GainLaw
from ..model.fading import FADING_MODELS, jakes_correlation, time_to_deliver
from ..model.rates import shannon_rate
from ..model.reactive import UL
from .guards import LIMIT_TODO, LimitReached

_MAX_BLOCKS = 1 << 20  # default bound of the fading blocks of one correction (limits.py)
_CHUNK = 1 << 12        # fading blocks of one correction read at a time (arrays in cache)


class OFDMAChannel:
    """The OFDMA channel shared by the K devices of one cell.

    ``rng`` (the ``fading`` stream) feeds the fading model's source (``Fading.rounds`` /
    ``Fading.grid``); per-round sources draw ``block`` rounds at a time (the same numbers as
    round by round).
    ``pathloss`` is the current large-scale gain (K,); mobility replaces it (``set_pathloss``).
    ``link``: the NR link model of a ``LinkChannel`` (None: Shannon's rate).
    ``clock``: None, or the wavelengths each device has walked (``model.mobility.Wavelengths``):
    the fading then follows each device's own speed (``channel.doppler`` 'speed'; a model
    that ``follows_distance`` only).
    ``array``: the server's antennas (``model.antennas.ServerArray``; None: one). With several,
    the fading is one process per antenna element and the gains are the array gains
    G_k ||h_k||^2 with the vectors attached (``model.antennas.ArrayGains``), the gains of
    maximum-ratio beams on orthogonal subbands; without fading each device's vector is the
    array's line of sight toward it, ``bearings()`` giving the devices' bearings now.
    """

    link = None
    csi_model = PerfectCsi()   # the decisions' CSI (a channel with a CSI model sets its own)

    def __init_subclass__(cls, **kwargs):
        # a subclass that makes its gains its own way no longer has the base class's gains of
        # the rounds ahead, unless it says what they are
        super().__init_subclass__(**kwargs)
        if ("new_block" in cls.__dict__ or "_gains" in cls.__dict__) \
                and "gains_ahead" not in cls.__dict__:
            cls.gains_ahead = OFDMAChannel._no_gains_ahead

    def __init__(self, system, rng, fading="rayleigh", reciprocal=True, block=1024,
                 doppler_hz=0.0, coherence_s=None, moving=False, clock=None, array=None,
                 bearings=None):
        self.system = system
        self.array = ServerArray() if array is None else array
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
        self._static = not moving  # path loss fixed (set_pathloss refuses a change)
        self.g_ul = None
        self.g_dl = None
        self.fading_model = model = FADING_MODELS.lookup(fading)
        # the devices' line of sight (no fading, or a Rician channel's direct path)
        self.los = self.array.line_of_sight(bearings, system.k)
        self.rician = self.array.rician(self.los)   # None without a K-factor
        # the law of the small-scale gains the corrections meet, for the draft controllers'
        # ergodic gains (model.ergodic)
        self.gain_law = GainLaw.of(fading, self.array.m, self.array.rho, self.rician)
        self.grid = self.rounds = None
        self.clock = clock
        extra = {}
        if clock is not None:
            if not model.follows_distance:
                raise ValueError(f"fading {fading!r} does not follow the distance walked")
            extra["clock"] = clock
        if self.coherence_s is not None:
            self.grid = model.grid(rng, system.k, reciprocal, self.doppler_hz, self.coherence_s,
                                   chunk=block, **extra)
        else:
            self.rounds = model.rounds(rng, system.k, reciprocal, self.doppler_hz, block,
                                       **extra)
        m = self.array.m
        if self.array.vectors:
            # the vector sources replace the one-antenna ones just made (which took nothing
            # from the stream but a grid's seed or Jakes' angles: the same for every policy);
            # with one antenna they stay: the paper's channel. Fewer rounds (or grid blocks)
            # per draw as M grows (bounded memory; the same numbers for any block).
            if self.grid is not None:
                self.grid = self.array.grid(fading, rng, system.k, reciprocal, self.doppler_hz,
                                            self.coherence_s, max(16, block // m), clock,
                                            self.los, self.rician)
            else:
                self.rounds = self.array.rounds(fading, rng, system.k, reciprocal,
                                                self.doppler_hz, max(16, block // m), clock,
                                                self.los, self.rician)
        # the source the channel samples (CSI aging reads a continuous one at earlier times)
        self.fading_source = self.grid if self.grid is not None else self.rounds
        self._decided_t = None  # the time of the last reactive decision's CSI (grid)
        self._round_t = self._round_s = None   # the last round start, the round before's length
        self._ahead = None  # gains_ahead's block: (UL powers, g_ul, g_dl)
        self.max_blocks = _MAX_BLOCKS  # the scenario's limits.max_blocks_per_transmission
        self.transmissions = 0
        self.multi_block = 0
        self.blocks_used = 0

    @property
    def dynamic_csi(self):
        """True when the reactive decision's CSI may differ from the round start's."""
        return self.grid is not None

    # True when a decision's streams must be seen together before they start (``plan_sets``)
    sees_sets = False
    # True when some link shares its band (``engine.antennas``: a decision's streams are sets)
    shared_band = False
    link = None   # Shannon's link (``engine.link.LinkChannel``: the NR link's ``McsLink``)

    @property
    def plain_transmit(self):
        """True when ``transmit`` is one timeout of the planned delay, which it returns (one
        fading block per round): the devices may then wait the planned delay themselves and the
        realised delays are the planned ones. A channel whose ``transmit`` does anything else
        says False (``engine.link.LinkChannel``)."""
        return self.grid is None

    def set_pathloss(self, gains):
        """New large-scale gains (K,) from now on (mobility at a round start; needs ``moving``)."""
        if self._static:
            raise RuntimeError("OFDMAChannel(moving=False) has a fixed path loss")
        self.pathloss = gains

    # -- CSI -----------------------------------------------------------------------------------
    def block_index(self, t):
        return math.floor(t / self.coherence_s)

    def new_block(self, now=0.0):
        """The fading at a round start; returns (g_ul, g_dl), path loss included, shape (K,)."""
        if self._round_t is not None:
            self._round_s = now - self._round_t
        self._round_t = now
        if self.grid is not None:
            self.grid.prune_before(now)
            return self._gains(*self.grid.powers_at(now))
        powers = self.rounds.round_powers(now)
        ahead = self.gains_ahead()
        if ahead is None:
            return self._gains(*powers)
        # this round's row of the block's gains, worked out once for the block
        g_ul, g_dl, i = ahead
        self.g_ul = g_ul[i]
        self.g_dl = self.g_ul if g_dl is g_ul else g_dl[i]
        return self.g_ul, self.g_dl

    def gains_ahead(self):
        """(g_ul, g_dl, i): the gains of a block of rounds drawn ahead, this round's as row
        ``i`` (the same numbers ``new_block`` returns, round by round), or None when they are
        not known ahead (a fading process in time, blocks on a time grid, moving devices)."""
        ahead = getattr(self.rounds, "ahead", None)
        if ahead is None or self.grid is not None or not self._static:
            return None
        h_ul, h_dl, i = ahead()
        held = self._ahead
        if held is None or held[0] is not h_ul:
            g_ul = self.pathloss * h_ul
            g_dl = g_ul if h_dl is h_ul else self.pathloss * h_dl
            g_ul.flags.writeable = g_dl.flags.writeable = False   # new_block hands out rows
            held = self._ahead = (h_ul, g_ul, g_dl)
        return held[1], held[2], i

    def _no_gains_ahead(self):
        return None

    def _gains(self, h_ul, h_dl):
        if self.array.vectors:   # vectors (K, M): the array gains, the vectors attached
            self._h = (h_ul, h_dl)   # the small-scale vectors (an estimate is made of them)
            self.g_ul, self.g_dl = self.array.gains(self.pathloss, h_ul, h_dl, self.reciprocal)
            return self.g_ul, self.g_dl
        self.g_ul = self.pathloss * h_ul
        self.g_dl = self.g_ul if self.reciprocal else self.pathloss * h_dl
        return self.g_ul, self.g_dl

    def round_gains_hold(self):
        """Whether the round start's gains are those the round's corrections will meet: one
        fading block per round, or blocks at least as long as the last round (the first round
        of blocks on a grid: not known, taken as not)."""
        return self.grid is None or (self._round_s is not None
                                     and self._round_s <= self.coherence_s)

    def csi(self, now):
        """The CSI the reactive decision uses at ``now`` (the round start's, unless blocks are
        shorter than the round)."""
        if self.grid is None:
            return self.g_ul, self.g_dl
        self._decided_t = now
        return self._gains(*self.grid.powers_at(now))

    # -- transmissions -------------------------------------------------------------------------
    extra_columns = None   # per-device-round columns a channel adds to device_rounds.csv

    def note(self, device, mode, bandwidth_hz, power_w, start, airtime_s):
        """A correction of ``device`` in ``mode`` on ``bandwidth_hz`` at ``power_w``, started at
        ``start`` and on air for ``airtime_s``: kept by a channel that records its streams
        (``engine.antennas.ArrayChannel``), ignored here."""

    def transmit(self, env, device, mode, power_w, bandwidth_hz, planned_s, index=None):
        """SimPy: one correction of ``device`` (index) in ``mode`` (UL or DL) with the decided
        power and bandwidth; it holds its subband until its ``bits`` are delivered. Returns the
        realised delay (the planned one unless it outlasts its fading block). ``index``: the
        round (or batch) it belongs to, which keys a link's random draws (unused here)."""
        if self.grid is None:
            yield env.timeout(planned_s)
            return planned_s
        self.transmissions += 1
        delay = self.grid_delay(device, mode, power_w, bandwidth_hz, env.now, planned_s)
        yield env.timeout(delay)
        return delay

    # totals counted as corrections are sent, before their round is recorded
    counted = ("transmissions", "blocks_used", "multi_block")

    def counters(self):
        """(object, attribute names) of the totals a round counts before it is recorded
        (``engine.guards.RecordedTotals``): none when every transmission is one timeout of its
        planned delay (``dynamic_csi`` false: nothing is counted as it is sent)."""
        return [(self, self.counted)] if self.dynamic_csi else []

    def summary_blocks(self):
        """summary.json sections of this channel's own (the NR link's totals): none here."""
        return {}

    def stream_gain(self, device, mode):
        """The gain a correction of ``device`` in ``mode`` meets: the true channel's (the
        decisions may have seen an estimate)."""
        return float((self.g_ul if mode == UL else self.g_dl)[device])

    def start_gain(self, device, mode, t0):
        """The gain of the first fading block of a correction starting at ``t0``: the one its
        decision saw (``stream_gain``), or on a grid, when it starts in a later block (waiting
        for a carried correction), that block's own."""
        if self.grid is None or self.plan_holds(t0):
            return self.stream_gain(device, mode)
        return float(self.pathloss[device] * self.grid.block_power(device, mode != UL, t0,
                                                                   self.grid.index(t0)))

    def stream_delay(self, device, mode, power_w, bandwidth_hz):
        """Seconds to deliver ``device``'s payload at the Shannon rate of the gain its stream
        meets, within one fading block (inf at rate 0)."""
        rate = float(shannon_rate(bandwidth_hz, power_w, self.stream_gain(device, mode), self.n0))
        return self.payload_bits(device) / rate if rate > 0 else math.inf

    # the age of the CSI read from the fading process itself at an earlier instant, and the
    # instant of the last estimate (a channel with a CSI model sets them)
    csi_delay_s = 0.0
    _estimate_t = None
    _matched = None   # several antennas and an estimate: gains through the estimate's beams

    def estimate_now(self):
        """The last decision's CSI: the true gains (``EstimatedChannel``: its estimate)."""
        return self.g_ul, self.g_dl

    def direct_paths(self):
        """(d, b): the devices' Rician direct paths d = sqrt(G) a s (K, M) now and the weight b
        of the scattered part; None without a K-factor (``channel.rician_k_db``)."""
        if self.rician is None:
            return None
        return channel_vectors(self.pathloss, self.rician.direct()), self.rician.b

    def csi_rho(self):
        """Each device's correlation with its aged CSI (``csi_correlation``) where it differs by
        device (the Doppler follows each device's speed and the CSI is delayed), else None."""
        return self.csi_correlation if self.clock is not None and self.csi_delay_s else None

    def csi_correlation(self):
        """(K,) correlation of each device's gain at the last estimate with the gain its CSI
        was measured on ``csi_delay_s`` earlier: J0(2 pi Delta_x), Delta_x the wavelengths it
        walked in between (the ``clock``; ``channel.doppler`` 'speed'); ones before the first
        estimate, or with no clock or no delay."""
        t, k = self._estimate_t, self.system.k
        if t is None or self.clock is None or not self.csi_delay_s:
            return np.ones(k)
        walked = self.clock(t) - self.clock(t - self.csi_delay_s)
        return np.asarray(jakes_correlation(1.0, walked), dtype=float)

    def payload_bits(self, device):
        """The bits of ``device``'s correction: this round's (``round_bits``, the token-level
        payload's per correction) where set, else the payload size; read when it is sent (the
        token payload sets both after the channel is built)."""
        return self.bits if self.round_bits is None else float(self.round_bits[device])

    def plan_holds(self, t0):
        """Whether a correction starting at ``t0`` meets the fading block (on the grid) its
        decision saw: it may start later, waiting for a carried correction."""
        return self.grid.planned_holds(t0, self._decided_t)

    def grid_delay(self, device, mode, power_w, bandwidth_hz, t0, one_block_s):
        """The delay of a correction starting at ``t0`` on the grid: ``one_block_s`` (its delay
        at the rate of its first block) when it ends within that block and the block is the one
        the decision saw, else its delivery over the blocks (``delivery_time``)."""
        end = (self.block_index(t0) + 1) * self.coherence_s - t0
        if one_block_s <= end and self.plan_holds(t0):
            self.blocks_used += 1
            return one_block_s
        return self.delivery_time(device, mode, power_w, bandwidth_hz, t0)

    def delivery_time(self, device, mode, power_w, bandwidth_hz, t0):
        """Seconds to deliver the payload from ``t0`` over the grid's blocks (a pure lookup,
        read in chunks: ``block_reads``)."""
        bits = self.payload_bits(device)
        carried = 0.0
        for read, m, durations in self.block_reads(t0, f"a correction of device {device}",
                                                   f"{bits:.0f} bits"):
            gains = self.pathloss[device] * self.grid.segments(device, mode != UL, t0, m, read)
            if read == 0 and self._matched is not None:   # the first block through a beam
                gains[0] = self.start_gain(device, mode, t0)   # on the decision's estimate
            rates = shannon_rate(bandwidth_hz, power_w, gains, self.n0)
            delay, used, carried = time_to_deliver(bits, rates, durations, read, carried)
            if delay < math.inf:
                break
        self.blocks_used += used
        self.multi_block += used > 1
        return delay

    def count_blocks(self, t0, delays, counter=None):
        """Count, on ``counter`` (this channel by default), the fading blocks of the grid that
        deliveries from ``t0`` lasting ``delays`` (s; one or an array) spanned: its
        ``blocks_used`` and, those over several, its ``multi_block``."""
        end = (t0 + np.asarray(delays, dtype=float) * (1 - 1e-12)) / self.coherence_s
        used = np.floor(end) - self.block_index(t0) + 1
        counter = self if counter is None else counter
        counter.blocks_used += int(np.sum(used))
        counter.multi_block += int(np.count_nonzero(used > 1))

    def block_reads(self, t0, who, what):
        """(blocks read so far, blocks to have read, durations of those blocks) for a delivery
        from ``t0`` over the grid: 16 blocks, then 8 times as many while they do not suffice
        (at most ``_CHUNK`` more at a time, so a delivery of a million blocks never holds them
        all); past ``max_blocks`` the run stops (LimitReached: ``who`` needs them to deliver
        ``what``)."""
        first = (self.block_index(t0) + 1) * self.coherence_s - t0
        read, m = 0, 16
        while True:
            durations = np.full(m, self.coherence_s)
            durations[0] = first
            yield read, m, durations
            if m >= self.max_blocks:
                raise self.block_limit(who, what)
            read, m = m, min(m + min(7 * m, _CHUNK), self.max_blocks)

    def block_limit(self, who, what):
        """The stop of a run in which ``who`` needs more than ``max_blocks`` fading blocks of
        the grid to deliver ``what``."""
        return LimitReached(
            f"{who} needs more than {self.max_blocks:,} fading blocks of "
            f"{self.coherence_s * 1e3:g} ms to deliver {what} "
            "(limits.max_blocks_per_transmission)", LIMIT_TODO["blocks"])
