"""The budget search (``draft_search.budget_search``) compiled whole, as the greedy is, and the
uniform scan it starts with (``uniform``: the uniform search compiled whole).

The same steps in the same order: the uniform scan, the greedy, the budget scans with devices
left out one at a time (each judged by a screened move to 0), then the local search from the
best point found. Only the place of the work changes: one compiled call instead of about a
hundred numpy calls a decision, each too small to pay its own overhead. The state of the local
search is each sample's rejected set as a 64-bit mask with its T_comm; T_comm comes from the
kernel of ``search_numba`` (``_times``). Candidates are compared by the shared
tie rule, so decisions agree with the numpy reference except at near-ties.
"""
import math

import numpy as np

from .search_numba import (LANES, _by_run, _goodput, _jit, _largest_two, _path_events,
                           _path_totals, _times, best_index, greedy, greedy_scratch, improves,
                           scratch)


@_jit
def _scan(path, bit, order, start, buf, enw, draft_s, vt, m_count, kern):
    """G, tokens, drafting time and T_ver at every point of a nondecreasing path, and the
    number of events ``buf`` keeps (for ``_state_at``). vt: T_ver at every total draft length
    (``DraftObjective.verify_table``)."""
    masks, samples, at, out = buf
    e = _path_events(path, bit, order, start, masks, samples, at)
    _times(masks, samples, e, out, *kern)
    t_mean = _path_totals(out, samples, at, e, path.shape[0], m_count)
    n = path.shape[0]
    values, tokens, drafting, t_ver = np.empty(n), np.zeros(n), np.zeros(n), np.empty(n)
    for p in range(n):
        length = 0
        for d in range(path.shape[1]):
            tokens[p] += enw[path[p, d], d]
            drafting[p] = max(drafting[p], path[p, d] * draft_s[d])
            length += path[p, d]
        t_ver[p] = vt[length]
        values[p] = _goodput(tokens[p], drafting[p], t_ver[p], t_mean[p])
    return values, tokens, drafting, t_ver, e


@_jit
def _uniform_scan(caps, bit, order, start, buf, enw, draft_s, vt, m_count, kern):
    """The uniform path (``draft_search.uniform_path``: row c is min(c, caps)) and ``_scan``'s
    G, tokens, drafting time and T_ver along it."""
    top, k = caps.max(), caps.shape[0]
    path = np.empty((top + 1, k), dtype=np.int64)
    for p in range(top + 1):
        for d in range(k):
            path[p, d] = min(p, caps[d])
    values, tokens, drafting, t_ver, _ = _scan(path, bit, order, start, buf, enw,
                                               draft_s, vt, m_count, kern)
    return path, values, tokens, drafting, t_ver


@_jit
def uniform(runs, caps, enw, draft_s, vt, bit, kern, buf):
    """``draft_search.uniform_search`` on the SAA objective: (gamma, G, the chosen level c)."""
    order, start = _by_run(runs, caps.max() + 1)
    path, pv, _, _, _ = _uniform_scan(caps, bit, order, start, buf, enw, draft_s, vt,
                                      runs.shape[0], kern)
    cu = best_index(pv)
    return path[cu].copy(), pv[cu], cu


@_jit
def _state_at(p, buf, e, mask, t):
    """Each sample's rejected set and T_comm at point p of the last scan (events by point)."""
    masks, samples, at, out = buf
    mask[:] = 0
    t[:] = 0.0
    for i in range(e):
        if at[i] > p:
            break
        mask[samples[i]], t[samples[i]] = masks[i], out[i]


@_jit
def _set(gamma, t, enw, draft_s, vt, st):
    """st = (value, tokens, largest drafting time d1, its device i1, second largest d2, total
    draft length)."""
    tok, length = 0.0, 0
    for d in range(gamma.shape[0]):
        tok += enw[gamma[d], d]
        length += gamma[d]
    d1, i1, d2 = _largest_two(gamma, draft_s)
    st[0], st[1], st[2], st[3], st[4], st[5] = \
        _goodput(tok, d1, vt[length], t.sum() / t.shape[0]), tok, d1, i1, d2, length


@_jit
def _move_values(dev, new, limit, gamma, mask, t, st, bit, order, start, buf, enw,
                 draft_s, vt, kern):
    """G after each single-device move (dev[i] to new[i]), T_comm estimated on the first
    ``limit`` samples (``DraftObjective.move_values``). The moves of one device cover disjoint
    runs (+1 and -1; to 0 and to the fill), so ``buf`` holds their events: M x K at most
    (more raise ValueError)."""
    masks, samples, who, out = buf
    e = 0
    for i in range(dev.shape[0]):
        d, old = dev[i], gamma[dev[i]]
        for r in range(min(old, new[i]), max(old, new[i])):
            for j in range(start[d, r], start[d, r + 1]):
                m = order[d, j]
                if m >= limit:    # a bucket lists its samples in ascending order
                    break
                if e + LANES >= masks.shape[0]:   # an error, not a write past the arrays
                    raise ValueError("more move events than the work arrays hold: the moves "
                                     "of one device must cover disjoint runs")
                masks[e] = mask[m] | bit[d] if new[i] > old else mask[m] & ~bit[d]
                samples[e], who[e] = m, i
                e += 1
    _times(masks, samples, e, out, *kern)
    sums = np.zeros(dev.shape[0])
    for i in range(e):
        sums[who[i]] += out[i] - t[samples[i]]
    t_base = t[:limit].sum() / limit
    d1, i1, d2, length = st[2], int(st[3]), st[4], int(st[5])
    values = np.empty(dev.shape[0])
    for i in range(dev.shape[0]):
        d = dev[i]
        tok = st[1] - enw[gamma[d], d] + enw[new[i], d]
        draft = max(d2 if d == i1 else d1, new[i] * draft_s[d])
        values[i] = _goodput(tok, draft, vt[length - gamma[d] + new[i]],
                             t_base + sums[i] / limit)
    return values


@_jit
def _screened(dev, new, screen, keep, gamma, mask, t, st, bit, order, start, buf, enw,
              draft_s, vt, kern):
    """``_move_values`` ranked on the first ``screen`` samples, the best ``keep`` evaluated on
    all (the others -inf); returns (values, evaluations)."""
    m_count = t.shape[0]
    args = (gamma, mask, t, st, bit, order, start, buf, enw, draft_s, vt, kern)
    if dev.shape[0] <= keep or screen >= m_count:
        return _move_values(dev, new, m_count, *args), dev.shape[0]
    rough = _move_values(dev, new, screen, *args)
    best = np.sort(np.argsort(-rough, kind="mergesort")[:keep])
    values = np.full(dev.shape[0], -math.inf)
    values[best] = _move_values(dev[best], new[best], m_count, *args)
    return values, dev.shape[0] + best.shape[0]


@_jit
def _apply_move(j, new, gamma, mask, t, bit, order, start, buf, kern):
    """Move device j to ``new``: the samples whose run of j lies between the two lengths."""
    masks, samples, _, out = buf
    e = 0
    for r in range(min(gamma[j], new), max(gamma[j], new)):
        for i in range(start[j, r], start[j, r + 1]):
            m = order[j, i]
            mask[m] = mask[m] | bit[j] if new > gamma[j] else mask[m] & ~bit[j]
            masks[e], samples[e] = mask[m], m
            e += 1
    _times(masks, samples, e, out, *kern)
    for i in range(e):
        t[samples[i]] = out[i]
    gamma[j] = new


@_jit
def _moves(gamma, caps, draft_s, long):
    """Candidate moves (``draft_search._moves``): +1 and -1, or (long) to 0 and to the fill."""
    k = gamma.shape[0]
    dev = np.empty(2 * k, dtype=np.int64)
    new = np.empty(2 * k, dtype=np.int64)
    n = 0
    fill = 0.0
    for d in range(k):
        fill = max(fill, gamma[d] * draft_s[d])
    for kind in range(2):
        for d in range(k):
            if caps[d] <= 0:
                continue
            if not long:
                to = gamma[d] + 1 if kind == 0 else gamma[d] - 1
                ok = gamma[d] < caps[d] if kind == 0 else gamma[d] > 0
            elif kind == 0:
                to, ok = 0, gamma[d] > 1
            else:
                to = min(caps[d], int(math.floor(fill / draft_s[d] * (1 + 1e-12))))
                ok = to > gamma[d] + 1
            if ok:
                dev[n], new[n] = d, to
                n += 1
    return dev[:n], new[:n]


@_jit
def budget(runs, caps, enw, draft_s, vt, order_all, screen, keep, bit, kern, buf, g_scratch):
    """``draft_search.budget_search`` on the SAA objective, gains common to every sample.

    order_all: ``budget_order`` with every device included; screen, keep: the long moves'
    screening (``draft_search._screen``). Returns (gamma, G, evaluations,
    start candidate, chosen candidate, excluded devices, candidate values (uniform, greedy,
    budget-scan, local), greedy gamma, uniform gamma); candidates 0 uniform, 1 greedy,
    2 budget-scan, 3 local. bit, kern: ``CompiledKernel.bit`` and ``.loads``; buf, g_scratch:
    work arrays (``budget_search_compiled``)."""
    m_count, k = runs.shape
    top = caps.max()
    order, start = _by_run(runs, top + 1)
    mask, t = np.empty(m_count, dtype=np.uint64), np.empty(m_count)
    st = np.empty(6)
    evaluations = 0
    # the uniform scan, its best point and the greedy
    path, pv, tokens, drafting, t_ver = _uniform_scan(caps, bit, order, start, buf,
                                                      enw, draft_s, vt, m_count, kern)
    evaluations += top + 1
    cu = best_index(pv)
    values = np.full(4, -math.inf)
    values[0] = pv[cu]
    g_gamma, values[1], _, _, g_evals = greedy(runs, caps, enw, draft_s, vt, bit, kern,
                                               g_scratch)
    evaluations += g_evals
    # the budget a communication-free round would use
    free = tokens / (drafting + t_ver)
    pf = best_index(free)
    if pf < 0:    # as ``ties.best_index`` in numpy: the first where the largest is +inf
        pf = 0 if free.max() == math.inf else top
    d_free = drafting[pf]
    # budget scans, leaving out one device at a time
    include = caps > 0
    excluded = np.empty(k, dtype=np.int64)
    n_excluded = 0
    best_scan = np.zeros(k, dtype=np.int64)
    stale = 0
    gamma = np.zeros(k, dtype=np.int64)
    for _ in range(include.sum() + 1):
        steps = 0
        for i in range(order_all.shape[0]):
            steps += include[order_all[i]]
        bpath = np.zeros((steps + 1, k), dtype=np.int64)
        s = 0
        for i in range(order_all.shape[0]):
            if include[order_all[i]]:
                bpath[s + 1] = bpath[s]
                bpath[s + 1, order_all[i]] += 1
                s += 1
        bv, _, drafting, _, e = _scan(bpath, bit, order, start, buf, enw, draft_s, vt,
                                      m_count, kern)
        evaluations += steps + 1
        s = best_index(bv)
        if values[2] == -math.inf or improves(bv[s], values[2]):
            best_scan[:], values[2] = bpath[s], bv[s]
            stale = 0
        else:
            stale += 1
            if stale >= 2:
                break
        # judge leaving each drafting device out at the larger of this scan's best budget
        # and the communication-free budget
        level = max(drafting[s], d_free)
        ref = 0
        while ref + 1 < bpath.shape[0] and drafting[ref + 1] <= level:   # nondecreasing
            ref += 1
        gamma[:] = bpath[ref]
        _state_at(ref, buf, e, mask, t)
        _set(gamma, t, enw, draft_s, vt, st)
        dev = np.flatnonzero(gamma > 0)
        if dev.shape[0] == 0:
            break
        xv, n_eval = _screened(dev, np.zeros(dev.shape[0], dtype=np.int64), screen, keep,
                               gamma, mask, t, st, bit, order, start, buf, enw, draft_s, vt, kern)
        evaluations += n_eval
        i = best_index(xv)
        if i < 0 or not improves(xv[i], st[0]):
            break
        include[dev[i]] = False
        excluded[n_excluded] = dev[i]
        n_excluded += 1
    # the local search from the best of the three
    first = best_index(values[:3])
    if first == 0:
        gamma[:] = path[cu]
    elif first == 1:
        gamma[:] = g_gamma
    else:
        gamma[:] = best_scan
    e = _scan(gamma.reshape((1, k)), bit, order, start, buf, enw, draft_s, vt, m_count, kern)[4]
    _state_at(0, buf, e, mask, t)   # every sample's rejected set and T_comm at gamma
    _set(gamma, t, enw, draft_s, vt, st)
    max_steps = 8 * k * max(1, top)
    steps, long = 0, False
    while steps < max_steps:
        dev, new = _moves(gamma, caps, draft_s, long)
        i = -1
        if dev.shape[0]:
            if long:
                vals, n_eval = _screened(dev, new, screen, keep, gamma, mask, t, st, bit,
                                         order, start, buf, enw, draft_s, vt, kern)
            else:
                vals = _move_values(dev, new, m_count, gamma, mask, t, st, bit, order, start,
                                    buf, enw, draft_s, vt, kern)
                n_eval = dev.shape[0]
            evaluations += n_eval
            i = best_index(vals)
        if i >= 0 and improves(vals[i], st[0]):
            _apply_move(dev[i], new[i], gamma, mask, t, bit, order, start, buf, kern)
            _set(gamma, t, enw, draft_s, vt, st)
            steps += 1
            long = False
        elif not long:
            long = True
        else:
            break
    values[3] = st[0]
    last = np.array([values[3], values[1], values[0]])   # local, greedy, uniform
    chosen = (3, 1, 0)[best_index(last)]
    if chosen == 1:
        gamma[:] = g_gamma
    elif chosen == 0:
        gamma[:] = path[cu]
    return (gamma, values[chosen], evaluations, first, chosen, excluded[:n_excluded], values,
            g_gamma, path[cu].copy())


_NAMES = ("uniform", "greedy", "budget-scan", "local")


def _inputs(obj):
    """The objective's inputs (``CompiledSearch.inputs``) and this thread's work arrays for
    the events of its samples (``scratch``)."""
    inputs = obj.compiled.inputs()
    size = inputs[0].size + 64
    buf = (scratch("budget.masks", (size,), np.uint64),
           scratch("budget.samples", (size,), np.int64),
           scratch("budget.at", (size,), np.int64), scratch("budget.out", (size,)))
    return inputs, buf


def uniform_search_compiled(obj):
    """(gamma, G, evaluations, info) of the uniform search, compiled whole."""
    inputs, buf = _inputs(obj)
    gamma, value, c = uniform(*inputs, obj.compiled.kernel.bit, obj.compiled.kernel.loads, buf)
    evaluations = int(obj.caps.max(initial=0)) + 1
    obj.evaluations += evaluations
    return gamma, float(value), evaluations, {"c": int(c)}


def budget_search_compiled(obj, order, screen):
    """(gamma, G, evaluations, info) of the budget search on an objective with a compiled
    implementation (``obj.compiled``); ``order``: ``draft_search.budget_order`` of every
    device; ``screen``: (samples, keep) of the long moves (``draft_search._screen``)."""
    inputs, buf = _inputs(obj)
    gamma, value, evaluations, first, chosen, excluded, values, g_gamma, u_gamma = budget(
        *inputs, np.ascontiguousarray(order, dtype=np.int64), int(screen[0]), int(screen[1]),
        obj.compiled.kernel.bit, obj.compiled.kernel.loads, buf, greedy_scratch(*inputs[0].shape))
    obj.evaluations += evaluations
    info = {"from": _NAMES[first], "chosen": _NAMES[chosen],
            "excluded": [int(d) for d in excluded],
            "values": {n: float(v) for n, v in zip(_NAMES, values)},
            "greedy": g_gamma, "uniform": u_gamma}
    return gamma, float(value), int(evaluations), info
