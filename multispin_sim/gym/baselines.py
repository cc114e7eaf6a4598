"""The built-in draft controllers as agents, and two trivial agents.

``ControllerAgent(env, name)`` is the controller registered as ``policy.draft: name`` ('fixed',
'uniform', 'computation-only', 'greedy', 'budget', 'threshold', 'backoff', 'goodput-argmax',
'off-under-load'), built from the environment's scenario and its episode's population as the
engine builds it, deciding on the environment's round-start context (``env.unwrapped.context``:
the same ``DraftContext``, the same controller stream) and told the outcomes the engine would
tell it (``observe``, from the step's info); the scenario's own controller is the episode's own
instance, which also decided the warm-up rounds. Its actions reproduce the run of the scenario
with that controller, round for round. ``ConstantAgent`` always plays one action.
"""
import numpy as np

from ..engine.compute import energy_powers
from ..policies.draft import DRAFT_CONTROLLERS
from ..scenario import load_scenario


class ControllerAgent:
    """``agent(obs, info) -> gamma``: the draft controller ``name`` (None: the scenario's own)."""

    def __init__(self, env, name=None, overrides=None):
        self.env = env.unwrapped
        self.name = name or self.env.scenario.policy.draft
        DRAFT_CONTROLLERS.lookup(self.name)  # an unknown name fails here, listing the allowed
        self.overrides = dict(overrides or {})
        self._episode = None
        self._told = False
        self.controller = None

    def _build(self):
        u = self.env
        if u.run is None:
            raise RuntimeError("the agent acts in an episode: call the environment's reset() "
                               "first")
        self._episode = u.episode
        # the scenario's own controller: the episode's instance, which decided the warm-up
        # rounds and is told every outcome by the engine (the state a learning controller
        # carries out of the warm-up is its own)
        self._told = self.name == u.scenario.policy.draft and not self.overrides
        if self._told:
            self.controller = u.own_controller
            return
        sc = load_scenario(u.scenario, {"policy.draft": self.name, **self.overrides})
        population = u.run.population
        self.controller = DRAFT_CONTROLLERS.lookup(self.name).from_scenario(
            sc, draft_length=population.draft_length, powers=energy_powers(sc, population))

    def __call__(self, obs=None, info=None):
        u = self.env
        if self._episode != u.episode:
            self._build()
        observe = None if self._told else getattr(self.controller, "observe", None)
        if observe is not None and info is not None:
            # a round's outcomes, or (the asynchronous protocol) each batch verified in the step
            for told in info.get("verified", [info] if "gamma" in info else []):
                observe(told["gamma"], told["accepted"], told["active"])
        return np.asarray(self.controller.lengths(u.context), dtype=np.int64)


class ConstantAgent:
    """Always the same action (a draft length for every device, or any fixed action)."""

    def __init__(self, action):
        self.action = action

    def __call__(self, obs=None, info=None):
        return self.action
