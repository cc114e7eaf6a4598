"""The paper's default runs stay value-for-value identical as components are added.

``tests/golden/`` holds the CSVs of a few scenarios (paper default, greedy and budget control,
a Poisson/coherence-time queueing run, all-DL with independent UL/DL fading) as they were
written before the realism components existed. Every column they have must come out with the
same values: numbers within rtol 1e-12 (absolute 1e-300 near zero), text exactly; a component may
add columns, never change one. Regenerate only for an intended change of the default model:
tests/golden/make_golden.py.
"""
import csv
import gzip
import io
import sys
from pathlib import Path

import numpy as np
import pytest

import multispin_sim as ms

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "golden"))
from make_golden import GOLDEN, TABLES  # noqa: E402

ROOT = HERE.parent


def _columns(text):
    rows = list(csv.reader(io.StringIO(text)))
    header, body = rows[0], rows[1:]
    return {name: [r[i] for r in body] for i, name in enumerate(header)}


def _value(cell):
    try:
        return float(cell)
    except ValueError:
        return cell


def _same(x, y):
    """Equal within the equality contract: rtol 1e-12 for numbers, exact for text."""
    if isinstance(x, float) and isinstance(y, float):
        if x != x or y != y:
            return x != x and y != y
        return x == y or abs(x - y) <= max(1e-12 * max(abs(x), abs(y)), 1e-300)
    return x == y


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_default_outputs_unchanged(name, tmp_path):
    path, overrides = GOLDEN[name]
    ms.simulate(ms.load_scenario(ROOT / path, overrides=overrides), out=tmp_path / "out")
    checked = 0
    for table in TABLES:
        golden = HERE / "golden" / f"{name}.{table}.csv.gz"
        if not golden.exists():
            continue
        want = _columns(gzip.decompress(golden.read_bytes()).decode("utf-8"))
        got = _columns((tmp_path / "out" / f"{table}.csv").read_text(encoding="utf-8"))
        for column, cells in want.items():
            assert column in got, f"{name}/{table}.csv lost column {column!r}"
            assert len(got[column]) == len(cells), f"{name}/{table}.csv: row count changed"
            a = np.array([_value(c) for c in cells], dtype=object)
            b = np.array([_value(c) for c in got[column]], dtype=object)
            same = [_same(x, y) for x, y in zip(a, b)]
            bad = np.flatnonzero(~np.array(same, dtype=bool))
            assert bad.size == 0, (f"{name}/{table}.csv column {column!r} row {bad[0]}: "
                                   f"{cells[bad[0]]} became {got[column][bad[0]]}")
            checked += 1
    assert checked > 0
