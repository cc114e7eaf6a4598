"""Time of one draft-length decision (K = 20, 1,000 SAA samples) and of a run that decides
every round.

Each decision is a full ``controller.lengths(ctx)`` for a fresh round: the SAA draws (M x K
acceptance and coin uniforms), the search, on the paper's default system (K = 20, qwen2.5,
P_dl = 4 P_ul, reactive mode 'optimal') with a new Rayleigh fading block each time.
"""
import time

import numpy as np

from ..engine.population import build_population
from ..engine.streams import RandomStreams
from ..model.fading import channel_gains
from ..policies import DraftContext, make_draft_controller, make_reactive_policy
from ..scenario import load_scenario


def _report(label, t):
    med, p95 = np.median(t) * 1e3, np.quantile(t, 0.95) * 1e3
    print(f"{label}: median {med:.2f} ms, p95 {p95:.2f} ms ({t.size} decisions)")
    return {"median_ms": float(med), "p95_ms": float(p95), "decisions": int(t.size)}


def decision_times(name, repeat, k=20, samples=1000, mode="optimal", seed=0):
    """Seconds per decision of controller ``name`` over ``repeat`` independent rounds."""
    sc = load_scenario(None, overrides={"devices.count": k, "seed": seed + 1})
    system = build_population(sc, RandomStreams(sc.seed).devices).system
    fading = np.random.default_rng(seed)
    stream = np.random.default_rng(seed + 1)
    policy = make_reactive_policy(mode)
    ctl = make_draft_controller(name, saa_samples=samples, max_draft=sc.policy.max_draft, mode=mode)
    active = np.ones(k, dtype=bool)
    out = np.empty(repeat)
    lengths = np.empty(repeat)
    for r in range(repeat):
        g_ul, g_dl = channel_gains(fading, system.pathloss)
        ctx = DraftContext(r, system, g_ul, g_dl, active, None, policy, stream)
        t0 = time.perf_counter()
        gamma = ctl.lengths(ctx)
        out[r] = time.perf_counter() - t0
        lengths[r] = gamma.mean()
    return out, lengths


def run_time(rounds, draft="greedy", samples=1000):
    """Wall time of ``simulate`` for the default scenario with draft control every round."""
    from ..engine import simulate

    sc = load_scenario(None, overrides={"policy.draft": draft, "policy.draft_update": "every-round",
                                        "policy.saa_samples": samples, "run.rounds": rounds,
                                        "name": "bench-draft"})
    t0 = time.perf_counter()
    result = simulate(sc)
    wall = time.perf_counter() - t0
    s = result.summary
    print(f"simulate, {rounds:,} rounds, draft {draft} every round ({samples} SAA samples): "
          f"{wall:.1f} s wall ({rounds / wall:,.0f} rounds/s), goodput {s['goodput_tps']:.1f} "
          f"tokens/s, mean draft length {s['mean_draft_len']:.2f}")
    return {"rounds": rounds, "wall_s": wall, "rounds_per_s": rounds / wall,
            "goodput_tps": s["goodput_tps"], "mean_draft_len": s["mean_draft_len"]}


def run(quick=False):
    repeat = 30 if quick else 300
    figures = {}
    for name in ("greedy", "budget", "uniform", "computation-only"):
        reps = repeat if name != "budget" else max(repeat // 3, 10)
        t, _ = decision_times(name, reps)
        figures[f"{name}_decision_K20_M1000"] = _report(
            f"{name} decision, K = 20, 1,000 SAA samples", t)
    figures["run_greedy_every_round"] = run_time(500 if quick else 10_000, "greedy")
    figures["run_budget_every_round"] = run_time(100 if quick else 1_000, "budget")
    return figures


if __name__ == "__main__":  # pragma: no cover
    run()
