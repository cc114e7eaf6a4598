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
        cols = [np.concatenate(self._parts[c]).tolist() for c in self.columns]
        lines = [",".join(map(str, row)) for row in zip(*cols)]
        self._file.write("\n".join(lines) + "\n")
        self._file.flush()
        self.rows += self._buffered
        self._parts = {c: [] for c in self.columns}
        self._buffered = 0

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
