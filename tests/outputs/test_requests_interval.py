"""The interval of the mean latency (``requests.latency_s.ci95``): batch means of the latencies
in order of completion, merged while neighbouring batches are positively correlated. Its
coverage is measured on AR(1) sequences, whose mean is known (0): requests queued behind the
same busy server have latencies correlated like these."""
import math

import numpy as np
import pytest
from scipy import signal, stats

from multispin_sim.outputs.requests import batch_means_interval


def ar1(rng, phi, n, runs):
    """``runs`` stationary AR(1) sequences of length ``n`` (unit innovations)."""
    e = rng.standard_normal((runs, n))
    e[:, 0] /= math.sqrt(1.0 - phi * phi)     # the first value from the stationary law
    return signal.lfilter([1.0], [1.0, -phi], e, axis=1)


@pytest.mark.parametrize("phi, floor", [(0.0, 0.925), (0.9, 0.88)])
def test_the_interval_holds_the_mean_of_correlated_latencies(phi, floor):
    """400 sequences of 300 values. Independent values: 95% nominal, 95.75% measured (the
    floor is 3 binomial standard errors below); phi = 0.9 (batches of 15 values against a
    correlation time of 10): 92.5% measured, where 20 fixed batches held 80.5% (the floor, 88%,
    is 3.4 standard errors below the first and 5.5 above the second)."""
    x = ar1(np.random.default_rng(7), phi, 300, 400)
    held = sum(lo <= 0.0 <= hi for lo, hi in map(batch_means_interval, x))
    assert held / 400 >= floor


def test_independent_batches_stay_twenty_and_a_trend_merges_to_five():
    # batch means alternating around the mean: negatively correlated, the 20 batches stay
    v = np.repeat(np.tile([1.0, -1.0], 10), 7) + np.tile(np.linspace(-0.1, 0.1, 7), 20)
    means = v.reshape(20, 7).mean(axis=1)
    half = stats.t.ppf(0.975, 19) * means.std(ddof=1) / math.sqrt(20)
    np.testing.assert_allclose(batch_means_interval(v), [v.mean() - half, v.mean() + half],
                               rtol=1e-12)
    # a trend: every level of merging stays positively correlated, down to 5 batches
    w = np.arange(140.0)
    means = w.reshape(5, 28).mean(axis=1)
    half = stats.t.ppf(0.975, 4) * means.std(ddof=1) / math.sqrt(5)
    np.testing.assert_allclose(batch_means_interval(w), [w.mean() - half, w.mean() + half],
                               rtol=1e-12)


def test_fewer_values_than_batches_have_no_interval():
    assert all(math.isnan(b) for b in batch_means_interval(np.ones(19)))
