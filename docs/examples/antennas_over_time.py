"""A multi-antenna server when the channel changes during a correction: M = 1, 2 and 4 server
antennas, with the orthogonal schemes (each device on its subband, maximum-ratio beams) and with
a shared band (zero-forcing DL, MMSE UL), under Rayleigh fading with one block per round and with
blocks of 5 ms (``channel.coherence_time_ms``). With blocks, a correction that outlasts its block
continues on the next ones: at each block's array gain G ||h||^2, or at each block's ZF and MMSE
SINRs on a shared band, with the mode and power decided at its start (docs/components/antennas.md).

Printed per run: goodput, the mean correction time and the share of corrections that spanned
several blocks, and the mean of the decisions' array gain over the path loss, E[||h||^2] = M for
i.i.d. Rayleigh elements.

Run it: ``python docs/examples/antennas_over_time.py`` (twelve runs of 200 rounds, a few seconds
each).
"""
import numpy as np

import multispin_sim as ms

SCHEMES = {"orthogonal": ("ofdma-mrt", "ofdma-mrc"), "shared": ("mu-mimo-zf", "mu-mimo-mmse")}


def main(rounds=200, devices=8, antennas=(1, 2, 4), seed=1):
    """Return {(M, scheme, blocks): Result}; blocks is None (one per round) or 5.0 ms."""
    runs = {}
    print(f"{'M':>2} {'scheme':>10} {'blocks':>7} {'goodput':>8} {'T_comm ms':>9} "
          f"{'multi-block':>11} {'E[g]/G':>7}")
    for m in antennas:
        for scheme, (dl, ul) in SCHEMES.items():
            for blocks in (None, 5.0):
                r = ms.simulate(ms.load_scenario(None, overrides={
                    "server.antennas": m, "server.dl_scheme": dl, "server.ul_scheme": ul,
                    "channel.coherence_time_ms": blocks, "devices.count": devices,
                    "run.rounds": rounds, "seed": seed}))
                runs[m, scheme, blocks] = r
                rows = r.device_rounds
                sent = rows["rejected"].astype(bool)
                gain = rows["gain_ul"] / r.devices["pathloss_gain"][rows["device"]]
                delays = r.summary.get("delays") or {}
                multi = delays.get("over_several_blocks", 0) / max(int(sent.sum()), 1)
                print(f"{m:>2} {scheme:>10} {'-' if blocks is None else blocks:>7} "
                      f"{r.summary['goodput_tps']:8.1f} {1e3 * rows['delay_s'][sent].mean():9.2f} "
                      f"{multi:11.2f} {gain.mean():7.2f}")
    return runs


if __name__ == "__main__":
    main()
