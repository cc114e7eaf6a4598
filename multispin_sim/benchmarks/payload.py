"""Token-level engine rate against the bits-only engine (``multispin-sim bench payload``).

Default scenario (K = 20, gamma = 4, optimal mode selection), V = 151,665: the bits model against
the token model with top-1024 payloads (the device drafts from the top-1024 of q), interleaved
A B A B runs; the figure is the median of the pairwise rate ratios (token / bits). Also the
token model with the 'fidelity' policy (menu 64/256/1024/dense). Setup time (building the pair
tables) is reported separately; rates are the run loop's (``rounds_per_s``).
"""
import statistics
import tempfile
import time

from ..scenario import load_scenario


def _rate(overrides, rounds, folder):
    from ..engine.simulation import simulate

    sc = load_scenario(None, overrides={"run.rounds": rounds, "name": "bench", **overrides})
    t0 = time.perf_counter()
    result = simulate(sc, out=folder)
    return result.summary["rounds"] / (time.perf_counter() - t0), result.summary


def run(quick=False):
    rounds = 500 if quick else 5_000
    pairs = 2 if quick else 4
    bits = {}
    token = {"payload.model": "token"}
    fidelity = {"payload.model": "token", "policy.mode": "fidelity"}
    rates = {"bits": [], "token": [], "fidelity": []}
    with tempfile.TemporaryDirectory() as tmp:
        _rate(token, 50, f"{tmp}/warm")
        t0 = time.perf_counter()
        _rate(token, 1, f"{tmp}/setup")
        setup = time.perf_counter() - t0
        for i in range(pairs):
            for name, ov in (("bits", bits), ("token", token), ("fidelity", fidelity)):
                rates[name].append(_rate(ov, rounds, f"{tmp}/{name}{i}")[0])
    ratio = statistics.median(t / b for t, b in zip(rates["token"], rates["bits"]))
    ratio_f = statistics.median(t / b for t, b in zip(rates["fidelity"], rates["bits"]))
    med = {k: statistics.median(v) for k, v in rates.items()}
    print(f"bits model:             {med['bits']:,.0f} rounds/s (K=20, gamma=4, optimal, "
          f"{rounds:,} rounds, end to end)")
    print(f"token model, top-1024:  {med['token']:,.0f} rounds/s  token/bits = {ratio:.2f} "
          f"(median of {pairs} interleaved pairs; target >= 0.2)")
    print(f"token model, fidelity:  {med['fidelity']:,.0f} rounds/s  fidelity/bits = {ratio_f:.2f}")
    print(f"token model setup (pair tables at V = 151,665, one run of 1 round): {setup:.2f} s")
    return {"bits_rounds_per_s": med["bits"], "token_rounds_per_s": med["token"],
            "fidelity_rounds_per_s": med["fidelity"], "token_over_bits": ratio,
            "fidelity_over_bits": ratio_f, "setup_s": setup}
