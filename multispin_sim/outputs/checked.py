"""Output files read back defensively (``report`` and ``plot``): a file that is cut, not UTF-8,
not the CSV or JSON the simulator writes, or that holds a non-finite value where a number is
expected is refused with the file, the line and what is expected (``OutputError``), before any
figure is drawn."""
from __future__ import annotations

import codecs
import csv
import json
import math
from pathlib import Path

import numpy as np

from .records import read_header, read_table

RERUN = "rerun the command that wrote it (or restore the file)"


class OutputError(ValueError):
    """An output folder or file a command cannot use: not the simulator's output, damaged, or a
    place that cannot be written (a one-line ``what: why; what to do`` message)."""


def _found(path):
    """``path`` as a Path, refused (``OutputError``) where there is no file: a folder missing
    one of its tables is not whole."""
    path = Path(path)
    if not path.is_file():
        raise OutputError(f"{path}: not found; expected the {path.name} the simulator writes "
                          f"there: {RERUN}")
    return path


def _text(path):
    data = _found(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise OutputError(f"{path}:{line}: not UTF-8 (byte 0x{data[exc.start]:02x}); the file is "
                          f"damaged: {RERUN}") from None


def read_json(path, required=()):
    """A JSON object file; ``required``: keys it must have."""
    text = _text(path)
    try:
        data = json.loads(text)
    except ValueError as exc:
        where = f":{exc.lineno}" if hasattr(exc, "lineno") else ""
        raise OutputError(f"{path}{where}: not valid JSON ({getattr(exc, 'msg', exc)}), the file "
                          f"is cut or damaged; {RERUN}") from None
    if not isinstance(data, dict):
        raise OutputError(f"{path}: a JSON {type(data).__name__}, expected an object (the "
                          f"simulator's {Path(path).name}); {RERUN}")
    missing = [k for k in required if k not in data]
    if missing:
        raise OutputError(f"{path}: no {', '.join(missing)}; expected the {Path(path).name} "
                          f"the simulator writes: {RERUN}")
    return data


def read_csv(path, required=(), finite=(), columns=None):
    """A CSV the simulator wrote, as a dict of numpy arrays (``outputs.records.read_table``:
    numbers where every value is one); ``columns``: those to read (default: every column).

    Refused: not UTF-8, a last row without its line end (cut mid-row), a row with another
    number of fields than the header, a ``required`` column missing, a value of a ``finite``
    column that is not a finite number. The file is checked in one streaming pass over its
    bytes, then read by numpy's parser: a run of a million rounds fits in memory."""
    header = _check_rows(path)
    name = Path(path).name
    missing = [c for c in required if c not in header]
    if missing:
        raise OutputError(f"{path}:1: no column {', '.join(missing)}; expected the {name} the "
                          f"simulator writes: {RERUN}")
    if columns is not None:
        columns = [c for c in header if c in set(columns) | set(required) | set(finite)]
    table = read_table(path, columns)
    for col in finite:
        arr = table.get(col)
        if arr is None or arr.dtype.kind in "iu":
            continue
        bad = np.flatnonzero(~np.isfinite(arr)) if arr.dtype.kind == "f" else np.arange(arr.size)
        if len(bad):
            i = int(bad[0])
            raise OutputError(f"{path}:{i + 2}: {col} is {str(arr[i])!r}; expected a finite "
                              f"number (a run whose rounds are not finite is not a result): "
                              f"{RERUN}")
    return table


_CHUNK = 1 << 24
NEWLINE = b"\n"


def _check_rows(path):
    """The header of a CSV whose bytes are UTF-8, whose every row has the header's number of
    fields and whose last row ends with a line end (``OutputError`` naming the line). Fields
    are counted by numpy on the bytes, line by line; a file with quoted fields (a comma may
    sit inside quotes) is counted by the csv module instead."""
    path = _found(path)
    decoder = codecs.getincrementaldecoder("utf-8")()
    fields = None      # the header's
    line, commas, quoted, last = 1, 0, False, b""
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                at = min(max(exc.start, 0), len(chunk) - 1)
                where = line + chunk[:at].count(NEWLINE)
                raise OutputError(f"{path}:{where}: not UTF-8 (byte 0x{chunk[at]:02x}); the file "
                                  f"is damaged: {RERUN}") from None
            b = np.frombuffer(chunk, np.uint8)
            quoted = quoted or bool((b == 34).any())
            ends = np.flatnonzero(b == 10)
            if not quoted:
                per_line = np.diff(np.cumsum(b == 44)[ends], prepend=0)   # commas a line
                if per_line.size:
                    per_line[0] += commas
                    fields = fields or int(per_line[0]) + 1
                    wrong = np.flatnonzero(per_line != fields - 1)
                    if wrong.size:
                        i = int(wrong[0])
                        raise OutputError(f"{path}:{line + i}: {int(per_line[i]) + 1} fields, "
                                          f"the header has {fields}; the file is damaged: "
                                          f"{RERUN}")
                    commas = int(np.count_nonzero(b[ends[-1] + 1:] == 44))
                else:
                    commas += int(np.count_nonzero(b == 44))
            line += ends.size
            last = chunk[-1:]
    header = read_header(path)
    if not "".join(header).strip():
        raise OutputError(f"{path}: empty; expected a header line and rows: {RERUN}")
    if last != NEWLINE:
        raise OutputError(f"{path}:{line}: the last row has no line end: the file was cut "
                          f"mid-row (a run killed while writing, a full disk, a partial copy); "
                          f"{RERUN}")
    if quoted:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            try:
                for row in reader:
                    if len(row) != len(header):
                        raise OutputError(f"{path}:{reader.line_num}: {len(row)} fields, the "
                                          f"header has {len(header)}; the file is damaged: "
                                          f"{RERUN}")
            except csv.Error as exc:
                raise OutputError(f"{path}: not a CSV file ({exc}); {RERUN}") from None
    return header


def number(value):
    """A JSON value as a float (NaN for null or anything that is not a number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    return float(value)
