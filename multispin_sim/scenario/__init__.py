"""Scenario files: a validated, typed description of one simulated setting.

>>> from multispin_sim.scenario import load_scenario
>>> sc = load_scenario(None, overrides={"devices.count": 8})
>>> sc.devices.count, sc.server.verify_fixed_ms
(8, 42.8)

Imports only the standard library and PyYAML.  The key reference (``reference_markdown()``)
lists every key with its type, unit, default and meaning; docs/model.md sections 1-5 explain them.
"""

from .errors import ScenarioError
from .loading import (apply_overrides, dump_scenario_yaml, load_scenario, parse_set_options,
                      read_yaml_file, resolve_scenario, scenario_to_dict)
from .params import FrozenMap
from .presets import DEFAULT_MODEL_PAIR, MODEL_PAIRS, TASKS, ModelPair
from .reference import reference_markdown, reference_rows
from .schema import Scenario
from .names import (ARRIVAL_MODELS, DEVICE_TASKS, DRAFT_POLICIES, DRAFT_UPDATES, FADING_MODELS,
                    LENGTH_MODELS, MOBILITY_MODELS, POLICY_MODES, TOPOLOGY_LAYOUTS)
from .sections_components import Compute, Energy, Mobility, PowerMode, Topology, Workload
from .sections_system import Channel, DeviceOverride, Devices, Payload, Policy, Run, Server

__all__ = [
    "Scenario", "ScenarioError", "load_scenario", "scenario_to_dict", "dump_scenario_yaml",
    "parse_set_options", "MODEL_PAIRS", "TASKS", "reference_rows", "reference_markdown",
    "apply_overrides", "read_yaml_file", "resolve_scenario", "FrozenMap", "ModelPair",
    "DEFAULT_MODEL_PAIR", "Devices", "DeviceOverride", "Server", "Channel", "Payload", "Policy",
    "Run", "Workload", "Topology", "Mobility", "DEVICE_TASKS", "FADING_MODELS", "POLICY_MODES",
    "DRAFT_POLICIES", "DRAFT_UPDATES", "ARRIVAL_MODELS", "LENGTH_MODELS", "TOPOLOGY_LAYOUTS",
    "MOBILITY_MODELS", "Compute", "Energy", "PowerMode",
]
