"""A cell's channel (docs/components/cells.md): the cell's ``OFDMAChannel`` (fading, path
loss, payload; the NR link's ``LinkChannel``, a multi-antenna ``ArrayChannel``) with the other
cells' interference (``engine.interference.InterferenceField``) as its interference part; the
round loop sees the channel interface. A stream's own gain changes too where its fading blocks
do (``channel.coherence_time_ms``); a shared band's streams are placed and rated by
``engine.cell_streams``; the NR link's transport blocks meet the SINR at each first attempt.
"""
import math

import numpy as np

from ..model.antennas import channel_vectors
from ..model.link import BlockLimit, PermanentOutage
from ..model.reactive import DL, UL
from .antennas import singular_set
from .cell_streams import SharedBandPlan, seen_through
from .interference import Tx
from .link import link_stop


def _forward(name):
    """A property reading and setting ``name`` on the wrapped channel."""
    return property(lambda self: getattr(self.base, name),
                    lambda self, value: setattr(self.base, name, value))


class InterferingChannel:
    """A cell's channel: its ``OFDMAChannel`` ``base`` (fading, path loss, payload bits) with
    the other cells' interference. Transmissions are delivered over the field at the gain the
    base says a stream meets (``stream_gain``); the CSI the draft controller and the reactive
    policy see is g N0 / (N0 + psi), g the base's CSI (the true gains, or its CSI model's
    estimate), the SINR of a flat interference PSD psi over the band
    (``cells.interference_csi``): 'last', the PSD measured at that instant; 'mean', its time
    average over the run so far; 'none', psi = 0 (blind). With fading blocks on a time grid
    (the base's ``grid``) a stream meets each block's gain from the block's start on. Where a
    link shares its band (``sees_sets``) the decision sees the channel vectors scaled alike,
    and each decision's streams are placed and rated by ``engine.cell_streams``."""

    plain_transmit = False
    dynamic_csi = True

    system, bits, round_bits, n0, pathloss, max_blocks = map(
        _forward, ("system", "bits", "round_bits", "n0", "pathloss", "max_blocks"))
    fading, reciprocal, g_ul, g_dl = map(_forward, ("fading", "reciprocal", "g_ul", "g_dl"))
    extra_columns = _forward("extra_columns")   # a multi-antenna base records its streams
    gain_law, csi_model = _forward("gain_law"), _forward("csi_model")

    def round_columns(self, devices=None):
        return self.base.round_columns(devices)

    def counters(self):
        """The transmissions counted as they are sent (``OFDMAChannel.counters``; the NR link's
        HARQ totals on its base)."""
        own = [(self, ("transmissions", "blocks_used", "multi_block"))]
        if self.link is None:
            return own
        return own + [(self.base, ("transmissions", "harq_transmissions", "harq_failures",
                                   "outages"))]

    def summary_blocks(self):
        """The NR link's totals (its ``link`` section); none on Shannon's link."""
        return {} if self.link is None else self.base.summary_blocks()

    def csi_rho(self):
        return self.base.csi_rho()

    def estimate_now(self):
        return self.base.estimate_now()

    def direct_paths(self):
        return self.base.direct_paths()

    def gains_ahead(self):
        """None: the interference of a round is not known ahead."""
        return None

    def __init__(self, base, field, cell, globs, interference_csi="last"):
        self.base, self.field, self.cell, self.globs = base, field, cell, globs
        self.interference_csi = interference_csi
        if interference_csi == "mean":
            field.track_mean = True
        self.transmissions = self.blocks_used = self.multi_block = 0
        self._band_t, self._band_next = None, 0.0
        self._clear_ul = self._clear_dl = None
        self._g = None   # the base's CSI of this round
        self.sees_sets = base.shared_band   # a decision's streams are sets (``plan_sets``)
        self.link = base.link   # the NR link (``McsLink``), or None: Shannon's rate
        self._share = None   # N0 / (N0 + psi) the decision saw: UL (one), DL (K,)
        self._seen_now = None   # a shared band: the gains (and vectors) the decision saw
        self._plans = {}   # device -> the ``SharedBandPlan`` of its stream

    def set_pathloss(self, gains):
        self.base.set_pathloss(gains)

    def round_gains_hold(self):
        return self.base.round_gains_hold()

    def _seen(self, now):
        n0, field, cell, globs = self.n0, self.field, self.cell, self.globs
        ul, dl = field.ul_psd(cell), field.dl_psd(cell, globs)
        # a planned delay holds when the decision saw no interference and none was there
        self._clear_ul, self._clear_dl = ul == 0.0, dl == 0
        if self.interference_csi == "mean":
            ul_seen, dl_seen = field.mean_ul(cell, now), field.mean_psd(cell, DL, globs, now)
            self._clear_ul = self._clear_ul and ul_seen == 0
            self._clear_dl = self._clear_dl & (dl_seen == 0)
        elif self.interference_csi == "none":
            ul_seen, dl_seen = 0.0, 0.0
        else:
            ul_seen, dl_seen = ul, dl
        g_ul, g_dl = self._g
        self._share = f_ul, f_dl = n0 / (n0 + ul_seen), n0 / (n0 + dl_seen)
        if self.sees_sets:
            self._seen_now = (seen_through(g_ul, f_ul), seen_through(g_dl, f_dl))
            return self._seen_now
        return g_ul * f_ul, g_dl * f_dl

    def plan_sets(self, mode, planned, power_w, bandwidth_hz):
        """The streams of a decision, before they start: where each sits in the band
        (``SharedBandPlan``); their signals and leakage are worked out as they start."""
        base = self.base
        plan = SharedBandPlan(base.transmission, tuple(g.vectors for g in self._seen_now), mode,
                              planned, power_w, bandwidth_hz, base.bits, self.n0)
        for device in np.flatnonzero(np.asarray(mode) != 0).tolist():
            self._plans[device] = plan

    def _set_parts(self, plan, device, mode, t0, k=0):
        """(gain, leakage, SINR) of ``device``'s shared stream sent from ``t0``, in its k-th
        fading block (on a grid): its set's filters on the decision's view in the first block
        (the block the decision saw, or with imperfect CSI any: the estimate is all it has),
        else on that block's true vectors."""
        base, dl = self.base, int(mode == DL)
        grid = base.grid
        if grid is None:
            truth, key = (base.g_ul, base.g_dl)[dl].vectors, "round"
        else:
            key = grid.index(t0) + k
            truth = channel_vectors(base.pathloss, grid.blocks(t0, k + 1, k)[dl][0])
        decided = k == 0 and (grid is None or base.plan_holds(t0) or not base.csi_model.perfect)
        filters = plan.seen[dl] if decided else truth
        got = plan.parts(mode, ("decided" if decided else "truth", key), truth, filters)
        return tuple(float(x[device]) for x in got)

    def new_block(self, now=0.0):
        self._g = self.base.new_block(now)
        return self._seen(now)

    def csi(self, now):
        self._g = self.base.csi(now)
        return self._seen(now)

    def transmit(self, env, device, mode, power_w, bandwidth_hz, planned_s, index=None):
        if self.sees_sets:
            return (yield from self._transmit_in_set(env, device, mode, power_w, bandwidth_hz))
        # corrections starting together take consecutive subbands of the cell's band
        if self._band_t != env.now:
            self._band_t, self._band_next = env.now, 0.0
        if self.link is not None:
            return (yield from self._transmit_nr(env, device, mode, power_w, bandwidth_hz,
                                                 index))
        base = self.base
        tx = self._tx(device, mode, power_w, self._band_next, self._band_next + bandwidth_hz,
                      base.start_gain(device, mode, env.now))   # the first block's gain
        self._band_next = tx.f1
        # the planned delay is the delivery time when the decision saw the true gains and no
        # interference and none is there at the start (then it is kept exactly, as on one cell)
        clear = base.csi_model.perfect and (self._clear_ul if mode == UL
                                            else self._clear_dl[device])
        tx.planned = planned_s if clear else None
        start = env.now
        grid = base.grid
        if grid is not None:   # fading blocks on a time grid: the stream's gain block by block
            dl, pl, n = mode == DL, float(base.pathloss[device]), grid.index(start)
            if not base.plan_holds(start):   # not the block its decision saw
                tx.planned = None
            self._next_block(env, tx, grid, pl, dl, start, n + 1, n + base.max_blocks)
        delay = yield from self.field.transmit(env, tx)
        if grid is not None:
            base.count_blocks(start, delay, counter=self)
        base.note(device, mode, bandwidth_hz, power_w, start, delay)   # for a stream's record
        return delay

    def _transmit_nr(self, env, device, mode, power_w, bandwidth_hz, index):
        """SimPy: a correction on the NR link (``McsLink.delivery``) over the interference:
        each transport block meets the SINR at its first attempt, its own channel's gain (its
        fading blocks and retries, ``LinkChannel.mcs_inputs``) over the noise and the other
        cells' interference in its PRBs then; the MCS is adapted to the decision's report (the
        interference it saw included), then to each block's SINR. In flight from the call to
        the end of its last attempt (waits for a new fading block included). A cell without
        co-channel neighbours sends its blocks in runs, one per fading block, as one cell
        does (the same draws)."""
        base, link = self.base, self.link
        tx = self._tx(device, mode, power_w, self._band_next, self._band_next + bandwidth_hz,
                      0.0)
        self._band_next = tx.f1
        tx.timed = True
        start = env.now
        seen = self._share[1] if mode == DL else self._share[0]
        if np.ndim(seen):   # per device on the DL, one number when the decision sees none
            seen = seen[device]
        args, kwargs = base.mcs_inputs(device, mode, power_w, bandwidth_hz, start, index, seen)
        steps = link.delivery(*args, **kwargs)
        n_prb, blocks = args[1], args[4]
        noise = link.noise_w(n_prb)
        share = n_prb * link.prb_hz / bandwidth_hz   # of the subband's interference
        base.transmissions += 1
        step = link.slot_s if self.field.interfered(self.cell) else math.inf
        self.field.hold(env, tx)
        try:
            t = next(steps)
            while True:
                if start + t > env.now:
                    yield env.timeout(start + t - env.now)
                gain, t_end = blocks.current(t)
                tx.gain = gain   # (its intervals are cut by the interference alone)
                sinr_gain = gain * (noise / (noise + share * tx.interference))
                t = steps.send((sinr_gain, min(t_end, t + step)))
        except StopIteration as done:
            out = done.value
        except (PermanentOutage, BlockLimit) as exc:
            raise link_stop(f"device {device} in cell {self.cell}", exc) from None
        if start + out.delay_s > env.now:
            yield env.timeout(start + out.delay_s - env.now)
        self.field.release(env, tx)
        delay = base.mcs_account(device, start, out, counter=self)
        base.note(device, mode, bandwidth_hz, power_w, start, delay)
        return delay

    def _tx(self, device, mode, power_w, f0, f1, gain, floor=0.0):
        """A correction of ``device`` on [f0, f1) at its signal gain and leakage floor (W)."""
        tx = Tx()
        tx.cell, tx.device, tx.glob, tx.mode = self.cell, device, int(self.globs[device]), mode
        tx.power, tx.f0, tx.f1, tx.gain, tx.floor = power_w, f0, f1, gain, floor
        tx.timed = False
        tx.bits = self.base.payload_bits(device)
        self.transmissions += 1
        return tx

    def _transmit_in_set(self, env, device, mode, power_w, bandwidth_hz):
        """SimPy: a correction of a decision with a shared link (``SharedBandPlan``): a ZF
        group's stream waits for the previous group's end; on a grid of fading blocks its
        signal and leakage follow each block's filters. The delay counts from the call."""
        plan = self._plans.pop(device)
        start = env.now
        if plan.never[device]:
            raise singular_set(device)
        turn = int(plan.turn[device])
        if mode == DL and turn:
            yield plan.events(env)[turn - 1]
        base, shared = self.base, bool(plan.shared[device])
        f0, f1 = plan.band[device].tolist()
        sinr = None
        if shared:
            gain, floor, sinr = self._set_parts(plan, device, mode, env.now)
            tx = self._tx(device, mode, power_w, f0, f1, gain, floor)
        else:
            tx = self._tx(device, mode, power_w, f0, f1, base.start_gain(device, mode, env.now))
        tx.planned = None
        grid = base.grid
        if grid is not None:
            n = grid.index(env.now)
            if shared:
                self._next_set_block(env, tx, plan, env.now, n + 1, n + base.max_blocks)
            else:
                self._next_block(env, tx, grid, float(base.pathloss[device]), mode == DL,
                                 env.now, n + 1, n + base.max_blocks)
        sent = env.now
        on_air = yield from self.field.transmit(env, tx)
        plan.delivered(env, device, mode)
        if grid is not None:
            base.count_blocks(sent, on_air, counter=self)
        delay = env.now - start
        base.note(device, mode, bandwidth_hz, power_w, start, delay)
        if shared:
            base.record_streams(device, delay, on_air, sinr)
        return delay

    def _next_set_block(self, env, tx, plan, t0, n, last):
        """At the start of grid block n a shared stream sent from ``t0`` (if still in flight)
        meets that block's filters and vectors (``_next_block`` for a set)."""
        grid = self.base.grid

        def meet(event):
            if tx.event is None or tx.event.triggered:   # delivered
                return
            if n >= last:
                raise self._block_limit(tx)
            k = n - grid.index(t0)
            gain, floor, _ = self._set_parts(plan, tx.device, tx.mode, t0, k)
            self.field.new_block(tx, gain, env.now, floor)
            self._next_set_block(env, tx, plan, t0, n + 1, last)
        env.timeout(max(n * grid.block_s - env.now, 0.0)).callbacks.append(meet)

    def _block_limit(self, tx):
        return self.base.block_limit(f"a correction of device {tx.device} in cell {tx.cell}",
                                     f"{tx.bits:.0f} bits")

    def _next_block(self, env, tx, grid, pl, dl, t0, n, last):
        """At the start of grid block n, ``tx`` (if still in flight) meets that block's gain;
        past block ``last`` (``limits.max_blocks_per_transmission`` from its first) the run
        stops, as one cell's does."""
        def meet(event):
            if tx.event is None or tx.event.triggered:   # delivered
                return
            if n >= last:
                raise self._block_limit(tx)
            self.field.new_block(tx, pl * grid.block_power(tx.device, dl, t0, n), env.now)
            self._next_block(env, tx, grid, pl, dl, t0, n + 1, last)
        env.timeout(max(n * grid.block_s - env.now, 0.0)).callbacks.append(meet)
