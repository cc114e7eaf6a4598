"""One source of names: every key chosen by name allows exactly its registry's names, and every
registered name is documented (the key reference and the docs pages)."""
import dataclasses
import re
from pathlib import Path

import pytest

from multispin_sim.scenario import Scenario, reference_markdown
from multispin_sim.scenario.choices import Registered
from multispin_sim.scenario.params import section_hints

DOCS = Path(__file__).resolve().parents[2] / "docs"


def registered_keys():
    """(dotted key, choices) of every key whose choices come from a registry."""
    out = []

    def walk(cls, prefix):
        for f in dataclasses.fields(cls):
            hint = section_hints(cls)[f.name]
            if dataclasses.is_dataclass(hint):
                walk(hint, f"{prefix}{f.name}.")
            elif isinstance(f.metadata.get("choices"), Registered):
                out.append((prefix + f.name, f.metadata["choices"]))
    walk(Scenario, "")
    return out


KEYS = registered_keys()


def test_the_plugin_families_are_chosen_from_registries():
    keys = {k for k, _ in KEYS}
    assert {"acceptance.model", "acceptance.belief", "policy.mode", "policy.draft",
            "serving.batching", "serving.protocol", "channel.fading", "link.model",
            "server.verify_model", "mobility.model", "workload.arrivals", "workload.length",
            "topology.layout", "payload.model"} <= keys


@pytest.mark.parametrize("key,choices", KEYS, ids=[k for k, _ in KEYS])
def test_the_key_reference_lists_exactly_the_registered_names(key, choices):
    row = next(line for line in reference_markdown().splitlines() if f"`{key}`" in line)
    listed = re.findall(r"'([^']+)'", row.split("one of", 1)[1].split("|", 1)[0])
    assert listed == list(choices)


@pytest.mark.parametrize("key,choices", KEYS, ids=[k for k, _ in KEYS])
def test_every_registered_name_is_in_the_docs_pages(key, choices):
    text = "\n".join(p.read_text(encoding="utf-8") for p in DOCS.rglob("*.md"))
    missing = [name for name in choices if f"`{name}`" not in text and f"'{name}'" not in text]
    assert not missing, f"{key}: {missing} registered but not in docs/"


@pytest.mark.parametrize("key,value", [("serving.protocol", "asynchronous"),
                                       ("workload.arrivals", "poisson"),
                                       ("payload.model", "token")])
def test_validating_an_engine_family_name_does_not_import_the_engine(modules_after, key, value):
    code = ("from multispin_sim.scenario import load_scenario; "
            f"load_scenario(None, overrides={{{key!r}: {value!r}}})")
    bad = [m for m in modules_after(code) if m.startswith("multispin_sim.engine")]
    assert not bad, bad


def test_a_protocol_registered_with_its_import_path_is_a_valid_choice():
    from multispin_sim.scenario import ScenarioError, load_scenario
    from multispin_sim.scenario.engine_registries import PROTOCOLS

    with pytest.raises(ScenarioError):
        load_scenario(None, overrides={"serving.protocol": "lockstep-copy"})
    PROTOCOLS.register("lockstep-copy", "multispin_sim.engine.round:RoundLoop")
    try:
        assert load_scenario(None, overrides={"serving.protocol": "lockstep-copy"})
        from multispin_sim.engine.round import RoundLoop
        assert PROTOCOLS.lookup("lockstep-copy") is RoundLoop
    finally:
        del PROTOCOLS["lockstep-copy"]


def _registries():
    from multispin_sim.model.queueing import LENGTH_MODELS, FixedLengths
    from multispin_sim.model.topology import LAYOUTS, CoordinatesLayout
    from multispin_sim.scenario.engine_registries import ARRIVAL_MODELS, PAYLOAD_MODELS

    return [("workload.length", LENGTH_MODELS, FixedLengths),
            ("topology.layout", LAYOUTS, CoordinatesLayout),
            ("workload.arrivals", ARRIVAL_MODELS, "multispin_sim.engine.workload:Saturated"),
            ("payload.model", PAYLOAD_MODELS, "multispin_sim.engine.tokens:BitsPayload")]


@pytest.mark.parametrize("key", [k for k, _, _ in _registries()])
def test_a_class_registered_by_a_user_is_a_valid_choice(key):
    from multispin_sim.scenario import ScenarioError, load_scenario

    _, registry, cls = next(r for r in _registries() if r[0] == key)
    with pytest.raises(ScenarioError) as info:
        load_scenario(None, overrides={key: "my-own"})
    assert str(info.value).count("\n") == 0 and key in str(info.value)
    assert all(f"'{name}'" in str(info.value) for name in registry)
    registry["my-own"] = cls
    try:
        sc = load_scenario(None, overrides={key: "my-own"})
        section, name = key.split(".")
        assert getattr(getattr(sc, section), name) == "my-own"
    finally:
        del registry["my-own"]
