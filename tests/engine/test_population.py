"""``devices.draw: stratified``: every device keeps the i.i.d. law of its task, speed factor and
distance (chi-square and KS tests over many drops, fixed seeds), while each drop covers the
ranges evenly (one distance per stratum, tasks balanced against distance)."""
import numpy as np
import pytest
from scipy import stats

from multispin_sim.engine.population import _stratified_draws, build_population
from multispin_sim.engine.streams import RandomStreams
from multispin_sim.scenario import ScenarioError, load_scenario
from multispin_sim.scenario.presets import TASKS

N_DROPS = 4000
P_MIN = 1e-3   # a correct law fails one of these fixed-seed tests with probability ~1e-3 each


def _drops(k, seed=11):
    rng = np.random.default_rng(seed)
    draws = [_stratified_draws(rng, k, len(TASKS), (1.0, 1.15), (100.0, 500.0))
             for _ in range(N_DROPS)]
    return tuple(np.array(x) for x in zip(*draws))   # (N, K) each


@pytest.mark.parametrize("k", [2, 7, 20])
def test_each_device_keeps_the_iid_law(k):
    task, spread, distance = _drops(k)
    for i in {0, k - 1}:
        counts = np.bincount(task[:, i], minlength=len(TASKS))
        assert stats.chisquare(counts).pvalue > P_MIN
        assert stats.kstest(distance[:, i], stats.uniform(100, 400).cdf).pvalue > P_MIN
        assert stats.kstest(spread[:, i], stats.uniform(1.0, 0.15).cdf).pvalue > P_MIN
        # and its task does not depend on its distance (task x distance-quartile table)
        quartile = np.minimum(((distance[:, i] - 100) / 100).astype(int), 3)
        table = np.zeros((len(TASKS), 4))
        np.add.at(table, (task[:, i], quartile), 1)
        assert stats.chi2_contingency(table).pvalue > P_MIN


@pytest.mark.parametrize("k", [2, 7, 20])
def test_each_drop_covers_the_ranges(k):
    task, spread, distance = _drops(k)
    edges = 100 + 400 * np.arange(k + 1) / k
    for values, lo, width in ((distance, 100.0, 400.0), (spread, 1.0, 0.15)):
        strata = np.sort(np.floor((values - lo) / width * k), axis=1)
        assert (strata == np.arange(k)).all()          # one value per stratum in every drop
    order = np.argsort(distance, axis=1)                # devices from near to far
    by_distance = np.take_along_axis(task, order, axis=1)
    for start in range(0, k, len(TASKS)):
        block = np.sort(by_distance[:, start:start + len(TASKS)], axis=1)
        assert (np.diff(block, axis=1) > 0).all()       # distinct tasks in each block of strata
    counts = np.stack([np.bincount(row, minlength=len(TASKS)) for row in task])
    assert counts.min() >= k // len(TASKS) and counts.max() <= -(-k // len(TASKS))
    assert (distance >= edges[0]).all() and (distance < edges[-1]).all()


def test_drops_differ_much_less_than_iid():
    """Mean acceptance of a drop of 20 devices: the same in every stratified drop (5 devices per
    task); i.i.d. drops spread by about sd(alpha)/sqrt(20)."""
    means = {}
    for draw in ("iid", "stratified"):
        sc = load_scenario(None, overrides={"devices.draw": draw})
        streams = [RandomStreams(seed).devices for seed in range(200)]
        means[draw] = np.array([build_population(sc, s).system.alpha.mean() for s in streams])
    alphas = np.array(list(load_scenario(None).devices.acceptance.values()))
    assert np.ptp(means["stratified"]) < 1e-12
    assert means["stratified"][0] == pytest.approx(alphas.mean(), abs=1e-12)
    sd_iid = alphas.std() / np.sqrt(20)
    # sample sd of 200 i.i.d. drops within +-25% of sigma (chi-square, 199 df: far beyond 3 sd)
    assert 0.75 * sd_iid < means["iid"].std(ddof=1) < 1.25 * sd_iid


def test_iid_is_the_default_and_a_wrong_value_is_refused():
    assert load_scenario(None).devices.draw == "iid"
    with pytest.raises(ScenarioError, match=r"devices\.draw.*iid.*stratified"):
        load_scenario(None, overrides={"devices.draw": "latin"})
