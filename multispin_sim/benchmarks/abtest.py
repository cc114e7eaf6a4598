"""Interleaved A/B timing: a busy machine slows A and B alike, so their ratio stays honest.

``interleaved(a, b, pairs)`` runs A B, B A, A B, ... (at least 3 pairs; the order alternates so
neither side always runs second), times each run by wall clock and by this process's CPU time
(children included: a forked writer counts), and reports the median of the pairwise ratios.
"""
import resource
import time

import numpy as np

from ..errors import RECEIVED


def stop_if_signalled():
    """A stop signal that a run inside a benchmark took as its own (the run stopped early,
    ``complete: false``) stops the benchmark too: its timing would be of a cut run."""
    if RECEIVED:
        raise KeyboardInterrupt

def timed(fn):
    """(wall s, CPU s) of ``fn()`` (CPU: user + system, this process and its children)."""
    def children():
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    t0, c0, k0 = time.perf_counter(), time.process_time(), children()
    fn()
    cpu = time.process_time() - c0 + children() - k0
    stop_if_signalled()
    return time.perf_counter() - t0, cpu


def interleaved(a, b, pairs=3):
    """Time ``a`` and ``b`` alternately; returns per-pair times and the median ratios b / a
    (how many times longer b takes than a; for rates: a's rate over b's)."""
    pairs = max(3, int(pairs))
    ta, tb = [], []
    for i in range(pairs):
        if i % 2 == 0:
            ta.append(timed(a))
            tb.append(timed(b))
        else:
            tb.append(timed(b))
            ta.append(timed(a))
    ta, tb = np.array(ta), np.array(tb)
    return {
        "pairs": pairs,
        "a_wall_s": ta[:, 0].tolist(), "a_cpu_s": ta[:, 1].tolist(),
        "b_wall_s": tb[:, 0].tolist(), "b_cpu_s": tb[:, 1].tolist(),
        "ratio_wall": float(np.median(tb[:, 0] / ta[:, 0])),
        "ratio_cpu": float(np.median(tb[:, 1] / ta[:, 1])),
    }


def describe(label_a, label_b, res, units=None):
    """Lines: each side's median wall and CPU time (or rate), then the ratio and every pair."""
    def side(name, wall, cpu):
        wall, cpu = np.median(wall), np.median(cpu)
        if units:
            return f"  {name}: {units / wall:,.0f} /s wall, {units / cpu:,.0f} /s CPU (median)"
        return f"  {name}: {wall * 1e3:,.1f} ms wall, {cpu * 1e3:,.1f} ms CPU (median)"
    pairs = ", ".join(f"{b / a:.2f}" for a, b in zip(res["a_wall_s"], res["b_wall_s"]))
    lines = [side(label_a, res["a_wall_s"], res["a_cpu_s"]),
             side(label_b, res["b_wall_s"], res["b_cpu_s"]),
             f"  time {label_b} / {label_a}: {res['ratio_wall']:.2f} wall, {res['ratio_cpu']:.2f} "
             f"CPU (median of {res['pairs']} interleaved pairs; wall per pair: {pairs})"]
    print("\n".join(lines))
    return lines
