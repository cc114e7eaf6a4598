"""Antennas: engine speed against the number of server antennas M, and greedy draft
control under a shared band.

``run``: for M = 1, 2, 4, 8, 16, 64 and each scheme pair (orthogonal: ``ofdma-mrt`` /
``ofdma-mrc``; shared band: ``mu-mimo-zf`` / ``mu-mimo-mmse``), engine rounds/s of the default
scenario (K = 20, fixed gamma = 4, optimal split, full records formatted in-process) with M
antennas, interleaved with the default M = 1 run (``abtest.against``); then greedy draft control every
round with 1,000 SAA samples under the shared band at M = 4, interleaved with the default
greedy run (M = 1, the compiled closed-form search).
"""
import contextlib
import io
import tempfile

import numpy as np

from .abtest import against, interleaved, scenario_run

ANTENNAS = (1, 2, 4, 8, 16, 64)
PAIRS = {"orthogonal": ("ofdma-mrt", "ofdma-mrc"), "shared": ("mu-mimo-zf", "mu-mimo-mmse")}


def _runner(tmp, overrides, rounds):
    return scenario_run(tmp, {"run.rounds": rounds, **overrides})


def _antennas(m, pair):
    dl, ul = PAIRS[pair]
    return {"server.antennas": m, "server.dl_scheme": dl, "server.ul_scheme": ul}


def run(quick=False):
    rounds = 200 if quick else 1_000
    greedy_rounds = 4 if quick else 12
    pairs = 3
    figures = {"engine": {}, "greedy": None}
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stderr(io.StringIO()):
        print("engine rounds/s with M antennas / the default M = 1:")
        for pair in PAIRS:
            cases = {f"{pair} M={m}": _antennas(m, pair) for m in ANTENNAS}
            figures["engine"].update(against({}, cases, rounds, pairs, tmp, "M = 1"))
        greedy = {"policy.draft": "greedy", "policy.saa_samples": 1000}
        _runner(tmp, greedy, 2)()   # warm: the compiled search of the default
        _runner(tmp, {**greedy, **_antennas(4, "shared")}, 1)()
        res = interleaved(_runner(tmp, greedy, greedy_rounds),
                          _runner(tmp, {**greedy, **_antennas(4, "shared")}, greedy_rounds),
                          pairs)
        rate = greedy_rounds / float(np.median(res["b_wall_s"]))
        cpu_rate = greedy_rounds / float(np.median(res["b_cpu_s"]))
        figures["greedy"] = {"rounds_per_s": rate, "rounds_per_cpu_s": cpu_rate,
                             "m1_rounds_per_s": greedy_rounds / float(np.median(res["a_wall_s"])),
                             "time_ratio_wall": res["ratio_wall"], "time_ratio_cpu": res["ratio_cpu"]}
    print(f"greedy draft control every round, K = 20, 1,000 SAA samples, mu-mimo-zf / "
          f"mu-mimo-mmse at M = 4: {rate:.1f} rounds/s ({cpu_rate:.1f} per CPU s), "
          f"{res['ratio_wall']:.0f}x the time of the default greedy run (M = 1, "
          f"{figures['greedy']['m1_rounds_per_s']:,.0f} rounds/s; {greedy_rounds} rounds per "
          f"run, each run end to end, median of {pairs} interleaved pairs)")
    return figures
