"""Requests instead of always-busy devices: one device receives Poisson requests of 64 tokens;
its mean latency (arrival to completion) and the share of requests meeting a time-to-first-token
SLO of 1 s, against the arrival rate, beside the M/G/1 Pollaczek-Khinchine mean.

The reference applies exactly in this setting (``scenarios/queueing-one-device.yaml``,
docs/model.md section 10): one device, rounds of a fixed length tau = 50 ms (4 drafted tokens of
5 ms, 30 ms of verification, and a two-entry vocabulary that makes every correction take
nanoseconds, no fading), so a request's service time is S = tau R, R the rounds it takes to
produce 64 tokens at alpha = 0.8, gamma = 4 (the renewal moments of ``round_count_moments``);
requests queue FIFO. The simulated mean carries
the run's batch-means 95% interval; at high load a run of this length is short for it
(docs/guide/outputs.md), so expect a wider gap there.

Run it: ``python docs/examples/queueing.py`` (3 runs of 1,000 simulated seconds, a few seconds).
"""
from pathlib import Path

import multispin_sim as ms
from multispin_sim.model.queueing import pollaczek_khinchine, round_count_moments

ALPHA, GAMMA, LENGTH, TAU = 0.8, 4, 64, 0.05
ONE_DEVICE = Path(__file__).resolve().parents[2] / "scenarios" / "queueing-one-device.yaml"


def main(duration_s=1000.0, loads=(0.2, 0.5, 0.8), seed=1):
    """Return one dict per load: rate, rho, the run's requests summary and the P-K mean."""
    r1, r2 = round_count_moments(ALPHA, GAMMA, LENGTH)   # E[R], E[R^2]
    rows = []
    for rho in loads:
        rate = rho / (TAU * r1)
        result = ms.simulate(ms.load_scenario(ONE_DEVICE, overrides={
            "workload.rate_per_s": rate, "run.max_time_s": duration_s, "serving.slo_ttft_s": 1.0,
            "seed": seed}))
        _, sojourn = pollaczek_khinchine(rate, TAU * r1, TAU**2 * r2)
        rows.append({"rate": rate, "rho": rho, "requests": result.summary["requests"],
                     "pk_s": sojourn})

    print(f"one device, tau = {1e3 * TAU:.0f} ms, E[S] = {TAU * r1:.3f} s, "
          f"{duration_s:.0f} s per load")
    print(f"{'rate (1/s)':>10} {'rho':>4} {'done':>5} {'latency (s)':>11} {'95% CI':>16} "
          f"{'P-K':>6} {'TTFT p90':>8} {'SLO met':>7}")
    for row in rows:
        req = row["requests"]
        lat, (lo, hi) = req["latency_s"]["mean"], req["latency_s"]["ci95"]
        print(f"{row['rate']:10.3f} {row['rho']:4.1f} {req['completed']:5d} {lat:11.3f} "
              f"[{lo:6.3f}, {hi:6.3f}] {row['pk_s']:6.3f} "
              f"{req['slo']['ttft_s']['p90']:8.3f} {req['slo']['attainment']:7.1%}")
    return rows


if __name__ == "__main__":
    main()
