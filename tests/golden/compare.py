"""The equality contract for golden files: every column of the golden table comes out with the
same values, numbers within rtol 1e-12 (absolute 1e-300 near zero), text exactly. A run may add
columns, never change one. Not a byte comparison: another CPU's numpy (its SIMD exp, log and
sums) may change the last bits of a float."""
import csv
import gzip
import io

RTOL, ATOL = 1e-12, 1e-300


def columns(text):
    rows = list(csv.reader(io.StringIO(text)))
    header, body = rows[0], rows[1:]
    return {name: [r[i] for r in body] for i, name in enumerate(header)}


def _value(cell):
    try:
        return float(cell)
    except ValueError:
        return cell


def same(x, y):
    """Two cells equal within the contract (NaN equals NaN)."""
    x, y = _value(x), _value(y)
    if isinstance(x, float) and isinstance(y, float):
        if x != x or y != y:
            return x != x and y != y
        return x == y or abs(x - y) <= max(RTOL * max(abs(x), abs(y)), ATOL)
    return x == y


def assert_matches(golden, path, label):
    """The CSV at ``path`` holds every column of the gzipped CSV ``golden`` with equal values."""
    want = columns(gzip.decompress(golden.read_bytes()).decode("utf-8"))
    got = columns(path.read_text(encoding="utf-8"))
    for column, cells in want.items():
        assert column in got, f"{label} lost column {column!r}"
        assert len(got[column]) == len(cells), f"{label}: row count changed"
        bad = [i for i, (x, y) in enumerate(zip(cells, got[column])) if not same(x, y)]
        assert not bad, f"{label} column {column!r} row {bad[0]}: {cells[bad[0]]} became " \
                        f"{got[column][bad[0]]}"
