"""Any combination of the schema's choices is either refused at load time with one
``ScenarioError`` naming a key, or it runs: to the end, or to a limit that names its reason.
It never ends in an internal error. Random combinations of valid keys found a hexagonal layout
that validated and then crashed, and a multi-cell run that lost its stop reason."""
import dataclasses
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import multispin_sim as ms
from multispin_sim.scenario.params import section_hints
from multispin_sim.scenario.schema import Scenario

# small and short: the property is about the combination, not the numbers
BASE = {"devices.count": 3, "run.rounds": 4, "policy.saa_samples": 64}


def _choice_keys(cls=Scenario, prefix=""):
    keys = {}
    hints = section_hints(cls)
    for field in dataclasses.fields(cls):
        path = f"{prefix}.{field.name}" if prefix else field.name
        if dataclasses.is_dataclass(hints[field.name]):
            keys.update(_choice_keys(hints[field.name], path))
        elif field.metadata.get("choices") is not None:
            keys[path] = tuple(field.metadata["choices"])
    return keys


CHOICES = _choice_keys()
# a few numeric keys at their edges, beside the choices
CHOICES.update({"devices.count": (1, 2, 3), "cells.count": (1, 2, 3, 7), "policy.max_draft": (0, 1),
                "policy.draft_length": (0, 1), "server.antennas": (1, 2),
                "channel.coherence_time_ms": (None, 5.0), "acceptance.session_tokens": (1, 64),
                "channel.rician_k_db": (None, 6.0), "csi.estimation_error_variance": (0.0, 0.2)})


def test_the_schema_has_choice_keys_in_every_component():
    sections = {key.split(".")[0] for key in CHOICES}
    assert {"channel", "policy", "acceptance", "link", "cells", "server", "workload"} <= sections


@settings(max_examples=1500, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(st.dictionaries(st.sampled_from(sorted(CHOICES)), st.integers(0, 63), min_size=1,
                       max_size=8))
def test_any_combination_of_choices_is_refused_with_a_key_or_runs(picks):
    overrides = dict(BASE)
    for key, i in picks.items():
        overrides[key] = CHOICES[key][i % len(CHOICES[key])]
    try:
        scenario = ms.load_scenario(None, overrides=overrides)
    except ms.ScenarioError as exc:
        assert exc.path and "\n" not in str(exc), (overrides, exc)
        return
    try:
        result = ms.simulate(scenario)
    except ms.ScenarioError as exc:       # found while building (e.g. no PPP cell drawn)
        assert exc.path and "\n" not in str(exc), (overrides, exc)
        return
    summary = result.summary
    if summary["complete"]:
        assert summary["rounds"] >= 1 and math.isfinite(summary["goodput_tps"]), overrides
    else:
        assert summary.get("stop_reason"), (overrides, summary)
