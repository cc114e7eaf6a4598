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
    assert records.format_rows_bytes(columns).decode() == python_rows(columns)


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


# ---------------------------------------------------------------------------- reading back


def python_read(path):
    """The reference reader: every row through the csv module, a column int64 where every
    value is an int, float where every value is a float, else str."""
    import csv

    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    out = {}
    for j, name in enumerate(header):
        values = [r[j] for r in body]
        for kind in (int, float):
            try:
                out[name] = np.array([kind(v) for v in values],
                                     dtype=np.int64 if kind is int else float)
                break
            except ValueError:
                continue
        else:
            out[name] = np.array(values, dtype=str)
    return out


_cells = st.one_of(st.integers(-2**62, 2**62).map(str),
                   st.floats(allow_nan=True, allow_infinity=True).map(repr),
                   st.sampled_from(["", "ul", "dl", "a,b", 'say "hi"', "1e5", "-0.0"]))


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 5).flatmap(lambda k: st.tuples(
    st.lists(st.sampled_from(["int", "float", "mixed"]), min_size=k, max_size=k),
    st.lists(st.lists(_cells, min_size=k, max_size=k), min_size=1, max_size=40),
    st.integers(1, 45))))
def test_read_table_equals_the_csv_module(tmp_path_factory, case):
    """Columns of ints, of floats (any value, written as ``repr``), and of anything (text with
    commas and quotes, empty fields), the kind of a column changing after the rows the reader
    samples: the same arrays, bit for bit, as reading every row with the csv module."""
    import csv

    kinds, rows, sample = case
    rows = [[c if kind == "mixed" else (str(len(c)) if kind == "int" else repr(float(len(c))))
             for c, kind in zip(row, kinds)] for row in rows]
    rows[-1] = [c if kind == "mixed" else "2.5" for c, kind in zip(rows[-1], kinds)]
    path = tmp_path_factory.mktemp("t") / "t.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows([[f"c{j}" for j in range(len(kinds))]] + rows)
    want = python_read(path)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(records, "_SAMPLE_ROWS", sample)   # the last row may come after the sample
        got = records.read_table(path)
    assert list(got) == list(want)
    for name in want:
        assert got[name].dtype == want[name].dtype, name
        if want[name].dtype.kind == "f":
            assert np.array_equal(got[name].view(np.int64), want[name].view(np.int64)), name
        else:
            assert np.array_equal(got[name], want[name]), name


def test_read_table_columns_and_first_rows(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b,c\n1,x,0.5\n2,y,1.5\n3,z,2.5\n")
    got = records.read_table(path, ("c", "a"), max_rows=2)
    assert list(got) == ["c", "a"]
    np.testing.assert_array_equal(got["c"], [0.5, 1.5])
    np.testing.assert_array_equal(got["a"], [1, 2])
    with pytest.raises(KeyError, match="no column d"):
        records.read_table(path, ("a", "d"))
    (tmp_path / "h.csv").write_text("a,b\n")
    assert {k: v.size for k, v in records.read_table(tmp_path / "h.csv").items()} == {"a": 0, "b": 0}


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(0, 7), min_size=1, max_size=8), chunk=st.integers(1, 10),
       keep=st.integers(0, 60))
def test_csv_stream_takes_later_rows_back(tmp_path_factory, sizes, chunk, keep):
    """Setting ``rows`` lower leaves the file as if only the first ``rows`` had been appended,
    whether they were still buffered or already written (a chunk flushed), and later rows
    append after them."""
    path = tmp_path_factory.mktemp("csv") / "t.csv"
    stream = records.CsvStream(path, ("a", "b"), chunk=chunk)
    start = 0
    for n in sizes:
        stream.append(a=np.arange(start, start + n), b=np.arange(start, start + n) * 0.5)
        start += n
    assert stream.rows == start
    keep = min(keep, start)
    stream.rows = keep
    stream.rows = start + 5  # a higher value changes nothing
    assert stream.rows == keep
    stream.append(a=-1, b=-1.0)
    stream.close()
    table = records.read_table(path)
    np.testing.assert_array_equal(table["a"], np.r_[np.arange(keep), -1])
    np.testing.assert_array_equal(table["b"], np.r_[np.arange(keep) * 0.5, -1.0])
