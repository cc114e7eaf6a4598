"""Sections of the components beyond the paper's setting: workload, topology, mobility,
acceptance, compute, energy, serving, adaptive drafting, link layer, CSI, stragglers, limits.

One frozen dataclass per section, one ``param(...)`` line per key (see ``schema``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Optional, Union

from .names import (ACCEPTANCE_BELIEFS, ACCEPTANCE_MODELS, ACCEPTANCE_SESSIONS, ALPHA,
                    ARRIVAL_MODELS, BATCHING_POLICIES, CQI_TABLES, FREQUENCY_RANGES,
                    HARQ_COMBINING, LENGTH_MODELS, LINK_MODELS, MAX_DRAFT_LIMIT,
                    MAX_REQUEST_TOKENS, MAX_SLOWDOWN, MOBILITY_MODELS, POSITIVE_STEP_MS, POWER_W,
                    PROB, PROTOCOLS, STEP_MS, SUBCARRIER_SPACINGS_KHZ, TOPOLOGY_LAYOUTS,
                    TRACE_ASSIGN, TRACE_NEXT)
from .params import (Check, FrozenMap, Params, between, ge, gt, in_interval, number_or_range,
                     param, section)
from .presets import TASKS

MAX_MEMORY_MB = 10 ** 9   # a petabyte: keeps every count the estimate admits within 64 bits

_POSITIVE_RATES = Check(
    lambda v: v > 0 if isinstance(v, float) else all(x > 0 for x in v),
    "a number > 0 or a list of devices.count numbers > 0 (one per device)", standalone=True)
_THERMAL_RESISTANCE = in_interval(0, 1e4)   # beyond, temperatures overflow and never throttle
_REQUEST_TOKENS = between(1, MAX_REQUEST_TOKENS)   # 10 million: 10x the longest contexts
_LENGTH_LIST = Check(lambda v: all(1 <= x <= MAX_REQUEST_TOKENS for x in v),
                     f"a list of integers in 1..{MAX_REQUEST_TOKENS}", standalone=True)
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
                               "'lognormal' (at most 10 million, 10x the longest context "
                               "windows, as every request length: longer draws are cut to "
                               "it)", unit="tokens", check=_REQUEST_TOKENS)
    length_sigma: float = param(1.0, "Standard deviation of ln(length) for 'lognormal'",
                                check=gt(0))
    length_values: tuple[int, ...] = param((), "Lengths drawn uniformly for 'empirical'",
                                           unit="tokens", check=_LENGTH_LIST)
    length_per_task: Mapping[str, int] = param(
        FrozenMap(), "Request length per task for 'per-task' (tasks not listed use "
        "length_tokens)", unit="tokens", check=_REQUEST_TOKENS, keys=TASKS, key_allowed="task",
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
                                  check=ALPHA)
    concentration: float = param(10.0, "'beta': concentration kappa (alpha ~ Beta(m kappa, "
                                 "(1 - m) kappa), variance m (1 - m) / (kappa + 1))", check=gt(0))
    session_tokens: int = param(64, "'beta': token positions per session (one alpha each)",
                                unit="tokens", check=ge(1))
    session: str = param("tokens", "'beta' and 'trace': when a device moves on to a new "
                         "alpha / answer: 'tokens' (after session_tokens positions / at the "
                         "answer's end) or 'request' (also at the start of each request of a "
                         "queueing workload)", choices=ACCEPTANCE_SESSIONS)
    easy_rate: float = param(0.9, "'markov': agreement rate in the easy state", check=PROB)
    hard_rate: float = param(0.3, "'markov': agreement rate in the hard state", check=PROB)
    easy_to_hard: float = param(0.05, "'markov': probability per token position of switching "
                                "easy -> hard", check=PROB)
    hard_to_easy: float = param(0.1, "'markov': probability per token position of switching "
                                "hard -> easy", check=PROB)
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
        None, "'learned': prior mean (null: the device's declared mean rate)", check=PROB)
    belief_prior_weight: float = param(10.0, "'learned': weight of the prior in token positions",
                                       unit="tokens", check=gt(0))
    belief_half_life: Optional[float] = param(
        None, "'learned': evidence is discounted by half every this many verified positions "
        "(null: never, the plain posterior)", unit="tokens", check=gt(0))


@section
class PowerMode(Params):
    """One named power mode of a device (a row of compute.power_modes)."""

    draft_latency_ms: float = param(15.2, "Reference per-token drafting latency in this mode "
                                    "(t_k = this x s_k, the device's spread; at most a minute)",
                                    unit="ms/token", check=POSITIVE_STEP_MS)
    draft_power_w: float = param(4.0, "Device power while drafting in this mode (at most a "
                                 "megawatt, as every power in W)", unit="W", check=POWER_W)
    thermal_resistance_c_per_w: Optional[float] = param(
        None, "Thermal resistance R_th of a device in this mode (a phone's is larger than a "
        "heatsinked board's; null: compute.thermal_resistance_c_per_w)", unit="degC/W",
        check=_THERMAL_RESISTANCE)


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
        15.0, "Thermal resistance R_th (steady-state rise per watt; boards: about 0.1 to 100)",
        unit="degC/W", check=_THERMAL_RESISTANCE)
    time_constant_s: float = param(120.0, "Thermal time constant tau = R_th C_th", unit="s",
                                   check=gt(0))
    throttle_c: float = param(60.0, "Temperature at which drafting is throttled", unit="degC")
    release_c: Optional[float] = param(
        None, "Temperature below which throttling stops (hysteresis; null: throttle_c)",
        unit="degC")
    throttle_factor: float = param(2.0, "Drafting-latency multiplier while throttled (2: half "
                                   "the drafting speed; at most 100)",
                                   check=in_interval(1, MAX_SLOWDOWN))


@section
class Energy(Params):
    """Power of each phase for the energy accounting (model/energy.py)."""

    draft_power_w: float = param(4.0, "Device power while drafting (devices without a power "
                                 "mode; assumed: phone/Jetson SoC under load; at most a "
                                 "megawatt, as every power in W: beyond, energies overflow)",
                                 unit="W", check=POWER_W)
    idle_power_w: float = param(0.5, "Device power while waiting in a round (for the others' "
                                "drafts, the verification, the corrections)", unit="W",
                                check=POWER_W)
    ul_circuit_power_w: float = param(0.1, "Device transmit-chain circuit power added to its "
                                      "UL transmit power while sending a correction", unit="W",
                                      check=POWER_W)
    dl_receive_power_w: float = param(0.2, "Device power while receiving a DL correction",
                                      unit="W", check=POWER_W)
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
    window_ms: float = param(5.0, "Batching window W of 'window' (at most a minute)", unit="ms",
                             check=STEP_MS)
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
    backoff_initial: int = param(5, "'backoff': initial draft length (as every backoff key, at "
                                 f"most {MAX_DRAFT_LIMIT}, the largest policy.max_draft)",
                                 check=between(1, MAX_DRAFT_LIMIT))
    backoff_increase: int = param(2, "'backoff': added after a fully accepted draft",
                                  check=between(0, MAX_DRAFT_LIMIT))
    backoff_decrease: int = param(1, "'backoff': removed after a rejection",
                                  check=between(0, MAX_DRAFT_LIMIT))
    backoff_min: int = param(1, "'backoff': smallest draft length",
                             check=between(0, MAX_DRAFT_LIMIT))
    load_threshold: int = param(
        8, "'off-under-load': no speculation (gamma = 0) while more than this many devices "
        "have work (the server's running batch, as vLLM's disable-by-batch-size); otherwise "
        "policy.draft_length", check=ge(0))


@section
class Link(Params):
    """The link layer (docs/components/link.md): Shannon rate (the paper) or NR MCS/BLER/HARQ."""

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
                                         check=in_interval(0, 60))
    bler_waterfall_db: float = param(1.0, "Width of the logistic BLER curve: SNR span from BLER "
                                     "0.9 to 0.1", unit="dB", check=gt(0))
    subcarrier_spacing_khz: int = param(30, "Subcarrier spacing 15 * 2^mu (PRB = 12 "
                                        "subcarriers, slot = 1 ms / 2^mu)", unit="kHz",
                                        check=Check(lambda v: v in SUBCARRIER_SPACINGS_KHZ,
                                                    "one of 15, 30, 60, 120", standalone=True))
    frequency_range: str = param("FR1", "Frequency range of the carrier's PRB table (link "
                                 "'mcs'): 'FR1' (TS 38.101-1 Table 5.3.2-1: 15, 30, 60 kHz) or "
                                 "'FR2' (TS 38.101-2 Table 5.3.2-1: 60, 120 kHz, 50-400 MHz)",
                                 choices=FREQUENCY_RANGES)
    harq_max_transmissions: int = param(4, "HARQ: transmissions of one transport block before it "
                                        "is dropped and retried on the next fading block",
                                        check=ge(1))
    harq_combining: str = param("chase", "'chase': the m-th attempt decodes at the summed SNR "
                                "m SNR; 'repetition': independent attempts", choices=HARQ_COMBINING)
    retry_block_ms: float = param(10.0, "With one fading block per round "
                                  "(channel.coherence_time_ms null): how long an outage or a "
                                  "dropped block waits for a new fading draw (at most a "
                                  "minute)", unit="ms", check=POSITIVE_STEP_MS)


@section
class Csi(Params):
    """CSI at decision time (draft controller and reactive policy); transmissions meet the truth."""

    delay_ms: float = param(0.0, "Age of the CSI at the decision: under channel.fading "
                            "'jakes' the same process read delay earlier; otherwise aged by one "
                            "draw with rho = J0(2 pi channel.doppler_hz delay); at most a "
                            "minute, far beyond any coherence time", unit="ms", check=STEP_MS)
    cqi_quantisation: bool = param(False, "Decisions see a 4-bit CQI of the reference SNR "
                                   "P_ul g K / (N0 B) (full power on a 1/K share of the band; "
                                   "lower edge of its bin on the link's CQI grid) instead of the "
                                   "exact gain")
    estimation_error_variance: float = param(
        0.0, "MMSE channel estimation error variance s2 (h = h_hat + e, e ~ CN(0, s2)); the "
        "decision uses |h_hat|^2 (server antennas: ||h_hat||^2, the beam h_hat)",
        check=in_interval(0, 1, high_open=True))


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
    robust_samples: int = param(64, "'robust': samples of the true channel per decision (their "
                                "memory, with devices.count, counts against "
                                "limits.max_memory_mb)", check=ge(1))


@section
class Limits(Params):
    """Bounds that keep a run's memory and time finite (docs/model.md section 12); raise them
    when you mean it."""

    max_backlog_requests: int = param(
        1_000_000, "Queueing workloads: the run stops (summary complete: false, with the reason) "
        "when more requests than this wait in all queues together (an unstable queue grows "
        "without bound)", unit="requests", check=ge(1))
    max_memory_mb: float = param(
        4096.0, "Refuse a scenario whose estimated memory (devices.count, run.rounds, the "
        "sample counts, the cells) exceeds this (at most 1e9 MB, a petabyte)", unit="MB",
        check=in_interval(0, MAX_MEMORY_MB, low_open=True))
    max_blocks_per_transmission: int = param(
        1_000_000, "With channel.coherence_time_ms or link.model mcs: the run stops (complete: "
        "false) when one correction would need more fading blocks than this", check=ge(1))
    max_legs_per_round: int = param(
        1_000_000, "With mobility.model random-waypoint: the run stops (complete: false) when a "
        "device would walk more waypoint legs than this between two position updates (a round "
        "of years: a link budget with almost no rate)", check=ge(1))
