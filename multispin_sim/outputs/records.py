"""Streaming CSV writers: rows buffered as numpy column chunks, written every ``chunk`` rows.

Floats are written with Python's shortest round-trip repr, so a value read back is bit-identical
to the value the engine used, and two runs with one seed give byte-identical files.
"""
import csv
from pathlib import Path

import numpy as np


class CsvStream:
    """A CSV file written column-chunk by column-chunk; the header is written at once."""

    def __init__(self, path, columns, chunk=8192):
        self.path = Path(path)
        self.columns = tuple(columns)
        self.chunk = chunk
        self._file = open(self.path, "w", newline="", encoding="utf-8")
        self._file.write(",".join(self.columns) + "\n")
        self._file.flush()
        self._parts = {c: [] for c in self.columns}
        self._buffered = 0
        self.rows = 0

    def append(self, **columns):
        """Add rows given as equal-length arrays (or scalars for a single row), one per column."""
        n = None
        for name in self.columns:
            value = np.atleast_1d(columns[name])
            self._parts[name].append(value)
            n = len(value)
        self._buffered += n
        if self._buffered >= self.chunk:
            self.flush()

    def flush(self):
        if not self._buffered:
            return
        write_rows(self._file, [np.concatenate(self._parts[c]) for c in self.columns])
        self.rows += self._buffered
        self._parts = {c: [] for c in self.columns}
        self._buffered = 0

    def close(self):
        if not self._file.closed:
            self.flush()
            self._file.close()


def format_column(values):
    """A column as a list of strings: shortest round-trip repr for floats, str otherwise."""
    return list(map(str, values.tolist()))


def write_rows(file, columns):
    """Write equal-length columns as CSV rows; a column equal to an earlier one is formatted once."""
    formatted = []
    for i, col in enumerate(columns):
        same = next((formatted[j] for j in range(i) if columns[j].dtype == col.dtype
                     and np.array_equal(columns[j], col)), None) if col.dtype.kind == "f" else None
        formatted.append(same if same is not None else format_column(col))
    if formatted and formatted[0]:
        file.write("\n".join(map(",".join, zip(*formatted))) + "\n")
        file.flush()


class ChunkedCsv:
    """A CSV written from preallocated column arrays: ``put`` copies a block of rows in place.

    Cheaper than ``CsvStream`` when many small blocks arrive (the engine's per-round records).
    ``columns`` maps each column name to its numpy dtype (``object`` for strings).
    """

    def __init__(self, path, columns, capacity=16384):
        self.path = Path(path)
        self.names = tuple(columns)
        self.capacity = capacity
        self._arrays = {name: np.empty(capacity, dtype=dt) for name, dt in columns.items()}
        self._n = 0
        self.rows = 0
        self._file = open(self.path, "w", newline="", encoding="utf-8")
        self._file.write(",".join(self.names) + "\n")
        self._file.flush()

    def put(self, n, values):
        """Append ``n`` rows; ``values`` maps every column to a scalar or an array of length n."""
        if self._n + n > self.capacity:
            self.flush()
        lo, hi = self._n, self._n + n
        arrays = self._arrays
        for name, value in values.items():
            arrays[name][lo:hi] = value
        self._n = hi

    def flush(self):
        if self._n:
            write_rows(self._file, [self._arrays[name][: self._n] for name in self.names])
            self.rows += self._n
            self._n = 0

    def close(self):
        if not self._file.closed:
            self.flush()
            self._file.close()


def read_table(path):
    """A CSV written by ``CsvStream`` as a dict of numpy arrays (numeric where possible)."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader)
        columns = list(zip(*reader)) or [() for _ in header]
    table = {}
    for name, values in zip(header, columns):
        try:
            arr = np.array([int(v) for v in values], dtype=np.int64)
        except ValueError:
            try:
                arr = np.array([float(v) for v in values])
            except ValueError:
                arr = np.array(values, dtype=str)
        table[name] = arr
    return table
