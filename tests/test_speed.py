"""Speed work that must not change values: the t quantile table, lazy imports, and the
draft controllers' fast paths against their reference implementations."""
import subprocess
import sys

import numpy as np
import pytest

from multispin_sim.outputs.tquantile import Q95, _T95, t_quantile


def test_t_quantile_table_is_scipys_values():
    from scipy import stats

    for df in range(1, len(_T95) + 1):
        assert t_quantile(Q95, df) == float(stats.t.ppf(Q95, df))
    # outside the table: scipy itself
    assert t_quantile(0.9, 7) == float(stats.t.ppf(0.9, 7))
    assert t_quantile(Q95, 2.5) == float(stats.t.ppf(Q95, 2.5))


def test_short_run_imports_no_heavy_scipy():
    code = (
        "import sys, tempfile\n"
        "import multispin_sim as ms\n"
        "from multispin_sim import cli\n"
        "sc = ms.load_scenario('scenarios/default.yaml', overrides={'run.rounds': 10})\n"
        "with tempfile.TemporaryDirectory() as tmp:\n"
        "    ms.simulate(sc, out=tmp + '/run')\n"
        "heavy = [m for m in ('scipy.stats', 'scipy.optimize', 'scipy.special', 'scipy.signal',\n"
        "                     'matplotlib', 'dask') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, cwd=root).stdout.strip()
    assert out == "[]"


# ---------------------------------------------------------------------------- compiled greedy

def _system(k, seed=5):
    from multispin_sim.engine.population import build_population
    from multispin_sim.engine.streams import RandomStreams
    from multispin_sim.scenario import load_scenario

    sc = load_scenario(None, overrides={"devices.count": k, "seed": seed})
    return build_population(sc, RandomStreams(sc.seed).devices).system


@pytest.mark.parametrize("mode,k,decisions", [("optimal", 20, 300), ("optimal", 3, 60),
                                              ("all-ul", 12, 60), ("all-dl", 20, 60),
                                              ("random", 9, 60)])
def test_compiled_greedy_equals_numpy_greedy(mode, k, decisions, monkeypatch):
    """The numba greedy against the numpy one (the reference, with every compiled piece off:
    objective, kernel, search) on the same samples: the same lengths, the same G bit for bit,
    the same evaluation counts -- full and partial rounds."""
    pytest.importorskip("numba")
    from multispin_sim.model.fading import channel_gains
    from multispin_sim.policies import greedy_fast, make_reactive_policy
    from multispin_sim.policies.draft_search import greedy_search, make_objective

    if not greedy_fast.available():
        pytest.skip("compiled path disabled (MULTISPIN_NUMBA=0)")
    system = _system(k)
    rng = np.random.default_rng(k)
    policy = make_reactive_policy(mode)
    real = greedy_fast._load()
    used = 0
    for r in range(decisions):
        g_ul, g_dl = channel_gains(rng, system.pathloss)
        active, caps = np.ones(k, bool), np.full(k, 20)
        if r % 4 == 3:   # some devices idle, some near the end of their request
            active = rng.random(k) < 0.7
            caps = rng.integers(0, 21, k)
        obj = make_objective(system, g_ul, g_dl, active, caps, policy,
                             np.random.default_rng([k, r]), 1000)
        used += greedy_fast.eligible(obj)
        fast = greedy_search(obj, compiled=True)
        monkeypatch.setattr(greedy_fast, "_kernels", False)
        obj = make_objective(system, g_ul, g_dl, active, caps, policy,
                             np.random.default_rng([k, r]), 1000)
        ref = greedy_search(obj, compiled=False)
        monkeypatch.setattr(greedy_fast, "_kernels", real)
        assert np.array_equal(fast.gamma, ref.gamma), r
        assert fast.value == ref.value, r
        assert (fast.evaluations, fast.info) == (ref.evaluations, ref.info), r
    assert used == decisions


def test_compiled_greedy_not_used_where_it_does_not_apply():
    """Sampled fading (draft_update: once), a policy without a closed form, or a verification
    time given as a function of gamma: the numpy search runs."""
    from multispin_sim.model.fading import channel_gains
    from multispin_sim.policies import greedy_fast, make_reactive_policy
    from multispin_sim.policies.draft_search import make_objective

    system = _system(6)
    g_ul, g_dl = channel_gains(np.random.default_rng(0), system.pathloss)
    pol = make_reactive_policy("optimal")
    obj = make_objective(system, g_ul, g_dl, np.ones(6, bool), np.full(6, 20), pol,
                         np.random.default_rng(1), 500, sampled_fading=True)
    assert not greedy_fast.eligible(obj)
    obj = make_objective(system, g_ul, g_dl, np.ones(6, bool), np.full(6, 20), pol,
                         np.random.default_rng(1), 500)
    obj.precomputable = False
    assert not greedy_fast.eligible(obj)
    obj.precomputable = True
    assert greedy_fast.eligible(obj)
    obj.tcomm.kernel.equivalent_loads = False     # e.g. a link model with MCS tables
    assert not greedy_fast.eligible(obj)


def test_run_with_compiled_greedy_writes_the_same_bytes(tmp_path, monkeypatch):
    """A greedy every-round run: rounds.csv identical with and without the compiled search."""
    pytest.importorskip("numba")
    import multispin_sim as ms
    from multispin_sim.policies import greedy_fast

    if not greedy_fast.available():
        pytest.skip("compiled path disabled")
    sc = ms.load_scenario(None, overrides={"policy.draft": "greedy", "run.rounds": 120,
                                           "policy.draft_update": "every-round"})
    ms.simulate(sc, out=tmp_path / "fast")
    monkeypatch.setattr(greedy_fast, "_kernels", False)
    ms.simulate(sc, out=tmp_path / "numpy")
    for name in ("rounds.csv", "device_rounds.csv", "devices.csv"):
        fast, ref = tmp_path / "fast" / name, tmp_path / "numpy" / name
        assert fast.read_bytes() == ref.read_bytes(), name


def test_verification_time_as_a_function_of_gamma():
    """A callable T_ver (a verification-cost model) goes through ``DraftObjective.t_ver``: a
    constant callable gives the scalar's G; T0 + T1 sum(gamma + 1) changes G as its closed form
    says; the compiled greedy steps aside for it."""
    from multispin_sim.model.fading import channel_gains
    from multispin_sim.model.goodput import DraftObjective
    from multispin_sim.policies import greedy_fast, make_reactive_policy
    from multispin_sim.policies.draft_search import greedy_search, make_objective

    system = _system(5)
    g_ul, g_dl = channel_gains(np.random.default_rng(2), system.pathloss)
    base = make_objective(system, g_ul, g_dl, np.ones(5, bool), np.full(5, 20),
                          make_reactive_policy("optimal"), np.random.default_rng(3), 400)
    t0 = base.verify_s
    const = DraftObjective(base.alpha, base.draft_s, lambda g: np.full(len(g), t0), base.caps,
                           base.active, base.tcomm)
    assert not greedy_fast.eligible(const)
    gam = np.array([[0, 1, 2, 3, 4], [4, 4, 4, 4, 4]])
    assert np.array_equal(const.values(gam), base.values(gam))
    a, b = greedy_search(const, compiled=False), greedy_search(base, compiled=False)
    assert np.array_equal(a.gamma, b.gamma) and a.value == b.value
    t1 = 1e-3
    per_token = DraftObjective(base.alpha, base.draft_s,
                               lambda g: t0 + t1 * (g + 1).sum(axis=1), base.caps,
                               base.active, base.tcomm)
    v = per_token.values(gam)
    ref = base.values(gam)
    tok, dr = base.tokens(gam), base.drafting(gam)
    t_comm = tok / ref - dr - t0
    expect = tok / (dr + t0 + t1 * (gam + 1).sum(axis=1) + t_comm)
    assert np.allclose(v, expect, rtol=1e-12)


@pytest.mark.parametrize("name,mode,decisions", [("uniform", "optimal", 40), ("budget", "optimal", 12),
                                                 ("budget", "random", 6)])
def test_compiled_paths_in_uniform_and_budget_give_the_same_answers(name, mode, decisions,
                                                                     monkeypatch):
    """uniform and budget evaluate their nondecreasing paths with the compiled path_mean: the
    same lengths, values and evaluation counts as the numpy estimator alone."""
    pytest.importorskip("numba")
    from multispin_sim.model.fading import channel_gains
    from multispin_sim.policies import draft_search, greedy_fast, make_reactive_policy

    if not greedy_fast.available():
        pytest.skip("compiled path disabled")
    search = {"uniform": draft_search.uniform_search, "budget": draft_search.budget_search}[name]
    k = 10
    system = _system(k, seed=7)
    rng = np.random.default_rng(11)
    policy = make_reactive_policy(mode)
    real = greedy_fast._kernels
    for r in range(decisions):
        g_ul, g_dl = channel_gains(rng, system.pathloss)
        caps = np.full(k, 20) if r % 2 else rng.integers(0, 21, k)
        out = []
        for kernels in (real, False):
            monkeypatch.setattr(greedy_fast, "_kernels", kernels)
            obj = draft_search.make_objective(system, g_ul, g_dl, np.ones(k, bool), caps, policy,
                                              np.random.default_rng([7, r]), 600)
            out.append(search(obj))
        fast, ref = out
        assert np.array_equal(fast.gamma, ref.gamma) and fast.value == ref.value, r
        assert fast.evaluations == ref.evaluations, r
