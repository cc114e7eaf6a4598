"""Interleaved A/B timing: a busy machine slows A and B alike, so their ratio stays honest.

``interleaved(a, b, pairs)`` runs A B, B A, A B, ... (at least 3 pairs; the order alternates so
neither side always runs second), times each run by wall clock and by this process's CPU time
(children included: a forked writer counts), and reports the median of the pairwise ratios.
``scenario_run`` makes a run of the default scenario with overrides to time; ``against``
compares the engine's speed on several such variants with a base one.
"""
import contextlib
import io
import itertools
import resource
import shutil
import time
from unittest import mock

import numpy as np

from ..errors import RECEIVED


def stop_if_signalled():
    """A stop signal that a run inside a benchmark took as its own (the run stopped early,
    ``complete: false``) stops the benchmark too: its timing would be of a cut run."""
    if RECEIVED:
        raise KeyboardInterrupt


def timed(fn):
    """(wall s, CPU s) of ``fn()`` (CPU: user + system, this process and its children).
    The folders of the scenario runs ``fn`` made are removed once it is timed: a run's CSVs are
    tens of MB, and kept they pile up dirty pages that the kernel writes back during the later
    runs (here the 8th run of 10,000 rounds in a row took up to 1.25x the first), which would
    time the disk, not the code."""
    def children():
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    t0, c0, k0 = time.perf_counter(), time.process_time(), children()
    fn()
    cpu = time.process_time() - c0 + children() - k0
    wall = time.perf_counter() - t0
    while _WRITTEN:
        shutil.rmtree(_WRITTEN.pop(), ignore_errors=True)
    stop_if_signalled()
    return wall, cpu


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


def quantiles_ms(label, t, what="repetitions", digits=3):
    """Print and return the median and 95th percentile, in ms, of the times ``t`` (s)."""
    med, p95 = np.median(t) * 1e3, np.quantile(t, 0.95) * 1e3
    print(f"{label}: median {med:.{digits}f} ms, p95 {p95:.{digits}f} ms ({t.size} {what})")
    return {"median_ms": float(med), "p95_ms": float(p95)}


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


_RUNS = itertools.count()   # a fresh output folder for every run
_WRITTEN = []               # the folders of runs not yet timed (``timed`` removes them)


def scenario_run(folder, overrides=None):
    """A function running the default scenario with ``overrides`` end to end, into a fresh
    folder under ``folder`` each time (removed once ``timed``); it keeps the run's summary
    (``.summary``). The run's own warnings (a deep-fade round in a short run) are not
    benchmark output."""
    from ..engine.simulation import simulate
    from ..scenario import load_scenario

    scenario = load_scenario(None, overrides={"name": "bench", **(overrides or {})})

    def run():
        out = f"{folder}/run{next(_RUNS)}"
        _WRITTEN.append(out)
        with contextlib.redirect_stderr(io.StringIO()):
            run.summary = simulate(scenario, out=out).summary
    return run


def records_in_process():
    """Runs format their CSV records in this process (no forked writer): one core each."""
    from ..engine import simulation

    return mock.patch.object(simulation, "WRITER_PROCESS_MIN_ROWS", float("inf"))


def against(base, cases, rounds, pairs, folder, base_name="the base"):
    """Engine rounds/s of each case (name -> overrides, on top of ``base``) relative to the
    ``base`` overrides: the default scenario, ``rounds`` rounds end to end, interleaved pairs,
    records formatted in-process (``records_in_process``: a run with fewer device rows would
    otherwise format on one core where the other hands them to a second). Prints a line a
    case; returns name -> rounds_per_s, base_rounds_per_s, ratio (of rounds/s, wall) and
    ratio_cpu."""
    base_run = scenario_run(folder, {**base, "run.rounds": rounds})
    scenario_run(folder, {**base, "run.rounds": min(rounds, 200)})()   # warm: imports, caches
    figures = {}
    for name, overrides in cases.items():
        with records_in_process():
            res = interleaved(base_run, scenario_run(folder, {**base, **overrides,
                                                              "run.rounds": rounds}), pairs)
        figures[name] = fig = {
            "rounds_per_s": rounds / float(np.median(res["b_wall_s"])),
            "base_rounds_per_s": rounds / float(np.median(res["a_wall_s"])),
            "ratio": 1.0 / res["ratio_wall"], "ratio_cpu": 1.0 / res["ratio_cpu"]}
        print(f"  {name:38s} {fig['rounds_per_s']:8,.0f} rounds/s: {fig['ratio']:.2f} of "
              f"{base_name} ({fig['base_rounds_per_s']:,.0f}; CPU {fig['ratio_cpu']:.2f}), median "
              f"of {res['pairs']} interleaved pairs", flush=True)
    print(f"  ({rounds:,} rounds a run, end to end, full records formatted in-process)")
    return figures
