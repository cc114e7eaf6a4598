"""The report reads folders defensively: a file that is cut, not UTF-8, not the CSV or JSON the
simulator writes, or that holds a non-finite value where a number is expected is refused with
the file, the line and what is expected (``ReportError``), before any figure is drawn. The
output location is checked the same way, before any work."""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

RERUN = "rerun the command that wrote it (or restore the file)"


class ReportError(ValueError):
    """A folder that is not a run or sweep output, a damaged file in it, a bad output location,
    or matplotlib missing (a one-line ``what: why; what to do`` message)."""


def _text(path):
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ReportError(f"{path}:{line}: not UTF-8 (byte 0x{data[exc.start]:02x}); the file is "
                          f"damaged: {RERUN}") from None


def read_json(path, required=()):
    """A JSON object file; ``required``: keys it must have."""
    text = _text(path)
    try:
        data = json.loads(text)
    except ValueError as exc:
        where = f":{exc.lineno}" if hasattr(exc, "lineno") else ""
        raise ReportError(f"{path}{where}: not valid JSON ({getattr(exc, 'msg', exc)}), the file "
                          f"is cut or damaged; {RERUN}") from None
    if not isinstance(data, dict):
        raise ReportError(f"{path}: a JSON {type(data).__name__}, expected an object (the "
                          f"simulator's {Path(path).name}); {RERUN}")
    missing = [k for k in required if k not in data]
    if missing:
        raise ReportError(f"{path}: no {', '.join(missing)}; expected the {Path(path).name} "
                          f"the simulator writes: {RERUN}")
    return data


def read_csv(path, required=(), finite=()):
    """A CSV the simulator wrote, as a dict of numpy arrays (numbers where every value is one).

    Refused: not UTF-8, a last row without its line end (cut mid-row), a row with another
    number of fields than the header, a ``required`` column missing, a value of a ``finite``
    column that is not a finite number."""
    text = _text(path)
    name = Path(path).name
    if not text.strip():
        raise ReportError(f"{path}: empty; expected a header line and rows: {RERUN}")
    if not text.endswith("\n"):
        line = text.count("\n") + 1
        raise ReportError(f"{path}:{line}: the last row has no line end: the file was cut "
                          f"mid-row (a run killed while writing, a full disk, a partial copy); "
                          f"{RERUN}")
    try:
        rows = list(csv.reader(text.splitlines()))
    except csv.Error as exc:
        raise ReportError(f"{path}: not a CSV file ({exc}); {RERUN}") from None
    header = rows[0]
    missing = [c for c in required if c not in header]
    if missing:
        raise ReportError(f"{path}:1: no column {', '.join(missing)}; expected the {name} the "
                          f"simulator writes: {RERUN}")
    for i, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise ReportError(f"{path}:{i}: {len(row)} fields, the header has {len(header)}; "
                              f"the file is damaged: {RERUN}")
    columns = list(zip(*rows[1:])) or [() for _ in header]
    table = {}
    for col, values in zip(header, columns):
        table[col] = _column(values)
        if col in finite:
            arr = table[col]
            bad = np.flatnonzero(~np.isfinite(arr)) if arr.dtype.kind == "f" else \
                (np.arange(len(values)) if arr.dtype.kind not in "iu" else [])
            if len(bad):
                i = int(bad[0])
                raise ReportError(f"{path}:{i + 2}: {col} is {values[i]!r}; expected a finite "
                                  f"number (a run whose rounds are not finite is not a result): "
                                  f"{RERUN}")
    return table


def _column(values):
    try:
        return np.array([int(v) for v in values], dtype=np.int64)
    except ValueError:
        try:
            return np.array([float(v) for v in values])
        except ValueError:
            return np.array(values, dtype=str)


def number(value):
    """A JSON value as a float (NaN for null or anything that is not a number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    return float(value)


def check_output(out, folder):
    """The HTML file to write: ``out`` or ``folder/report.html``; refused before any work when
    it is empty, a folder, not a regular file, or in a place that cannot be written."""
    from ..errors import OutputLocationError
    from ..outputs.atomic import check_folder

    if out is not None and not str(out).strip():
        raise ReportError("--out '': is empty; give the HTML file to write (or leave --out out "
                          "for RESULTS_DIR/report.html)")
    path = Path(out) if out is not None else Path(folder) / "report.html"
    option = "--out" if out is not None else "RESULTS_DIR"
    if path.is_dir():
        raise ReportError(f"{option} {path}: is a folder; give the HTML file to write")
    if path.exists() and not path.is_file():
        raise ReportError(f"{option} {path}: exists and is not a regular file; give the HTML "
                          "file to write")
    try:
        check_folder(path.parent, option)
    except OutputLocationError as exc:
        raise ReportError(exc.line()[len("error: "):]) from None
    return path
