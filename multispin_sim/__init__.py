"""multispin_sim: a discrete-event simulator of multi-access speculative LLM inference (Multi-SPIN).

Python API::

    import multispin_sim as ms
    scenario = ms.load_scenario("scenarios/default.yaml", overrides={"devices.count": 8})
    result = ms.simulate(scenario)
    result.summary["goodput_tps"], result.rounds["comm_s"]
"""

__version__ = "0.1.0"

from .scenario import Scenario, ScenarioError, load_scenario  # noqa: E402


def simulate(scenario, out=None, **kwargs):
    """Run a scenario; see ``multispin_sim.engine.simulation.simulate``."""
    from .engine.simulation import simulate as _simulate

    return _simulate(scenario, out, **kwargs)


__all__ = ["Scenario", "ScenarioError", "load_scenario", "simulate", "__version__"]
