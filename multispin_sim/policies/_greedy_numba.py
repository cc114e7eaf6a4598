"""numba kernels of ``greedy_fast`` (imported only when numba is installed and enabled).

Every floating-point operation here replays one of the numpy search's (see ``greedy_fast``):
``_pw`` is numpy's pairwise summation (8 accumulators, blocks of 128, halves rounded to 8),
sums that numpy does sequentially are sequential, and minima/maxima are exact in any order.
"""
import numpy as np
from numba import njit, types
from numba.core.extending import intrinsic
from numba.cpython.unsafe.numbers import trailing_zeros

from ._numpy_logs import log1p_into, pointer as log1p_pointer  # noqa: F401 (greedy_fast)

_INF = np.inf
_BLOCK = 1024   # sets per block of ``_mask_loads`` (their work arrays stay in cache: 8 B x 8 x 1024)
_CACHE = True


@intrinsic
def _wide(typingctx):
    """Marks the kernel being compiled to prefer 512-bit vectors (LLVM's "prefer-vector-width"
    function attribute; LLVM's default for AVX-512 machines is 256): its vectorised loops do
    twice the lanes per instruction. Each kernel that is not inlined calls it first, except
    where it measured slower (recorded calls timed wide and plain, alternated in one process):
    the acceptance runs (1.3x) and the coin bits. It changes no value: without fast-math LLVM
    vectorises no floating-point reduction (sums keep their order) and element-wise operations
    are the same IEEE operations in any width; machines without 512-bit vectors ignore it."""
    def codegen(context, builder, signature, args):
        # a string attribute: llvmlite's ``add`` knows only the enum ones
        set.add(builder.function.attributes, '"prefer-vector-width"="512"')
        return context.get_dummy_value()
    return types.void(), codegen


@njit(cache=_CACHE)
def _pw0(a, start, n, stride):
    """numpy's pairwise sum of a[start], a[start + stride], ... (n <= 128 terms)."""
    _wide()
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[start + i * stride]
        return res
    if n <= 128 and stride == 1:   # the same operations, contiguous (vectorises better)
        r0 = a[start]
        r1 = a[start + 1]
        r2 = a[start + 2]
        r3 = a[start + 3]
        r4 = a[start + 4]
        r5 = a[start + 5]
        r6 = a[start + 6]
        r7 = a[start + 7]
        i = 8
        stop = n - (n % 8)
        while i < stop:
            p = start + i
            r0 += a[p]
            r1 += a[p + 1]
            r2 += a[p + 2]
            r3 += a[p + 3]
            r4 += a[p + 4]
            r5 += a[p + 5]
            r6 += a[p + 6]
            r7 += a[p + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += a[start + i]
            i += 1
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
    _wide()
    if n <= 128:
        return _pw0(a, start, n, stride)
    n2 = n // 2
    n2 -= n2 % 8
    return _pw0(a, start, n2, stride) + _pw0(a, start + n2 * stride, n - n2, stride)


@njit(cache=_CACHE)
def _pw2(a, start, n, stride):
    _wide()
    if n <= 128:
        return _pw0(a, start, n, stride)
    n2 = n // 2
    n2 -= n2 % 8
    return _pw1(a, start, n2, stride) + _pw1(a, start + n2 * stride, n - n2, stride)


@njit(cache=_CACHE)
def _pw3(a, start, n, stride):
    _wide()
    if n <= 128:
        return _pw0(a, start, n, stride)
    n2 = n // 2
    n2 -= n2 % 8
    return _pw2(a, start, n2, stride) + _pw2(a, start + n2 * stride, n - n2, stride)


@njit(cache=_CACHE)
def _pw4(a, start, n, stride):
    _wide()
    if n <= 128:
        return _pw0(a, start, n, stride)
    n2 = n // 2
    n2 -= n2 % 8
    return _pw3(a, start, n2, stride) + _pw3(a, start + n2 * stride, n - n2, stride)


@njit(cache=_CACHE)
def _pw5(a, start, n, stride):
    _wide()
    if n <= 128:
        return _pw0(a, start, n, stride)
    n2 = n // 2
    n2 -= n2 % 8
    return _pw4(a, start, n2, stride) + _pw4(a, start + n2 * stride, n - n2, stride)


@njit(cache=_CACHE)
def _pw6(a, start, n, stride):
    _wide()
    if n <= 128:
        return _pw0(a, start, n, stride)
    n2 = n // 2
    n2 -= n2 % 8
    return _pw5(a, start, n2, stride) + _pw5(a, start + n2 * stride, n - n2, stride)


@njit(cache=_CACHE)
def _pw7(a, start, n, stride):
    _wide()
    if n <= 128:
        return _pw0(a, start, n, stride)
    n2 = n // 2
    n2 -= n2 % 8
    return _pw6(a, start, n2, stride) + _pw6(a, start + n2 * stride, n - n2, stride)


@njit(cache=_CACHE)
def _pw8(a, start, n, stride):
    _wide()
    if n <= 128:
        return _pw0(a, start, n, stride)
    n2 = n // 2
    n2 -= n2 % 8
    return _pw7(a, start, n2, stride) + _pw7(a, start + n2 * stride, n - n2, stride)


@njit(cache=_CACHE)
def _pw(a, start, n, stride):
    """numpy's pairwise sum (n <= 128 * 2^8 terms; numba caches no recursive functions, so the
    recursion is unrolled into levels)."""
    _wide()
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



# ---------------------------------------------------------------------------- T_comm from loads
# The numpy kernel's final step (``TcommKernel._delay`` / ``_dl_delay``) split in two around the
# logarithm, which stays numpy's (``np.log1p`` on the arguments computed here; numba's log1p may
# differ from numpy's in the last bit): ``_xargs`` gives the log1p arguments of one T_comm,
# ``_tval`` the T_comm from their logarithms. The same IEEE operations in the same order as
# numpy's: x = (z * rr) / (N0 B), t = (c1 * rr) / log1p(x), z = P_dl / s for a DL load s.
# cst = (c1 = S ln2 / B, c2 = N0 B, P_dl, T_ver).


@njit(cache=_CACHE, inline="always", error_model="numpy")
def _xargs(code, r, s1, s2, cst):
    """log1p arguments (x1, x2) of the T_comm of a set with r rejected and loads (s1, s2);
    0.0 where the time is 0 without a logarithm (nobody rejected, an empty DL set)."""
    if r <= 0:
        return 0.0, 0.0
    rr = float(r)
    if code == 1:
        return s1 * rr / cst[1], 0.0
    if code == 3:
        x2 = (cst[2] / s2) * rr / cst[1] if s2 > 0 else 0.0
        return s1 * rr / cst[1], x2
    return ((cst[2] / s1) * rr / cst[1] if s1 > 0 else 0.0), 0.0


@njit(cache=_CACHE, inline="always", error_model="numpy")
def _tval(code, r, s1, s2, l1, l2, cst):
    """T_comm from the logarithms l1, l2 of ``_xargs``'s arguments (numpy's where / maximum)."""
    if r <= 0:
        return 0.0
    num = cst[0] * float(r)
    if code == 1:
        return num / l1
    if code == 3:
        tu = num / l1
        td = num / l2 if s2 > 0 else 0.0
        if tu != tu or td != td:   # np.maximum: NaN propagates
            return tu if tu != tu else td
        return tu if tu >= td else td
    return num / l1 if s1 > 0 else 0.0


@njit(cache=_CACHE, error_model="numpy")
def times_from_logs(code, r, s1, s2, l1, l2, cst, out):
    """``_tval`` over arrays (tests compare it with the numpy kernel's final step)."""
    _wide()
    for i in range(r.size):
        out[i] = _tval(code, r[i], s1[i], s2[i], l1[i], l2[i], cst)


# ---------------------------------------------------------------------------- acceptance runs

@njit(cache=_CACHE, error_model="numpy")
def runs_from_logs(logu, log_alpha, alpha, cap, out):
    """``goodput.acceptance_runs`` from numpy's log of the uniforms: floor(ln U / ln alpha),
    inf where alpha >= 1, NaN -> cap, min(run, cap), as int32 (the same operations)."""
    m, k = logu.shape
    for mm in range(m):
        for j in range(k):
            if alpha[j] >= 1.0:
                out[mm, j] = cap
            else:
                x = np.floor(logu[mm, j] / log_alpha[j])
                out[mm, j] = cap if x != x else int(min(x, float(cap)))


@njit(cache=_CACHE, error_model="numpy")
def runs_from_logs_t(logu, log_alpha, alpha, cap, out, out_t):
    """``runs_from_logs``, and the runs transposed into out_t (K, M). With K >= 8 the rows are
    computed without a branch (a device with alpha >= 1 divides by -1.0, then takes cap) and
    transposed after, which vectorises; shorter rows keep one pass."""
    m, k = logu.shape
    if k < 8:
        for mm in range(m):
            for j in range(k):
                if alpha[j] >= 1.0:
                    v = cap
                else:
                    x = np.floor(logu[mm, j] / log_alpha[j])
                    v = cap if x != x else int(min(x, float(cap)))
                out[mm, j] = v
                out_t[j, mm] = v
        return
    ones = np.empty(k, dtype=np.bool_)
    den = np.empty(k)
    for j in range(k):
        ones[j] = alpha[j] >= 1.0
        den[j] = -1.0 if ones[j] else log_alpha[j]
    for mm in range(m):
        for j in range(k):
            x = np.floor(logu[mm, j] / den[j])
            v = cap if x != x else int(min(x, float(cap)))
            out[mm, j] = cap if ones[j] else v
    for j in range(k):
        oj = out_t[j]
        for mm in range(m):
            oj[mm] = out[mm, j]


# ---------------------------------------------------------------------------- paths (phase 1)

@njit(cache=_CACHE, error_model="numpy")
def _flip_table(seg, k):
    """(K, top + 2): table[j, v] = steps of the nondecreasing path seg with seg[., j] <= v, the
    step where a device with run v becomes rejected (n: never); and top."""
    _wide()
    n = seg.shape[0]
    top = 0
    for s in range(n):
        for j in range(k):
            if seg[s, j] > top:
                top = seg[s, j]
    table = np.empty((k, top + 2), dtype=np.int64)
    for j in range(k):
        s = 0
        for v in range(top + 1):
            while s < n and seg[s, j] <= v:
                s += 1
            table[j, v] = s
        table[j, top + 1] = n
    return table, top


@njit(cache=_CACHE)
def _unit_steps(table, seg):
    """True when every column of the path seg rises by one a step until it stops (the
    uniform path and its chunks): then table[j, v] (``_flip_table``) is n for v >= seg[n - 1,
    j] and max(v - seg[0, j] + 1, 0) below; checked here on every entry of the table."""
    _wide()
    k, width = table.shape
    n = seg.shape[0]
    for j in range(k):
        off = seg[0, j] - 1
        last = seg[n - 1, j]
        for v in range(width):
            want = n if v >= last else max(v - off, 0)
            if table[j, v] != want:
                return False
    return True


# the index of a 64-bit word's lowest set bit by de Bruijn multiplication (exact integer ops)
_DEBRUIJN = np.uint64(0x03F79D71B4CA8B09)
_DEBRUIJN_INDEX = np.zeros(64, dtype=np.int64)
for _i in range(64):
    _DEBRUIJN_INDEX[((0x03F79D71B4CA8B09 << _i) & 0xFFFFFFFFFFFFFFFF) >> 58] = _i
_ONE, _ZERO, _SHIFT58 = np.uint64(1), np.uint64(0), np.uint64(58)


@njit(cache=_CACHE, error_model="numpy")
def path_loads(runs, seg, code, order, ua, va, coin, has_start, cst, ev_m, ev_s, ev_need,
               rcnt, s1, s2, x1, x2, posbit, pm, pacc, pspl, cbits, pc):
    """The events of ``SAATcomm.path_mean`` along the nondecreasing path ``seg`` (n, K):
    (sample, step, needs the kernel) in sample-major, step-ascending order (ev_*), and for the
    events that need the kernel, in the same order, the kernel's loads (rcnt, s1, s2) and the
    log1p arguments (x1, x2). Returns (events, evaluations). (Branch-free where it can be: the
    branches of such loops are unpredictable, and mispredictions cost more than the work.)
    Optimal split with K <= 62: the rejected sets of the events as bit masks (``_mask_loads``:
    one device more per distinct flip step, OR-ed in step order), their loads computed at the
    end vectorised over all of them; pm, pacc, pspl: work arrays."""
    _wide()
    m, k = runs.shape
    masks = k <= 62
    add = np.zeros(k + 2, dtype=np.int64)
    n = seg.shape[0]
    table, top = _flip_table(seg, k)
    flip = np.empty(k, dtype=np.int64)
    rk = np.empty(k, dtype=np.bool_)
    tmp = np.empty(k)
    evs = np.empty(n + 2, dtype=np.int64)
    evq = np.zeros(n + 1, dtype=np.int64)
    present = np.zeros(n + 1, dtype=np.bool_)
    nw = (n >> 6) + 1
    bits = np.zeros(nw, dtype=np.uint64)
    accv = np.empty(n + 1)
    splitv = np.empty(n + 1)
    cnt = np.empty(n + 1, dtype=np.int64)
    e = 0
    nn = 0
    for mm in range(m):
        row = coin[mm] if code == 3 else coin[0]
        fmin = n
        for j in range(k):
            v = runs[mm, j]
            f = table[j, v if v < top + 1 else top + 1]
            flip[j] = f
            present[f] = True
            fmin = min(fmin, f)
        # events: step 0, then every distinct flip step below n, ascending
        if n <= 64:
            ne = 0
            for st in range(n):
                evs[ne] = st
                ne += st == 0 or present[st]
                present[st] = False
            present[n] = False
        else:   # long paths: the set bits of a bitmap of the flip steps, lowest first
            for j in range(k):
                f = flip[j]
                bits[f >> 6] |= _ONE << np.uint64(f & 63)
            evs[0] = 0
            ne = 1
            for wi in range(nw):
                word = bits[wi]
                bits[wi] = _ZERO
                while word != _ZERO:
                    low = word ^ (word & (word - _ONE))
                    st = (wi << 6) + _DEBRUIJN_INDEX[(low * _DEBRUIJN) >> _SHIFT58]
                    evs[ne] = st
                    ne += (st > 0) & (st < n)
                    word ^= low
        if masks:
            for q in range(ne):
                evq[evs[q]] = q
                add[q] = 0
            evq[n] = ne   # never rejected on this path: into a slot no event reads
            for j in range(k):
                add[evq[flip[j]]] |= posbit[j]
            mask = 0
            for q in range(ne):
                mask |= add[q]
                st = evs[q]
                need = not (st == 0 and has_start) and fmin <= st
                ev_m[e] = mm
                ev_s[e] = st
                ev_need[e] = need
                e += 1
                pm[nn] = mask
                pc[nn] = cbits[mm] if code == 3 else 0
                nn += need
            continue
        if code == 0:
            # every event of this sample at once, in one pass over the devices in reversed UL
            # order; the same operations per event as ``_loads``
            for q in range(ne):
                accv[q] = 0.0
                splitv[q] = _INF
                cnt[q] = 0
            for i in range(k):
                f = flip[order[i]]
                u = ua[i]
                vi = va[i]
                for q in range(ne):
                    x = f <= evs[q]
                    a0 = accv[q]
                    cand = u if (i == 0 or u > a0) else a0
                    splitv[q] = min(splitv[q], cand if x else _INF)
                    accv[q] = a0 + (vi if x else 0.0)
                    cnt[q] += x
        for q in range(ne):
            st = evs[q]
            need = not (st == 0 and has_start) and fmin <= st
            ev_m[e] = mm
            ev_s[e] = st
            ev_need[e] = need
            e += 1
            if need:
                if code == 0:
                    r = cnt[q]
                    a1 = min(accv[q], splitv[q])
                    b1 = 0.0
                else:
                    for j in range(k):
                        rk[j] = flip[j] <= st
                    r, a1, b1 = _loads(rk, code, order, ua, va, row, tmp)
                rcnt[nn] = r
                s1[nn] = a1
                s2[nn] = b1
                x1[nn], x2[nn] = _xargs(code, r, a1, b1, cst)
                nn += 1
    if masks:
        _mask_loads_any(code, pm, pc, nn, ua, va, cst, pacc, pspl, rcnt, rcnt, s1, s2, x1, x2)
    return e, nn


@njit(cache=_CACHE, error_model="numpy", inline="always")
def _dense_optimal(fl, s, ua, va, acc, spl, cnt):
    """The optimal split's load (acc) and rejected count of every sample at step s: the
    operations of ``_loads`` (code 0) per sample, vectorised over samples. The first device of
    the reversed order (cand = its u, from acc = 0.0 and spl = inf), then the others four per
    pass over the samples (``_fl_step``: the same operations without a test of i)."""
    k, m = ua.size, acc.size
    u = ua[0]
    vi = va[0]
    u0 = min(_INF, u)
    for mm in range(m):
        x = fl[0, mm] <= s
        spl[mm] = u0 if x else _INF
        acc[mm] = 0.0 + (vi if x else 0.0)
        cnt[mm] = x
    i = 1
    while i + 3 < k:
        ua0, va0, ua1, va1 = ua[i], va[i], ua[i + 1], va[i + 1]
        ua2, va2, ua3, va3 = ua[i + 2], va[i + 2], ua[i + 3], va[i + 3]
        f0, f1, f2, f3 = fl[i], fl[i + 1], fl[i + 2], fl[i + 3]
        for mm in range(m):
            a, sp, c = _fl_step(f0[mm] <= s, ua0, va0, acc[mm], spl[mm], cnt[mm])
            a, sp, c = _fl_step(f1[mm] <= s, ua1, va1, a, sp, c)
            a, sp, c = _fl_step(f2[mm] <= s, ua2, va2, a, sp, c)
            a, sp, c = _fl_step(f3[mm] <= s, ua3, va3, a, sp, c)
            acc[mm] = a
            spl[mm] = sp
            cnt[mm] = c
        i += 4
    while i < k:
        u = ua[i]
        vi = va[i]
        fi = fl[i]
        for mm in range(m):
            a, sp, c = _fl_step(fi[mm] <= s, u, vi, acc[mm], spl[mm], cnt[mm])
            acc[mm] = a
            spl[mm] = sp
            cnt[mm] = c
        i += 1
    for mm in range(m):
        acc[mm] = min(acc[mm], spl[mm])


@njit(cache=_CACHE, error_model="numpy", inline="always")
def _fl_step(x, u, vi, a0, sp, c):
    """``_dev_step`` with the rejection x given, and the count."""
    cand = u if u > a0 else a0
    return a0 + (vi if x else 0.0), min(sp, cand if x else _INF), c + x


@njit(cache=_CACHE, error_model="numpy", inline="always")
def _dense_points(s, base, cnt, acc, prev, evf, rcnt, s1, x1, cst, store):
    """Step s of ``path_dense``: the event flag of every sample from its rejected count cnt
    and, with ``store`` (the optimal split, a constant at each call), its count, load and
    log1p argument."""
    for mm in range(acc.size):
        r = cnt[mm]
        if store:
            a = acc[mm]
            rcnt[base + mm] = r
            s1[base + mm] = a
            x1[base + mm] = _xargs(0, r, a, 0.0, cst)[0]
        evf[s, mm] = (s == 0) | (r != prev[mm])
        prev[mm] = r


@njit(cache=_CACHE, inline="always")
def _step_masks(fl, s, posbit, order, pm):
    """pm[m] = the bits of the devices with fl[i, m] <= s (row i: device order[i]), OR-ed,
    four devices per pass over the samples."""
    k, m = fl.shape
    for mm in range(m):
        pm[mm] = 0
    i = 0
    while i + 3 < k:
        b0, b1 = posbit[order[i]], posbit[order[i + 1]]
        b2, b3 = posbit[order[i + 2]], posbit[order[i + 3]]
        f0, f1, f2, f3 = fl[i], fl[i + 1], fl[i + 2], fl[i + 3]
        for mm in range(m):
            pm[mm] |= (((b0 if f0[mm] <= s else 0) | (b1 if f1[mm] <= s else 0))
                       | ((b2 if f2[mm] <= s else 0) | (b3 if f3[mm] <= s else 0)))
        i += 4
    while i < k:
        b = posbit[order[i]]
        fi = fl[i]
        for mm in range(m):
            pm[mm] |= b if fi[mm] <= s else 0
        i += 1


@njit(cache=_CACHE, error_model="numpy")
def path_dense(runs_t, seg, code, order, ua, va, cbits, posbit, cst, fl, acc, spl, cnt, evf,
               rcnt, s1, s2, x1, x2, pm, pc, has_start):
    """``path_loads`` on a short path, computed at every (step, sample) (index s * M + m),
    vectorised over samples: the loads of each point from scratch with the same operations as
    ``_loads`` (the optimal split fused here; all-UL, all-DL and the random split, K <= 62, by
    ``_mask_loads_any`` on the step's rejected sets as bit masks, pm, pc: work), and evf[s, m]:
    step s is an event of sample m (step 0 or a flip step: flips only add devices, so a step is
    a flip step iff the rejected count grows there). Points that are not events have the
    rejected set of the step before. Steps before any flip (nobody rejected) and a known start
    are not computed. runs_t: the runs transposed (K, M)."""
    _wide()
    first_s, prev = _dense_start(runs_t, seg, order, fl, evf, rcnt, s1, s2, x1, x2, has_start)
    for s in range(first_s, seg.shape[0]):
        _dense_step(s, first_s, code, fl, order, ua, va, cbits, posbit, cst, acc, spl, cnt, evf,
                    rcnt, s1, s2, x1, x2, pm, pc, prev)


@njit(cache=_CACHE, error_model="numpy", inline="always")
def _dense_start(runs_t, seg, order, fl, evf, rcnt, s1, s2, x1, x2, has_start):
    """``path_dense``'s start: fl[i, m], the step at which device order[i] of sample m becomes
    rejected (n: never), the steps before the first to compute zeroed (nobody rejected, step 0
    an event). Returns (that first step, the rejected count of each sample before it)."""
    k, m = runs_t.shape
    n = seg.shape[0]
    table, top = _flip_table(seg, k)
    lin = _unit_steps(table, seg)
    gmin = n
    for i in range(k):   # the devices' rows of the transposed runs (contiguous)
        j = order[i]
        rj = runs_t[j]
        fi = fl[i]
        if lin:   # the table's values by arithmetic (no gather)
            off = seg[0, j] - 1
            last = seg[n - 1, j]
            for mm in range(m):
                v = np.int64(rj[mm])
                f = n if v >= last else max(v - off, 0)
                fi[mm] = f
                gmin = min(gmin, f)
            continue
        tj = table[j]
        for mm in range(m):
            v = rj[mm]
            f = tj[v if v < top + 1 else top + 1]
            fi[mm] = f
            gmin = min(gmin, f)
    first_s = max(gmin, 1 if has_start else 0)
    for s in range(min(first_s, n)):
        base = s * m
        for mm in range(m):
            evf[s, mm] = s == 0
            rcnt[base + mm] = 0
            s1[base + mm] = 0.0
            s2[base + mm] = 0.0
            x1[base + mm] = 0.0
            x2[base + mm] = 0.0
    # the rejected count at the step before first_s (nonzero only for flips at a known start)
    prev = np.zeros(m, dtype=np.int64)
    if first_s > gmin:
        for i in range(k):
            for mm in range(m):
                prev[mm] += fl[i, mm] < first_s
    return first_s, prev


@njit(cache=_CACHE, error_model="numpy", inline="always")
def _dense_step(s, first_s, code, fl, order, ua, va, cbits, posbit, cst, acc, spl, cnt, evf,
                rcnt, s1, s2, x1, x2, pm, pc, prev):
    """Step s >= first_s of ``path_dense``: every sample's loads, log1p arguments and event
    flag."""
    m = acc.size
    base = s * m
    if code == 0:   # one load per point (s2 and x2 are read for the random split only)
        _dense_optimal(fl, s, ua, va, acc, spl, cnt)
        _dense_points(s, base, cnt, acc, prev, evf, rcnt, s1, x1, cst, True)
        return
    if s == first_s:
        for mm in range(m):
            pc[mm] = cbits[mm] if code == 3 else 0
    _step_masks(fl, s, posbit, order, pm)
    stop = base + m
    _mask_loads_any(code, pm, pc, m, ua, va, cst, acc, spl, cnt, rcnt[base:stop],
                    s1[base:stop], s2[base:stop], x1[base:stop], x2[base:stop])
    _dense_points(s, base, cnt, acc, prev, evf, rcnt, s1, x1, cst, False)


@njit(cache=_CACHE, error_model="numpy", inline="always")
def _tvals(code, n, rcnt, s1, s2, l1, l2, cst, out):
    """out[:n] = ``_tval`` of each (the codes 0-2 written to vectorise)."""
    c1 = cst[0]
    ul = code == 1
    if code == 3:
        for p in range(n):
            out[p] = _tval(code, rcnt[p], s1[p], s2[p], l1[p], l2[p], cst)
    else:
        for p in range(n):
            r = rcnt[p]
            ld = s1[p]
            out[p] = c1 * float(r) / l1[p] if (r > 0 and (ul or ld > 0)) else 0.0


@njit(cache=_CACHE, error_model="numpy", inline="always")
def _dense_bins(n, m, evf, tv, start, has_start, total, table, want_table):
    """The events' T_comm tv (index s * M + m) accumulated per step in sample-major order
    (``path_finish``'s bincount, then the running total); with ``has_start``, step 0 is
    start. Branch-free: a point that is not an event adds +0.0 (an exact no-op: no partial
    sum is -0.0, no term is -0.0)."""
    if has_start:
        for mm in range(m):
            tv[mm] = start[mm]
    bins = np.zeros(n)
    for mm in range(m):
        prev = 0.0
        for s in range(n):
            v = tv[s * m + mm]
            e = evf[s, mm]
            bins[s] += (v - prev) if e else 0.0
            prev = v if e else prev
            if want_table:
                table[s, mm] = prev
    _running_total(bins, total, n)


@njit(cache=_CACHE, error_model="numpy")
def _running_total(bins, total, n):
    """total[:n] = numpy's cumsum of bins[:n] (sequential, in the same order)."""
    _wide()
    acc = 0.0
    for s in range(n):
        acc = bins[s] if s == 0 else acc + bins[s]
        total[s] = acc


@njit(cache=_CACHE, error_model="numpy")
def dense_finish(n, m, evf, rcnt, s1, s2, l1, l2, code, cst, start, has_start, total, table,
                 want_table, tv):
    """``path_finish`` for ``path_dense``: the events' T_comm accumulated per step in
    sample-major order (``_dense_bins``). tv: work (n * M)."""
    _wide()
    _tvals(code, n * m, rcnt, s1, s2, l1, l2, cst, tv)
    _dense_bins(n, m, evf, tv, start, has_start, total, table, want_table)


@njit(cache=_CACHE, error_model="numpy")
def path_finish(ne, ev_m, ev_s, ev_need, rcnt, s1, s2, l1, l2, code, cst, start, has_start,
                n, total, table, want_table):
    """Sum of T_comm per step (the bincount + cumsum of ``path_mean``) into total[:n] and, with
    ``want_table``, the per-sample T_comm at every point of the path into table[:n] (what
    ``_from_path`` looks up); l1, l2: numpy's log1p of ``path_loads``'s arguments."""
    _wide()
    bins = np.zeros(n)
    prev = 0.0
    p = 0
    for e in range(ne):
        mm = ev_m[e]
        first = e == 0 or ev_m[e - 1] != mm
        tv = 0.0
        if ev_need[e]:
            tv = _tval(code, rcnt[p], s1[p], s2[p], l1[p], l2[p], cst)
            p += 1
        if first:
            prev = 0.0
            if has_start:
                tv = start[mm]
        bins[ev_s[e]] += tv - prev
        prev = tv
        if want_table:
            last = n if (e + 1 == ne or ev_m[e + 1] != mm) else ev_s[e + 1]
            for s in range(ev_s[e], last):
                table[s, mm] = tv
    _running_total(bins, total, n)


# ---------------------------------------------------------------------------- phase 2

@njit(cache=_CACHE, error_model="numpy")
def _pair_loads(runs, rej, rows, devs, npairs, code, order, ua, va, coin, cst, rcnt, s1, s2,
                x1, x2):
    _wide()
    k = runs.shape[1]
    rk = np.empty(k, dtype=np.bool_)
    tmp = np.empty(k)
    for i in range(npairs):
        mm = rows[i]
        for j in range(k):
            rk[j] = rej[mm, j]
        rk[devs[i]] = True
        row = coin[mm] if code == 3 else coin[0]
        r, a, b = _loads(rk, code, order, ua, va, row, tmp)
        rcnt[i] = r
        s1[i] = a
        s2[i] = b
        x1[i], x2[i] = _xargs(code, r, a, b, cst)


def pairwise_plan(n):
    """The leaves and the combination order of ``_pw`` over n contiguous terms: (leaf_of (n,),
    lane_of (n,): 0..7 the accumulator of a term of a leaf of >= 8 terms, 8 its tail (added in
    order after the accumulators are combined) or any term of a leaf of < 8, leaf start and
    length, plan: post-order, a leaf index or -1 = add the two values on top of the stack)."""
    starts, lens, plan = [], [], []

    def rec(start, size, level):
        if size <= 128:
            plan.append(len(starts))
            starts.append(start)
            lens.append(size)
            return
        if level == 0:
            raise ValueError("more terms than _pw sums")
        n2 = size // 2
        n2 -= n2 % 8
        rec(start, n2, level - 1)
        rec(start + n2, size - n2, level - 1)
        plan.append(-1)

    rec(0, n, 8)
    leaf_of = np.empty(n, dtype=np.int64)
    lane_of = np.empty(n, dtype=np.int64)
    for li, (st, ln) in enumerate(zip(starts, lens)):
        off = np.arange(ln)
        leaf_of[st:st + ln] = li
        lane_of[st:st + ln] = np.where((ln >= 8) & (off < ln - ln % 8), off % 8, 8)
    return (np.stack([leaf_of, lane_of]), np.array([starts, lens], dtype=np.int64),
            np.array(plan, dtype=np.int64))


@njit(cache=_CACHE, error_model="numpy", inline="always")
def _sparse_pw(a, pos, npos, lof, linfo, plan, lacc, stk):
    """``_pw(a, 0, n, 1)`` when every term of a outside pos[:npos] (ascending) is +0.0 (and
    none is -0.0): adding +0.0 changes no partial sum, so each leaf accumulator is the ordered
    sum of its nonzero terms, combined exactly as ``_pw0`` does, the leaves as ``_pw``."""
    nleaf = linfo.shape[1]
    for li in range(nleaf):
        for c in range(9):
            lacc[li, c] = 0.0
    for t in range(npos):
        p = pos[t]
        li = lof[0, p]
        c = lof[1, p]
        if c < 8 or linfo[1, li] < 8:
            lacc[li, c] += a[p]
    for li in range(nleaf):
        if linfo[1, li] >= 8:
            lacc[li, 8] = (((lacc[li, 0] + lacc[li, 1]) + (lacc[li, 2] + lacc[li, 3]))
                           + ((lacc[li, 4] + lacc[li, 5]) + (lacc[li, 6] + lacc[li, 7])))
    for t in range(npos):   # the tails of the long leaves, in order, after their accumulators
        p = pos[t]
        li = lof[0, p]
        if lof[1, p] == 8 and linfo[1, li] >= 8:
            lacc[li, 8] += a[p]
    top = 0
    for q in range(plan.size):
        op = plan[q]
        if op >= 0:
            stk[top] = lacc[op, 8]
            top += 1
        else:
            top -= 1
            stk[top - 1] = stk[top - 1] + stk[top]
    return stk[0]


@njit(cache=_CACHE, error_model="numpy", inline="always")
def _dev_step(msk, i, u, vi, a0, sp):
    """One device (position i > 0 of the reversed UL order) of ``_loads``' optimal split:
    (acc, split) after it, from (a0, sp)."""
    x = ((msk >> i) & 1) != 0
    cand = u if u > a0 else a0
    return a0 + (vi if x else 0.0), min(sp, cand if x else _INF)


@intrinsic
def _popcount(typingctx, src):
    """The number of set bits of an integer (LLVM's ctpop)."""
    if not isinstance(src, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])
    return src(src), codegen


@njit(cache=_CACHE, inline="always")
def _bitcount(v):
    """The set bits of v >= 0 (``_popcount``, callable from Python too)."""
    return _popcount(v)


@njit(cache=_CACHE, error_model="numpy")
def _mask_loads(pm, npairs, ua, va, cst, acc, spl, cnt, rcnt, s1, s2, x1, x2):
    """The optimal split's loads of the rejected sets pm[p] (bit i: the device at position i
    of the reversed UL order), vectorised over the sets: the operations of ``_loads`` (code 0)
    per set, in the same order; in blocks of sets whose work arrays stay in cache."""
    _wide()
    for b0 in range(0, npairs, _BLOCK):
        nb = min(_BLOCK, npairs - b0)
        _mask_loads_block(pm[b0:b0 + nb], nb, ua, va, cst, acc[b0:b0 + nb], spl[b0:b0 + nb],
                          cnt[b0:b0 + nb], rcnt[b0:b0 + nb], s1[b0:b0 + nb], s2[b0:b0 + nb],
                          x1[b0:b0 + nb], x2[b0:b0 + nb])


@njit(cache=_CACHE, error_model="numpy")
def _mask_loads_block(pm, npairs, ua, va, cst, acc, spl, cnt, rcnt, s1, s2, x1, x2):
    """``_mask_loads`` of one block of sets: per set, the operations of ``_loads`` (code 0) in
    the same order, the first device (from acc = 0.0 and spl = inf: cand = its u) peeled, then
    four devices per pass over the sets (acc and spl stay in registers), the count by
    popcount (the same integer)."""
    _wide()
    k = ua.size
    if k == 0:
        for p in range(npairs):
            acc[p] = 0.0
            spl[p] = _INF
    else:
        u = ua[0]
        vi = va[0]
        u0 = min(_INF, u)
        for p in range(npairs):
            x = (pm[p] & 1) != 0
            spl[p] = u0 if x else _INF
            acc[p] = 0.0 + (vi if x else 0.0)
    i = 1
    while i + 3 < k:
        ua0, va0, ua1, va1 = ua[i], va[i], ua[i + 1], va[i + 1]
        ua2, va2, ua3, va3 = ua[i + 2], va[i + 2], ua[i + 3], va[i + 3]
        for p in range(npairs):
            msk = pm[p]
            a, sp = _dev_step(msk, i, ua0, va0, acc[p], spl[p])
            a, sp = _dev_step(msk, i + 1, ua1, va1, a, sp)
            a, sp = _dev_step(msk, i + 2, ua2, va2, a, sp)
            a, sp = _dev_step(msk, i + 3, ua3, va3, a, sp)
            acc[p] = a
            spl[p] = sp
        i += 4
    while i < k:
        u = ua[i]
        vi = va[i]
        for p in range(npairs):
            a, sp = _dev_step(pm[p], i, u, vi, acc[p], spl[p])
            acc[p] = a
            spl[p] = sp
        i += 1
    for p in range(npairs):
        r = _bitcount(pm[p])
        cnt[p] = r
        load = min(acc[p], spl[p])
        rcnt[p] = r
        s1[p] = load
        s2[p] = 0.0
        x1[p] = _xargs(0, r, load, 0.0, cst)[0]



@njit(cache=_CACHE)
def coin_bits(coin, posbit, out):
    """out[m] = the bits posbit[j] of the devices j with coin[m, j] (UL), OR-ed."""
    m, k = coin.shape
    for mm in range(m):
        b = 0
        for j in range(k):
            b |= posbit[j] if coin[mm, j] else 0
        out[mm] = b

@njit(cache=_CACHE, error_model="numpy")
def _dl_pw0(dm, npairs, va, w, out, cnt):
    """out[p] = ``_pw0`` of the row (va[i] if bit i of dm[p] else 0.0), i < K <= 62, for every
    set at once (its 8 accumulators, their combination and the tail: the same additions);
    cnt[p] += the set's size."""
    _wide()
    k = va.size
    if 8 <= k < 24:
        _dl_pw0_one_pass(dm, npairs, va, out, cnt)
        return
    if k < 8:
        for p in range(npairs):
            out[p] = 0.0
        for i in range(k):
            vi = va[i]
            for p in range(npairs):
                x = ((dm[p] >> i) & 1) != 0
                out[p] += vi if x else 0.0
                cnt[p] += x
        return
    stop = k - (k % 8)
    for i in range(8):
        vi = va[i]
        for p in range(npairs):
            x = ((dm[p] >> i) & 1) != 0
            w[i, p] = vi if x else 0.0
            cnt[p] += x
    for i in range(8, stop):
        vi = va[i]
        c = i % 8
        for p in range(npairs):
            x = ((dm[p] >> i) & 1) != 0
            w[c, p] += vi if x else 0.0
            cnt[p] += x
    for p in range(npairs):
        out[p] = (((w[0, p] + w[1, p]) + (w[2, p] + w[3, p]))
                  + ((w[4, p] + w[5, p]) + (w[6, p] + w[7, p])))
    for i in range(stop, k):
        vi = va[i]
        for p in range(npairs):
            x = ((dm[p] >> i) & 1) != 0
            out[p] += vi if x else 0.0
            cnt[p] += x


@njit(cache=_CACHE, error_model="numpy")
def _ul_min(um, npairs, ua, out, cnt):
    """out[p] = the smallest ua[i] over the bits i of um[p] (inf when none), with the
    comparison of ``_loads`` (take ua[i] when ua[i] < the minimum so far); cnt[p] += the set's
    size."""
    _wide()
    k = ua.size
    if k >= 4:
        _ul_min_by4(um, npairs, ua, out, cnt)
        return
    for p in range(npairs):
        out[p] = _INF
    for i in range(k):
        u = ua[i]
        for p in range(npairs):
            x = ((um[p] >> i) & 1) != 0
            z = out[p]
            out[p] = u if (x and u < z) else z
            cnt[p] += x


@njit(cache=_CACHE, error_model="numpy", inline="always")
def _sel(d, i, v):
    return v if ((d >> i) & 1) != 0 else 0.0


@njit(cache=_CACHE, error_model="numpy")
def _dl_pw0_one_pass(dm, npairs, va, out, cnt):
    """``_dl_pw0`` for 8 <= K < 24 in one pass over the sets, the 8 accumulators in
    registers: lane c is va[c] (or 0.0), plus va[8 + c] (or 0.0) when K >= 16, then their
    combination; the tail added in order after; the same additions. The count by popcount."""
    _wide()
    k = va.size
    stop = k - (k % 8)
    two = stop == 16
    v0, v1, v2, v3, v4, v5, v6, v7 = va[0], va[1], va[2], va[3], va[4], va[5], va[6], va[7]
    w0 = w1 = w2 = w3 = w4 = w5 = w6 = w7 = 0.0
    if two:
        w0, w1, w2, w3, w4, w5, w6, w7 = (va[8], va[9], va[10], va[11], va[12], va[13],
                                          va[14], va[15])
    for p in range(npairs):
        d = dm[p]
        r0 = _sel(d, 0, v0)
        r1 = _sel(d, 1, v1)
        r2 = _sel(d, 2, v2)
        r3 = _sel(d, 3, v3)
        r4 = _sel(d, 4, v4)
        r5 = _sel(d, 5, v5)
        r6 = _sel(d, 6, v6)
        r7 = _sel(d, 7, v7)
        if two:
            r0 += _sel(d, 8, w0)
            r1 += _sel(d, 9, w1)
            r2 += _sel(d, 10, w2)
            r3 += _sel(d, 11, w3)
            r4 += _sel(d, 12, w4)
            r5 += _sel(d, 13, w5)
            r6 += _sel(d, 14, w6)
            r7 += _sel(d, 15, w7)
        out[p] = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        cnt[p] += _bitcount(d)
    for i in range(stop, k):   # the tail, in order
        vi = va[i]
        for p in range(npairs):
            out[p] += _sel(dm[p], i, vi)


@njit(cache=_CACHE, error_model="numpy")
def _ul_min_by4(um, npairs, ua, out, cnt):
    """``_ul_min`` with four devices per pass over the sets (the same comparisons in the same
    order) and the count by popcount."""
    _wide()
    k = ua.size
    for p in range(npairs):
        out[p] = _INF
        cnt[p] += _bitcount(um[p])
    i = 0
    while i + 3 < k:
        u0, u1, u2, u3 = ua[i], ua[i + 1], ua[i + 2], ua[i + 3]
        for p in range(npairs):
            d = um[p]
            z = out[p]
            z = u0 if (((d >> i) & 1) != 0 and u0 < z) else z
            z = u1 if (((d >> (i + 1)) & 1) != 0 and u1 < z) else z
            z = u2 if (((d >> (i + 2)) & 1) != 0 and u2 < z) else z
            z = u3 if (((d >> (i + 3)) & 1) != 0 and u3 < z) else z
            out[p] = z
        i += 4
    while i < k:
        u = ua[i]
        for p in range(npairs):
            z = out[p]
            out[p] = u if (((um[p] >> i) & 1) != 0 and u < z) else z
        i += 1


@njit(cache=_CACHE, error_model="numpy")
def _mask_loads_any(code, pm, pc, npairs, ua, va, cst, acc, spl, cnt, rcnt, s1, s2, x1, x2):
    """``_mask_loads`` for every split (K <= 62, bit i: device i for the reactive modes):
    the operations of ``_loads`` per set, vectorised over the sets. all-UL: the minimum of the
    rejected UL powers; all-DL: ``_pw0`` of the rejected 1/g row; random: pc[p], the set's
    coin bits (UL devices), split the set into its UL minimum and its DL pairwise sum (the
    count: the sizes of the two disjoint parts)."""
    _wide()
    if code == 0:
        _mask_loads(pm, npairs, ua, va, cst, acc, spl, cnt, rcnt, s1, s2, x1, x2)
        return
    for p in range(npairs):
        cnt[p] = 0
    if code == 1:
        _ul_min(pm, npairs, ua, acc, cnt)
    elif code == 2:
        _dl_pw0(pm, npairs, va, np.empty((8, npairs)), spl, cnt)
    else:
        um = np.empty(npairs, dtype=np.int64)
        dm = np.empty(npairs, dtype=np.int64)
        for p in range(npairs):
            um[p] = pm[p] & pc[p]
            dm[p] = pm[p] & ~pc[p]
        _ul_min(um, npairs, ua, acc, cnt)
        _dl_pw0(dm, npairs, va, np.empty((8, npairs)), spl, cnt)
    for p in range(npairs):
        r = cnt[p]
        if code == 1:
            a, b = acc[p], 0.0
        elif code == 2:
            a, b = spl[p], 0.0
        else:
            a, b = acc[p], spl[p]
        rcnt[p] = r
        s1[p] = a
        s2[p] = b
        x1[p], x2[p] = _xargs(code, r, a, b, cst)


@njit(cache=_CACHE, error_model="numpy")
def _eval_pairs(runs, rej, rmask, posbit, rows, devs, n, code, order, ua, va, coin, cst, rcnt,
                s1, s2, x1, x2, pm, acc, spl, cnt, cbits, pc):
    """Loads and log1p arguments of the rejected sets (sample rows[p] + device devs[p]);
    cbits: the coin bits per sample (random split), pc: work."""
    _wide()
    if ua.size <= 62:
        for p in range(n):
            pm[p] = rmask[rows[p]] | posbit[devs[p]]
            pc[p] = cbits[rows[p]] if code == 3 else 0
        _mask_loads_any(code, pm, pc, n, ua, va, cst, acc, spl, cnt, rcnt, s1, s2, x1, x2)
    else:
        _pair_loads(runs, rej, rows, devs, n, code, order, ua, va, coin, cst, rcnt, s1, s2, x1,
                    x2)


@njit(cache=_CACHE, inline="always")
def _find_eq(rj, g, out, off):
    """The indices mm with rj[mm] == g, ascending, into out[off:]; returns their number.
    Blocks of 64 compared into a bit mask (vectorises), its set bits read lowest first."""
    m = rj.size
    c = off
    for b0 in range(0, m, 64):
        nb = min(64, m - b0)
        word = _ZERO
        for b in range(nb):
            word |= (_ONE if rj[b0 + b] == g else _ZERO) << np.uint64(b)
        while word != _ZERO:
            low = word ^ (word & (word - _ONE))
            out[c] = b0 + _DEBRUIJN_INDEX[(low * _DEBRUIJN) >> _SHIFT58]
            c += 1
            word ^= low
    return c - off


@njit(cache=_CACHE, error_model="numpy")
def p2_init(runs, runs_t, gamma, caps, rej, rmask, posbit, contrib, code, order, ua, va, coin,
            cst, rows, devs, rcnt, s1, s2, x1, x2, pm, acc, spl, cnt, pos, npos, cbits, pc):
    """Phase 2's start: the rejected sets at gamma (rmask: bits of ``_mask_loads_any``; rej
    when K > 62; runs_t: the runs transposed, given), and the (sample, device) pairs a +1 changes
    (run == gamma; pos, npos: per device) with their loads and log1p arguments. Returns the
    pairs."""
    _wide()
    m, k = runs.shape
    # (contrib needs no clearing: it is read only at pos[j], all of which are pairs evaluated
    # and stored at the first step, and later kept up to date)
    for mm in range(m):
        rmask[mm] = 0
    if k > 62:   # the rejected sets as rows (no bit masks; with them rej is not read)
        for mm in range(m):
            for j in range(k):
                rej[mm, j] = runs[mm, j] < gamma[j]
    n = 0
    for j in range(k):
        g = gamma[j]
        b = posbit[j]
        rj = runs_t[j]
        for mm in range(m):
            rmask[mm] |= b if rj[mm] < g else 0
        # the samples a +1 of j changes: the only nonzero terms of contrib[j] (few)
        c = _find_eq(rj, g, pos[j], 0)
        npos[j] = c
        if g < caps[j]:
            for q in range(c):
                rows[n] = pos[j, q]
                devs[n] = j
                n += 1
    _eval_pairs(runs, rej, rmask, posbit, rows, devs, n, code, order, ua, va, coin, cst, rcnt,
                s1, s2, x1, x2, pm, acc, spl, cnt, cbits, pc)
    return n


@njit(cache=_CACHE, error_model="numpy")
def _goodput(tok, draft, verify, tc):
    _wide()
    den = draft + verify + tc
    return tok / den if den > 0 else 0.0


@njit(cache=_CACHE, error_model="numpy")
def p2_step(runs, runs_t, gamma, caps, rej, rmask, posbit, t, contrib, npend, rows, devs, rcnt,
            s1, s2, l1, l2, en, w, draft_s, code, order, ua, va, coin, cst, x1, x2, pm, acc, spl,
            cnt, pos, npos, lof, linfo, plan, lacc, stk, state, cbits, pc, psum, dirty):
    """One phase-2 iteration (``contrib`` is stored transposed, (K, M)): the T_comm of the
    pending +1 pairs (from numpy's log1p l1, l2 of their arguments) into the cache, the current
    G, the +1 values, and (when one improves) the best +1 applied (``SAATcomm._apply_plus``) and
    the new pairs to evaluate written over rows/devs with their loads and log1p arguments.
    Returns the new pairs, or -1 when no +1 improves. state: (G, evaluations). psum[j]: the
    sparse sum of contrib[j] when dirty[j] is False (kept across steps: a device's sum is
    recomputed only after its contrib or pos changed; the same function of the same values).
    """
    _wide()
    m, k = runs.shape
    for i in range(npend):
        mm = rows[i]
        contrib[devs[i], mm] = _tval(code, rcnt[i], s1[i], s2[i], l1[i], l2[i], cst) - t[mm]
        dirty[devs[i]] = True
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
    verify = cst[3]
    value = _goodput(tok, d1, verify, tval)
    # plus_one_values
    best = -_INF
    jbest = -1
    ndev = 0
    for j in range(k):
        if gamma[j] < caps[j]:
            ndev += 1
            if dirty[j]:
                psum[j] = _sparse_pw(contrib[j], pos[j], npos[j], lof, linfo, plan, lacc, stk)
                dirty[j] = False
            pmean = tval + psum[j] / m
            tokd = (tok - en_cur[j]) + en[j, gamma[j] + 1] * w[j]
            base = d2 if j == i1 else d1
            dn = (gamma[j] + 1) * draft_s[j]
            g = _goodput(tokd, base if base > dn else dn, verify, pmean)
            if g > best:
                best = g
                jbest = j
    state[0] = value
    state[1] = ndev
    if jbest < 0 or not best > value:
        return -1
    j = jbest
    # SAATcomm._apply_plus
    # (the samples with run == gamma[j], ascending: pos[j][:npos[j]], j being below its cap)
    g0 = gamma[j]
    rj = runs_t[j]
    bj = posbit[j]
    pj = pos[j]
    nold = npos[j]
    for q in range(nold):
        mm = pj[q]
        t[mm] += contrib[j, mm]
        rej[mm, j] = True
        rmask[mm] |= bj
        contrib[j, mm] = 0.0
    g1 = g0 + 1
    gamma[j] = g1
    dirty[j] = True
    n = _find_eq(rj, g1, rows, 0) if g1 < caps[j] else 0
    for q in range(n):
        devs[q] = j
    n1 = n
    for q in range(nold):
        mm = pj[q]
        for i in range(k):
            rows[n] = mm
            devs[n] = i
            n += (i != j) & (gamma[i] < caps[i]) & (runs[mm, i] == gamma[i])
    for q in range(n1):
        pj[q] = rows[q]
    npos[j] = n1
    _eval_pairs(runs, rej, rmask, posbit, rows, devs, n, code, order, ua, va, coin, cst, rcnt,
                s1, s2, x1, x2, pm, acc, spl, cnt, cbits, pc)
    return n


# ---------------------------------------------------------------------------- any rejected rows

@njit(cache=_CACHE, error_model="numpy")
def kernel_loads(rej, rows, code, order, ua, va, coin, cst, posbit, r, s1, s2, x1, x2, pm, acc,
                 spl):
    """``TcommKernel._call``'s loads of the rejected rows rej (n, K) (rows: their samples, for
    the random split's coins), and the log1p arguments of their T_comm."""
    _wide()
    n, k = rej.shape
    if code == 0 and k <= 62:
        for p in range(n):
            mask = 0
            for j in range(k):
                mask |= posbit[j] if rej[p, j] else 0
            pm[p] = mask
        _mask_loads(pm, n, ua, va, cst, acc, spl, r, r, s1, s2, x1, x2)
        return
    tmp = np.empty(k)
    rk = np.empty(k, dtype=np.bool_)
    for p in range(n):
        for j in range(k):
            rk[j] = rej[p, j]
        row = coin[rows[p]] if code == 3 else coin[0]
        rr, a, b = _loads(rk, code, order, ua, va, row, tmp)
        r[p] = rr
        s1[p] = a
        s2[p] = b
        x1[p], x2[p] = _xargs(code, rr, a, b, cst)


# ---------------------------------------------------------------------------- single-device moves

@njit(cache=_CACHE, error_model="numpy")
def move_masks(runs_t, rmask, posbit, gamma, dev, new, ms, bstart, samp, entry_of, caps, mv, rows,
               pm, ua, va, cst, acc, spl, rcnt, s1, s2, x1, x2):
    """``SAATcomm._move_rows`` and the rejected sets of ``_evaluate_moves`` as bit masks (from
    the current sets rmask, one bit changed): the (move, sample) pairs among the first ms
    samples whose rejection of the moved device changes, move-major, samples ascending
    (np.nonzero's order), with their loads and log1p arguments (``_mask_loads``). runs_t: the
    runs transposed (K, M). Returns their number.

    A move by one level (+1 or -1) from gamma_j changes the samples whose run of j is
    v = min(old, new): with the budget scans' buckets (``budget_buckets``: those samples,
    ascending, are the bucket of entry entry_of[j, v + 1] when v < caps[j]) they are read from
    there instead of scanning all ms samples; longer moves (and caps of 0: no buckets) scan."""
    _wide()
    n = 0
    for q in range(dev.size):
        d = dev[q]
        old = gamma[d]
        nw = new[q]
        lo = min(old, nw)
        hi = max(old, nw)
        b = posbit[d]
        up = nw > old
        if hi - lo == 1 and lo >= 0 and lo < caps[d]:
            e = entry_of[d, lo + 1]
            for i in range(bstart[e], bstart[e + 1]):
                mm = samp[i]
                if mm >= ms:
                    break
                mv[n] = q
                rows[n] = mm
                pm[n] = (rmask[mm] | b) if up else (rmask[mm] & ~b)
                n += 1
            continue
        rd = runs_t[d]
        for mm in range(ms):   # branch-free: every sample written, kept if it changes
            v = rd[mm]
            mv[n] = q
            rows[n] = mm
            pm[n] = (rmask[mm] | b) if up else (rmask[mm] & ~b)
            n += (v >= lo) & (v < hi)
    _mask_loads_early(pm, n, ua, va, cst, acc, spl, rcnt, rcnt, s1, s2, x1, x2)
    return n


@njit(cache=_CACHE, error_model="numpy")
def set_point(gamma, en_tab, w, draft_s, en):
    """``DraftObjective._set``'s closed forms at gamma: en[j] = E[N] w (from en_tab), the tokens
    (numpy's pairwise sum of en), and of the drafting times d = gamma t: the first argmax, the
    largest and the largest without it (``max(initial=0.0)``). Returns (ok, tokens, i1, d1,
    d2); not ok (the numpy code decides) when a length is outside the table or a latency is
    not > 0 (a zero's sign or a NaN would matter there)."""
    _wide()
    k = gamma.size
    top = en_tab.shape[0]
    for j in range(k):
        if gamma[j] < 0 or gamma[j] >= top or not draft_s[j] > 0:
            return False, 0.0, 0, 0.0, 0.0
    for j in range(k):
        en[j] = en_tab[gamma[j], j] * w[j]
    tok = _pw(en, 0, k, 1)
    i1 = 0
    d1 = 0.0
    best = -1.0
    for j in range(k):
        dj = float(gamma[j]) * draft_s[j]
        if dj > best:
            best = dj
            i1 = j
        if dj > d1:
            d1 = dj
    d2 = 0.0
    for j in range(k):
        dj = float(gamma[j]) * draft_s[j]
        if j != i1 and dj > d2:
            d2 = dj
    return True, tok, i1, d1, d2


@njit(cache=_CACHE, error_model="numpy")
def move_goodput(dev, new, en_tab, w, en_cur, tok, i1, d1, d2, draft_s, verify, t_comm, out):
    """``DraftObjective._move_g`` for goodput with a constant T_ver: G after moving device
    dev[q] to new[q] from the current point (tokens tok with per-device E[N] en_cur, drafting
    time d1 led by device i1, d2 without it), T_comm t_comm[q]; E[N] from en_tab (``en_table``).
    The same IEEE operations in numpy's order: (tok - en_cur) + E[N] w; max(base, new t)
    (np.maximum: NaN wins); (drafting + T_ver) + T_comm; the quotient where that is > 0, else
    0. False (out untouched) when a length is outside the table."""
    _wide()
    top = en_tab.shape[0]
    for q in range(dev.size):
        if new[q] < 0 or new[q] >= top:
            return False
    for q in range(dev.size):
        d = dev[q]
        g = new[q]
        tk = (tok - en_cur[d]) + en_tab[g, d] * w[d]
        base = d2 if d == i1 else d1
        x = float(g) * draft_s[d]
        if base != base:
            dr = base
        elif x != x:
            dr = x
        else:
            dr = base if base >= x else x
        den = (dr + verify) + t_comm[q]
        out[q] = tk / den if den > 0 else 0.0
    return True


@njit(cache=_CACHE, error_model="numpy")
def move_sums(n, mv, rows, rcnt, s1, l1, cst, t, nmoves, out):
    """The deltas T_comm(moved) - T_comm(now) of the pairs summed per move in pair order (the
    bincount of ``move_means``)."""
    _wide()
    for q in range(nmoves):
        out[q] = 0.0
    for p in range(n):
        out[mv[p]] += _tval(0, rcnt[p], s1[p], 0.0, l1[p], 0.0, cst) - t[rows[p]]


# ---------------------------------------------------------------------------- budget scans
# ``draft_search.budget_search`` scans budget paths: each step adds one level of one device, in
# one fixed order of all (device, level) entries, and leaving devices out takes a subsequence
# of it. Along such a path device j of a sample becomes rejected at the step of its entry
# (j, run + 1): the samples are bucketed by that entry once per decision, and a scan walks the
# entries in order, each sample's rejected set growing by one device at each of its events.
# Each (sample, device) event has a slot that keeps its set (a bit mask) and T_comm: a re-scan
# with fewer devices recomputes only the sets that changed (the same set gives the same T_comm,
# bit for bit).

@njit(cache=_CACHE)
def budget_buckets(runs, entry_of, caps, bstart, samp):
    """The samples bucketed by the entry at which each of their devices becomes rejected along
    the full budget path: samp[bstart[e]:bstart[e + 1]] (ascending) for entry e = entry_of[j,
    run + 1]; devices whose run reaches their cap never are. Returns the events (slots)."""
    _wide()
    m, k = runs.shape
    for e in range(bstart.size):
        bstart[e] = 0
    for mm in range(m):
        for j in range(k):
            r = runs[mm, j]
            if r < caps[j]:
                bstart[entry_of[j, r + 1] + 1] += 1
    for e in range(bstart.size - 1):
        bstart[e + 1] += bstart[e]
    fill = bstart[:-1].copy()
    for mm in range(m):
        for j in range(k):
            r = runs[mm, j]
            if r < caps[j]:
                e = entry_of[j, r + 1]
                samp[fill[e]] = mm
                fill[e] += 1
    return bstart[-1]


@njit(cache=_CACHE, error_model="numpy")
def budget_scan_loads(who, bstart, samp, incl, posbit, cbits, code, ua, va, cst, cur, ev_mask,
                      pm, pc, pidx, acc, spl, cnt, rcnt, s1, s2, x1, x2):
    """The rejected sets of the events of a budget path with the devices ``incl`` (entries in
    order, each sample's set growing by the entry's device): a set that differs from the one
    in its slot (a former scan's) is pending: its slot in pidx, its loads and log1p arguments
    (``_mask_loads_any``). cur: work (M,). Returns the pending sets."""
    _wide()
    for mm in range(cur.size):
        cur[mm] = 0
    npend = 0
    for e in range(who.size):
        d = who[e]
        if not incl[d]:
            continue
        b = posbit[d]
        for i in range(bstart[e], bstart[e + 1]):   # branch-free: written, kept if pending
            mm = samp[i]
            mask = cur[mm] | b
            cur[mm] = mask
            pm[npend] = mask
            if code == 3:
                pc[npend] = cbits[mm]
            pidx[npend] = i
            npend += ev_mask[i] != mask
            ev_mask[i] = mask
    if code == 0:
        _mask_loads_early(pm, npend, ua, va, cst, acc, spl, cnt, rcnt, s1, s2, x1, x2)
    else:
        _mask_loads_any(code, pm, pc, npend, ua, va, cst, acc, spl, cnt, rcnt, s1, s2, x1, x2)
    return npend


@njit(cache=_CACHE, error_model="numpy")
def budget_scan_finish(npend, pidx, code, rcnt, s1, s2, l1, l2, cst, who, bstart, samp, incl,
                       ev_t, prev, n, total):
    """The pending sets' T_comm (from numpy's log1p l1, l2) into their slots, then the sum of
    T_comm per step as ``path_finish`` adds it (each event's change; a step's events are one
    entry's, in sample order as there; step 0 adds only +0.0, an exact no-op) and its running
    total into total[:n]. prev: work (M,)."""
    _wide()
    for p in range(npend):
        ev_t[pidx[p]] = _tval(code, rcnt[p], s1[p], s2[p], l1[p], l2[p], cst)
    for mm in range(prev.size):
        prev[mm] = 0.0
    bins = np.zeros(n)
    s = 0
    for e in range(who.size):
        if not incl[who[e]]:
            continue
        s += 1
        acc = 0.0
        for i in range(bstart[e], bstart[e + 1]):
            mm = samp[i]
            v = ev_t[i]
            acc += v - prev[mm]
            prev[mm] = v
        bins[s] = acc
    _running_total(bins, total, n)


@njit(cache=_CACHE)
def budget_point(ref, who, bstart, samp, incl, ev_t, t):
    """t[m]: each sample's T_comm at step ref of the last scan (its last event at or before
    ref; 0 when none)."""
    _wide()
    for mm in range(t.size):
        t[mm] = 0.0
    s = 0
    for e in range(who.size):
        if not incl[who[e]]:
            continue
        s += 1
        if s > ref:
            break
        for i in range(bstart[e], bstart[e + 1]):
            t[samp[i]] = ev_t[i]


# ---------------------------------------------------------------------------- budget: sets' loads

@njit(cache=_CACHE)
def row_masks(runs_t, gamma, posbit, out):
    """out[m] = the bits posbit[j] of the devices j with runs_t[j, m] < gamma[j] (the rejected
    set of sample m at gamma), OR-ed: ``coin_bits`` of ``SAATcomm._rejected(gamma)``."""
    _wide()
    for mm in range(out.size):
        out[mm] = 0
    for j in range(gamma.size):
        b = posbit[j]
        g = gamma[j]
        rd = runs_t[j]
        for mm in range(out.size):
            out[mm] |= b if rd[mm] < g else 0


_SERIAL_STEPS = 3.5   # ``_mask_loads_early`` walks sets one by one below this many steps a set


@njit(cache=_CACHE, error_model="numpy")
def _mask_loads_early(pm, npairs, ua, va, cst, acc, spl, cnt, rcnt, s1, s2, x1, x2):
    """``_mask_loads`` (the same values), faster when the optimal split's best prefix ends
    early in the reversed UL order. Walking a set's rejected positions in order, the candidate
    of position i is max(u_i, A_i) (A_i: the DL load accumulated before i); at the first
    rejected i > 0 with u_i <= A_i it is A_i, and every later candidate is >= its own A_j >=
    A_i, as is the total DL load: the load is the running minimum there, and the rest of the
    set changes nothing. Each set is walked alone up to that point (its rejected count by
    popcount) when a probe of every (n / 256)-th set needs few steps a set on average (a
    DL/UL power ratio near 1); else the vectorised ``_mask_loads``."""
    _wide()
    stride = 1 + npairs // 256
    steps = 0
    probes = 0
    for p in range(0, npairs, stride):
        m = pm[p]
        a = 0.0
        probes += 1
        while m != 0:
            i = trailing_zeros(m)
            m &= m - 1
            steps += 1
            if not (i == 0 or ua[i] > a):
                break
            a = a + va[i]
    if steps > _SERIAL_STEPS * probes:
        _mask_loads(pm, npairs, ua, va, cst, acc, spl, cnt, rcnt, s1, s2, x1, x2)
        return
    k = ua.size
    up = np.full(k + 1, _INF)   # position k: past the set's last position (u = inf, v = 0:
    vp = np.zeros(k + 1)        # a step there changes nothing)
    up[:k] = ua
    vp[:k] = va
    stop = np.int64(1) << np.int64(k)
    for p in range(npairs):
        m = pm[p]
        r = _popcount(m)
        a = 0.0
        s = _INF
        crossed = False
        for _ in range(3):   # the first three steps without branches (most sets end there)
            i = trailing_zeros(m | stop)
            m &= m - 1
            u = up[i]
            c = (i == 0) | (u > a)
            s = min(s, u if c else a)   # after a crossing: candidates >= A >= s, no change
            crossed |= not c
            a = a + vp[i]
        if not crossed:
            while m != 0:
                i = trailing_zeros(m)
                m &= m - 1
                u = up[i]
                if i == 0 or u > a:
                    s = min(s, u)
                else:   # the candidate is A_i: nothing after it lowers the load
                    s = min(s, a)
                    break
                a = a + vp[i]
        load = min(a, s)   # crossed: a >= s (the same number either way)
        rcnt[p] = r
        s1[p] = load
        s2[p] = 0.0
        x1[p] = _xargs(0, r, load, 0.0, cst)[0]


# ---------------------------------------------------------------------------- numpy's log1p inside

# With ``_numpy_logs.pointer()`` >= 0 (fp), a kernel computes numpy's own log1p itself: each
# pair of calls with ``np.log1p`` from Python between them becomes one call (the same values).

@njit(cache=_CACHE, error_model="numpy")
def _logs(fp, code, n, x1, x2, l1, l2):
    """``greedy_fast._Setup.log1p(n)``: l1[:n] = log1p(x1[:n]) (and l2 for the random split)."""
    _wide()
    if n:
        log1p_into(fp, x1, l1, n)
        if code == 3:
            log1p_into(fp, x2, l2, n)


@njit(cache=_CACHE, error_model="numpy")
def p2_run(fp, runs, runs_t, gamma, caps, rej, rmask, posbit, t, contrib, npend, rows, devs,
           rcnt, s1, s2, l1, l2, en, w, draft_s, code, order, ua, va, coin, cst, x1, x2, pm, acc,
           spl, cnt, pos, npos, lof, linfo, plan, lacc, stk, state, cbits, pc, psum, dirty):
    """Phase 2 to its end (``greedy_fast._phase2``'s loop: the logarithms, then ``p2_step``,
    until no +1 improves). Returns the steps taken; state: (G, evaluations of all steps)."""
    _wide()
    n = npend
    steps = 0
    evals = 0
    while True:
        _logs(fp, code, n, x1, x2, l1, l2)
        n = p2_step(runs, runs_t, gamma, caps, rej, rmask, posbit, t, contrib, n, rows, devs,
                    rcnt, s1, s2, l1, l2, en, w, draft_s, code, order, ua, va, coin, cst, x1, x2,
                    pm, acc, spl, cnt, pos, npos, lof, linfo, plan, lacc, stk, state, cbits, pc,
                    psum, dirty)
        evals += int(state[1])
        if n < 0:
            break
        steps += 1
    state[1] = evals
    return steps


@njit(cache=_CACHE, error_model="numpy")
def path_dense_run(fp, runs_t, seg, code, order, ua, va, cbits, posbit, cst, fl, acc, spl, cnt,
                   evf, rcnt, s1, s2, x1, x2, l1, l2, pm, pc, has_start, start, total, table,
                   want_table, tv):
    """``path_dense``, the logarithms, ``dense_finish``."""
    _wide()
    n = seg.shape[0]
    m = runs_t.shape[1]
    path_dense(runs_t, seg, code, order, ua, va, cbits, posbit, cst, fl, acc, spl, cnt, evf,
               rcnt, s1, s2, x1, x2, pm, pc, has_start)
    _logs(fp, code, n * m, x1, x2, l1, l2)
    dense_finish(n, m, evf, rcnt, s1, s2, l1, l2, code, cst, start, has_start, total, table,
                 want_table, tv)


@njit(cache=_CACHE, error_model="numpy")
def path_run(fp, runs, seg, code, order, ua, va, coin, has_start, cst, ev_m, ev_s, ev_need,
             rcnt, s1, s2, x1, x2, l1, l2, posbit, pm, pacc, pspl, cbits, pc, start, total,
             table, want_table):
    """``path_loads``, the logarithms, ``path_finish``."""
    _wide()
    ne, nn = path_loads(runs, seg, code, order, ua, va, coin, has_start, cst, ev_m, ev_s,
                        ev_need, rcnt, s1, s2, x1, x2, posbit, pm, pacc, pspl, cbits, pc)
    _logs(fp, code, nn, x1, x2, l1, l2)
    path_finish(ne, ev_m, ev_s, ev_need, rcnt, s1, s2, l1, l2, code, cst, start, has_start,
                seg.shape[0], total, table, want_table)


@njit(cache=_CACHE, error_model="numpy")
def budget_scan_run(fp, who, bstart, samp, incl, posbit, cbits, code, ua, va, cst, cur, ev_mask,
                    pm, pc, pidx, acc, spl, cnt, rcnt, s1, s2, x1, x2, l1, l2, ev_t, prev, n,
                    total):
    """``budget_scan_loads``, the logarithms, ``budget_scan_finish``."""
    _wide()
    npend = budget_scan_loads(who, bstart, samp, incl, posbit, cbits, code, ua, va, cst, cur,
                              ev_mask, pm, pc, pidx, acc, spl, cnt, rcnt, s1, s2, x1, x2)
    _logs(fp, code, npend, x1, x2, l1, l2)
    budget_scan_finish(npend, pidx, code, rcnt, s1, s2, l1, l2, cst, who, bstart, samp, incl,
                       ev_t, prev, n, total)


@njit(cache=_CACHE, error_model="numpy")
def move_run(fp, runs_t, rmask, posbit, gamma, dev, new, ms, bstart, samp, entry_of, caps, mv,
             rows, pm, ua, va, cst, acc, spl, rcnt, s1, s2, x1, x2, l1, t, out):
    """``move_masks``, the logarithms, ``move_sums``."""
    _wide()
    n = move_masks(runs_t, rmask, posbit, gamma, dev, new, ms, bstart, samp, entry_of, caps, mv,
                   rows, pm, ua, va, cst, acc, spl, rcnt, s1, s2, x1, x2)
    log1p_into(fp, x1, l1, n)
    move_sums(n, mv, rows, rcnt, s1, l1, cst, t, dev.size, out)


_GROUP = 8   # phase 1's steps per group: their event sums interleaved, G checked after each


@njit(cache=_CACHE, error_model="numpy")
def phase1_dense(fp, runs_t, path, bounds, tok, dra, verify, code, order, ua, va, cbits,
                 posbit, cst, fl, acc, spl, cnt, evf, rcnt, s1, s2, x1, x2, l1, l2, pm, pc,
                 tv, table, start, t_out):
    """Phase 1 of the greedy search (``greedy_fast.search``'s lazy chunks) in one call: chunk
    q is the path's rows bounds[q, 0] to bounds[q, 1] (the first one from a known start, the
    previous chunk's last point), computed as ``path_dense_run`` computes it (the same loads,
    logarithms, event sums in sample order and running total), a group of ``_GROUP`` steps at
    a time, with G from the chunk's tokens and drafting times tok, dra (in chunk order,
    concatenated) and the constant T_ver. It stops after the group holding the first point
    whose G is not larger than the one before: no later point changes the stop. Returns (c:
    the stop, the rows of every chunk begun: the evaluations); t_out: the per-sample T_comm at
    c."""
    _wide()
    m = runs_t.shape[1]
    base_tok = 0
    prev_val = 0.0
    glob = 0          # index of the next value in the chain of values
    evals = 0
    bins = np.empty(_GROUP)
    last = np.empty(m)   # each sample's T at its last event (``_dense_bins``' prev)
    n = 0
    for q in range(bounds.shape[0]):
        b0, b1 = bounds[q, 0], bounds[q, 1]
        seg = path[b0:b1]
        n = b1 - b0
        has_start = q > 0
        if has_start:   # T at the chunk's start: the previous chunk's last point
            for mm in range(m):
                start[mm] = table[bounds[q - 1, 1] - bounds[q - 1, 0] - 1, mm]
        evals += n
        first_s, prev = _dense_start(runs_t, seg, order, fl, evf, rcnt, s1, s2, x1, x2,
                                     has_start)
        for mm in range(m):
            last[mm] = 0.0
        total = 0.0
        for g0 in range(0, n, _GROUP):
            g1 = min(g0 + _GROUP, n)
            for s in range(max(g0, first_s), g1):
                _dense_step(s, first_s, code, fl, order, ua, va, cbits, posbit, cst, acc, spl,
                            cnt, evf, rcnt, s1, s2, x1, x2, pm, pc, prev)
            base = g0 * m
            npts = (g1 - g0) * m
            _logs(fp, code, npts, x1[base:], x2[base:], l1[base:], l2[base:])
            _tvals(code, npts, rcnt[base:], s1[base:], s2[base:], l1[base:], l2[base:], cst,
                   tv[base:])
            if has_start and g0 == 0:
                for mm in range(m):
                    tv[mm] = start[mm]
            for s in range(g1 - g0):
                bins[s] = 0.0
            for mm in range(m):   # each step's events summed in sample order (``_dense_bins``)
                lv = last[mm]
                for s in range(g0, g1):
                    v = tv[s * m + mm]
                    e = evf[s, mm]
                    bins[s - g0] += (v - lv) if e else 0.0
                    lv = v if e else lv
                    table[s, mm] = lv
                last[mm] = lv
            for s in range(g0, g1):
                total = bins[0] if s == 0 else total + bins[s - g0]
                value = _goodput(tok[base_tok + s], dra[base_tok + s], verify, total / m)
                if q > 0 and s == 0:
                    continue   # the start point: its value is the previous chunk's
                if glob > 0 and not value > prev_val:
                    for mm in range(m):
                        t_out[mm] = table[s - 1, mm]
                    return glob - 1, evals
                prev_val = value
                glob += 1
        base_tok += n
    for mm in range(m):   # increasing to the path's end
        t_out[mm] = table[n - 1, mm]
    return glob - 1, evals
