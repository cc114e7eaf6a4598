"""Sections of the paper's system: devices, server, channel, payload, policies, run length.

One frozen dataclass per section, one ``param(...)`` line per key (see ``schema``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Optional, Union

from .choices import Registered
from .names import (ALPHA, DEVICE_TASKS, DRAFT_POLICIES, DRAFT_UPDATES, ESTIMATORS,
                    FADING_MODELS, MAX_DISTANCE_M, MAX_DRAFT_LIMIT, MAX_NOISE_FIGURE_DB,
                    MAX_SLOWDOWN, MIN_DISTANCE_M, PAYLOAD_FORMATS, PAYLOAD_MODELS, PLAN_GAINS,
                    POLICY_MODES, POSITIVE_STEP_MS, POWER_DBM, POWER_W, STEP_MS)
from .params import (Check, FrozenMap, Params, between, ge, gt, in_interval, int_or_choice, param,
                     number_or_range, range_pair, section)
from .presets import TASKS

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
                                   "its task's rate)", check=ALPHA)
    draft_latency_ms: Optional[float] = param(None, "Exact drafting latency t_k of this device "
                                              "(no spread applied; at most a minute)",
                                              unit="ms/token", check=POSITIVE_STEP_MS)
    distance_m: Optional[float] = param(None, "Distance of this device to the server (at "
                                        "least the 1 m reference distance of the path loss)",
                                        unit="m", check=in_interval(MIN_DISTANCE_M,
                                                                    MAX_DISTANCE_M))
    ul_power_dbm: Optional[float] = param(None, "UL power budget of this device (-100 to 100 "
                                          "dBm, as devices.ul_power_dbm)", unit="dBm",
                                          check=POWER_DBM)
    draft_length: Optional[int] = param(None, "Draft length of this device (wins over "
                                        "policy.draft_length)", check=between(0, MAX_DRAFT_LIMIT),
                                        allowed="an integer 0..policy.max_draft or null")
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
        "model pair's table (assumed values, docs/model.md section 3)", check=ALPHA, keys=TASKS,
        key_allowed="task", preset="acceptance", default_text="model_pair's table")
    draft_latency_ms: Optional[float] = param(
        None, "Reference per-token drafting latency t_ref (t_k = t_ref * s_k; at most a "
        "minute, measured ones are tens of ms)", unit="ms/token", check=POSITIVE_STEP_MS,
        preset="draft_latency_ms")
    draft_latency_spread: tuple[float, float] = param(
        (1.0, 1.15), "Device heterogeneity: s_k ~ U[low, high], drawn once per device (a "
        "device at most 100 times slower than t_ref)", check=range_pair(0, MAX_SLOWDOWN))
    distance_m: Union[float, tuple[float, float]] = param(
        (100.0, 500.0), "Distance to the server: d_k ~ U[low, high], or one fixed distance "
        "(from the 1 m reference distance of the path loss G_0 to 100 km)",
        unit="m", check=number_or_range(MIN_DISTANCE_M, MAX_DISTANCE_M, inclusive=True))
    ul_power_dbm: float = param(10.0, "UL power budget P_ul of each device (-100 to 100 dBm, "
                                "0.1 pW to 10 MW: beyond any radio; outside it a power or a "
                                "rate over- or underflows)", unit="dBm", check=POWER_DBM)
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
        "or dl_power_ratio, not both; -100 to 100 dBm, as devices.ul_power_dbm)", unit="dBm",
        check=POWER_DBM, exclusive_with="dl_power_ratio")
    dl_power_ratio: Optional[float] = param(
        None, "DL-to-UL power-budget ratio rho: P_dl = rho * P_ul in linear units (assumed "
        "reading, docs/model.md section 5); used when dl_power_dbm is not given, default 4 "
        "(4 x 10 mW = 16.02 dBm); the P_dl it gives must lie in -100 to 100 dBm", check=gt(0),
        default_text="4 (if dl_power_dbm is not given)",
        exclusive_with="dl_power_dbm")
    verify_fixed_ms: Optional[float] = param(
        None, "Fixed part T_ver0 of one batched verification pass (at most a minute, as every "
        "verification and drafting time: measured passes take tens of ms)", unit="ms",
        check=STEP_MS, preset="verify_fixed_ms")
    verify_per_device_ms: Optional[float] = param(
        None, "Verification time T_ver1 added per device in the batch (at most a minute)",
        unit="ms", check=STEP_MS, preset="verify_per_device_ms")
    verify_model: str = param(
        "linear", "Verification cost of a batch: 'linear' (T_ver0 + K_b T_ver1, the paper), "
        "'tokens' (T_ver0 + verify_per_token_ms x tokens in the batch, tokens = sum over the "
        "batch of gamma_k + 1) or 'table' (piecewise-linear in the batch's tokens through "
        "verify_table; flat below its first row, last slope above its last)",
        choices=Registered("multispin_sim.model.verification", "VERIFY_MODELS"))
    verify_per_token_ms: Optional[float] = param(
        None, "Time T1 per token in the batch for verify_model 'tokens' (null: "
        "verify_per_device_ms / 5, equal to 'linear' when every device drafts 4 tokens, the "
        "paper's default; at most a minute)", unit="ms/token", check=STEP_MS,
        default_text="verify_per_device_ms / 5")
    verify_table: str = param(
        "vidur-a100-codellama34b", "Profile for verify_model 'table': a shipped table "
        "('vidur-a100-codellama34b': A100, CodeLlama-34B, every layer operator but attention; "
        "'paper-linear-qwen2.5') or the path of a CSV with a header and rows 'batched tokens, "
        "milliseconds' sorted by tokens (relative to the working directory)")
    power_w: float = param(300.0, "Server power while verifying (energy = power_w x T_ver; "
                           "assumed: A100 board power under load; at most a megawatt)", unit="W",
                           check=POWER_W)
    antennas: int = param(1, "Antennas M at the server (devices have one): per-device channel "
                          "vectors h_k in C^M, one fading process per antenna element "
                          "(docs/components/antennas.md)", check=between(1, 256))
    antenna_correlation: float = param(
        0.0, "Spatial correlation rho of the server's antennas, exponential model "
        "R_ij = rho^|i - j| (0: i.i.d. Rayleigh)", check=in_interval(0, 1, high_open=True))
    antenna_spacing: float = param(
        0.5, "Element spacing d of the server's uniform linear array, in wavelengths: the "
        "line-of-sight vectors without fading (channel.fading 'none'), phase 2 pi d i "
        "sin(bearing - broadside) on element i", unit="wavelengths",
        check=in_interval(0, 100, low_open=True))
    array_broadside_deg: float = param(
        0.0, "The direction the server's linear array faces (its broadside), degrees "
        "counter-clockwise from the topology's x axis: a device there, or opposite, sees the "
        "same phase on every element (channel.fading 'none')", unit="deg",
        check=in_interval(-360, 360))
    dl_scheme: str = param(
        "ofdma-mrt", "DL transmission scheme: 'ofdma-mrt' (orthogonal subbands, maximum-ratio "
        "transmission: gain ||a_k||^2, the paper's DL for M = 1) or 'mu-mimo-zf' (the DL set "
        "shares its pooled band, zero-forcing, at most M streams at once, more in groups)",
        choices=Registered("multispin_sim.model.mimo", "DL_SCHEMES"))
    zf_groups: str = param(
        "fewest", "How 'mu-mimo-zf' groups a DL set of more than M devices (served one group "
        "after another): 'fewest' (ceil(|D| / M) groups of up to M streams) or 'best' (also 2, "
        "4, ... times as many, down to one stream per group; the grouping that ends first)",
        choices=("fewest", "best"))
    ul_scheme: str = param(
        "ofdma-mrc", "UL transmission scheme: 'ofdma-mrc' (orthogonal subbands, maximum-ratio "
        "combining: gain ||a_k||^2, the paper's UL for M = 1) or 'mu-mimo-mmse' (the UL set "
        "shares its pooled band at once, linear MMSE combining)",
        choices=Registered("multispin_sim.model.mimo", "UL_SCHEMES"))
    ul_power: str = param(
        "full", "UL powers under 'mu-mimo-mmse': 'full' (every device at its budget) or "
        "'descent' (coordinate descent over the grid P_ul 2^-j, j < 8, on the UL set's slowest "
        "delay: a strong stream's power is the others' interference); orthogonal UL schemes "
        "always send at full power (optimal without interference)", choices=("full", "descent"))


@section
class Channel(Params):
    """The OFDMA channel."""

    bandwidth_mhz: float = param(10.0, "Total bandwidth B (at least 1 kHz, narrower than one "
                                 "NR subcarrier; at most 100 GHz)", unit="MHz",
                                 check=in_interval(0.001, 1e5))
    # bounds: beyond them a gain or the noise power underflows to 0 and a rate divides by it
    noise_psd_dbm_hz: float = param(-174.0, "Noise power spectral density N0 (assumed; "
                                    "thermal noise at 290 K is -174)", unit="dBm/Hz",
                                    check=in_interval(-300.0, 30.0))
    ref_gain_db: float = param(-30.0, "Large-scale gain G_0 at 1 m", unit="dB",
                               check=in_interval(-300.0, 100.0))
    pathloss_exponent: float = param(3.5, "Path-loss exponent eta: G = G_0 (d / 1 m)^-eta "
                                     "(measured: about 1.6 to 6)",
                                     check=in_interval(0.0, 10.0, low_open=True))
    fading: str = param("rayleigh", "Small-scale fading: 'rayleigh' (|h|^2 ~ Exp(1), i.i.d. "
                        "per block), 'none' (|h|^2 = 1), 'gauss-markov' (AR(1) per block: "
                        "rho = J0(2 pi doppler_hz T) over one block of T, so rho^n after n "
                        "blocks, which depends on the block length) or 'jakes' (sum-of-sinusoids "
                        "Rayleigh process in continuous time: correlation J0(2 pi doppler_hz "
                        "tau) at every lag tau, whatever the block length)",
                        choices=FADING_MODELS)
    rician_k_db: Optional[float] = param(
        None, "Rician K-factor of the small-scale fading: null = Rayleigh elements (the paper); "
        "a number = each element is h = a s + b w, a^2 = K / (K + 1), b^2 = 1 / (K + 1): the "
        "line of sight s toward the device (the server's steering vector; 1 with one antenna) "
        "and the scattered part w of the fading model ('rayleigh', 'gauss-markov' or 'jakes')",
        unit="dB", check=in_interval(-30.0, 40.0))
    reciprocal: bool = param(True, "UL and DL gains are the same draw (true) or independent "
                             "draws (false)")
    doppler_hz: float = param(10.0, "Maximum Doppler frequency f_D of 'gauss-markov' and "
                              "'jakes' fading under doppler 'fixed' "
                              "(f_D = v f_c / c: about 10 Hz walking, 200 Hz at 60 km/h, at "
                              "3.5 GHz; at most 1 MHz)", unit="Hz", check=in_interval(0, 1e6))
    doppler: str = param("fixed", "Where each device's Doppler comes from: 'fixed' "
                         "(doppler_hz for every device, moving or not) or 'speed' (its own "
                         "speed under mobility.model: f_D = v f_c / c, f_c = cells.fc_ghz; "
                         "the channel is that of where the device is, so two instants "
                         "correlate as J0(2 pi f_c Delta_s / c), Delta_s the distance walked "
                         "between them, and a device that pauses keeps its channel; 'jakes' "
                         "fading only)", choices=("fixed", "speed"))
    coherence_time_ms: Optional[float] = param(
        None, "Fading block length T_c: null = one block per round, drawn at its start (the "
        "paper); a number = blocks of T_c on a fixed time grid, so a correction longer than T_c "
        "continues over new blocks (its bits accumulate at each block's rate) and the reactive "
        "decision uses the block at its start (rule of thumb T_c = 0.423 / f_D); under 'jakes' "
        "it only sets how often the process is sampled, not its correlation; with several server "
        "antennas each block holds the channel vectors",
        unit="ms",
        check=gt(0))
    shadowing_db: float = param(0.0, "Standard deviation sigma of log-normal shadowing on the "
                                "large-scale gain (0: none; measured spreads are 4 to 12 dB); "
                                "drawn once per device", unit="dB", check=in_interval(0, 40))
    shadowing_decorrelation_m: float = param(
        50.0, "Decorrelation distance of shadowing for moving devices (Gudmundson: correlation "
        "exp(-moved / this); 3GPP TR 38.901 Table 7.5-6 gives 6 to 120 m: at least 1 m, the "
        "process being kept on a grid of 1/16 of it along each path)", unit="m", check=ge(1.0))
    noise_figure_db: float = param(0.0, "Receiver noise figure, added to noise_psd_dbm_hz for "
                                   "both link models (N0 = noise_psd_dbm_hz + noise_figure_db; "
                                   "receivers have 2 to 15 dB, 100 dB already leaves a link "
                                   "almost no rate)", unit="dB",
                                   check=in_interval(0, MAX_NOISE_FIGURE_DB))


_MENU = Check(lambda v: len(v) >= 1 and all(x == "dense" if isinstance(x, str) else x >= 1
                                              for x in v),
              "a non-empty list of integers >= 1 (top-k sizes) or 'dense'", standalone=True)


@section
class Payload(Params):
    """Size of one transmitted distribution: S = V_eff (ceil(log2 V) + Q) bits, dense V Q."""

    effective_vocab: Union[int, str] = param(
        1024, "Kept entries V_eff (top-k 'effective vocabulary'), or 'dense' (full fp "
        "distribution)", check=int_or_choice(1, ("dense",), "(<= vocab)"))
    vocab: int = param(151665, "Vocabulary size V (token ids; at most 2^32, vocabularies have "
                       "about 10^5)", check=between(2, 2 ** 32))
    prob_bits: int = param(16, "Bits per probability Q (at most 64, a double)", unit="bit",
                           check=between(1, 64))
    format: str = param("topk", "Payload format of one distribution: 'dense' (V Q bits), 'topk' "
                        "(k = effective_vocab entries, k (ceil(log2 V) + Q) bits), 'topp' (the "
                        "fewest entries with mass >= top_p, plus a ceil(log2(V+1))-bit count; "
                        "token model only) or 'quantized' (top-k, or all V if effective_vocab is "
                        "'dense', with quant_bits per probability and a 32-bit scale); "
                        "model/payload.py", choices=PAYLOAD_FORMATS)
    top_p: float = param(0.95, "Probability mass p kept by format 'topp'",
                         check=in_interval(0, 1, low_open=True))
    quant_bits: int = param(8, "Bits per probability b of format 'quantized' (at most 64)",
                            unit="bit", check=between(1, 64))
    model: str = param("bits", "'bits': payloads count only as bits, outcomes from alpha (the "
                       "paper); 'token': token-level speculative sampling on explicit p and q "
                       "per drafted position (the device drafts from the UL format of q; DL "
                       "corrections with a lossy p~ bias the output, recorded as TV in "
                       "corrections.csv)", choices=PAYLOAD_MODELS)
    zipf_exponent: float = param(1.5, "Token model, synthetic pairs: target p_r ~ r^-s over "
                                 "ranks (assumed); the draft adds Gaussian noise sigma z to the "
                                 "target's logits, sigma calibrated so that sum min(p, q) is "
                                 "each device's alpha (language models: about 1 to 2)",
                                 check=in_interval(0, 50, low_open=True))
    pairs_file: Optional[str] = param(
        None, "Token model: npz with arrays p and q (or p_logits and q_logits) of shape (N, "
        "vocab), rows summing to 1; each drafted position uses a random row (null: synthetic "
        "Zipf pairs); a relative path is relative to the working directory")
    menu: tuple[Union[int, str], ...] = param(
        (64, 256, 1024, "dense"), "DL payload sizes (top-k entries, or 'dense') the 'fidelity' "
        "policy chooses from per rejected device", check=_MENU)
    tv_budget: float = param(0.01, "Policy 'fidelity': largest TV distance to p of the output "
                             "law of a position corrected DL, TV(o, p) = (1 - beta) TV(r~, r) "
                             "(0: lossless DL only)", check=ge(0))


@section
class Policy(Params):
    """Reactive mode selection and proactive draft-length control."""

    mode: str = param("optimal", "UL/DL mode selection for the rejected devices",
                      choices=POLICY_MODES)
    draft: str = param("fixed", "Draft-length control", choices=DRAFT_POLICIES)
    draft_length: Union[int, tuple[int, ...]] = param(
        4, "Draft length gamma for every device, or one per device (used by draft: fixed "
        "and off-under-load)",
        check=_DRAFT_LENGTH)
    max_draft: int = param(20, "Largest draft length gamma_max", check=between(0, MAX_DRAFT_LIMIT))
    saa_samples: int = param(1000, "Sampled outcomes N_SAA for E[T_comm] (sample average "
                             "approximation)", check=ge(1))
    estimator: str = param(
        "saa", "E[T_comm] in the draft objective: 'saa' (the mean over saa_samples sampled "
        "outcomes, the paper) or 'exact' (every rejected set weighted by its probability: "
        "2^K sets, 3^K with mode 'random'; small K only)", choices=ESTIMATORS)
    plan_gains: str = param(
        "auto", "The gains the draft controllers that price corrections (the searching ones "
        "and goodput-argmax) use: "
        "'instantaneous' (the round start's CSI: exact with one fading block per round, the "
        "paper), 'ergodic' (each device's mean Shannon rate over the fading at its "
        "large-scale gain: Rayleigh, or its M-element array gain, or no fading, as the channel "
        "has it; corrections that span many fading blocks; not with the shared-band schemes "
        "mu-mimo-zf and mu-mimo-mmse) or 'auto' ('ergodic' in a "
        "round when channel.coherence_time_ms puts fading blocks on a time grid and the last "
        "round outlasted a block and no link shares its band, else 'instantaneous')",
        choices=PLAN_GAINS)
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
        "device energy is taken (0: ties within 1e-12 only, the shared tie rule's; T_comm stays "
        "optimal)", check=ge(0))
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
