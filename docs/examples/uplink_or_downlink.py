"""Uplink or downlink? The paper's question in one table: the goodput of the four mode policies
(all corrections uplink, all downlink, the optimal split, and the random split as a heuristic)
at the DL/UL power ratios 4 and 16, on the default scenario (K = 20, gamma = 4).

Every run has the same seed, so the eight runs see the same device drop, the same fading and
the same acceptance draws (common random numbers): within a ratio the policies differ only in
who corrects which way, and their differences are not luck of the draw. With the paper's one
fading block per round the correction delay is heavy-tailed, so the median correction time is
printed beside the goodput (whose 95% interval is wide: docs/background/heavy-tails.md).

Run it: ``python docs/examples/uplink_or_downlink.py`` (8 runs of 2,000 rounds, a few seconds).
"""
import multispin_sim as ms

MODES = ("all-ul", "all-dl", "optimal", "random")
RATIOS = (4, 16)


def main(rounds=2000, devices=20, seed=7):
    """Run every mode at every ratio; return {(ratio, mode): Result}."""
    results = {}
    for ratio in RATIOS:
        for mode in MODES:
            scenario = ms.load_scenario(None, overrides={
                "policy.mode": mode, "server.dl_power_ratio": ratio,
                "devices.count": devices, "run.rounds": rounds, "seed": seed})
            results[ratio, mode] = ms.simulate(scenario)

    print(f"goodput (tokens/s) and median correction time, K = {devices}, {rounds} rounds, "
          f"seed {seed}")
    print(f"{'P_dl/P_ul':>9}  {'policy':<8} {'goodput':>8}  {'95% CI':>17}  "
          f"{'UL share':>8}  {'median T_comm':>13}")
    for (ratio, mode), result in results.items():
        s = result.summary
        lo, hi = s["goodput_ci95"]
        corrections = s["ul_corrections"] + s["dl_corrections"]
        ul_share = s["ul_corrections"] / corrections if corrections else float("nan")
        print(f"{ratio:>9}  {mode:<8} {s['goodput_tps']:8.1f}  [{lo:7.1f}, {hi:7.1f}]  "
              f"{ul_share:8.2f}  {1e3 * s['comm_s']['median']:10.1f} ms")
    for ratio in RATIOS:
        best = results[ratio, "optimal"].summary["goodput_tps"]
        gains = ", ".join(f"{best / results[ratio, m].summary['goodput_tps'] - 1:+.0%} over {m}"
                          for m in MODES if m != "optimal")
        print(f"ratio {ratio}: the optimal split {gains}")
    return results


if __name__ == "__main__":
    main()
