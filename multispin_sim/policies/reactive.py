"""Reactive policies: mode (UL or DL) and power for every rejected device, given the outcome.

Every policy maps a ``ReactiveProblem`` (M outcomes at once) to a ``ReactiveDecision``.
Powers are always optimised for the chosen split (UL at full power, DL delay-equalising).
"""
from ..model import reactive as solver
from .registry import Registry

REACTIVE_POLICIES = Registry("reactive policy")


class ReactivePolicy:
    """Interface: ``decide(problem, rng) -> ReactiveDecision``. ``rng`` is the policy's own stream."""

    name = "?"

    def decide(self, problem, rng=None):
        raise NotImplementedError


@REACTIVE_POLICIES.register("optimal")
class OptimalSplit(ReactivePolicy):
    """The paper's optimum: UL prefix in UL-delay order, the split n chosen by min max delay."""

    def decide(self, problem, rng=None):
        return solver.optimal_split(problem)


@REACTIVE_POLICIES.register("all-ul")
class AllUplink(ReactivePolicy):
    """Every correction uplink at full device power (the classic server-side correction)."""

    def decide(self, problem, rng=None):
        return solver.all_ul(problem)


@REACTIVE_POLICIES.register("all-dl")
class AllDownlink(ReactivePolicy):
    """Every correction downlink, the DL budget shared to equalise delays."""

    def decide(self, problem, rng=None):
        return solver.all_dl(problem)


@REACTIVE_POLICIES.register("random")
class RandomSplit(ReactivePolicy):
    """A fair coin per rejected device; powers optimised for the resulting split."""

    def decide(self, problem, rng=None):
        if rng is None:
            raise TypeError("the random policy needs its random stream: decide(problem, rng)")
        return solver.random_split(problem, rng)


@REACTIVE_POLICIES.register("exhaustive")
class ExhaustiveSplit(ReactivePolicy):
    """All 2^|R| assignments: the reference for small |R|."""

    def decide(self, problem, rng=None):
        return solver.exhaustive_split(problem)


def make_reactive_policy(name):
    """The reactive policy registered under ``name`` (``policy.mode`` in the scenario)."""
    return REACTIVE_POLICIES.make(name)
