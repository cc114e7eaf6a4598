"""Draft control every round: the time of one decision, and runs that decide every round.

Each decision is a full ``controller.lengths(ctx)`` for a fresh round: the SAA draws (M x K
acceptance and coin uniforms), the search, on the paper's default system (K = 20, qwen2.5,
P_dl = 4 P_ul, reactive mode 'optimal') with a new Rayleigh fading block each time.

Runs (``simulate``, default scenario, draft control every round, 1,000 SAA samples) are timed
interleaved against the numpy reference search (``MULTISPIN_NUMBA=0``: what runs without
numba), A B A B ..., with the median of the pairwise ratios.
"""
import contextlib
import functools
import io
import os
import time
from unittest import mock

import numpy as np

from ..engine.population import build_population
from ..engine.streams import RandomStreams
from ..model.fading import channel_gains
from ..policies import DraftContext, make_draft_controller, make_reactive_policy
from ..policies.draft_search import compiled_enabled
from ..scenario import load_scenario
from .abtest import describe, interleaved, quantiles_ms


def decision_times(name, repeat, k=20, samples=1000, mode="optimal", seed=0, warmup=3):
    """Seconds per decision of controller ``name`` over ``repeat`` independent rounds, and the
    draft lengths it chose (repeat, K). ``warmup``: untimed decisions first (0 where the
    process has made such decisions already)."""
    sc = load_scenario(None, overrides={"devices.count": k, "seed": seed + 1})
    system = build_population(sc, RandomStreams(sc.seed).devices).system
    fading = np.random.default_rng(seed)
    stream = np.random.default_rng(seed + 1)
    policy = make_reactive_policy(mode)
    make = functools.partial(make_draft_controller, name, saa_samples=samples,
                             max_draft=sc.policy.max_draft, mode=mode)
    ctl = make()
    active = np.ones(k, dtype=bool)
    # warm-up on streams of its own (the timed decisions stay the same): numba compiles or
    # loads its cache on a process's first decisions, which must not land in the timed loop
    warm = np.random.default_rng([seed, 99])
    warm_ctl = make()
    for r in range(warmup):
        g_ul, g_dl = channel_gains(warm, system.pathloss)
        warm_ctl.lengths(DraftContext(r, system, g_ul, g_dl, active, None, policy, warm))
    out = np.empty(repeat)
    lengths = np.empty((repeat, k), dtype=np.int64)
    for r in range(repeat):
        g_ul, g_dl = channel_gains(fading, system.pathloss)
        ctx = DraftContext(r, system, g_ul, g_dl, active, None, policy, stream)
        t0 = time.perf_counter()
        gamma = ctl.lengths(ctx)
        out[r] = time.perf_counter() - t0
        lengths[r] = gamma
    return out, lengths


def numpy_search():
    """The numpy reference search (the compiled one switched off)."""
    return mock.patch.dict(os.environ, {"MULTISPIN_NUMBA": "0"})


def run_rates(rounds, draft="greedy", samples=1000, pairs=3):
    """Rounds/s of ``simulate`` with draft control every round: compiled vs numpy, interleaved."""
    from ..engine import simulate

    sc = load_scenario(None, overrides={"policy.draft": draft, "policy.draft_update": "every-round",
                                        "policy.saa_samples": samples, "run.rounds": rounds,
                                        "name": "bench-draft"})
    results = {}

    def runner(name, search):
        def run():
            with search(), contextlib.redirect_stderr(io.StringIO()):
                results[name] = simulate(sc).summary
        return run

    compiled, numpy = runner("compiled", contextlib.nullcontext), runner("numpy", numpy_search)
    compiled()   # warm-up (numba compiles or loads its cache once per process)
    res = interleaved(compiled, numpy, pairs)
    a, b = results["compiled"]["goodput_tps"], results["numpy"]["goodput_tps"]
    same = abs(a - b) <= 1e-12 * abs(b)
    print(f"simulate, {rounds:,} rounds, draft {draft} every round ({samples} SAA samples), "
          f"compiled search {'on' if compiled_enabled() else 'NOT AVAILABLE (numpy both)'}; "
          f"same goodput (rtol 1e-12): {same}")
    describe("compiled", "numpy", res, units=rounds)
    return {"rounds": rounds, "compiled_rounds_per_s_wall": rounds / np.median(res["a_wall_s"]),
            "compiled_rounds_per_s_cpu": rounds / np.median(res["a_cpu_s"]),
            "numpy_rounds_per_s_wall": rounds / np.median(res["b_wall_s"]),
            "numpy_rounds_per_s_cpu": rounds / np.median(res["b_cpu_s"]),
            "speedup_wall": res["ratio_wall"], "speedup_cpu": res["ratio_cpu"],
            "same_goodput": same, "pairs": res}


def run(quick=False):
    repeat = 30 if quick else 300
    figures = {}
    for name in ("greedy", "budget", "uniform", "computation-only"):
        reps = repeat if name != "budget" else max(repeat // 3, 10)
        t, _ = decision_times(name, reps)
        figures[f"{name}_decision_K20_M1000"] = {
            **quantiles_ms(f"{name} decision, K = 20, 1,000 SAA samples", t, "decisions", 2),
            "decisions": int(t.size)}
    figures["run_greedy_every_round"] = run_rates(200 if quick else 2_000, "greedy")
    figures["run_budget_every_round"] = run_rates(40 if quick else 400, "budget")
    return figures
