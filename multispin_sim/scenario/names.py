"""Allowed values and bounds of the scenario keys: one place for every name list.

A plug-in family's names come from its registry (``choices.Registered``, read lazily); the
other lists are fixed by the schema (formats, table names, schedules).
"""

from __future__ import annotations

from .choices import Registered
from .params import in_interval
from .presets import TASKS

# names of plug-in families come from their registries (``scenario.choices``)
FADING_MODELS = Registered("multispin_sim.model.fading", "FADING_MODELS")
DEVICE_TASKS: tuple[str, ...] = ("uniform",) + TASKS
POLICY_MODES = Registered("multispin_sim.policies", "REACTIVE_POLICIES")
DRAFT_POLICIES = Registered("multispin_sim.policies", "DRAFT_CONTROLLERS")
PROTOCOLS = Registered("multispin_sim.scenario.engine_registries", "PROTOCOLS")
BATCHING_POLICIES = Registered("multispin_sim.policies.batching", "BATCHING_POLICIES")
DRAFT_UPDATES: tuple[str, ...] = ("every-round", "once")
ARRIVAL_MODELS = Registered("multispin_sim.scenario.engine_registries", "ARRIVAL_MODELS")
LENGTH_MODELS = Registered("multispin_sim.model.queueing", "LENGTH_MODELS")
TOPOLOGY_LAYOUTS = Registered("multispin_sim.model.topology", "LAYOUTS")
MOBILITY_MODELS = Registered("multispin_sim.model.mobility", "MOBILITY_MODELS")
PAYLOAD_FORMATS: tuple[str, ...] = ("dense", "topk", "topp", "quantized")
PAYLOAD_MODELS = Registered("multispin_sim.scenario.engine_registries", "PAYLOAD_MODELS")
ACCEPTANCE_MODELS = Registered("multispin_sim.model.acceptance", "ACCEPTANCE_MODELS")
ACCEPTANCE_BELIEFS = Registered("multispin_sim.model.beliefs", "BELIEFS")
TRACE_ASSIGN: tuple[str, ...] = ("uniform", "task")
TRACE_NEXT: tuple[str, ...] = ("draw", "cycle", "repeat")
ACCEPTANCE_SESSIONS: tuple[str, ...] = ("tokens", "request")
MAX_DRAFT_LIMIT = 64            # upper bound of policy.max_draft
# verification tables shipped in multispin_sim/data/verify_tables (= engine.reading)
SHIPPED_VERIFY_TABLES: tuple[str, ...] = ("vidur-a100-codellama34b", "paper-linear-qwen2.5")
EXHAUSTIVE_MAX_DEVICES = 16     # mode "exhaustive" tries 2^K UL/DL assignments
# policy.estimator "exact" enumerates 2^K rejected sets (3^K with the random split's coins)
EXACT_ESTIMATOR_MAX_DEVICES = {"random": 10, None: 14}
ESTIMATORS: tuple[str, ...] = ("saa", "exact")
PLAN_GAINS = Registered("multispin_sim.policies.draft", "PLANS")   # policy.plan_gains
DEFAULT_DL_POWER_RATIO = 4.0    # P_dl = 4 x P_ul (10 mW) = 40 mW = 16.02 dBm when no DL key given

LINK_MODELS = Registered("multispin_sim.model.link", "LINK_MODELS")
CQI_TABLES: tuple[str, ...] = ("64qam", "256qam", "64qam-low-se", "continuous")
HARQ_COMBINING: tuple[str, ...] = ("chase", "repetition")
SUBCARRIER_SPACINGS_KHZ: tuple[int, ...] = (15, 30, 60, 120)
FREQUENCY_RANGES: tuple[str, ...] = ("FR1", "FR2")   # = model.nr_tables.FREQUENCY_RANGES

ALPHA = in_interval(0, 1, low_open=True)    # a per-token acceptance rate 0 < alpha <= 1
PROB = in_interval(0, 1)                    # a probability 0 <= p <= 1

# bounds of single keys: beyond them a power, gain or time over- or underflows (an infinite
# delay, a rate of 0, a NaN energy) or a count overflows numpy's integers, instead of simulating
# to finite numbers; each is far beyond any physical or practical value
MIN_POWER_DBM, MAX_POWER_DBM = -100, 100    # 0.1 pW to 10 MW: beyond any radio transmitter
POWER_DBM = in_interval(MIN_POWER_DBM, MAX_POWER_DBM)
POWER_W = in_interval(0, 1_000_000)         # a megawatt: a server rack draws 10 to 50 kW
MAX_NOISE_FIGURE_DB = 100                   # receivers: about 2 to 15 dB
MIN_DISTANCE_M = 1.0      # the path-loss reference distance of G_0 (model.mobility.MIN_DISTANCE_M)
MAX_DISTANCE_M = 100_000.0                  # 100 km: beyond any cell; path loss then underflows
MAX_STEP_MS = 60_000      # one minute: a time of one step of a round (a verification pass, a
                          # token drafted, a backhaul hop, a CSI age); measured ones are ms
STEP_MS = in_interval(0, MAX_STEP_MS)
POSITIVE_STEP_MS = in_interval(0, MAX_STEP_MS, low_open=True)
MAX_REQUEST_TOKENS = 10_000_000  # tokens of one request: 10x the longest contexts (model.queueing)
MAX_SLOWDOWN = 100        # drafting-latency factors (device spread, thermal throttling)
MAX_NAME_CHARS = 200      # scenario names (a folder name, with -seed<seed> appended: <= 255)
MAX_SEED = 2 ** 64 - 1    # seeds: numpy's 64-bit words (and a folder name that fits)
