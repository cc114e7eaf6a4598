"""The CSV float text: orjson's fast path writes exactly Python's ``str`` of every value."""
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from multispin_sim.outputs import records
from multispin_sim.outputs.records import format_column, write_rows


def python_text(values):
    return list(map(str, values.tolist()))


@settings(max_examples=300, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 60),
                  elements=st.floats(allow_nan=True, allow_infinity=True, width=64)))
def test_floats_any_value(values):
    assert format_column(values) == python_text(values)


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(np.int64, st.integers(1, 60)))
def test_integers(values):
    assert format_column(values) == python_text(values)


def test_every_decade_and_boundary():
    """Around every power of ten (where the layout switches between 0.0001, 1e-05, 1e+16 ...),
    signed zeros, subnormals and the extremes."""
    decades = 10.0 ** np.arange(-323, 308)
    near = np.concatenate([decades, np.nextafter(decades, 0), np.nextafter(decades, np.inf),
                           decades * 1.5, decades * 9.999999999999999])
    special = np.array([0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
                        np.nan, np.inf, -np.inf, 0.1 + 0.2, 1e-4, 9.999999999999999e-05, 1e-5])
    values = np.concatenate([near, -near, special])
    assert format_column(values) == python_text(values)
    rng = np.random.default_rng(7)  # random mantissas at every exponent
    values = rng.uniform(1, 10, 200_000) * 10.0 ** rng.integers(-320, 300, 200_000)
    assert format_column(values) == python_text(values)


def test_strided_and_other_dtypes():
    a = np.arange(40, dtype=float).reshape(10, 4)[:, 1] / 7
    assert format_column(a) == python_text(a)
    for values in (np.array([True, False]), np.array(["", "ul"], dtype=object),
                   np.array([1.5, 2.25], dtype=np.float32), np.zeros(0)):
        assert format_column(values) == python_text(values)


def test_same_bytes_without_orjson(monkeypatch):
    rng = np.random.default_rng(3)
    columns = [np.arange(500), np.array(["ul", "", "dl"] * 166 + ["", ""], dtype=object),
               rng.exponential(size=500) * 1e-6, rng.normal(size=500), np.zeros(500)]
    fast = io.StringIO()
    write_rows(fast, columns)
    monkeypatch.setattr(records, "_orjson", None)
    slow = io.StringIO()
    write_rows(slow, columns)
    assert fast.getvalue() == slow.getvalue()
    assert records._orjson is None


@pytest.mark.parametrize("n", [1, 3])
def test_single_rows(n):
    values = np.full(n, 0.020655126265036947)
    assert format_column(values) == ["0.020655126265036947"] * n


def python_rows(columns):
    texts = [c.values().tolist() if isinstance(c, records.Labels) else c.tolist()
             for c in columns]
    return "".join(",".join(map(str, row)) + "\n" for row in zip(*texts))


_ints = st.one_of(st.integers(-3, 3), st.integers(-2**63, 2**63 - 1),
                  st.sampled_from([-1, -10, -11, -21, 1, 10, -2**63]))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 30).flatmap(lambda n: st.lists(
    st.one_of(hnp.arrays(np.int64, n, elements=_ints),
              hnp.arrays(np.float64, n, elements=st.floats(width=64)),
              st.just(records.Labels(np.arange(n) % 3, ("", "ul", "dl")))),
    min_size=1, max_size=7)))
def test_rows_of_groups_any_values(columns):
    """Groups of int columns (closed by the -1 marker, or written unmarked when a value is -1),
    float groups, labels, in any order: each value Python's str of it."""
    assert records.format_rows(columns) == python_rows(columns)


def test_binary_and_text_files_get_the_same_text():
    """Rows stay UTF-8 bytes to a binary file (the run's CSVs); a text file gets the same text."""
    rng = np.random.default_rng(4)
    columns = [np.arange(300), records.Labels(np.arange(300) % 3, ("", "ul", "dé")),
               rng.exponential(size=300) * 1e-6, rng.normal(size=300),
               np.array(["tâche", "x"] * 150, dtype=object)]
    binary, text = io.BytesIO(), io.StringIO()
    write_rows(binary, columns)
    write_rows(text, columns)
    assert binary.getvalue() == text.getvalue().encode() == python_rows(columns).encode()
    assert records.format_rows_bytes([]) == b""
