"""The worked examples of docs/extending.md run: each registers its class and simulates with it."""
import runpy
from pathlib import Path

import pytest

# the gallery's examples (docs/guide/examples.md) are run by test_gallery.py
EXAMPLES = [Path(__file__).resolve().parents[2] / "docs" / "examples" / name
            for name in ("acceptance_model.py", "reactive_policy.py")]


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(path):
    from multispin_sim.model.acceptance import ACCEPTANCE_MODELS
    from multispin_sim.policies import REACTIVE_POLICIES

    before = dict(ACCEPTANCE_MODELS), dict(REACTIVE_POLICIES)
    try:
        module = runpy.run_path(str(path), run_name="example")
        result = module["main"](rounds=20)
        assert result.summary["rounds"] == 20
    finally:   # the registries as they were: other tests see only the shipped names
        for registry, names in zip((ACCEPTANCE_MODELS, REACTIVE_POLICIES), before):
            registry.clear()
            registry.update(names)


def test_the_page_shows_each_example():
    page = (EXAMPLES[0].parents[1] / "extending.md").read_text(encoding="utf-8")
    for path in EXAMPLES:
        assert f"examples/{path.name}" in page
