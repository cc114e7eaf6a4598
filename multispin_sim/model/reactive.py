"""The reactive problem (docs/model.md section 6): modes and powers for the rejected devices.

For one verification outcome, every rejected device k gets bandwidth b = B/|R| and sends one
distribution of S bits, either uplink (UL: device power p_k <= P_k^ul) or downlink (DL: the
server's total power sum p_k <= P^dl is shared). The objective is the slowest transmission,
T_comm = max_k delay_k.

- UL devices transmit at full power: d_k^ul = S / (b log2(1 + P_k^ul g_k^ul / (N0 b))).
- DL devices equalise their delays: p_k(tau) = (N0 b / g_k^dl)(2^(S/(b tau)) - 1), with tau the
  root of sum_k p_k(tau) = P^dl; for equal S and b the closed form is
  tau = S / (b log2(1 + P^dl / (N0 b sum_k 1/g_k^dl))).
- Prefix lemma: sorted by d^ul ascending, some optimal assignment puts a prefix on UL. Because b
  is common to the outcome, d^ul is ordered by the UL SNR key P_k^ul g_k^ul alone (descending),
  so the order does not depend on |R|.

Everything here is vectorised over M outcomes at once: ``rejected`` has shape (M, K); gains
have shape (K,) (one channel state, many outcomes: the draft-length search) or (M, K).
"""
from dataclasses import dataclass
import math
from itertools import product
from operator import itemgetter
from typing import Optional

import numpy as np

NONE, UL, DL = 0, 1, 2
_LN2 = np.log(2.0)


def _log2_1p(x):
    return np.log1p(x) / _LN2


@dataclass(frozen=True)
class ReactiveProblem:
    """The data of M reactive problems over K devices (one per verification outcome).

    rejected: (M, K) bool; g_ul, g_dl: linear gains, (K,) or (M, K); p_ul: UL power budgets in W,
    scalar or (K,); p_dl: the server's total DL budget in W; payload_bits: S; bandwidth_hz: the
    total bandwidth B, split equally among each outcome's rejected devices; n0: noise PSD W/Hz;
    present: the devices in the round, rejected or not, each waiting while the corrections are
    sent (None: all K; an energy-aware choice counts their idle energy). Derived:
    n_rejected (M,) = |R| per outcome; bandwidth_per_device (M,) = B / |R| (0 where nobody is
    rejected).
    """

    rejected: np.ndarray
    g_ul: np.ndarray
    g_dl: np.ndarray
    p_ul: np.ndarray
    p_dl: float
    payload_bits: float
    bandwidth_hz: float
    n0: float
    present: Optional[int] = None

    # a problem whose assignments a transmission scheme evaluates (``model.mimo.ArrayProblem``)
    multi_user = False

    def __post_init__(self):
        rejected = np.asarray(self.rejected, dtype=bool)
        if rejected.ndim == 1:
            rejected = rejected[None, :]
        setattr_ = object.__setattr__
        setattr_(self, "rejected", rejected)
        k = rejected.shape[1]
        setattr_(self, "g_ul", np.asarray(self.g_ul, dtype=float))
        setattr_(self, "g_dl", np.asarray(self.g_dl, dtype=float))
        p_ul = np.asarray(self.p_ul, dtype=float)
        if p_ul.shape != (k,):
            p_ul = np.broadcast_to(p_ul, (k,))
        setattr_(self, "p_ul", p_ul)
        n = rejected.sum(axis=1)
        setattr_(self, "n_rejected", n)
        setattr_(self, "bandwidth_per_device",
                 np.where(n > 0, self.bandwidth_hz / np.maximum(n, 1), 0.0))

    @property
    def shape(self):
        return self.rejected.shape

    def ul_snr_key(self):
        """P_k^ul g_k^ul: larger means shorter full-power UL delay (for any common b)."""
        return self.p_ul * self.g_ul

    def ul_delays(self):
        """Full-power UL delay of every device (M, K) if it were rejected with this outcome's b."""
        b = self.bandwidth_per_device[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            return ul_full_power_delay(self.payload_bits, b, self.p_ul, self.g_ul, self.n0)


@dataclass
class ReactiveDecision:
    """What the reactive policy decided for each of M outcomes.

    mode: (M, K) int8 in {NONE, UL, DL}; power_w: (M, K) transmit power (device for UL, server
    for DL; 0 where not transmitting); delay_s: (M, K) transmission delay (0 where none);
    bandwidth_hz: (M,) bandwidth of each transmitting device; t_comm: (M,) slowest delay.
    A policy that defers sets ``deferred`` ((1, K) bool: corrections sent at the next round
    start), one with a menu of DL formats ``dl_choice`` ((M, K): each device's format).
    ``airtime_s`` ((M, K)): each stream's time on air where it is shorter than its delay (a
    ZF group of a shared band waits for the earlier groups' turns), else None (the delay).
    """

    deferred = None
    dl_choice = None
    airtime_s = None
    mode: np.ndarray
    power_w: np.ndarray
    delay_s: np.ndarray
    bandwidth_hz: np.ndarray
    t_comm: np.ndarray

    @property
    def n_ul(self):
        return (self.mode == UL).sum(axis=1)

    @property
    def n_dl(self):
        return (self.mode == DL).sum(axis=1)


# ---------------------------------------------------------------------------- closed forms


def ul_full_power_delay(bits, bandwidth_hz, p_ul, g_ul, n0):
    """d^ul = S / (b log2(1 + P g / (N0 b))), seconds."""
    b = np.asarray(bandwidth_hz, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return bits / (b * _log2_1p(np.asarray(p_ul) * np.asarray(g_ul) / (n0 * b)))


def dl_common_delay(bits, bandwidth_hz, p_dl, inv_gain_sum, n0):
    """Closed-form equalised DL delay for equal S and b: S / (b log2(1 + P / (N0 b sum 1/g))).

    ``inv_gain_sum`` = sum over the DL set of 1/g_k^dl; an empty set (0) has delay 0, and a zero
    budget with a non-empty set has infinite delay.
    """
    b = np.asarray(bandwidth_hz, dtype=float)
    inv = np.asarray(inv_gain_sum, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = bits / (b * _log2_1p(p_dl / (n0 * b * inv)))
    return np.where(inv > 0, tau, 0.0)


def dl_power_for_delay(tau, bits, bandwidth_hz, g_dl, n0):
    """Power that delivers ``bits`` in ``tau`` seconds: (N0 b / g)(2^(S/(b tau)) - 1)."""
    b = np.asarray(bandwidth_hz, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return n0 * b / np.asarray(g_dl) * np.expm1(np.asarray(bits) / (b * tau) * _LN2)


def dl_delay_equalising(bits, bandwidth_hz, g_dl, p_dl, n0, xtol=1e-15, rtol=1e-13):
    """Equalised DL delay and powers for one DL set with per-device S_k and b_k (1-D arrays).

    tau solves sum_k p_k(tau) = P^dl; p_k is decreasing in tau, so the root is bracketed by the
    largest single-device delay with all of P^dl (a lower bound) and the largest delay under the
    equal split P^dl / n (feasible, so an upper bound); scipy's brentq finds it.
    Returns (tau, powers). An empty set gives (0, []); a zero budget gives (inf, zeros).
    """
    bits, b, g = np.broadcast_arrays(*(np.atleast_1d(np.asarray(a, float))
                                       for a in (bits, bandwidth_hz, g_dl)))
    if bits.size == 0:
        return 0.0, np.zeros(0)
    if p_dl <= 0:
        return np.inf, np.zeros_like(bits)
    lo = float(np.max(ul_full_power_delay(bits, b, p_dl, g, n0)))
    hi = float(np.max(ul_full_power_delay(bits, b, p_dl / bits.size, g, n0)))
    if hi <= lo * (1 + rtol):
        tau = hi
    else:
        from scipy.optimize import brentq  # imported here: scipy.optimize costs ~0.5 s to load

        tau = brentq(lambda t: np.sum(dl_power_for_delay(t, bits, b, g, n0)) - p_dl, lo, hi,
                     xtol=xtol, rtol=rtol)
    return tau, dl_power_for_delay(tau, bits, b, g, n0)


# ---------------------------------------------------------------------------- assignments


def evaluate_assignment(problem, ul_mask):
    """Delays and powers of a given mode assignment: UL at full power, DL delay-equalising.

    ``ul_mask`` (M, K) bool says which rejected devices use UL; the other rejected devices use DL.
    """
    if problem.multi_user:
        return problem.evaluate_assignment(ul_mask)
    rejected = problem.rejected
    ul = np.asarray(ul_mask, dtype=bool) & rejected
    dl = rejected & ~ul
    m, k = problem.shape
    b = problem.bandwidth_per_device
    bcol = b[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_g = np.where(dl, 1.0 / problem.g_dl, 0.0)
        tau = dl_common_delay(problem.payload_bits, b, problem.p_dl, inv_g.sum(axis=1), problem.n0)
        d_ul = np.where(ul, problem.ul_delays(), 0.0)
        p_dl = np.where(dl, dl_power_for_delay(tau[:, None], problem.payload_bits, bcol,
                                               problem.g_dl, problem.n0), 0.0)
    mode = np.zeros((m, k), dtype=np.int8)
    mode[ul] = UL
    mode[dl] = DL
    power = np.where(ul, np.broadcast_to(problem.p_ul, (m, k)), p_dl)
    delay = np.where(dl, tau[:, None], d_ul)
    t_comm = np.maximum(d_ul.max(axis=1, initial=0.0), tau)
    bandwidth = np.where(rejected.any(axis=1), b, 0.0)
    return ReactiveDecision(mode, power, delay, bandwidth, t_comm)


def ul_order(problem):
    """Column order putting devices by full-power UL delay ascending (stable), (K,) or (M, K)."""
    key = -np.broadcast_to(problem.ul_snr_key(), problem.g_ul.shape)
    return np.argsort(key, axis=-1, kind="stable")


@dataclass(frozen=True)
class PrefixTable:
    """The prefix splits of M outcomes (docs/model.md section 6), each outcome's devices in
    ``cols`` order: rejected first, in UL-delay order, then the others.

    cols: (M, K) device of each position; rejected: (M, K) bool by position; d_ul: (M, K)
    full-power UL delay by position (inf where not rejected); tau: (M, K + 1) equalised DL delay
    of the devices at positions n.. (0 for none); f: (M, K + 1) T_comm of the split with the
    first n on UL, max(d_ul[n - 1], tau[n]) (inf for n > |R|).
    """

    cols: np.ndarray
    rejected: np.ndarray
    d_ul: np.ndarray
    tau: np.ndarray
    f: np.ndarray


def prefix_table(problem):
    """Every prefix split of every outcome at once (``PrefixTable``)."""
    m, k = problem.shape
    order = ul_order(problem)
    order2 = np.broadcast_to(order, (m, k))
    rej_sorted = np.take_along_axis(problem.rejected, order2, axis=1)
    # Rejected devices first (in UL order), non-rejected after: a stable sort on ~rejected.
    pos = np.argsort(~rej_sorted, axis=1, kind="stable")
    cols = np.take_along_axis(order2, pos, axis=1)
    rej = np.take_along_axis(rej_sorted, pos, axis=1)
    d_ul = problem.ul_delays()
    g_dl = np.broadcast_to(problem.g_dl, (m, k))
    d_sorted = np.where(rej, np.take_along_axis(d_ul, cols, axis=1), np.inf)
    with np.errstate(divide="ignore"):   # a zero gain: an infinite load, an infinite delay
        inv_sorted = np.where(rej, 1.0 / np.take_along_axis(g_dl, cols, axis=1), 0.0)
    suffix = np.zeros((m, k + 1))
    suffix[:, :k] = np.cumsum(inv_sorted[:, ::-1], axis=1)[:, ::-1]
    b = problem.bandwidth_per_device[:, None]
    tau = dl_common_delay(problem.payload_bits, b, problem.p_dl, suffix, problem.n0)
    ul_max = np.concatenate([np.zeros((m, 1)), d_sorted], axis=1)
    return PrefixTable(cols, rej, d_sorted, tau, np.maximum(ul_max, tau))


def prefix_split_delays(problem):
    """f(n) = max(d^ul_(n), tau_dl(D_n)) for n = 0..K, shape (M, K + 1); inf for n > |R|;
    and the column order (``PrefixTable.f``, ``PrefixTable.cols``).

    Devices are taken in UL-delay order restricted to the rejected set; n is the number of
    UL devices (the first n of that order).
    """
    table = prefix_table(problem)
    return table.f, table.cols


def optimal_split(problem):
    """The optimal modes and powers by the prefix structure, every split n evaluated at once
    (a multi-user problem: the prefix split applied as is, ``model.mimo``)."""
    if problem.multi_user:
        return problem.prefix_split()
    if problem.shape[0] == 1 and problem.g_ul.ndim == 1 and problem.g_dl.ndim == 1:
        return _optimal_split_one(problem)
    f, cols = prefix_split_delays(problem)
    n_ul = np.argmin(f, axis=1)
    rank = np.empty_like(cols)
    np.put_along_axis(rank, cols, np.arange(cols.shape[1])[None, :], axis=1)
    ul_mask = problem.rejected & (rank < n_ul[:, None])
    return evaluate_assignment(problem, ul_mask)


def _optimal_split_one(problem):
    """``optimal_split`` for one outcome and one channel state, on the rejected devices only.

    The same computation as ``prefix_split_delays`` + ``evaluate_assignment``, written on Python
    floats for the |R| rejected devices: the engine calls it once per round, and for a handful of
    devices scalar arithmetic is several times faster than numpy's per-call overhead.
    """
    k = problem.shape[1]
    idx = np.flatnonzero(problem.rejected[0]).tolist()
    if not idx:
        zeros = np.zeros((1, k))
        return ReactiveDecision(np.zeros((1, k), dtype=np.int8), zeros, zeros.copy(),
                                np.zeros(1), np.zeros(1))
    b = float(problem.bandwidth_per_device[0])
    mode, power, delay, t_comm = split_one(
        idx, k, problem.p_ul.tolist(), problem.g_ul.tolist(), problem.g_dl.tolist(),
        float(problem.payload_bits), float(problem.n0), float(problem.p_dl), b)
    return ReactiveDecision(np.array([mode], dtype=np.int8), np.array([power]),
                            np.array([delay]), np.array([b]), np.array([t_comm]))


_LN2_FLOAT = float(_LN2)  # the same double as _LN2, as a Python float (cheaper arithmetic)


def split_one(idx, k, p_ul, g_ul, g_dl, s_bits, n0, p_dl, b):
    """The optimal split of one outcome in Python floats: the core of ``_optimal_split_one``.

    ``idx``: the rejected devices (ascending, non-empty); ``p_ul``, ``g_ul``, ``g_dl``: lists of
    K floats; ``b``: the bandwidth of each rejected device, B / |R|. Returns (mode, power, delay)
    as lists of K and the slowest delay f(n*) of the chosen split. The same IEEE operations in
    the same order as ``prefix_split_delays`` + ``evaluate_assignment`` on one outcome, with
    ``math.log1p``.
    """
    nb = n0 * b
    log1p, inf, ln2 = math.log1p, math.inf, _LN2_FLOAT
    n = len(idx)
    if n == 1:
        key = [p_ul[idx[0]] * g_ul[idx[0]]]
        dev = idx
    else:
        key = [p_ul[i] * g_ul[i] for i in idx]
        # stable: UL-delay order
        pick = itemgetter(*sorted(range(n), key=key.__getitem__, reverse=True))
        dev, key = pick(idx), pick(key)
    # suffix[m]: sum of 1/g_dl over the devices m..n-1 in UL order (summed from the end)
    suffix = [0.0] * (n + 1)
    x = 0.0
    j = n
    for i in reversed(dev):
        j -= 1
        g = g_dl[i]
        x = x + (1.0 / g if g > 0 else inf)
        suffix[j] = x
    # f(m) = max(d_ul[m-1], tau[m]) with d_ul the full-power UL delay of the m-th device in UL
    # order, S / (b log2(1 + key / (N0 b))), and tau[m] the equalised DL delay of the devices
    # m..n-1 (0 when there are none); n_ul is the first minimiser, as numpy's argmin. tau[m] is
    # worked out only when f(m) could still beat the best so far (d_ul[m-1] < best): skipping
    # it changes no value, since then f(m) >= d_ul[m-1] >= best.
    x = suffix[0]
    best = 0.0  # f(0) = max(0, tau[0]) = tau[0] >= 0
    if x > 0:
        rate = b * log1p(p_dl / (nb * x)) / ln2
        best = s_bits / rate if rate > 0 else inf
    n_ul, t_dl = 0, best
    d_ul = []
    m = 0
    for snr_key in key:
        m += 1
        rate = b * log1p(snr_key / nb) / ln2
        d = s_bits / rate if rate > 0 else inf
        d_ul.append(d)
        if d >= best:
            continue
        x = suffix[m]
        if x > 0:
            rate = b * log1p(p_dl / (nb * x)) / ln2
            t = s_bits / rate if rate > 0 else inf
        else:
            t = 0.0
        f = d if d >= t else t
        if f < best:
            n_ul, best, t_dl = m, f, t
    grow = math.expm1(s_bits / (b * t_dl) * ln2) if 0 < t_dl < inf else 0.0
    mode, power, delay = [0] * k, [0.0] * k, [0.0] * k
    m = 0
    for i in dev:
        if m < n_ul:
            mode[i] = UL
            power[i] = p_ul[i]
            delay[i] = d_ul[m]
        else:
            mode[i] = DL
            g = g_dl[i]
            power[i] = (nb / g if g > 0 else inf) * grow   # a zero gain: numpy's inf, nan
            delay[i] = t_dl
        m += 1
    return mode, power, delay, best


def assign_one(idx, ul, k, p_ul, g_ul, g_dl, s_bits, n0, p_dl, b):
    """``evaluate_assignment`` of one outcome in Python floats, with numpy's own ``log1p``,
    ``expm1`` and sum: the engine's baseline modes (all-UL, all-DL, random) once per round.

    ``idx``: the rejected devices (ascending, non-empty); ``ul``: for each of them, True for
    UL; ``p_ul``, ``g_ul``, ``g_dl``: lists of K floats, the gains finite and positive (the
    caller checks); ``b``: B / |R|. Returns (mode, power, delay) as lists of K and T_comm.
    The same IEEE operations in the same order as ``evaluate_assignment`` on one outcome: the
    logarithms come from one ``np.log1p`` call (numpy's, not ``math``'s: they differ in the
    last bit on some inputs), the DL load is numpy's sum over the K devices (zeros for the
    others).
    """
    nb = n0 * b
    ln2 = _LN2_FLOAT
    args, ul_dev, dl_dev = [], [], []
    inv = None
    for i, up in zip(idx, ul):
        if up:
            ul_dev.append(i)
            args.append(p_ul[i] * g_ul[i] / nb)
        else:
            if inv is None:
                inv = [0.0] * k
            inv[i] = 1.0 / g_dl[i]
            dl_dev.append(i)
    if dl_dev:   # tau = S / (b log2(1 + P_dl / (N0 b sum 1/g))); the sum is > 0
        args.append(p_dl / (nb * float(np.add.reduce(np.array(inv)))))
    logs = np.log1p(np.array(args)).tolist()
    mode, power, delay = [0] * k, [0.0] * k, [0.0] * k
    t_comm = 0.0
    for j, i in enumerate(ul_dev):
        rate = b * (logs[j] / ln2)
        d = s_bits / rate if rate != 0.0 else math.inf
        mode[i], power[i], delay[i] = UL, p_ul[i], d
        if d > t_comm:
            t_comm = d
    if dl_dev:
        rate = b * (logs[-1] / ln2)
        tau = s_bits / rate if rate != 0.0 else math.inf
        bt = b * tau
        grow = float(np.expm1(s_bits / bt * ln2)) if bt != 0.0 else math.inf
        for i in dl_dev:
            mode[i], power[i], delay[i] = DL, nb / g_dl[i] * grow, tau
        if tau > t_comm:
            t_comm = tau
    return mode, power, delay, t_comm


def all_ul(problem):
    """Every rejected device corrects uplink at full power."""
    return evaluate_assignment(problem, problem.rejected)


def all_dl(problem):
    """Every rejected device corrects downlink with delay-equalising power."""
    return evaluate_assignment(problem, np.zeros(problem.shape, dtype=bool))


def random_split(problem, rng):
    """Each rejected device UL or DL with probability 1/2; powers optimised for that split.

    Draws M x K uniforms whatever the outcome, so the stream advances the same way every round.
    """
    coin = rng.random(problem.shape) < 0.5
    return evaluate_assignment(problem, coin)


def exhaustive_split(problem):
    """Reference: every one of the 2^|R| assignments of each outcome, the best kept.

    Ties keep the first assignment found (fewest UL devices in binary order). Cost 2^|R|.
    """
    if problem.multi_user:
        return problem.exhaustive_split()
    m, k = problem.shape
    best = np.zeros((m, k), dtype=bool)
    for i in range(m):
        idx = np.flatnonzero(problem.rejected[i])
        if idx.size == 0:
            continue
        full = assignment_masks(idx, k)
        sub = ReactiveProblem(
            np.broadcast_to(problem.rejected[i], full.shape),
            _row(problem.g_ul, i), _row(problem.g_dl, i), problem.p_ul, problem.p_dl,
            problem.payload_bits, problem.bandwidth_hz, problem.n0,
        )
        t = evaluate_assignment(sub, full).t_comm
        best[i] = full[int(np.argmin(t))]
    return evaluate_assignment(problem, best)


def assignment_masks(idx, k):
    """The 2^|idx| UL sets of the devices ``idx`` as masks (2^|idx|, K), in binary order (the
    first all DL, the last device flipping fastest)."""
    full = np.zeros((2 ** idx.size, k), dtype=bool)
    full[:, idx] = np.array(list(product((False, True), repeat=idx.size)),
                            dtype=bool).reshape(len(full), idx.size)
    return full


def _row(gain, i):
    return gain if gain.ndim == 1 else gain[i]
