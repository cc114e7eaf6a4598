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
from .choices import Registered
from .presets import DEFAULT_MODEL_PAIR, MODEL_PAIRS, TASKS

__all__ = [
    "Scenario", "Devices", "DeviceOverride", "Server", "Channel", "Payload", "Policy", "Run",
    "Workload", "Topology", "Mobility", "Limits", "Compute", "Energy", "PowerMode", "Serving", "Adaptive",
    "PROTOCOLS", "BATCHING_POLICIES", "Acceptance", "ACCEPTANCE_MODELS", "ACCEPTANCE_BELIEFS",
    "Link", "Csi", "Straggler",
    "FADING_MODELS", "DEVICE_TASKS", "POLICY_MODES", "DRAFT_POLICIES", "DRAFT_UPDATES",
    "ARRIVAL_MODELS", "LENGTH_MODELS", "TOPOLOGY_LAYOUTS", "MOBILITY_MODELS",
    "PAYLOAD_FORMATS", "PAYLOAD_MODELS", "MAX_DRAFT_LIMIT", "EXHAUSTIVE_MAX_DEVICES", "DEFAULT_DL_POWER_RATIO", "CROSS_CHECKS",
    "cross_check",
]

# Allowed values (module-level so later issues extend them in one place).
# names of plug-in families come from their registries (``scenario.choices``)
FADING_MODELS = Registered("multispin_sim.model.fading", "FADING_MODELS")
DEVICE_TASKS: tuple[str, ...] = ("uniform",) + TASKS
POLICY_MODES = Registered("multispin_sim.policies", "REACTIVE_POLICIES")
DRAFT_POLICIES = Registered("multispin_sim.policies", "DRAFT_CONTROLLERS")
PROTOCOLS: tuple[str, ...] = ("synchronous", "asynchronous")
BATCHING_POLICIES = Registered("multispin_sim.policies.batching", "BATCHING_POLICIES")
DRAFT_UPDATES: tuple[str, ...] = ("every-round", "once")
ARRIVAL_MODELS: tuple[str, ...] = ("saturated", "poisson", "trace")
LENGTH_MODELS: tuple[str, ...] = ("fixed", "geometric", "lognormal", "empirical", "per-task")
TOPOLOGY_LAYOUTS: tuple[str, ...] = ("annulus", "coordinates", "graphml")
MOBILITY_MODELS: tuple[str, ...] = ("none", "random-waypoint")
PAYLOAD_FORMATS: tuple[str, ...] = ("dense", "topk", "topp", "quantized")
PAYLOAD_MODELS: tuple[str, ...] = ("bits", "token")
ACCEPTANCE_MODELS = Registered("multispin_sim.model.acceptance", "ACCEPTANCE_MODELS")
ACCEPTANCE_BELIEFS = Registered("multispin_sim.model.acceptance", "BELIEFS")
TRACE_ASSIGN: tuple[str, ...] = ("uniform", "task")
TRACE_NEXT: tuple[str, ...] = ("draw", "cycle", "repeat")
ACCEPTANCE_SESSIONS: tuple[str, ...] = ("tokens", "request")
MAX_DRAFT_LIMIT = 64            # upper bound of policy.max_draft
# verification tables shipped in multispin_sim/data/verify_tables (= model.verification)
SHIPPED_VERIFY_TABLES: tuple[str, ...] = ("vidur-a100-codellama34b", "paper-linear-qwen2.5")
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
    power_mode: Optional[str] = param(None, "Power mode of this device: a name of "
                                      "compute.power_modes (wins over compute.power_mode)")


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
    draw: str = param("iid", "How the devices' tasks, speed factors and distances are drawn: "
                      "'iid' (independently, the paper's); 'stratified' (each device keeps the "
                      "same law, but the K draws cover their ranges evenly and tasks are balanced "
                      "across distances: drops differ much less; for sweeps over drops)",
                      choices=("iid", "stratified"))
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
    verify_model: str = param(
        "linear", "Verification cost of a batch: 'linear' (T_ver0 + K_b T_ver1, the paper), "
        "'tokens' (T_ver0 + verify_per_token_ms x tokens in the batch, tokens = sum over the "
        "batch of gamma_k + 1) or 'table' (piecewise-linear in the batch's tokens through "
        "verify_table; flat below its first row, last slope above its last)",
        choices=Registered("multispin_sim.model.verification", "VERIFY_MODELS"))
    verify_per_token_ms: Optional[float] = param(
        None, "Time T1 per token in the batch for verify_model 'tokens' (null: "
        "verify_per_device_ms / 5, equal to 'linear' when every device drafts 4 tokens, the "
        "paper's default)", unit="ms/token", check=ge(0),
        default_text="verify_per_device_ms / 5")
    verify_table: str = param(
        "vidur-a100-codellama34b", "Profile for verify_model 'table': a shipped table "
        "('vidur-a100-codellama34b': A100, CodeLlama-34B, linear layers only; "
        "'paper-linear-qwen2.5') or the path of a CSV with a header and rows 'batched tokens, "
        "milliseconds' sorted by tokens (relative to the working directory)")
    power_w: float = param(300.0, "Server power while verifying (energy = power_w x T_ver; "
                           "assumed: A100 board power under load)", unit="W", check=ge(0))


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
    noise_figure_db: float = param(0.0, "Receiver noise figure, added to noise_psd_dbm_hz for "
                                   "both link models (N0 = noise_psd_dbm_hz + noise_figure_db)",
                                   unit="dB", check=ge(0))


_MENU = Check(lambda v: len(v) >= 1 and all(x == "dense" if isinstance(x, str) else x >= 1
                                              for x in v),
              "a non-empty list of integers >= 1 (top-k sizes) or 'dense'", standalone=True)


@section
class Payload(Params):
    """Size of one transmitted distribution: S = V_eff (ceil(log2 V) + Q) bits, dense V Q."""

    effective_vocab: Union[int, str] = param(
        1024, "Kept entries V_eff (top-k 'effective vocabulary'), or 'dense' (full fp "
        "distribution)", check=int_or_choice(1, ("dense",), "(<= vocab)"))
    vocab: int = param(151665, "Vocabulary size V (token ids)", check=ge(2))
    prob_bits: int = param(16, "Bits per probability Q", unit="bit", check=ge(1))
    format: str = param("topk", "Payload format of one distribution: 'dense' (V Q bits), 'topk' "
                        "(k = effective_vocab entries, k (ceil(log2 V) + Q) bits), 'topp' (the "
                        "fewest entries with mass >= top_p, plus a ceil(log2(V+1))-bit count; "
                        "token model only) or 'quantized' (top-k, or all V if effective_vocab is "
                        "'dense', with quant_bits per probability and a 32-bit scale); "
                        "model/payload.py", choices=PAYLOAD_FORMATS)
    top_p: float = param(0.95, "Probability mass p kept by format 'topp'",
                         check=in_interval(0, 1, low_open=True))
    quant_bits: int = param(8, "Bits per probability b of format 'quantized'", unit="bit",
                            check=ge(1))
    model: str = param("bits", "'bits': payloads count only as bits, outcomes from alpha (the "
                       "paper); 'token': token-level speculative sampling on explicit p and q "
                       "per drafted position (the device drafts from the UL format of q; DL "
                       "corrections with a lossy p~ bias the output, recorded as TV in "
                       "corrections.csv)", choices=PAYLOAD_MODELS)
    zipf_exponent: float = param(1.5, "Token model, synthetic pairs: target p_r ~ r^-s over "
                                 "ranks (assumed); the draft adds Gaussian noise sigma z to the "
                                 "target's logits, sigma calibrated so that sum min(p, q) is "
                                 "each device's alpha", check=gt(0))
    pairs_file: Optional[str] = param(
        None, "Token model: npz with arrays p and q (or p_logits and q_logits) of shape (N, "
        "vocab), rows summing to 1; each drafted position uses a random row (null: synthetic "
        "Zipf pairs); a relative path is relative to the working directory")
    menu: tuple[Union[int, str], ...] = param(
        (64, 256, 1024, "dense"), "DL payload sizes (top-k entries, or 'dense') the 'fidelity' "
        "policy chooses from per rejected device", check=_MENU)
    tv_budget: float = param(0.01, "Policy 'fidelity': largest TV distance of a DL-corrected "
                             "token's distribution to p (0: lossless DL only)", check=ge(0))


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
    objective: str = param(
        "goodput", "What the draft controllers maximise: 'goodput' (tokens/s, the paper) or "
        "'tokens-per-joule' (expected tokens / expected device energy of the round); with "
        "'tokens-per-joule' the optimal UL/DL split breaks ties by energy",
        choices=("goodput", "tokens-per-joule"))
    energy_tie_tolerance: float = param(
        0.0, "With objective 'tokens-per-joule' and mode 'optimal': UL/DL splits whose T_comm "
        "is within this fraction of the optimum count as ties, and the one with the least "
        "device energy is taken (0: exact ties only, T_comm stays optimal)", check=ge(0))
    energy_scope: str = param(
        "devices", "Energy that 'tokens-per-joule' counts: 'devices' (the devices' batteries) "
        "or 'total' (devices + server verification and DL transmission)",
        choices=("devices", "total"))


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


_PROB = in_interval(0, 1)


@section
class Acceptance(Params):
    """How many drafts are accepted: the acceptance model and the controllers' belief of alpha
    (model/acceptance.py; ``multispin-sim acceptance fit`` fits these keys to a trace)."""

    model: str = param("iid", "'iid': i.i.d. per-token acceptance alpha (the paper); 'beta': "
                       "every session of session_tokens positions draws alpha ~ Beta around the "
                       "device's mean; 'markov': Gilbert-Elliott easy/hard chain per device; "
                       "'trace': replay of measured agreement sequences (trace_file)",
                       choices=ACCEPTANCE_MODELS)
    mean: Optional[float] = param(None, "Mean agreement rate of every device for 'iid' and "
                                  "'beta' (null: devices.acceptance of the device's task)",
                                  check=_ALPHA)
    concentration: float = param(10.0, "'beta': concentration kappa (alpha ~ Beta(m kappa, "
                                 "(1 - m) kappa), variance m (1 - m) / (kappa + 1))", check=gt(0))
    session_tokens: int = param(64, "'beta': token positions per session (one alpha each)",
                                unit="tokens", check=ge(1))
    session: str = param("tokens", "'beta' and 'trace': when a device moves on to a new "
                         "alpha / answer: 'tokens' (after session_tokens positions / at the "
                         "answer's end) or 'request' (also at the start of each request of a "
                         "queueing workload)", choices=ACCEPTANCE_SESSIONS)
    easy_rate: float = param(0.9, "'markov': agreement rate in the easy state", check=_PROB)
    hard_rate: float = param(0.3, "'markov': agreement rate in the hard state", check=_PROB)
    easy_to_hard: float = param(0.05, "'markov': probability per token position of switching "
                                "easy -> hard", check=_PROB)
    hard_to_easy: float = param(0.1, "'markov': probability per token position of switching "
                                "hard -> easy", check=_PROB)
    trace_file: Optional[str] = param(
        None, "'trace': Spec-Bench JSONL (.jsonl[.gz]) or 0/1 CSV (.csv[.gz], column agree, "
        "optional answer, category, benchmark, model) of agreement sequences (null: the shipped "
        "Spec-Bench trace, multispin_sim/data); a relative path is relative to the working "
        "directory", default_text="shipped Spec-Bench trace")
    trace_benchmark: Optional[str] = param(
        None, "'trace': use only answers of this benchmark (shipped trace: spec_bench = vicuna "
        "68m -> 7b; sentiment_analysis, test_bench = Qwen2.5-7B) (null: all)")
    trace_model: Optional[str] = param(None, "'trace': use only answers whose model id contains "
                                       "this text (null: all)")
    trace_categories: tuple[str, ...] = param((), "'trace': use only answers of these "
                                              "categories (empty: all)",
                                              allowed="a list of category names")
    trace_assign: str = param("uniform", "'trace': 'uniform': every device draws from all "
                              "selected answers; 'task': from the categories of its task "
                              "(humaneval: coding; gsm8k: math; ifeval: writing-like; mt-bench: "
                              "the MT-Bench categories)", choices=TRACE_ASSIGN)
    trace_next: str = param("draw", "'trace': when an answer ends: 'draw' a new one at random, "
                            "'cycle' through the pool in file order, or 'repeat' the first one drawn",
                            choices=TRACE_NEXT)
    belief: str = param("oracle", "What the draft controllers use as alpha: 'oracle' (the "
                        "model's true current rate), 'nominal' (its long-run mean rate, never "
                        "updated), 'learned' (per-device Beta posterior of "
                        "the agreements verified so far) or 'filtered' (Markov-aware: the "
                        "forward filter of the easy/hard chain of the markov keys, predicting "
                        "the next position)", choices=ACCEPTANCE_BELIEFS)
    belief_prior_mean: Optional[float] = param(
        None, "'learned': prior mean (null: the device's declared mean rate)", check=_PROB)
    belief_prior_weight: float = param(10.0, "'learned': weight of the prior in token positions",
                                       unit="tokens", check=gt(0))
    belief_half_life: Optional[float] = param(
        None, "'learned': evidence is discounted by half every this many verified positions "
        "(null: never, the plain posterior)", unit="tokens", check=gt(0))


@section
class PowerMode(Params):
    """One named power mode of a device (a row of compute.power_modes)."""

    draft_latency_ms: float = param(15.2, "Reference per-token drafting latency in this mode "
                                    "(t_k = this x s_k, the device's spread)", unit="ms/token",
                                    check=gt(0))
    draft_power_w: float = param(4.0, "Device power while drafting in this mode", unit="W",
                                 check=ge(0))
    thermal_resistance_c_per_w: Optional[float] = param(
        None, "Thermal resistance R_th of a device in this mode (a phone's is larger than a "
        "heatsinked board's; null: compute.thermal_resistance_c_per_w)", unit="degC/W",
        check=ge(0))


@section
class Compute(Params):
    """Device compute profiles: named power modes and thermal throttling (model/compute.py)."""

    power_modes: Mapping[str, PowerMode] = param(
        FrozenMap(), "Named power modes: name -> draft_latency_ms, draft_power_w, "
        "thermal_resistance_c_per_w",
        key_allowed="a mode name", default_text="{}")
    power_mode: Optional[str] = param(
        None, "Power mode of every device (a name of power_modes; null: no mode, drafting at "
        "devices.draft_latency_ms with energy.draft_power_w)")
    thermal: bool = param(False, "Thermal throttling: first-order RC model dT/dt = (P R_th - "
                          "(T - T_amb)) / tau with P the drafting power while drafting, 0 "
                          "otherwise; above throttle_c the drafting latency is multiplied by "
                          "throttle_factor")
    ambient_c: float = param(25.0, "Ambient temperature T_amb (and the start temperature)",
                             unit="degC")
    thermal_resistance_c_per_w: float = param(
        15.0, "Thermal resistance R_th (steady-state rise per watt)", unit="degC/W", check=ge(0))
    time_constant_s: float = param(120.0, "Thermal time constant tau = R_th C_th", unit="s",
                                   check=gt(0))
    throttle_c: float = param(60.0, "Temperature at which drafting is throttled", unit="degC")
    release_c: Optional[float] = param(
        None, "Temperature below which throttling stops (hysteresis; null: throttle_c)",
        unit="degC")
    throttle_factor: float = param(2.0, "Drafting-latency multiplier while throttled (2: half "
                                   "the drafting speed)", check=ge(1))


@section
class Energy(Params):
    """Power of each phase for the energy accounting (model/energy.py)."""

    draft_power_w: float = param(4.0, "Device power while drafting (devices without a power "
                                 "mode; assumed: phone/Jetson SoC under load)", unit="W",
                                 check=ge(0))
    idle_power_w: float = param(0.5, "Device power while waiting in a round (for the others' "
                                "drafts, the verification, the corrections)", unit="W",
                                check=ge(0))
    ul_circuit_power_w: float = param(0.1, "Device transmit-chain circuit power added to its "
                                      "UL transmit power while sending a correction", unit="W",
                                      check=ge(0))
    dl_receive_power_w: float = param(0.2, "Device power while receiving a DL correction",
                                      unit="W", check=ge(0))
    record: bool = param(True, "Write the energy columns (with slowdown and temperature_c) and "
                         "the summary's energy block (false: skip the accounting, about 10% "
                         "faster recording)")


@section
class Serving(Params):
    """Serving protocol (synchronous rounds or asynchronous continuous batching) and SLOs."""

    protocol: str = param(
        "synchronous", "'synchronous': the paper's lock-step rounds; 'asynchronous': every "
        "device drafts, waits for its own verification and corrects on its own, the server "
        "verifies batches of the drafts waiting in its queue (continuous batching)",
        choices=PROTOCOLS)
    batching: str = param(
        "immediate", "Asynchronous batch formation when the server is free: 'immediate' (all "
        "drafts waiting), 'window' (wait until window_ms after the oldest waiting draft arrived "
        "or until max_batch drafts wait), 'max-batch' (at most max_batch of the waiting drafts)",
        choices=BATCHING_POLICIES)
    window_ms: float = param(5.0, "Batching window W of 'window'", unit="ms", check=ge(0))
    max_batch: Optional[int] = param(
        None, "Largest batch B of 'window' and 'max-batch' (null: no limit)", check=ge(1))
    pre_draft: bool = param(
        False, "Asynchronous: a device drafts its next draft while it waits for verification "
        "(kept when its draft is fully accepted, discarded and counted as wasted otherwise)")
    slo_ttft_s: Optional[float] = param(
        None, "SLO on the time to first token of a request (null: none)", unit="s", check=gt(0))
    slo_tpot_s: Optional[float] = param(
        None, "SLO on the time per output token after the first (null: none)", unit="s",
        check=gt(0))


@section
class Adaptive(Params):
    """Parameters of the adaptive draft-length policies (policy.draft threshold, backoff,
    goodput-argmax, off-under-load)."""

    threshold: float = param(
        0.5, "'threshold': draft while the probability that every token drafted so far is "
        "accepted (product of the per-position agreement probabilities) stays >= this",
        check=in_interval(0, 1, low_open=True, high_open=True))
    backoff_initial: int = param(5, "'backoff': initial draft length", check=ge(1))
    backoff_increase: int = param(2, "'backoff': added after a fully accepted draft",
                                  check=ge(0))
    backoff_decrease: int = param(1, "'backoff': removed after a rejection", check=ge(0))
    backoff_min: int = param(1, "'backoff': smallest draft length", check=ge(0))
    load_threshold: int = param(
        8, "'off-under-load': no speculation (gamma = 0) while more than this many devices "
        "have work (the server's running batch, as vLLM's disable-by-batch-size); otherwise "
        "policy.draft_length", check=ge(0))


LINK_MODELS = Registered("multispin_sim.model.link", "LINK_MODELS")
CQI_TABLES: tuple[str, ...] = ("64qam", "256qam", "64qam-low-se", "continuous")
HARQ_COMBINING: tuple[str, ...] = ("chase", "repetition")
SUBCARRIER_SPACINGS_KHZ: tuple[int, ...] = (15, 30, 60, 120)


@section
class Link(Params):
    """The link layer (README 'Link layer'): Shannon rate (the paper) or NR MCS/BLER/HARQ."""

    model: str = param("shannon", "'shannon': b log2(1 + SNR) on B / |R| (the paper); 'mcs': "
                       "3GPP NR link: whole PRBs, CQI-table MCS chosen at the reported SNR, "
                       "TS 38.214 transport blocks per slot, BLER, HARQ, outages",
                       choices=LINK_MODELS)
    cqi_table: str = param("64qam", "CQI table of 'mcs': '64qam' (TS 38.214 Table 5.2.2.1-2), "
                           "'256qam' (5.2.2.1-3), '64qam-low-se' (5.2.2.1-4), 'continuous' "
                           "(ideal rate log2(1 + SNR / gap), no TBS rounding)",
                           choices=CQI_TABLES)
    bler_target: float = param(0.1, "Link adaptation: the highest MCS whose BLER at the reported "
                               "SNR is <= this", check=in_interval(0, 1, low_open=True,
                                                                  high_open=True))
    implementation_gap_db: float = param(1.5, "SNR gap of each MCS's 10%-BLER threshold to the "
                                         "Shannon bound: thr = gap (2^eff - 1)", unit="dB",
                                         check=ge(0))
    bler_waterfall_db: float = param(1.0, "Width of the logistic BLER curve: SNR span from BLER "
                                     "0.9 to 0.1", unit="dB", check=gt(0))
    subcarrier_spacing_khz: int = param(30, "Subcarrier spacing 15 * 2^mu (PRB = 12 "
                                        "subcarriers, slot = 1 ms / 2^mu)", unit="kHz",
                                        check=Check(lambda v: v in SUBCARRIER_SPACINGS_KHZ,
                                                    "one of 15, 30, 60, 120", standalone=True))
    harq_max_transmissions: int = param(4, "HARQ: transmissions of one transport block before it "
                                        "is dropped and retried on the next fading block",
                                        check=ge(1))
    harq_combining: str = param("chase", "'chase': the m-th attempt decodes at the summed SNR "
                                "m SNR; 'repetition': independent attempts", choices=HARQ_COMBINING)
    retry_block_ms: float = param(10.0, "With one fading block per round "
                                  "(channel.coherence_time_ms null): how long an outage or a "
                                  "dropped block waits for a new fading draw", unit="ms",
                                  check=gt(0))


@section
class Csi(Params):
    """CSI at decision time (draft controller and reactive policy); transmissions meet the truth."""

    delay_ms: float = param(0.0, "Age of the CSI at the decision, aged with rho = J0(2 pi "
                            "channel.doppler_hz delay)", unit="ms", check=ge(0))
    cqi_quantisation: bool = param(False, "Decisions see a 4-bit CQI of the reference SNR "
                                   "P_ul g K / (N0 B) (full power on a 1/K share of the band; "
                                   "lower edge of its bin on the link's CQI grid) instead of the "
                                   "exact gain")
    estimation_error_variance: float = param(
        0.0, "MMSE channel estimation error variance s2 (h = h_hat + e, e ~ CN(0, s2)); the "
        "decision uses |h_hat|^2", check=in_interval(0, 1, high_open=True))


@section
class Straggler(Params):
    """Settings of the straggler-aware reactive policies (policy.mode 'deadline', 'robust')."""

    deadline_ms: Optional[float] = param(
        None, "'deadline': corrections planned slower than this are deferred to the next round "
        "start (null: deadline_median_multiple x the round's median planned delay)", unit="ms",
        check=gt(0))
    deadline_median_multiple: float = param(
        2.0, "'deadline' without deadline_ms: the deadline as a multiple of the median planned "
        "correction delay of the round", check=ge(1))
    robust_quantile: float = param(0.9, "'robust': the quantile of T_comm (under the CSI error "
                                   "model) the split minimises", check=in_interval(0, 1,
                                                                                  low_open=True,
                                                                                  high_open=True))
    robust_samples: int = param(64, "'robust': samples of the true channel per decision",
                                check=ge(1))


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
    compute: Compute = param(Compute(), "Device power modes and thermal throttling")
    energy: Energy = param(Energy(), "Powers for the energy accounting")
    serving: Serving = param(Serving(), "Serving protocol, batching and SLOs")
    adaptive: Adaptive = param(Adaptive(), "Adaptive draft-length policies")
    acceptance: Acceptance = param(Acceptance(), "Acceptance model and belief")
    link: Link = param(Link(), "The link layer (Shannon or NR MCS/HARQ)")
    csi: Csi = param(Csi(), "CSI at decision time")
    straggler: Straggler = param(Straggler(), "Straggler-aware reactive policies")
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
def _check_payload_model(sc: Scenario) -> None:
    p = sc.payload
    for i, k in enumerate(p.menu if sc.policy.mode == "fidelity" else ()):
        if not isinstance(k, str) and k > p.vocab:
            raise ScenarioError(f"payload.menu.{i}", f"{k} is larger than payload.vocab "
                                f"({p.vocab})", f"expected an integer 1..{p.vocab} or 'dense'")
    if p.model == "bits":
        if p.format == "topp":
            raise ScenarioError("payload.format", "'topp' sizes depend on the distributions",
                                "expected payload.model 'token' for format 'topp'")
        if sc.policy.mode == "fidelity":
            raise ScenarioError("policy.mode", "'fidelity' needs the distributions",
                                "expected payload.model 'token' for policy.mode 'fidelity'")
        if p.pairs_file is not None:
            raise ScenarioError("payload.pairs_file", "a distributions file needs the token "
                                "model", "expected payload.model 'token' (or no pairs_file)")
    elif p.format == "topp" and sc.policy.mode != "fidelity":
        raise ScenarioError("payload.format", "'topp' gives every device and direction its own "
                            f"payload size, which policy.mode {sc.policy.mode!r} cannot use",
                            "expected policy.mode 'fidelity' with format 'topp'")
    if p.pairs_file is not None and not os.path.isfile(p.pairs_file):
        raise ScenarioError("payload.pairs_file", f"{p.pairs_file!r} is not a readable file",
                            "expected the path of an npz with arrays p and q")


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


@cross_check
def _check_compute(sc: Scenario) -> None:
    c = sc.compute
    modes = sorted(c.power_modes)
    allowed = (f"expected one of {', '.join(repr(m) for m in modes)} (compute.power_modes)"
               if modes else "expected a name defined in compute.power_modes (none defined)")
    if c.power_mode is not None and c.power_mode not in c.power_modes:
        raise ScenarioError("compute.power_mode", f"unknown power mode {c.power_mode!r}", allowed)
    for index, ov in sc.devices.overrides.items():
        if ov.power_mode is not None and ov.power_mode not in c.power_modes:
            raise ScenarioError(f"devices.overrides.{index}.power_mode",
                                f"unknown power mode {ov.power_mode!r}", allowed)
    if c.release_c is not None and c.release_c > c.throttle_c:
        raise ScenarioError("compute.release_c", f"{c.release_c} is above compute.throttle_c "
                            f"({c.throttle_c})", "expected a temperature <= compute.throttle_c")


@cross_check
def _check_verify_table(sc: Scenario) -> None:
    # the file's contents are checked when a run starts (engine.compute.check_verify_table)
    s = sc.server
    if (s.verify_model == "table" and s.verify_table not in SHIPPED_VERIFY_TABLES
            and not os.path.isfile(s.verify_table)):
        raise ScenarioError("server.verify_table", f"{s.verify_table!r} is neither a shipped "
                            "table nor a readable file", "expected one of "
                            f"{', '.join(SHIPPED_VERIFY_TABLES)} or the path of a CSV "
                            "(batched tokens, milliseconds)")


@cross_check
def _check_serving(sc: Scenario) -> None:
    if sc.serving.protocol != "asynchronous":
        return
    if sc.workload.tick_period_s is not None:
        raise ScenarioError("workload.tick_period_s", "a round clock is not allowed with "
                            "serving.protocol 'asynchronous'", "expected null (no rounds)")
    if sc.mobility.model != "none":
        raise ScenarioError("mobility.model", f"{sc.mobility.model!r} is not supported with "
                            "serving.protocol 'asynchronous'", "expected 'none'")
    if sc.compute.thermal:
        raise ScenarioError("compute.thermal", "thermal throttling is not supported with "
                            "serving.protocol 'asynchronous'", "expected false")
    if sc.policy.mode == "deadline":
        raise ScenarioError("policy.mode", "'deadline' defers corrections to the next round, "
                            "which the asynchronous protocol does not have",
                            "expected another policy.mode with serving.protocol 'asynchronous'")


@cross_check
def _check_acceptance(sc: Scenario) -> None:
    a = sc.acceptance
    if (a.model == "markov" or a.belief == "filtered") and a.easy_to_hard + a.hard_to_easy <= 0:
        raise ScenarioError("acceptance.easy_to_hard", "both switching probabilities are 0 "
                            "(the chain never moves, its stationary state is undefined)",
                            "expected easy_to_hard + hard_to_easy > 0")
    if a.model == "trace" and a.trace_file and not os.path.isfile(a.trace_file):
        raise ScenarioError("acceptance.trace_file", f"{a.trace_file!r} is not a readable file",
                            "expected the path of a Spec-Bench JSONL or a 0/1 CSV trace")
    if a.model != "iid" and sc.payload.model == "token":
        raise ScenarioError("acceptance.model", f"{a.model!r} with payload.model 'token' (the "
                            "token model's distributions decide every acceptance)",
                            "expected 'iid' (the token model), or payload.model 'bits'")


@cross_check
def _check_link(sc: Scenario) -> None:
    # the PRB count check needs the NR tables (model): engine.link.check_link, before a run
    # writes anything
    if sc.csi.cqi_quantisation and sc.link.cqi_table == "continuous":
        raise ScenarioError("csi.cqi_quantisation", "CQI quantisation with link.cqi_table "
                            "'continuous' (no CQI grid)", "expected a CQI table other than "
                            "'continuous', or cqi_quantisation: false")
