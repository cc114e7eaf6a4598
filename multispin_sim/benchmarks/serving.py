"""Asynchronous vs synchronous engine speed on the same scenario (interleaved A/B).

The default scenario (K = 20, saturated, fixed gamma = 4): runs A (synchronous) and B
(asynchronous, ``immediate``) alternate A B A B ...; each reports rounds (batches) per second of
wall time and device-drafts per second; the figure is the median of the pairwise ratios B / A
(robust to the load of a shared machine).
"""
import statistics
import time

from ..scenario import load_scenario


def _one(protocol, rounds):
    from ..engine import simulate

    scenario = load_scenario(None, overrides=[f"serving.protocol={protocol}",
                                              f"run.rounds={rounds}"])
    t0 = time.perf_counter()
    result = simulate(scenario)
    wall = time.perf_counter() - t0
    s = result.summary
    return s["rounds"] / wall, s["device_rounds"] / wall


def run(quick=False):
    rounds = 200 if quick else 2000
    pairs = 2 if quick else 5
    sync, asyn = [], []
    for _ in range(pairs):
        sync.append(_one("synchronous", rounds))
        asyn.append(_one("asynchronous", rounds))
    ratio_rounds = statistics.median(b[0] / a[0] for a, b in zip(sync, asyn))
    ratio_drafts = statistics.median(b[1] / a[1] for a, b in zip(sync, asyn))
    figures = {
        "rounds": rounds, "pairs": pairs,
        "sync_rounds_per_s": statistics.median(a[0] for a in sync),
        "async_batches_per_s": statistics.median(b[0] for b in asyn),
        "sync_device_drafts_per_s": statistics.median(a[1] for a in sync),
        "async_device_drafts_per_s": statistics.median(b[1] for b in asyn),
        "ratio_batches_per_round": ratio_rounds, "ratio_device_drafts": ratio_drafts,
    }
    print(f"  synchronous:  {figures['sync_rounds_per_s']:,.0f} rounds/s, "
          f"{figures['sync_device_drafts_per_s']:,.0f} device-drafts/s")
    print(f"  asynchronous: {figures['async_batches_per_s']:,.0f} batches/s, "
          f"{figures['async_device_drafts_per_s']:,.0f} device-drafts/s")
    print(f"  async / sync (median of {pairs} interleaved pairs): batches/rounds "
          f"{ratio_rounds:.2f}x, device-drafts {ratio_drafts:.2f}x")
    return figures
