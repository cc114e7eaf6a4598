"""Time of one optimal mode selection (|R| = 20) and of 1,000 outcomes at once (K = 20)."""
import timeit

import numpy as np

from ..model import reactive
from ..model.pathloss import pathloss_gain
from ..model.rates import noise_psd_watt_per_hz
from .abtest import quantiles_ms


def _times(fn, repeat):
    """Seconds of each of ``repeat`` calls of ``fn``."""
    return np.array(timeit.repeat(fn, number=1, repeat=repeat))


def run(quick=False):
    rng = np.random.default_rng(0)
    k = 20
    gains = pathloss_gain(rng.uniform(100, 500, k)) * rng.standard_exponential(k)
    n0 = noise_psd_watt_per_hz(-174.0)
    args = (gains, gains, 0.01, 0.04, 34_816, 10e6, n0)
    one = reactive.ReactiveProblem(np.ones((1, k), bool), *args)
    many = reactive.ReactiveProblem(rng.random((1000, k)) < 0.5, *args)
    repeat = 200 if quick else 2000
    figures = {
        "one_outcome_R20": quantiles_ms("optimal split, one outcome, |R| = 20 (engine path)",
                                        _times(lambda: reactive.optimal_split(one), repeat)),
        "one_outcome_R20_vectorised": quantiles_ms(
            "optimal split, one outcome, |R| = 20 (vectorised path)",
            _times(lambda: reactive.prefix_split_delays(one), repeat)),
        "outcomes_1000_K20": quantiles_ms("optimal split, 1,000 outcomes at once, K = 20",
                                          _times(lambda: reactive.optimal_split(many), repeat // 10)),
        "exhaustive_R12": quantiles_ms(
            "exhaustive search, one outcome, |R| = 12 (reference)",
            _times(lambda: reactive.exhaustive_split(reactive.ReactiveProblem(
                np.ones((1, 12), bool), gains[:12], gains[:12], 0.01, 0.04, 34_816, 10e6, n0)),
                max(repeat // 100, 5))),
    }
    return figures
