"""The interference between the cells' transmissions in time, and a cell's channel with it
(docs/components/cells.md).

``InterferenceField`` holds the co-channel corrections in flight across cells. A correction's
rate follows its SINR, which changes whenever a co-channel transmission of another cell that
overlaps its subband starts or ends; only those transmissions are touched by the event. Each
transmission keeps its interferers' terms (``Tx.terms``: interferer -> its power at this
receiver over the overlap), so a start adds one term to each overlapping transmission and an
end removes one; the interference is the sum of the terms, in the order the interferers
started (the same order, and so the same numbers, as a sum over every transmission in flight).

``InterferingChannel`` is a cell's channel: the cell's ``OFDMAChannel`` (fading, path loss,
payload) with the field as its interference part; the round loop sees the channel interface.
A stream's own gain changes too where its fading blocks do (``channel.coherence_time_ms``).
"""
from heapq import heappop, heappush
import itertools
import math

import numpy as np

from ..model.antennas import channel_vectors
from ..model.link import BlockLimit, PermanentOutage
from ..model.reactive import DL, UL
from ..scenario import limits
from .antennas import singular_set
from .cell_streams import SharedBandPlan, seen_through
from .guards import LIMIT_TODO, LimitReached
from .link import link_stop


class Tx:
    """One correction in flight: its cell, device (cell index and global), mode, power,
    subband [f0, f1), own gain, the leakage ``floor`` (W) of the streams sharing its band (a
    shared link's, ``engine.cell_streams``; else 0), bits (and bits left), the rate and
    interference now, and its intervals (t0, t1, rate, interference, own gain). ``terms``: its
    interferers -> their interference at its receiver; ``fades``: their Exp(1) fading draws;
    ``seen``: the gains the terms use; ``due``: its delivery time at the rate now; ``queued``:
    the time of its queue entry; ``timed``: timed by its own process (the NR link), no rate."""

    __slots__ = ("cell", "device", "glob", "mode", "power", "f0", "f1", "gain", "floor", "bits",
                 "left", "rate", "interference", "t_last", "event", "intervals", "start",
                 "planned", "version", "contrib", "terms", "fades", "seen", "due", "queued",
                 "timed")


class InterferenceField:
    """The co-channel transmissions in flight across cells, and their mutual interference.

    Interference is same-direction: UL corrections of other cells at this cell's server, DL
    corrections of other servers at this device; with ``cross_link`` also across directions:
    DL corrections of other servers at this server (server-to-server gains ``ss``), UL
    corrections of other cells' devices at this device (device-to-device gains ``dd``). An
    interferer x adds P_x g_xy o / b_x on receiver y, o the overlap of their subbands, g_xy the
    large-scale gain (read when y's rate is worked out) times an Exp(1) fading draw per pair of
    transmissions. ``transmissions`` counts them; the log keeps the intervals of the first
    ``log_limit`` (``log``: for checks such as bit conservation, in bounded memory, about 1 kB
    each)."""

    def __init__(self, links, co, n0, bandwidth, rng, log_limit=None):
        self.links, self.co, self.n0, self.bandwidth, self.rng = links, co, n0, bandwidth, rng
        self._co = np.asarray(co).tolist()   # rows of Python bools: read per transmission
        self._co_to = np.asarray(co).T.tolist()   # _co_to[c][x]: x interferes at cell c
        self._rows = {}   # cell -> (gains, its devices, their rows of the gains)
        self.active = {UL: [], DL: []}   # the transmissions in flight, by direction
        self.ss = self.dd = None   # the cross links' gains (``cross_link``)
        self.env = None
        self.log = []
        self.log_limit = limits.LOGGED_TRANSMISSIONS if log_limit is None else log_limit
        self.transmissions = 0
        self._due = []     # (time, sequence, tx, version) of the scheduled deliveries
        self._wakes = []   # times of the pending SimPy timeouts that wake the field
        self._seq = itertools.count()
        # the time average of the interference ('mean' CSI), tracked only when a channel asks
        # for it (``track_mean``): the PSD now and its time integral at every server (UL, (S,))
        # and at every device were it in each cell (DL, (D, S))
        self.track_mean = False
        self.now_psd = self.int_psd = None
        self.t_int = 0.0

    def interfered(self, cell):
        """Whether any other cell's transmissions can interfere at ``cell`` (a co-channel
        neighbour)."""
        return any(self._co_to[cell])

    def cross_link(self, ss, dd):
        """Interference across directions from now on: ``ss`` (S, S) server-to-server and
        ``dd`` (D, D) device-to-device large-scale gains."""
        self.ss, self.dd = ss, dd

    def _start_mean(self):
        """The PSDs, at the first transmission (every cell's devices are in the gains by then)."""
        shape = self.links.gain.shape
        self.now_psd = {UL: np.zeros(shape[1]), DL: np.zeros(shape)}
        self.int_psd = {UL: np.zeros(shape[1]), DL: np.zeros(shape)}

    # -- the time-averaged interference ('mean' CSI) --------------------------------------------
    def _track(self, tx, now, sign):
        """Add (sign 1) or remove (-1) ``tx``'s contribution to the PSD now, integrating first
        (each at the gains of its start)."""
        if self.now_psd is None:
            self._start_mean()
        self._track_time(now)
        other = DL if tx.mode == UL else UL
        if sign < 0:
            own, cross = tx.contrib
            self.now_psd[tx.mode] -= own
            if cross is not None:
                self.now_psd[other] -= cross
            return
        weight = self.co[tx.cell] / self.bandwidth
        gain = self.links.gain
        own = (tx.power * gain[tx.glob] * weight if tx.mode == UL
               else tx.power * np.outer(gain[:, tx.cell], weight))
        self.now_psd[tx.mode] += own
        cross = None
        if self.ss is not None:   # at the other direction's receivers: devices (UL), servers
            cross = (tx.power * np.outer(self.dd[tx.glob], weight) if tx.mode == UL
                     else tx.power * self.ss[tx.cell] * weight)
            self.now_psd[other] += cross
        tx.contrib = (own, cross)

    def _track_time(self, now):
        dt = now - self.t_int
        if dt > 0:
            for mode in (UL, DL):
                self.int_psd[mode] += self.now_psd[mode] * dt
            self.t_int = now

    def mean_psd(self, cell, mode, globs, now):
        """The time average of the interference PSD over the run so far, at ``cell``'s server
        (UL, one value) or at its devices ``globs`` (DL); the PSD now before any time has
        passed."""
        if mode == UL:
            return np.full(len(globs), self.mean_ul(cell, now))
        if self.now_psd is None:
            return np.zeros(len(globs))
        return self._mean(DL, (globs, cell), now)

    def mean_ul(self, cell, now):
        return 0.0 if self.now_psd is None else self._mean(UL, cell, now)

    def _mean(self, mode, where, now):
        """The time average up to ``now`` of the ``mode`` PSD at index ``where`` (the PSD now
        before any time has passed)."""
        self._track_time(now)
        if self.t_int > 0:
            return self.int_psd[mode][where] * (1.0 / self.t_int)
        return self.now_psd[mode][where] * 1.0

    # -- the interference measured now (the 'last' CSI) -----------------------------------------
    def ul_psd(self, cell):
        """The UL interference PSD at ``cell``'s server now (0.0 exactly when none)."""
        gain, co = self.links.gain, self._co_to[cell]
        total = 0.0
        for x in self.active[UL]:
            if co[x.cell]:
                total += x.power * gain.item(x.glob, cell)
        if self.ss is not None:   # other servers sending DL
            for x in self.active[DL]:
                if co[x.cell]:
                    total += x.power * self.ss.item(x.cell, cell)
        return total / self.bandwidth[cell]

    def dl_psd(self, cell, globs):
        """The DL interference PSD (len(globs),) at ``cell``'s devices ``globs`` now: the DL
        power in flight of each co-channel server at the devices' gains (0 exactly: none)."""
        co = self._co_to[cell]
        power = None
        for x in self.active[DL]:
            if co[x.cell]:
                if power is None:
                    power = [0.0] * len(co)
                power[x.cell] += x.power
        cross = None
        if self.dd is not None:   # other cells' devices sending UL
            for x in self.active[UL]:
                if co[x.cell]:
                    term = x.power * self.dd[x.glob, globs]
                    cross = term if cross is None else cross + term
        if power is None:
            return np.zeros(len(globs)) if cross is None else cross / self.bandwidth[cell]
        gain = self.links.gain
        cached = self._rows.get(cell)
        if cached is None or cached[0] is not gain or cached[1] is not globs:
            cached = self._rows[cell] = (gain, globs, gain[globs])
        psd = cached[2] @ np.array(power)
        return (psd if cross is None else psd + cross) / self.bandwidth[cell]

    # -- rates -----------------------------------------------------------------------------------
    def _gain(self, x, y):
        """The large-scale gain from x's transmitter to y's receiver: x's device to y's server
        (both UL), x's server to y's device (both DL), or a cross link: server to server (x DL,
        y UL), device to device (x UL, y DL)."""
        if x.mode == y.mode:
            gain = self.links.gain
            return gain.item(x.glob, y.cell) if x.mode == UL else gain.item(y.glob, x.cell)
        return self.ss.item(x.cell, y.cell) if x.mode == DL else self.dd.item(x.glob, y.glob)

    def _term(self, x, y, h):
        """Interference of x at y's receiver over their overlap, with the pair's fading h."""
        overlap = min(x.f1, y.f1) - max(x.f0, y.f0)
        return x.power * (self._gain(x, y) * h) * overlap / (x.f1 - x.f0)

    def _refresh(self, y):
        """y's terms at the current gains (devices moving replace the gains)."""
        y.seen = self.links.gain
        fades = y.fades
        y.terms = {x: self._term(x, y, fades[x]) for x in y.terms}

    def _set_rate(self, y):
        """y's interference and Shannon rate (bit/s) from its terms now."""
        if y.seen is not self.links.gain:
            self._refresh(y)
        b = y.f1 - y.f0
        y.interference = sum(y.terms.values(), 0.0)
        if y.timed:   # its own process reads the interference (the NR link)
            return
        # floor: the leakage of the streams sharing y's band (0 for an orthogonal stream)
        y.rate = b * math.log2(1.0 + y.power * y.gain / (self.n0 * b + y.floor
                                                         + y.interference))

    def _update(self, x, now, gain=None, floor=None):
        """x's interferers (or, given ``gain``, its own channel: a new fading block, with a
        shared stream's new leakage ``floor``) changed: its bits so far at the old rate (an
        interval), then the new rate (its delivery rescheduled). Called for every transmission
        an event touches."""
        t_last = x.t_last
        if now > t_last:
            x.left -= x.rate * (now - t_last)
            x.intervals.append((t_last, now, x.rate, x.interference, x.gain))
            x.t_last = now
        if gain is not None:
            x.gain = gain
        if floor is not None:
            x.floor = floor
        old = x.rate
        self._set_rate(x)
        if x.rate != old:
            self._schedule(x, x.left / x.rate if x.rate > 0 else None)

    def new_block(self, tx, gain, now, floor=None):
        """``tx``'s own channel enters a new fading block, of gain ``gain`` (and for a shared
        stream leakage ``floor``), at ``now``."""
        self._update(tx, now, gain, floor)

    def _begin(self, tx):
        """Put ``tx`` in flight: its terms from the overlapping co-channel transmissions and
        theirs from it (fading draws: each interferer's onto tx, then tx's onto each, in the
        order they started; ``_term`` written out); returns those transmissions."""
        co, f0, f1 = self._co[tx.cell], tx.f0, tx.f1
        active = self.active[tx.mode]
        hit = [x for x in active if x.f0 < f1 and f0 < x.f1 and co[x.cell]]
        if self.ss is not None:   # and the other direction's, over the cross links
            hit += [x for x in self.active[DL if tx.mode == UL else UL]
                    if x.f0 < f1 and f0 < x.f1 and co[x.cell]]
        gain = tx.seen = self.links.gain
        terms, fades = tx.terms, tx.fades = {}, {}
        if hit:
            n = len(hit)
            h = self.rng.standard_exponential(2 * n).tolist()
            ul = tx.mode == UL
            power, cell, glob, b = tx.power, tx.cell, tx.glob, f1 - f0
            for x, h_in, h_out in zip(hit, h[:n], h[n:]):
                overlap = min(x.f1, f1) - max(x.f0, f0)
                if x.mode != tx.mode:
                    g_in, g_out = self._gain(x, tx), self._gain(tx, x)
                elif ul:
                    g_in, g_out = gain.item(x.glob, cell), gain.item(glob, x.cell)
                else:
                    g_in, g_out = gain.item(glob, x.cell), gain.item(x.glob, cell)
                fades[x] = h_in
                terms[x] = x.power * (g_in * h_in) * overlap / (x.f1 - x.f0)
                if x.seen is not gain:
                    self._refresh(x)
                x.fades[tx] = h_out
                x.terms[tx] = power * (g_out * h_out) * overlap / b
        active.append(tx)
        return hit

    def _schedule(self, tx, wait):
        """Deliver ``tx`` after ``wait`` seconds unless its rate changes first (a later
        schedule supersedes this one; None: never at the current rate).

        The deliveries wait in the field's own queue, and one SimPy timeout wakes the field at
        the earliest of them, so a rate change costs no event. A transmission has one entry
        that counts (``tx.queued``, its time): a later delivery leaves it in place (when it
        comes up, the transmission goes back in at its due time), an earlier one replaces it."""
        tx.version += 1
        if wait is None:
            tx.due = None
            return
        t = tx.due = self.env.now + wait   # the time SimPy's timeout(wait) would fire at
        if tx.queued is not None and tx.queued <= t:
            return
        tx.queued = t
        heappush(self._due, (t, next(self._seq), tx))
        wakes = self._wakes
        if not wakes or t < wakes[0]:
            heappush(wakes, t)
            self.env.timeout(wait, t).callbacks.append(self._wake)

    def _wake(self, event):
        """Deliver what is due by the wake's time (the clock may be an ulp short of it), then
        make sure a wake is pending for the next delivery."""
        wakes, due = self._wakes, self._due
        limit = max(event.value, self.env.now)
        while wakes and wakes[0] <= limit:
            heappop(wakes)
        while due and due[0][0] <= limit:
            t, _, tx = heappop(due)
            if tx.queued != t or tx.event is None:
                continue   # replaced by an earlier entry, or delivered
            tx.queued = None
            if tx.due is None:
                continue   # rate 0: the next change queues it again
            if tx.due <= limit:
                if not tx.event.triggered:
                    tx.event.succeed()
            else:
                tx.queued = tx.due
                heappush(due, (tx.due, next(self._seq), tx))
        while due and (due[0][2].queued != due[0][0] or due[0][2].event is None):
            heappop(due)
        if due and (not wakes or due[0][0] < wakes[0]):
            t = due[0][0]
            heappush(wakes, t)
            self.env.timeout(max(t - self.env.now, 0.0), t).callbacks.append(self._wake)

    def transmit(self, env, tx):
        """SimPy: deliver ``tx.bits`` at the piecewise-constant rate; returns the delay. The
        process waits for one event, its delivery; rate changes reschedule it."""
        self.hold(env, tx)
        clear = tx.interference == 0.0 and tx.planned is not None and tx.planned > 0
        if clear:
            # no interference: the policy's own delay for this rate (the one-cell timing)
            tx.rate = tx.bits / tx.planned
            self._schedule(tx, tx.planned)
        else:
            self._schedule(tx, tx.left / tx.rate if tx.rate > 0 else None)
        yield tx.event
        end = self.release(env, tx)
        return tx.planned if clear and tx.version == 1 else end - tx.start

    def hold(self, env, tx):
        """Put ``tx`` in flight now: it interferes with the co-channel transmissions of the
        other cells and keeps the sum of theirs (``tx.interference``). A transmission timed by
        its own process (``tx.timed``: the NR link's transport blocks) has no rate here and
        leaves by ``release``."""
        self.env = env
        now = tx.start = tx.t_last = env.now
        tx.left, tx.intervals, tx.version, tx.queued = tx.bits, [], 0, None
        tx.rate = 0.0
        tx.event = env.event()
        if self.track_mean:
            self._track(tx, now, 1)
        hit = self._begin(tx)
        self._set_rate(tx)
        for x in hit:
            self._update(x, now)

    def release(self, env, tx):
        """``tx`` ends now (delivered): out of flight, logged; returns the time."""
        end = env.now
        if end > tx.t_last:
            tx.intervals.append((tx.t_last, end, tx.rate, tx.interference, tx.gain))
        tx.left = 0.0
        if self.track_mean:
            self._track(tx, end, -1)
        self.active[tx.mode].remove(tx)
        for x in tx.terms:
            del x.terms[tx]
            del x.fades[tx]
            self._update(x, end)
        # the log keeps the intervals, not the event or the links to other transmissions
        tx.terms = tx.fades = tx.seen = tx.event = tx.contrib = None
        self.transmissions += 1
        if len(self.log) < self.log_limit:
            self.log.append(tx)
        return end


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
        self._share = (n0 / (n0 + ul_seen), n0 / (n0 + dl_seen))
        if self.sees_sets:
            self._seen_now = (seen_through(g_ul, n0 / (n0 + ul_seen)),
                              seen_through(g_dl, n0 / (n0 + dl_seen)))
            return self._seen_now
        return g_ul * (n0 / (n0 + ul_seen)), g_dl * (n0 / (n0 + dl_seen))

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
        seen = self._share[1][device] if mode == DL else self._share[0]
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
                raise self._block_limit(tx, grid)
            k = n - grid.index(t0)
            gain, floor, _ = self._set_parts(plan, tx.device, tx.mode, t0, k)
            self.field.new_block(tx, gain, env.now, floor)
            self._next_set_block(env, tx, plan, t0, n + 1, last)
        env.timeout(max(n * grid.block_s - env.now, 0.0)).callbacks.append(meet)

    def _block_limit(self, tx, grid):
        return LimitReached(
            f"a correction of device {tx.device} in cell {tx.cell} needs more than "
            f"{self.max_blocks:,} fading blocks of {grid.block_s * 1e3:g} ms to deliver "
            f"{tx.bits:.0f} bits (limits.max_blocks_per_transmission)", LIMIT_TODO["blocks"])

    def _next_block(self, env, tx, grid, pl, dl, t0, n, last):
        """At the start of grid block n, ``tx`` (if still in flight) meets that block's gain;
        past block ``last`` (``limits.max_blocks_per_transmission`` from its first) the run
        stops, as one cell's does."""
        def meet(event):
            if tx.event is None or tx.event.triggered:   # delivered
                return
            if n >= last:
                raise self._block_limit(tx, grid)
            self.field.new_block(tx, pl * grid.block_power(tx.device, dl, t0, n), env.now)
            self._next_block(env, tx, grid, pl, dl, t0, n + 1, last)
        env.timeout(max(n * grid.block_s - env.now, 0.0)).callbacks.append(meet)
