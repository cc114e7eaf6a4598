"""Adaptive draft-length policies (``policy.draft``), usable in both serving protocols.

Each decides per device; in the asynchronous protocol a controller is asked at every draft start
with only the drafting device active. Parameters come from the scenario's ``adaptive`` section.

- ``threshold`` (SpecDec++-style stopping): device k keeps drafting while the probability that
  every token drafted so far is accepted stays >= ``threshold``. In bits-only mode the draft
  model's confidence at a position is the acceptance model's per-position agreement probability
  (alpha_k under i.i.d. acceptance), so gamma_k = the largest i <= max_draft with
  alpha_k^i >= threshold, i.e. floor(ln threshold / ln alpha_k).
- ``backoff`` (Hugging Face assisted generation's "heuristic" schedule): gamma_k starts at
  ``backoff_initial``; after a verification of a draft of gamma > 0 tokens, + ``backoff_increase``
  when all of them were accepted, - ``backoff_decrease`` otherwise, within
  [``backoff_min``, max_draft]. (HF compares with its own counter; here with the draft actually
  sent, which differs only when a request's end capped the draft.)
- ``goodput-argmax``: per device, gamma_k maximising expected tokens per unit time
  E[N](alpha_k, g) / (g t_k + T_ver(b) + (1 - alpha_k^g) c_k), g = 0..max_draft, with alpha_k
  from ``system.alpha`` (the scenario's, or a learned belief passed in its place), b = the load
  (devices with work, at least 1), T_ver the scenario's verification cost (a cost depending on
  the batch's tokens is evaluated as if all b devices drafted g) and c_k the correction delay
  of device k alone under the scenario's reactive policy, on the gains the searching
  controllers would price it with (``policy.plan_gains``, ``draft.pricing_gains``: the CSI of
  this moment, or its ergodic gain with the whole band and DL budget, as it is alone).
- ``off-under-load``: ``policy.draft_length`` while the load (devices with work: the round's
  batch in the synchronous protocol, devices in a draft-verify-correct cycle in the asynchronous
  one) is <= ``load_threshold``; no speculation (gamma = 0) above it.
"""
import numpy as np

from ..model.speculative import expected_tokens
from .draft import (DRAFT_CONTROLLERS, DraftController, checked_plan, planned_gains,
                    pricing_gains)

_DEFAULTS = {"threshold": 0.5, "backoff_initial": 5, "backoff_increase": 2, "backoff_decrease": 1,
             "backoff_min": 1, "load_threshold": 8}


class AdaptiveDraft(DraftController):
    """Base: reads the ``adaptive`` parameters; decides at every call (no update schedule)."""

    def __init__(self, adaptive=None, draft_length=4, max_draft=20, update="every-round", **_):
        super().__init__(max_draft=max_draft, update=update)
        self.params = {name: getattr(adaptive, name, default) if adaptive is not None else default
                       for name, default in _DEFAULTS.items()}
        self.draft_length = np.asarray(draft_length, dtype=np.int64)

    @classmethod
    def scenario_options(cls, scenario, draft_length, powers):
        return {**super().scenario_options(scenario, draft_length, powers),
                "adaptive": scenario.adaptive, "draft_length": draft_length}

    def due(self, round_index):
        return True


def load_of(ctx):
    """Devices with work when the context was made (``ctx.load``, else the active count)."""
    load = ctx.load
    return int(np.count_nonzero(ctx.active)) if load is None else int(load)


@DRAFT_CONTROLLERS.register("threshold")
class ThresholdDraft(AdaptiveDraft):
    def decide(self, ctx):
        alpha = np.asarray(ctx.system.alpha, dtype=float)
        i = np.arange(1, self.max_draft + 1)
        confidence = np.cumprod(np.broadcast_to(alpha[:, None], (alpha.size, i.size)), axis=1)
        return (confidence >= self.params["threshold"]).sum(axis=1)  # non-increasing in i


@DRAFT_CONTROLLERS.register("backoff")
class BackoffDraft(AdaptiveDraft):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.state = None

    def decide(self, ctx):
        if self.state is None:
            self.state = np.full(ctx.active.shape, min(self.params["backoff_initial"],
                                                       self.max_draft), dtype=np.int64)
        return self.state.copy()

    def observe(self, gamma, accepted, active):
        """A verification's outcomes: gamma, accepted (K,), active (K,) bool."""
        if self.state is None:
            return
        drafted = active & (gamma > 0)
        full = drafted & (accepted >= gamma)
        p = self.params
        step = np.where(full, p["backoff_increase"], -p["backoff_decrease"])
        self.state = np.where(drafted, np.clip(self.state + step, min(p["backoff_min"],
                                                                      self.max_draft),
                                               self.max_draft), self.state)


@DRAFT_CONTROLLERS.register("goodput-argmax")
class GoodputArgmaxDraft(AdaptiveDraft):
    """``plan_gains``: how the corrections are priced (``draft.planned_gains``)."""

    def __init__(self, plan_gains="instantaneous", **kwargs):
        super().__init__(**kwargs)
        self.plan_gains = checked_plan(plan_gains)

    @classmethod
    def scenario_options(cls, scenario, draft_length, powers):
        return {**super().scenario_options(scenario, draft_length, powers),
                "plan_gains": planned_gains(scenario)}

    def decide(self, ctx):
        system = ctx.system
        k = system.k
        idx = np.flatnonzero(ctx.active)
        gamma = np.zeros(k, dtype=np.int64)
        if idx.size == 0:
            return gamma
        correction = np.zeros(k)
        if ctx.reactive is not None:
            alone = np.zeros((idx.size, k), dtype=bool)
            alone[np.arange(idx.size), idx] = True
            g_ul, g_dl = pricing_gains(self.plan_gains, ctx, 1)   # each device alone
            decision = ctx.reactive.decide(system.reactive_problem(alone, g_ul, g_dl), ctx.rng)
            correction[idx] = np.asarray(decision.delay_s)[np.arange(idx.size), idx]
        g = np.arange(self.max_draft + 1, dtype=float)
        alpha = np.asarray(system.alpha, dtype=float)[idx, None]
        b = max(load_of(ctx), 1)
        cost = system.verification_cost()
        if cost.depends_on_draft:  # as if every device of the batch drafted g
            t_ver = np.asarray(cost.batch_time_s(b, b * (g + 1.0)), dtype=float)[None, :]
        else:
            t_ver = system.verification_s(b)
        time = (g * system.draft_latency_s[idx, None] + t_ver
                + (1.0 - alpha ** g) * correction[idx, None])
        rate = expected_tokens(alpha, g) / time
        gamma[idx] = np.argmax(rate, axis=1)
        return gamma


@DRAFT_CONTROLLERS.register("off-under-load")
class OffUnderLoadDraft(AdaptiveDraft):
    reads_draft_length = True

    def decide(self, ctx):
        if load_of(ctx) > self.params["load_threshold"]:
            return np.zeros(ctx.active.shape, dtype=np.int64)
        return np.broadcast_to(self.draft_length, ctx.active.shape).copy()
