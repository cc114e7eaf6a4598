"""Seven cells instead of one: ``scenarios/cells/hex7.yaml`` (a hexagonal grid, 500 m between
sites, 20 devices per cell, every cell on the whole band) against the same scenario as a single
cell. Per cell: its goodput, its share of UL corrections, and the interference its decisions saw.

The interference is read from the recorded gains. In a cell, ``gain_ul`` / ``gain_dl`` are what
the split and the draft control saw: G_k |h|^2 N0 / (N0 + psi), psi the interference PSD at the
receiver (UL: the cell's server, DL: the device), the SINR of a flat interference floor
(docs/components/cells.md). With Rayleigh fading E[ln |h|^2] = -gamma_E (Euler's constant), so
the mean of ln(gain / G_k) over a cell's device-rounds is -gamma_E - E[ln(1 + psi / N0)]: the
printed (I + N) / N is exp(E[ln(1 + psi / N0)]) in dB, 0 dB for a lone cell. Its standard error
comes from Var[ln |h|^2] = pi^2 / 6 over n device-rounds.

Run it: ``python docs/examples/many_cells.py`` (two runs of 200 rounds, a few seconds).
"""
from pathlib import Path

import numpy as np

import multispin_sim as ms

HEX7 = Path(__file__).resolve().parents[2] / "scenarios" / "cells" / "hex7.yaml"


def interference_db(result, column):
    """{cell: ((I + N) / N in dB, its standard error in dB)} from ``column`` of device_rounds."""
    rows, devices = result.device_rounds, result.devices
    row_cell = rows.get("cell", np.zeros(rows["device"].size, dtype=int))
    dev_cell = devices.get("cell", np.zeros(devices["device"].size, dtype=int))
    pathloss = {(c, d): g for c, d, g in zip(dev_cell, devices["device"], devices["pathloss_gain"])}
    out = {}
    for cell in np.unique(row_cell):
        mine = row_cell == cell
        g = np.array([pathloss[cell, d] for d in rows["device"][mine]])
        log_ratio = np.log(rows[column][mine] / g)
        out[int(cell)] = (-10 * np.log10(np.e) * (log_ratio.mean() + np.euler_gamma),
                          10 * np.log10(np.e) * np.pi / np.sqrt(6 * mine.sum()))
    return out


def main(rounds=200, seed=1, max_time_s=120.0):
    """Return {"cells": Result of hex7, "single": Result of the one-cell run}."""
    runs = {}   # max_time_s bounds a run whose slowest cell meets a deep fade (heavy tails)
    for name, layout in (("cells", "hex"), ("single", "single")):
        runs[name] = ms.simulate(ms.load_scenario(HEX7, overrides={
            "cells.layout": layout, "run.rounds": rounds, "seed": seed,
            "run.max_time_s": max_time_s}))

    print(f"{'':>8} {'goodput':>8} {'UL share':>8} {'UL (I+N)/N':>14} {'DL (I+N)/N':>14}")
    for name, result in runs.items():
        ul, dl = interference_db(result, "gain_ul"), interference_db(result, "gain_dl")
        blocks = result.summary.get("cells") or [dict(result.summary, cell=0)]
        for block in blocks:
            c = block["cell"]
            share = block["ul_corrections"] / (block["ul_corrections"] + block["dl_corrections"])
            label = f"cell {c}" if name == "cells" else "single"
            print(f"{label:>8} {block['goodput_tps']:8.1f} {share:8.2f} "
                  f"{ul[c][0]:6.2f} +-{ul[c][1]:4.2f} dB {dl[c][0]:6.2f} +-{dl[c][1]:4.2f} dB")
    print(f"network: {runs['cells'].summary['goodput_tps']:.1f} tokens/s over 7 cells; "
          f"7 x the lone cell: {7 * runs['single'].summary['goodput_tps']:.1f}")
    return runs


if __name__ == "__main__":
    main()
