"""The scenario schema: one frozen dataclass per section, one ``param(...)`` line per key.

To add a key: add one field line to its section (type hint + ``param(default, doc, unit=...,
check=...)``).  To add a section: write a new ``@section`` class and add one field line to
:class:`Scenario`.  Checks that involve several keys go into a function decorated with
``@cross_check``.  Validation, the README reference table and dumping are derived from the
fields, nothing else needs to change.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Callable, ClassVar, Optional, Union

from .errors import ScenarioError
from .params import (Check, FrozenMap, Params, between, ge, gt, in_interval, int_or_choice, param,
                     number_or_range, range_pair, section)
from .presets import DEFAULT_MODEL_PAIR, MODEL_PAIRS, TASKS

__all__ = [
    "Scenario", "Devices", "DeviceOverride", "Server", "Channel", "Payload", "Policy", "Run",
    "Workload", "Topology", "Mobility", "Limits",
    "FADING_MODELS", "DEVICE_TASKS", "POLICY_MODES", "DRAFT_POLICIES", "DRAFT_UPDATES",
    "ARRIVAL_MODELS", "LENGTH_MODELS", "TOPOLOGY_LAYOUTS", "MOBILITY_MODELS",
    "MAX_DRAFT_LIMIT", "EXHAUSTIVE_MAX_DEVICES", "DEFAULT_DL_POWER_RATIO", "CROSS_CHECKS",
    "cross_check",
]

# Allowed values (module-level so later issues extend them in one place).
FADING_MODELS: tuple[str, ...] = ("rayleigh", "none", "gauss-markov")
DEVICE_TASKS: tuple[str, ...] = ("uniform",) + TASKS
POLICY_MODES: tuple[str, ...] = ("optimal", "all-ul", "all-dl", "random", "exhaustive")
DRAFT_POLICIES: tuple[str, ...] = ("fixed", "greedy", "uniform", "computation-only", "budget")
DRAFT_UPDATES: tuple[str, ...] = ("every-round", "once")
ARRIVAL_MODELS: tuple[str, ...] = ("saturated", "poisson", "trace")
LENGTH_MODELS: tuple[str, ...] = ("fixed", "geometric", "lognormal", "empirical", "per-task")
TOPOLOGY_LAYOUTS: tuple[str, ...] = ("annulus", "coordinates", "graphml")
MOBILITY_MODELS: tuple[str, ...] = ("none", "random-waypoint")
MAX_DRAFT_LIMIT = 64            # upper bound of policy.max_draft
EXHAUSTIVE_MAX_DEVICES = 16     # mode "exhaustive" tries 2^K UL/DL assignments
DEFAULT_DL_POWER_RATIO = 4.0    # P_dl = 4 x P_ul (10 mW) = 40 mW = 16.02 dBm when no DL key given

_ALPHA = in_interval(0, 1, low_open=True)
_NAME_RE = re.compile(r"^[A-Za-z0-9._-]+$")
_NAME = Check(lambda v: bool(_NAME_RE.match(v)) and v not in (".", ".."),
              "a non-empty folder name of letters, digits, '-', '_' and '.'", standalone=True)
_DRAFT_LENGTH = Check(
    lambda v: (0 <= v <= MAX_DRAFT_LIMIT) if isinstance(v, int)
    else all(0 <= x <= MAX_DRAFT_LIMIT for x in v),
    "an integer 0..policy.max_draft or a list of devices.count such integers (one per device)",
    standalone=True)


@section
class DeviceOverride(Params):
    """Settings of one device that replace the population-wide ones (unset = not overridden)."""

    _omit_none: ClassVar[bool] = True

    task: Optional[str] = param(None, "Task of this device (its alpha then comes from "
                                "devices.acceptance)", choices=TASKS)
    alpha: Optional[float] = param(None, "Per-token acceptance rate of this device (wins over "
                                   "its task's rate)", check=_ALPHA)
    draft_latency_ms: Optional[float] = param(None, "Exact drafting latency t_k of this device "
                                              "(no spread applied)", unit="ms/token", check=gt(0))
    distance_m: Optional[float] = param(None, "Distance of this device to the server",
                                        unit="m", check=gt(0))
    ul_power_dbm: Optional[float] = param(None, "UL power budget of this device", unit="dBm")
    draft_length: Optional[int] = param(None, "Draft length of this device (wins over "
                                        "policy.draft_length)", check=between(0, MAX_DRAFT_LIMIT),
                                        allowed="an integer 0..policy.max_draft")


@section
class Devices(Params):
    """The K devices."""

    count: int = param(20, "Number of devices K", check=ge(1))
    task: str = param("uniform", "Task of every device; 'uniform': each device draws one of the "
                      "tasks uniformly at random", choices=DEVICE_TASKS)
    acceptance: Mapping[str, float] = param(
        FrozenMap(), "Per-token acceptance rate alpha per task; keys given merge over the "
        "model pair's table (assumed values, docs/model.md section 3)", check=_ALPHA, keys=TASKS,
        key_allowed="task", preset="acceptance", default_text="model_pair's table")
    draft_latency_ms: Optional[float] = param(
        None, "Reference per-token drafting latency t_ref (t_k = t_ref * s_k)", unit="ms/token",
        check=gt(0), preset="draft_latency_ms")
    draft_latency_spread: tuple[float, float] = param(
        (1.0, 1.15), "Device heterogeneity: s_k ~ U[low, high], drawn once per device",
        check=range_pair(0))
    distance_m: Union[float, tuple[float, float]] = param(
        (100.0, 500.0), "Distance to the server: d_k ~ U[low, high], or one fixed distance",
        unit="m", check=number_or_range(0))
    ul_power_dbm: float = param(10.0, "UL power budget P_ul of each device", unit="dBm")
    overrides: Mapping[int, DeviceOverride] = param(
        FrozenMap(), "Per-device settings: device index (0-based) -> task, alpha, "
        "draft_latency_ms, distance_m, ul_power_dbm, draft_length",
        key_allowed="device index 0..devices.count-1", default_text="{}")


@section
class Server(Params):
    """The edge server (target LLM, batched verification, DL power budget)."""

    dl_power_dbm: Optional[float] = param(
        None, "Total DL power budget P_dl shared by all DL transmissions of a round (give this "
        "or dl_power_ratio, not both)", unit="dBm", exclusive_with="dl_power_ratio")
    dl_power_ratio: Optional[float] = param(
        None, "DL-to-UL power-budget ratio rho: P_dl = rho * P_ul in linear units (assumed "
        "reading, docs/model.md section 5); used when dl_power_dbm is not given, default 4 "
        "(4 x 10 mW = 16.02 dBm)", check=gt(0), default_text="4 (if dl_power_dbm is not given)",
        exclusive_with="dl_power_dbm")
    verify_fixed_ms: Optional[float] = param(
        None, "Fixed part T_ver0 of one batched verification pass", unit="ms", check=ge(0),
        preset="verify_fixed_ms")
    verify_per_device_ms: Optional[float] = param(
        None, "Verification time T_ver1 added per device in the batch", unit="ms", check=ge(0),
        preset="verify_per_device_ms")


@section
class Channel(Params):
    """The OFDMA channel."""

    bandwidth_mhz: float = param(10.0, "Total bandwidth B", unit="MHz", check=gt(0))
    noise_psd_dbm_hz: float = param(-174.0, "Noise power spectral density N0 (assumed)",
                                    unit="dBm/Hz")
    ref_gain_db: float = param(-30.0, "Large-scale gain G_0 at 1 m", unit="dB")
    pathloss_exponent: float = param(3.5, "Path-loss exponent eta: G = G_0 (d / 1 m)^-eta",
                                     check=gt(0))
    fading: str = param("rayleigh", "Small-scale fading: 'rayleigh' (|h|^2 ~ Exp(1), i.i.d. "
                        "per block), 'none' (|h|^2 = 1) or 'gauss-markov' (h ~ CN(0,1) correlated "
                        "over time: rho = J0(2 pi doppler_hz dt) over the time dt elapsed)",
                        choices=FADING_MODELS)
    reciprocal: bool = param(True, "UL and DL gains are the same draw (true) or independent "
                             "draws (false)")
    doppler_hz: float = param(10.0, "Maximum Doppler frequency f_D of 'gauss-markov' fading "
                              "(f_D = v f_c / c: about 10 Hz walking, 200 Hz at 60 km/h, at "
                              "3.5 GHz)", unit="Hz", check=ge(0))
    coherence_time_ms: Optional[float] = param(
        None, "Fading block length T_c: null = one block per round, drawn at its start (the "
        "paper); a number = blocks of T_c on a fixed time grid, so a correction longer than T_c "
        "continues over new blocks (its bits accumulate at each block's rate) and the reactive "
        "decision uses the block at its start (rule of thumb T_c = 0.423 / f_D)", unit="ms",
        check=gt(0))
    shadowing_db: float = param(0.0, "Standard deviation sigma of log-normal shadowing on the "
                                "large-scale gain (0: none); drawn once per device", unit="dB",
                                check=ge(0))
    shadowing_decorrelation_m: float = param(
        50.0, "Decorrelation distance of shadowing for moving devices (Gudmundson: correlation "
        "exp(-moved / this))", unit="m", check=gt(0))


@section
class Payload(Params):
    """Size of one transmitted distribution: S = V_eff (ceil(log2 V) + Q) bits, dense V Q."""

    effective_vocab: Union[int, str] = param(
        1024, "Kept entries V_eff (top-k 'effective vocabulary'), or 'dense' (full fp "
        "distribution)", check=int_or_choice(1, ("dense",), "(<= vocab)"))
    vocab: int = param(151665, "Vocabulary size V (token ids)", check=ge(2))
    prob_bits: int = param(16, "Bits per probability Q", unit="bit", check=ge(1))


@section
class Policy(Params):
    """Reactive mode selection and proactive draft-length control."""

    mode: str = param("optimal", "UL/DL mode selection for the rejected devices",
                      choices=POLICY_MODES)
    draft: str = param("fixed", "Draft-length control", choices=DRAFT_POLICIES)
    draft_length: Union[int, tuple[int, ...]] = param(
        4, "Draft length gamma for every device, or one per device (used by draft: fixed)",
        check=_DRAFT_LENGTH)
    max_draft: int = param(20, "Largest draft length gamma_max", check=between(0, MAX_DRAFT_LIMIT))
    saa_samples: int = param(1000, "Sampled outcomes N_SAA for E[T_comm] (sample average "
                             "approximation)", check=ge(1))
    draft_update: Union[int, str] = param(
        "every-round", "When draft lengths are re-optimised: every round, once, or every N "
        "rounds", check=int_or_choice(1, DRAFT_UPDATES, "(every N rounds)"))


@section
class Run(Params):
    """Length of a run."""

    rounds: int = param(1000, "Number of rounds", check=ge(1))
    max_time_s: Optional[float] = param(None, "Stop after this much simulated time (null: no "
                                        "limit)", unit="s", check=gt(0))


_POSITIVE_RATES = Check(
    lambda v: v > 0 if isinstance(v, float) else all(x > 0 for x in v),
    "a number > 0 or a list of devices.count numbers > 0 (one per device)", standalone=True)
_LENGTH_LIST = Check(lambda v: all(x >= 1 for x in v), "a list of integers >= 1",
                     standalone=True)
_XY = Check(lambda v: True, "[x, y] in metres", standalone=True)
_XY_LIST = Check(lambda v: True, "a list of [x, y] pairs in metres, one per device",
                 standalone=True)
_SPEED = number_or_range(0)
_REGION = Check(lambda v: 0 <= v[0] <= v[1], "a range [low, high] with 0 <= low <= high",
                standalone=True)


@section
class Workload(Params):
    """Requests: arrivals per device, lengths, FIFO queues (docs/model.md section 9)."""

    arrivals: str = param("saturated", "'saturated': every device always has work (the paper); "
                          "'poisson': requests arrive per device at rate_per_s; 'trace': arrival "
                          "times (and lengths) from trace_file", choices=ARRIVAL_MODELS)
    rate_per_s: Union[float, tuple[float, ...]] = param(
        0.05, "Poisson arrival rate of requests per device, one value for all or one per device",
        unit="requests/s", check=_POSITIVE_RATES)
    trace_file: Optional[str] = param(
        None, "CSV of arrivals for 'trace': columns time_s, device (0-based) and optionally "
        "tokens (else lengths come from 'length'); a relative path is relative to the working "
        "directory")
    length: str = param("fixed", "Request length (tokens to generate): 'fixed' (length_tokens), "
                        "'geometric' or 'lognormal' (mean length_tokens), 'empirical' (uniform "
                        "draws from length_values), 'per-task' (length_per_task of the device's "
                        "task, else length_tokens)", choices=LENGTH_MODELS)
    length_tokens: int = param(64, "Fixed request length, or the mean for 'geometric' and "
                               "'lognormal'", unit="tokens", check=ge(1))
    length_sigma: float = param(1.0, "Standard deviation of ln(length) for 'lognormal'",
                                check=gt(0))
    length_values: tuple[int, ...] = param((), "Lengths drawn uniformly for 'empirical'",
                                           unit="tokens", check=_LENGTH_LIST)
    length_per_task: Mapping[str, int] = param(
        FrozenMap(), "Request length per task for 'per-task' (tasks not listed use "
        "length_tokens)", unit="tokens", check=ge(1), keys=TASKS, key_allowed="task",
        default_text="{}")
    cap_draft_to_remaining: bool = param(
        True, "Never draft more than the request still needs (gamma <= remaining - 1); false: "
        "draft as the policy says and discard the surplus tokens of the last round")
    tick_period_s: Optional[float] = param(
        None, "Rounds start only on a fixed time grid of this period, even when idle (null: a "
        "round starts as soon as the previous one ends and some device has work)", unit="s",
        check=gt(0))


@section
class Topology(Params):
    """Where the server and the devices are (a networkx graph; distances give the path loss)."""

    layout: str = param("annulus", "'annulus': devices at devices.distance_m from the server at "
                        "uniform bearings; 'coordinates': device_xy_m; 'graphml': graphml_file",
                        choices=TOPOLOGY_LAYOUTS)
    server_xy_m: tuple[float, float] = param((0.0, 0.0), "Server position (annulus centre)",
                                             unit="m", check=_XY)
    device_xy_m: tuple[tuple[float, float], ...] = param(
        (), "Device positions for 'coordinates', one [x, y] per device", unit="m",
        check=_XY_LIST)
    graphml_file: Optional[str] = param(
        None, "GraphML file for 'graphml': nodes with x and y attributes (metres); the node "
        "with role 'server' (or id 'server') is the server, the others are the devices in file "
        "order; a relative path is relative to the working directory")


@section
class Mobility(Params):
    """Device movement between rounds (path loss and shadowing follow)."""

    model: str = param("none", "'none' or 'random-waypoint' (straight legs to waypoints drawn "
                       "uniformly in the region, at a speed drawn per leg, positions updated at "
                       "each round start)", choices=MOBILITY_MODELS)
    speed_mps: Union[float, tuple[float, float]] = param(
        1.4, "Speed of each leg: one value or a range [low, high] drawn uniformly per leg",
        unit="m/s", check=_SPEED)
    pause_s: float = param(0.0, "Pause at each waypoint", unit="s", check=ge(0))
    region_m: Optional[tuple[float, float]] = param(
        None, "Annulus [r_min, r_max] around the server where waypoints are drawn (null: "
        "devices.distance_m, or the range of the initial distances)", unit="m",
        check=_REGION)


@section
class Limits(Params):
    """Bounds that keep a run's memory and time finite (docs/model.md section 12); raise them
    when you mean it."""

    max_backlog_requests: int = param(
        1_000_000, "Queueing workloads: the run stops (summary complete: false, with the reason) "
        "when more requests than this wait in all queues together (an unstable queue grows "
        "without bound)", unit="requests", check=ge(1))
    max_memory_mb: float = param(
        4096.0, "Refuse a scenario whose estimated memory (devices.count, run.rounds) exceeds "
        "this", unit="MB", check=gt(0))
    max_blocks_per_transmission: int = param(
        1_000_000, "With channel.coherence_time_ms: the run stops (complete: false) when one "
        "correction would need more fading blocks than this", check=ge(1))


@section
class Scenario(Params):
    """A complete, validated scenario (load it with ``load_scenario``)."""

    name: str = param("default", "Scenario name (used as a folder name)", check=_NAME)
    seed: int = param(1, "Master random seed", check=ge(0))
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
    limits: Limits = param(Limits(), "Memory and time bounds of a run")


# --------------------------------------------------------------------------------------------
# cross-field checks (run on the resolved scenario, in order)

CROSS_CHECKS: list[Callable[[Scenario], None]] = []


def cross_check(func: Callable[[Scenario], None]) -> Callable[[Scenario], None]:
    CROSS_CHECKS.append(func)
    return func


@cross_check
def _check_overrides(sc: Scenario) -> None:
    count, max_draft = sc.devices.count, sc.policy.max_draft
    for index, ov in sc.devices.overrides.items():
        if index >= count:
            raise ScenarioError(f"devices.overrides.{index}", f"device index {index} is out of "
                                f"range", f"expected 0 <= index < devices.count ({count})")
        if ov.draft_length is not None and ov.draft_length > max_draft:
            raise ScenarioError(f"devices.overrides.{index}.draft_length",
                                f"{ov.draft_length} is larger than policy.max_draft",
                                f"expected an integer 0..{max_draft}")


@cross_check
def _check_draft_length(sc: Scenario) -> None:
    dl, max_draft = sc.policy.draft_length, sc.policy.max_draft
    if isinstance(dl, tuple):
        if len(dl) != sc.devices.count:
            raise ScenarioError("policy.draft_length", f"a list of {len(dl)} draft lengths is "
                                "not allowed", f"expected one integer, or a list of exactly "
                                f"devices.count ({sc.devices.count}) integers")
        for i, x in enumerate(dl):
            if x > max_draft:
                raise ScenarioError(f"policy.draft_length.{i}", f"{x} is larger than "
                                    "policy.max_draft", f"expected an integer 0..{max_draft}")
    elif dl > max_draft:
        raise ScenarioError("policy.draft_length", f"{dl} is larger than policy.max_draft",
                            f"expected an integer 0..{max_draft}")


@cross_check
def _check_payload(sc: Scenario) -> None:
    p = sc.payload
    if isinstance(p.effective_vocab, int) and p.effective_vocab > p.vocab:
        raise ScenarioError("payload.effective_vocab", f"{p.effective_vocab} is larger than "
                            f"payload.vocab ({p.vocab})",
                            f"expected an integer 1..{p.vocab} or 'dense'")


@cross_check
def _check_exhaustive(sc: Scenario) -> None:
    if sc.policy.mode == "exhaustive" and sc.devices.count > EXHAUSTIVE_MAX_DEVICES:
        raise ScenarioError("policy.mode", f"'exhaustive' with devices.count = "
                            f"{sc.devices.count} would try up to 2^{sc.devices.count} UL/DL "
                            "assignments per round", f"expected devices.count <= "
                            f"{EXHAUSTIVE_MAX_DEVICES} for 'exhaustive' (or mode 'optimal', "
                            "which is exact)")


@cross_check
def _check_workload(sc: Scenario) -> None:
    w = sc.workload
    count = sc.devices.count
    if isinstance(w.rate_per_s, tuple) and len(w.rate_per_s) != count:
        raise ScenarioError("workload.rate_per_s", f"a list of {len(w.rate_per_s)} rates is not "
                            "allowed", f"expected one number, or a list of exactly devices.count "
                            f"({count}) numbers")
    if w.arrivals == "trace" and not w.trace_file:
        raise ScenarioError("workload.trace_file", "arrivals 'trace' needs a trace file",
                            "expected the path of a CSV with columns time_s, device[, tokens]")
    if w.arrivals == "trace" and not os.path.isfile(w.trace_file):
        raise ScenarioError("workload.trace_file", f"{w.trace_file!r} is not a readable file",
                            "expected the path of a CSV with columns time_s, device[, tokens]")
    if w.length == "empirical" and not w.length_values:
        raise ScenarioError("workload.length_values", "length 'empirical' needs values",
                            "expected a non-empty list of integers >= 1")


@cross_check
def _check_topology(sc: Scenario) -> None:
    t = sc.topology
    count = sc.devices.count
    if t.layout == "coordinates":
        if len(t.device_xy_m) != count:
            raise ScenarioError("topology.device_xy_m", f"{len(t.device_xy_m)} positions for "
                                f"{count} devices", f"expected exactly devices.count ({count}) "
                                "[x, y] pairs")
        for i, (x, y) in enumerate(t.device_xy_m):
            if (x, y) == t.server_xy_m:
                raise ScenarioError(f"topology.device_xy_m.{i}", "a device at the server "
                                    "position is not allowed", "expected a distance > 0")
    if t.layout == "graphml":
        if not t.graphml_file:
            raise ScenarioError("topology.graphml_file", "layout 'graphml' needs a file",
                                "expected the path of a GraphML file")
        if not os.path.isfile(t.graphml_file):
            raise ScenarioError("topology.graphml_file", f"{t.graphml_file!r} is not a "
                                "readable file", "expected the path of a GraphML file")
