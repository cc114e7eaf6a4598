"""The regret's objective is the scenario's searching controller's own (``policies.draft.
priced_objective``): on the same round-start context and the same random stream, the value the
regret gives the agent's draft vector is the controller's objective at it, in every update
schedule (``once`` samples fading instead of reading the CSI), pricing plan, estimator and
energy objective."""
import dataclasses

import numpy as np
import pytest

import multispin_sim.gym as G
from multispin_sim.gym.regret import round_regret
from multispin_sim.policies.draft import pricing_options
from multispin_sim.policies.draft_search import exhaustive_search


@pytest.mark.parametrize("overrides", [
    {},
    {"policy.draft_update": "once"},
    {"policy.draft_update": 3, "policy.plan_gains": "ergodic"},
    {"channel.coherence_time_ms": 5.0},           # auto: ergodic in the first round
    {"policy.estimator": "exact"},
    {"policy.objective": "tokens-per-joule", "policy.energy_scope": "total"},
])
def test_the_regret_evaluates_the_controllers_objective(overrides):
    env = G.MultiSpinEnv("scenarios/default.yaml", "draft", {
        "devices.count": 3, "policy.max_draft": 4, "policy.draft": "greedy",
        "policy.saa_samples": 60, **overrides}, rounds=3, price=1.0)
    env.reset(seed=2)
    ctx = env.unwrapped.context
    controller = env.unwrapped.own_controller
    gamma = np.array([1, 3, 2])
    # the scenario's default: saturated devices, so a decision's scope (all devices, caps
    # max_draft) is the round's in every update schedule
    assert ctx.remaining is None and np.all(ctx.active)
    obj = controller.objective(dataclasses.replace(ctx, rng=np.random.default_rng(5)))
    got = round_regret(ctx, gamma, np.random.default_rng(5), 4, samples=60,
                       energy=controller.energy, pricing=pricing_options(env.unwrapped.scenario))
    assert got["method"] == "exhaustive"
    assert got["agent"] == pytest.approx(obj.value_of(gamma), rel=1e-12)
    assert got["best"] == pytest.approx(exhaustive_search(obj).value, rel=1e-12)
    env.close()
