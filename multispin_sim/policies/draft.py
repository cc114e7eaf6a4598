"""Draft-length controllers: gamma_k for every device, decided at the start of a round.

A controller sees a ``DraftContext`` (this round's channel state, who is active, the system) and
returns an int array of draft lengths. ``DraftController.lengths`` applies the update schedule
(``policy.draft_update``: every round, once, or every N rounds) around ``decide``.
"""
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..model.system import System
from .registry import Registry

DRAFT_CONTROLLERS = Registry("draft controller")


@dataclass
class DraftContext:
    """What a draft controller knows at the start of a round.

    round: index; system: the static parameters; g_ul, g_dl: this round's gains (K,);
    active: devices with work this round (K,) bool; remaining: tokens each still needs (K,) or
    None (saturated); reactive: the scenario's reactive policy (to evaluate T_comm);
    rng: the controller's own random stream (sample average approximation).
    """

    round: int
    system: System
    g_ul: np.ndarray
    g_dl: np.ndarray
    active: np.ndarray
    remaining: Optional[np.ndarray] = None
    reactive: object = None
    rng: object = None


class DraftController:
    """Interface: ``decide(ctx) -> (K,) int array``; ``lengths(ctx)`` adds the update schedule."""

    name = "?"

    def __init__(self, max_draft=20, update="every-round", **_):
        self.max_draft = int(max_draft)
        self.update = update
        self._cached = None

    def due(self, round_index):
        if self._cached is None or self.update == "every-round":
            return True
        if self.update == "once":
            return False
        return round_index % int(self.update) == 0

    def lengths(self, ctx):
        if self.due(ctx.round):
            self._cached = np.asarray(self.decide(ctx), dtype=np.int64)
        gamma = np.where(ctx.active, self._cached, 0)
        if ctx.remaining is not None:
            gamma = np.minimum(gamma, np.maximum(ctx.remaining - 1, 0))
        return gamma

    def decide(self, ctx):
        raise NotImplementedError


@DRAFT_CONTROLLERS.register("fixed")
class FixedDraft(DraftController):
    """The same draft lengths every round: one value for all, or one per device."""

    def __init__(self, draft_length=4, **kwargs):
        super().__init__(**kwargs)
        self.draft_length = np.asarray(draft_length, dtype=np.int64)

    def decide(self, ctx):
        return np.broadcast_to(self.draft_length, ctx.active.shape).copy()


def make_draft_controller(name, **kwargs):
    """The draft controller registered under ``name`` (``policy.draft`` in the scenario)."""
    return DRAFT_CONTROLLERS.make(name, **kwargs)
