"""What an estimated channel costs a multi-antenna server: M = 1 and 4 server antennas, exact
CSI and an MMSE estimate with error variance s2 = 0.3 (``csi.estimation_error_variance``), on
Shannon's link and on the NR link (``link.model: mcs``: CQI/MCS, HARQ). The decisions see the
estimate; each correction meets the true channel through the maximum-ratio beam of its estimate,
and on the NR link adapts its MCS to the estimate's report (docs/components/csi.md,
docs/components/antennas.md).

Printed per run: goodput, the mean correction phase of a round, and the mean of the decisions'
array gain over the path loss: each element of the estimate has variance 1 - s2, so
E[||h_hat||^2] = M (1 - s2) for i.i.d. Rayleigh elements.

Run it: ``python docs/examples/estimated_channel.py`` (eight runs of 300 rounds, a few seconds
each).
"""
import itertools

import multispin_sim as ms


def main(rounds=300, devices=8, antennas=(1, 4), errors=(0.0, 0.3), seed=1):
    """Return {(link, M, s2): Result}."""
    runs = {}
    print(f"{'link':>7} {'M':>2} {'s2':>4} {'goodput':>8} {'T_comm ms':>9} {'E[g]/G':>7}")
    for link, m, s2 in itertools.product(("shannon", "mcs"), antennas, errors):
        scenario = ms.load_scenario(None, overrides={
            "link.model": link, "server.antennas": m, "csi.estimation_error_variance": s2,
            "devices.count": devices, "run.rounds": rounds, "seed": seed})
        r = runs[link, m, s2] = ms.simulate(scenario)
        seen = r.device_rounds["gain_ul"] / r.devices["pathloss_gain"][r.device_rounds["device"]]
        print(f"{link:>7} {m:>2} {s2:4.1f} {r.summary['goodput_tps']:8.1f} "
              f"{1e3 * r.rounds['comm_s'].mean():9.2f} {seen.mean():7.2f}")
    return runs


if __name__ == "__main__":
    main()
