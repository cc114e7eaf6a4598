"""Every fast path switched off in turn, against the code as it is: what each one buys.

A fast path earns its lines only where a benchmark shows that it pays; this is that benchmark.
Each switch puts back the general path the fast one stands in for, and nothing else
(tests/benchmarks/test_fastpaths.py checks that the results stay the same). The engine's
shortcuts are timed on the default scenario, end to end, with the records formatted in-process.
The numpy search's are timed on decisions of the paper's system (K = 20, 1,000 SAA samples)
with the compiled search switched off (``MULTISPIN_NUMBA=0``), where they run; the compiled
search's greedy and budget, each one compiled call, against the numpy search on the same
objective (as ``bench draft`` times whole runs).
"""
import contextlib
import functools
import tempfile
from unittest import mock

from ..engine.channel import OFDMAChannel
from ..engine.server import EdgeServer
from ..model.estimators import SAATcomm, _StatelessTcomm
from ..policies import draft as controllers
from ..policies import draft_search
from ..policies.draft_search import compiled_enabled
from ..policies.draft import FixedDraft
from .abtest import interleaved, records_in_process, scenario_run
from .draft import decision_times, numpy_search


def _path_mean_without_events(self, gammas):
    self._path = None
    return self.mean(gammas)


# name -> (what it does, [(owner, attribute, the general path in its place)])
ENGINE = {
    "one_outcome": ("the reactive policy's decision of one outcome on lists",
                    [(EdgeServer, "one_outcome", lambda self: None)]),
    "steady_outcomes": ("a fixed plan's verification outcomes from blocks of rounds",
                        [(EdgeServer, "steady_outcomes", lambda self: None)]),
    "steady_decisions": ("a fixed plan's reactive decisions, many rounds in one decide call",
                         [(EdgeServer, "steady_decisions", lambda self, channel: None)]),
    "plain_transmit": ("devices wait their planned delays, taken as the realised ones",
                       [(OFDMAChannel, "plain_transmit", property(lambda self: False))]),
    "steady plan": ("a context-free controller's plan worked out once",
                    [(FixedDraft, "context_free", False)]),
}
# a shortcut timed with the one it stands behind switched off in both runs: a fixed plan's
# rounds take steady_decisions, one_outcome serves the others (draft control every round,
# queues, ...)
BEHIND = {"one_outcome": "steady_decisions"}
# name -> (controller, what it does, switches)
SEARCH = {
    "lazy phase 1": ("greedy", "the uniform path evaluated in chunks, until G stops improving",
                     [(draft_search, "_lazy_phase1",
                       lambda obj, path, chunk=12: obj.path_values(path))]),
    "+1 cache": ("greedy", "the +1 moves' T_comm kept up to date across steps",
                 [(SAATcomm, "plus_one_means", _StatelessTcomm.plus_one_means)]),
    "path events": ("budget", "a path evaluated at the samples it changes only",
                    [(SAATcomm, "path_mean", _path_mean_without_events)]),
}


# name -> (controller, what it does, switches) of the compiled search: with a switch off, the
# controller's search runs with ``compiled=False``, the numpy search (the controller class holds
# its search: patching the module's name would leave the compiled one in place)
COMPILED = {
    "whole greedy": ("greedy", "the greedy compiled whole",
                     [(controllers.GreedyDraft, "search", staticmethod(
                         functools.partial(draft_search.greedy_search, compiled=False)))]),
    "whole budget": ("budget", "the budget search compiled whole",
                     [(controllers.BudgetDraft, "search", staticmethod(
                         functools.partial(draft_search.budget_search, compiled=False)))]),
}


@contextlib.contextmanager
def switched_off(switches):
    """The general paths of ``switches`` in place while the block runs."""
    with contextlib.ExitStack() as stack:
        for owner, name, general in switches:
            stack.enter_context(mock.patch.object(owner, name, general))
        yield


def _without(fn, switches):
    def run():
        with switched_off(switches):
            fn()
    return run


def _line(name, what, res):
    print(f"  {name:16s} off: {res['ratio_wall']:.2f}x the time (CPU {res['ratio_cpu']:.2f}x), "
          f"median of {res['pairs']} pairs; {what}", flush=True)
    return {"slowdown_wall": res["ratio_wall"], "slowdown_cpu": res["ratio_cpu"]}


def run(quick=False):
    rounds, pairs = (2_000, 3) if quick else (10_000, 7)
    figures = {}
    print(f"engine shortcuts: the default scenario, {rounds:,} rounds end to end")
    with tempfile.TemporaryDirectory() as tmp, records_in_process():
        base = scenario_run(tmp, {"run.rounds": rounds})
        scenario_run(tmp, {"run.rounds": 200})()   # warm: imports, caches
        for name, (what, switches) in ENGINE.items():
            under = ENGINE[BEHIND[name]][1] if name in BEHIND else []
            if name in BEHIND:
                what += f" ({BEHIND[name]} off in both runs)"
            figures[name] = _line(name, what, interleaved(_without(base, under),
                                                          _without(base, under + switches),
                                                          pairs))
    reps = {"greedy": 20 if quick else 60, "budget": 5 if quick else 15}
    print("numpy search: decisions with the compiled search switched off")
    with numpy_search():
        _decisions(SEARCH, reps, pairs + 2, figures)
    if compiled_enabled():
        print("compiled search: decisions")
        _decisions(COMPILED, {"greedy": 4 * reps["greedy"], "budget": 3 * reps["budget"]},
                   pairs + 2, figures)
    return figures


def _decisions(cases, reps, pairs, figures):
    for controller in {c for c, _, _ in cases.values()}:
        decision_times(controller, 1)   # warm: numba's compiled code, caches
    for name, (controller, what, switches) in cases.items():
        def decide(controller=controller):
            decision_times(controller, reps[controller], warmup=0)
        figures[name] = _line(name, f"{controller}; {what}",
                              interleaved(decide, _without(decide, switches), pairs))
