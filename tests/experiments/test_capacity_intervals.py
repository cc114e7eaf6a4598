"""The capacity search's attainment interval: bounded in [0, 1], no evidence without requests,
and its coverage on independent and on correlated (beta-binomial) replications."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from multispin_sim.experiments.capacity import attainment_interval, wilson_interval


def test_no_request_is_no_evidence():
    p, lo, hi = attainment_interval([0, 0, 0], [0, 0, 0])
    assert np.isnan(p) and (lo, hi) == (0.0, 1.0)
    # a replication without requests adds nothing: same interval as without it
    assert attainment_interval([9, 0, 8], [10, 0, 10]) == attainment_interval([9, 8], [10, 10])


@pytest.mark.parametrize("met, counted", [([1, 1, 0], [1, 1, 1]), ([0, 0, 0], [5, 5, 5]),
                                          ([7, 7, 7], [7, 7, 7]), ([3, 0], [3, 40])])
def test_bounded(met, counted):
    p, lo, hi = attainment_interval(met, counted)
    assert 0.0 <= lo <= p <= hi <= 1.0


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 200)), min_size=1, max_size=6))
def test_the_interval_holds_the_attainment(pairs):
    """Every interval lies in [0, 1] and holds the pooled attainment, at its ends too (all or
    none met: 73 of 73 in one replication gave an upper end one ulp below 1, and the capacity
    plot refused the negative error bar)."""
    met = [min(a, b) for a, b in pairs]
    counted = [max(a, b) for a, b in pairs]
    p, lo, hi = attainment_interval(met, counted)
    if sum(counted) == 0:
        assert (lo, hi) == (0.0, 1.0)
    else:
        assert 0.0 <= lo <= p <= hi <= 1.0
    assert attainment_interval([73], [73])[2] == 1.0 and attainment_interval([0], [73])[1] == 0.0


def test_all_met_few_requests_is_not_certain():
    p, lo, hi = attainment_interval([2, 1, 3], [2, 1, 3])
    assert p == 1.0 and hi == pytest.approx(1.0) and lo < 0.5


def test_wilson_matches_the_closed_form():
    # Wilson (1927), 8 of 10 at z = 1.96: 0.4902 to 0.9433
    lo, hi = wilson_interval(0.8, 10, 1.959963984540054)
    assert lo == pytest.approx(0.4901624, abs=1e-6) and hi == pytest.approx(0.9433178, abs=1e-6)


def _coverage(draw, p, trials, rng):
    hits = 0
    for _ in range(trials):
        met, counted = draw(rng)
        _, lo, hi = attainment_interval(met, counted)
        hits += lo <= p <= hi
    return hits / trials


def test_coverage_independent_requests():
    rng = np.random.default_rng(1)
    p = 0.9

    def draw(rng):
        n = rng.integers(20, 80, size=3)
        return rng.binomial(n, p), n
    cover = _coverage(draw, p, 2000, rng)
    # nominal 0.95 (conservative with the t quantile); 2000 trials: s.e. 0.005
    assert cover >= 0.93


def test_coverage_correlated_requests():
    # requests of one run share the queue: beta-binomial with intra-run correlation 0.2
    rng = np.random.default_rng(2)
    p, rho = 0.9, 0.2
    a = p * (1 - rho) / rho
    b = (1 - p) * (1 - rho) / rho

    def draw(rng):
        n = np.full(4, 100)
        return rng.binomial(n, rng.beta(a, b, size=4)), n
    cover = _coverage(draw, p, 2000, rng)
    assert cover >= 0.90  # a binomial interval on the pooled 400 requests covers about 0.3
    naive = 0
    rng = np.random.default_rng(2)
    for _ in range(2000):
        met, n = draw(rng)
        q = met.sum() / n.sum()
        half = 1.96 * np.sqrt(q * (1 - q) / n.sum())
        naive += q - half <= p <= q + half
    assert naive / 2000 < 0.6  # the test has the power to see an interval that ignores it


def test_a_below_verdict_says_why_the_lower_rates_did_not_decide():
    """Lower rates that stayed undecided are told apart from rates with too few requests even in
    the longest runs allowed (max_extension x --duration)."""
    from multispin_sim.experiments.capacity import CapacitySearch

    search = CapacitySearch(None, 2.0, None, 0.9, duration_s=60.0, reps_max=3,
                            overrides=["workload.arrivals=poisson"])
    search.lowest_failing = 0.2
    assert search.expected_requests(0.05) >= search.min_requests
    text = search.message("below", None, 0.2, [0.05, 0.1, 0.2])
    assert "stayed undecided" in text and "3 replications" in text
    assert search.expected_requests(1e-7) < search.min_requests
    text = search.message("below", None, 0.2, [1e-7, 0.1, 0.2])
    assert "too few requests" in text and "100 x --duration" in text
