"""Draft-length controllers: gamma_k for every device, decided at the start of a round.

A controller sees a ``DraftContext`` (this round's channel state, who is active, the system) and
returns an int array of draft lengths. ``DraftController.lengths`` applies the update schedule
(``policy.draft_update``: every round, once, or every N rounds) around ``decide``.

Controllers (``policy.draft``), docs/model.md section 7:

- ``fixed``: the scenario's draft lengths.
- ``greedy``: the paper's greedy search on G(gamma) (phase 1: +1 for all; phase 2: +1 for the
  best single device).
- ``uniform``: the best common gamma over 0..max_draft.
- ``computation-only``: the greedy search with T_comm left out of G.
- ``budget``: ours: a search over the shared drafting-time budget with devices left out of
  drafting, then local search; never worse than greedy or uniform on the same samples.

G uses the scenario's reactive policy (``ctx.reactive``) on every outcome, so each mode gets its
own draft lengths; E[T_comm] is a sample average over ``policy.saa_samples`` outcomes drawn from
the controller's stream ``ctx.rng`` (common random numbers across candidates).

When: ``every-round`` optimises for this round's channel (CSI at the server), the active devices
and their remaining tokens; ``once`` optimises at the first round against sampled Rayleigh fading
(|h|^2 ~ Exp(1) on the system's path loss, reciprocal or not as the scenario says; no fading
when the scenario has none) and sampled outcomes, for every device, and keeps
gamma; an integer N re-optimises every N rounds for that round's channel, for every device.

Which gains price the corrections (``policy.plan_gains``): this round's CSI, or, where fading
blocks are shorter than a round, each device's ergodic gain (``ergodic_gains``).
``priced_objective`` builds a decision's objective; the gym regret builds its own with it.
"""
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..model.ergodic import GainLaw
from ..model.mimo import Transmission
from ..model.system import System
from .draft_search import (SearchResult, budget_search, greedy_search, make_objective,
                           uniform_search)
from .reactive import make_reactive_policy
from .registry import Registry

DRAFT_CONTROLLERS = Registry("draft controller")


@dataclass
class DraftContext:
    """What a draft controller knows at the start of a round.

    round: index; system: the static parameters; g_ul, g_dl: this round's gains (K,);
    active: devices with work this round (K,) bool; remaining: tokens each still needs (K,) or
    None (saturated); reactive: the scenario's reactive policy (to evaluate T_comm);
    rng: the controller's own random stream (sample average approximation);
    fading, reciprocal: the scenario's fading model and UL/DL reciprocity (for controllers that
    sample fading themselves, such as ``draft_update: once``); load: the devices with work when
    the draft is decided (the asynchronous protocol; None: the active count); gains_hold: the
    round start's gains are those the corrections will meet (one fading block per round, or
    blocks longer than a round: ``channel.round_gains_hold``); gain_law: the law of the
    small-scale gains the corrections meet, which ``ergodic_gains`` averages over
    (``channel.gain_law``; None: one antenna under ``fading``, or no law where a link shares
    its band).
    """

    round: int
    system: System
    g_ul: np.ndarray
    g_dl: np.ndarray
    active: np.ndarray
    remaining: Optional[np.ndarray] = None
    reactive: object = None
    rng: object = None
    fading: str = "rayleigh"
    reciprocal: bool = True
    load: Optional[int] = None
    gains_hold: bool = True
    gain_law: Optional[GainLaw] = None


class DraftController:
    """Interface: ``decide(ctx) -> (K,) int array``; ``lengths(ctx)`` adds the update schedule."""

    name = "?"
    # whether a decision of this controller ran a compiled search (``policies.search_numba``):
    # run.json's ``compiled_search`` (the controllers that search set it; others never do)
    compiled_search = False
    # whether it drafts policy.draft_length (the scenario then holds it to policy.max_draft)
    reads_draft_length = False

    def __init__(self, max_draft=20, update="every-round", **_):
        self.max_draft = int(max_draft)
        self.update = update
        self._cached = None

    @classmethod
    def from_scenario(cls, scenario, draft_length=None, powers=None):
        """The controller of ``scenario``'s ``policy`` keys. What the engine derives from the
        drawn population comes as arguments: ``draft_length`` (per device, overrides applied)
        and ``powers`` (``model.energy.Powers``, for objective 'tokens-per-joule')."""
        return cls(**cls.scenario_options(scenario, draft_length, powers))

    @classmethod
    def scenario_options(cls, scenario, draft_length, powers):
        """The constructor's keyword arguments read from the scenario (subclasses add theirs)."""
        p = scenario.policy
        return {"max_draft": p.max_draft, "update": p.draft_update}

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

    # ``lengths(ctx)`` reads only ctx.active and ctx.remaining (the engine may reuse its answer
    # while they do not change)
    context_free = True
    reads_draft_length = True

    def __init__(self, draft_length=4, **kwargs):
        super().__init__(**kwargs)
        self.draft_length = np.asarray(draft_length, dtype=np.int64)

    @classmethod
    def scenario_options(cls, scenario, draft_length, powers):
        return {**super().scenario_options(scenario, draft_length, powers),
                "draft_length": draft_length}

    def due(self, round_index):
        return self._cached is None  # decided once: the lengths never change

    def decide(self, ctx):
        return np.broadcast_to(self.draft_length, ctx.active.shape).copy()


def planned_gains(scenario):
    """``policy.plan_gains``, with 'auto' kept where fading blocks are on a time grid
    (``channel.coherence_time_ms``; decided each round, ``plans_ergodic``) and resolved to
    'instantaneous' elsewhere (one block per round, or no fading, or a link that shares its
    band: no law of one stream's gain prices it)."""
    plan, channel = scenario.policy.plan_gains, scenario.channel
    if plan != "auto":
        return plan
    blocks = channel.coherence_time_ms is not None and channel.fading != "none"
    return "auto" if blocks and not Transmission.from_scenario(scenario).multi_user \
        else "instantaneous"


# policy.plan_gains: the scenario's choices are these names (scenario.names.PLAN_GAINS)
PLANS = ("auto", "instantaneous", "ergodic")


def checked_plan(plan):
    """``plan`` when it is a ``policy.plan_gains`` value, else one ValueError."""
    if plan not in PLANS:
        raise ValueError(f"plan_gains is {plan!r}; allowed: {', '.join(PLANS)}")
    return plan


def plans_ergodic(plan, ctx):
    """Whether this round's corrections are priced at the ergodic gains: always ('ergodic'),
    never ('instantaneous'), or ('auto') where the round start's gains are not those the
    corrections will meet (``ctx.gains_hold`` false: blocks shorter than the last round, so a
    correction decided later and sent over several blocks meets the mean of their rates)."""
    return plan == "ergodic" or (plan == "auto" and not ctx.gains_hold)


def pricing_gains(plan, ctx, sharing):
    """(g_ul, g_dl) this round's corrections are priced with: the ergodic gains of ``sharing``
    devices sharing the band and the DL budget where ``plans_ergodic``, else the round start's
    CSI."""
    if plans_ergodic(plan, ctx):
        return ergodic_gains(ctx.system, sharing, law_of(ctx))
    return ctx.g_ul, ctx.g_dl


def law_of(ctx):
    """The law of the small-scale gains of ``ctx`` (``ctx.gain_law``, else one antenna under
    ``ctx.fading``); a ValueError where none prices a correction (a link sharing its band:
    ``policy.plan_gains: ergodic`` is refused with it up front)."""
    if ctx.gain_law is not None:
        return ctx.gain_law
    if ctx.system.transmission is not None:
        raise ValueError("ergodic gains with a link that shares its band: a stream's gain "
                         "depends on the other streams (policy.plan_gains: ergodic is "
                         "allowed with ofdma-mrt and ofdma-mrc only)")
    return GainLaw.of(ctx.fading)


def ergodic_gains(system, sharing, law=None):
    """(g_ul, g_dl) that price each device's correction at its mean Shannon rate over the
    small-scale gains' ``law`` (``model.ergodic.GainLaw``; None: one Rayleigh element), on the
    band shared by ``sharing`` devices (at least one), with the DL budget split evenly among
    them (the measured decisions do not move when that share is halved or doubled: at these
    SNRs the rate's mean hardly depends on it)."""
    law = GainLaw() if law is None else law
    n = max(1, int(sharing))
    band = system.bandwidth_hz / n
    g_ul = law.ergodic_gain(system.pathloss, system.p_ul_w, band, system.n0)
    return g_ul, law.ergodic_gain(system.pathloss, system.p_dl_w / n, band, system.n0)


def priced_objective(ctx, active, caps, policy, rng, samples, *, plan="instantaneous",
                     update="every-round", estimator="saa", ignore_comm=False, energy=None,
                     energy_scope="devices"):
    """The draft objective (``draft_search.make_objective``) of a decision on ``ctx`` over the
    devices ``active`` with ``caps``, its corrections priced as the searching controllers
    price them: at fading sampled on the path loss where the decision is kept for rounds whose
    CSI is not known yet (``update`` 'once' with the SAA estimator on a fading channel; from
    ``law_of(ctx)``: M antennas' array gains under maximum-ratio beams), else at
    ``pricing_gains`` (``plan``) of the active devices. The controllers' and the gym regret's
    one source."""
    sampled = update == "once" and estimator == "saa" and ctx.fading != "none"
    if sampled:
        g_ul, g_dl = ctx.g_ul, ctx.g_dl
    else:
        g_ul, g_dl = pricing_gains(plan, ctx, np.count_nonzero(active))
    return make_objective(
        ctx.system, g_ul, g_dl, active, caps, policy, rng, samples, estimator=estimator,
        sampled_fading=sampled, ignore_comm=ignore_comm, reciprocal=ctx.reciprocal,
        energy=energy, energy_scope=energy_scope, gain_law=law_of(ctx) if sampled else None)


def pricing_options(scenario):
    """The keyword arguments of ``priced_objective`` the scenario's ``policy`` sets."""
    p = scenario.policy
    return {"plan": planned_gains(scenario), "update": p.draft_update,
            "estimator": p.estimator, "energy_scope": p.energy_scope}


class SearchDraft(DraftController):
    """Base of the controllers that search G(gamma) (see the module docstring).

    ``saa_samples``: N_SAA; ``mode``: the reactive policy name, used when the context carries no
    policy object; ``estimator``: 'saa' (default) or 'exact' (2^K enumeration, small K only).
    After each decision ``last`` holds the ``SearchResult`` (gamma, G, evaluations, details).
    """

    ignore_comm = False

    def __init__(self, max_draft=20, update="every-round", saa_samples=1000, mode="optimal",
                 estimator="saa", objective="goodput", powers=None, energy_scope="devices",
                 plan_gains="instantaneous", **kwargs):
        super().__init__(max_draft=max_draft, update=update, **kwargs)
        self.plan_gains = checked_plan(plan_gains)
        # objective 'tokens-per-joule': E[tokens] / E[device energy] (model.energy, powers)
        self.energy = powers if objective == "tokens-per-joule" else None
        self.energy_scope = energy_scope
        self.saa_samples = int(saa_samples)
        self.mode = mode
        self.estimator = estimator
        self.last = None

    @classmethod
    def scenario_options(cls, scenario, draft_length, powers):
        p = scenario.policy
        out = {**super().scenario_options(scenario, draft_length, powers),
               "saa_samples": p.saa_samples, "mode": p.mode, "estimator": p.estimator,
               "plan_gains": planned_gains(scenario)}
        if p.objective != "goodput":
            out.update(objective=p.objective, powers=powers, energy_scope=p.energy_scope)
        return out

    def objective(self, ctx):
        """The ``DraftObjective`` of this decision (draws its samples from ``ctx.rng``)."""
        system = ctx.system
        k = system.k
        every_round = self.update == "every-round"
        active = np.asarray(ctx.active, dtype=bool) if every_round else np.ones(k, dtype=bool)
        caps = self._caps(k)
        if every_round and ctx.remaining is not None:
            room = np.maximum(np.asarray(ctx.remaining, dtype=float) - 1, 0)   # inf: no limit
            caps = np.minimum(caps, room).astype(np.int64)
        policy = ctx.reactive if ctx.reactive is not None else make_reactive_policy(self.mode)
        if ctx.rng is None and not self.ignore_comm and self.estimator == "saa":
            raise ValueError(f"draft controller {self.name!r} needs the controller stream ctx.rng")
        return priced_objective(ctx, active, caps, policy, ctx.rng, self.saa_samples,
                                plan=self.plan_gains, update=self.update,
                                estimator=self.estimator, ignore_comm=self.ignore_comm,
                                energy=self.energy, energy_scope=self.energy_scope)

    def _caps(self, k):
        """max_draft for each of k devices: one read-only array, kept (the objective copies)."""
        caps = self.__dict__.get("_caps_k")
        if caps is None or caps.size != k or (k and caps[0] != self.max_draft):
            caps = self._caps_k = np.full(k, self.max_draft, dtype=np.int64)
            caps.flags.writeable = False
        return caps

    def search(self, objective):
        raise NotImplementedError

    def decide(self, ctx):
        objective = self.objective(ctx)
        if not objective.active.any():
            self.last = None
            return np.zeros(ctx.system.k, dtype=np.int64)
        self.last = self.search(objective)
        if objective.compiled is not None:   # the searches run the compiled implementation
            self.compiled_search = True
        return self.last.gamma.copy()


@DRAFT_CONTROLLERS.register("greedy")
class GreedyDraft(SearchDraft):
    """The paper's greedy (Algorithm 1) on G(gamma) with the scenario's reactive policy."""

    search = staticmethod(greedy_search)


@DRAFT_CONTROLLERS.register("uniform")
class UniformDraft(SearchDraft):
    """The best common draft length over 0..max_draft."""

    search = staticmethod(uniform_search)


@DRAFT_CONTROLLERS.register("computation-only")
class ComputationOnlyDraft(SearchDraft):
    """The greedy search with T_comm left out of G (drafting and verification time only)."""

    ignore_comm = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._memo = {}

    def search(self, objective):
        # Without T_comm, G depends only on alpha, the drafting latencies, a constant T_ver, the
        # caps and the active set (no random draw): rounds with the same devices get the same
        # answer, kept here instead of searched again (saturated runs: every round)
        if not objective.precomputable:
            return greedy_search(objective)
        key = (objective.alpha.tobytes(), objective.draft_s.tobytes(), objective.verify_s,
               objective.caps.tobytes(), objective.active.tobytes())
        hit = self._memo.get(key)
        if hit is None:
            if len(self._memo) >= 256:
                self._memo.clear()
            hit = self._memo[key] = greedy_search(objective)
        return SearchResult(hit.gamma.copy(), hit.value, hit.evaluations,
                                         dict(hit.info))


@DRAFT_CONTROLLERS.register("budget")
class BudgetDraft(SearchDraft):
    """Ours: drafting-budget scan with devices left out, then local search (never worse than
    greedy or uniform on the same samples)."""

    search = staticmethod(budget_search)


def make_draft_controller(name, **kwargs):
    """The draft controller registered under ``name`` (``policy.draft`` in the scenario), built
    from keyword arguments (a scenario's: ``DRAFT_CONTROLLERS.lookup(name).from_scenario``)."""
    return DRAFT_CONTROLLERS.make(name, **kwargs)
