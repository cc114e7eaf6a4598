"""The split agent hands the run's hooks on to the scenario's own policy, which decides every
round the agent gives no action (the warm-up, a step without one)."""
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from multispin_sim.gym.control import AgentSplit  # noqa: E402
from multispin_sim.policies.straggler import RobustSplit  # noqa: E402
from multispin_sim.policies.fidelity import FidelitySplit  # noqa: E402


def test_the_own_policy_gets_the_channel_and_the_payload():
    robust = RobustSplit(rho=0.5)
    channel = SimpleNamespace(pathloss=np.array([1e-9, 2e-9]), csi_rho=lambda: None,
                              direct_paths=lambda: None, estimate_now=lambda: None)
    AgentSplit(robust).use_channel(channel)
    channel.pathloss = np.array([3e-9, 4e-9])   # mobility replaces the array: still followed
    np.testing.assert_array_equal(robust.pathloss(), [3e-9, 4e-9])
    fidelity = FidelitySplit()
    model = SimpleNamespace(tv_budget=0.25)
    AgentSplit(fidelity).bind_payload(model)
    assert fidelity.model is model and fidelity.tv_budget == 0.25
