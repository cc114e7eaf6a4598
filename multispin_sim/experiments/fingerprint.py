"""What a finished run was made from, beyond its scenario: the code and the input files.

A run's key (``sweepfile.run_key``) hashes its resolved scenario, so a new scenario key or a
changed default makes new runs. A fix inside the engine changes results without touching the
scenario, and a trace or GraphML file named by path can be edited in place: the run's marker
therefore also records

- ``code``: a sha256 over the package's own source files (``outputs.metadata.code_fingerprint``,
  which every run.json records too);
- ``inputs``: ``{key path: sha256 of the file's content}`` for every scenario key ending in
  ``_file`` that names a file (``workload.trace_file``, ``payload.pairs_file``,
  ``topology.graphml_file``, ``acceptance.trace_file``, ...).

On resume a marker whose ``code`` or ``inputs`` differ from this process's is not reused: the
run is made again (``stale_reason`` says why).
"""
from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Mapping


@functools.lru_cache(maxsize=256)
def _file_hash(path, mtime_ns, size):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_hash(path):
    """sha256 of a file's content (cached while its modification time and size stay), or
    ``"unreadable"``."""
    try:
        st = os.stat(path)
        return _file_hash(os.path.abspath(path), st.st_mtime_ns, st.st_size)
    except OSError:
        return "unreadable"


def input_fingerprints(scenario, prefix=""):
    """``{key path: file hash}`` of the scenario keys ending in ``_file`` that name a file."""
    out = {}
    for key, value in scenario.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(input_fingerprints(value, f"{path}."))
        elif str(key).endswith("_file") and isinstance(value, str) and value:
            out[path] = file_hash(value)
    return out


def stale_reason(marker, code, inputs):
    """Why a finished run's ``marker`` cannot be reused here (None when it can)."""
    if marker.get("code") != code:
        return "made by other code"
    if (marker.get("inputs") or {}) != inputs:
        return "an input file changed"
    return None
