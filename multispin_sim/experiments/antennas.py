"""The reactive trade-off against the number of server antennas (docs/components/antennas.md).

``mode_study``: for one scenario (K devices, a DL/UL power ratio), M antennas and a DL/UL scheme
pair, draws channel states from the engine's own antenna source (i.i.d. Rayleigh, the paper's
path loss of the scenario's devices) and rejected sets from the devices' acceptance (draft
length gamma: rejected with probability 1 - alpha^gamma), and evaluates the reactive policies
on each outcome with the engine's components: the UL share of corrections, T_comm of every
policy, and how often the paper's prefix split is optimal (against ``exhaustive`` with
``exhaustive=True``, else against ``local-search``), both as 'optimal' applies it (every prefix
evaluated under the scheme) and naively (the split computed as if the links were orthogonal on
the array gains, then sent under the scheme).

``greedy_goodput``: goodput of one run with greedy draft control (the engine's speed with M
antennas is ``multispin-sim bench antennas``).
``ul_power_study``: UL powers below full under MMSE, the grid's brute force against
coordinate descent (``server.ul_power``).

``python -m multispin_sim.experiments.antennas`` prints these studies' tables.
"""
import argparse
import dataclasses
import itertools
import json
import math

import numpy as np

from ..engine.population import build_population
from ..engine.simulation import simulate
from ..engine.streams import RandomStreams
from ..model.antennas import ServerArray
from ..model.mimo import Transmission
from ..model.mimo_batch import mmse_sinr_stack
from ..model.reactive import (UL, ReactiveProblem, all_dl, all_ul, evaluate_assignment,
                              exhaustive_split, optimal_split)
from ..scenario import load_scenario

PAIRS = (("ofdma-mrt", "ofdma-mrc"), ("mu-mimo-zf", "ofdma-mrc"),
         ("ofdma-mrt", "mu-mimo-mmse"), ("mu-mimo-zf", "mu-mimo-mmse"))
ANTENNAS = (1, 2, 4, 8, 16, 64)


def _local(problem):
    return problem.local_search() if problem.multi_user else optimal_split(problem)


def _drop(k, antennas, seed, correlation=0.0, overrides=None):
    """The default scenario's drop of ``k`` devices (the engine's streams of ``seed``): its
    system, the server array, the array's i.i.d. Rayleigh source and the acceptance stream."""
    sc = load_scenario(None, overrides={"devices.count": k, **(overrides or {}), "seed": seed})
    st = RandomStreams(seed)
    system = build_population(sc, st.devices, st.topology, st.shadowing).system
    array = ServerArray(antennas, correlation)
    source = array.rounds("rayleigh", st.fading, k, True, 0.0, block=64)
    return system, array, source, st.acceptance


def mode_study(k=20, antennas=4, dl="ofdma-mrt", ul="ofdma-mrc", power_ratio=4.0,
               outcomes=300, gamma=4, seed=1, exhaustive=False, zf_groups="fewest",
               correlation=0.0):
    """Means over ``outcomes`` outcomes (channel state and rejected set) of one configuration."""
    system, array, source, rng = _drop(k, antennas, seed, correlation,
                                       {"server.dl_power_ratio": power_ratio})
    transmission = Transmission(antennas, dl, ul, zf_groups)
    system = dataclasses.replace(system, transmission=transmission
                                 if transmission.multi_user else None)
    p_reject = 1.0 - system.alpha ** gamma
    rows = []
    for _ in range(outcomes):
        g, _ = array.gains(system.pathloss, *source.round_powers(0.0), True)
        rejected = rng.random(k) < p_reject
        if not rejected.any():
            continue
        problem = system.reactive_problem(rejected, g, g)
        pre = optimal_split(problem)
        # the paper's split computed on the array gains as if the links were orthogonal, then
        # sent under the scheme
        flat = ReactiveProblem(rejected, np.asarray(g), np.asarray(g), system.p_ul_w,
                               system.p_dl_w, system.payload_bits, system.bandwidth_hz,
                               system.n0)
        naive = evaluate_assignment(problem, optimal_split(flat).mode == UL)
        best = exhaustive_split(problem) if exhaustive else _local(problem)
        row = dict(prefix=pre.t_comm[0], naive=naive.t_comm[0], best=best.t_comm[0],
                   all_ul=all_ul(problem).t_comm[0], all_dl=all_dl(problem).t_comm[0],
                   n_ul=int(best.n_ul[0]), n=int(rejected.sum()))
        if exhaustive:
            row["local"] = _local(problem).t_comm[0]
        rows.append(row)
    t = {key: np.array([r[key] for r in rows]) for key in rows[0]}
    out = {
        "k": k, "antennas": antennas, "dl": dl, "ul": ul, "zf_groups": zf_groups,
        "correlation": correlation,
        "power_ratio": power_ratio,
        "outcomes": len(rows),
        "ul_share": float(t["n_ul"].sum() / t["n"].sum()),
        "mean_t_best_ms": float(t["best"].mean() * 1e3),
        "median_t_best_ms": float(np.median(t["best"]) * 1e3),
        # gains of the best split: mean over outcomes of T_baseline / T_best
        "gain_over_all_ul": float(np.mean(t["all_ul"] / t["best"])),
        "gain_over_all_dl": float(np.mean(t["all_dl"] / t["best"])),
        "prefix_optimal": float(np.mean(t["prefix"] <= t["best"] * (1 + 1e-9))),
        "prefix_excess": float(np.mean(t["prefix"] / t["best"]) - 1.0),
        "naive_optimal": float(np.mean(t["naive"] <= t["best"] * (1 + 1e-9))),
        "naive_excess": float(np.mean(t["naive"] / t["best"]) - 1.0),
    }
    if exhaustive:
        out["local_optimal"] = float(np.mean(t["local"] <= t["best"] * (1 + 1e-9)))
    return out


def ul_power_study(n=4, antennas=2, levels=8, outcomes=200, seed=1, k=20):
    """Does a UL power below full help under MMSE? For ``outcomes`` channel states (the default
    drop of ``k`` devices, i.i.d. Rayleigh) and n devices drawn from it, all correcting on UL
    (the band B shared by the n, |R| = n): T_UL at full power against the best of every power
    vector on the grid P_ul 2^-j, j < ``levels`` (brute force, levels^n vectors) and against
    coordinate descent on that grid from full power (each device in turn, its best level, until
    a pass changes nothing). Returns the fraction of outcomes a lower power helps, the mean and
    largest gain of the grid optimum (T_full / T_grid - 1), and how often coordinate descent
    finds the grid optimum."""
    system, array, source, rng = _drop(k, antennas, seed)
    p_max = np.broadcast_to(np.asarray(system.p_ul_w, dtype=float), (k,))
    grid = 2.0 ** -np.arange(levels)
    band = float(system.bandwidth_hz)
    noise = system.n0 * band

    def t_ul(a, powers):      # powers (V, n) -> T_UL (V,)
        sinr = mmse_sinr_stack(np.broadcast_to(a, (len(powers),) + a.shape), powers,
                               np.full(len(powers), noise))
        return np.max(system.payload_bits / (band * np.log2(1 + sinr)), axis=1)

    combos = np.array(list(itertools.product(range(levels), repeat=n)))
    helps, gains, cd_hits = 0, [], 0
    for _ in range(outcomes):
        g, _ = array.gains(system.pathloss, *source.round_powers(0.0), True)
        idx = np.sort(rng.choice(k, n, replace=False))
        a, pm = g.vectors[idx], p_max[idx]
        full = float(t_ul(a, pm[None])[0])
        t_all = t_ul(a, pm[None, :] * grid[combos])
        best = float(t_all.min())
        level = np.zeros(n, dtype=int)
        t_cd = full
        while True:
            moved = False
            for j in range(n):
                trial = np.repeat(level[None], levels, axis=0)
                trial[:, j] = np.arange(levels)
                t = t_ul(a, pm[None, :] * grid[trial])
                if t.min() < t_cd * (1 - 1e-12):
                    level, t_cd, moved = trial[int(np.argmin(t))], float(t.min()), True
            if not moved:
                break
        helps += best < full * (1 - 1e-12)
        gains.append(full / best - 1.0)
        cd_hits += t_cd <= best * (1 + 1e-12)
    return {"n": n, "antennas": antennas, "levels": levels, "outcomes": outcomes,
            "lower_power_helps": helps / outcomes, "mean_gain": float(np.mean(gains)),
            "max_gain": float(np.max(gains)), "descent_finds_grid_optimum": cd_hits / outcomes}


def greedy_goodput(antennas, dl="ofdma-mrt", ul="ofdma-mrc", draft="greedy", k=20, rounds=40,
                   samples=200, seed=3):
    """Goodput and mean draft length of one engine run with draft control ``draft``."""
    r = simulate(load_scenario(None, overrides={
        "devices.count": k, "run.rounds": rounds, "policy.draft": draft,
        "policy.saa_samples": samples, "server.antennas": antennas, "server.dl_scheme": dl,
        "server.ul_scheme": ul, "seed": seed}))
    return {"antennas": antennas, "dl": dl, "ul": ul, "draft": draft,
            "goodput_tps": r.summary["goodput_tps"],
            "mean_draft": float(np.mean(r.device_rounds["draft_len"]))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--outcomes", type=int, default=300)
    ap.add_argument("--k-exhaustive", type=int, default=8)
    ap.add_argument("--part", choices=("modes", "prefix", "greedy", "correlation", "ulpower"),
                    default="modes")
    ap.add_argument("--zf-groups", choices=("fewest", "best"), default="fewest")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    rows = []

    def emit(row, rounded=False):
        """Keep the row (for --json) and print it (its floats to 4 decimals with ``rounded``)."""
        rows.append(row)
        print(json.dumps({x: (round(y, 4) if rounded and isinstance(y, float) and math.isfinite(y)
                              else y) for x, y in row.items()}), flush=True)

    if a.part == "greedy":   # the docs' table: 40 rounds, N_SAA 200 (shared band: 20, 100)
        for dl, ul in PAIRS[::3]:
            shared = dl != "ofdma-mrt"
            for m in ANTENNAS:
                for draft in ("greedy", "fixed"):
                    emit(greedy_goodput(m, dl, ul, draft, rounds=20 if shared else 40,
                                        samples=100 if shared else 200))
    elif a.part == "correlation":   # M = 8, ratio 4: spatial correlation rho
        for dl, ul in PAIRS:
            for rho in (0.0, 0.5, 0.9, 0.99):
                emit(mode_study(20, 8, dl, ul, 4.0, a.outcomes, zf_groups=a.zf_groups,
                                correlation=rho))
    elif a.part == "ulpower":   # tiny instances: the grid's brute force is levels^n
        for m, n in ((1, 3), (2, 3), (2, 4), (4, 4), (4, 5)):
            emit(ul_power_study(n, m, outcomes=a.outcomes))
    else:
        for ratio in (4.0, 16.0):
            for dl, ul in PAIRS:
                if a.zf_groups != "fewest" and dl != "mu-mimo-zf":
                    continue
                for m in ANTENNAS:
                    emit(mode_study(a.k_exhaustive if a.part == "prefix" else 20, m, dl, ul,
                                    ratio, a.outcomes, exhaustive=a.part == "prefix",
                                    zf_groups=a.zf_groups), rounded=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
