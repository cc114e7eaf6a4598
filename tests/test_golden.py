"""The paper's default runs stay value-for-value identical as components are added.

``tests/golden/`` holds the CSVs of a few scenarios (paper default, greedy and budget control,
a Poisson/coherence-time queueing run, all-DL with independent UL/DL fading) as they were
written before the realism components existed. Every column they have must come out with the
same values: numbers within rtol 1e-12 (absolute 1e-300 near zero), text exactly; a component may
add columns, never change one. Regenerate only for an intended change of the default model:
tests/golden/make_golden.py.
"""
import sys
from pathlib import Path

import pytest

import multispin_sim as ms

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "golden"))
from compare import assert_matches  # noqa: E402
from make_golden import GOLDEN, TABLES  # noqa: E402

ROOT = HERE.parent


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_default_outputs_unchanged(name, tmp_path):
    path, overrides = GOLDEN[name]
    ms.simulate(ms.load_scenario(ROOT / path, overrides=overrides), out=tmp_path / "out")
    checked = 0
    for table in TABLES:
        golden = HERE / "golden" / f"{name}.{table}.csv.gz"
        if golden.exists():
            assert_matches(golden, tmp_path / "out" / f"{table}.csv", f"{name}/{table}.csv")
            checked += 1
    assert checked > 0
