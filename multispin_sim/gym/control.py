"""The environment's two decision points in the real round loop, as the engine's own interfaces:
``AgentDraft``, a draft controller, and ``AgentSplit``, a reactive policy."""
import numpy as np

from ..model import reactive as solver
from ..policies.reactive import ReactivePolicy


class AgentDraft:
    """Draft controller (``policies.draft`` interface: ``lengths(ctx)``) whose gamma comes from
    outside: at each round start it hands the ``DraftContext`` to ``ask`` (the environment,
    which switches to the agent and back) and applies the answer, (K,) ints, exactly as
    ``DraftController.lengths`` applies a decision (0 for idle devices, capped to the request's
    remaining tokens minus one). ``ask`` returning None lets the scenario's own controller
    ``own`` decide (warm-up rounds, control='mode'). ``tell(gamma, accepted, active)``, when
    given, is told every verification's outcomes as the engine tells a controller (after ``own``
    is): the asynchronous protocol's steps report the batches verified since the last one."""

    name = "agent"
    context_free = False   # the answer depends on the agent: never reused by the round loop

    def __init__(self, own, ask, tell=None):
        self.own = own
        self.ask = ask
        self.last = None
        observe = getattr(own, "observe", None)
        if tell is not None:
            self.observe = _both(observe, tell)
        elif observe is not None:
            # the scenario's own controller decides the rounds the agent leaves to it (warm-up,
            # control='mode'): it learns every outcome, as in a run of its own
            self.observe = observe

    def lengths(self, ctx):
        gamma = self.ask(ctx)
        if gamma is None:
            gamma = self.own.lengths(ctx)
        else:
            gamma = np.where(ctx.active, gamma, 0)
            if ctx.remaining is not None:
                gamma = np.minimum(gamma, np.maximum(ctx.remaining - 1, 0))
        self.last = gamma   # the lengths applied at the last decision, the agent's or not
        return gamma


def _both(observe, tell):
    if observe is None:
        return tell

    def both(gamma, accepted, active):
        observe(gamma, accepted, active)
        tell(gamma, accepted, active)
    return both


class AgentSplit(ReactivePolicy):
    """Reactive policy (``policies.reactive`` interface) whose UL/DL split comes from outside,
    powers then optimised for that split as the paper does (UL at full power, DL
    delay-equalising, ``model.reactive.evaluate_assignment``). ``action``: under ``kind``
    'prefix', n, the number of UL devices taken in the optimal split's prefix order (rejected
    devices by UL delay, docs/model.md section 6; n larger than the rejected set means all UL);
    under 'per-device', (K,) modes (0 UL, 1 DL; only the rejected devices transmit). With no
    action set, the scenario's own policy ``own`` decides."""

    name = "agent"

    def __init__(self, own, kind="prefix"):
        self.own = own
        self.kind = kind
        self.action = None
        # the scenario's own policy may defer corrections (the warm-up rounds' decisions, or
        # any round without an action): they are still sent at the next round start; and may
        # count the devices in the round (an energy tie-break)
        self.defers = own.defers
        self.counts_present = own.counts_present

    def carry(self, problem):
        return self.own.carry(problem)

    def use_channel(self, channel):
        self.own.use_channel(channel)   # the scenario's own policy decides without an action

    def no_rejection(self, k, rng):
        self.own.no_rejection(k, rng)

    def bind_payload(self, model):
        self.own.bind_payload(model)

    def ul_mask(self, problem):
        """(M, K) bool: the devices correcting by UL under the agent's action."""
        if self.kind == "prefix":
            _, cols = solver.prefix_split_delays(problem)  # rejected first, in UL order
            rank = np.argsort(cols, axis=1)   # each device's place in that order
            return problem.rejected & (rank < int(self.action))
        return problem.rejected & (np.asarray(self.action) == 0)[None, :]

    def decide(self, problem, rng=None):
        if self.action is None:
            return self.own.decide(problem, rng)
        return solver.evaluate_assignment(problem, self.ul_mask(problem))
