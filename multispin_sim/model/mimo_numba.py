"""The shared-band evaluator (``model.mimo_batch.SchemeEvaluator``) compiled with numba, for
the pair mu-mimo-zf / mu-mimo-mmse, the UL at full power or by the power descent.

The same (set, |R|) keys, the same formulas: the MMSE SINR of n <= M streams is
1 / [(I + S G S)^-1]_kk - 1 (G the Gram matrix, S = diag sqrt(p / noise)), of n > M streams
x / (1 - x) with x = v_k^H (I + sum_j v_j v_j^H)^-1 v_k; a ZF group's load is sum 1 / gain with
gain 1 / [G^-1]_kk, groups dealt as ``MuMimoZf.groups`` deals them. Every inverse goes by a
Cholesky factor in plain loops (M is small: a LAPACK call costs more than the arithmetic), and
each key is worked out once per channel state and kept in an open-addressing hash table. The
prefix split of many outcomes is one call (``CompiledEvaluator.prefix``), a branch and bound
per outcome on the bounds of ``ArrayProblem._prefix_table`` that keeps its first minimiser.
Values agree with numpy's within about cond eps (another factorisation, summation order and
libm), cond the condition number of the matrix inverted (I + S G S, or a ZF group's G): rtol
1e-12 where cond < 1e4, so decisions agree except at near-ties (a descent's powers too: the
same passes, first minimisers and 1e-12 threshold as ``mimo_batch.mmse_power_descent``,
one candidate power at a time where numpy stacks them). Imported only where it runs
(it imports numba); ``MULTISPIN_NUMBA=0`` keeps the numpy path.
"""
import math

import numba
import numpy as np

_jit = numba.njit(cache=True, error_model="numpy", nogil=True)

_R_BITS = 6
_EMPTY = -1
_MIX = np.uint64(0x9E3779B97F4A7C15)   # Fibonacci hashing: spreads consecutive keys
_SHIFT = np.uint64(40)   # the product's top 24 bits pick the slot (a table holds ~1e5 keys)
_LN2 = math.log(2.0)
UL, DL, GROUPS = 0, 1, 2


@_jit
def _slot(keys, key):
    """Where ``key`` is in the table ``keys``, or the empty slot where it goes."""
    mask = keys.shape[0] - 1
    i = np.int64((np.uint64(key) * _MIX) >> _SHIFT) & mask
    while keys[i] != key and keys[i] != _EMPTY:
        i = (i + 1) & mask
    return i


@_jit
def _rehash(keys, vals, cap):
    new_keys, new_vals = np.full(cap, _EMPTY, dtype=np.int64), np.empty(cap)
    for i in range(keys.shape[0]):
        if keys[i] != _EMPTY:
            j = _slot(new_keys, keys[i])
            new_keys[j], new_vals[j] = keys[i], vals[i]
    return new_keys, new_vals


@_jit
def _cholesky(h, n, low):
    """low[:n, :n] = L with h = L L^H (the lower part of h read), its diagonal stored as
    1 / L_jj (the solves multiply by it); False if a pivot is not positive (h not positive
    definite in floating point)."""
    for j in range(n):
        d = h[j, j].real
        for q in range(j):
            d -= low[j, q].real ** 2 + low[j, q].imag ** 2
        if not d > 0.0:
            return False
        r = 1.0 / math.sqrt(d)
        low[j, j] = r
        for i in range(j + 1, n):
            s = h[i, j]
            for q in range(j):
                s -= low[i, q] * low[j, q].conjugate()
            low[i, j] = s * r
    return True


@_jit
def _inv_diag(low, n, k, y):
    """[(L L^H)^-1]_kk = ||L^-1 e_k||^2."""
    y[k] = low[k, k].real
    x = y[k].real ** 2
    for i in range(k + 1, n):
        s = 0j
        for q in range(k, i):
            s -= low[i, q] * y[q]
        y[i] = s * low[i, i].real
        x += y[i].real ** 2 + y[i].imag ** 2
    return x


@_jit
def _quad(low, n, a, j, y):
    """v^H (L L^H)^-1 v = ||L^-1 v||^2 for v = a[j]."""
    x = 0.0
    for i in range(n):
        s = a[j, i]
        for q in range(i):
            s -= low[i, q] * y[q]
        y[i] = s * low[i, i].real
        x += y[i].real ** 2 + y[i].imag ** 2
    return x


@_jit
def _members(s, order, out):
    """The devices of set ``s`` in ``order`` into ``out``; their number."""
    n = 0
    for d in order:
        if (s >> d) & 1:
            out[n] = d
            n += 1
    return n


@_jit
def _ul_delay(key, a, p, gram, outer, ascending, par, m, levels, h, low, y, idx, root, pw):
    """The slowest MMSE delay of UL key (set, |R|): at full power (``levels`` 0), or with the
    powers of ``mimo_batch.mmse_power_descent`` on the grid P_ul 2^-j, j < ``levels`` (the
    same passes, first minimisers and 1e-12 threshold). Arrays are passed one by one, not in
    tuples: a call costs a reference count per array passed."""
    bits, bw, n0 = par[1], par[2], par[3]
    n = _members(key >> _R_BITS, ascending, idx)
    band = bw / max(key & ((1 << _R_BITS) - 1), 1) * n
    noise = n0 * band
    for i in range(n):
        pw[i] = p[idx[i]]
    t = bits / (band * (math.log1p(_weakest(n, pw, noise, a, p, gram, outer, m, h, low, y, idx,
                                            root)) / _LN2))
    for _ in range(n * levels):   # each accepted move makes T_UL fall: a bounded number
        moved = False
        for j in range(n):
            now, best, pick = pw[j], math.inf, 0
            for lv in range(levels):
                pw[j] = math.ldexp(p[idx[j]], -lv)
                if pw[j] == now:   # the level held: T_UL is t (worked out on these powers)
                    tt = t
                else:
                    tt = bits / (band * (math.log1p(_weakest(n, pw, noise, a, p, gram, outer,
                                                             m, h, low, y, idx, root)) / _LN2))
                if tt < best:      # the first minimiser; NaN never wins
                    best, pick = tt, lv
            if best < t * (1.0 - 1e-12):
                t, now, moved = best, math.ldexp(p[idx[j]], -pick), True
            pw[j] = now
        if not moved:
            break
    return t


@_jit
def _weakest(n, pw, noise, a, p, gram, outer, m, h, low, y, idx, root):
    """The smallest MMSE SINR of the UL streams idx[:n] at powers pw[:n] on one band (noise
    ``noise``; NaN kept): the weakest stream's delay is the slowest."""
    weakest = math.inf
    if n <= m:    # n x n: 1 / [(I + S G S)^-1]_kk - 1
        for i in range(n):
            root[i] = math.sqrt(pw[i] / noise)
            for j in range(i + 1):
                h[i, j] = gram[idx[i], idx[j]] * (root[i] * root[j])
            h[i, i] += 1.0
        if not _cholesky(h, n, low):   # only with non-finite inputs (I + S G S >= I)
            return math.nan
        for i in range(n):
            sinr = max(1.0 / _inv_diag(low, n, i, y) - 1.0, 0.0)
            weakest = sinr if sinr != sinr or sinr < weakest else weakest
    else:         # M x M: x / (1 - x), x = v^H (I + sum_j v_j v_j^H)^-1 v
        for i in range(n):   # outer holds P_ul a a^H: scaled to pw (1 at full power)
            root[i] = pw[i] / p[idx[i]]
        for u in range(m):
            for v in range(u + 1):
                s = 0j
                for i in range(n):
                    s += outer[idx[i], u, v] * root[i]
                h[u, v] = s / noise
            h[u, u] += 1.0
        if not _cholesky(h, m, low):
            return math.nan
        for i in range(n):
            j = idx[i]
            x = _quad(low, m, a, j, y) * (pw[i] / noise)
            sinr = max(x / (1.0 - x), 0.0)
            weakest = sinr if sinr != sinr or sinr < weakest else weakest
            if weakest != weakest:
                break
    return weakest


@_jit
def _group_load(g, gram, ascending, h, low, y, idx):
    """sum over ZF group ``g`` (a bitmask) of 1 / gain, gain = 1 / [G^-1]_kk (inf: singular)."""
    n = _members(g, ascending, idx)
    for i in range(n):
        for j in range(i + 1):
            h[i, j] = gram[idx[i], idx[j]]
    if not _cholesky(h, n, low):
        return math.inf
    load = 0.0
    for i in range(n):
        load += 1.0 / (1.0 / _inv_diag(low, n, i, y))
    return load


@_jit
def _dl_delay(key, norms, weights, by_norm, best_of, par, m, g_keys, g_vals, used, gram,
              ascending, h, low, y, order, idx):
    """The DL delay of key (set, |R|) under ZF: the fewest groups, or (best) also 2, 4, ...
    times as many up to one stream each, the one whose last group ends first."""
    p_dl, bits, bw, n0 = par[0], par[1], par[2], par[3]
    n = _members(key >> _R_BITS, by_norm, order)
    band = bw / max(key & ((1 << _R_BITS) - 1), 1) * n
    best = math.inf
    count = -(-n // m)
    while True:
        total, end = 0.0, 0.0
        for j in range(count):
            if j + count >= n:   # one stream: ZF is MRT
                inv = 1.0 / norms[order[j]]
            else:
                g = 0
                for i in range(j, n, count):
                    g += weights[order[i]]
                i = _slot(g_keys, g)   # kept while the table is at most half full
                if g_keys[i] == g:
                    inv = g_vals[i]
                else:
                    inv = _group_load(g, gram, ascending, h, low, y, idx)
                    if 2 * (used[GROUPS] + 1) <= g_keys.shape[0]:
                        g_keys[i], g_vals[i] = g, inv
                        used[GROUPS] += 1
            if inv > 0:
                total += bits / (band * (math.log1p(p_dl / (n0 * band * inv)) / _LN2))
            if not total <= end:   # the largest partial sum (NaN kept)
                end = total
        if end < best:
            best = end
        if not best_of or count >= n:
            return best
        count = min(2 * count, n)


@_jit
def _times(which, keys, ch, tabs, work):
    a, gram_ul, p, gram_dl, norms_dl, weights, by_norm, best_of, ascending, par, m, _, outer, \
        levels = ch
    ul_keys, ul_vals, dl_keys, dl_vals, g_keys, g_vals, used = tabs
    h, low, y, idx, idx2, root, pw = work
    t_keys, t_vals = (ul_keys, ul_vals) if which == UL else (dl_keys, dl_vals)
    out = np.zeros(keys.shape[0])
    for q in range(keys.shape[0]):
        key = keys[q]
        if key >> _R_BITS:
            i = _slot(t_keys, key)
            if t_keys[i] != key:
                if which == UL:
                    v = _ul_delay(key, a, p, gram_ul, outer, ascending, par, m, levels, h, low,
                                  y, idx, root, pw)
                else:
                    v = _dl_delay(key, norms_dl, weights, by_norm, best_of, par, m, g_keys,
                                  g_vals, used, gram_dl, ascending, h, low, y, idx, idx2)
                t_keys[i], t_vals[i] = key, v
                used[which] += 1
            out[q] = t_vals[i]
    return out


@_jit
def _prefix(order, rs, n_rejected, ch, tabs, work):
    """(first minimiser, T_comm) of the |R| + 1 prefixes of each outcome ``rs`` (columns in
    ``order``; prefix c: the first c rejected devices of ``order`` on UL, the others on DL), by
    branch and bound on T_comm = max(T_UL, T_DL), from the UL floor of
    ``ArrayProblem._prefix_table`` (the weakest UL member alone on the pooled band; all on DL:
    0), the lowest bound first: a prefix's DL is worked out (its bound becomes max(T_DL,
    floor)), then, if its bound is still the lowest, its UL. It stops once the lowest bound
    exceeds the best T_comm found: every prefix not worked out is slower than that, so the
    first minimiser is the full table's (ties: the lower index). The DL of a prefix whose
    floor rules it out is not worked out either (the reference works out every one)."""
    a, gram_ul, p, gram_dl, norms_dl, weights, by_norm, best_of, ascending, par, m, norms_ul, \
        outer, levels = ch
    ul_keys, ul_vals, dl_keys, dl_vals, g_keys, g_vals, used = tabs
    h, low, y, idx, idx2, root, pw = work
    bits, bw, n0 = par[1], par[2], par[3]
    n, k = rs.shape
    cum = np.zeros(k + 1, dtype=np.int64)
    td, ul_floor, bound = np.empty(k + 1), np.empty(k + 1), np.empty(k + 1)
    exact_dl = np.zeros(k + 1, dtype=np.bool_)
    best_j, best_t = np.zeros(n, dtype=np.int64), np.empty(n)
    for o in range(n):
        r = n_rejected[o]
        b = bw / max(r, 1)
        for c in range(k):
            cum[c + 1] = cum[c] + (weights[order[c]] if rs[o, c] else 0)
        full = cum[k]
        weakest, count = math.inf, 0      # the UL floors, forwards
        for c in range(k + 1):
            exact_dl[c] = False
            ul_floor[c] = 0.0
            if c > 0:
                if not rs[o, c - 1]:
                    bound[c] = math.inf   # not a prefix
                    continue
                d = order[c - 1]
                weakest = min(weakest, p[d] * norms_ul[d])
                count += 1
                band = b * count
                # 1e-9: the computed SINR may exceed the single-user SNR by rounding
                ul_floor[c] = bits / (band * (math.log1p(weakest / (n0 * band)) / _LN2)) * (
                    1.0 - 1e-9)
            bound[c] = ul_floor[c]
        best, j = math.inf, 0
        while True:
            c = np.argmin(bound)
            if not bound[c] <= best or bound[c] == math.inf:
                break
            if not exact_dl[c]:
                exact_dl[c] = True
                t = 0.0
                s = full ^ cum[c]
                if s:
                    key = (s << _R_BITS) | r
                    i = _slot(dl_keys, key)
                    if dl_keys[i] != key:
                        dl_keys[i] = key
                        dl_vals[i] = _dl_delay(key, norms_dl, weights, by_norm, best_of, par, m,
                                               g_keys, g_vals, used, gram_dl, ascending, h, low,
                                               y, idx, idx2)
                        used[DL] += 1
                    t = dl_vals[i]
                td[c] = t
                if c > 0:                 # NaN: worked out next, as the reference does
                    bound[c] = -math.inf if t != t else max(t, ul_floor[c])
                    continue
            else:
                key = (cum[c] << _R_BITS) | r
                i = _slot(ul_keys, key)
                if ul_keys[i] != key:
                    ul_keys[i] = key
                    ul_vals[i] = _ul_delay(key, a, p, gram_ul, outer, ascending, par, m, levels,
                                           h, low, y, idx, root, pw)
                    used[UL] += 1
                tu = ul_vals[i]
                t = tu if tu != tu or tu > td[c] else td[c]   # max(T_UL, T_DL), NaN kept
            bound[c] = math.inf
            if t < best or (t == best and c < j):
                best, j = t, c
        # all prefixes infinite: the first (all on DL, bound 0: always worked out first)
        best_j[o], best_t[o] = j, (best if best < math.inf else td[0])
    return best_j, best_t


class CompiledEvaluator:
    """The compiled twin of a ``SchemeEvaluator`` ``ev`` (its arrays, its own tables); UL
    powers by the descent over ``levels`` levels (0: full power)."""

    def __init__(self, ev, levels=0):
        a_ul = np.ascontiguousarray(ev.a_ul, dtype=np.complex128)
        a_dl = np.ascontiguousarray(ev.a_dl, dtype=np.complex128)
        self.k, m = a_ul.shape
        self.ch = (a_ul, a_ul.conj() @ a_ul.T, ev.p_ul, a_dl.conj() @ a_dl.T, ev.norms_dl,
                   ev.weights, ev._by_norm, ev.tr.dl.grouping == "best",
                   np.arange(self.k, dtype=np.int64),
                   np.array([ev.p_dl, ev.bits, ev.bw, ev.n0]), m, ev.norms_ul,
                   ev.p_ul[:, None, None] * a_ul[:, :, None] * a_ul.conj()[:, None, :],
                   levels)
        self.tabs = tuple(x for _ in range(3)
                          for x in (np.full(64, _EMPTY, dtype=np.int64), np.empty(64))) + (
            np.zeros(3, dtype=np.int64),)
        size = max(m, self.k)
        self.work = (np.empty((size, size), np.complex128), np.empty((size, size), np.complex128),
                     np.empty(size, np.complex128), np.empty(self.k, np.int64),
                     np.empty(self.k, np.int64), np.empty(size), np.empty(self.k))

    def used(self, which):
        """The keys worked out and kept so far in table ``which`` (UL, DL, GROUPS)."""
        return int(self.tabs[6][which])

    def _reserve(self, which, extra):
        """Room for ``extra`` more keys in table ``which`` at a load of at most 1/2."""
        keys = self.tabs[2 * which]
        need = 2 * (self.used(which) + extra)
        if need > keys.shape[0]:
            cap = 1 << int(need - 1).bit_length()
            tabs = list(self.tabs)
            tabs[2 * which], tabs[2 * which + 1] = _rehash(keys, tabs[2 * which + 1], cap)
            self.tabs = tuple(tabs)

    def _grow_groups(self):
        """The groups' table doubled once a call left it over a quarter full (a DL key has
        up to 2K groups: a call may find more new ones than were reserved; those beyond half
        the table are worked out again when met)."""
        self._reserve(GROUPS, self.used(GROUPS))

    def times(self, which, keys):
        """The slowest delays (N,) of keys (set << 6 | |R|) of link ``which`` (UL or DL)."""
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        self._reserve(which, len(keys))
        if which == DL:
            self._reserve(GROUPS, len(keys))
        out = _times(which, keys, self.ch, self.tabs, self.work)
        self._grow_groups()
        return out

    def prefix(self, order, rs, n_rejected):
        """(first minimiser, T_comm) (n,) of the prefix split of outcomes ``rs`` (n, K) bool,
        columns in ``order``."""
        count = int(rs.sum()) + len(rs)
        self._reserve(UL, count)
        self._reserve(DL, count)
        self._reserve(GROUPS, count)
        out = _prefix(np.ascontiguousarray(order, dtype=np.int64),
                      np.ascontiguousarray(rs, dtype=np.bool_),
                      np.ascontiguousarray(n_rejected, dtype=np.int64),
                      self.ch, self.tabs, self.work)
        self._grow_groups()
        return out
