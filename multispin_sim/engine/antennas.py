"""The channel of a multi-antenna server: the OFDMA channel whose fading is per antenna element.

``ArrayChannel`` is ``OFDMAChannel`` with its antenna part (``model.antennas.ServerArray``):
each round's fading is one small-scale vector h_k in C^M per device and link, drawn from the
fading stream by the fading model's per-antenna source, and the gains it returns are the array
gains G_k ||h_k||^2 with the channel vectors attached (``model.antennas.ArrayGains``). The
transmission schemes (``model.mimo.Transmission``) read those vectors; the channel records, per
round, the effective gain and SNR (SINR) of every correction's stream (``gain_eff``,
``snr_eff`` in device_rounds.csv), worked out by the same component from the modes the devices
transmitted in.

With imperfect CSI (``csi_model``, ``engine.csi.EstimatedChannel``), the decisions see the gains
of the estimated vectors (``model.csi.ImperfectCsi.estimate_vectors``; one antenna on a shared
band: of the estimated powers). On an orthogonal link each stream meets the true
channel through the maximum-ratio beam of its estimate (``model.antennas.matched_gain``): its
realised delay is the Shannon delay at that gain, recorded beside the planned one. On a shared
link the channel sees the decision's streams before they start (``plan_sets``): each set's
precoder or combiner is built on the estimates, and each stream is sent at the SINR it meets
on the true vectors (``model.mimo.Transmission.realise``).

Fading blocks on a time grid (``channel.coherence_time_ms``) are the vectors' blocks
(``ServerArray.grid``): the decisions see the channel of their instant (or its estimate), and a
correction that outlasts its block continues over the next ones at each block's array gain (the
beam following each block's channel, as one antenna's rate does) or, on a shared band, at each
block's ZF and MMSE SINRs (``_sets_over_blocks``); with an estimate, its first block is met
through the beam, precoder or combiner built on it.

It is built instead of the plain channel when the server has several antennas or a link shares
its band (``server.antennas``, ``server.dl_scheme``, ``server.ul_scheme``) on Shannon's link;
the NR link with several antennas is ``engine.link.LinkChannel`` over the base channel's array.
"""
import math

import numpy as np

from ..model.antennas import ServerArray, VectorLaw, channel_vectors
from ..model.energy import AIRTIME, RADIATED
from ..model.fading import time_to_deliver
from ..model.mimo import Transmission, effective_gains
from ..model.reactive import DL, UL
from .csi import EstimatedChannel
from .guards import LimitReached


class ArrayChannel(EstimatedChannel):
    """``OFDMAChannel`` over M server antennas (``array``) with the schemes ``transmission``;
    ``csi_model``, ``csi_rng``, ``csi_delay_s``: the decisions' CSI (``EstimatedChannel``)."""

    plain_transmit = False  # transmissions are seen one by one: the round's streams are recorded

    def __init__(self, system, rng, fading="rayleigh", reciprocal=True, block=1024,
                 doppler_hz=0.0, coherence_s=None, moving=False, array=None, transmission=None,
                 clock=None, csi_model=None, csi_rng=None, csi_delay_s=0.0, bearings=None):
        super().__init__(system, rng, fading, reciprocal, block, doppler_hz, coherence_s,
                         moving, clock, array, bearings, csi_model=csi_model, csi_rng=csi_rng,
                         csi_delay_s=csi_delay_s)
        self.transmission = Transmission(self.array.m) if transmission is None else transmission
        if self.transmission.multi_user:
            # a shared band's stream gains depend on the other streams' vectors: its law is
            # of the vectors (the array gain's law is the orthogonal schemes')
            self.gain_law = VectorLaw(self.array.m, self.array.factor, self.rician)
        k = system.k
        self._mode = np.zeros(k, dtype=np.int8)
        self._delay = np.zeros(k)
        self._power = np.zeros(k)
        self._start = np.zeros(k)   # a DL set is the streams that start together
        self._band = np.zeros(k)   # each stream's subband b (a carried set has its own)
        self._p_ul = np.broadcast_to(np.asarray(system.p_ul_w, float), (k,))
        # a shared band with imperfect CSI or fading blocks on a grid: a stream's realised
        # delay depends on its whole set
        self.sees_sets = self.transmission.multi_user and (not self.csi_model.perfect
                                                           or self.grid is not None)
        self.shared_band = self.transmission.multi_user
        self.streams_realised = self.sees_sets   # the records read ``_set`` (``round_columns``)
        self._set = np.full((3, k), np.nan)   # their delays, on-air times and SINRs
        self._pending = None   # on a grid: the decision whose sets start with the next stream

    @property
    def dynamic_csi(self):
        """True with imperfect CSI or fading blocks on a grid: the corrections' delays are
        realised on the true channel, over its blocks."""
        return not self.csi_model.perfect or self.grid is not None

    def _gains(self, h_ul, h_dl):
        self._h = (h_ul, h_dl)
        self.g_ul, self.g_dl = self.array.gains(self.pathloss, h_ul, h_dl, self.reciprocal)
        return self.g_ul, self.g_dl

    def _gains_of(self, h_ul, h_dl):
        # one antenna on a shared band: the estimates as one-element vectors, as the truth
        return self.array.gains(self.pathloss, h_ul, h_dl, self.reciprocal)

    def note(self, device, mode, bandwidth_hz, power_w, start, airtime_s):
        """A correction of this round, for its record (``round_columns``): its mode, band and
        power, when it started and how long it was on air."""
        self._mode[device] = mode
        self._band[device] = bandwidth_hz
        self._power[device], self._start[device], self._delay[device] = power_w, start, airtime_s

    def plan_sets(self, mode, planned, power_w, bandwidth_hz):
        """The streams a decision starts together, before they start (``sees_sets``): on a
        shared band each one's realised delay, on-air time and SINR, planned on the estimated
        vectors and met by the true ones (``model.mimo.Transmission.realise``); on a grid of
        fading blocks, worked out when they start (``_sets_over_blocks``)."""
        if self.grid is not None:
            self._pending = (np.asarray(mode), np.asarray(planned, dtype=float),
                             np.asarray(power_w, dtype=float), bandwidth_hz)
            return
        est_ul, est_dl = self._estimate
        got = self.transmission.realise(
            self.g_ul.vectors, self.g_dl.vectors, est_ul.vectors, est_dl.vectors,
            np.asarray(mode), np.asarray(planned, dtype=float), np.asarray(power_w, dtype=float),
            self.bits, bandwidth_hz, self.n0)
        on = ~np.isnan(got[0])
        self._set[:, on] = got[:, on]

    def transmit(self, env, device, mode, power_w, bandwidth_hz, planned_s, index=None):
        """SimPy: one correction (one block per round: the planned delay, or with imperfect CSI
        the delay on the true channel: alone, at the gain through its estimate's beam, or on a
        shared band as ``plan_sets`` worked out for its set; on a grid of fading blocks, its
        delivery over the blocks, ``grid_delay``); noted for the record."""
        delay = planned_s
        if self.grid is not None:
            self.transmissions += 1
            if self.sees_sets and self._shared(mode):
                if self._pending is not None:
                    self._sets_over_blocks(env.now)
                delay = float(self._set[0, device])
            else:   # the planned delay is the realised one on the exact channel only
                first = planned_s if self.csi_model.perfect else self.stream_delay(
                    device, mode, power_w, bandwidth_hz)
                delay = self.grid_delay(device, mode, power_w, bandwidth_hz, env.now, first)
        elif not self.csi_model.perfect:
            self.transmissions += 1
            if self.sees_sets and self._shared(mode):
                delay = float(self._set[0, device])
            else:
                delay = self.stream_delay(device, mode, power_w, bandwidth_hz)
        if mode == DL and self.transmission.dl.shared and not math.isfinite(delay):
            raise singular_set(device)
        self.note(device, mode, bandwidth_hz, power_w, env.now, delay)
        yield env.timeout(delay)
        return delay

    @property
    def extra_columns(self):
        """Per-device-round columns of device_rounds.csv: each stream's effective gain gamma
        (SNR = p gamma / (N0 B_link)) and its SNR (SINR for MMSE); 0 without a correction; and
        the time each stream was on air and the energy radiated for it (``model.energy``: a ZF
        group waits for the earlier groups' turns)."""
        return {"gain_eff": np.float64, "snr_eff": np.float64, AIRTIME: np.float64,
                RADIATED: np.float64}

    def round_columns(self, devices=None):
        """This round's effective gains and SNRs (then cleared for the next round); ``devices``:
        a (K,) mask, the only devices whose streams are taken (a batch of the asynchronous
        protocol), or None for every device."""
        mode = self._mode if devices is None else np.where(devices, self._mode, 0)
        if not mode.any():
            return {name: np.zeros(len(mode)) for name in self.extra_columns}
        s = self.system
        airtime = np.where(mode > 0, self._delay, 0.0)
        dl_scheme = self.transmission.dl
        if self.streams_realised:     # as realised (``plan_sets``, ``stream_delay``)
            gain, snr, airtime = self._realised_columns(mode, airtime)
        else:
            # a stream's fading block holds until its round (or batch) is recorded
            g_ul, g_dl = (self.g_ul, self.g_dl) if self._matched is None else self._matched
            gain, snr = np.zeros(len(mode)), np.zeros(len(mode))
            # each set of streams that started together (a carried set, then the round's own)
            for start in np.unique(self._start[mode > 0]).tolist():
                on = (mode > 0) & (self._start == start)
                got = effective_gains(self.transmission, g_ul, g_dl, np.where(on, mode, 0),
                                      self._p_ul, s.p_dl_w, self.bits, self._band[on][0],
                                      self.n0, sent=self._power)
                gain[on], snr[on] = got[0][on], got[1][on]
            if dl_scheme.shared:   # streams on air in turns, set by set; else the whole delay
                for start in np.unique(self._start[mode == DL]).tolist():   # carried: apart
                    dl = (mode == DL) & (self._start == start)
                    airtime[dl] = dl_scheme.on_air(airtime[dl])
        radiated = np.where(mode > 0, self._power, 0.0) * airtime
        self._mode = np.zeros(len(mode), dtype=np.int8) if devices is None else np.where(
            devices, 0, self._mode).astype(np.int8)
        return {"gain_eff": gain, "snr_eff": snr, AIRTIME: airtime, RADIATED: radiated}

    def record_streams(self, device, delay, on_air, sinr):
        """A stream delivered by a caller that realises the sets itself (a cell's channel,
        ``engine.cell_streams``): its delay, time on air and SINR, for the round's record."""
        self.streams_realised = True
        self._set[:, device] = delay, on_air, sinr

    def _shared(self, mode):
        return (self.transmission.dl if mode == DL else self.transmission.ul).shared

    def _sets_over_blocks(self, t0):
        """The sets of the pending decision, starting at ``t0`` on the grid of fading blocks:
        each block's precoder (ZF) or combiner (MMSE) follows that block's vectors (in a set's
        first block, the decision's estimate of them, if it had one), the powers stay the
        decided ones, and a stream's bits accumulate at each block's rate at its SINR there,
        every stream of its set (ZF group) counted until the set's last ends; a ZF group starts
        when the previous one ends."""
        mode, planned, power, b = self._pending
        self._pending = None
        tr = self.transmission
        for code, scheme in ((UL, tr.ul), (DL, tr.dl)):
            idx = np.flatnonzero(mode == code)
            if not (scheme.shared and idx.size):
                continue
            band = b * len(idx)   # the link's pooled band, whichever group is on air
            start = t0
            for end in np.unique(planned[idx]) if code == DL else (None,):   # UL: one set
                turn = idx if end is None else idx[planned[idx] == end]
                if end == np.inf:   # a singular ZF group (as ``MuMimoZf.realise``)
                    self._set[:, turn] = np.array([[np.inf], [np.inf], [0.0]])
                    continue
                on_air, sinr = self._turn_over_blocks(scheme, code == DL, turn, power[turn],
                                                      band, start)
                self._set[:, turn] = start + on_air - t0, on_air, sinr
                start += float(on_air.max())

    def _turn_over_blocks(self, scheme, dl, turn, power, band, t0):
        """(on-air times, SINRs in the first block) of the streams of devices ``turn`` sent
        together at ``power`` on ``band`` from ``t0`` (a ZF group, or the UL set), the blocks
        read in chunks (``block_reads``)."""
        bits, n = self.bits, len(turn)
        one = np.zeros(n)   # planned together: one set, one group
        # the first block's filters: on the decision's estimate (``EstimatedChannel``)
        seen = None if self._estimate is None else self._estimate[1 if dl else 0].vectors[turn]
        on_air, carried, first = np.full(n, np.inf), np.zeros(n), None
        for read, m, durations in self.block_reads(t0, f"a set of {n} streams",
                                                   "their payloads"):
            h = channel_vectors(self.pathloss[turn], self.grid.blocks(t0, m, read)[
                1 if dl else 0][:, turn])
            sinr = np.array([scheme.realise(a, a if read or i or seen is None else seen, one,
                                            power, bits, band / n, self.n0)[2]
                             for i, a in enumerate(h)])
            first = sinr[0] if first is None else first
            rates = band * np.log2(1.0 + sinr)
            for i in np.flatnonzero(np.isinf(on_air)):
                on_air[i], _, carried[i] = time_to_deliver(bits, rates[:, i], durations, read,
                                                           carried[i])
            if np.isfinite(on_air).all():
                break
        self.count_blocks(t0, on_air)
        return on_air, first

    def _realised_columns(self, mode, airtime):
        """(gain_eff, snr_eff, airtime) of the streams of ``mode`` on a shared band with
        imperfect CSI or fading blocks on a grid: a shared link's streams as realised (gain:
        the SINR's p gamma / (N0 B_link), B_link = b x the streams that started with it), an
        orthogonal link's at the gain through the estimate's beam (or the decision's gain)."""
        tr, p = self.transmission, self._power
        b = np.where(mode > 0, self._band, 1.0)
        g_ul, g_dl = (self.g_ul, self.g_dl) if self._matched is None else self._matched
        gain = np.where(mode == UL, g_ul, np.where(mode == DL, g_dl, 0.0))
        snr = np.where(mode > 0, p * gain / (self.n0 * b), 0.0)
        for code, scheme in ((UL, tr.ul), (DL, tr.dl)):
            if not scheme.shared:
                continue
            for start in np.unique(self._start[mode == code]).tolist():
                on = (mode == code) & (self._start == start)
                snr[on], airtime[on] = self._set[2, on], self._set[1, on]
                with np.errstate(divide="ignore", invalid="ignore"):
                    gain[on] = snr[on] * self.n0 * b[on] * np.count_nonzero(on) / p[on]
        return gain, snr, airtime


def singular_set(device):
    """The stop of a run whose zero-forcing DL set can never be served: before the round is
    recorded, its earlier rounds kept."""
    return LimitReached(
        f"device {device}: its zero-forcing DL set can never be served (the set's channel "
        "vectors are linearly dependent: devices in one direction from the server, or mirrored "
        "across its linear array's axis)",
        "use server.zf_groups: best (smaller groups in turn) or a reactive policy that chooses "
        "the links (policy.mode: optimal)")


def needs_array_channel(scenario):
    """True when the server's antennas leave the paper's single-antenna channel (several
    antennas, a Rician channel's complex elements, or a link that shares its band)."""
    return (ServerArray.from_scenario(scenario).vectors
            or Transmission.from_scenario(scenario).multi_user)


def build_array_channel(scenario, system, streams, moving, clock=None, csi_model=None,
                        csi_delay_s=0.0, coherence_s=None, bearings=None):
    ch = scenario.channel
    return ArrayChannel(system, streams.fading, ch.fading, ch.reciprocal,
                        doppler_hz=ch.doppler_hz, coherence_s=coherence_s, moving=moving,
                        clock=clock, bearings=bearings,
                        array=ServerArray.from_scenario(scenario),
                        transmission=Transmission.from_scenario(scenario),
                        csi_model=csi_model, csi_rng=streams.csi, csi_delay_s=csi_delay_s)
