"""Many assignments of one channel state under the multi-antenna schemes, at once.

The draft objective asks T_comm of thousands of rejected sets a round, and a reactive policy
evaluates |R| + 1 assignments of each (the prefix split) or more (local search, exhaustive);
under a shared band each assignment costs a small matrix inverse per link. ``SchemeEvaluator``
works on bitmasks instead: a link's slowest delay is a function of its set and of |R| (the
subband b = B / |R|) alone, so each distinct (set, |R|) of a link is worked out once, kept for
the channel state's lifetime (the draft objective asks the same sets call after call), and the
new ones of one size are stacked into one batched numpy call of the schemes' own stack
formulas (``model.mimo``: ``zf_gains_stack``, ``mmse_sinr_stack``); MMSE sets larger than M
(M <= 4) go all sizes at once, by a Cholesky factor worked out elementwise across the sets
(``hermitian_quad_forms``: the same SINRs within about 1e-13 relative). An assignment's T_comm is
the larger of its two links' (an empty link: 0), as ``Transmission.links`` has it.

With both links on the shared band at full UL power the evaluator hands its keys to a
compiled twin where numba runs (``model.mimo_numba``: the same formulas in plain loops).

Bitmasks hold K + 6 bits in an int64 (the set, then |R|): K <= 57 (``fits``).
"""
import math

import numpy as np

from .compiled import numba_allowed
from .reactive import dl_common_delay, ul_full_power_delay


def norms2(a):
    """||a_k||^2 of the rows of a (..., M)."""
    return np.einsum("...m,...m->...", a, a.conj()).real


def zf_gains_stack(a):
    """ZF stream gains 1 / [(A^H A)^-1]_kk (N, n) of N sets of vectors a (N, n, M), n <= M
    (0 for a singular set)."""
    return zf_from_gram(a.conj() @ a.transpose(0, 2, 1))


def zf_from_gram(gram):
    """ZF gains 1 / [G^-1]_kk (N, n) of Gram matrices G (N, n, n) (one batched inverse; a
    singular set gets 0, set by set)."""
    try:
        inv = np.linalg.inv(gram)
    except np.linalg.LinAlgError:
        return np.stack([_zf_one(g) for g in gram])
    d = np.real(np.diagonal(inv, axis1=1, axis2=2))
    with np.errstate(divide="ignore"):
        return np.where(d > 0, 1.0 / d, 0.0)


def _zf_one(gram):
    """``zf_from_gram`` of one Gram matrix (n, n)."""
    try:
        d = np.real(np.diagonal(np.linalg.inv(gram)))
    except np.linalg.LinAlgError:
        return np.zeros(len(gram))
    with np.errstate(divide="ignore"):
        return np.where(d > 0, 1.0 / d, 0.0)


def mmse_sinr(a, p, noise_w):
    """Linear MMSE SINR of n simultaneous streams from vectors a (n, M) at powers p (n,), noise
    power ``noise_w`` per antenna (``mmse_sinr_stack`` of one set)."""
    return mmse_sinr_stack(np.asarray(a)[None], np.asarray(p, dtype=float)[None],
                           np.array([float(noise_w)]))[0]


def mmse_sinr_stack(a, p, noise_w):
    """MMSE SINRs (N, n) of N sets of n streams: vectors a (N, n, M), powers p (N, n), noise
    (N,). With v_k = sqrt(p_k / noise) a_k: for n <= M, 1 / [(I + V^H V)^-1]_kk - 1 (n x n,
    ``mmse_few``); for n > M, x_k / (1 - x_k) with x_k = v_k^H (I + sum_j v_j v_j^H)^-1 v_k
    (M x M, ``mmse_many``; the matrix inversion lemma: the same SINR, from the smaller matrix,
    and more accurate there: the n x n matrix has rank-M structure whose condition grows with
    the SNR)."""
    w = np.asarray(p, dtype=float) / np.asarray(noise_w, dtype=float)[:, None]
    if a.shape[1] <= a.shape[2]:
        return mmse_few(a.conj() @ a.transpose(0, 2, 1), w)
    vt = (a * np.sqrt(w)[:, :, None]).transpose(0, 2, 1)     # (N, M, n): columns v_k
    return mmse_many(vt @ vt.conj().transpose(0, 2, 1), vt)


CLOSED_FORM_M = 4   # up to this many antennas the evaluator's M x M systems go by Cholesky
CHUNK = 2048        # sets per batch of that path


def hermitian_quad_forms(a, v, rows):
    """v_j^H a_{rows_j}^-1 v_j (J,) for Hermitian positive definite a (N, M, M), columns v
    (M, J) and the system of each, ``rows`` (J,): a = L L^H by Cholesky and ||L^-1 v_j||^2,
    one elementwise operation per entry across the systems (M small: a batched LAPACK call
    costs more per system than this)."""
    m = a.shape[-1]
    low = [[None] * m for _ in range(m)]
    for j in range(m):
        d = a[:, j, j].real.copy()
        for q in range(j):
            d -= low[j][q].real ** 2 + low[j][q].imag ** 2
        low[j][j] = np.sqrt(d)
        for i in range(j + 1, m):
            s = a[:, i, j].copy()
            for q in range(j):
                s -= low[i][q] * low[j][q].conj()
            low[i][j] = s / low[j][j]
    y = [None] * m
    x = np.zeros(v.shape[1])
    for i in range(m):
        s = v[i]
        for q in range(i):
            s = s - low[i][q][rows] * y[q]
        y[i] = s / low[i][i][rows]
        x += y[i].real ** 2
        x += y[i].imag ** 2
    return x


def mmse_few(gram, w):
    """MMSE SINRs from the Gram matrices a_i^H a_j (N, n, n) and p / noise (N, n)."""
    s = np.sqrt(w)
    inv = np.linalg.inv(np.eye(gram.shape[1]) + gram * (s[:, :, None] * s[:, None, :]))
    return np.maximum(1.0 / np.real(np.diagonal(inv, axis1=1, axis2=2)) - 1.0, 0.0)


def mmse_many(cov, vt):
    """MMSE SINRs from sum_j v_j v_j^H (N, M, M) and the scaled vectors as columns (N, M, n)."""
    z = np.linalg.solve(np.eye(cov.shape[1]) + cov, vt)       # C^-1 v_k
    x = np.einsum("nmk,nmk->nk", vt.conj(), z).real
    return np.maximum(x / (1.0 - x), 0.0)


POWER_LEVELS = 8   # the descent's grid: P_max 2^-j, j < 8 (down to -21 dB)


def mmse_power_descent(a, p_max, noise_w, bits, band, levels=POWER_LEVELS):
    """UL powers under MMSE by coordinate descent on the grid p_max 2^-j (j < ``levels``), for
    N sets at once: a (N, n, M), p_max (N, n), noise (N,), band (N,) the pooled band. The
    slowest stream sets T_UL, and a strong stream's power is interference to the others,
    so less than full power can be faster. From full power, each device in turn takes the
    level that minimises T_UL = max_k S / (band log2(1 + SINR_k)) with the others fixed (the
    first minimiser; kept only if it is faster by more than 1e-12), pass after pass until a pass
    changes nothing. Returns (SINR, powers), each (N, n). Near-optimal, not optimal: tested
    against every power vector of the grid on small sets."""
    nset, n, _ = a.shape
    grid = 2.0 ** -np.arange(levels)
    level = np.zeros((nset, n), dtype=np.int64)

    def slowest(lv):      # lv (N, V, n) -> T_UL (N, V)
        v = lv.shape[1]
        p = (p_max[:, None, :] * grid[lv]).reshape(-1, n)
        sinr = mmse_sinr_stack(np.repeat(a, v, axis=0), p, np.repeat(noise_w, v))
        d = shared_band_delays(bits, np.repeat(band, v)[:, None], sinr)
        return d.max(axis=1).reshape(nset, v)

    t = slowest(level[:, None, :])[:, 0]
    for _ in range(n * levels):   # each accepted move makes T_UL fall: a bounded number
        moved = np.zeros(nset, dtype=bool)
        for j in range(n):
            trial = np.repeat(level[:, None, :], levels, axis=1)
            trial[:, :, j] = np.arange(levels)[None, :]
            tt = slowest(trial)
            pick = first_min(tt)
            new = tt[np.arange(nset), pick]
            better = new < t * (1.0 - 1e-12)
            level[better] = trial[better, pick[better]]
            t = np.where(better, new, t)
            moved |= better
        if not moved.any():
            break
    p = p_max * grid[level]
    return mmse_sinr_stack(a, p, noise_w), p


_LN2 = math.log(2.0)
_R_BITS = 6
_UL, _DL = 0, 1   # the links' tables in the compiled twin (``mimo_numba.UL``, ``.DL``)
MAX_DEVICES = 63 - _R_BITS


def shared_band_delays(bits, band, sinr):
    """S / (band log2(1 + SINR)): the delay of a stream on a shared band (inf at SINR 0)."""
    with np.errstate(divide="ignore"):
        return bits / (band * (np.log1p(sinr) / _LN2))


def first_min(t):
    """Index of the first minimum along the last axis (NaN never wins, as with a strict ``<``
    scan from inf; all-inf rows: 0)."""
    return np.argmin(np.where(np.isnan(t), np.inf, t), axis=-1)


def fits(k):
    """Whether K devices fit the evaluator's bitmasks."""
    return k <= MAX_DEVICES


def popcount(bits):
    """Members of each set ``bits`` (int64 array)."""
    if hasattr(np, "bitwise_count"):   # numpy >= 2.0
        return np.bitwise_count(bits)
    return np.array([bin(int(s)).count("1") for s in bits])


def bit_weights(k):
    """1 << k for each device (int64): a mask's bits are ``mask @ bit_weights(K)``."""
    return np.left_shift(np.int64(1), np.arange(k, dtype=np.int64))


def members(bits, n, k, order=None):
    """The devices of sets ``bits`` (N,) that all have n members: (N, n), ascending, or in
    ``order`` (a permutation of the K devices) when given."""
    order = np.arange(k, dtype=np.int64) if order is None else order
    on = ((bits[:, None] >> order[None, :]) & 1).astype(bool)
    return order[np.flatnonzero(on) % k].reshape(len(bits), n)


def compiled_twin(ev):
    """``ev``'s compiled twin (``model.mimo_numba.CompiledEvaluator``) where it applies: both
    links on a shared band (mu-mimo-zf / mu-mimo-mmse), numba importable and not switched off
    (``MULTISPIN_NUMBA=0``); else None (numpy)."""
    tr = ev.tr
    if not numba_allowed() or not (tr.dl.shared and tr.ul.shared):
        return None
    try:
        from .mimo_numba import CompiledEvaluator
    except ImportError:
        return None
    tr.compiled_ran = True
    return CompiledEvaluator(ev, POWER_LEVELS if tr.ul.power == "descent" else 0)


class _Table:
    """int64 keys -> float values, sorted (``get`` works out the missing ones)."""

    def __init__(self):
        self.keys = np.zeros(0, dtype=np.int64)
        self.vals = np.zeros(0)

    def get(self, keys, compute):
        uk, inv = np.unique(keys, return_inverse=True)
        pos = np.searchsorted(self.keys, uk)
        hit = pos < len(self.keys)
        hit[hit] = self.keys[pos[hit]] == uk[hit]
        if not hit.all():
            new = uk[~hit]                        # sorted, none in the table: merged in
            at = np.searchsorted(self.keys, new)
            self.keys = np.insert(self.keys, at, new)
            self.vals = np.insert(self.vals, at, compute(new))
            pos = np.searchsorted(self.keys, uk)
        return self.vals[pos][inv.ravel()]


class SchemeEvaluator:
    """T_comm of assignments on one channel state (vectors a_ul, a_dl (K, M)) under
    ``transmission``'s schemes; powers p_ul (K,), p_dl, payload S, band B, noise PSD n0."""

    def __init__(self, transmission, a_ul, a_dl, p_ul, p_dl, bits, bandwidth, n0):
        self.tr = transmission
        self.a_ul, self.a_dl = a_ul, a_dl
        self.k = len(a_ul)
        self.p_ul = np.asarray(p_ul, dtype=float)
        self.p_dl, self.bits = float(p_dl), float(bits)
        self.bw, self.n0 = float(bandwidth), float(n0)
        self.norms_ul, self.norms_dl = norms2(a_ul), norms2(a_dl)
        self.weights = bit_weights(self.k)
        self.m = a_ul.shape[1]
        self._by_norm = np.argsort(-self.norms_dl, kind="stable").astype(np.int64)
        self._gram_ul = self._gram_dl = self._outer = None
        self._ul, self._dl, self._groups = _Table(), _Table(), _Table()
        self.compiled = compiled_twin(self)

    def band(self, r):
        """b = B / |R| per assignment (as ``ReactiveProblem.bandwidth_per_device``)."""
        return self.bw / np.maximum(r, 1)

    def t_comm(self, ul_bits, dl_bits, r):
        """T_comm (N,) of assignments: UL set ``ul_bits``, DL set ``dl_bits`` (int64 (N,)),
        |R| = ``r`` (N,)."""
        r = np.asarray(r, dtype=np.int64)
        return np.maximum(self.ul_time(ul_bits, r), self.dl_time(dl_bits, r))

    def ul_time(self, ul_bits, r):
        """The UL's slowest delay (N,) of UL sets ``ul_bits`` at |R| = ``r`` (0: empty)."""
        return self._link(_UL, self._ul, ul_bits, r, self._ul_delays)

    def dl_time(self, dl_bits, r):
        """The DL's slowest delay (N,) of DL sets ``dl_bits`` at |R| = ``r`` (0: empty)."""
        return self._link(_DL, self._dl, dl_bits, r, self._dl_delays)

    def _link(self, which, table, bits, r, delays):
        bits = np.asarray(bits, dtype=np.int64)
        t = np.zeros(bits.shape)
        some = bits != 0
        if some.any():
            keys = (bits[some] << _R_BITS) | np.asarray(r, dtype=np.int64)[some]
            if self.compiled is not None:
                t[some] = self.compiled.times(which, keys)
            else:
                t[some] = table.get(keys, delays)
        return t

    def ul_sets_worked_out(self):
        """How many (UL set, |R|) keys have been worked out on this channel state."""
        return len(self._ul.keys) if self.compiled is None else self.compiled.used(_UL)

    # -- the links: the slowest delay of new (set, |R|) keys --------------------------------
    def _split(self, keys):
        sets, r = keys >> _R_BITS, keys & ((1 << _R_BITS) - 1)
        return sets, r, popcount(sets)

    def _ul_delays(self, keys):
        sets, r, size = self._split(keys)
        out = np.empty(len(keys))
        shared = self.tr.ul.shared
        rest = np.arange(len(keys))
        if shared and self.tr.ul.power != "descent" and self.m <= CLOSED_FORM_M:
            many = size > self.m     # every size at once: the M x M form, by Cholesky
            if many.any():
                at = np.flatnonzero(many)
                for lo in range(0, len(at), CHUNK):   # bounded temporaries (CHUNK x K)
                    sl = at[lo:lo + CHUNK]
                    out[sl] = self._mmse_many_sets(sets[sl], r[sl], size[sl])
                rest = np.flatnonzero(~many)
        for n in np.unique(size[rest]):
            at = rest[size[rest] == n]
            idx = members(sets[at], int(n), self.k)
            b = self.band(r[at])
            p = self.p_ul[idx]
            if not shared:        # ofdma-mrc: each on its subband b, gain ||a||^2
                with np.errstate(divide="ignore", invalid="ignore"):
                    d = ul_full_power_delay(self.bits, b[:, None], p, self.norms_ul[idx], self.n0)
            else:                 # mu-mimo-mmse on the pooled band |U| b
                band = b * n
                noise = self.n0 * band
                w = p / noise[:, None]
                if self.tr.ul.power == "descent":   # the per-assignment computation, stacked
                    sinr, _ = mmse_power_descent(self.a_ul[idx], p, noise, self.bits, band)
                elif n <= self.m:
                    if self._gram_ul is None:
                        self._gram_ul = self.a_ul.conj() @ self.a_ul.T
                    sinr = mmse_few(self._gram_ul[idx[:, :, None], idx[:, None, :]], w)
                else:
                    mask = np.zeros((len(at), self.k))
                    mask[np.arange(len(at))[:, None], idx] = 1.0
                    vt = (self.a_ul[idx] * np.sqrt(w)[:, :, None]).transpose(0, 2, 1)
                    sinr = mmse_many(self._pooled_cov(mask, noise), vt)
                d = shared_band_delays(self.bits, band[:, None], sinr)
            out[at] = d.max(axis=1)
        return out

    def _pooled_cov(self, mask, noise):
        """sum over each set of p_j a_j a_j^H / noise, (N, M, M), for the sets ``mask``
        (N, K) of 0 and 1 and their noise powers (N,)."""
        if self._outer is None:   # p_j a_j a_j^H (K, M^2), real and imaginary
            a = self.a_ul
            o = (self.p_ul[:, None, None] * a[:, :, None] * a.conj()[:, None, :]).reshape(
                self.k, -1)
            self._outer = np.concatenate([o.real, o.imag], axis=1)
        # einsum, not matmul: a threaded gemm this small waits on its threads
        c = np.einsum("nk,kx->nx", mask, self._outer)
        mm = self.m * self.m
        cov = (c[:, :mm] + 1j * c[:, mm:]).reshape(-1, self.m, self.m)
        cov /= noise[:, None, None]
        return cov

    def _mmse_many_sets(self, sets, r, size):
        """The slowest MMSE delay (N,) of UL sets of any sizes above M at full power: x_k =
        v_k^H (I + sum_j v_j v_j^H)^-1 v_k for every device k (members or not: one batch), the
        members' SINRs x_k / (1 - x_k) (``mmse_many``'s formula, by ``hermitian_quad_forms``)."""
        on = ((sets[:, None] >> np.arange(self.k, dtype=np.int64)[None, :]) & 1).astype(bool)
        band = self.band(r) * size
        noise = self.n0 * band
        cov = self._pooled_cov(on.astype(float), noise)
        flat = np.flatnonzero(on)                       # (set, member) pairs, set by set
        rows, dev = flat // self.k, flat % self.k
        x = hermitian_quad_forms(np.eye(self.m) + cov, self.a_ul[dev].T, rows)
        x *= self.p_ul[dev] / noise[rows]               # v_k = sqrt(p_k / noise) a_k
        with np.errstate(divide="ignore", invalid="ignore"):
            sinr = np.maximum(x / (1.0 - x), 0.0)
        d = shared_band_delays(self.bits, band[rows], sinr)
        starts = np.zeros(len(sets), dtype=np.int64)
        starts[1:] = np.cumsum(size[:-1], dtype=np.int64)
        return np.maximum.reduceat(d, starts)

    def _dl_delays(self, keys):
        sets, r, size = self._split(keys)
        out = np.empty(len(keys))
        scheme = self.tr.dl
        for n in np.unique(size):
            n = int(n)
            at = np.flatnonzero(size == n)
            b = self.band(r[at])
            if not scheme.shared:   # ofdma-mrt: the paper's equalised delay on ||a||^2
                idx = members(sets[at], n, self.k)
                with np.errstate(divide="ignore"):
                    inv = (1.0 / self.norms_dl[idx]).sum(axis=1)
                    out[at] = dl_common_delay(self.bits, b, self.p_dl, inv, self.n0)
                continue
            # the members by ||a||^2 descending (ties by index), as ``MuMimoZf.groups`` deals
            order = members(sets[at], n, self.k, self._by_norm)
            band = b * n
            best = np.full(len(at), np.inf)
            for count in scheme.counts(n, self.m):
                if count == 1 and n > 1:   # one group: the whole set
                    inv = self._groups.get(sets[at], self._group_load)[:, None]
                else:
                    inv = self._zf_load(order, count)           # (N, groups) in serving order
                tau = dl_common_delay(self.bits, band[:, None], self.p_dl, inv, self.n0)
                end = np.cumsum(tau, axis=1).max(axis=1)
                best = np.where(end < best, end, best)
            out[at] = best
        return out

    def _zf_load(self, order, count):
        """sum over each ZF group of 1 / gain, (N, count), for the DL sets whose members are
        ``order`` (N, n), ||a||^2 descending: groups as ``MuMimoZf.groups`` forms them (dealt
        round-robin, each sorted)."""
        nsets, n = order.shape
        inv = np.empty((nsets, count))
        by_size = {}
        for j in range(count):
            by_size.setdefault(len(range(j, n, count)), []).append(j)
        for size, js in by_size.items():
            if size == 1:
                with np.errstate(divide="ignore"):
                    inv[:, js] = 1.0 / self.norms_dl[order[:, js]]
                continue
            # a group's load depends on its members only: kept by bitmask (few distinct ones)
            keys = np.stack([self.weights[order[:, j::count]].sum(axis=1) for j in js], axis=1)
            inv[:, js] = self._groups.get(keys.ravel(), self._group_load).reshape(nsets, len(js))
        return inv

    def _group_load(self, bits):
        """sum of 1 / ZF gain over each group ``bits`` (N,) (members ascending)."""
        flat = members(bits, int(popcount(bits[:1])[0]), self.k)
        if self._gram_dl is None:
            self._gram_dl = self.a_dl.conj() @ self.a_dl.T
        gains = zf_from_gram(self._gram_dl[flat[:, :, None], flat[:, None, :]])
        with np.errstate(divide="ignore"):
            return (1.0 / gains).sum(axis=1)
