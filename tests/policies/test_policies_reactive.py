"""Tests of multispin_sim.policies.reactive: the registry, each policy's decision checked
against test-side oracles, and hypothesis properties (the optimum never loses to a baseline).
"""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from multispin_sim.model import reactive as R
from multispin_sim.policies import REACTIVE_POLICIES, ReactivePolicy, make_reactive_policy

S_BITS = 34_816.0
B_HZ = 10e6
N0 = 10 ** (-174 / 10) * 1e-3
P_UL = 10 ** (10 / 10) * 1e-3
REL = 1e-9
NAMES = ("optimal", "all-ul", "all-dl", "random", "exhaustive")


def o_ul_delay(b, p, g):
    return S_BITS / (b * math.log2(1 + p * g / (N0 * b)))


def o_dl_tau(b, p_dl, gains):
    if len(gains) == 0:
        return 0.0
    if p_dl <= 0:
        return math.inf
    return S_BITS / (b * math.log2(1 + p_dl / (N0 * b * math.fsum(1.0 / g for g in gains))))


def o_assignment(rejected, ul, g_ul, g_dl, p_dl):
    """T_comm of a given assignment (UL set ``ul`` among the rejected, the rest DL)."""
    idx = np.flatnonzero(rejected)
    if idx.size == 0:
        return 0.0
    b = B_HZ / idx.size
    ups = [o_ul_delay(b, P_UL, g_ul[k]) for k in idx if ul[k]]
    return max(ups + [o_dl_tau(b, p_dl, [g_dl[k] for k in idx if not ul[k]])])


def o_brute_force(rejected, g_ul, g_dl, p_dl):
    idx = np.flatnonzero(rejected)
    best = 0.0 if idx.size == 0 else math.inf
    for modes in itertools.product((False, True), repeat=idx.size):
        ul = np.zeros(len(rejected), dtype=bool)
        ul[idx] = modes
        best = min(best, o_assignment(rejected, ul, g_ul, g_dl, p_dl))
    return best


def instance(seed, k, m, p_dl_dbm, reciprocal):
    rng = np.random.default_rng(seed)
    d = rng.uniform(100, 500, size=(m, k))
    G = 1e-3 * d ** -3.5
    h_ul = rng.standard_exponential((m, k))
    h_dl = h_ul if reciprocal else rng.standard_exponential((m, k))
    rejected = rng.random((m, k)) < rng.uniform(0.2, 1.0)
    p_dl = 10 ** (p_dl_dbm / 10) * 1e-3
    return R.ReactiveProblem(rejected, G * h_ul, G * h_dl, P_UL, p_dl, S_BITS, B_HZ, N0)


# ---------------------------------------------------------------------------- registry


def test_registry_names_and_interface():
    assert set(NAMES) <= set(REACTIVE_POLICIES)
    for name in NAMES:
        pol = make_reactive_policy(name)
        assert isinstance(pol, ReactivePolicy)
        assert pol.name == name


def test_unknown_policy_raises():
    with pytest.raises(ValueError, match="optimal"):
        make_reactive_policy("no-such-policy")


# ---------------------------------------------------------------------------- each policy vs oracle


@pytest.mark.parametrize("reciprocal", [True, False])
def test_policies_against_oracles(reciprocal):
    prob = instance(7 + reciprocal, 6, 40, 15.0, reciprocal)
    rej = prob.rejected
    dec = {n: make_reactive_policy(n).decide(prob, np.random.default_rng(3)) for n in NAMES}
    for i in range(rej.shape[0]):
        g_ul, g_dl = prob.g_ul[i], prob.g_dl[i]
        best = o_brute_force(rej[i], g_ul, g_dl, prob.p_dl)
        assert dec["optimal"].t_comm[i] == pytest.approx(best, rel=REL)
        assert dec["exhaustive"].t_comm[i] == pytest.approx(best, rel=REL)
        assert dec["all-ul"].t_comm[i] == pytest.approx(o_assignment(rej[i], rej[i], g_ul, g_dl, prob.p_dl), rel=REL)
        assert dec["all-dl"].t_comm[i] == pytest.approx(
            o_assignment(rej[i], np.zeros_like(rej[i]), g_ul, g_dl, prob.p_dl), rel=REL)
        # random: whatever split it drew, its powers are optimised for that split
        ul = dec["random"].mode[i] == R.UL
        assert dec["random"].t_comm[i] == pytest.approx(o_assignment(rej[i], ul, g_ul, g_dl, prob.p_dl), rel=REL)
        np.testing.assert_array_equal(dec["random"].mode[i] != R.NONE, rej[i])


def test_random_policy_is_fair_coin_and_reproducible():
    prob = instance(11, 10, 2000, 20.0, False)
    pol = make_reactive_policy("random")
    a = pol.decide(prob, np.random.default_rng(5))
    b = pol.decide(prob, np.random.default_rng(5))
    np.testing.assert_array_equal(a.mode, b.mode)
    np.testing.assert_array_equal(a.t_comm, b.t_comm)
    n_rej = int(prob.rejected.sum())
    n_ul = int(a.n_ul.sum())
    assert stats.binomtest(n_ul, n_rej, 0.5).pvalue > 1e-3
    # independence of the coin across devices: UL fraction of each device column is 1/2 too
    for kk in range(10):
        col = prob.rejected[:, kk]
        assert stats.binomtest(int(np.sum(a.mode[col, kk] == R.UL)), int(col.sum()), 0.5).pvalue > 1e-3 / 10


def test_random_policy_advances_stream_by_m_times_k():
    prob = instance(12, 7, 13, 20.0, True)
    r1, r2 = np.random.default_rng(9), np.random.default_rng(9)
    make_reactive_policy("random").decide(prob, r1)
    r2.random((13, 7))
    np.testing.assert_array_equal(r1.random(5), r2.random(5))


# ---------------------------------------------------------------------------- properties


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(1, 10),
    p_dl_dbm=st.floats(0.0, 40.0),
    reciprocal=st.booleans(),
)
def test_optimal_never_worse_than_baselines(seed, k, p_dl_dbm, reciprocal):
    prob = instance(seed, k, 8, p_dl_dbm, reciprocal)
    opt = make_reactive_policy("optimal").decide(prob).t_comm
    for name in ("all-ul", "all-dl", "random"):
        other = make_reactive_policy(name).decide(prob, np.random.default_rng(seed)).t_comm
        assert np.all(opt <= other * (1 + 1e-12)), name
    exh = make_reactive_policy("exhaustive").decide(prob).t_comm
    np.testing.assert_allclose(opt, exh, rtol=REL)
    assert np.all(np.isfinite(opt))
    assert np.all((opt > 0) == prob.rejected.any(axis=1))


@settings(max_examples=100, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(1, 6),
    p_dl_dbm=st.floats(-10.0, 40.0),
    reciprocal=st.booleans(),
)
def test_optimal_equals_brute_force_property(seed, k, p_dl_dbm, reciprocal):
    prob = instance(seed, k, 3, p_dl_dbm, reciprocal)
    opt = make_reactive_policy("optimal").decide(prob).t_comm
    for i in range(3):
        want = o_brute_force(prob.rejected[i], prob.g_ul[i], prob.g_dl[i], prob.p_dl)
        assert opt[i] == pytest.approx(want, rel=REL)
