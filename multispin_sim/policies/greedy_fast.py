"""The draft searches' hot paths compiled with numba: same answers, bit for bit.

An optional fast path (``pip install multispin_sim[fast]``): without numba, or with the
environment variable ``MULTISPIN_NUMBA=0``, every function here returns None and the numpy code
runs. It gives the SAME draft lengths as the numpy code, with the same G values bit for bit: it
replays numpy's floating-point operations in the same order (numpy's pairwise sums, the
sample-major accumulation of ``SAATcomm.path_mean``, the lazy phase-1 chunks, the +1 cache of
``SAATcomm._apply_plus``, bincount's order), and every logarithm is numpy's: numba computes the
rejected sets, their equivalent loads (sums in the kernel's order, minima and maxima) and the
arguments of the kernel's ``log1p`` (``TcommKernel._delay``: x = (z r) / (N0 B)); numpy's own
log1p takes them (called from the kernel itself where ``_numpy_logs`` finds it, else
``np.log1p`` between two kernel calls); numba finishes t = (c1 r) / log1p(x) with the kernel's
own constants (numba's log1p may differ from numpy's in the last bit, a division does not).

Pieces: ``search`` (the greedy: phase-1 chunks with every (step, sample) of a short path computed
vectorised over samples, phase 2 with the +1 cache, its sets as bit masks, its sums over the
nonzero terms only, each device's kept until its terms change; buffers reused across decisions;
the runs transposed (K, M) as ``acceptance_runs`` wrote them. Where ``_numpy_logs`` finds
numpy's own log1p callable from a kernel, phase 1 is one call (stopping after the group of
steps where G stops improving: no later point changes the stop) and phase 2 another; else one
numba call and one ``np.log1p`` per chunk and per phase-2 step), ``path_values``
(``uniform`` and ``budget`` scans), ``kernel_times`` (any ``TcommKernel`` call on this round's
gains: ``SAATcomm.reset``/``apply``/moves, the exact estimator), ``move_means`` (``budget``'s
single-device moves, optimal split), ``acceptance_runs`` (numpy's ``log`` of the uniforms,
the rest compiled) and ``acceptance_uniforms`` (the M x K uniforms drawn from numpy's PCG64 in
compiled code: ``_numpy_random``).
tests/test_speed.py and tests/test_compiled_kernels.py check every piece against numpy with
numba switched off.

The search applies when the objective is the SAA estimator with a closed-form kernel on this
round's gains (``draft_update: every-round``) that declares ``equivalent_loads`` (a link model
whose T_comm is not the delay of an equivalent load sets it False), a constant verification time
(a number, not a function of gamma: ``DraftObjective.precomputable``), at most 8,192 samples,
and (for the whole greedy) a fresh objective. Anything else (a policy without a closed form,
sampled fading, a component that declares itself not precomputable) runs the numpy code
unchanged.
"""
import os
import threading
import weakref

import numpy as np

from ..model.goodput import _LN2, RUN_CAP, SAATcomm, TcommKernel, goodput
from ..model.speculative import expected_tokens

_MODES = {"optimal": 0, "all-ul": 1, "all-dl": 2, "random": 3}
_MAX_SAMPLES = 8192
_DENSE = 32   # paths up to this many points (every split): every point computed
_kernels = None
# the kernels take numpy's log1p themselves when ``_numpy_logs.pointer`` finds it (set False to
# keep the calls of ``np.log1p`` from Python between them: the same values)
fused_logs = True


def available():
    """True when the compiled path can run (numba importable and not disabled)."""
    return _load() is not False


def _load():
    global _kernels
    if _kernels is None:
        if os.environ.get("MULTISPIN_NUMBA", "1") == "0":
            _kernels = False
        else:
            try:
                import numba  # noqa: F401
            except ImportError:
                _kernels = False
            else:
                from . import _greedy_numba

                _kernels = _greedy_numba
    return _kernels


def acceptance_uniforms(rng, shape):
    """``model.speculative.acceptance_uniforms(rng, shape)`` drawn in compiled code (the same
    values, the stream left in the same state: ``_numpy_random``); None when the compiled path
    is off or does not apply (the caller draws with numpy)."""
    if _load() is False:
        return None
    from . import _numpy_random

    return _numpy_random.one_minus_uniforms(rng, shape)


def acceptance_runs(uniforms, alpha):
    """``goodput.acceptance_runs(uniforms, alpha)`` with numpy's logarithm and the rest compiled
    (the same values); None when the compiled path is off."""
    nb = _load()
    alpha = np.asarray(alpha, dtype=float)
    if nb is False or uniforms.ndim != 2 or alpha.shape != uniforms.shape[1:]:
        return None
    out = np.empty(uniforms.shape, dtype=np.int32)
    if (alpha > 0).all():
        logs = np.log(np.asarray(uniforms, dtype=float)), np.log(alpha)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):   # as ``run_length``
            logs = np.log(np.asarray(uniforms, dtype=float)), np.log(alpha)
    out_t = np.empty(uniforms.shape[::-1], dtype=np.int32)
    nb.runs_from_logs_t(logs[0], logs[1], alpha, RUN_CAP, out, out_t)
    _local.runs_t = (out, out_t)   # for ``_Setup`` (the objective made with these runs)
    return out


def kernel_times(kern, rej, rows):
    """``TcommKernel._call(rej, rows)`` compiled (the same values: the loads and log1p
    arguments in numba, the logarithm numpy's); None when it does not apply (numba off, gains
    per sample, another kernel class or mode)."""
    nb = _load()
    if nb is False:
        return None
    from ..model.goodput import TcommKernel

    if type(kern) is not TcommKernel or kern.per_sample or kern.mode not in _MODES:
        return None
    arrays = kern.__dict__.get("_fast_arrays")
    if arrays is None:
        arrays = kern._fast_arrays = _KernelArrays(kern, 0.0)
    rej = np.ascontiguousarray(rej, dtype=np.bool_)
    n = rej.shape[0]
    rows = np.ascontiguousarray(rows, dtype=np.int64) if arrays.code == 3 else _NO_ROWS
    r = np.empty(n, dtype=np.int64)
    s1, s2, x1, x2 = np.empty(n), np.empty(n), np.empty(n), np.zeros(n)
    pm, acc, spl = np.empty(n, dtype=np.int64), np.empty(n), np.empty(n)
    nb.kernel_loads(rej, rows, arrays.code, arrays.order, arrays.ua, arrays.va, arrays.coin,
                    arrays.cst, arrays.posbit, r, s1, s2, x1, x2, pm, acc, spl)
    l1 = np.log1p(x1)
    l2 = np.log1p(x2) if arrays.code == 3 else x2
    out = np.empty(n)
    nb.times_from_logs(arrays.code, r, s1, s2, l1, l2, arrays.cst, out)
    return out


_NO_ROWS = np.zeros(0, dtype=np.int64)


def move_means(tc, dev, new, samples):
    """``SAATcomm.move_means(dev, new, samples)`` (samples < M or None) compiled for the
    optimal split's closed form: the changed (move, sample) pairs, their loads and log1p
    arguments in numba, numpy's log1p, the per-move sums in bincount's order; the same values.
    None when it does not apply."""
    nb = _load()
    if nb is False or tc.gamma is None:
        return None
    from ..model.goodput import TcommKernel

    kern = tc.kernel
    if type(kern) is not TcommKernel or kern.per_sample or kern.mode not in _MODES:
        return None
    arrays = kern.__dict__.get("_fast_arrays")
    if arrays is None:
        arrays = kern._fast_arrays = _KernelArrays(kern, 0.0)
    if arrays.code != 0 or tc.k > 62:
        return None
    ms = tc.m if samples is None else samples
    cached = tc.__dict__.get("_runs_c")
    if cached is None or cached[0] is not tc.runs:
        cached = tc._runs_c = (tc.runs, np.ascontiguousarray(tc.runs.T, dtype=np.int64))
    rmask = _row_masks(tc, nb, arrays.posbit)
    gamma = np.ascontiguousarray(tc.gamma, dtype=np.int64)
    dev = np.ascontiguousarray(dev, dtype=np.int64)
    new = np.ascontiguousarray(new, dtype=np.int64)
    mv, rows, pm, r, acc, spl, s1, s2, x1, x2, l1 = _scratch(ms * dev.size)
    held = tc.__dict__.get("_buckets")   # the budget scans of this estimator, if alive
    scans = None if held is None else held()
    if scans is not None and scans.su.source is tc.runs:
        bk = scans.bstart, scans.samp, scans.entry_of, scans.caps
    else:
        bk = _NO_BUCKETS
    sums = np.empty(dev.size)
    t = np.ascontiguousarray(tc.t, dtype=float)
    fp = _log_pointer()
    if fp >= 0:
        nb.move_run(fp, cached[1], rmask, arrays.posbit, gamma, dev, new, ms, *bk, mv, rows, pm,
                    arrays.ua, arrays.va, arrays.cst, acc, spl, r, s1, s2, x1, x2, l1, t, sums)
        return sums
    n = nb.move_masks(cached[1], rmask, arrays.posbit, gamma, dev, new, ms, *bk, mv, rows, pm,
                      arrays.ua, arrays.va, arrays.cst, acc, spl, r, s1, s2, x1, x2)
    np.log1p(x1[:n], out=l1[:n])
    nb.move_sums(n, mv, rows, r, s1, l1, arrays.cst, t, dev.size, sums)
    return sums


def set_point(obj, gamma):
    """``DraftObjective._set``'s closed forms at ``gamma`` compiled (``_greedy_numba.set_point``,
    the same values): (E[N] w per device, tokens, i1, d1, d2), or None when numba is off or
    it does not apply."""
    nb = _load()
    if nb is False:
        return None
    en = np.empty(obj.k)
    ok, tok, i1, d1, d2 = nb.set_point(np.ascontiguousarray(gamma, dtype=np.int64),
                                       obj.en_table(), obj._w, obj.draft_s, en)
    return (en, tok, int(i1), d1, d2) if ok else None


def move_goodput(obj, dev, new, t_comm):
    """``DraftObjective._move_g(dev, new, t_comm)`` (goodput, constant T_ver) compiled: the same
    values (``_greedy_numba.move_goodput``), without counting evaluations; None when numba is
    off or a length is outside the objective's E[N] table."""
    nb = _load()
    if nb is False:
        return None
    out = np.empty(dev.size)
    if not nb.move_goodput(np.ascontiguousarray(dev, dtype=np.int64),
                           np.ascontiguousarray(new, dtype=np.int64), obj.en_table(), obj._w,
                           obj._en, obj._tok, obj._i1, obj._d1, obj._d2, obj.draft_s,
                           obj.verify_s, np.ascontiguousarray(t_comm, dtype=float), out):
        return None
    return out


def _read_only(a):
    a.flags.writeable = False
    return a


def _keep(cache, key, arrays, limit):
    """cache[key] = arrays, made read-only (the cache is emptied once it holds ``limit``)."""
    for a in arrays:
        a.flags.writeable = False
    if len(cache) >= limit:
        cache.clear()
    cache[key] = arrays
    return arrays


# ``move_masks`` without buckets (caps 0: every move scans; read-only as the scans' own arrays,
# so both calls share one compiled signature)
_NO_BUCKETS = (np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64),
               _read_only(np.zeros((64, 1), dtype=np.int64)),
               _read_only(np.zeros(64, dtype=np.int64)))


def _scratch(n):
    """Work arrays of ``move_means`` for n pairs (4 int64, 7 float64), kept per thread and
    grown as needed: a fresh large array costs a page fault per 4 kB on first touch."""
    held = getattr(_local, "scratch", None)
    if held is None or held[0].size < n:
        size = max(n, 1 << 15)
        held = _local.scratch = tuple(np.empty(size, dtype=np.int64) for _ in range(4)) + tuple(
            np.empty(size) for _ in range(7))
    return held


def _row_masks(tc, nb, posbit):
    """The estimator's current rejected sets as bit masks, kept while its rejected rows and
    gamma are the same (``apply_move`` changes both in place, ``reset`` replaces the rows)."""
    key = tc.gamma.tobytes()
    rej = tc.__dict__.get("_rej")   # None: not made since the last ``reset``
    cached = tc.__dict__.get("_rmask")
    if cached is None or cached[0] is not rej or cached[1] != key:
        out = np.empty(tc.m, dtype=np.int64)
        if rej is None:   # the same bits from runs < gamma (at that ``reset``)
            nb.row_masks(tc._runs_c[1], np.ascontiguousarray(tc._rej_for, dtype=np.int64),
                         posbit, out)
        else:
            nb.coin_bits(np.ascontiguousarray(rej, dtype=np.bool_), posbit, out)   # the same OR
        cached = tc._rmask = (rej, key, out)
    return cached[2]


def eligible(obj, fresh=True):
    """The compiled search can replace the numpy one for this ``DraftObjective`` (``fresh``:
    and its estimator holds no state yet)."""
    tc = obj.tcomm
    if not isinstance(tc, SAATcomm) or (fresh and (tc.gamma is not None or tc._path is not None)):
        return False
    kern = tc.kernel
    if (type(kern) is not TcommKernel or not getattr(kern, "equivalent_loads", False)
            or kern.per_sample or kern.mode not in _MODES):
        return False
    if not getattr(obj, "precomputable", True) or not isinstance(obj.verify_s, float):
        return False
    return tc.m <= _MAX_SAMPLES and obj.k >= 1


def _mode_of(kern):
    mode = kern.mode
    if mode == "optimal" and kern.p_dl <= 0:
        mode = "all-ul"
    return mode


class _Workspace:
    """Buffers of the compiled search for M samples and K devices, reused across decisions
    (one per thread): no large allocation per decision."""

    def __init__(self, m, k):
        cap = m * max(k + 1, _DENSE + 1)
        self.ev_m = np.empty(cap, dtype=np.int64)
        self.ev_s = np.empty(cap, dtype=np.int64)
        self.ev_need = np.empty(cap, dtype=np.bool_)
        self.rcnt = np.empty(cap, dtype=np.int64)
        self.s1, self.s2 = np.empty(cap), np.empty(cap)
        self.x1, self.x2 = np.zeros(cap), np.zeros(cap)
        self.l1, self.l2 = np.zeros(cap), np.zeros(cap)
        self.rows = np.empty(m * k, dtype=np.int64)
        self.pm = np.empty(cap, dtype=np.int64)
        self.pc = np.empty(cap, dtype=np.int64)
        self.pacc, self.pspl = np.empty(cap), np.empty(cap)
        self.pcnt = np.empty(cap, dtype=np.int64)
        self.rmask = np.empty(m, dtype=np.int64)
        self.pos = np.empty((k, m), dtype=np.int64)
        self.npos = np.empty(k, dtype=np.int64)
        self.lof, self.linfo, self.plan = _load().pairwise_plan(m)
        self.lacc = np.empty((self.linfo.shape[1], 9))
        self.stk = np.empty(self.plan.size + 1)
        self.devs = np.empty(m * k, dtype=np.int64)
        self.table = np.empty((16, m))
        self.table_of = None   # (values, setup, path bytes) of the path ``table`` holds, if kept
        self.t = np.empty(m)
        self.start = np.empty(m)
        self.contrib = np.empty((k, m))
        self.rej = np.empty((m, k), dtype=np.bool_)
        self.state = np.zeros(2)
        self.psum, self.dirty = np.zeros(k), np.ones(k, dtype=np.bool_)
        self.no_table = np.empty((0, m))
        self.fl = np.empty((k, m), dtype=np.int64)
        self.acc, self.spl = np.empty(m), np.empty(m)
        self.cnt = np.empty(m, dtype=np.int64)
        self.evf = np.empty((_DENSE + 1, m), dtype=np.bool_)


_local = threading.local()
_EN_CACHE = {}


def _workspace(m, k):
    cache = getattr(_local, "ws", None)
    if cache is None:
        cache = _local.ws = {}
    ws = cache.get((m, k))
    if ws is None:
        if len(cache) > 4:
            cache.clear()
        ws = cache[(m, k)] = _Workspace(m, k)
    return ws


class _KernelArrays:
    """The arrays of a closed-form ``TcommKernel`` the numba kernels read; cst = (c1 = S ln2 / B,
    c2 = N0 B, P_dl, T_ver), the constants of ``TcommKernel._delay`` as it computes them."""

    def __init__(self, kern, verify_s):
        self.mode = mode = _mode_of(kern)
        self.code = code = _MODES[mode]
        k = kern.k
        if code == 0:
            self.order = np.ascontiguousarray(kern.order_rev, dtype=np.int64)
            self.ua = np.ascontiguousarray(kern.u_rev, dtype=float)
            self.va = np.ascontiguousarray(kern.v_rev, dtype=float)
        else:
            self.order = np.arange(k, dtype=np.int64)
            self.ua, self.va = _row(kern.q, k), _row(kern.v, k)
        if k <= 62:   # bit i: the device at position i of the reversed UL order (optimal
            # split), device i (the reactive modes: order is the identity)
            self.posbit = np.empty(k, dtype=np.int64)
            self.posbit[self.order] = _BITS[:k]
        else:
            self.posbit = np.zeros(k, dtype=np.int64)
        self.coin = (np.ascontiguousarray(kern.coin, dtype=np.bool_) if code == 3
                     else np.zeros((1, 1), dtype=np.bool_))
        # the random split's coin bits per sample (bit j: device j is UL), for the bit masks
        self.cbits = np.zeros(1, dtype=np.int64)
        if code == 3 and k <= 62:
            self.cbits = np.empty(self.coin.shape[0], dtype=np.int64)
            _load().coin_bits(self.coin, self.posbit, self.cbits)
        self.cst = np.array([kern.bits * _LN2 / kern.bw, kern.n0 * kern.bw, kern.p_dl,
                             verify_s], dtype=float)


_BITS = np.left_shift(1, np.arange(62, dtype=np.int64))   # 1 << i


def _row(a, k):
    """``a`` as a contiguous float (k,) array (a broadcast when it is not one already)."""
    if type(a) is np.ndarray and a.shape == (k,) and a.dtype == np.float64 \
            and a.flags.c_contiguous:
        return a
    return np.ascontiguousarray(np.broadcast_to(a, (k,)), dtype=float)


class _Setup(_KernelArrays):
    """The numba kernels, the arrays of this objective's closed-form kernel and a workspace."""

    def __init__(self, obj):
        tc = obj.tcomm
        super().__init__(tc.kernel, obj.verify_s)
        self.nb = _load()
        self.source = tc.runs
        self.runs = runs = np.ascontiguousarray(tc.runs, dtype=np.int32)
        self.m, self.k = m, k = runs.shape
        self.ws = _workspace(m, k)
        self.runs_t = _runs_t(runs)
        self.fp = _log_pointer()

    def log1p(self, n):
        """numpy's log1p of the first n arguments (the numpy kernel's own logarithm)."""
        ws = self.ws
        if n:
            np.log1p(ws.x1[:n], out=ws.l1[:n])
            if self.code == 3:
                np.log1p(ws.x2[:n], out=ws.l2[:n])


def _log_pointer():
    """``_numpy_logs.pointer()`` (numpy's log1p inside the kernels), or -1: not used."""
    return _load().log1p_pointer() if fused_logs else -1


def _runs_t(runs):
    """The runs transposed (K, M), contiguous: the one ``acceptance_runs`` made with them when
    it made these runs."""
    held = getattr(_local, "runs_t", None)
    if held is not None and held[0] is runs:
        return held[1]
    return np.ascontiguousarray(runs.T)


def _setup(obj):
    """The objective's ``_Setup`` (kept on it: ``budget`` evaluates many paths)."""
    su = getattr(obj, "_fast_setup", None)
    if su is None or su.source is not obj.tcomm.runs:
        su = _Setup(obj)
        obj._fast_setup = su
    return su


_GC = {}


def _g(obj, seg, t_comm):
    """``obj._g(seg, t_comm)`` (an eligible objective: goodput with a constant T_ver), with the
    tokens and drafting times of the path from a cache: the same numpy calls on the same
    arrays give the same numbers, and saturated rounds repeat the same paths."""
    key = (obj.alpha.tobytes(), obj._w.tobytes(), obj.draft_s.tobytes(), seg.shape,
           seg.tobytes())
    hit = _GC.get(key)
    if hit is None:
        if len(_GC) > 256:
            _GC.clear()
        hit = _GC[key] = (obj.tokens(seg), obj.drafting(seg))
    obj.evaluations += seg.shape[0]
    return goodput(hit[0], hit[1], obj.verify_s, t_comm)


_PLANS = {}


def _phase1_plan(obj, path, chunk):
    """The chunks of phase 1 on ``path`` (the rows [b0, b1) of each: chunk + 1 points, then
    chunk // 2 + 1 from the last point of the one before, to the path's end) with the tokens
    and drafting times of each chunk (``DraftObjective.tokens`` / ``drafting`` on the chunk, as
    ``_g`` takes them), concatenated. Kept per path and devices: saturated rounds repeat them."""
    key = (obj.alpha.tobytes(), obj._w.tobytes(), obj.draft_s.tobytes(), path.shape,
           path.tobytes(), chunk)
    hit = _PLANS.get(key)
    if hit is None:
        p = path.shape[0]
        bounds = [(0, min(chunk + 1, p))]
        while bounds[-1][1] < p:
            end = bounds[-1][1]
            bounds.append((end - 1, min(end + chunk // 2 + 1, p)))
        segs = [np.ascontiguousarray(path[b0:b1], dtype=np.int64) for b0, b1 in bounds]
        hit = _keep(_PLANS, key, (
            np.array(bounds, dtype=np.int64),
            np.concatenate([obj.tokens(seg) for seg in segs]).astype(float, copy=False),
            np.concatenate([obj.drafting(seg) for seg in segs]).astype(float, copy=False)), 65)
    return hit


def _path_values(obj, su, seg, start, table=False):
    """``obj.path_values(seg)`` (``SAATcomm.path_mean``); with ``table``, the per-sample T_comm
    at every point of ``seg`` in ``su.ws.table[:n]``; ``start``: T_comm at seg[0] when known (a
    later chunk)."""
    nb, ws, m = su.nb, su.ws, su.m
    ws.table_of = None
    seg = np.ascontiguousarray(seg, dtype=np.int64)
    n = seg.shape[0]
    has = start is not None
    if table and ws.table.shape[0] < n:
        ws.table = np.empty((n, m))
    total = np.empty(n)
    if n <= _DENSE and (su.code == 0 or su.k <= 62):
        if su.fp >= 0:
            nb.path_dense_run(su.fp, su.runs_t, seg, su.code, su.order, su.ua, su.va, su.cbits,
                              su.posbit, su.cst, ws.fl, ws.acc, ws.spl, ws.cnt, ws.evf, ws.rcnt,
                              ws.s1, ws.s2, ws.x1, ws.x2, ws.l1, ws.l2, ws.pm, ws.pc, has,
                              start if has else ws.t, total, ws.table if table else ws.no_table,
                              table, ws.pacc)
            return _g(obj, seg, total / m)
        nb.path_dense(su.runs_t, seg, su.code, su.order, su.ua, su.va, su.cbits, su.posbit,
                      su.cst, ws.fl, ws.acc, ws.spl, ws.cnt, ws.evf, ws.rcnt, ws.s1, ws.s2,
                      ws.x1, ws.x2, ws.pm, ws.pc, has)
        su.log1p(n * m)
        nb.dense_finish(n, m, ws.evf, ws.rcnt, ws.s1, ws.s2, ws.l1, ws.l2, su.code, su.cst,
                        start if has else ws.t, has, total, ws.table if table else ws.no_table,
                        table, ws.pacc)
        return _g(obj, seg, total / m)
    if su.fp >= 0:
        nb.path_run(su.fp, su.runs, seg, su.code, su.order, su.ua, su.va, su.coin, has, su.cst,
                    ws.ev_m, ws.ev_s, ws.ev_need, ws.rcnt, ws.s1, ws.s2, ws.x1, ws.x2, ws.l1,
                    ws.l2, su.posbit, ws.pm, ws.pacc, ws.pspl, su.cbits, ws.pc,
                    start if has else ws.t, total, ws.table if table else ws.no_table, table)
        return _g(obj, seg, total / m)
    ne, nn = nb.path_loads(su.runs, seg, su.code, su.order, su.ua, su.va, su.coin, has, su.cst,
                           ws.ev_m, ws.ev_s, ws.ev_need, ws.rcnt, ws.s1, ws.s2, ws.x1, ws.x2,
                           su.posbit, ws.pm, ws.pacc, ws.pspl, su.cbits,
                           ws.pc)
    su.log1p(nn)
    nb.path_finish(ne, ws.ev_m, ws.ev_s, ws.ev_need, ws.rcnt, ws.s1, ws.s2, ws.l1, ws.l2,
                   su.code, su.cst, start if has else ws.t, has, n, total,
                   ws.table if table else ws.no_table, table)
    return _g(obj, seg, total / m)


def path_values(obj, path, keep_table=False):
    """``obj.path_values(path)`` for a nondecreasing path from gamma = 0 (or any path of a fresh
    objective), compiled (the same values); None when not applicable. The estimator keeps no
    path cache: a later ``reset`` evaluates its point by the kernel (the same numbers).
    ``keep_table``: keep the per-sample T_comm along the path until the next search call, for
    ``search(obj, path_values=<these values>)`` to start phase 2 from (the same numbers the
    kernel gives at its point)."""
    if _load() is False:
        return None
    path = np.asarray(path)
    if not eligible(obj, fresh=bool(path[0].any())):
        return None
    if path.shape[0] > 1 and np.any(np.diff(path, axis=0) < 0):
        return None
    su = _setup(obj)
    values = _path_values(obj, su, path, None, table=keep_table)
    if keep_table:
        su.ws.table_of = (values, su, np.ascontiguousarray(path, dtype=np.int64).tobytes())
    return values


_DS = []
_UNIFORM_PATHS = {}


def _draft_search():
    """(SearchResult, _phase1_stop, uniform_path) of ``draft_search`` (which imports this
    module: imported at the first search, then kept)."""
    if not _DS:
        from .draft_search import SearchResult, _phase1_stop, uniform_path

        _DS.extend((SearchResult, _phase1_stop, uniform_path))
    return _DS


def search(obj, chunk=8, path_values=None):
    """``draft_search.greedy_search(obj, path_values)`` compiled; None when not applicable.

    Without ``path_values`` phase 1 replays the lazy chunks of ``_lazy_phase1`` (the objective
    must be fresh); with them (``budget`` passes the whole uniform path's values) phase 2 starts
    from their stop point, whose per-sample T_comm the kernel gives (as ``reset`` does).
    """
    nb = _load()
    if nb is False or not eligible(obj, fresh=path_values is None):
        return None
    SearchResult, _phase1_stop, uniform_path = _draft_search()

    su = _setup(obj)
    ws = su.ws
    ev0 = obj.evaluations
    key = obj.caps.tobytes()
    path = _UNIFORM_PATHS.get(key)
    if path is None:   # the uniform path of these caps, read-only (saturated rounds repeat it)
        if len(_UNIFORM_PATHS) > 64:
            _UNIFORM_PATHS.clear()
        path = _UNIFORM_PATHS[key] = uniform_path(obj.caps)
        path.flags.writeable = False
    held, ws.table_of = ws.table_of, None
    if path_values is not None:
        c = _phase1_stop(np.asarray(path_values))
        gamma = path[c].astype(np.int64).copy()
        if held is not None and held[0] is path_values and held[1] is su \
                and held[2] == path.tobytes():
            # kept by ``path_values``: T_comm of every sample at each point of this path
            ws.t[:] = ws.table[c]
            return _search_phase2(obj, su, gamma, c, ev0, SearchResult)
        # T_comm of every sample at gamma: the path (gamma, gamma) has one event per sample
        seg = gamma[None, :].copy()
        if su.fp >= 0:
            nb.path_run(su.fp, su.runs, seg, su.code, su.order, su.ua, su.va, su.coin, False,
                        su.cst, ws.ev_m, ws.ev_s, ws.ev_need, ws.rcnt, ws.s1, ws.s2, ws.x1,
                        ws.x2, ws.l1, ws.l2, su.posbit, ws.pm, ws.pacc, ws.pspl, su.cbits, ws.pc,
                        ws.t, np.empty(1), ws.table, True)
        else:
            ne, nn = nb.path_loads(su.runs, seg, su.code, su.order, su.ua, su.va, su.coin,
                                   False, su.cst, ws.ev_m, ws.ev_s, ws.ev_need, ws.rcnt, ws.s1,
                                   ws.s2, ws.x1, ws.x2, su.posbit, ws.pm, ws.pacc, ws.pspl,
                                   su.cbits, ws.pc)
            su.log1p(nn)
            nb.path_finish(ne, ws.ev_m, ws.ev_s, ws.ev_need, ws.rcnt, ws.s1, ws.s2, ws.l1,
                           ws.l2, su.code, su.cst, ws.t, False, 1, np.empty(1), ws.table, True)
        ws.t[:] = ws.table[0]
    elif su.fp >= 0 and (su.code == 0 or su.k <= 62):
        # phase 1 in one call: the same chunks, stopped at the first point that does not improve
        bounds, tok, dra = _phase1_plan(obj, path, chunk)
        c, evals = nb.phase1_dense(su.fp, su.runs_t, path, bounds, tok, dra, obj.verify_s,
                                   su.code, su.order, su.ua, su.va, su.cbits, su.posbit, su.cst,
                                   ws.fl, ws.acc, ws.spl, ws.cnt, ws.evf, ws.rcnt, ws.s1, ws.s2,
                                   ws.x1, ws.x2, ws.l1, ws.l2, ws.pm, ws.pc, ws.pacc, ws.table,
                                   ws.start, ws.t)
        obj.evaluations += evals
        gamma = path[c].astype(np.int64).copy()
    else:
        # phase 1: the lazy chunks of ``_lazy_phase1``, each a ``SAATcomm.path_mean``
        # (Python floats: the same doubles, compared alike; c == len(vals) - 1 while every
        # value so far is larger than the one before)
        vals = _path_values(obj, su, path[:chunk + 1], None, table=True).tolist()
        offset = 0
        c = _phase1_stop(vals)
        while len(vals) < len(path) and c == len(vals) - 1:
            first = len(vals) - 1
            seg = path[first:len(vals) + chunk // 2 + 1]
            start = ws.table[first - offset].copy()   # T at its start
            v = _path_values(obj, su, seg, start, table=True)
            offset = first
            vals.extend(v[1:].tolist())
            c = _phase1_stop(vals)
        gamma = path[c].astype(np.int64).copy()
        ws.t[:] = ws.table[c - offset]
    return _search_phase2(obj, su, gamma, c, ev0, SearchResult)


def _search_phase2(obj, su, gamma, c, ev0, SearchResult):
    """``search``'s end: phase 2 from gamma = path[c] (its per-sample T_comm in su.ws.t)."""
    value, evals, steps = _phase2(obj, su, gamma)
    obj.evaluations += evals
    obj.gamma, obj.value = gamma.copy(), value
    return SearchResult(gamma.copy(), value, obj.evaluations - ev0,
                        {"phase1": int(c), "phase2_steps": steps})


def _phase2(obj, su, gamma):
    """Phase 2 from ``gamma`` (updated in place) with per-sample T_comm ``su.ws.t``: +1 moves
    with the +1 cache (``plus_one_values`` / ``_apply_plus``). Returns (G, evaluations, steps)."""
    nb, ws, code = su.nb, su.ws, su.code
    caps = obj.caps.astype(np.int64)
    top = obj.top + 2   # the largest cap + 2
    key = (obj.alpha.tobytes(), top)
    en = _EN_CACHE.get(key)
    if en is None:   # E[N] of every device and length (K, top + 1), as ``_set`` computes them
        en = expected_tokens(obj.alpha[:, None], np.arange(top + 1)[None, :])
        en = np.ascontiguousarray(en, dtype=float)
        if len(_EN_CACHE) > 64:
            _EN_CACHE.clear()
        _EN_CACHE[key] = en
    w = np.ascontiguousarray(obj._w, dtype=float)
    draft_s = np.ascontiguousarray(obj.draft_s, dtype=float)
    runs, order, ua, va, coin, cst = su.runs, su.order, su.ua, su.va, su.coin, su.cst
    rej, contrib, t, rows, devs, state = ws.rej, ws.contrib, ws.t, ws.rows, ws.devs, ws.state
    rcnt, s1, s2, x1, x2, l1, l2 = ws.rcnt, ws.s1, ws.s2, ws.x1, ws.x2, ws.l1, ws.l2
    runs_t, rmask, posbit = su.runs_t, ws.rmask, su.posbit
    pm, acc, spl, cnt = ws.pm, ws.pacc, ws.pspl, ws.pcnt
    pos, npos, lof, linfo, plan = ws.pos, ws.npos, ws.lof, ws.linfo, ws.plan
    lacc, stk = ws.lacc, ws.stk
    cbits, pc = su.cbits, ws.pc
    n = nb.p2_init(runs, runs_t, gamma, caps, rej, rmask, posbit, contrib, code, order, ua, va,
                   coin, cst, rows, devs, rcnt, s1, s2, x1, x2, pm, acc, spl, cnt, pos, npos,
                   su.cbits, ws.pc)
    psum, dirty = ws.psum, ws.dirty
    dirty.fill(True)   # no sparse sum kept yet
    steps, evals = 0, 0
    if su.fp >= 0:   # the loop below in one call
        steps = nb.p2_run(su.fp, runs, runs_t, gamma, caps, rej, rmask, posbit, t, contrib, n,
                          rows, devs, rcnt, s1, s2, l1, l2, en, w, draft_s, code, order, ua, va,
                          coin, cst, x1, x2, pm, acc, spl, cnt, pos, npos, lof, linfo, plan,
                          lacc, stk, state, cbits, pc, psum, dirty)
        return float(state[0]), int(state[1]), steps
    step = nb.p2_step
    log1p = su.log1p
    while True:
        log1p(n)
        n = step(runs, runs_t, gamma, caps, rej, rmask, posbit, t, contrib, n, rows, devs, rcnt,
                 s1, s2, l1, l2, en, w, draft_s, code, order, ua, va, coin, cst, x1, x2, pm, acc,
                 spl, cnt, pos, npos, lof, linfo, plan, lacc, stk, state, cbits, pc, psum, dirty)
        evals += int(state[1])
        if n < 0:
            break
        steps += 1
    return float(state[0]), evals, steps


def budget_scans(obj):
    """The budget scans of ``draft_search.budget_search`` compiled (``_BudgetScans``' interface;
    the same paths and values), or None when they do not apply (the same objectives as
    ``path_values``, with K <= 62: bit masks)."""
    if _load() is False or obj.k > 62 or not eligible(obj, fresh=False):
        return None
    return _BudgetScans(obj, _setup(obj), *_budget_entries(obj.caps, obj.draft_s))


_ENTRIES = {}
_BUDGET_PATHS = {}


def _budget_entries(caps, draft_s):
    """The budget path with every device included (``draft_search.budget_order``): its key,
    the caps, the device of each step, the path (steps + 1, K) and entry_of[j, g]: the step
    index - 1 of (j, g).
    Cached (read-only): rounds with the same caps and drafting latencies share them."""
    key = (np.asarray(caps, dtype=np.int64).tobytes(),
           np.asarray(draft_s, dtype=float).tobytes())
    hit = _ENTRIES.get(key)
    if hit is None:
        from .draft_search import budget_order

        caps = np.ascontiguousarray(caps, dtype=np.int64)
        who = np.ascontiguousarray(budget_order(caps, draft_s, caps > 0), dtype=np.int64)
        n, k = who.size, caps.size
        full = np.zeros((n + 1, k), dtype=np.int64)
        full[np.arange(1, n + 1), who] = 1
        np.cumsum(full, axis=0, out=full)
        entry_of = np.zeros((k, int(caps.max(initial=0)) + 1), dtype=np.int64)
        entry_of[who, full[np.arange(1, n + 1), who]] = np.arange(n)
        for a in (caps, who, full, entry_of):
            a.flags.writeable = False
        if len(_ENTRIES) > 64:
            _ENTRIES.clear()
        hit = _ENTRIES[key] = (key, caps, who, full, entry_of)
    return hit


class _BudgetScans:
    """Budget paths are subsequences of one order of (device, level) entries: the samples are
    bucketed by the entries at which their devices become rejected once (``budget_buckets``),
    and a scan walks the entries (``budget_scan_loads``), computing T_comm only for the events
    whose set the last scans did not have in the same slot (``budget_scan_finish``).
    ``times(ref)``: T_comm per sample at a point of the last scan (what the kernel gives at its
    gamma)."""

    def __init__(self, obj, su, key, caps, who, full, entry_of):
        nb, m, k = su.nb, su.m, su.k
        self.obj, self.su, self.key, self.who, self.full = obj, su, key, who, full
        self.entry_of, self.caps = entry_of, caps
        self.bstart = np.empty(who.size + 1, dtype=np.int64)
        self.samp, self.ev_mask, self.ev_t, self.pidx, self.cur, self.prev = self._arrays(m, k)
        nb.budget_buckets(su.runs, entry_of, caps, self.bstart, self.samp)
        # ``move_means`` reads the +1 / -1 moves' samples from the buckets while these live
        obj.tcomm._buckets = weakref.ref(self)
        self.ev_mask.fill(-1)   # no set in any slot yet
        self.incl = None
        self._last = None

    def _arrays(self, m, k):
        """Its work arrays: those of the last scans of this thread once they are gone (fresh
        large arrays cost a page fault per 4 kB on first touch)."""
        held = getattr(_local, "budget", None)
        if held is not None and held[0]() is None and held[1] == (m, k):
            arrays = held[2]
        else:
            arrays = (np.empty(m * k, np.int64), np.empty(m * k, np.int64), np.empty(m * k),
                      np.empty(m * k, np.int64), np.empty(m, np.int64), np.empty(m))
        _local.budget = (weakref.ref(self), (m, k), arrays)
        return arrays

    def scan(self, include):
        obj, su, ws = self.obj, self.su, self.su.ws
        self._last = None   # (ref, T_comm per sample at ref) of this scan
        self.incl = incl = np.ascontiguousarray(include & (obj.caps > 0), dtype=np.bool_)
        bpath, tokens, self.draft = self._path(incl)
        total = np.empty(bpath.shape[0])
        if su.fp >= 0:
            su.nb.budget_scan_run(
                su.fp, self.who, self.bstart, self.samp, incl, su.posbit, su.cbits, su.code,
                su.ua, su.va, su.cst, self.cur, self.ev_mask, ws.pm, ws.pc, self.pidx, ws.pacc,
                ws.pspl, ws.pcnt, ws.rcnt, ws.s1, ws.s2, ws.x1, ws.x2, ws.l1, ws.l2, self.ev_t,
                self.prev, bpath.shape[0], total)
        else:
            npend = su.nb.budget_scan_loads(
                self.who, self.bstart, self.samp, incl, su.posbit, su.cbits, su.code, su.ua,
                su.va, su.cst, self.cur, self.ev_mask, ws.pm, ws.pc, self.pidx, ws.pacc, ws.pspl,
                ws.pcnt, ws.rcnt, ws.s1, ws.s2, ws.x1, ws.x2)
            su.log1p(npend)
            su.nb.budget_scan_finish(npend, self.pidx, su.code, ws.rcnt, ws.s1, ws.s2, ws.l1,
                                     ws.l2, su.cst, self.who, self.bstart, self.samp, incl,
                                     self.ev_t, self.prev, bpath.shape[0], total)
        obj.evaluations += bpath.shape[0]   # as ``_g``, on the same arrays
        return bpath, goodput(tokens, self.draft, obj.verify_s, total / su.m)

    def _path(self, incl):
        """The budget path with the devices ``incl`` (``draft_search.budget_path``: the rows of
        the full path at the included steps, the others' columns 0), its tokens and drafting
        times (``DraftObjective.tokens`` / ``drafting``), read-only; cached: rounds with the
        same devices, caps and latencies scan the same paths."""
        obj = self.obj
        key = (self.key, incl.tobytes(), obj.alpha.tobytes(), obj._w.tobytes())
        hit = _BUDGET_PATHS.get(key)
        if hit is None:
            bpath = self.full[np.concatenate(([0], np.flatnonzero(incl[self.who]) + 1))]
            bpath[:, ~incl] = 0
            hit = _keep(_BUDGET_PATHS, key, (bpath, obj.tokens(bpath), obj.drafting(bpath)), 513)
        return hit

    def drafting(self, bpath):
        """The drafting times along the last scan's path (``obj.drafting(bpath)``)."""
        return self.draft

    def times(self, ref):
        last = self._last
        if last is not None and last[0] == ref:   # the same point of the same scan: a copy
            return last[1].copy()
        t = np.empty(self.su.m)
        self.su.nb.budget_point(ref, self.who, self.bstart, self.samp, self.incl, self.ev_t, t)
        self._last = (ref, t.copy())
        return t
