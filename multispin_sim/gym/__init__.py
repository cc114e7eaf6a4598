"""Learning agents in the loop: the simulator as a Gymnasium and a PettingZoo environment.

``import multispin_sim.gym`` registers ``multispin_sim/MultiSpin-v0``::

    import gymnasium, multispin_sim.gym
    env = gymnasium.make("multispin_sim/MultiSpin-v0", scenario="scenarios/default.yaml",
                         control="draft", overrides={"devices.count": 8})

(``gymnasium.make("multispin_sim.gym:multispin_sim/MultiSpin-v0", ...)`` imports it first;
Gymnasium 1.x has no plug-in entry points.) ``parallel_env(...)`` is the PettingZoo
``ParallelEnv`` (one agent per device), ``cells_env(...)`` the PettingZoo ``AECEnv`` of several
cells (one agent per cell's server); ``baselines.ControllerAgent`` turns every built-in
draft controller into an agent; ``regret.round_regret`` is the per-step regret. This package
sits beside ``experiments``: it imports the engine, the policies, the model and the scenario,
and nothing in the core imports it (nor gymnasium, pettingzoo or greenlet).
"""
import gymnasium

from .env import MultiSpinEnv, reference_price
from .spaces import observation_space, action_space
from .wrappers import FlatObservation, flat_names

ENV_ID = "multispin_sim/MultiSpin-v0"

if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point="multispin_sim.gym.env:MultiSpinEnv")


def parallel_env(*args, **kwargs):
    """The PettingZoo ``ParallelEnv`` of ``parallel.MultiSpinParallelEnv(*args, **kwargs)``."""
    from .parallel import MultiSpinParallelEnv

    return MultiSpinParallelEnv(*args, **kwargs)


def cells_env(*args, **kwargs):
    """The PettingZoo ``AECEnv`` of ``cells.CellsAECEnv(*args, **kwargs)``."""
    from .cells import CellsAECEnv

    return CellsAECEnv(*args, **kwargs)


__all__ = ["ENV_ID", "MultiSpinEnv", "FlatObservation", "flat_names", "parallel_env", "cells_env",
           "reference_price", "observation_space", "action_space"]
