"""The compiled shared-band evaluator (``model.mimo_numba``) against the numpy one
(``model.mimo_batch.SchemeEvaluator`` with ``MULTISPIN_NUMBA=0``): the same delays of (set,
|R|) keys within rtol 1e-12, the same prefix splits (first minimiser and T_comm), and the
numpy path wherever the compiled one does not apply.

Tolerance: both evaluate the same closed forms in double precision, by different
factorisations of the same Hermitian positive definite matrices (Cholesky against LAPACK's
LU) and summation orders, both backward stable: a computed [H^-1]_kk is off by about
cond(H) x eps relative. The UL matrices I + S G S (or I + sum v v^H) have eigenvalues from 1
to 1 + n SNR, cond below 1e4 here: rtol 1e-12. A ZF group's Gram matrix G = A^H A can be
much worse conditioned (two nearly parallel channels): there the bound is checked key by key,
16 cond(G) eps with cond the worst of the key's groups (seen: 1.2e-12 at cond ~5e3). Random
continuous channels make exact ties between prefixes improbable: the splits must be
identical.
"""
import math

import numpy as np
import pytest

from multispin_sim.model.antennas import ArrayGains
from multispin_sim.model.mimo import Transmission
from multispin_sim.model.mimo_batch import SchemeEvaluator, bit_weights
from multispin_sim.model.reactive import optimal_split

mn = pytest.importorskip("multispin_sim.model.mimo_numba",
                         reason="numba is a core dependency; this install lacks it")

S, B, N0, P_UL, P_DL = 12_000.0, 10e6, 4e-21, 0.01, 0.04


class _Sys:  # the constants System.reactive_problem reads
    p_ul_w, p_dl_w, payload_bits, bandwidth_hz, n0 = P_UL, P_DL, S, B, N0


def _vectors(rng, k, m):
    cn = (rng.standard_normal((k, m)) + 1j * rng.standard_normal((k, m))) / math.sqrt(2)
    return np.sqrt(1e-11 * rng.uniform(0.05, 5.0, k))[:, None] * cn


def _pair(tr, a, monkeypatch):
    """(compiled, numpy) evaluators of one channel state."""
    args = (tr, a, a, np.full(len(a), P_UL), P_DL, S, B, N0)
    monkeypatch.delenv("MULTISPIN_NUMBA", raising=False)
    fast = SchemeEvaluator(*args)
    monkeypatch.setenv("MULTISPIN_NUMBA", "0")
    slow = SchemeEvaluator(*args)
    monkeypatch.delenv("MULTISPIN_NUMBA")
    assert fast.compiled is not None and slow.compiled is None
    return fast, slow


@pytest.mark.parametrize("m", [1, 2, 4, 8])
@pytest.mark.parametrize("groups", ["fewest", "best"])
def test_link_delays_equal_numpys(m, groups, monkeypatch):
    rng = np.random.default_rng(40 + m)
    k = 12
    tr = Transmission(m, "mu-mimo-zf", "mu-mimo-mmse", zf_groups=groups)
    fast, slow = _pair(tr, _vectors(rng, k, m), monkeypatch)
    sets = rng.integers(1, 1 << k, 600)           # every size from 1 to K
    r = np.maximum(np.bitwise_count(sets) if hasattr(np, "bitwise_count")
                   else [bin(int(x)).count("1") for x in sets], 1) + rng.integers(0, 3, 600)
    sets[:5] = 0                                  # empty links: 0
    for link in ("ul_time", "dl_time"):
        got, ref = getattr(fast, link)(sets, r), getattr(slow, link)(sets, r)
        assert np.all(got[:5] == 0) and np.all(np.isfinite(ref[5:]))
        if link == "ul_time":
            np.testing.assert_allclose(got, ref, rtol=1e-12, atol=0)
        else:
            conds = np.array([_zf_cond(fast.a_dl, s, m) for s in sets[5:]])
            rel = np.abs(got[5:] / ref[5:] - 1)
            assert np.all(rel <= np.maximum(16 * conds * np.finfo(float).eps, 1e-13))
        # asked again: from the tables, the same values
        np.testing.assert_array_equal(getattr(fast, link)(sets[::-1], r[::-1]), got[::-1])


@pytest.mark.parametrize("m", [1, 2, 4, 8])
def test_power_descent_equals_numpys(m, monkeypatch):
    """The UL power descent (``mimo_batch.mmse_power_descent``) compiled: the same slowest
    delays, sets of every size from 1 to K, within rtol 1e-12 (the same passes and first
    minimisers; a candidate level is accepted only if faster by more than 1e-12, so values a
    few eps apart cannot steer the two apart)."""
    rng = np.random.default_rng(90 + m)
    k = 10
    tr = Transmission(m, "mu-mimo-zf", "mu-mimo-mmse", ul_power="descent")
    fast, slow = _pair(tr, _vectors(rng, k, m), monkeypatch)
    sets = rng.integers(1, 1 << k, 300)
    r = np.maximum(np.bitwise_count(sets) if hasattr(np, "bitwise_count")
                   else [bin(int(x)).count("1") for x in sets], 1) + rng.integers(0, 3, 300)
    got, ref = fast.ul_time(sets, r), slow.ul_time(sets, r)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=0)
    full = SchemeEvaluator(Transmission(m, "mu-mimo-zf", "mu-mimo-mmse"), fast.a_ul, fast.a_dl,
                           fast.p_ul, P_DL, S, B, N0).ul_time(sets, r)
    assert np.all(got <= full) and np.any(got < full * (1 - 1e-9))   # the descent pays


def _zf_cond(a, s, m):
    """The worst condition number of the ZF groups any grouping of set ``s`` forms (the
    devices by ||a||^2 descending, dealt round-robin into c groups, c = ceil(n / M) ...
    n)."""
    idx = np.array([d for d in range(len(a)) if s >> d & 1])
    order = idx[np.argsort(-np.sum(np.abs(a[idx]) ** 2, axis=1), kind="stable")]
    worst = 1.0
    for count in range(-(-len(idx) // m), len(idx) + 1):
        for j in range(count):
            group = a[order[j::count]]
            worst = max(worst, np.linalg.cond(group.conj() @ group.T))
    return worst


@pytest.mark.parametrize("m, groups, power", [(2, "fewest", "full"), (4, "fewest", "full"),
                                              (4, "best", "full"), (8, "best", "full"),
                                              (4, "fewest", "descent")])
def test_prefix_splits_equal_numpys(m, groups, power, monkeypatch):
    rng = np.random.default_rng(70 + m)
    k = 14
    tr = Transmission(m, "mu-mimo-zf", "mu-mimo-mmse", zf_groups=groups, ul_power=power)
    g = ArrayGains.of(_vectors(rng, k, m))
    rejected = rng.random((400, k)) < rng.uniform(0.1, 1.0, (400, 1))
    rejected[0] = False                           # nothing rejected: T_comm 0
    monkeypatch.delenv("MULTISPIN_NUMBA", raising=False)
    fast = optimal_split(tr.problem(_Sys, rejected, g, g))
    monkeypatch.setenv("MULTISPIN_NUMBA", "0")
    g2 = ArrayGains.of(np.asarray(g.vectors))     # a fresh memo: the numpy evaluator
    slow = optimal_split(tr.problem(_Sys, rejected, g2, g2))
    np.testing.assert_allclose(fast.t_comm, slow.t_comm, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(fast.mode, slow.mode)
    assert fast.t_comm[0] == 0


def test_numpy_path_where_the_compiled_one_does_not_apply(monkeypatch):
    rng = np.random.default_rng(5)
    a = _vectors(rng, 6, 4)
    args = (a, a, np.full(6, P_UL), P_DL, S, B, N0)
    monkeypatch.delenv("MULTISPIN_NUMBA", raising=False)
    assert SchemeEvaluator(Transmission(4, "mu-mimo-zf", "mu-mimo-mmse"), *args).compiled
    for tr in (Transmission(4, "mu-mimo-zf", "ofdma-mrc"),
               Transmission(4, "ofdma-mrt", "mu-mimo-mmse")):
        assert SchemeEvaluator(tr, *args).compiled is None
    monkeypatch.setenv("MULTISPIN_NUMBA", "0")
    assert SchemeEvaluator(Transmission(4, "mu-mimo-zf", "mu-mimo-mmse"), *args).compiled is None


def test_tables_keep_every_key_as_they_grow(monkeypatch):
    # the hash tables start small and double: keys asked before and after each growth
    # keep their values, and each is worked out once
    rng = np.random.default_rng(9)
    k = 16
    tr = Transmission(4, "mu-mimo-zf", "mu-mimo-mmse", zf_groups="best")
    fast, slow = _pair(tr, _vectors(rng, k, 4), monkeypatch)
    first = rng.integers(1, 1 << k, 50)
    t_first = fast.dl_time(first, np.full(50, k))
    many = np.unique(rng.integers(1, 1 << k, 1500))
    t_many = fast.dl_time(many, np.full(len(many), k))
    assert fast.compiled.tabs[2].shape[0] >= 2 * len(many)
    np.testing.assert_array_equal(fast.dl_time(first, np.full(50, k)), t_first)
    ref = slow.dl_time(many, np.full(len(many), k))
    conds = np.array([_zf_cond(fast.a_dl, s, 4) for s in many])
    assert np.all(np.abs(t_many / ref - 1) <= np.maximum(16 * conds * np.finfo(float).eps, 1e-13))
    assert fast.compiled.used(mn.DL) == len(np.union1d(first, many))
    ul = fast.ul_time(many, np.full(len(many), k))
    np.testing.assert_allclose(ul, slow.ul_time(many, np.full(len(many), k)), rtol=1e-12)
    assert fast.ul_sets_worked_out() == len(many)
    assert bit_weights(k)[-1] == 1 << (k - 1)
