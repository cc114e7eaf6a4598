"""Speed work that must not change values: lazy imports, a callable T_ver in the draft
objective."""
import subprocess
import sys

import numpy as np



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

    root = pathlib.Path(__file__).resolve().parents[2]
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


def test_verification_time_as_a_function_of_gamma():
    """A callable T_ver (a verification-cost model) goes through ``DraftObjective.t_ver``: a
    constant callable gives the scalar's G; T0 + T1 sum(gamma + 1) changes G as its closed form
    says; the compiled search steps aside for it."""
    from multispin_sim.model.fading import channel_gains
    from multispin_sim.model.goodput import DraftObjective
    from multispin_sim.policies import make_reactive_policy
    from multispin_sim.policies.draft_search import greedy_search, make_objective

    system = _system(5)
    g_ul, g_dl = channel_gains(np.random.default_rng(2), system.pathloss)
    base = make_objective(system, g_ul, g_dl, np.ones(5, bool), np.full(5, 20),
                          make_reactive_policy("optimal"), np.random.default_rng(3), 400)
    t0 = base.verify_s
    const = DraftObjective(base.alpha, base.draft_s, lambda g: np.full(len(g), t0), base.caps,
                           base.active, base.tcomm)
    assert const.compiled is None
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
