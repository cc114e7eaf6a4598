"""Token-level engine rate against the bits-only engine (``multispin-sim bench payload``).

Default scenario (K = 20, gamma = 4, optimal mode selection), V = 151,665: the bits model against
the token model with top-1024 payloads (the device drafts from the top-1024 of q), and against
the token model with the 'fidelity' policy (menu 64/256/1024/dense), interleaved
(``abtest.against``; each run end to end, its setup included). The setup (building the pair
tables) is also timed alone, as a run of one round.
"""
import tempfile
import time

from .abtest import against, scenario_run

TOKEN = {"payload.model": "token"}
CASES = {"token model, top-1024": TOKEN,
         "token model, fidelity": {**TOKEN, "policy.mode": "fidelity"}}


def run(quick=False):
    rounds = 500 if quick else 5_000
    pairs = 3 if quick else 4
    with tempfile.TemporaryDirectory() as tmp:
        setup_run = scenario_run(tmp, {**TOKEN, "run.rounds": 1})
        setup_run()   # warm
        t0 = time.perf_counter()
        setup_run()
        setup = time.perf_counter() - t0
        figures = against({}, CASES, rounds, pairs, tmp, "the bits model")
    print(f"  token model setup (pair tables at V = 151,665, one run of 1 round): {setup:.2f} s; "
          "target for token/bits >= 0.2")
    return {"cases": figures, "setup_s": setup,
            "token_over_bits": figures["token model, top-1024"]["ratio"],
            "fidelity_over_bits": figures["token model, fidelity"]["ratio"]}
