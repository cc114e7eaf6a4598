"""Strict JSON written atomically, and output locations checked before any work.

JSON files (summary.json, run.json, sweep.json, done.json) are strict JSON (RFC 8259): a value
that is not a finite number (an undefined confidence interval, an infinite delay) is written as
``null``, never as the bare ``NaN`` / ``Infinity`` that strict parsers refuse. They are written to
a temporary file in the same folder and renamed over the target (``os.replace``), so a reader, or
a run killed at any moment, sees the old file or the new one, never half of one.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
from pathlib import Path

from ..errors import OutputLocationError, os_advice, os_reason


def strict(value):
    """A JSON-ready copy: numpy scalars/arrays become Python values, NaN and infinities None."""
    if isinstance(value, dict):
        return {str(k): strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return strict(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def dumps(data):
    return json.dumps(strict(data), indent=2, allow_nan=False) + "\n"


@contextlib.contextmanager
def replacing(path):
    """A temporary path beside ``path`` (same suffix, so writers that infer the format from the
    name still do) that replaces ``path`` when the block ends without an exception; on an
    exception, or a signal, the temporary file is removed and ``path`` is left as it was."""
    path = Path(path)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException as exc:
        if isinstance(exc, OSError) and exc.filename is None:   # a write's error names no file
            exc.filename = str(path)
        try:
            tmp.unlink()
        except OSError:
            pass
        raise


def write_text(path, text):
    """Write ``text`` to ``path`` atomically (temporary file + rename)."""
    with replacing(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)


def write_json(path, data):
    """``data`` as strict JSON (NaN/inf -> null), written atomically."""
    write_text(path, dumps(data))


def check_folder(path, option="--out", create=True):
    """Make sure ``path`` is (or can become) a writable folder, before any work starts.

    Raises ``OutputLocationError`` naming the option, with the reason and what to do: an
    existing file or device (``/dev/null``), a path under a file, a read-only or unwritable
    place. Creates the folder (and its parents); an existing folder may hold files (callers
    with rules about its contents, e.g. a sweep's resume, check them). With ``create=False``
    nothing is made: the write test is made in the nearest folder that exists (for commands
    that still check their inputs after this, and must leave nothing behind if they refuse).
    """
    path = Path(path)
    what = f"{option} {path}"
    if path.exists() and not path.is_dir():
        kind = "a file" if path.is_file() else "not a folder (a device or special file)"
        raise OutputLocationError(what, f"exists and is {kind}",
                                  f"give {option} a folder (it is created if missing)")
    parent = path
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise OutputLocationError(what, f"{parent} is a file, not a folder",
                                  f"give {option} a folder that is not under a file")
    try:
        if create:
            path.mkdir(parents=True, exist_ok=True)
        probe = (path if create else parent) / f".multispin-write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise OutputLocationError(what, f"cannot write there ({os_reason(exc)})",
                                  os_advice(exc)) from None
    return path
