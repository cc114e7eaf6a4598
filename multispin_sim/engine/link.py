"""The SimPy side of the link component: a channel whose transmissions meet the truth through
the scenario's link model.

``LinkChannel`` extends ``EstimatedChannel`` (``engine.csi``: the decisions see the CSI model's
estimate, made once per fading sample) and is used only when the scenario leaves the paper's
setting (``link.model`` not shannon, or imperfect CSI with one antenna); otherwise the plain
channel runs. Its ``transmit`` gives the realised delay of a correction from the true channel:
the Shannon delay on the true gains (through the fading grid when the correction outlasts its
block), or ``McsLink.deliver`` (link adaptation on the reported SNR, HARQ, outages, retries on
later fading blocks), its random draws addressed by the correction's round (or batch) and device
(``streams.KeyedStreams``: the HARQ uniforms from its row, then its own stream; the retries'
fresh fading from another), so a correction whose situation is the same in two runs meets the
same errors and fades whatever was sent before it. ``dynamic_csi`` is True, so the round asks
``csi`` at the decision and records planned beside realised delays.

With several server antennas (the orthogonal schemes) the base channel's gains are the array
gains of maximum-ratio beams (``OFDMAChannel``'s ``array``), so the link reads the SNR of each
block's array gain; with an estimate, the report is of the estimate's array gain and the first
block is met through its beam (``EstimatedChannel.start_gain``); a retry on a new fading block
draws a new vector (``retry_vector``) and is reported afresh.
"""
import dataclasses
import itertools
import math

import numpy as np

from ..model.antennas import ServerArray, correlated, squared_norms, vectors_of
from ..model.energy import AIRTIME, RADIATED
from ..model.fading import BlockRows, complex_gaussian, gauss_markov_step
from ..model.link import (LINK_MODELS, BlockLimit, Blocks, IidBlocks, McsLink, PermanentOutage,
                          Uniforms)
from ..model.mobility import MOBILITY_MODELS
from ..model.nr_tables import CarrierError
from ..model.reactive import DL
from ..policies.linkaware import LinkAwarePolicy
from ..scenario import ScenarioError
from .antennas import build_array_channel, needs_array_channel
from .cell_plan import several_cells
from .channel import OFDMAChannel
from .csi import EstimatedChannel, build_csi, csi_is_perfect, process_delay_s
from .guards import LIMIT_TODO, LimitReached
from .streams import KeyedStreams

# uniforms a correction's HARQ draws take from its stream at a time (most need at most 4)
_HARQ_UNIFORMS = 8
# relative (and, in units of the mean power, absolute) rounding a gain read in a run of blocks
# may differ by from the same block read alone: single-precision cosines of the Jakes sums
# round apart by ~1e-7 at most when their arguments differ in the last bits
_SKIP_MARGIN = 1e-5


class CorrectionUniforms(Uniforms):
    """The HARQ uniforms of one correction: its row of ``KeyedStreams`` (``row``), then, if it
    needs more, its own stream (``at(index, device)``, part 0), which is also the ``rng`` of
    the draws ``McsLink`` makes with numpy (a large binomial); made at its first use."""

    def __init__(self, streams, index, device):
        BlockRows.__init__(self, self._more, streams.row(index, device))
        self._streams, self._index, self._device = streams, index, device
        self._rng = None

    @property
    def rng(self):
        if self._rng is None:
            self._rng = self._streams.at(self._index, self._device)
        return self._rng

    def _more(self):
        return self.rng.random(_HARQ_UNIFORMS).tolist()


class GridBlocks(Blocks):
    """The fading grid's blocks as seen by one correction of ``device`` in ``mode`` from ``t0``;
    ``skip_below`` reads them in runs (``grid.block_powers``). ``first``: the gain of its first
    block where it is not that block's own (a beam on an estimate: ``EstimatedChannel``)."""

    def __init__(self, channel, device, mode, t0, first=None):
        self.channel = channel
        self.device = device
        self.dl = mode == DL
        self.t0 = t0
        self.tc = channel.coherence_s
        self.first = first
        self.start_block = self._index(0.0)

    def _index(self, t):
        # a block's start n tc - t0, added back to t0, lands within a few ulps of n: snap to
        # it, by a margin that grows with n (a fixed 1e-9 missed boundaries past n ~ 5e6)
        x = (self.t0 + t) / self.tc
        n = math.floor(x)
        if (n + 1) - x <= max(1e-9, 1e-13 * x):
            n += 1
        return n

    def current(self, t):
        n = self._index(t)
        if n == self.start_block and self.first is not None:
            return self.first, (n + 1) * self.tc - self.t0
        h = self.channel.grid.block_power(self.device, self.dl, self.t0, n)
        return float(self.channel.pathloss[self.device] * h), (n + 1) * self.tc - self.t0

    def next(self, t):
        return (self._index(t) + 1) * self.tc - self.t0

    def skip_below(self, t, floor, limit):
        # ``block_power`` and ``block_powers`` may round differently (one block against many):
        # a gain within _SKIP_MARGIN of the floor is left to the caller's exact test
        n0 = n = self._index(t)
        pl = float(self.channel.pathloss[self.device])
        below = floor / pl * (1.0 - _SKIP_MARGIN) - _SKIP_MARGIN
        grid = self.channel.grid
        while n - n0 < limit:
            h = grid.block_powers(self.device, self.dl, self.t0, n, limit - (n - n0))
            up = np.flatnonzero(h >= below)
            if up.size:
                n += int(up[0])
                break
            n += len(h)
        return ((n * self.tc - self.t0) if n > n0 else t), n - n0


class ProcessBlocks(Blocks):
    """One block per round on a process in continuous time (Jakes): the round's gain holds
    until a retry; a retry waits ``block_s`` and meets the process at that instant.
    ``skip_below`` samples the process at many retries' instants at once."""

    def __init__(self, gain, sample, t0, block_s, mean=1.0):
        self.gain = float(gain)
        self.sample = sample  # time(s) (s) -> gain(s), path loss included
        self.t0 = float(t0)
        self.block_s = float(block_s)
        self.mean = float(mean)  # the mean gain (the path loss): the scale of _SKIP_MARGIN

    def current(self, t):
        return self.gain, math.inf

    def next(self, t):
        t = t + self.block_s
        self.gain = float(self.sample(self.t0 + t))
        return t

    def skip_below(self, t, floor, limit):
        # the retries' instants by the additions ``next`` makes; the gain of the block where
        # the run stops sampled alone, as ``next`` samples it
        below = floor * (1.0 - _SKIP_MARGIN) - _SKIP_MARGIN * self.mean
        n = 0
        while n < limit and self.gain < below:
            times = list(itertools.accumulate(
                [t] + [self.block_s] * min(256, limit - n)))[1:]
            up = np.flatnonzero(np.asarray(self.sample(self.t0 + np.asarray(times))) >= below)
            skipped = int(up[0]) + 1 if up.size else len(times)
            n += skipped
            t = times[skipped - 1]
            self.gain = float(self.sample(self.t0 + t))
        return t, n


class RetryFading:
    """The fresh fading a correction's retries meet when the channel has one block per round:
    ``channel.retry_gain`` on the correction's own retry stream (``KeyedStreams`` part 1 of its
    round and device), made at its first retry (most corrections have none). Each retry takes a
    fixed number of draws, so the i-th retry's fading depends on the key and i only. With an
    antenna array it keeps the small-scale vector of the last block (``h``) for the next step."""

    def __init__(self, channel, index, device, dl=False):
        self.channel, self.index, self.device, self.dl = channel, index, device, dl
        self.rng = self.h = None   # made at the first retry

    def __call__(self, g):
        if self.rng is None:
            self.rng = self.channel.link_streams.at(self.index, self.device, 1)
        if self.channel.array.vectors:
            if self.h is None:   # the round's vector, from the gains' a_k = sqrt(G_k) h_k
                a = vectors_of(self.channel.g_dl if self.dl else self.channel.g_ul)
                self.h = a[self.device] / math.sqrt(float(self.channel.pathloss[self.device]))
            g, self.h = self.channel.retry_vector(self.rng, self.device, self.h)
            return g
        return self.channel.retry_gain(self.rng, self.device, g)


class LinkChannel(EstimatedChannel):
    """``EstimatedChannel`` (a CSI model: ``csi_model``, ``csi_rng``, ``csi_delay_s``) with a
    link model (module docstring).

    ``link``: ``McsLink`` or None (Shannon); ``link_rng``: the stream the key of the link's
    per-correction streams is drawn from (``link_streams``, a ``KeyedStreams``);
    ``retry_block_s``: the wait for a new fading block when the channel has one block per round.
    """

    def __init__(self, *args, link=None, link_rng=None, retry_block_s=0.01, **kwargs):
        super().__init__(*args, **kwargs)
        self.link = link
        self.link_streams = (KeyedStreams(link_rng, self.system.k, _HARQ_UNIFORMS)
                             if link is not None and link_rng is not None else None)
        self.retry_block_s = float(retry_block_s)
        self.retry_rho = self.fading_model.correlation(self.doppler_hz, self.retry_block_s)
        self.harq_transmissions = 0
        self.harq_failures = 0
        self.outages = 0
        k = self.system.k
        self._p_ul = np.broadcast_to(np.asarray(self.system.p_ul_w, float), (k,)).tolist()
        self._columns = {name: np.zeros(k, dtype=dt) for name, dt in self.extra_columns.items()}

    @property
    def extra_columns(self):
        """Per-device-round columns of ``device_rounds.csv`` (the NR link's HARQ records, and
        the time on air and radiated energy the energy accounting charges: ``outputs.energy``)."""
        if self.link is None:
            return {}
        return {"harq_transmissions": np.int64, "harq_failures": np.int64, "outages": np.int64,
                AIRTIME: float, RADIATED: float}

    def round_columns(self, devices=None):
        """This round's per-device HARQ records (then zeroed for the next round); ``devices``:
        a (K,) mask, the only devices whose records are taken (a batch of the asynchronous
        protocol: the others may still be transmitting for another batch)."""
        take = np.ones(self.system.k, dtype=bool) if devices is None else devices
        out = {name: np.where(take, col, 0) for name, col in self._columns.items()}
        for col in self._columns.values():
            col[take] = 0
        return out

    plain_transmit = False  # a transmission draws link errors and estimates: see transmit
    counted = OFDMAChannel.counted + ("harq_transmissions", "harq_failures", "outages")
    dynamic_csi = True

    # -- transmissions -------------------------------------------------------------------------
    def transmit(self, env, device, mode, power_w, bandwidth_hz, planned_s, index=None):
        t0 = env.now
        self.transmissions += 1
        if self.link is None:
            delay = self.shannon_delay(device, mode, power_w, bandwidth_hz, t0)
        else:
            delay = self.mcs_delay(device, mode, power_w, bandwidth_hz, t0, index)
        yield env.timeout(delay)
        return delay

    def shannon_delay(self, device, mode, power_w, bandwidth_hz, t0):
        """The paper's link on the true channel."""
        first = self.stream_delay(device, mode, power_w, bandwidth_hz)
        if self.grid is None:
            return first
        return self.grid_delay(device, mode, power_w, bandwidth_hz, t0, first)

    def mcs_delay(self, device, mode, power_w, bandwidth_hz, t0, index):
        """The realised delay of one correction on the NR link; ``index``: its round (or
        batch), which with ``device`` keys its random draws (no two corrections share both)."""
        args, kwargs = self.mcs_inputs(device, mode, power_w, bandwidth_hz, t0, index)
        try:
            out = self.link.deliver(*args, **kwargs)
        except (PermanentOutage, BlockLimit) as exc:
            raise link_stop(f"device {device}", exc) from None
        return self.mcs_account(device, t0, out)

    def mcs_inputs(self, device, mode, power_w, bandwidth_hz, t0, index, seen=1.0):
        """The arguments of ``McsLink.deliver`` (or ``delivery``) for one correction: bits,
        PRBs, power, the SNR reported at the decision's estimate (times ``seen``: N0 / (N0 +
        psi), the share of it the decision saw beside the other cells' interference), the
        ``Blocks`` of its own channel, its draws; the retry power and block limit as
        keywords."""
        if index is None:
            raise ValueError("a correction on the NR link needs its round (or batch) index: "
                             "it keys the correction's random draws")
        link = self.link
        n_prb = max(1, int(bandwidth_hz / link.prb_hz + 0.5))
        dl = mode == DL
        est = self.estimate_now()
        snr_reported = power_w * float(est[1 if dl else 0][device]) / link.noise_w(n_prb)
        if seen != 1.0:
            snr_reported *= seen
        if self.grid is not None:
            blocks = GridBlocks(self, device, mode, t0, None if self._matched is None
                                else self.start_gain(device, mode, t0))
        elif self.fading_model.continuous:
            pl, src = float(self.pathloss[device]), self.rounds
            blocks = ProcessBlocks(self.stream_gain(device, mode),
                                   lambda t: pl * src.power(device, dl, t), t0,
                                   self.retry_block_s, mean=pl)
        else:
            blocks = IidBlocks(self.stream_gain(device, mode),
                               RetryFading(self, index, device, dl), self.retry_block_s)
            blocks.static = self.fading_model.static
        # a retry on a new fading block: the DL's share of P_dl at a flat PSD (the decided
        # power equalised gains that have changed); on a static channel nothing changed
        if self.fading_model.static:
            retry = None
        else:
            retry = self.system.p_dl_w * n_prb / link.n_prb if dl else self._p_ul[device]
        draws = CorrectionUniforms(self.link_streams, index, device)
        return ((self.payload_bits(device), n_prb, power_w, snr_reported, blocks, draws),
                {"retry_power_w": retry, "max_blocks": self.max_blocks})

    def mcs_account(self, device, t0, out, counter=None):
        """Count a delivered correction's ``LinkOutcome`` (its HARQ records for the round's
        columns; its fading blocks on ``counter``, this channel by default); its delay."""
        self.harq_transmissions += out.transmissions
        self.harq_failures += out.failures
        self.outages += out.outages
        counter = self if counter is None else counter
        if self.grid is not None:
            self.count_blocks(t0, out.delay_s, counter=counter)
        else:
            used = 1 + out.outages + out.failures  # each wait meets a new block
            counter.blocks_used += used
            counter.multi_block += used > 1
        cols = self._columns
        cols["harq_transmissions"][device] += out.transmissions
        cols[AIRTIME][device] += out.airtime_s
        cols[RADIATED][device] += out.radiated_j
        cols["harq_failures"][device] += out.failures
        cols["outages"][device] += out.outages
        return out.delay_s

    def retry_gain(self, rng, device, g):
        """A new fading block's gain for a retry of ``device`` from gain ``g`` (one block per
        round: a fresh i.i.d. draw from ``rng``, or the Gauss-Markov step over
        ``retry_block_s``); no fading: the same gain."""
        if self.fading_model.static:
            return g
        pl = float(self.pathloss[device])
        if self.fading_model.iid:
            return pl * rng.standard_exponential()
        rho = self.retry_rho
        w = (rng.standard_normal() + 1j * rng.standard_normal()) / math.sqrt(2.0)
        h = rho * math.sqrt(g / pl) + math.sqrt(1.0 - rho * rho) * w
        return pl * abs(h) ** 2

    def retry_vector(self, rng, device, h):
        """``retry_gain`` of an antenna array: (G ||h'||^2, h') for the new block's small-scale
        vector h' of ``device`` after the vector ``h``: h' = L w (i.i.d.: 2M normals from
        ``rng``) or the Gauss-Markov step of every element, rho h + sqrt(1 - rho^2) L w (the
        correlation L commutes with the step); no fading: h. In a Rician channel the step is
        the scattered part's, the line of sight kept: h' = a s + b x' for h = a s + b x."""
        if not self.fading_model.static:
            w = correlated(complex_gaussian(rng, self.array.m), self.array.factor)
            if self.rician is not None:
                h = self.rician.scattered(h, device)
            h = w if self.fading_model.iid else gauss_markov_step(h, self.retry_rho, w)
            if self.rician is not None:
                h = self.rician.of(h, device)
        return float(self.pathloss[device] * squared_norms(h)), h

    def summary_blocks(self):
        return {"link": self.link_summary()}

    def link_summary(self):
        """Totals for summary.json's ``link`` section."""
        out = {"model": "shannon" if self.link is None else self.link.name,
               "corrections": self.transmissions}
        if self.link is not None:
            n = max(self.transmissions, 1)
            out.update(harq_transmissions=self.harq_transmissions,
                       harq_failures=self.harq_failures, outages=self.outages,
                       usable_prbs=self.link.n_prb, slot_s=self.link.slot_s,
                       transmissions_per_correction=self.harq_transmissions / n)
        return out


def link_stop(who, exc):
    """The stop of a run whose correction (of ``who``, a device's label) can never be delivered
    (``PermanentOutage``) or waits past the block limit (``BlockLimit``): incomplete, with what
    to change."""
    if isinstance(exc, PermanentOutage):
        reason, _, todo = str(exc).partition(": raise")
        return LimitReached(f"{who}: {reason}", "raise" + todo)
    return LimitReached(f"{who}: {exc} (limits.max_blocks_per_transmission)",
                        LIMIT_TODO["link_blocks"])


def needs_link_channel(scenario):
    """True when the scenario leaves the paper's link or perfect CSI."""
    return not LINK_MODELS.lookup(scenario.link.model).ideal or not csi_is_perfect(scenario)


def check_link(scenario):
    """Refuse up front (ScenarioError) a carrier the frequency range's TS 38.101 table does not
    have, or with fewer whole PRBs than devices (links that allocate PRBs)."""
    lk = scenario.link
    try:
        n = LINK_MODELS.lookup(lk.model).usable_prbs(scenario)
        if n is None and scenario.csi.cqi_quantisation:
            McsLink.usable_prbs(scenario)   # build_csi's CQI grid is a carrier of the link keys
    except CarrierError as exc:   # a spacing or bandwidth the range's TS 38.101 table lacks
        raise ScenarioError(exc.key, exc.what, exc.expected) from None
    b = scenario.channel.bandwidth_mhz
    k = scenario.devices.count
    if n is not None and n < k:
        raise ScenarioError(
            "link.subcarrier_spacing_khz", f"{b:g} MHz at {lk.subcarrier_spacing_khz} kHz has "
            f"{n} usable PRBs for devices.count = {k} (every transmitting device needs a whole "
            "PRB)", f"expected a bandwidth and spacing with at least {k} PRBs (e.g. a smaller "
            "subcarrier spacing or a wider channel.bandwidth_mhz)")
    if n is not None and several_cells(scenario):
        _check_cell_prbs(scenario)


def _check_cell_prbs(scenario):
    """Several cells on the NR link: each cell's carrier (its share of the band,
    ``cells.reuse``) has a whole PRB for every device it may hold: its own devices.count when
    they are dropped around it and stay, else every device of the network (a region drop, or
    devices that move or re-associate)."""
    cells, lk = scenario.cells, scenario.link
    share = dataclasses.replace(scenario, channel=dataclasses.replace(
        scenario.channel, bandwidth_mhz=scenario.channel.bandwidth_mhz / cells.reuse))
    n = McsLink.usable_prbs(share)
    held = (cells.drop == "region" or cells.reassociate
            or MOBILITY_MODELS.lookup(scenario.mobility.model).moves)
    k = scenario.devices.count * (cells.count if held and cells.drop != "region" else 1)
    if n < k:
        who = (f"the network's {k} devices (a cell may hold any of them: a region drop, or "
               "devices that move or re-associate)" if held else f"devices.count = {k}")
        raise ScenarioError(
            "cells.reuse" if cells.reuse > 1 else "link.subcarrier_spacing_khz",
            f"{cells.reuse} leaves each cell {share.channel.bandwidth_mhz:g} MHz: "
            f"{n} usable PRBs at {lk.subcarrier_spacing_khz} kHz for {who}; every "
            "transmitting device needs a whole PRB" if cells.reuse > 1 else
            f"{lk.subcarrier_spacing_khz} kHz gives each cell {n} usable PRBs for {who}; "
            "every transmitting device needs a whole PRB",
            f"expected at least {k} PRBs per cell (cells.reuse 1, a wider "
            "channel.bandwidth_mhz, a smaller subcarrier spacing or fewer devices)")


def build_channel(scenario, system, streams, coherence_s, moving, clock=None, bearings=None):
    """The run's channel: the paper's ``OFDMAChannel`` unless the link or the CSI leave it;
    ``clock``: the distance walked, for a Doppler that follows each device's speed
    (``engine.topology.doppler_clock``); ``bearings``: the devices' bearings now, for the
    line of sight of several antennas without fading (``engine.topology.device_bearings``)."""
    ideal = LINK_MODELS.lookup(scenario.link.model).ideal
    if ideal and needs_array_channel(scenario):   # several antennas or a shared band
        csi = build_csi(scenario, system, None)
        return build_array_channel(scenario, system, streams, moving, clock, csi,
                                   process_delay_s(scenario, csi), coherence_s, bearings)
    ch = scenario.channel
    args = (system, streams.fading, ch.fading, ch.reciprocal)
    # the NR link with several antennas: the array gains of maximum-ratio beams (orthogonal
    # schemes, perfect CSI: the scenario check)
    kwargs = dict(doppler_hz=ch.doppler_hz, coherence_s=coherence_s, moving=moving, clock=clock,
                  array=ServerArray.from_scenario(scenario), bearings=bearings)
    if not needs_link_channel(scenario):
        return OFDMAChannel(*args, **kwargs)
    link = LINK_MODELS.lookup(scenario.link.model).from_scenario(scenario, system)
    csi = build_csi(scenario, system, link)
    return LinkChannel(*args, link=link, csi_model=csi,
                       link_rng=streams.link, csi_rng=streams.csi,
                       retry_block_s=scenario.link.retry_block_ms * 1e-3,
                       csi_delay_s=process_delay_s(scenario, csi), **kwargs)


def link_policy(scenario, channel, policy):
    """The reactive policy as the engine uses it: on a non-Shannon link its delays are the
    link's planned delays (``policies.linkaware``)."""
    policy.use_channel(channel)
    link = channel.link
    if link is None:
        return policy
    block_ms = scenario.channel.coherence_time_ms   # an outage plans a wait of one fading block
    if block_ms is None:
        block_ms = scenario.link.retry_block_ms
    return LinkAwarePolicy(policy, link, block_ms * 1e-3)
