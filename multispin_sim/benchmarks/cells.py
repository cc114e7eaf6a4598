"""Several cells: the cost of the interference between cells (docs/components/cells.md).

Two interleaved A/B comparisons on the scenario of ``scenarios/cells/hex7.yaml`` (hexagonal
grid with wrap-around, ISD 500 m, 20 devices per cell, reuse 1, the optimal split on the last
measured interference):

- throughput: one run of 7 cells against 7 independent single-cell runs of the same size
  (20 devices, each cell's seed), each over the same simulated time (a network serves until
  its slowest cell is done, so a round count would give its cells more work than the single
  runs); the figure is the multi-cell run's throughput over the single cells' (their time over
  its time; target >= 0.25);
- growth: 19 cells against 7 (time ratio; linear growth would be 19 / 7 = 2.71, target
  <= 3.5).

Then the peak traced memory (``tracemalloc``) of one 7-cell and one 19-cell run.
"""
import tempfile
import tracemalloc

from .abtest import describe, interleaved, scenario_run

HEX = {"cells.layout": "hex", "cells.isd_m": 500.0, "cells.reuse": 1, "devices.count": 20}


def _runner(tmp, *overrides):
    """One function running the default scenario with each of ``overrides`` in turn."""
    runs = [scenario_run(tmp, o) for o in overrides]

    def go():
        for run in runs:
            run()
    return go


def _peak_mb(tmp, overrides):
    run = scenario_run(tmp, overrides)
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def run(quick=False):
    from ..engine.cell_plan import cell_seed
    from ..scenario import load_scenario

    horizon = 20.0 if quick else 100.0   # simulated seconds per cell
    pairs = 3 if quick else 5
    span = {"run.rounds": 10**9, "run.max_time_s": horizon}
    cells = {n: {**HEX, "cells.count": n, **span} for n in (7, 19)}
    seed = load_scenario(None).seed
    singles = [{"devices.count": HEX["devices.count"], **span, "seed": cell_seed(seed, c)}
               for c in range(7)]
    figures = {"horizon_s": horizon, "pairs": pairs}
    with tempfile.TemporaryDirectory() as tmp:
        _runner(tmp, cells[7])()   # warm up (imports, compiled kernels)
        res = interleaved(_runner(tmp, *singles), _runner(tmp, cells[7]), pairs)
        describe("7 single cells", "7 cells", res)
        figures["throughput_vs_single_wall"] = 1.0 / res["ratio_wall"]
        figures["throughput_vs_single_cpu"] = 1.0 / res["ratio_cpu"]
        print(f"  7 cells x {HEX['devices.count']} devices: throughput "
              f"{figures['throughput_vs_single_wall']:.2f} (wall), "
              f"{figures['throughput_vs_single_cpu']:.2f} (CPU) of 7 independent single-cell "
              "runs (target >= 0.25)")
        res = interleaved(_runner(tmp, cells[7]), _runner(tmp, cells[19]), pairs)
        describe("7 cells", "19 cells", res)
        figures["cost_19_over_7_wall"] = res["ratio_wall"]
        figures["cost_19_over_7_cpu"] = res["ratio_cpu"]
        print(f"  19 cells: {res['ratio_wall']:.2f}x (wall), {res['ratio_cpu']:.2f}x (CPU) the "
              "cost of 7 (linear 2.71; target <= 3.5)")
        for n in (7, 19):
            figures[f"peak_mb_{n}"] = _peak_mb(tmp, cells[n])
        print(f"  peak traced memory: {figures['peak_mb_7']:.0f} MB (7 cells), "
              f"{figures['peak_mb_19']:.0f} MB (19 cells); {horizon:g} simulated s per cell")
    return figures
