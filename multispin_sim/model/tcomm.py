"""T_comm of rejected sets under one channel state: the reactive policies' closed forms.

T_comm of a rejected set is computed by ``TcommKernel``: closed forms of the reactive policies
(optimal prefix split, all-UL, all-DL, random split), vectorised over rows. The kernel uses one
identity: with a common bandwidth b, a UL delay S / (b log2(1 + P_k g_k / (N0 b))) and the
equalised DL delay S / (b log2(1 + P_dl / (N0 b sum_D 1/g))) are the same increasing function
of an "equivalent load" (P_dl / (P_k g_k) for UL device k, sum_D 1/g for the DL set), so the
slowest transmission and the best prefix split are found by comparing loads, without logarithms,
and only the final delay of each row needs one ``log1p``. Results equal ``reactive.optimal_split``
(and the others) to rounding. Any other reactive policy is called through ``PolicyKernel``.
"""
import copy
from functools import cached_property

import numpy as np

from .antennas import ArrayGains
from .reactive import evaluate_assignment

_LN2 = np.log(2.0)
FAST_MODES = ("optimal", "exhaustive", "all-ul", "all-dl", "random")


class TcommKernel:
    """T_comm of many rejected sets under one channel state, by closed forms.

    ``system``: a ``model.system.System`` (powers, payload, bandwidth, noise). ``g_ul, g_dl``:
    gains (K,) shared by all rows, or (M, K) per sample (row ``rows[i]`` of the batch uses sample
    ``rows[i]``'s gains). ``mode``: one of ``FAST_MODES`` ('exhaustive' has the optimal split's
    T_comm). ``coin``: (M, K) bool, the random split's fair coins (True = UL) per sample.

    ``kernel(rejected, rows)``: rejected (n, K) bool, rows (n,) sample indices (needed for
    per-sample gains and the coins) -> (n,) seconds.
    """

    # a compiled search may evaluate this kernel's closed forms itself (``closed_form``); a
    # subclass whose T_comm is not "the Shannon delay of an equivalent load" sets this False
    shannon = True

    def __init__(self, system, g_ul, g_dl, mode="optimal", coin=None):
        if mode not in FAST_MODES:
            raise ValueError(f"no closed-form kernel for reactive mode {mode!r}; "
                             f"allowed: {', '.join(FAST_MODES)}")
        if mode == "random" and coin is None:
            raise ValueError("mode 'random' needs the coin table")
        self.mode = "optimal" if mode == "exhaustive" else mode
        g_ul = np.asarray(g_ul, dtype=float)
        g_dl = np.asarray(g_dl, dtype=float)
        p_ul = np.asarray(system.p_ul_w, dtype=float)
        self.k = g_ul.shape[-1]
        self.per_sample = g_ul.ndim == 2 or g_dl.ndim == 2
        if self.per_sample:
            shape = np.broadcast_shapes(g_ul.shape, g_dl.shape)
            g_ul, g_dl = np.broadcast_to(g_ul, shape), np.broadcast_to(g_dl, shape)
        self.p_dl = float(system.p_dl_w)
        self.bits = float(system.payload_bits)
        self.bw = float(system.bandwidth_hz)
        self.n0 = float(system.n0)
        self._bits_s, self._n0_bw = self.bits * _LN2 / self.bw, self.n0 * self.bw   # of ``_delay``
        q = p_ul * g_ul          # UL "SNR power" P_k g_k: larger is faster
        with np.errstate(divide="ignore"):
            v = 1.0 / g_dl           # DL load of one device
        self.q, self.v = q, v
        self.finite_v = bool(np.isfinite(v).all())
        self.coin = None if coin is None else np.asarray(coin, dtype=bool)
        self._work = None   # the optimal split's work array (``_splits``)

    # made when first needed: a compiled search reads only ``order_rev`` of them
    @cached_property
    def order_rev(self):
        """The devices in reversed UL order (P g ascending), per sample where gains are."""
        return np.ascontiguousarray(np.argsort(-self.q, axis=-1, kind="stable")[..., ::-1])

    @cached_property
    def _split_loads(self):
        """(u_split, v_rev): the UL loads P_dl / (P g) of the splits in ``_optimal`` in
        ``order_rev``, with 0 for the all-DL split at the end, and the DL loads 1/g in it."""
        with np.errstate(divide="ignore"):
            u = self.p_dl / self.q    # the UL device's equivalent DL load
        u_rev, v_rev = (np.take_along_axis(a, self.order_rev, axis=-1) for a in (u, self.v))
        pad = np.zeros(u_rev.shape[:-1] + (1,))
        return np.concatenate([u_rev, pad], axis=-1), v_rev

    # -- helpers ---------------------------------------------------------------------------
    def _delay(self, r, z):
        """S / (b log2(1 + z / (N0 b))) with b = B / r (r >= 1 where anybody is rejected)."""
        rr = np.maximum(r, 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = self._bits_s * rr / np.log1p(z * rr / self._n0_bw)
        return np.where(r > 0, t, 0.0)

    def _dl_delay(self, r, s):
        """Equalised DL delay of a set with load s = sum 1/g: the delay at z = P_dl / s."""
        with np.errstate(divide="ignore", invalid="ignore"):
            z = self.p_dl / s
        t = self._delay(r, z)
        return np.where(s > 0, t, 0.0)

    def _rows(self, a, rows):
        return a[rows] if self.per_sample else a

    # -- the kernel --------------------------------------------------------------------------
    def __call__(self, rejected, rows=None):
        rej = np.asarray(rejected, dtype=bool)
        if rej.ndim == 1:
            rej = rej[None, :]
        n = rej.shape[0]
        if rows is None:
            rows = np.arange(n)
        rows = np.asarray(rows)
        mode = self.mode
        if mode == "optimal" and self.p_dl <= 0:
            mode = "all-ul"
        if mode == "optimal":
            return self._optimal(rej, rows)
        r = rej.sum(axis=1)
        q = self._rows(self.q, rows)
        v = self._rows(self.v, rows)
        if mode == "all-ul":
            return self._delay(r, np.where(rej, q, np.inf).min(axis=1))
        if mode == "all-dl":
            return self._dl_delay(r, np.where(rej, v, 0.0).sum(axis=1))
        coin = self.coin[rows]
        ul = rej & coin
        dl = rej & ~coin
        t_ul = self._delay(r, np.where(ul, q, np.inf).min(axis=1))
        t_dl = self._dl_delay(r, np.where(dl, v, 0.0).sum(axis=1))
        return np.maximum(t_ul, t_dl)

    def _optimal(self, rej, rows):
        """Prefix lemma in load space: min over splits of max(UL load, DL load) (``_splits``),
        on the rows transposed into the split order."""
        u_split, v_rev = self._split_loads
        if self.per_sample:
            rs = np.take_along_axis(rej, self.order_rev[rows], axis=1).T
            return self._splits(rs, u_split[rows].T, v_rev[rows].T)
        return self._splits(rej.T[self.order_rev], u_split[:, None], v_rev[:, None])

    def _splits(self, rs, u, v):
        """T_comm of the optimal split of each column of ``rs`` (K, n): rejected devices in
        reversed UL order (P g ascending, so the UL load P_dl / (P g) descending down a column).

        A split puts a prefix of the rejected devices (in UL order) on UL: its UL load is that
        of its last device, its DL load the sum of 1/g over the rejected devices after it.
        Split i puts rows >= i on UL (load u[i]) and the rejected rows < i on DL (load dl[i],
        accumulated row by row); split K is all-DL. Every split is taken, rejected row or not:
        a split at a row that is not rejected has the DL load of the split at the next rejected
        row and a UL load at least as large (or, with none after it, is at least the all-DL
        load), so the minimum is that over the splits at rejected rows, the same number.
        """
        k, n = rs.shape
        r = rs.sum(axis=0, dtype=np.int32)
        # one work array for the kernel's life: a fresh one of this size each call costs more
        # (page faults) than the arithmetic
        if self._work is None or self._work.shape[1] < n:
            self._work = np.empty((k + 1, n))
        dl = self._work[:, :n]
        dl[0] = 0.0
        # a product is cheaper than a select, and the same numbers where every 1/g is finite
        if self.finite_v:
            np.multiply(rs, v, out=dl[1:])
        else:
            dl[1:] = np.where(rs, v, 0.0)
        if n < 256:                              # few columns: one call beats a loop
            dl = np.add.accumulate(dl, axis=0)
        else:
            for i in range(2, k + 1):
                dl[i] += dl[i - 1]
        return self._dl_delay(r, np.maximum(u, dl, out=dl).min(axis=0))


class RowStream:
    """A random stream for a reactive policy evaluated on a subset of samples.

    ``random(size)`` with size (len(rows), K) returns the fixed uniforms of those samples, so a
    randomised policy that draws one (M, K) table per call (like ``random_split``) sees the same
    numbers for a sample whichever batch it is evaluated in (common random numbers). Any other
    draw falls back to a seeded Generator.
    """

    def __init__(self, table, rows, fallback):
        self._table = table
        self._rows = rows
        self._fallback = fallback

    def random(self, size=None, *args, **kwargs):
        if (self._table is not None and size is not None and not args and not kwargs
                and tuple(np.atleast_1d(size)) == (len(self._rows), self._table.shape[1])):
            return self._table[self._rows].copy()
        return self._fallback.random(size, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._fallback, name)


class PolicyKernel:
    """T_comm from any reactive policy object (``decide(problem, rng) -> ReactiveDecision``).

    ``uniforms``: (M, K) per-sample uniforms handed to the policy through ``RowStream`` (common
    random numbers for randomised policies); ``seed``: seeds the fallback Generator; ``coin``:
    (M, K) bool fixed UL coins instead of the policy (the random split under exact enumeration);
    ``present``: the devices in the round (``ReactiveProblem.present``). The gains may be a
    stack of channel vectors (samples, K, M), complex (a shared band planned against the
    vectors' law): each sample is then its own channel state, its rows decided on it.
    """

    def __init__(self, system, g_ul, g_dl, policy, uniforms=None, seed=0, coin=None,
                 present=None):
        self.system = system
        self.states = None
        if np.iscomplexobj(g_ul):   # a stack of channel states: each sample's made when met
            self.states, self._state_of = (np.asarray(g_ul), np.asarray(g_dl)), {}
        else:
            # asanyarray: gains that carry channel vectors keep them (a shared band needs them)
            self.g_ul = np.asanyarray(g_ul, dtype=float)
            self.g_dl = np.asanyarray(g_dl, dtype=float)
        self.policy = policy
        self.uniforms = uniforms
        self.seed = seed
        self.coin = None if coin is None else np.asarray(coin, dtype=bool)
        self.present = present

    def decision(self, rejected, rows=None):
        """The ``ReactiveDecision`` of the rejected rows (rows: their sample indices)."""
        rej = np.atleast_2d(np.asarray(rejected, dtype=bool))
        if rows is None:
            rows = np.arange(rej.shape[0])
        rows = np.asarray(rows)
        g_ul = self.g_ul[rows] if self.g_ul.ndim == 2 else self.g_ul
        g_dl = self.g_dl[rows] if self.g_dl.ndim == 2 else self.g_dl
        problem = self.system.reactive_problem(rej, g_ul, g_dl, self.present)
        if self.coin is not None:
            return evaluate_assignment(problem, self.coin[rows] & rej)
        stream = RowStream(self.uniforms, rows, np.random.default_rng(self.seed))
        return self.policy.decide(problem, stream)

    def score(self, decision):
        """What the kernel returns of a decision: its T_comm (n,)."""
        return np.asarray(decision.t_comm, dtype=float)

    def __call__(self, rejected, rows=None):
        if self.states is None:
            return self.score(self.decision(rejected, rows))
        rej = np.atleast_2d(np.asarray(rejected, dtype=bool))
        rows = np.arange(rej.shape[0]) if rows is None else np.asarray(rows)
        out = np.empty(rej.shape[0])
        for s in np.unique(rows).tolist():
            on = rows == s
            out[on] = self.score(self._state(s).decision(rej[on], rows[on]))
        return out

    def _state(self, s):
        """This kernel on sample ``s``'s channel state (kept: its evaluations stay memoised)."""
        got = self._state_of.get(s)
        if got is None:
            got = self._state_of[s] = copy.copy(self)
            a_ul, a_dl = self.states
            got.states = None
            got.g_ul = ArrayGains.of(a_ul[s])
            got.g_dl = got.g_ul if a_dl is a_ul else ArrayGains.of(a_dl[s])
        return got
