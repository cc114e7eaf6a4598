"""The compiled draft search (``policies.search_numba``) against the numpy reference.

Numbers within rtol 1e-12; decisions identical except at near-ties, where the numpy objective
itself cannot tell the two answers apart (values within 1e-12 relative). Every comparison uses
the same samples (the objective is built once per decision and evaluated both ways).
"""
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from multispin_sim.engine.population import build_population
from multispin_sim.engine.streams import RandomStreams
from multispin_sim.model.fading import channel_gains
from multispin_sim.model.estimators import RUN_CAP, acceptance_runs
from multispin_sim.policies import draft_search as ds
from multispin_sim.policies import make_reactive_policy
from multispin_sim.scenario import load_scenario

sn = pytest.importorskip("multispin_sim.policies.search_numba",
                         reason="numba is a core dependency; this install lacks it")
bn = pytest.importorskip("multispin_sim.policies.budget_numba")
MODES = ("optimal", "all-ul", "all-dl", "random")


def _system(k, seed=5, **overrides):
    sc = load_scenario(None, overrides={"devices.count": k, "seed": seed, **overrides})
    return build_population(sc, RandomStreams(sc.seed).devices).system


def _objective(system, mode, seed, samples=400, active=None, caps=20):
    rng = np.random.default_rng(seed)
    g_ul, g_dl = channel_gains(rng, system.pathloss)
    k = system.k
    active = np.ones(k, bool) if active is None else active
    return ds.make_objective(system, g_ul, g_dl, active, np.full(k, caps),
                             make_reactive_policy(mode), rng, samples)


def _numpy_twin(obj):
    """The same objective with no compiled implementation."""
    verify = obj.verify_s if obj.verify_fn is None else obj.verify_fn
    twin = ds.DraftObjective(obj.alpha, obj.draft_s, verify, obj.caps, obj.active,
                             ds.SAATcomm(obj.tcomm.runs.copy(), obj.tcomm.kernel))
    assert twin.compiled is None
    return twin


def _compiled_times(kernel, rejected, rows):
    """T_comm of rejected rows (n, K) by the compiled closed forms (``search_numba._times``)
    of a ``CompiledKernel``; rows: their sample indices (the random split's coins)."""
    n = rejected.shape[0]
    size = n + sn.LANES
    masks = np.zeros(size, np.uint64)
    masks[:n] = (rejected.astype(np.uint64) * kernel.bit).sum(axis=1, dtype=np.uint64)
    samples = np.zeros(size, np.int64)
    samples[:n] = rows
    out = np.empty(n)
    sn._times(masks, samples, n, out, *kernel.loads)
    return out


def _state(obj, gamma):
    """The compiled search's state at ``gamma`` (a one-point ``budget_numba._scan``,
    ``_state_at``, ``_set``): the arguments its path scans and moves take after the moves
    themselves."""
    kern = obj.compiled.kernel
    (runs, caps, enw, draft_s, vt), buf = bn._inputs(obj)
    m = runs.shape[0]
    order, start = sn._by_run(runs, int(caps.max()) + 1)
    bit = kern.bit
    mask, t, st = np.empty(m, np.uint64), np.empty(m), np.empty(6)
    gamma = np.array(gamma, dtype=np.int64)
    e = bn._scan(gamma[None, :], bit, order, start, buf, enw, draft_s, vt, m, kern.loads)[4]
    bn._state_at(0, buf, e, mask, t)
    bn._set(gamma, t, enw, draft_s, vt, st)
    return (gamma, mask, t, st, bit, order, start, buf, enw, draft_s, vt, kern.loads)


def _same_decision(a, b, twin):
    """Identical, or a near-tie: the reference objective values of both within 1e-12."""
    if np.array_equal(a.gamma, b.gamma):
        return True
    va, vb = twin.values(np.stack([a.gamma, b.gamma]))
    return abs(va - vb) <= 1e-12 * abs(vb)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", [1, 7, 20, 64])
def test_kernel_equals_numpy_kernel(mode, k):
    system = _system(k, seed=k)
    obj = _objective(system, mode, seed=k)
    assert obj.compiled is not None
    rng = np.random.default_rng(k)
    rej = rng.random((500, k)) < rng.random((500, 1))
    rej[0] = False
    rej[1] = True
    rows = rng.integers(0, 400, 500)
    np.testing.assert_allclose(_compiled_times(obj.compiled.kernel, rej, rows),
                               obj.tcomm.kernel(rej, rows), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("mode", MODES)
def test_path_scans_equal_numpy(mode):
    system = _system(12, seed=3)
    obj = _objective(system, mode, seed=4)
    twin = _numpy_twin(obj)
    gamma, mask, t, st, bit, order, start, buf, enw, draft_s, vt, kern = \
        _state(obj, np.zeros(12))
    for path in (ds.uniform_path(obj.caps),
                 ds.budget_path(obj.caps, obj.draft_s, np.arange(12) % 3 > 0)):
        got = bn._scan(path, obj.compiled.kernel.bit, order, start, buf, enw, draft_s, vt,
                       obj.tcomm.m, kern)[0]
        np.testing.assert_allclose(got, twin.path_values(path), rtol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_move_values_equal_numpy(mode):
    system = _system(10, seed=6)
    obj = _objective(system, mode, seed=7)
    twin = _numpy_twin(obj)
    gamma = np.random.default_rng(1).integers(0, 12, 10)
    twin.reset(gamma)
    # two moves a device over disjoint runs, as the searches' moves are (the compiled work
    # arrays hold one event per sample and device)
    dev = np.repeat(np.arange(10), 2)
    new = np.tile([0, 17], 10)
    np.testing.assert_allclose(bn._move_values(dev, new, obj.tcomm.m, *_state(obj, gamma)),
                               twin.move_values(dev, new), rtol=1e-12)
    np.testing.assert_allclose(bn._screened(dev, new, 100, 5, *_state(obj, gamma))[0],
                               twin.move_values(dev, new, (100, 5)), rtol=1e-12)
    # moves of one device over overlapping runs would need more room than the work arrays
    # have: an error, not a write past them
    many = np.repeat(np.arange(10), 6)
    with pytest.raises(ValueError, match="disjoint runs"):
        bn._move_values(many, np.tile([0, 17], 30), obj.tcomm.m, *_state(obj, gamma))


@pytest.mark.parametrize("mode,k,decisions", [("optimal", 20, 120), ("optimal", 3, 40),
                                              ("all-ul", 12, 40), ("all-dl", 20, 40),
                                              ("random", 9, 40)])
def test_greedy_equals_numpy_greedy(mode, k, decisions):
    system = _system(k)
    near_ties = 0
    for r in range(decisions):
        active = np.random.default_rng(r).random(k) < 0.8 if r % 4 == 0 else None
        obj = _objective(system, mode, seed=100 + r, active=active)
        twin = _numpy_twin(obj)
        a, b = ds.greedy_search(obj), ds.greedy_search(twin)
        assert _same_decision(a, b, twin), (r, a.gamma, b.gamma)
        near_ties += not np.array_equal(a.gamma, b.gamma)
        if np.array_equal(a.gamma, b.gamma):
            assert a.value == pytest.approx(b.value, rel=1e-12)
    assert near_ties <= max(1, decisions // 50)


@pytest.mark.parametrize("name", ["uniform", "budget"])
@pytest.mark.parametrize("mode", ["optimal", "random"])
def test_uniform_and_budget_equal_numpy(name, mode):
    system = _system(8, seed=2)
    search = getattr(ds, f"{name}_search")
    for r in range(8):
        # with inactive devices and short caps every other decision
        active = np.arange(8) % 3 > 0 if r % 2 else None
        obj = _objective(system, mode, seed=200 + r, samples=300, active=active,
                         caps=20 if r % 2 == 0 else 1 + r)
        twin = _numpy_twin(obj)
        a, b = search(obj), search(twin)
        assert a.evaluations == b.evaluations or name == "budget"
        assert _same_decision(a, b, twin)
        if np.array_equal(a.gamma, b.gamma):
            assert a.value == pytest.approx(b.value, rel=1e-12)


@pytest.mark.parametrize("mode,k,decisions", [("optimal", 20, 40), ("optimal", 3, 15),
                                              ("all-ul", 12, 15), ("all-dl", 20, 15),
                                              ("random", 9, 15), ("optimal", 64, 3)])
def test_compiled_budget_equals_numpy_budget(mode, k, decisions):
    """The budget search compiled whole against the numpy reference: the same decisions except
    at near-ties, with inactive devices and caps from 1 to 24."""
    system = _system(k)
    near_ties = 0
    for r in range(decisions):
        rng = np.random.default_rng(r)
        active = rng.random(k) < 0.8 if r % 4 == 0 else None
        obj = _objective(system, mode, seed=300 + r, active=active, caps=int(rng.integers(1, 25)))
        twin = _numpy_twin(obj)
        a, b = ds.budget_search(obj), ds.budget_search(twin)
        assert a.info["chosen"] in ("local", "greedy", "uniform")
        assert _same_decision(a, b, twin), (r, a.gamma, b.gamma)
        near_ties += not np.array_equal(a.gamma, b.gamma)
        if np.array_equal(a.gamma, b.gamma):
            assert a.value == pytest.approx(b.value, rel=1e-12)
            assert a.info["excluded"] == b.info["excluded"]
        # never worse than the greedy and the uniform answers on the same objective (the tie
        # rule may prefer a point within 1e-12 relative)
        best_other = max(a.info["values"]["greedy"], a.info["values"]["uniform"])
        assert a.value >= best_other - 1e-12 * abs(best_other)
    assert near_ties <= max(1, decisions // 50)


@pytest.mark.parametrize("verify_model", ["tokens", "table"])
@pytest.mark.parametrize("name", ["greedy", "uniform", "budget"])
def test_searches_with_a_verification_cost_of_the_draft(verify_model, name):
    """T_ver a function of the batch's tokens (``server.verify_model`` 'tokens' or 'table'):
    the compiled searches read it as a table over the total draft length and agree with the
    numpy reference, which calls the cost component on every candidate."""
    system = _system(12, seed=8, **{"server.verify_model": verify_model})
    search = getattr(ds, f"{name}_search")
    near_ties = 0
    for r in range(10):
        active = np.arange(12) % 4 > 0 if r % 3 == 0 else None
        obj = _objective(system, "optimal", seed=400 + r, samples=300, active=active,
                         caps=20 if r % 2 else 3 + r)
        assert obj.compiled is not None and obj.verify_fn is not None
        twin = _numpy_twin(obj)
        a, b = search(obj), search(twin)
        assert _same_decision(a, b, twin), (r, a.gamma, b.gamma)
        near_ties += not np.array_equal(a.gamma, b.gamma)
        if np.array_equal(a.gamma, b.gamma):
            assert a.value == pytest.approx(b.value, rel=1e-12)
    assert near_ties <= 1
    # the pieces: path scans and single-device moves
    obj = _objective(system, "optimal", seed=9)
    twin = _numpy_twin(obj)
    gamma = np.random.default_rng(2).integers(0, 12, 12)
    state = _state(obj, gamma)
    for path in (ds.uniform_path(obj.caps), ds.budget_path(obj.caps, obj.draft_s, obj.caps > 0)):
        got = bn._scan(path, obj.compiled.kernel.bit, *state[5:11], obj.tcomm.m, state[11])[0]
        np.testing.assert_allclose(got, twin.path_values(path), rtol=1e-12)
    twin.reset(gamma)
    dev, new = np.repeat(np.arange(12), 2), np.tile([0, 17], 12)
    np.testing.assert_allclose(bn._move_values(dev, new, obj.tcomm.m, *state),
                               twin.move_values(dev, new), rtol=1e-12)


def test_compiled_only_where_it_applies(monkeypatch):
    system = _system(5)
    assert _objective(system, "optimal", 1).compiled is not None
    rng = np.random.default_rng(0)
    g = channel_gains(rng, system.pathloss)
    # a reactive policy without a closed form, sampled fading, a T_ver function that has no
    # table by total draft length, 65 devices
    assert ds.make_objective(system, *g, np.ones(5, bool), np.full(5, 9),
                             make_reactive_policy("deadline"), rng, 200).compiled is None
    assert ds.make_objective(system, *g, np.ones(5, bool), np.full(5, 9), None, rng, 200,
                             sampled_fading=True).compiled is None
    base = _objective(system, "optimal", 2)
    assert sn.CompiledSearch.for_objective(ds.DraftObjective(
        base.alpha, base.draft_s, lambda gam: np.full(len(gam), 0.1), base.caps, base.active,
        base.tcomm)) is None
    assert _objective(_system(65), "optimal", 3, samples=50).compiled is None
    monkeypatch.setenv("MULTISPIN_NUMBA", "0")
    assert _objective(system, "optimal", 1).compiled is None


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 64), st.integers(1, 200), st.floats(0.0, 1.0), st.integers(0, 2**32))
def test_runs_from_logs_equal_acceptance_runs(k, m, alpha_one, seed):
    rng = np.random.default_rng(seed)
    u = 1.0 - rng.random((m, k))
    u[0, 0] = 1.0
    alpha = rng.random(k)
    alpha[0] = 1.0 if alpha_one > 0.5 else 0.0
    with np.errstate(divide="ignore"):
        got = sn.runs_from_logs(np.log(u), np.log(alpha), RUN_CAP)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(got, acceptance_runs(u, alpha))


@pytest.mark.parametrize("draft", ["greedy", "budget"])
def test_a_run_with_draft_control_is_the_same_either_way(tmp_path, draft):
    """One run decided compiled and one decided in numpy: the same rounds (rtol 1e-12)."""
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    outs = []
    for flag in ("1", "0"):
        out = tmp_path / f"run{flag}"
        subprocess.run([sys.executable, "-m", "multispin_sim", "run", "scenarios/default.yaml",
                        "--set", f"policy.draft={draft}", "--set", "policy.saa_samples=200",
                        "--rounds", "30", "--quiet", "--out", str(out)], check=True, cwd=root,
                       env={**os.environ, "MULTISPIN_NUMBA": flag})
        outs.append(np.genfromtxt(out / "rounds.csv", delimiter=",", names=True))
    for name in outs[0].dtype.names:
        np.testing.assert_allclose(outs[0][name], outs[1][name], rtol=1e-12, equal_nan=True)


def test_decisions_in_parallel_threads_equal_serial_ones():
    """The compiled searches keep their work arrays per thread (``search_numba.scratch``):
    greedy and budget decisions made in two threads at once equal the same decisions made one
    after another (the objectives are built first, so the threads overlap in compiled code)."""
    from concurrent.futures import ThreadPoolExecutor

    system = _system(20, seed=4)
    jobs = [(seed, name) for seed in range(300, 312) for name in ("greedy", "budget")]

    def objectives():
        return [(_objective(system, "optimal", seed=seed, samples=2000), name)
                for seed, name in jobs]

    def decide(job):
        obj, name = job
        return getattr(ds, f"{name}_search")(obj).gamma

    serial = [decide(j) for j in objectives()]
    with ThreadPoolExecutor(2) as pool:
        parallel = list(pool.map(decide, objectives()))
    assert all(np.array_equal(a, b) for a, b in zip(serial, parallel))
