"""The reactive problem of one channel state under a multi-user scheme (``model.mimo``).

``ArrayProblem`` holds the channel vectors; every policy's assignments go through the
channel state's ``SchemeEvaluator`` (``model.mimo_batch``), all outcomes and candidates of one
call at once: the prefix split evaluates the |R| + 1 prefixes of every distinct outcome in two
batches (the UL only where a floor of T_UL leaves a prefix a chance, ``_prefix_table``),
exhaustive search the 2^|R| assignments of an outcome, local search every move of a pass of
every outcome still searching. A decision's T_comm comes from the evaluator; its per-device
modes, powers, delays, effective gains and airtimes (``ArrayDecision``) are worked out by
``Transmission.links`` when first read (the engine reads them for one outcome a round; the
draft objective only to price energy).
"""
import functools
from dataclasses import dataclass

import numpy as np

from .mimo_batch import SchemeEvaluator, bit_weights, first_min, fits
from .reactive import (DL, UL, ReactiveDecision, ReactiveProblem, assignment_masks,
                       ul_full_power_delay)


class _Detail:
    """A decision field worked out on first read (``ArrayDecision._fill``); assignable."""

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        obj._fill()
        return obj.__dict__[self.name]


class ArrayDecision(ReactiveDecision):
    """A ``ReactiveDecision`` of an ``ArrayProblem``: ``t_comm`` and ``bandwidth_hz`` at once,
    ``mode``, ``power_w``, ``delay_s``, ``gain`` (each stream's effective gain) and
    ``airtime_s`` (a ZF group's turn; the energy objective's) when read."""

    mode = _Detail()
    power_w = _Detail()
    delay_s = _Detail()
    gain = _Detail()

    @functools.cached_property
    def airtime_s(self):
        airtime = np.array(self.delay_s, dtype=float)
        scheme = self._problem.transmission.dl
        if scheme.shared:   # each DL stream on air for its group's turn
            for i, dl in enumerate(self.mode == DL):
                airtime[i, dl] = scheme.on_air(airtime[i, dl])
        return airtime

    def __init__(self, problem, masks, t_comm):
        self._problem, self._masks = problem, masks
        self.bandwidth_hz = np.where(problem.rejected.any(axis=1),
                                     problem.bandwidth_per_device, 0.0)
        self.t_comm = t_comm

    def _fill(self):
        rows = [self._problem.row(i, self._masks[i]) for i in range(len(self._masks))]
        if rows:
            mode, power, delay, gain = (np.array(x) for x in list(zip(*rows))[:4])
        else:   # no outcome (e.g. a grid of no draft lengths): (0, K) details
            mode = power = delay = gain = np.zeros(np.shape(self._masks))
        for name, value in (("mode", mode.astype(np.int8)), ("power_w", power),
                            ("delay_s", delay), ("gain", gain)):
            self.__dict__.setdefault(name, value)


@dataclass(frozen=True)
class ArrayProblem(ReactiveProblem):
    """The reactive problem(s) of one channel state under a multi-user scheme: ``a_ul``,
    ``a_dl`` the channel vectors (K, M); ``g_ul``, ``g_dl`` their array gains ||a||^2."""

    a_ul: np.ndarray = None
    a_dl: np.ndarray = None
    transmission: object = None   # model.mimo.Transmission
    memo: dict = None   # evaluations on this channel state (ArrayGains.memo)

    multi_user = True

    def _key(self):
        return (id(self.transmission), id(self.a_dl), self.p_ul.tobytes(), self.p_dl,
                self.payload_bits, self.bandwidth_hz, self.n0)

    def evaluator(self):
        """The channel state's ``SchemeEvaluator`` (kept in ``memo``: its caches outlive the
        problem), or None when K is too large for its bitmasks."""
        if not fits(self.shape[1]):
            return None
        key = ("evaluator",) + self._key()
        ev = None if self.memo is None else self.memo.get(key)
        if ev is None:
            ev = SchemeEvaluator(self.transmission, self.a_ul, self.a_dl, self.p_ul, self.p_dl,
                                 self.payload_bits, self.bandwidth_hz, self.n0)
            if self.memo is not None:
                self.memo[key] = ev
        return ev

    def row(self, i, ul):
        """(modes, powers, delays, effective gains, t_comm) of outcome i with UL set ``ul``
        (bool (K,), restricted to the rejected devices), the others rejected on DL:
        ``Transmission.links``, one assignment."""
        rej = self.rejected[i]
        ul = ul & rej
        dl = rej & ~ul
        memo = self.memo
        if memo is not None:
            key = (ul.tobytes(), dl.tobytes()) + self._key()
            got = memo.get(key)
            if got is not None:
                return got
        b = float(self.bandwidth_per_device[i])
        delay, power, gain, _ = self.transmission.links(
            self.a_ul, self.a_dl, np.flatnonzero(ul), np.flatnonzero(dl), self.p_ul, self.p_dl,
            self.payload_bits, b, self.n0)
        mode = np.zeros(len(rej), dtype=np.int8)
        mode[ul], mode[dl] = UL, DL
        out = mode, power, delay, gain, float(delay.max(initial=0.0))
        if memo is not None:
            for x in out[:4]:
                x.flags.writeable = False   # shared by every decision on this state
            memo[key] = out
        return out

    def t_of(self, rows, ul):
        """T_comm (N,) of outcomes ``rows`` (N,) with UL sets ``ul`` (N, K) bool (restricted
        to each outcome's rejected devices, the others rejected on DL)."""
        rows = np.asarray(rows, dtype=np.int64)
        rej = self.rejected[rows]
        ul = np.asarray(ul, dtype=bool) & rej
        ev = self.evaluator()
        if ev is None:
            return np.array([self.row(i, u)[4] for i, u in zip(rows, ul)])
        w = bit_weights(self.shape[1])
        ul_bits = ul.astype(np.int64) @ w
        return ev.t_comm(ul_bits, (rej.astype(np.int64) @ w) ^ ul_bits, self.n_rejected[rows])

    def t_comm(self, i, ul):
        return float(self.t_of([i], np.asarray(ul, dtype=bool)[None])[0])

    def _decision(self, masks, t=None):
        masks = np.asarray(masks, dtype=bool) & self.rejected
        if t is None:
            t = self.t_of(np.arange(self.shape[0]), masks)
        return ArrayDecision(self, masks, np.asarray(t, dtype=float))

    def evaluate_assignment(self, ul_mask):
        masks = np.broadcast_to(np.asarray(ul_mask, dtype=bool), self.shape)
        return self._decision(masks)

    @functools.cached_property
    def paper_order(self):
        """The devices in the paper's UL order, P_k ||a_k||^2 descending (stable): the order of
        every prefix split."""
        return np.argsort(-(self.p_ul * self.g_ul), kind="stable")

    def distinct_outcomes(self):
        """(once, again): an outcome of each distinct rejected set, and each outcome's set
        among them (SAA outcomes repeat sets: each is solved once)."""
        k = self.shape[1]
        # a set as the integer of its bits: a 1-D unique, a fraction of the time of rows'
        if k < 63:
            _, once, again = np.unique(self.rejected @ bit_weights(k), return_index=True,
                                       return_inverse=True)
        else:
            _, once, again = np.unique(self.rejected, axis=0, return_index=True,
                                       return_inverse=True)
        return once, np.ravel(again)

    def prefix_candidates(self):
        """UL masks (K + 1, n, K) of every prefix split c = 0..K of every outcome (its first c
        rejected devices in ``paper_order``, as ``prefix_masks`` takes them), and which of
        them exist (K + 1, n): c <= |R|."""
        n, k = self.shape
        order = self.paper_order
        rs = self.rejected[:, order]
        c = np.arange(k + 1)[:, None]
        masks = np.zeros((k + 1, n, k), dtype=bool)
        masks[:, :, order] = rs[None] & (np.cumsum(rs, axis=1)[None] <= c[:, :, None])
        return masks, c <= self.n_rejected[None, :]

    def prefix_masks(self):
        """(UL masks (n, K), T_comm (n,)): the best prefix split of every outcome (UL prefix in
        the paper's order, each prefix evaluated under the scheme; the first minimiser)."""
        n, k = self.shape
        order = self.paper_order
        rs = self.rejected[:, order]
        # one outcome (the engine's decision of a round): its prefixes have different sizes,
        # so batches of one; ``Transmission.links`` one at a time costs less
        ev = None if n == 1 else self.evaluator()
        if ev is None:
            table = np.full((n, k + 1), np.inf)
            for i in range(n):
                ul = np.zeros(k, dtype=bool)
                table[i, 0] = self.row(i, ul)[4]
                for c in np.flatnonzero(rs[i]):
                    ul[order[c]] = True
                    table[i, c + 1] = self.row(i, ul)[4]
        else:   # outcomes with the same rejected set (common among SAA samples) once
            once, again = self.distinct_outcomes()
            if ev.compiled is not None:   # the first minimiser and its T_comm at once
                j, best = (x[again] for x in
                           ev.compiled.prefix(order, rs[once], self.n_rejected[once]))
                return self._prefix_masks(order, rs, j), best
            table = self._prefix_table(order, rs[once], self.n_rejected[once])[again]
        j = first_min(table)
        return self._prefix_masks(order, rs, j), table[np.arange(n), j]

    @staticmethod
    def _prefix_masks(order, rs, j):
        """UL masks (n, K) of the prefixes ``j`` (n,) of outcomes ``rs`` (columns in ``order``)."""
        n, k = rs.shape
        masks = np.zeros((n, k), dtype=bool)
        masks[:, order] = rs & (np.arange(k)[None, :] < j[:, None])
        return masks

    def _prefix_table(self, order, rs, n_rejected):
        """T_comm (n, K + 1) of the prefixes of outcomes ``rs`` (rejected, columns in ``order``;
        column c of the table: the first c rejected devices of ``order`` on UL), inf where no
        prefix is or where one cannot be the first minimiser. T_comm = max(T_UL, T_DL), and
        T_UL is at least its weakest member's delay alone on the pooled band (interference and
        combining only lower a stream's SINR below its single-user SNR; an orthogonal UL's
        subband is narrower still). So the DL of every prefix is worked out, the UL at each
        outcome's lowest bound max(T_DL, that floor), then wherever the bound does not exceed
        the T_comm found there: a prefix skipped is slower than that one, so the first
        minimiser is the full table's."""
        ev = self.evaluator()
        n, k = rs.shape
        cum = np.zeros((n, k + 1), dtype=np.int64)                 # the UL set of each prefix
        cum[:, 1:] = np.cumsum(np.where(rs, bit_weights(k)[order], 0), axis=1)
        valid = np.ones((n, k + 1), dtype=bool)
        valid[:, 1:] = rs
        r = np.broadcast_to(n_rejected[:, None], cum.shape)
        rows, cols = np.nonzero(valid)
        td = np.full((n, k + 1), np.inf)
        td[rows, cols] = ev.dl_time(cum[rows, -1] ^ cum[rows, cols], r[rows, cols])
        weakest = np.minimum.accumulate(np.where(rs, (self.p_ul * ev.norms_ul)[order], np.inf),
                                        axis=1)
        band = ev.band(n_rejected)[:, None] * np.maximum(np.cumsum(rs, axis=1), 1)
        floor = np.zeros((n, k + 1))
        # 1e-9: the computed SINR may exceed the single-user SNR by rounding (about 1e-15)
        floor[:, 1:] = ul_full_power_delay(self.payload_bits, band, weakest, 1.0,
                                           self.n0) * (1.0 - 1e-9)
        bound = np.where(np.isnan(td), -np.inf, np.maximum(td, floor))
        bound[~valid] = np.inf
        bound[:, 0] = np.inf                    # all on DL: no UL to work out
        table = np.full((n, k + 1), np.inf)
        table[:, 0] = td[:, 0]

        def fill(rows, cols):
            if len(rows):
                tu = ev.ul_time(cum[rows, cols], r[rows, cols])
                table[rows, cols] = np.maximum(tu, td[rows, cols])

        first = np.argmin(bound, axis=1)        # the lowest bound first, then what remains
        rows = np.flatnonzero(valid[np.arange(n), first] & (first > 0))
        fill(rows, first[rows])
        best = np.min(np.where(np.isnan(table), np.inf, table), axis=1)
        todo = valid & ~(bound > best[:, None])
        todo[:, 0] = False
        todo[rows, first[rows]] = False
        fill(*np.nonzero(todo))
        return table

    def prefix_split(self):
        """The paper's prefix split applied as is (policy 'optimal' under these schemes)."""
        return self._decision(*self.prefix_masks())

    def exhaustive_split(self):
        """All 2^|R| assignments; ties keep the first (binary order, fewest UL first)."""
        n, k = self.shape
        masks, t = np.zeros((n, k), dtype=bool), np.zeros(n)
        for i in range(n):
            idx = np.flatnonzero(self.rejected[i])
            cand = assignment_masks(idx, k)
            ti = self.t_of(np.full(len(cand), i), cand)
            j = first_min(ti)
            masks[i], t[i] = cand[j], ti[j]
        return self._decision(masks, t)

    def local_search(self, max_passes=None):
        """From the best prefix split: the best single-device mode change, else the best
        exchange of one UL and one DL device, while T_comm drops (at most ``max_passes``
        improvements, default |R|). Every outcome still searching moves at once: one batch of
        all their candidate moves a pass."""
        masks, out = self.prefix_masks()
        masks, out = masks.copy(), out.copy()
        limit = self.n_rejected if max_passes is None else np.full(len(out), max_passes)
        moves = np.zeros(len(out), dtype=np.int64)
        live = np.flatnonzero(limit > 0)
        while live.size:
            t, trial = self._best_moves(live, masks[live], swaps=False)
            stuck = ~(t < out[live] * (1.0 - 1e-12))
            if stuck.any():
                t[stuck], trial[stuck] = self._best_moves(live[stuck], masks[live[stuck]],
                                                          swaps=True)
            better = t < out[live] * (1.0 - 1e-12)
            live = live[better]
            masks[live], out[live] = trial[better], t[better]
            moves[live] += 1
            live = live[moves[live] < limit[live]]
        return self._decision(masks, out)

    def _best_moves(self, rows, uls, swaps):
        """(T_comm (n,), UL masks (n, K)) of the best single change of each outcome ``rows``
        from its UL set ``uls`` (or, with ``swaps``, exchange of one UL and one DL device):
        the first minimiser of its moves, in device order; inf (and its own mask) where no
        move has a finite T_comm."""
        rej = self.rejected[rows]
        if swaps:    # (outcome, u, d) in order: u on UL, d on DL
            r, u, d = np.nonzero((rej & uls)[:, :, None] & (rej & ~uls)[:, None, :])
            flips = (r, u, d)
        else:
            r, u = np.nonzero(rej)
            flips = (r, u)
        trials = uls[r].copy()
        for dev in flips[1:]:
            trials[np.arange(len(r)), dev] ^= True
        t_best, best = np.full(len(rows), np.inf), uls.copy()
        if len(r):
            t = self.t_of(rows[r], trials)
            t = np.where(np.isnan(t), np.inf, t)   # NaN never wins (``first_min``)
            start = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
            low = np.minimum.reduceat(t, start)
            first = np.flatnonzero(t == np.repeat(low, np.diff(np.r_[start, len(r)])))
            first = first[np.r_[True, r[first][1:] != r[first][:-1]]]   # each outcome's first
            found = r[first]
            ok = t[first] < np.inf
            t_best[found[ok]], best[found[ok]] = t[first][ok], trials[first][ok]
        return t_best, best
