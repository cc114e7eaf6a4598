"""numba kernels of ``greedy_fast`` (imported only when numba is installed and enabled).

Every floating-point operation here replays one of the numpy search's (see ``greedy_fast``):
``_pw`` is numpy's pairwise summation (8 accumulators, blocks of 128, halves rounded to 8),
sums that numpy does sequentially are sequential, and minima/maxima are exact in any order.
"""
import numpy as np
from numba import njit

_INF = np.inf
_CACHE = True


@njit(cache=_CACHE)
def _pw0(a, start, n, stride):
    """numpy's pairwise sum of a[start], a[start + stride], ... (n <= 128 terms)."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[start + i * stride]
        return res
    if n <= 128:
        r0 = a[start]
        r1 = a[start + stride]
        r2 = a[start + 2 * stride]
        r3 = a[start + 3 * stride]
        r4 = a[start + 4 * stride]
        r5 = a[start + 5 * stride]
        r6 = a[start + 6 * stride]
        r7 = a[start + 7 * stride]
        i = 8
        stop = n - (n % 8)
        while i < stop:
            p = start + i * stride
            r0 += a[p]
            r1 += a[p + stride]
            r2 += a[p + 2 * stride]
            r3 += a[p + 3 * stride]
            r4 += a[p + 4 * stride]
            r5 += a[p + 5 * stride]
            r6 += a[p + 6 * stride]
            r7 += a[p + 7 * stride]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += a[start + i * stride]
            i += 1
        return res
    return 0.0


@njit(cache=_CACHE)
def _pw1(a, start, n, stride):
    if n <= 128:
        return _pw0(a, start, n, stride)
    n2 = n // 2
    n2 -= n2 % 8
    return _pw0(a, start, n2, stride) + _pw0(a, start + n2 * stride, n - n2, stride)


@njit(cache=_CACHE)
def _pw2(a, start, n, stride):
    if n <= 128:
        return _pw0(a, start, n, stride)
    n2 = n // 2
    n2 -= n2 % 8
    return _pw1(a, start, n2, stride) + _pw1(a, start + n2 * stride, n - n2, stride)


@njit(cache=_CACHE)
def _pw3(a, start, n, stride):
    if n <= 128:
        return _pw0(a, start, n, stride)
    n2 = n // 2
    n2 -= n2 % 8
    return _pw2(a, start, n2, stride) + _pw2(a, start + n2 * stride, n - n2, stride)


@njit(cache=_CACHE)
def _pw4(a, start, n, stride):
    if n <= 128:
        return _pw0(a, start, n, stride)
    n2 = n // 2
    n2 -= n2 % 8
    return _pw3(a, start, n2, stride) + _pw3(a, start + n2 * stride, n - n2, stride)


@njit(cache=_CACHE)
def _pw5(a, start, n, stride):
    if n <= 128:
        return _pw0(a, start, n, stride)
    n2 = n // 2
    n2 -= n2 % 8
    return _pw4(a, start, n2, stride) + _pw4(a, start + n2 * stride, n - n2, stride)


@njit(cache=_CACHE)
def _pw6(a, start, n, stride):
    if n <= 128:
        return _pw0(a, start, n, stride)
    n2 = n // 2
    n2 -= n2 % 8
    return _pw5(a, start, n2, stride) + _pw5(a, start + n2 * stride, n - n2, stride)


@njit(cache=_CACHE)
def _pw7(a, start, n, stride):
    if n <= 128:
        return _pw0(a, start, n, stride)
    n2 = n // 2
    n2 -= n2 % 8
    return _pw6(a, start, n2, stride) + _pw6(a, start + n2 * stride, n - n2, stride)


@njit(cache=_CACHE)
def _pw8(a, start, n, stride):
    if n <= 128:
        return _pw0(a, start, n, stride)
    n2 = n // 2
    n2 -= n2 % 8
    return _pw7(a, start, n2, stride) + _pw7(a, start + n2 * stride, n - n2, stride)


@njit(cache=_CACHE)
def _pw(a, start, n, stride):
    """numpy's pairwise sum (n <= 128 * 2^8 terms; numba caches no recursive functions, so the
    recursion is unrolled into levels)."""
    return _pw8(a, start, n, stride)


@njit(cache=_CACHE, inline="always")
def _loads(rk, code, order, ua, va, coin_row, tmp):
    """(rejected count, load a, load b) of the rejected set rk (K,) bool, as the numpy kernel
    computes them before its final delay step (``TcommKernel._call`` / ``_optimal``)."""
    k = rk.size
    r = 0
    for i in range(k):
        r += rk[i]
    if code == 0:  # optimal: reversed UL order, DL loads accumulated row by row (branch-free:
        # adding 0.0 and taking min with inf change nothing, exactly)
        acc = 0.0
        split = _INF
        for i in range(k):
            x = rk[order[i]]
            u = ua[i]
            cand = u if (i == 0 or u > acc) else acc
            split = min(split, cand if x else _INF)
            acc = acc + (va[i] if x else 0.0)
        return r, min(acc, split), 0.0
    if code == 1:  # all-UL: the weakest rejected UL power
        z = _INF
        for i in range(k):
            if rk[i] and ua[i] < z:
                z = ua[i]
        return r, z, 0.0
    if code == 2:  # all-DL: pairwise sum of 1/g over the rejected set
        for i in range(k):
            tmp[i] = va[i] if rk[i] else 0.0
        return r, _pw(tmp, 0, k, 1), 0.0
    z = _INF  # random split: UL devices by the coin, the rest DL
    for i in range(k):
        ul = rk[i] and coin_row[i]
        if ul and ua[i] < z:
            z = ua[i]
        tmp[i] = va[i] if (rk[i] and not coin_row[i]) else 0.0
    return r, z, _pw(tmp, 0, k, 1)


@njit(cache=_CACHE)
def path_events(runs, seg, code, order, ua, va, coin, has_start):
    """The events of ``SAATcomm.path_mean`` along the nondecreasing path ``seg`` (n, K):
    (sample, step, needs the kernel, r, a, b) in sample-major, step-ascending order."""
    m, k = runs.shape
    n = seg.shape[0]
    top = 0
    for s in range(n):
        for j in range(k):
            if seg[s, j] > top:
                top = seg[s, j]
    table = np.zeros((k, top + 2), dtype=np.int64)
    for j in range(k):
        for v in range(top + 1):
            c = 0
            for s in range(n):
                if seg[s, j] <= v:
                    c += 1
            table[j, v] = c
        table[j, top + 1] = n
    cap = m * (k + 1)
    ev_m = np.empty(cap, dtype=np.int64)
    ev_s = np.empty(cap, dtype=np.int64)
    need = np.zeros(cap, dtype=np.bool_)
    rr = np.zeros(cap, dtype=np.int64)
    aa = np.zeros(cap)
    bb = np.zeros(cap)
    flip = np.empty(k, dtype=np.int64)
    srt = np.empty(k, dtype=np.int64)
    rk = np.empty(k, dtype=np.bool_)
    tmp = np.empty(k)
    accv = np.empty(k + 1)
    present = np.zeros(n + 1, dtype=np.bool_)
    splitv = np.empty(k + 1)
    cnt = np.empty(k + 1, dtype=np.int64)
    e = 0
    for mm in range(m):
        row = coin[mm] if code == 3 else coin[0]
        for s in range(n + 1):
            present[s] = False
        fmin = n
        for j in range(k):
            v = runs[mm, j]
            f = table[j, v if v < top + 1 else top + 1]
            flip[j] = f
            present[f] = True
            fmin = min(fmin, f)
        # events: step 0, then every distinct flip step below n, ascending
        e0 = e
        for st in range(n):
            if st == 0 or present[st]:
                ev_m[e] = mm
                ev_s[e] = st
                need[e] = not (st == 0 and has_start) and fmin <= st
                e += 1
        if code == 0:
            # all the events of this sample at once, in one pass over the devices in reversed
            # UL order (the inner loop over events vectorises); the same operations per event
            # as ``_loads``
            ne = e - e0
            for q in range(ne):
                accv[q] = 0.0
                splitv[q] = _INF
                cnt[q] = 0
            for i in range(k):
                f = flip[order[i]]
                u = ua[i]
                vi = va[i]
                for q in range(ne):
                    x = f <= ev_s[e0 + q]
                    a0 = accv[q]
                    cand = u if (i == 0 or u > a0) else a0
                    splitv[q] = min(splitv[q], cand if x else _INF)
                    accv[q] = a0 + (vi if x else 0.0)
                    cnt[q] += x
            for q in range(ne):
                if need[e0 + q]:
                    rr[e0 + q] = cnt[q]
                    aa[e0 + q] = min(accv[q], splitv[q])
        else:
            for q in range(e0, e):
                if need[q]:
                    st = ev_s[q]
                    for j in range(k):
                        rk[j] = flip[j] <= st
                    r, a, b = _loads(rk, code, order, ua, va, row, tmp)
                    rr[q] = r
                    aa[q] = a
                    bb[q] = b
    return ev_m[:e], ev_s[:e], need[:e], rr[:e], aa[:e], bb[:e]


@njit(cache=_CACHE)
def path_accumulate(ev_m, ev_s, t, need, start, has_start, n, m):
    """Sum of T_comm per step (the bincount + cumsum of ``path_mean``) and the per-sample
    T_comm at every point of the path (n, M) (what ``_from_path`` looks up)."""
    bins = np.zeros(n)
    table = np.zeros((n, m))
    ne = ev_m.size
    prev = 0.0
    for e in range(ne):
        mm = ev_m[e]
        first = e == 0 or ev_m[e - 1] != mm
        if first:
            prev = 0.0
            tv = start[mm] if has_start else (t[e] if need[e] else 0.0)
        else:
            tv = t[e] if need[e] else 0.0
        bins[ev_s[e]] += tv - prev
        prev = tv
        last = n if (e + 1 == ne or ev_m[e + 1] != mm) else ev_s[e + 1]
        for s in range(ev_s[e], last):
            table[s, mm] = tv
    total = np.empty(n)
    acc = 0.0
    for s in range(n):
        acc = bins[s] if s == 0 else acc + bins[s]
        total[s] = acc
    return total, table


@njit(cache=_CACHE)
def _pair_loads(runs, rej, rows, devs, npairs, code, order, ua, va, coin):
    k = runs.shape[1]
    rr = np.zeros(npairs, dtype=np.int64)
    aa = np.zeros(npairs)
    bb = np.zeros(npairs)
    rk = np.empty(k, dtype=np.bool_)
    tmp = np.empty(k)
    for i in range(npairs):
        mm = rows[i]
        for j in range(k):
            rk[j] = rej[mm, j]
        rk[devs[i]] = True
        row = coin[mm] if code == 3 else coin[0]
        r, a, b = _loads(rk, code, order, ua, va, row, tmp)
        rr[i] = r
        aa[i] = a
        bb[i] = b
    return rr, aa, bb


@njit(cache=_CACHE)
def initial_pairs(runs, gamma, caps, rej, code, order, ua, va, coin):
    """The (sample, device) pairs a +1 changes (run == gamma) and their loads."""
    m, k = runs.shape
    rows = np.empty(m * k, dtype=np.int64)
    devs = np.empty(m * k, dtype=np.int64)
    n = 0
    for mm in range(m):
        for j in range(k):
            if gamma[j] < caps[j] and runs[mm, j] == gamma[j]:
                rows[n] = mm
                devs[n] = j
                n += 1
    rr, aa, bb = _pair_loads(runs, rej, rows, devs, n, code, order, ua, va, coin)
    return rows[:n], devs[:n], rr, aa, bb


@njit(cache=_CACHE)
def _goodput(tok, draft, verify, tc):
    den = draft + verify + tc
    return tok / den if den > 0 else 0.0


@njit(cache=_CACHE)
def step(runs, gamma, caps, rej, t, contrib, rows, devs, tv, en, w, draft_s, verify, code,
         order, ua, va, coin, state):
    """One phase-2 iteration (``contrib`` is stored transposed, (K, M)): store the pending
    +1 deltas, the current G, the +1 values, and
    (when one improves) apply the best +1 and return the new pairs to evaluate."""
    m, k = runs.shape
    for i in range(rows.size):
        contrib[devs[i], rows[i]] = tv[i] - t[rows[i]]
    tval = _pw(t, 0, m, 1) / m
    # DraftObjective._set
    en_cur = np.empty(k)
    for j in range(k):
        en_cur[j] = en[j, gamma[j]] * w[j]
    tok = _pw(en_cur, 0, k, 1)
    # argmax (first maximum) and max(initial=0.0), then the second largest with i1 zeroed
    i1 = 0
    dmax = gamma[0] * draft_s[0]
    for j in range(1, k):
        d = gamma[j] * draft_s[j]
        if d > dmax:
            dmax = d
            i1 = j
    d1 = dmax if dmax > 0.0 else 0.0
    d2 = 0.0
    for j in range(k):
        if j != i1:
            d = gamma[j] * draft_s[j]
            if d > d2:
                d2 = d
    value = _goodput(tok, d1, verify, tval)
    # plus_one_values
    best = -_INF
    jbest = -1
    ndev = 0
    for j in range(k):
        if gamma[j] < caps[j]:
            ndev += 1
            pm = tval + _pw(contrib[j], 0, m, 1) / m
            tokd = (tok - en_cur[j]) + en[j, gamma[j] + 1] * w[j]
            base = d2 if j == i1 else d1
            dn = (gamma[j] + 1) * draft_s[j]
            g = _goodput(tokd, base if base > dn else dn, verify, pm)
            if g > best:
                best = g
                jbest = j
    state[0] = value
    state[1] = ndev
    empty = np.zeros(0, dtype=np.int64)
    if jbest < 0 or not best > value:
        state[2] = 1.0
        return empty, empty, empty, np.zeros(0), np.zeros(0)
    state[2] = 0.0
    j = jbest
    # SAATcomm._apply_plus
    nrows = np.empty(m * k, dtype=np.int64)
    ndevs = np.empty(m * k, dtype=np.int64)
    n = 0
    g0 = gamma[j]
    for mm in range(m):
        if runs[mm, j] == g0:
            t[mm] += contrib[j, mm]
            rej[mm, j] = True
            contrib[j, mm] = 0.0
    gamma[j] = g0 + 1
    if gamma[j] < caps[j]:
        for mm in range(m):
            if runs[mm, j] == gamma[j]:
                nrows[n] = mm
                ndevs[n] = j
                n += 1
    for mm in range(m):
        if runs[mm, j] == g0:
            for i in range(k):
                if i != j and gamma[i] < caps[i] and runs[mm, i] == gamma[i]:
                    nrows[n] = mm
                    ndevs[n] = i
                    n += 1
    rr, aa, bb = _pair_loads(runs, rej, nrows, ndevs, n, code, order, ua, va, coin)
    return nrows[:n], ndevs[:n], rr, aa, bb
