"""The draft search compiled with numba: the closed-form T_comm, the path scans and the greedy.

An implementation of the same objective as the numpy reference (``model.goodput``,
``model.tcomm``, ``policies.draft_search``), used where it applies: the SAA estimator, a
closed-form Shannon kernel (optimal split, all-UL, all-DL, random split), the goodput ratio
with T_ver a function of the total draft length (every verification cost model: a table over
that total), finite positive gains and at most 64 devices (a rejected set is one
64-bit mask). Plain sequential loops and numba's own math: values agree with numpy's within
rtol 1e-12 (different summation order and libm), and candidates are compared by the shared
tie rule (``model.ties``, compiled from the same source), so decisions agree except at
near-ties. Imported only when a searching controller runs (it imports numba).

What is compiled: whole searches, each one call (``CompiledSearch``): the greedy here, the
uniform scan and the budget search in ``budget_numba``; the T_comm of rejected sets they solve
(``_times``) and the events of a nondecreasing path (``_path_events``) are
shared by them. Every other use of the objective (the other searches, single evaluations) is
numpy's.
"""
import math
import threading

import numba
import numpy as np

from ..model import ties
from ..model.estimators import SAATcomm

MAX_DEVICES = 64
_MODES = {"optimal": 0, "all-ul": 1, "all-dl": 2, "random": 3}
_jit = numba.njit(cache=True, error_model="numpy", nogil=True)

improves = _jit(ties.improves)
best_index = _jit(ties.best_index)


LANES = 32      # rejected sets evaluated side by side (independent chains: vectorised loops)
_BIG = 1e308    # stands for "not a candidate" in the branch-free minima
_SCRATCH = threading.local()


def scratch(name, shape, dtype=np.float64):
    """This thread's work array ``name`` (contents undefined), kept from one decision to the
    next: fresh arrays of a few hundred KiB each decision cost their page faults every time
    (a sixth of a compiled budget search)."""
    held = _SCRATCH.__dict__.get(name)
    if held is None or held.shape != shape or held.dtype != dtype:
        held = _SCRATCH.__dict__[name] = np.empty(shape, dtype)
    return held


def greedy_scratch(m_count, k, role="greedy"):
    """The work arrays of ``greedy`` for M samples and K devices (``scratch``)."""
    size = m_count * k + LANES
    return (scratch(role + ".masks", (size,), np.uint64),
            scratch(role + ".samples", (size,), np.int64),
            scratch(role + ".who", (size,), np.int64),
            scratch(role + ".out", (size,)),
            scratch(role + ".contrib", (m_count, k)),
            scratch(role + ".runs_t", (k, m_count), np.int32))


@_jit
def _times(masks, samples, n, out, mode, qr, vr, ur, coin, c):
    """T_comm of the rejected sets masks[:n] (bit i: the device at position i of ascending UL
    quality) of samples ``samples[:n]`` (for the coins) into out[:n]; read in groups of
    ``LANES`` (the buffers have room for one more group). qr, vr, ur: P g, 1/g_dl and
    P_dl / (P g) in that order; coin: the random split's UL coins, a mask per sample;
    c = (c1, N0 B, P_dl). The closed forms of ``model.tcomm.TcommKernel`` in load space: the
    optimal split's loop, and one loop for the fixed splits, all-UL and all-DL being the split
    whose UL coins are all heads or all tails. A delay is c1 r / log1p(x) (r rejected; x = inf
    for no delay); a fixed split's T_comm is the larger of its UL and DL delays."""
    c1, n0b, p_dl = c[0], c[1], c[2]
    k = qr.shape[0]
    one = np.uint64(1)
    mk = np.empty(LANES, dtype=np.uint64)
    heads = ~np.uint64(0) if mode == 1 else np.uint64(0)   # all-UL / all-DL coins
    cf = np.full(LANES, heads, dtype=np.uint64)
    s = np.empty(LANES)
    z = np.empty(LANES)
    r = np.empty(LANES)
    for start in range(0, n, LANES):
        for j in range(LANES):
            mk[j] = masks[start + j]
            if mode == 3:
                cf[j] = coin[samples[start + j]] if start + j < n else np.uint64(0)
        s[:] = 0.0
        z[:] = _BIG
        r[:] = 0.0
        if mode == 0:      # optimal split: min over prefixes of max(UL load, DL load)
            for i in range(k):
                u, v = ur[i], vr[i]
                for j in range(LANES):
                    bf = 1.0 if mk[j] & one else 0.0   # a select: AVX2 has no u64 -> f64
                    mk[j] >>= one
                    r[j] += bf
                    z[j] = min(z[j], max(u, s[j]) + (1.0 - bf) * _BIG)
                    s[j] += bf * v
        else:              # a fixed split: UL where the coin says so, the weakest UL device
            for i in range(k):  # and the DL load
                q, v = qr[i], vr[i]
                for j in range(LANES):
                    bf = 1.0 if mk[j] & one else 0.0
                    bu = bf if (cf[j] >> np.uint64(i)) & one else 0.0
                    mk[j] >>= one
                    r[j] += bf
                    z[j] = min(z[j], q + (1.0 - bu) * _BIG)
                    s[j] += (bf - bu) * v
        for j in range(LANES):   # z, s: the arguments x of the delays (UL, DL)
            if mode == 0:
                load = min(z[j], s[j])
                z[j] = p_dl / load * r[j] / n0b if load > 0 else math.inf
            else:
                z[j] = z[j] * r[j] / n0b if z[j] < _BIG else math.inf
                s[j] = p_dl / s[j] * r[j] / n0b if s[j] > 0 else math.inf
        for j in range(min(LANES, n - start)):
            t = c1 * r[j] / math.log1p(z[j])
            out[start + j] = t if mode == 0 else max(t, c1 * r[j] / math.log1p(s[j]))


@_jit
def _by_run(runs, top):
    """For every device, its samples sorted by run (counting sort over runs 0..top - 1;
    larger runs last): order[d, start[d, r]:start[d, r + 1]] are the samples with run r."""
    m_count, k = runs.shape
    start = np.zeros((k, top + 1), dtype=np.int64)
    order = np.empty((k, m_count), dtype=np.int64)
    for d in range(k):
        count = np.zeros(top + 1, dtype=np.int64)
        for m in range(m_count):
            count[min(runs[m, d], top)] += 1
        total = 0
        for r in range(top + 1):
            start[d, r] = total
            total += count[r]
        fill = start[d].copy()
        for m in range(m_count):
            r = min(runs[m, d], top)
            order[d, fill[r]] = m
            fill[r] += 1
    return order, start


@_jit
def _path_events(path, bit, order, start, masks, samples, at):
    """The rejected sets of every sample at each point of a nondecreasing path (n, K) where it
    changes, in order of the points: device d of sample m turns rejected at the first point
    whose gamma_d exceeds its run, and stays so (``order``, ``start``: ``_by_run`` up to the
    path's largest length; ``bit``: each device's bit in a mask). Returns how many (mask,
    sample, point)."""
    k, m_count = order.shape
    n = path.shape[0]
    mask = np.zeros(m_count, dtype=np.uint64)
    event = np.full(m_count, -1, dtype=np.int64)   # the sample's event at this point, if any
    e = 0
    for p in range(n):
        first = e
        for d in range(k):
            lo = path[p - 1, d] if p > 0 else 0
            hi = path[p, d]
            if hi <= lo:
                continue
            for i in range(start[d, lo], start[d, hi]):
                m = order[d, i]
                mask[m] |= bit[d]
                if event[m] < first:
                    event[m] = e
                    samples[e], at[e] = m, p
                    e += 1
                masks[event[m]] = mask[m]
    return e


@_jit
def _path_totals(t, samples, at, e, n, m_count):
    """Mean T_comm at every point from the events' T_comm (in order of the points)."""
    delta = np.zeros(n + 1)
    now = np.zeros(m_count)
    for i in range(e):
        m = samples[i]
        delta[at[i]] += t[i] - now[m]
        now[m] = t[i]
    result = np.empty(n)
    total = 0.0
    for p in range(n):
        total += delta[p]
        result[p] = total / m_count
    return result


@_jit
def _goodput(tok, draft, verify, tcomm):
    den = (draft + verify) + tcomm
    return tok / den if den > 0 else 0.0


@_jit
def _largest_two(gamma, draft_s):
    """(d1, i1, d2): the largest drafting time gamma_k t_k, its device (the first), and the
    largest of the others (a move of device i1 is bounded by d2, any other by d1)."""
    d1, i1, d2 = 0.0, 0, 0.0
    for d in range(gamma.shape[0]):
        x = gamma[d] * draft_s[d]
        if x > d1:
            d2, d1, i1 = d1, x, d
        elif x > d2:
            d2 = x
    return d1, i1, d2


@_jit
def greedy(runs, caps, enw, draft_s, vt, bit, kern, scratch):
    """The paper's greedy (``draft_search.greedy_search``) on the SAA objective, gains common
    to every sample.

    enw: (top + 1, K) E[N] at every length times the active weight; vt: T_ver at every total
    draft length (``DraftObjective.verify_table``); bit, kern: ``CompiledKernel.bit`` and
    ``.loads``; scratch: its work arrays (``greedy_scratch``). Returns (gamma, G, phase-1
    level, phase-2 steps, evaluations).
    """
    m_count, k = runs.shape
    top = caps.max()
    masks, samples, who, out, contrib, runs_t = scratch
    # phase 1: gamma = min(level, caps) while G improves
    mask = np.zeros(m_count, dtype=np.uint64)
    t = np.zeros(m_count)
    tok = enw[0].sum()
    value = _goodput(tok, 0.0, vt[0], 0.0)
    level, evaluations, total_len = 0, 1, 0
    for d in range(k):       # (K, M): the loops over samples run along rows
        for m in range(m_count):
            runs_t[d, m] = runs[m, d]
    new_mask = np.empty(m_count, dtype=np.uint64)
    while level < top:
        new_mask[:] = mask
        for d in range(k):
            if level < caps[d]:
                b, row = bit[d], runs_t[d]
                for m in range(m_count):
                    new_mask[m] |= b if row[m] == level else np.uint64(0)
        e = 0
        for m in range(m_count):
            if new_mask[m] != mask[m]:
                masks[e], samples[e] = new_mask[m], m
                e += 1
        _times(masks, samples, e, out, *kern)
        total = t.sum()
        for i in range(e):
            total += out[i] - t[samples[i]]
        tok_new, draft, len_new = 0.0, 0.0, 0
        for d in range(k):
            gd = min(level + 1, caps[d])
            tok_new += enw[gd, d]
            draft = max(draft, gd * draft_s[d])
            len_new += gd
        g_new = _goodput(tok_new, draft, vt[len_new], total / m_count)
        evaluations += 1
        if not improves(g_new, value):
            break
        for i in range(e):
            mask[samples[i]], t[samples[i]] = masks[i], out[i]
        value, tok, total_len = g_new, tok_new, len_new
        level += 1
    gamma = np.minimum(np.full(k, level, dtype=np.int64), caps)
    phase1 = level
    # phase 2: +1 on the best single device while G improves; contrib[m, d] is the change of
    # sample m's T_comm if device d took +1 (non-zero only where its run equals gamma_d)
    contrib[:, :] = 0.0
    e = 0
    for m in range(m_count):
        for d in range(k):
            if gamma[d] < caps[d] and runs[m, d] == gamma[d]:
                masks[e], samples[e], who[e] = mask[m] | bit[d], m, d
                e += 1
    vals = np.empty(k)
    col = np.zeros(k)   # column sums of contrib, kept up to date
    steps = 0
    while True:
        _times(masks, samples, e, out, *kern)
        for i in range(e):
            m, d = samples[i], who[i]
            x = out[i] - t[m]
            col[d] += x - contrib[m, d]
            contrib[m, d] = x
        t_mean = t.sum() / m_count
        d1, i1, d2 = _largest_two(gamma, draft_s)
        for d in range(k):
            if gamma[d] >= caps[d]:
                vals[d] = -math.inf
                continue
            draft = max(d2 if d == i1 else d1, (gamma[d] + 1) * draft_s[d])
            vals[d] = _goodput(tok - enw[gamma[d], d] + enw[gamma[d] + 1, d], draft,
                               vt[total_len + 1], t_mean + col[d] / m_count)
            evaluations += 1
        j = best_index(vals)
        if j < 0 or not improves(vals[j], value):
            break
        e = 0
        for m in range(m_count):
            if runs[m, j] == gamma[j]:         # this sample now rejects j
                t[m] += contrib[m, j]
                mask[m] |= bit[j]
                col[j] -= contrib[m, j]
                contrib[m, j] = 0.0
                for d in range(k):             # its pending +1 candidates change
                    if d != j and gamma[d] < caps[d] and runs[m, d] == gamma[d]:
                        masks[e], samples[e], who[e] = mask[m] | bit[d], m, d
                        e += 1
        tok += enw[gamma[j] + 1, j] - enw[gamma[j], j]
        gamma[j] += 1
        total_len += 1
        if gamma[j] < caps[j]:
            for m in range(m_count):
                if runs[m, j] == gamma[j]:
                    masks[e], samples[e], who[e] = mask[m] | bit[j], m, j
                    e += 1
        steps += 1
        value = vals[j]
    return gamma, value, phase1, steps, evaluations


@_jit
def runs_from_logs(log_u, log_alpha, cap):
    """floor(ln U / ln alpha) clipped to ``cap`` (``model.estimators.acceptance_runs``), the
    logarithms numpy's (a run sits on a boundary of floor: the same logarithms, the same runs)."""
    m_count, k = log_u.shape
    out = np.empty((m_count, k), dtype=np.int32)
    for m in range(m_count):
        for d in range(k):
            x = math.floor(log_u[m, d] / log_alpha[d]) if log_alpha[d] < 0 else math.inf
            out[m, d] = np.int32(x) if x < cap else cap   # NaN (U = 1, alpha = 0): the cap
    return out


class CompiledKernel:
    """A ``model.tcomm.TcommKernel``'s closed forms as the compiled searches read them: the
    devices in ascending UL quality (``bit``: each device's bit in a rejected set's mask), their
    loads in that order, the random split's coins as masks, and the delay's constants
    (``loads``: what ``_times`` reads)."""

    def __init__(self, kernel):
        p_dl = float(kernel.p_dl)
        mode = "all-ul" if kernel.mode == "optimal" and p_dl <= 0 else kernel.mode
        self.mode = _MODES[mode]
        q = np.asarray(kernel.q, dtype=float)
        order = kernel.order_rev   # ascending UL quality
        self.bit = np.left_shift(np.uint64(1), np.argsort(order).astype(np.uint64))
        self.qr = np.ascontiguousarray(q[order])
        self.vr = np.ascontiguousarray(np.asarray(kernel.v, dtype=float)[order])
        self.ur = p_dl / self.qr
        self.coin = np.zeros(1, dtype=np.uint64)
        if kernel.coin is not None:
            ordered = np.asarray(kernel.coin, dtype=bool)[:, order].astype(np.uint64)
            self.coin = (ordered << np.arange(q.size, dtype=np.uint64)).sum(axis=1,
                                                                            dtype=np.uint64)
        self.c = np.array([kernel.bits * np.log(2.0) / kernel.bw, kernel.n0 * kernel.bw, p_dl])

    @property
    def loads(self):
        return self.mode, self.qr, self.vr, self.ur, self.coin, self.c


class CompiledSearch:
    """The compiled implementation of one ``DraftObjective``: its greedy here, its uniform scan
    and budget search in ``budget_numba``, each run whole on the objective's samples
    (``for_objective``: None where it does not apply; every other evaluation of the objective
    stays numpy's)."""

    def __init__(self, obj, kernel, verify_table):
        self.obj = obj
        self.kernel = kernel
        self.verify_table = verify_table

    @classmethod
    def for_objective(cls, obj):
        tcomm = obj.tcomm
        if not isinstance(tcomm, SAATcomm) or obj.score is not None or obj.k > MAX_DEVICES:
            return None
        vt = obj.verify_table()
        if vt is None:
            return None
        ref = tcomm.kernel
        if not getattr(ref, "shannon", False) or getattr(ref, "mode", None) not in _MODES \
                or ref.per_sample:   # sampled fading (a decision made once): numpy is enough
            return None
        gains = (np.asarray(ref.q), np.asarray(ref.v))
        if not all(np.isfinite(g).all() and (g > 0).all() for g in gains):
            return None   # zero or infinite gains: the numpy kernel's conventions apply
        if not (np.isfinite(obj.draft_s).all() and math.isfinite(float(ref.p_dl))
                and np.isfinite(vt).all()):
            return None   # NaN or infinite times or power: numpy's arithmetic says what G is
        return cls(obj, CompiledKernel(ref), vt)

    def inputs(self):
        """What every compiled search reads of the objective: (runs, caps, E[N] table times
        the active weight, drafting latencies, T_ver at every total draft length)."""
        obj = self.obj
        return (obj.tcomm.runs, obj.caps, np.ascontiguousarray(obj.en_table * obj._w),
                obj.draft_s, self.verify_table)

    def greedy(self):
        """(gamma, G, evaluations, info) of the greedy."""
        obj = self.obj
        inputs = self.inputs()
        gamma, value, phase1, steps, evaluations = greedy(
            *inputs, self.kernel.bit, self.kernel.loads, greedy_scratch(*inputs[0].shape))
        obj.evaluations += evaluations
        return gamma, float(value), int(evaluations), {"phase1": int(phase1),
                                                       "phase2_steps": int(steps)}
