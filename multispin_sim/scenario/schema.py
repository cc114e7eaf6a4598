"""The scenario schema: one frozen dataclass per section, one ``param(...)`` line per key.

To add a key: add one field line to its section (type hint + ``param(default, doc, unit=...,
check=...)``).  To add a section: write a new ``@section`` class and add one field line to
:class:`Scenario`.  Checks that involve several keys go into a function decorated with
``@cross_check``.  Validation, the key reference (docs/reference/keys.md) and dumping are
derived from the fields, nothing else needs to change.

The sections live in ``sections_system`` (the paper's system) and ``sections_components`` (the
components beyond it), the allowed values in ``names``, the cross-field checks in
``cross_checks``; this module assembles :class:`Scenario`.
"""

from __future__ import annotations

import dataclasses
import re

from .names import MAX_NAME_CHARS, MAX_SEED
from .params import Check, Params, between, param
from .presets import DEFAULT_MODEL_PAIR, MODEL_PAIRS
from .sections_cells import Cells
from .sections_components import (Acceptance, Adaptive, Compute, Csi, Energy, Limits, Link,
                                  Mobility, Serving, Straggler, Topology, Workload)
from .sections_system import Channel, Devices, Payload, Policy, Run, Server

__all__ = ["Scenario"]


_NAME_RE = re.compile(r"^[A-Za-z0-9._-]+$")
_NAME = Check(lambda v: bool(_NAME_RE.match(v)) and v not in (".", "..")
              and len(v) <= MAX_NAME_CHARS,
              f"a non-empty folder name of at most {MAX_NAME_CHARS} ASCII letters, digits, '-', "
              "'_' and '.'", standalone=True)


# a section that can be weakly referenced: the loader remembers which file a scenario came from
# (``loading.name_scenario_file``) without keeping it alive
@dataclasses.dataclass(frozen=True, slots=True, weakref_slot=True)
class Scenario(Params):
    """A complete, validated scenario (load it with ``load_scenario``)."""

    name: str = param("default", "Scenario name (used as a folder name)", check=_NAME)
    seed: int = param(1, "Master random seed (a 64-bit word)", check=between(0, MAX_SEED))
    model_pair: str = param(DEFAULT_MODEL_PAIR, "Draft/target model pair: fills "
                            "devices.draft_latency_ms, devices.acceptance, server.verify_fixed_ms "
                            "and server.verify_per_device_ms unless given",
                            choices=tuple(MODEL_PAIRS))
    devices: Devices = param(Devices(), "The devices")
    server: Server = param(Server(), "The edge server")
    channel: Channel = param(Channel(), "The channel")
    payload: Payload = param(Payload(), "The distribution payload")
    policy: Policy = param(Policy(), "The control policies")
    run: Run = param(Run(), "The run")
    workload: Workload = param(Workload(), "The requests (arrivals, lengths, queues)")
    topology: Topology = param(Topology(), "Server and device positions")
    mobility: Mobility = param(Mobility(), "Device movement")
    compute: Compute = param(Compute(), "Device power modes and thermal throttling")
    energy: Energy = param(Energy(), "Powers for the energy accounting")
    serving: Serving = param(Serving(), "Serving protocol, batching and SLOs")
    adaptive: Adaptive = param(Adaptive(), "Adaptive draft-length policies")
    acceptance: Acceptance = param(Acceptance(), "Acceptance model and belief")
    link: Link = param(Link(), "The link layer (Shannon or NR MCS/HARQ)")
    csi: Csi = param(Csi(), "CSI at decision time")
    straggler: Straggler = param(Straggler(), "Straggler-aware reactive policies")
    limits: Limits = param(Limits(), "Memory and time bounds of a run")
    cells: Cells = param(Cells(), "Several edge servers: layout, path loss, association, reuse")
