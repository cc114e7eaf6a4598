"""The input files of a run, read here and handed to the model's parsers as text or arrays.

- ``read_trace(path)``: an agreement trace (``model.acceptance_trace.parse_trace``);
  ``shipped_trace_path()``: the trace shipped with the package.
- ``read_verify_table(spec)``: a verification profile, shipped (``SHIPPED_TABLES``) or a CSV
  file (``model.verification.parse_verify_table``).
- ``load_pairs(path, vocab, ...)``: the (p, q) pairs of an npz
  (``model.tokens.pairs_from_arrays``).

Input files read once while many scenarios are checked: ``reading_once()`` opens a scope in
which ``read_once(reader, *args)`` keeps each reader's result by its arguments (a path and what
the reading depends on), so checking the cells of a sweep reads each distinct file once; outside
a scope every call reads. The cached results are shared: callers must not modify them."""
import contextlib
import contextvars
import gzip
import io
import zlib
from importlib import resources
from pathlib import Path

import numpy as np

from ..model.acceptance_trace import MAX_POSITIONS, MAX_TEXT_BYTES, TraceError, parse_trace
from ..model.verification import VerifyTableError, parse_verify_table

SHIPPED_TRACE = "specbench-sps.jsonl.gz"
SHIPPED_TABLES = ("vidur-a100-codellama34b", "paper-linear-qwen2.5")
MAX_TABLE_BYTES = 16 << 20

_CACHE = contextvars.ContextVar("multispin_input_cache", default=None)


@contextlib.contextmanager
def reading_once():
    """A scope in which ``read_once`` keeps what it read (dropped when the scope ends)."""
    token = _CACHE.set({})
    try:
        yield
    finally:
        _CACHE.reset(token)


def read_once(reader, *args, **kwargs):
    """``reader(*args, **kwargs)``, kept in the current ``reading_once`` scope by the reader and
    its (hashable) arguments; errors are not kept (the check that meets one stops)."""
    cache = _CACHE.get()
    if cache is None:
        return reader(*args, **kwargs)
    key = (reader, args, tuple(sorted(kwargs.items())))
    if key not in cache:
        cache[key] = reader(*args, **kwargs)
    return cache[key]


# ---------------------------------------------------------------------------- agreement traces


def shipped_trace_path():
    """Path of the trace shipped with the package (Spec-Bench: multispin_sim/data/README.md)."""
    return Path(str(resources.files("multispin_sim") / "data" / SHIPPED_TRACE))


def read_trace(path):
    """All answers of a trace file (format from the name: .jsonl[.gz] or .csv[.gz]); a missing,
    oversized, unreadable or malformed file raises ``TraceError`` naming it (and the line)."""
    path = Path(path)
    return parse_trace(_trace_text(path), str(path))


def _trace_text(path):
    """The text of a trace file, gunzipped when its name ends in .gz, at most
    ``MAX_TEXT_BYTES`` (before and after inflating)."""
    if not path.is_file():
        what = "a folder, not a file" if path.is_dir() else "no such file"
        raise TraceError(f"{path}: {what} (expected a Spec-Bench JSONL or a 0/1 CSV trace)")
    if path.stat().st_size > MAX_TEXT_BYTES:
        raise TraceError(f"{path}: larger than {MAX_TEXT_BYTES >> 20} MB; expected a trace of at "
                         f"most {MAX_POSITIONS:,} positions")
    raw = path.read_bytes()
    if path.suffix == ".gz":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as f:
                raw = f.read(MAX_TEXT_BYTES + 1)  # bounded: a small file may inflate enormously
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceError(f"{path}: not a readable gzip file ({exc}); expected a gzipped "
                             "JSONL or CSV trace") from None
        if len(raw) > MAX_TEXT_BYTES:
            raise TraceError(f"{path}: inflates to more than {MAX_TEXT_BYTES >> 20} MB; expected "
                             f"a trace of at most {MAX_POSITIONS:,} positions")
    try:
        return raw.decode("utf-8-sig")   # a leading BOM is no text
    except UnicodeDecodeError:
        raise TraceError(f"{path}: not UTF-8 text") from None


# ---------------------------------------------------------------------------- verification tables


def resolve_table(spec):
    """A shipped table name (``SHIPPED_TABLES``) or a file path -> the path to read."""
    if spec in SHIPPED_TABLES:
        return resources.files("multispin_sim") / "data" / "verify_tables" / f"{spec}.csv"
    return Path(spec)


def read_verify_table(spec):
    """(tokens, milliseconds) arrays of a verification table (``server.verify_table``: a
    shipped name or a CSV path), checked by ``model.verification.parse_verify_table``; errors
    (``VerifyTableError``) name the table and line, in one line."""
    path = resolve_table(spec)
    try:
        if path.stat().st_size > MAX_TABLE_BYTES:
            raise VerifyTableError(f"{spec}: larger than {MAX_TABLE_BYTES >> 20} MB; expected a "
                                   "small CSV of rows "
                                   "'batched tokens, milliseconds'")
        text = path.read_text(encoding="utf-8-sig")   # a leading BOM is no cell
    except OSError as exc:
        raise VerifyTableError(f"{spec}: cannot read the verification table "
                               f"({exc.strerror or exc}); check the path of "
                               "server.verify_table") from None
    except UnicodeDecodeError as exc:
        raise VerifyTableError(f"{spec}, byte {exc.start}: not UTF-8 text; save the table as "
                               "UTF-8 (plain ASCII digits and commas)") from None
    return parse_verify_table(spec, text)


# ---------------------------------------------------------------------------- token pairs


def load_pairs(path, vocab, atol=1e-6, max_bytes=None, expansion=1.0):
    """(p, q) arrays (N, V) from an npz with ``p`` and ``q`` or ``p_logits`` and ``q_logits``,
    checked by ``model.tokens.pairs_from_arrays`` (``PairsFileError``).

    ``max_bytes``: refuse a file whose arrays, times ``expansion`` (the memory of what is built
    from them per byte of them), would take more memory than this, from the sizes in the
    archive's directory, before any array is read."""
    from ..model.tokens import PairsFileError, pairs_from_arrays   # scipy: only with a pairs file

    try:
        with np.load(path, allow_pickle=False) as f:
            names = set(f.files)
            size = sum(info.file_size for info in f.zip.infolist())
            need = size * max(expansion, 1.0)
            if max_bytes is not None and need > max_bytes:
                raise PairsFileError(f"holds {size / 2**20:,.0f} MB of arrays (about "
                                     f"{need / 2**20:,.0f} MB with the tables built from them), "
                                     f"more than limits.max_memory_mb "
                                     f"({max_bytes / 2**20:,.0f} MB) allows",
                                     "use fewer rows, or raise limits.max_memory_mb if this "
                                     "machine has the memory")
            if {"p", "q"} <= names:
                p, q, logits = np.asarray(f["p"], float), np.asarray(f["q"], float), False
            elif {"p_logits", "q_logits"} <= names:
                p, q = np.asarray(f["p_logits"], float), np.asarray(f["q_logits"], float)
                logits = True
            else:
                raise PairsFileError(f"has arrays {sorted(names)}; expected 'p' and 'q' (or "
                                     "'p_logits' and 'q_logits')")
    except PairsFileError:
        raise
    except Exception as exc:  # not a file, not an npz
        raise PairsFileError(f"cannot be read as an npz ({type(exc).__name__})") from None
    return pairs_from_arrays(p, q, vocab, logits=logits, atol=atol)
