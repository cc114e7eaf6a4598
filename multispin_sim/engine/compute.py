"""Builders of the compute, energy and verification components of a scenario (engine side).

The pure parts live in ``model.compute`` (power modes, thermal RC model), ``model.energy``
(accounting, tokens-per-joule objective) and ``model.verification`` (batch cost); this module
turns scenario sections into those objects, with the verification table read by
``engine.reading``.
"""
import numpy as np

from ..model.compute import ThermalState
from ..model.energy import Powers
from ..model.verification import VERIFY_MODELS, VerifyTableError
from ..policies import REACTIVE_POLICIES
from ..scenario import ScenarioError
from ..scenario.limits import draft_may_be_empty
from .reading import read_once, read_verify_table


def verification_table(scenario, model):
    """The (tokens, ms) arrays of ``server.verify_table`` when the verification model ``model``
    (its class) ``reads_table``, else None; a bad table raises ``VerifyTableError``."""
    if not model.reads_table:
        return None
    return read_once(read_verify_table, scenario.server.verify_table)


def verification_cost(scenario):
    """The verification cost component of ``server.verify_model``, built by its registered
    class from the scenario (and the table it reads)."""
    model = VERIFY_MODELS.lookup(scenario.server.verify_model)
    return model.from_scenario(scenario, verification_table(scenario, model))


def check_verification(scenario):
    """Read the verification model's files now (before anything is written): one-line error
    naming the file and line, under the key ``server.verify_table``; and refuse, for every
    model, a zero-time verification where drafts may be empty (rounds of zero duration: time
    would never advance)."""
    model = VERIFY_MODELS.lookup(scenario.server.verify_model)
    try:
        table = verification_table(scenario, model)
    except VerifyTableError as exc:
        raise ScenarioError("server.verify_table", str(exc)) from None
    if (draft_may_be_empty(scenario)
            and model.from_scenario(scenario, table).shortest_batch_s() <= 0):
        keys = {"linear": "verify_fixed_ms and verify_per_device_ms",
                "tokens": "verify_fixed_ms and verify_per_token_ms"}.get(model.name, "its model")
        raise ScenarioError("server.verify_fixed_ms", f"verification time 0 ({keys}) with draft "
                            "lengths that may be 0 gives rounds of zero duration (time would "
                            "never advance)", "expected a verification time > 0, or draft "
                            "lengths >= 1 with policy.draft 'fixed'")


def energy_powers(scenario, population):
    """``model.energy.Powers`` of the scenario (drafting power per device from its mode)."""
    e = scenario.energy
    return Powers(population.draft_power_w, e.idle_power_w, e.ul_circuit_power_w,
                  e.dl_receive_power_w, scenario.server.power_w)


def thermal_state(scenario, population):
    """The devices' ``ThermalState`` when ``compute.thermal`` is on, else None."""
    c = scenario.compute
    if not c.thermal:
        return None
    # a power mode's own thermal resistance, else the section's
    own = [None if m is None else c.power_modes[m].thermal_resistance_c_per_w
           for m in population.power_mode]
    r_th = np.array([c.thermal_resistance_c_per_w if r is None else r for r in own], dtype=float)
    return ThermalState(population.draft_power_w, c.ambient_c, r_th, c.time_constant_s,
                        c.throttle_c, c.release_c, c.throttle_factor)


def reactive_policy(scenario, population):
    """The reactive policy of ``policy.mode``, as it builds itself for the run (``for_run``:
    under the tokens-per-joule objective the optimal split breaks ties by energy)."""
    cls = REACTIVE_POLICIES.lookup(scenario.policy.mode)
    return cls.for_run(scenario, energy_powers(scenario, population))
