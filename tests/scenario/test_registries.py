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
            "server.verify_model", "mobility.model"} <= keys


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


def test_validating_a_protocol_name_does_not_import_the_engine(modules_after):
    code = ("from multispin_sim.scenario import load_scenario; "
            "load_scenario(None, overrides={'serving.protocol': 'asynchronous'})")
    bad = [m for m in modules_after(code) if m.startswith("multispin_sim.engine")]
    assert not bad, bad


def test_a_protocol_registered_with_its_import_path_is_a_valid_choice():
    from multispin_sim.scenario import ScenarioError, load_scenario
    from multispin_sim.scenario.protocols import PROTOCOLS

    with pytest.raises(ScenarioError):
        load_scenario(None, overrides={"serving.protocol": "lockstep-copy"})
    PROTOCOLS.register("lockstep-copy", "multispin_sim.engine.protocols:synchronous")
    try:
        assert load_scenario(None, overrides={"serving.protocol": "lockstep-copy"})
        from multispin_sim.engine.protocols import synchronous
        assert PROTOCOLS.lookup("lockstep-copy") is synchronous
    finally:
        del PROTOCOLS["lockstep-copy"]
