"""Streaming CSV writers: rows buffered as numpy column chunks, written every ``chunk`` rows.

Floats are written with Python's shortest round-trip repr (``repr(float)``: e.g. ``0.1``,
``1e-05``, ``8.824886137777e-13``), so a value read back is bit-identical to the value the engine
used, and two runs with one seed give byte-identical files. The text is produced by orjson (the
same shortest digits, in C), with Python's own repr where orjson's layout differs, and it stays
UTF-8 bytes up to the file (opened in binary mode).
"""
import csv
import errno
import io
import multiprocessing
import os
import signal
import sys
import threading
import warnings
from itertools import chain, islice, repeat
from pathlib import Path

import numpy as np
import orjson  # a C serialiser writing the same shortest round-trip digits as Python's repr

from ..errors import STOP_SIGNALS


class CsvStream:
    """A CSV file written column-chunk by column-chunk; the header is written at once.

    ``rows``: the rows appended so far; setting it lower takes the later rows back (a run
    stopped mid-round keeps the rows of its recorded rounds: ``engine.guards.RecordedTotals``).
    """

    def __init__(self, path, columns, chunk=8192):
        self.path = Path(path)
        self.columns = tuple(columns)
        self.chunk = chunk
        self._file = open_csv(self.path, "w", self.columns)
        self._parts = {c: [] for c in self.columns}
        self._buffered = 0
        self._written = 0

    @property
    def rows(self):
        return self._written + self._buffered

    @rows.setter
    def rows(self, n):
        if n >= self.rows:
            return
        if n < self._written:  # rare (a stop after a flush within the round): rewrite the file
            self.flush()
            self._file.close()
            lines = self.path.read_bytes().splitlines(keepends=True)[: n + 1]  # + the header
            self.path.write_bytes(b"".join(lines))
            self._file = open(self.path, "ab")
            self._written = n
            return
        keep = n - self._written
        for c in self.columns:
            self._parts[c] = [np.concatenate(self._parts[c])[:keep]] if keep else []
        self._buffered = keep

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
        self._parts = {c: [] for c in self.columns}
        self._written += self._buffered
        self._buffered = 0

    def close(self):
        if not self._file.closed:
            self.flush()
            self._file.close()


# where orjson's layout differs from Python's: exponents -5..-9 ("e-7", Python "e-07"), 1e-5 <= |x|
# < 1e-4 (positional), |x| >= 1e16 ("1e16", Python "1e+16"), and non-finite values (JSON has none):
# the values in [1e-9, 1e-4) or >= 1e16 in size, and NaN, take Python's repr
_FIX_FROM, _FIX_BELOW, _FIX_ABOVE = 1e-9, 1e-4, 1e16


def format_column(values):
    """A column as a list of strings: Python's ``str`` of each value (for floats the shortest
    text that reads back to the same float), byte for byte; integer and float64 columns go
    through orjson, with the few values where its text differs from Python's redone by repr."""
    kind = values.dtype.kind
    if values.ndim != 1 or not len(values) or kind not in "iuf" or (
            kind == "f" and values.dtype != np.float64):
        return list(map(str, values.tolist()))
    values = np.ascontiguousarray(values)
    out = orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY).decode()[1:-1].split(",")
    if kind == "f":
        for i in np.flatnonzero(_python_floats(values)).tolist():
            out[i] = repr(float(values[i]))
    return out


def _python_floats(values):
    """Where orjson's text of these float64 values differs from Python's (a bool mask)."""
    size = np.abs(values)
    return ((size >= _FIX_FROM) & (size < _FIX_BELOW)) | ~(size < _FIX_ABOVE)


class Labels:
    """A column of strings given as codes into a few labels (``labels[codes]``): cheaper to
    write than an object array of the strings. ``labels``: str; ``codes``: an int array."""

    __slots__ = ("codes", "labels")

    def __init__(self, codes, labels):
        self.codes = codes
        self.labels = tuple(labels)

    def __len__(self):
        return len(self.codes)

    def values(self):
        return np.array(self.labels, dtype=object)[self.codes]

    def __reduce__(self):
        return (Labels, (self.codes, self.labels))


_INT64, _FLOAT64 = np.dtype(np.int64), np.dtype(np.float64)
# the value closing each row of an int group: short text, so the split is quick; "-1," occurs
# in orjson's text of ints only where a value is -1 (a group holding -1 is written unmarked)
_INT_MARK = -1
_INT_SPLIT = f"{_INT_MARK},".encode()


def _many_python_floats(col):
    """More than 1/64 of a sample of about 256 values need Python's text (speed only)."""
    sample = col[:: max(1, len(col) // 256)]
    return np.count_nonzero(_python_floats(sample)) * 64 > sample.size


def _plan(columns, n):
    """Consecutive int64 columns and consecutive float64 columns form groups ("i"/"f", [cols]);
    a ``Labels`` column is ("l", col); any other column, and a float column where many values
    need Python's text (seen on a sample), is ("c", col), formatted alone."""
    plan = []
    for col in columns:
        if isinstance(col, Labels):
            plan.append(("l", col))
            continue
        dtype = col.dtype
        if col.ndim != 1 or dtype not in (_INT64, _FLOAT64) or (
                dtype == _FLOAT64 and _many_python_floats(col)):
            plan.append(("c", col))
            continue
        kind = "i" if dtype == _INT64 else "f"
        if plan and plan[-1][0] == kind:
            plan[-1][1].append(col)
        else:
            plan.append((kind, [col]))
    return plan


def _group_rows(kind, group, n, comma):
    """The rows of a group of int64/float64 columns as UTF-8 texts (b"a,b,c", with ``comma``
    a trailing b","): one orjson call over the values row by row, a marker value closing each
    row (NaN, written "null", for floats; -1 for ints) where no value is one."""
    m = len(group)
    block = np.empty((n, m + 1), dtype=_INT64 if kind == "i" else _FLOAT64)
    for j, col in enumerate(group):
        block[:, j] = col
    values = block[:, :m]
    if kind == "i":
        marked = not (values == _INT_MARK).any()
        block[:, m] = _INT_MARK
    else:
        fix = np.flatnonzero(_python_floats(values).any(axis=1))  # NaN and infinities too
        marked = not fix.size or np.isfinite(values[fix]).all()
        block[:, m] = np.nan
    if marked:
        text = orjson.dumps(block.reshape(-1), option=orjson.OPT_SERIALIZE_NUMPY)
        if kind == "i":  # "[a,b,M,c,d,M]"
            rows = text[1:-len(_INT_SPLIT)].split(_INT_SPLIT)
            if not comma:
                rows = [r[:-1] for r in rows]
        elif comma:      # "[a,b,null,c,d,null]"
            rows = text[1:-5].split(b"null,")
        else:
            rows = text[1:-6].split(b",null,")
    else:
        text = orjson.dumps(np.ascontiguousarray(values), option=orjson.OPT_SERIALIZE_NUMPY)
        rows = text[2:-2].split(b"],[")
        if comma:
            rows = [r + b"," for r in rows]
    if kind == "f":
        end = "," if comma else ""
        for i in fix.tolist():
            rows[i] = (",".join(map(str, values[i].tolist())) + end).encode()
    return rows


def format_rows_bytes(columns):
    """Equal-length columns as CSV text in UTF-8: one line per row, each value Python's
    ``str`` of it (byte for byte the same as ``format_column`` of every column, joined by
    commas; a ``Labels`` column as its strings).

    Consecutive int64 columns, and consecutive float64 columns, are written together by one
    orjson call (one text per row for the group); a row of floats where orjson's text differs
    from Python's is redone with Python's ``str``; a float column where many values would be
    redone, and any other column, is formatted alone by ``format_column``. The texts stay
    bytes from orjson to the file (no decoding and encoding again).
    """
    n = len(columns[0]) if columns else 0
    if not n:
        return b""
    plan = _plan(columns, n)
    pieces = []  # per step: the rows' texts, each but the last step's ending with a comma
    for j, (kind, what) in enumerate(plan):
        comma = j < len(plan) - 1
        if kind == "l":
            labels = np.array([(x + "," if comma else x).encode() for x in what.labels],
                              dtype=object)
            pieces.append(labels[what.codes].tolist())
        elif kind == "c":
            end = "," if comma else ""
            pieces.append([(x + end).encode() for x in format_column(what)])
        else:
            pieces.append(_group_rows(kind, what, n, comma))
    if len(pieces) == 1:
        return b"\n".join(pieces[0]) + b"\n"
    return b"".join(chain.from_iterable(zip(*pieces, repeat(b"\n", n))))


def write_rows(file, columns):
    """Write equal-length columns as CSV rows (``format_rows_bytes``) to a file opened in
    binary mode (or, slower, a text file such as ``io.StringIO``)."""
    text = format_rows_bytes(columns)
    if text:
        file.write(text.decode() if isinstance(file, io.TextIOBase) else text)
        file.flush()


def open_csv(path, mode, header=None):
    """A CSV file opened for ``write_rows`` (binary: the rows are UTF-8 bytes), with the
    ``header`` line (column names) written and flushed when given."""
    file = open(path, mode + "b")
    if header is not None:
        file.write((",".join(header) + "\n").encode())
        file.flush()
    return file


def _writer_main(conn, parent_end):
    """The writer process: format and append the chunks it receives, in order, until told to stop.

    It ignores Ctrl-C, SIGTERM and SIGHUP (the parent decides when to stop) and stops at the
    end of the pipe too, so a parent that dies still leaves every chunk it sent on disk (whole
    rows). A write that fails (a full disk) ends it with the errno as exit status, without a
    traceback; the parent reports it.
    """
    parent_end.close()
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    files = {}
    status = 0
    try:
        while True:
            try:
                message = conn.recv()
            except EOFError:
                break
            if message is None:
                break
            path, columns = message
            if path not in files:
                files[path] = open_csv(path, "a")
            write_rows(files[path], columns)
    except OSError as exc:
        status = exc.errno or 1
    finally:
        for f in files.values():
            try:
                f.close()
            except OSError as exc:
                status = status or exc.errno or 1
    sys.exit(status)


class WriterProcess:
    """Formats CSV chunks on another core: ``ChunkedCsv(..., writer=WriterProcess())``.

    Turning every float into its exact shortest text is the dearest part of recording a round;
    a forked child does it while the simulation goes on. Chunks travel through a pipe (which
    blocks when full, so memory stays bounded) and are written in the order they were sent, so
    the files are byte-identical to those written in-process.
    """

    def __init__(self):
        ctx = multiprocessing.get_context("fork")
        receive, self._send = ctx.Pipe(duplex=False)
        self._process = ctx.Process(target=_writer_main, args=(receive, self._send), daemon=True,
                                    name="multispin-csv-writer")
        self._process.start()
        receive.close()

    @staticmethod
    def available():
        """Only where fork is safe: a platform with fork, and no other Python thread running."""
        return ("fork" in multiprocessing.get_all_start_methods()
                and threading.active_count() == 1
                and threading.current_thread() is threading.main_thread())

    def write(self, path, columns):
        try:
            self._send.send((str(path), columns))
        except OSError:  # the writer ended (a failed write): report its reason
            self._failed(path)
            raise

    def _failed(self, path="the CSV files"):
        process, self._process = self._process, None
        if process is None:
            return
        process.join()
        code = process.exitcode
        if code:
            code = code if code > 0 else errno.EIO
            raise OSError(code, f"the CSV writer process failed: {os.strerror(code)}", str(path))

    def close(self):
        if self._process is not None:
            try:
                self._send.send(None)
            except OSError:
                pass
            self._send.close()
            self._failed()


class ChunkedCsv:
    """A CSV written whole blocks of rows at a time: ``write`` takes equal-length column arrays.

    Cheaper than ``CsvStream`` for the engine's per-round records (blocks of rounds).
    ``columns`` maps each column name to its numpy dtype (``object`` for strings). With a
    ``writer`` (``WriterProcess``), the blocks are formatted and written by it.
    """

    def __init__(self, path, columns, writer=None):
        self.path = Path(path)
        self.writer = writer
        self.names = tuple(columns)
        self._dtypes = tuple(columns.values())
        self._file = open_csv(self.path, "w", self.names)

    def write(self, columns):
        """Write rows given as equal-length column arrays in file order."""
        n = len(columns[0]) if columns else 0
        if not n:
            return
        if self.writer is not None:
            self.writer.write(self.path, columns)  # pickled at once: the arrays can be reused
        else:
            write_rows(self._file, columns)

    def close(self):
        """Close the file (the writer process, if any, is closed by its owner)."""
        if not self._file.closed:
            self._file.close()


def read_header(path):
    """The column names of a CSV written by ``CsvStream`` (its first line)."""
    with open(path, newline="", encoding="utf-8") as f:
        return next(csv.reader(f), [])


def read_table(path, columns=None, max_rows=None):
    """A CSV written by ``CsvStream`` as a dict of numpy arrays: int64 where every value of a
    column is an integer, float where every value is a number, else str. ``columns``: the
    names to read, in that order (default: every column; a name the header lacks is a
    KeyError); ``max_rows``: the first rows only (default: all).

    Read by numpy's C parser (``loadtxt``, the same floats as Python's ``float``), one pass
    per kind of column: a run of a million rounds has millions of device rows, which lists of
    Python strings would hold in gigabytes. The kinds are guessed from the first rows and
    confirmed by the pass: a later value that does not fit demotes its column (int, float,
    str) and the column is read again."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader, [])
        sample = list(islice(reader, min(_SAMPLE_ROWS, max_rows or _SAMPLE_ROWS)))
    names = list(header if columns is None else columns)
    where = {name: i for i, name in enumerate(header)}
    missing = [n for n in names if n not in where]
    if missing:
        raise KeyError(f"{path}: no column {', '.join(missing)}")
    if not sample:
        return {n: np.zeros(0, dtype=np.int64) for n in names}
    kinds = {n: _kind(row[where[n]] for row in sample if len(row) > where[n]) for n in names}
    table = {}
    for kind in _KINDS:
        group = [n for n in names if kinds[n] == kind]
        try:
            table.update(_load(path, [where[n] for n in group], group, kind, max_rows))
        except ValueError:   # a later value of another kind: each column on its own
            for n in group:
                table[n] = _load_demoting(path, where[n], n, kind, max_rows)
    return {n: table[n] for n in names}


_SAMPLE_ROWS = 1000
_KINDS = (np.int64, float, str)   # int, then float, then text: the first every value fits


def _kind(values):
    kind = 0
    for v in values:
        while kind < 2:
            try:
                (int, float)[kind](v)
                break
            except ValueError:
                kind += 1
    return _KINDS[kind]


def _load(path, usecols, names, kind, max_rows=None):
    """Columns ``usecols`` of the rows as ``kind`` (ValueError where a value is not one)."""
    if not usecols:
        return {}
    with warnings.catch_warnings():
        # an int parsed from a float's text, which older numpy only warns about, is no fit
        warnings.simplefilter("error", DeprecationWarning)
        data = np.loadtxt(path, delimiter=",", skiprows=1, usecols=usecols, dtype=kind,
                          comments=None, quotechar='"', ndmin=2, encoding="utf-8",
                          max_rows=max_rows)
    if kind is str:   # each text column as wide as its own longest value
        return {n: data[:, i].astype(f"U{max(1, int(np.char.str_len(data[:, i]).max(initial=0)))}")
                for i, n in enumerate(names)}
    return {n: np.ascontiguousarray(data[:, i]) for i, n in enumerate(names)}


def _load_demoting(path, col, name, kind, max_rows):
    for k in _KINDS[_KINDS.index(kind):]:
        try:
            return _load(path, [col], [name], k, max_rows)[name]
        except ValueError:
            if k is str:
                raise
