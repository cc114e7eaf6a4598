"""multispin_sim: a discrete-event simulator of multi-access speculative LLM inference (Multi-SPIN).

Python API::

    import multispin_sim as ms
    scenario = ms.load_scenario("scenarios/default.yaml", overrides={"devices.count": 8})
    result = ms.simulate(scenario)
    result.summary["goodput_tps"], result.rounds["comm_s"]
"""

from .version import __version__  # noqa: E402,F401

from .scenario import Scenario, ScenarioError, load_scenario  # noqa: E402


def simulate(scenario, out=None, *, explain=None, **kwargs):
    """Run a scenario; see ``multispin_sim.engine.simulation.simulate``.
    ``explain=N``: also print the first N rounds as a story for a student (the round narrator,
    ``multispin_sim.teaching.explain``); the text is kept in ``result.explanation``.
    """
    from .engine.simulation import simulate as _simulate

    if explain is not None and (type(explain) is bool or not hasattr(explain, "__index__")
                                or explain < 0):   # before the run, not after it
        raise ValueError(f"explain={explain!r}: expected a number of rounds >= 0 (or None)")
    result = _simulate(scenario, out, **kwargs)
    if explain:
        from .teaching.narrator import explain as _explain

        result.explanation = _explain(result, explain)
        print(result.explanation, end="")
    return result


__all__ = ["Scenario", "ScenarioError", "load_scenario", "simulate", "__version__"]
