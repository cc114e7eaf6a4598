"""Oracle tests for multispin_sim.model.speculative (docs/model.md sections 3 and 10).

Every expected value is computed here from the i.i.d. acceptance model itself
(P(A >= j) = alpha^j, A truncated at gamma), never copied from the code's output.
Statistical checks use fixed seeds and p-value / CI thresholds of about 1e-3 / 4.5 sigma.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from multispin_sim.model import speculative as spec

P_MIN = 1e-3  # p-value threshold of the statistical tests
Z = 4.5  # CI half-width in standard errors (two-sided p ~ 7e-6)


def oracle_expected_tokens(alpha, gamma):
    """E[N] = E[A + 1] = sum_{j=0}^{gamma} P(A >= j) = sum_{j=0}^{gamma} alpha^j (direct sum)."""
    return math.fsum(alpha**j for j in range(gamma + 1))


def oracle_pmf(alpha, gamma):
    """P(A = j) = alpha^j (1 - alpha) for j < gamma, P(A = gamma) = alpha^gamma."""
    return np.array([alpha**j * (1 - alpha) for j in range(gamma)] + [alpha**gamma])


# ---------------------------------------------------------------------------- E[N]


@pytest.mark.parametrize(
    "alpha, gamma, expected",
    [(0.8, 4, 3.3616), (0.6, 3, 2.176), (0.9, 7, 5.6953279)],
)
def test_expected_tokens_reference_values(alpha, gamma, expected):
    # The references themselves are consistent with the direct sum of the survival function.
    assert oracle_expected_tokens(alpha, gamma) == pytest.approx(expected, abs=1e-7)
    assert float(spec.expected_tokens(alpha, gamma)) == pytest.approx(expected, abs=1e-7)


@pytest.mark.parametrize("gamma", [0, 1, 5, 20])
def test_expected_tokens_alpha_one_is_gamma_plus_one(gamma):
    assert float(spec.expected_tokens(1.0, gamma)) == gamma + 1


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.82, 0.95, 1.0])
def test_expected_tokens_gamma_zero_is_one(alpha):
    assert float(spec.expected_tokens(alpha, 0)) == pytest.approx(1.0, abs=1e-15)


def test_expected_tokens_vectorised_broadcast():
    alpha = np.array([0.5, 0.82, 0.93, 1.0])[:, None]
    gamma = np.arange(0, 21)[None, :]
    got = spec.expected_tokens(alpha, gamma)
    assert got.shape == (4, 21)
    want = np.array([[oracle_expected_tokens(a, g) for g in range(21)] for a in alpha[:, 0]])
    np.testing.assert_allclose(got, want, rtol=1e-12)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(alpha=st.floats(0.0, 0.999), gamma=st.integers(0, 20))
def test_expected_tokens_equals_direct_sum(alpha, gamma):
    assert float(spec.expected_tokens(alpha, gamma)) == pytest.approx(
        oracle_expected_tokens(alpha, gamma), rel=1e-9, abs=1e-12)


def test_rejection_probability():
    for alpha in (0.0, 0.5, 0.83, 0.93, 1.0):
        for gamma in range(0, 21):
            assert float(spec.rejection_probability(alpha, gamma)) == pytest.approx(
                1.0 - alpha**gamma, abs=1e-14)
    assert float(spec.rejection_probability(0.7, 0)) == 0.0


@pytest.mark.parametrize("alpha, gamma", [(0.8, 4), (0.6, 3), (0.93, 20), (0.5, 0), (0.0, 3)])
def test_accepted_pmf_matches_formula(alpha, gamma):
    pmf = spec.accepted_pmf(alpha, gamma)
    np.testing.assert_allclose(pmf, oracle_pmf(alpha, gamma), rtol=1e-12, atol=1e-15)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    # E[A + 1] from the pmf equals E[N]
    assert np.dot(np.arange(gamma + 1) + 1, pmf) == pytest.approx(
        oracle_expected_tokens(alpha, gamma), rel=1e-12)


# ---------------------------------------------------------------------------- sampling law


def test_acceptance_uniforms_range_and_reproducibility():
    u1 = spec.acceptance_uniforms(np.random.default_rng(7), (1000, 5))
    u2 = spec.acceptance_uniforms(np.random.default_rng(7), (1000, 5))
    assert u1.shape == (1000, 5)
    np.testing.assert_array_equal(u1, u2)
    assert np.all(u1 > 0.0) and np.all(u1 <= 1.0)
    assert stats.kstest(u1.ravel(), "uniform").pvalue > P_MIN


@pytest.mark.parametrize(
    "alpha, gamma, seed",
    [(0.8, 4, 1), (0.6, 3, 2), (0.93, 8, 3), (0.83, 12, 4), (0.5, 1, 5)],
)
def test_accepted_count_truncated_geometric_chi_square(alpha, gamma, seed):
    n = 200_000
    u = spec.acceptance_uniforms(np.random.default_rng(seed), n)
    a = spec.accepted_from_uniform(u, alpha, gamma)
    assert a.dtype.kind == "i"
    assert a.min() >= 0 and a.max() <= gamma
    observed = np.bincount(a, minlength=gamma + 1)
    expected = n * oracle_pmf(alpha, gamma)
    assert expected.min() > 5  # chi-square validity
    p = stats.chisquare(observed, expected).pvalue
    assert p > P_MIN, (observed, expected, p)


@pytest.mark.parametrize("alpha, gamma, seed", [(0.8, 4, 11), (0.93, 7, 12), (0.6, 2, 13)])
def test_full_acceptance_probability_is_alpha_pow_gamma(alpha, gamma, seed):
    n = 100_000
    u = spec.acceptance_uniforms(np.random.default_rng(seed), n)
    acc, tokens, rejected = spec.draft_outcome(u, alpha, gamma)
    full = int(np.sum(~rejected))
    assert np.array_equal(~rejected, acc == gamma)
    assert stats.binomtest(full, n, alpha**gamma).pvalue > P_MIN
    # survival function P(A >= j) = alpha^j at every j
    for j in range(gamma + 1):
        assert stats.binomtest(int(np.sum(acc >= j)), n, alpha**j).pvalue > P_MIN


@pytest.mark.parametrize("alpha, gamma, seed", [(0.8, 4, 21), (0.6, 3, 22), (0.9, 7, 23), (0.95, 20, 24)])
def test_mean_tokens_within_ci_of_expected_tokens(alpha, gamma, seed):
    n = 100_000
    u = spec.acceptance_uniforms(np.random.default_rng(seed), n)
    _, tokens, _ = spec.draft_outcome(u, alpha, gamma)
    mean, se = tokens.mean(), tokens.std(ddof=1) / math.sqrt(n)
    assert abs(mean - oracle_expected_tokens(alpha, gamma)) < Z * se


def test_draft_outcome_consistency():
    rng = np.random.default_rng(31)
    u = spec.acceptance_uniforms(rng, (500, 6))
    alpha = np.array([0.5, 0.82, 0.86, 0.9, 0.93, 0.0])
    gamma = np.array([0, 1, 4, 7, 20, 3])
    acc, tokens, rejected = spec.draft_outcome(u, alpha, gamma)
    np.testing.assert_array_equal(tokens, acc + 1)
    np.testing.assert_array_equal(rejected, acc < gamma)
    assert np.all(acc <= gamma) and np.all(acc >= 0)
    # gamma = 0: no draft, no rejection, one token
    assert np.all(acc[:, 0] == 0) and np.all(tokens[:, 0] == 1) and not rejected[:, 0].any()
    # alpha = 0 with gamma >= 1: the first draft is always rejected
    assert np.all(acc[:, 5] == 0) and rejected[:, 5].all()


def test_accepted_from_uniform_is_inversion():
    # A >= j  iff  U <= alpha^j  (exact inversion, checked away from the cell edges)
    alpha, gamma = 0.7, 6
    edges = alpha ** np.arange(gamma + 1)  # 1, a, a^2, ...
    for j in range(gamma + 1):
        lo = edges[j + 1] if j < gamma else 0.0
        mid = np.linspace(lo, edges[j], 7)[1:-1]
        assert np.all(spec.accepted_from_uniform(mid, alpha, gamma) == j)
    assert int(spec.accepted_from_uniform(1.0, alpha, gamma)) == 0
    assert int(spec.accepted_from_uniform(1e-300, alpha, gamma)) == gamma


# ---------------------------------------------------------------------------- coupling


def test_monotone_coupling_in_gamma():
    rng = np.random.default_rng(41)
    u = spec.acceptance_uniforms(rng, 20_000)
    for alpha in (0.3, 0.82, 0.93):
        counts = np.stack([spec.accepted_from_uniform(u, alpha, g) for g in range(21)])
        steps = np.diff(counts, axis=0)
        assert np.all(steps >= 0)  # non-decreasing in gamma for the same U
        assert np.all(steps <= 1)  # one more draft adds at most one accepted token
        # coupling: A(gamma) = min(A(gamma_max), gamma)
        np.testing.assert_array_equal(counts, np.minimum(counts[-1], np.arange(21)[:, None]))
        # a device rejected at gamma stays rejected at every larger gamma
        rej = counts < np.arange(21)[:, None]
        assert np.all(rej[1:] >= rej[:-1])


def test_monotone_coupling_in_alpha():
    u = spec.acceptance_uniforms(np.random.default_rng(42), 20_000)
    alphas = np.linspace(0.05, 0.99, 30)
    counts = np.stack([spec.accepted_from_uniform(u, a, 20) for a in alphas])
    assert np.all(np.diff(counts, axis=0) >= 0)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(u=st.floats(1e-12, 1.0), alpha=st.floats(0.01, 0.99), g1=st.integers(0, 20), g2=st.integers(0, 20))
def test_coupling_property(u, alpha, g1, g2):
    lo, hi = sorted((g1, g2))
    a_lo = int(spec.accepted_from_uniform(u, alpha, lo))
    a_hi = int(spec.accepted_from_uniform(u, alpha, hi))
    assert 0 <= a_lo <= a_hi <= hi
    assert a_lo == min(a_hi, lo)


# ---------------------------------------------------------------------------- alpha = 1


def test_alpha_one_accepts_every_draft():
    u = np.array([1e-9, 0.3, 0.9, 1.0])
    for gamma in (0, 1, 5):
        acc, tokens, rejected = spec.draft_outcome(u, 1.0, gamma)
        np.testing.assert_array_equal(acc, gamma)
        np.testing.assert_array_equal(tokens, gamma + 1)
        assert not rejected.any()
