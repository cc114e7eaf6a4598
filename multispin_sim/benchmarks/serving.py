"""Asynchronous vs synchronous engine speed on the same scenario (interleaved A/B).

The default scenario (K = 20, saturated, fixed gamma = 4): runs A (synchronous) and B
(asynchronous, ``immediate``) alternate (``abtest.interleaved``); the figures are batches per
second over rounds per second and device-drafts per second over the same, as medians of the
pairwise ratios (robust to the load of a shared machine).
"""
import tempfile

from .abtest import describe, interleaved, scenario_run


def run(quick=False):
    rounds = 200 if quick else 2000
    pairs = 3 if quick else 5
    with tempfile.TemporaryDirectory() as tmp:
        sync, asyn = (scenario_run(tmp, {"serving.protocol": protocol, "run.rounds": rounds})
                      for protocol in ("synchronous", "asynchronous"))
        sync()   # warm
        res = interleaved(sync, asyn, pairs)
    # both runs draw the same numbers every time (one seed): drafts per record are fixed
    per_round = sync.summary["device_rounds"] / sync.summary["rounds"]
    per_batch = asyn.summary["device_rounds"] / asyn.summary["rounds"]
    batches = 1.0 / res["ratio_wall"]
    drafts = batches * per_batch / per_round
    describe("synchronous", "asynchronous", res, units=rounds)
    print(f"  async / sync (median of {res['pairs']} interleaved pairs): batches/rounds "
          f"{batches:.2f}x, device-drafts {drafts:.2f}x ({per_batch:.1f} drafts a batch, "
          f"{per_round:.1f} a round)")
    return {"rounds": rounds, "pairs": res, "ratio_batches_per_round": batches,
            "ratio_device_drafts": drafts, "drafts_per_batch": per_batch,
            "drafts_per_round": per_round}
