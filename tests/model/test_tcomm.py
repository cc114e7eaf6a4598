"""The closed-form T_comm kernels (multispin_sim.model.tcomm, docs/model.md section 6).

Oracles, independent of the module under test: the reactive solvers of
multispin_sim.model.reactive (optimal prefix split, all-UL, all-DL, the split of a given coin) on
every rejected set, and an exhaustive search over UL/DL assignments.
"""
import numpy as np
import pytest

from goodput_systems import MODES, Coins, make_system
from multispin_sim.model import reactive as R
from multispin_sim.model.estimators import SAATcomm, acceptance_runs
from multispin_sim.model.speculative import acceptance_uniforms
from multispin_sim.model.system import System
from multispin_sim.model.tcomm import TcommKernel
from multispin_sim.policies.draft_search import make_kernel
from multispin_sim.policies.reactive import make_reactive_policy


def _gains(s, rng, m, per_sample):
    """UL and DL gains: one Rayleigh draw per device, or per sample and device."""
    shape = (m, s.alpha.size) if per_sample else (s.alpha.size,)
    return s.pathloss * rng.exponential(size=shape), s.pathloss * rng.exponential(size=shape)


def _solver_t_comm(mode, problem, coin_u):
    """T_comm of the reactive solvers (the oracle); the random split flips ``coin_u``."""
    if mode == "random":
        return R.random_split(problem, Coins(coin_u)).t_comm
    if mode == "exhaustive":
        return R.optimal_split(problem).t_comm
    return make_reactive_policy(mode).decide(problem).t_comm


@pytest.mark.parametrize("per_sample", [False, True])
@pytest.mark.parametrize("mode", MODES + ("exhaustive",))
def test_kernel_equals_reactive_solvers(mode, per_sample):
    rng = np.random.default_rng(11)
    k, m = 12, 600
    s = make_system(k, seed=3)
    g_ul, g_dl = _gains(s, rng, m, per_sample)
    rej = rng.random((m, k)) < rng.uniform(0, 1, (m, 1))
    rej[0] = False                       # nobody rejected
    rej[1] = False
    rej[1, 4] = True                     # one device
    coin_u = rng.random((m, k))
    ref = _solver_t_comm(mode, s.reactive_problem(rej, g_ul, g_dl), coin_u)
    got = TcommKernel(s, g_ul, g_dl, mode, coin=coin_u < 0.5)(rej, np.arange(m))
    assert got[0] == 0.0
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=0)


@pytest.mark.parametrize("per_sample", [False, True])
@pytest.mark.parametrize("mode", MODES)
def test_kernel_grid_equals_reactive_solvers(mode, per_sample):
    """The SAA estimator's grid (every sample under every row of draft lengths, in one kernel
    call) as the reactive solvers find it, sample by sample."""
    rng = np.random.default_rng(12)
    k, m = 10, 300
    s = make_system(k, seed=4)
    g_ul, g_dl = _gains(s, rng, m, per_sample)
    runs = acceptance_runs(acceptance_uniforms(rng, (m, k)), s.alpha)
    bounds = rng.integers(0, 12, (7, k)).astype(np.int32)
    bounds[0] = 0
    coin_u = rng.random((m, k))
    got = SAATcomm(runs, TcommKernel(s, g_ul, g_dl, mode, coin=coin_u < 0.5))._grid(bounds)
    assert got.shape == (7, m) and np.all(got[0] == 0.0)
    for row, b in enumerate(bounds):
        ref = _solver_t_comm(mode, s.reactive_problem(runs < b, g_ul, g_dl), coin_u)
        np.testing.assert_allclose(got[row], ref, rtol=1e-12, atol=0)


def test_kernel_optimal_against_exhaustive_assignments():
    rng = np.random.default_rng(5)
    s = make_system(7, seed=8, p_dl_dbm=12.0)
    g = s.pathloss * rng.exponential(size=7)
    rej = rng.random((60, 7)) < 0.6
    ref = R.exhaustive_split(s.reactive_problem(rej, g, g)).t_comm
    got = TcommKernel(s, g, g, "optimal")(rej)
    np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_kernel_edge_cases():
    rng = np.random.default_rng(2)
    s = make_system(6, seed=1)
    g = s.pathloss * rng.exponential(size=6)
    rej = rng.random((40, 6)) < 0.5
    # no DL power: the optimum is all-UL; all-DL is infinitely slow
    s0 = System(**{**s.__dict__, "p_dl_w": 0.0})
    p0 = s0.reactive_problem(rej, g, g)
    np.testing.assert_allclose(TcommKernel(s0, g, g, "optimal")(rej), R.optimal_split(p0).t_comm, rtol=1e-12)
    t_dl = TcommKernel(s0, g, g, "all-dl")(rej)
    assert np.all(np.isinf(t_dl[rej.any(axis=1)]))
    # zero payload: nothing to send
    sz = System(**{**s.__dict__, "payload_bits": 0.0})
    for mode in MODES:
        t = TcommKernel(sz, g, g, mode, coin=rej)(rej)
        assert np.all(t == 0.0)


@pytest.mark.parametrize("mode", MODES)
def test_policy_kernel_equals_fast_kernel(mode):
    """A reactive policy the kernel does not know is called as is; randomised policies see the
    same per-sample uniforms whatever batch a sample is evaluated in."""
    rng = np.random.default_rng(4)
    s = make_system(10, seed=2)
    g = s.pathloss * rng.exponential(size=10)
    base = type(make_reactive_policy(mode))

    class Custom(base):
        def decide(self, problem, rng=None):       # same decisions, unknown to the fast path
            return base.decide(self, problem, rng)

    coin_u = rng.random((300, 10))
    fast = make_kernel(s, g, g, make_reactive_policy(mode), coin_u)
    slow = make_kernel(s, g, g, Custom(), coin_u, seed=1)
    assert isinstance(fast, TcommKernel) and not isinstance(slow, TcommKernel)
    rej = rng.random((300, 10)) < 0.4
    rows = rng.permutation(300)[:120]
    np.testing.assert_allclose(slow(rej[rows], rows), fast(rej[rows], rows), rtol=1e-12)
