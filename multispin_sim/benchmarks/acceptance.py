"""Cost of the acceptance models: engine rounds/s with each model against i.i.d. (interleaved
A/B runs of the default scenario, ``abtest.against``) and the component's own cost per round
(``accepted`` for K = 20 devices).

All engine runs use the models fitted to the shipped trace (vicuna pair, ``FITTED``, as in
scenarios/acceptance/), so they share one mean agreement rate: the same share of rejected
devices, hence the same number of correction events per round (comparing with the default
i.i.d. rates, alpha about 0.88, would mostly measure the extra corrections at alpha 0.64).
"""
import tempfile
import time

import numpy as np

from ..engine.reading import read_trace, shipped_trace_path
from ..model.acceptance import make_acceptance_model
from ..model.acceptance_trace import select_answers
from .abtest import against

MODELS = ("beta", "markov", "trace")
FITTED = {  # multispin-sim acceptance fit --benchmark spec_bench
    "acceptance.mean": 0.642532, "acceptance.concentration": 12.7911,
    "acceptance.session_tokens": 165, "acceptance.easy_rate": 0.880647,
    "acceptance.hard_rate": 0.555158, "acceptance.easy_to_hard": 0.016226,
    "acceptance.hard_to_easy": 0.005624, "acceptance.trace_benchmark": "spec_bench",
}


def _component_us(name, answers, calls, k=20):
    kwargs = {"answers": answers} if name == "trace" else {}
    model = make_acceptance_model(name, np.full(k, 0.7), np.random.default_rng(0), **kwargs)
    gamma = np.full(k, 4, dtype=np.int64)
    active = np.ones(k, dtype=bool)
    model.accepted(gamma, active)
    t = time.perf_counter()
    for _ in range(calls):
        model.accepted(gamma, active)
    return (time.perf_counter() - t) / calls * 1e6


def run(quick=False):
    answers = select_answers(read_trace(shipped_trace_path()), benchmark="spec_bench")
    calls = 2000 if quick else 50000
    figures = {"component_us_per_round": {}}
    for name in ("iid",) + MODELS:
        us = _component_us(name, answers, calls)
        figures["component_us_per_round"][name] = us
        print(f"  {name:7s} accepted() for K = 20: {us:6.2f} us per round")
    rounds, pairs = (1000, 3) if quick else (3000, 5)
    with tempfile.TemporaryDirectory() as tmp:
        engine = against(FITTED, {name: {"acceptance.model": name} for name in MODELS}, rounds,
                         pairs, tmp, "i.i.d.")
    figures.update({f"engine_{name}_vs_iid": engine[name]["ratio"] for name in MODELS})
    return figures
