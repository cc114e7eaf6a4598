"""Link layer: engine speed of the NR link against the Shannon link, and a study table of
goodput and correction delays for each link and policy.

``run``: engine rounds/s of the default scenario with ``link.model: mcs`` (+ HARQ, stale
quantised CSI) against the Shannon link, measured as interleaved A/B pairs
(``abtest.against``), each run end to end with full records.

``study(rounds, jobs)``: goodput (95% CI) and the median and p99 of the per-correction delay for
shannon, mcs and mcs + HARQ + stale CSI, at DL/UL power ratios 4 and 16, for the optimal split,
all-UL, all-DL and deadline (python -m multispin_sim.benchmarks.link [rounds] [jobs]).
"""
import contextlib
import io
import sys
import tempfile

import numpy as np

from ..scenario import load_scenario
from .abtest import against

LINKS = {
    "shannon": {},
    "mcs": {"link.model": "mcs"},
    # every mcs row has HARQ (up to 4 transmissions, the default); this one adds stale CSI
    "mcs+stale CSI": {"link.model": "mcs", "csi.delay_ms": 5.0, "csi.cqi_quantisation": True,
                      "channel.doppler_hz": 30.0},
}
MODES = ("optimal", "all-ul", "all-dl", "deadline")


def run(quick=False):
    rounds = 1_000 if quick else 5_000
    pairs = 3 if quick else 4
    cases = {"mcs": LINKS["mcs"], "mcs+stale CSI": LINKS["mcs+stale CSI"]}
    with tempfile.TemporaryDirectory() as tmp:
        return against({}, cases, rounds, pairs, tmp, "the Shannon link")


def _one(args):
    from ..engine.simulation import simulate

    link, ratio, mode, rounds, seed = args
    sc = load_scenario(None, overrides={**LINKS[link], "server.dl_power_ratio": ratio,
                                        "policy.mode": mode, "run.rounds": rounds, "seed": seed,
                                        "name": "study"})
    with contextlib.redirect_stderr(io.StringIO()):
        r = simulate(sc)
    d = r.device_rounds
    sent = d["mode"] != ""
    delays = d["delay_s"][sent]
    s = r.summary
    lo, hi = s["goodput_ci95"]
    return (link, ratio, mode, s["goodput_tps"], lo, hi, float(np.median(delays)),
            float(np.quantile(delays, 0.99)), s.get("link", {}).get("harq_failures", 0),
            s.get("link", {}).get("outages", 0))


def study(rounds=2000, jobs=2, seed=1):
    from multiprocessing import Pool

    tasks = [(link, ratio, mode, rounds, seed) for ratio in (4, 16) for link in LINKS
             for mode in MODES]
    with Pool(jobs) as pool:
        rows = pool.map(_one, tasks)
    print("| ratio | link | mode | goodput tok/s (95% CI) | median delay ms | p99 delay ms |")
    print("|---|---|---|---|---|---|")
    for link, ratio, mode, g, lo, hi, med, p99, _, _ in rows:
        print(f"| {ratio} | {link} | {mode} | {g:.1f} ({lo:.1f}-{hi:.1f}) | {med * 1e3:.1f} | "
              f"{p99 * 1e3:.1f} |")
    return rows


if __name__ == "__main__":
    study(int(sys.argv[1]) if len(sys.argv) > 1 else 2000,
          int(sys.argv[2]) if len(sys.argv) > 2 else 2)
