"""Observation wrappers: the Dict observation flattened to one float vector, and its labels."""
import gymnasium
from gymnasium import spaces

from .spaces import GLOBAL_KEYS


class FlatObservation(gymnasium.wrappers.FlattenObservation):
    """The Dict observation as one vector (``gymnasium.spaces.flatten``: keys in sorted order,
    each key's entries in device order); ``flat_names(env)`` labels its entries."""


def flat_names(env):
    """``"key[i]"`` for each entry of the flattened observation of ``env`` (in order): i the
    device (also with one device); the system's own entries (``p_dl_w``, ``time_s``) by key."""
    space = env.unwrapped.observation_space
    names = []
    for key, sub in space.spaces.items():
        n = spaces.flatdim(sub)
        names += [key] if key in GLOBAL_KEYS else [f"{key}[{i}]" for i in range(n)]
    return names
