"""The scenario's acceptance model and belief (``acceptance`` section), built for the engine.

``read_acceptance_trace`` reads and checks a trace before anything is written (a bad file is a
``ScenarioError`` naming ``acceptance.trace_file`` and the file's line); ``build_acceptance``
makes the ``model.acceptance`` component and the belief the server uses.
"""
import inspect

import numpy as np

from ..model.acceptance import ACCEPTANCE_MODELS, TASK_CATEGORIES
from ..model.beliefs import BELIEFS
from ..model.acceptance_trace import TraceError, select_answers
from ..scenario import TASKS, ScenarioError
from .reading import SHIPPED_TRACE, read_once, read_trace, shipped_trace_path


def trace_path(acceptance):
    return acceptance.trace_file or shipped_trace_path()


def trace_source(acceptance):
    """The trace as the summary names it: ``acceptance.trace_file`` as given, or the shipped
    file by its place in the package (not where this copy of the package is installed, so
    that two installs write the same summary)."""
    return acceptance.trace_file or f"multispin_sim/data/{SHIPPED_TRACE}"


def read_acceptance_trace(scenario):
    """The selected answers of ``acceptance.trace_file`` (a list of ``Answer``)."""
    a = scenario.acceptance
    path = trace_path(a)
    try:
        answers = read_once(read_trace, path)
    except TraceError as exc:
        raise ScenarioError("acceptance.trace_file", str(exc)) from None
    try:
        answers = select_answers(answers, path=str(path), benchmark=a.trace_benchmark,
                                 model=a.trace_model, categories=a.trace_categories)
    except TraceError as exc:
        raise ScenarioError(_selection_key(a, answers), str(exc)) from None
    if a.trace_assign == "task":
        dev = scenario.devices
        tasks = set(TASKS) if dev.task == "uniform" else {dev.task}
        tasks |= {o.task for o in dev.overrides.values() if o.task is not None}
        have = {x.category for x in answers}
        for task in sorted(tasks):
            cats = TASK_CATEGORIES.get(task, (task,))
            if not have & set(cats):
                raise ScenarioError("acceptance.trace_assign", f"'task': no selected answers of "
                                    f"the categories of task {task!r} ({', '.join(cats)})",
                                    f"the selection has {', '.join(sorted(have))}; use "
                                    "'uniform' or select those categories")
    return answers


def _selection_key(a, answers):
    """The key whose selection left no answers (``select_answers`` filters by benchmark, then
    model, then categories); the file when the selection's answers have no usable steps."""
    chosen = answers
    if a.trace_benchmark:
        chosen = [x for x in chosen if x.benchmark == a.trace_benchmark]
        if not chosen:
            return "acceptance.trace_benchmark"
    if a.trace_model:
        chosen = [x for x in chosen if a.trace_model in x.model]
        if not chosen:
            return "acceptance.trace_model"
    if a.trace_categories and not set(a.trace_categories) <= {x.category for x in chosen}:
        return "acceptance.trace_categories"
    return "acceptance.trace_file"


def acceptance_inputs(scenario):
    """The files the acceptance model needs, read now: a model that replays answers takes the
    engine's ``trace`` in its ``from_scenario`` (its signature says so)."""
    cls = ACCEPTANCE_MODELS.lookup(scenario.acceptance.model)
    if "trace" not in inspect.signature(cls.from_scenario).parameters:
        return {}
    return {"acceptance_trace": read_acceptance_trace(scenario)}


def build_acceptance(scenario, population, rng, answers=None, block=1024):
    """(model, belief) for a run: the acceptance component on the ``acceptance`` stream ``rng``,
    each built from the scenario by its registered class (``from_scenario``)."""
    a = scenario.acceptance

    def trace():   # the selected answers, for a model that replays them
        return answers if answers is not None else read_acceptance_trace(scenario)

    cls = ACCEPTANCE_MODELS.lookup(a.model)
    try:
        model = cls.from_scenario(scenario, population.system.alpha, rng, block=block,
                                  tasks=population.tasks, trace=trace,
                                  source=trace_source(a))
    except ScenarioError:
        raise
    except ValueError as exc:
        raise ScenarioError("acceptance.trace_assign", str(exc)) from None
    belief = BELIEFS.lookup(a.belief).from_scenario(scenario, model)
    return model, belief


def acceptance_summary(scenario, model, belief, tally):
    """What summary.json records under ``acceptance``."""
    verified = int(tally.verified.sum())
    return {
        "model": model.name, "parameters": model.parameters(), "belief": belief.name,
        "belief_parameters": belief.parameters(),
        "nominal_rate": float(np.mean(model.nominal)),
        "realised_agreement_rate": (float(tally.agreed.sum()) / verified if verified else None),
        "verified_positions": verified,
    }
