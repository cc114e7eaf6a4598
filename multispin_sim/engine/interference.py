"""The interference between the cells' transmissions in time (docs/components/cells.md).

``InterferenceField`` holds the co-channel corrections in flight across cells. A correction's
rate follows its SINR, which changes whenever a co-channel transmission of another cell that
overlaps its subband starts or ends; only those transmissions are touched by the event. Each
transmission keeps its interferers' terms (``Tx.terms``: interferer -> its power at this
receiver over the overlap), so a start adds one term to each overlapping transmission and an
end removes one; the interference is the sum of the terms, in the order the interferers
started (the same order, and so the same numbers, as a sum over every transmission in flight).

A cell's channel over the field is ``engine.cell_channel.InterferingChannel``.
"""
from heapq import heappop, heappush
import itertools
import math

import numpy as np

from ..model.reactive import DL, UL
from ..scenario import limits


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
