"""Model-pair presets and task names (docs/model.md sections 3 and 4).

Latencies are the paper's A100 measurements; the acceptance rates are the *assumed* table of
docs/model.md section 3 (the paper's Table I values are not available) and can be overridden per
scenario with ``devices.acceptance``.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Mapping

from .params import FrozenMap

__all__ = ["TASKS", "ModelPair", "MODEL_PAIRS", "DEFAULT_MODEL_PAIR"]

#: Benchmark tasks; each sets a device's per-token acceptance rate alpha.
TASKS: tuple[str, ...] = ("humaneval", "gsm8k", "ifeval", "mt-bench")


@dataclass(frozen=True)
class ModelPair:
    """A draft SLM / target LLM pair with its computation latencies and acceptance table."""

    name: str
    draft_model: str
    target_model: str
    draft_latency_ms: float      # t_ref: per-token drafting latency of the reference device
    verify_fixed_ms: float       # T_ver0: fixed part of one batched verification pass
    verify_per_device_ms: float  # T_ver1: added per device in the batch
    acceptance: Mapping[str, float]  # task -> alpha (assumed)


MODEL_PAIRS: Mapping[str, ModelPair] = FrozenMap({
    "qwen2.5": ModelPair(
        name="qwen2.5", draft_model="Qwen2.5-0.5B", target_model="Qwen2.5-14B",
        draft_latency_ms=15.2, verify_fixed_ms=42.8, verify_per_device_ms=7.6,
        acceptance=FrozenMap({"humaneval": 0.93, "gsm8k": 0.91, "ifeval": 0.86, "mt-bench": 0.83}),
    ),
    "deepseek-r1": ModelPair(
        name="deepseek-r1", draft_model="DeepSeek-R1-Distill-Qwen-1.5B",
        target_model="DeepSeek-R1-Distill-Qwen-32B",
        draft_latency_ms=19.6, verify_fixed_ms=69.3, verify_per_device_ms=9.1,
        acceptance=FrozenMap({"humaneval": 0.90, "gsm8k": 0.92, "ifeval": 0.84, "mt-bench": 0.82}),
    ),
})

DEFAULT_MODEL_PAIR = "qwen2.5"

for _pair in MODEL_PAIRS.values():  # every preset covers every task
    assert tuple(_pair.acceptance) == TASKS, _pair.name
