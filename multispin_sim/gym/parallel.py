"""``MultiSpinParallelEnv``: the PettingZoo ``ParallelEnv`` of the environment, one agent per
device choosing its own draft length.

Agent ``device_k`` sees only its own device's entries of the observation (its gains, drafting
latency, acceptance belief, last outcome, whether it has work, its backlog) and the global ones
(DL power budget, time): a Dict of shape-(1,) boxes, the keys of ``spaces.observation_space``.
Its action is Discrete(max_draft + 1). Every agent gets the team reward (the environment's
reward of the round) and an info of its own: its tokens, accepted tokens, rejection, mode
(0 none, 1 UL, 2 DL) and correction delay in the round. ``state()`` is the full observation,
flattened. One step is one round of ``env.MultiSpinEnv`` (control='draft'), which this wraps.
"""

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from ..scenario import load_scenario
from .env import MultiSpinEnv
from .episode import asynchronous
from .spaces import GLOBAL_KEYS, SameSpaces, scalar_int


class MultiSpinParallelEnv(SameSpaces, ParallelEnv):
    """Keyword arguments as ``MultiSpinEnv`` (``control`` is always 'draft')."""

    metadata = {"render_modes": [], "name": "multispin_v0", "is_parallelizable": True}

    def __init__(self, scenario=None, overrides=None, **kwargs):
        kwargs.pop("control", None)
        sc = load_scenario(scenario, overrides)   # read once: the refusal, then the env
        if asynchronous(sc):
            raise ValueError("serving.protocol is 'asynchronous', where devices decide one at a "
                             "time: the parallel environment steps synchronous rounds (one "
                             "agent per device: MultiSpinEnv steps each device's draft)")
        self.env = MultiSpinEnv(sc, "draft", **kwargs)
        k = self.env.k
        self.possible_agents = [f"device_{i}" for i in range(k)]
        self.agents = []
        self._index = {a: i for i, a in enumerate(self.possible_agents)}
        full = self.env.observation_space
        own = {}
        for key, sub in full.spaces.items():
            if key in GLOBAL_KEYS:
                own[key] = sub
            elif isinstance(sub, spaces.MultiBinary):
                own[key] = spaces.MultiBinary(1)
            else:
                own[key] = spaces.Box(sub.low[:1], sub.high[:1], dtype=sub.dtype)
        self._obs_space = spaces.Dict(own)
        self._act_space = spaces.Discrete(self.env.max_draft + 1)
        self.state_space = spaces.flatten_space(full)
        self._obs = None

    def _split(self, obs):
        out = {}
        for agent in self.agents:
            i = self._index[agent]
            out[agent] = {key: (value.copy() if key in GLOBAL_KEYS else value[i:i + 1].copy())
                          for key, value in obs.items()}
        return out

    def reset(self, seed=None, options=None):
        obs, info = self.env.reset(seed=seed, options=options)
        self.agents = list(self.possible_agents)
        self._obs = obs
        return self._split(obs), {a: dict(info) for a in self.agents}

    def step(self, actions):
        gamma = np.zeros(self.env.k, dtype=np.int64)
        for agent, a in actions.items():
            if agent not in self._index:
                raise ValueError(f"unknown agent {agent!r}; agents: device_0..device_{self.env.k - 1}")
            gamma[self._index[agent]] = self._check(agent, a)
        obs, reward, terminated, truncated, info = self.env.step(gamma)
        self._obs = obs
        agents = self.agents
        per_agent = {}
        for agent in agents:
            i = self._index[agent]
            per_agent[agent] = {"tokens": int(info["device_tokens"][i]),
                                "accepted": int(info["accepted"][i]),
                                "rejected": bool(info["rejected"][i]),
                                "mode": int(info["modes"][i]), "delay_s": float(info["delays_s"][i]),
                                "gamma": int(info["gamma"][i]), "round": info["round"],
                                "team_tokens": info["tokens"], "duration_s": info["duration_s"]}
        out = self._split(obs)
        rewards = {a: reward for a in agents}
        terms = {a: terminated for a in agents}
        truncs = {a: truncated for a in agents}
        if terminated or truncated:
            self.agents = []
        return out, rewards, terms, truncs, per_agent

    def _check(self, agent, a):
        hi = self.env.max_draft
        gamma = scalar_int(a, hi)
        if gamma is None:
            raise ValueError(f"draft action for device {self._index[agent]} ({agent}) is {a!r}; "
                             f"allowed: integers 0..{hi}")
        return gamma

    def state(self):
        return spaces.flatten(self.env.observation_space, self._obs)

    def close(self):
        self.env.close()
