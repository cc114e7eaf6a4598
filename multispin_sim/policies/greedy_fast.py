"""The greedy draft search (``draft_search.greedy_search``) compiled with numba: same answers.

An optional fast path (``pip install multispin_sim[fast]``): without numba, or with the
environment variable ``MULTISPIN_NUMBA=0``, ``search`` returns None and the numpy search runs.
It gives the SAME draft lengths as the numpy search, with the same G values bit for bit: it
replays the numpy search's floating-point operations in the same order (numpy's pairwise sums,
the sample-major accumulation of ``SAATcomm.path_mean``, the lazy phase-1 chunks, the +1 cache of
``SAATcomm._apply_plus``), and every T_comm is computed by the numpy kernel's own final step
(``TcommKernel._delay`` / ``_dl_delay``, where the logarithm is numpy's): numba only finds which
rejected sets to evaluate and their equivalent loads (sums, minima and maxima, exact in any
order we replicate). tests/test_speed.py checks both paths give identical lengths and values.

It applies when the objective is the SAA estimator with a closed-form kernel on this round's
gains (``draft_update: every-round``), a constant verification time (a number, not a function
of gamma), at most 8,192 samples, and the objective is fresh (no cached state). Anything else
(another verification-cost or acceptance component that declares itself not precomputable, a
policy without a closed form, sampled fading) runs the numpy search unchanged.
"""
import os

import numpy as np

_MODES = {"optimal": 0, "all-ul": 1, "all-dl": 2, "random": 3}
_MAX_SAMPLES = 8192
_kernels = None


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


def eligible(obj, fresh=True):
    """The compiled search can replace the numpy one for this ``DraftObjective`` (``fresh``:
    and its estimator holds no state yet)."""
    from ..model.goodput import SAATcomm, TcommKernel

    tc = obj.tcomm
    if not isinstance(tc, SAATcomm) or (fresh and (tc.gamma is not None or tc._path is not None)):
        return False
    kern = tc.kernel
    if type(kern) is not TcommKernel or kern.per_sample or kern.mode not in _MODES:
        return False
    if not getattr(obj, "precomputable", True) or not isinstance(obj.verify_s, float):
        return False
    return tc.m <= _MAX_SAMPLES and obj.k >= 1


def _mode_of(kern):
    mode = kern.mode
    if mode == "optimal" and kern.p_dl <= 0:
        mode = "all-ul"
    return mode


def _times(kern, mode, r, a, b):
    """T_comm from the numba loads, by the numpy kernel's own final step (same values)."""
    if mode in ("optimal", "all-dl"):
        return kern._dl_delay(r, a)
    if mode == "all-ul":
        return kern._delay(r, a)
    return np.maximum(kern._delay(r, a), kern._dl_delay(r, b))


def _setup(obj):
    """The numba kernels and the arrays of this objective's closed-form kernel."""
    nb = _load()
    tc = obj.tcomm
    kern = tc.kernel
    mode = _mode_of(kern)
    code = _MODES[mode]
    runs = np.ascontiguousarray(tc.runs, dtype=np.int32)
    k = runs.shape[1]
    if code == 0:
        order = np.ascontiguousarray(kern.order_rev, dtype=np.int64)
        ua = np.ascontiguousarray(kern.u_rev, dtype=float)
        va = np.ascontiguousarray(kern.v_rev, dtype=float)
    else:
        order = np.arange(k, dtype=np.int64)
        ua = np.ascontiguousarray(np.broadcast_to(kern.q, (k,)), dtype=float)
        va = np.ascontiguousarray(np.broadcast_to(kern.v, (k,)), dtype=float)
    coin = (np.ascontiguousarray(kern.coin, dtype=np.bool_) if code == 3
            else np.zeros((1, 1), dtype=np.bool_))
    return nb, kern, mode, code, runs, order, ua, va, coin


def _path_values(obj, setup, seg, start):
    """``obj.path_values(seg)`` (``SAATcomm.path_mean``), and the per-sample T_comm at every
    point of ``seg`` (n, M); ``start``: T_comm at seg[0] when known (a later chunk)."""
    nb, kern, mode, code, runs, order, ua, va, coin = setup
    m = runs.shape[0]
    seg = np.ascontiguousarray(seg, dtype=np.int64)
    has = start is not None
    st = start if has else np.zeros(0)
    ev_m, ev_s, need, r, a, b = nb.path_events(runs, seg, code, order, ua, va, coin, has)
    t = np.zeros(ev_m.size)
    if need.any():
        t[need] = _times(kern, mode, r[need], a[need], b[need])
    total, table = nb.path_accumulate(ev_m, ev_s, t, need, st, has, seg.shape[0], m)
    return obj._g(seg, total / m), table


def path_values(obj, path):
    """``obj.path_values(path)`` for a nondecreasing path from gamma = 0 (or any path of a fresh
    objective), compiled (the same values); None when not applicable. The estimator keeps no
    path cache: a later ``reset`` evaluates its point by the kernel (the same numbers)."""
    if _load() is False:
        return None
    path = np.asarray(path)
    if not eligible(obj, fresh=bool(path[0].any())):
        return None
    if path.shape[0] > 1 and np.any(np.diff(path, axis=0) < 0):
        return None
    return _path_values(obj, _setup(obj), path, None)[0]


def search(obj, chunk=8, path_values=None):
    """``draft_search.greedy_search(obj, path_values)`` compiled; None when not applicable.

    Without ``path_values`` phase 1 replays the lazy chunks of ``_lazy_phase1`` (the objective
    must be fresh); with them (``budget`` passes the whole uniform path's values) phase 2 starts
    from their stop point, whose per-sample T_comm the kernel gives (as ``reset`` does).
    """
    nb = _load()
    if nb is False or not eligible(obj, fresh=path_values is None):
        return None
    from .draft_search import SearchResult, _phase1_stop, uniform_path

    setup = _setup(obj)
    runs = setup[4]
    ev0 = obj.evaluations
    path = uniform_path(obj.caps)
    if path_values is not None:
        c = _phase1_stop(np.asarray(path_values))
        gamma = path[c].astype(np.int64).copy()
        t = np.asarray(obj.tcomm.kernel(runs < gamma[None, :], np.arange(runs.shape[0])),
                       dtype=float).copy()
    else:
        # phase 1: the lazy chunks of ``_lazy_phase1``, each a ``SAATcomm.path_mean``
        vals, table = _path_values(obj, setup, path[:chunk + 1], None)
        vals, offset = list(vals), 0
        while len(vals) < len(path) and all(vals[i + 1] > vals[i] for i in range(len(vals) - 1)):
            first = len(vals) - 1
            seg = path[first:len(vals) + chunk // 2 + 1]
            v, table = _path_values(obj, setup, seg, table[first - offset])   # T at its start
            offset = first
            vals.extend(v[1:])
        c = _phase1_stop(np.array(vals))
        gamma = path[c].astype(np.int64).copy()
        t = table[c - offset].copy()
    value, evals, steps = _phase2(obj, setup, gamma, t)
    obj.evaluations += evals
    obj.gamma, obj.value = gamma.copy(), value
    return SearchResult(gamma.copy(), value, obj.evaluations - ev0,
                        {"phase1": int(c), "phase2_steps": steps})


def _phase2(obj, setup, gamma, t):
    """Phase 2 from ``gamma`` (updated in place) with per-sample T_comm ``t``: +1 moves with
    the +1 cache (``plus_one_values`` / ``_apply_plus``). Returns (G, evaluations, steps)."""
    from ..model.speculative import expected_tokens

    nb, kern, mode, code, runs, order, ua, va, coin = setup
    m, k = runs.shape
    caps = obj.caps.astype(np.int64)
    top = int(caps.max(initial=0)) + 2
    en = expected_tokens(obj.alpha[:, None], np.arange(top + 1)[None, :])   # (K, top + 1)
    en = np.ascontiguousarray(en, dtype=float)
    w = np.ascontiguousarray(obj._w, dtype=float)
    draft_s = np.ascontiguousarray(obj.draft_s, dtype=float)
    rej = runs < gamma[None, :]
    contrib = np.zeros((k, m))   # the +1 cache, transposed
    rows, devs, r, a, b = nb.initial_pairs(runs, gamma, caps, rej, code, order, ua, va, coin)
    steps, evals = 0, 0
    state = np.zeros(3)  # value, evaluations, stop flag
    while True:
        tv = _times(kern, mode, r, a, b) if rows.size else np.zeros(0)
        rows, devs, r, a, b = nb.step(runs, gamma, caps, rej, t, contrib, rows, devs, tv, en, w,
                                      draft_s, obj.verify_s, code, order, ua, va, coin, state)
        evals += int(state[1])
        if state[2] > 0:
            break
        steps += 1
    return float(state[0]), evals, steps
