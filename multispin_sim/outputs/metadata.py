"""Run metadata (``run.json``) and the choice of a fresh output folder."""
import functools
import hashlib
import importlib.metadata
import os
import platform
from pathlib import Path

import numpy as np

from ..model.compiled import numba_allowed
from .atomic import check_folder

PACKAGES = ("numpy", "scipy", "simpy", "networkx", "pyyaml", "numba")

PACKAGE = Path(__file__).resolve().parents[1]
_SKIP_DIRS = {"__pycache__"}


def _source_files():
    out = []
    for root, dirs, files in os.walk(PACKAGE):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        here = Path(root)
        in_data = "data" in here.relative_to(PACKAGE).parts
        for name in sorted(files):
            if name.endswith(".py") or (in_data and not name.endswith((".pyc", ".pyo"))):
                out.append(here / name)
    return out


@functools.lru_cache(maxsize=1)
def code_fingerprint():
    """sha256 (hex) of the package's source: the same text on every file, the same value."""
    h = hashlib.sha256()
    for path in _source_files():
        h.update(path.relative_to(PACKAGE).as_posix().encode())
        h.update(b"\0")
        try:
            h.update(path.read_bytes())
        except OSError:   # a file removed as we walk: its absence is part of the value
            h.update(b"<unreadable>")
        h.update(b"\0")
    return h.hexdigest()


def package_versions():
    """Versions of Python and the core packages (a copy of what this process found first: a
    sweep worker looks them up once, not once per run)."""
    return dict(_versions())


@functools.lru_cache(maxsize=1)
def _versions():
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


@functools.lru_cache(maxsize=1)
def numpy_simd():
    """The SIMD extensions numpy's kernels dispatch to on this machine (its build's baseline and
    those found at run time): exp, log and sums can round differently from one CPU to the next,
    so the same bytes need the same CPU features as well as the same versions. None where this
    numpy cannot say (``show_config(mode="dicts")`` is numpy >= 1.25's)."""
    try:
        simd = np.show_config(mode="dicts")["SIMD Extensions"]
    except (TypeError, KeyError):
        return None
    return list(simd.get("baseline", [])) + list(simd.get("found", []))


def run_metadata(version, seed, wall_time_s, command_line=None, *, compiled_search=False,
                 compiled_shared_band=False, **extra):
    """What ``run.json`` holds: enough to say which code and inputs made a result.

    ``command_line``: the command that made the run (null when it was made through the Python
    API: the host process's arguments would not reproduce it); ``code_sha256``: the package's
    source (``code_fingerprint``), which tells two states of the code apart where the version
    number does not.

    ``numpy_simd``: the CPU features numpy's kernels use (``numpy_simd``);
    ``numba_allowed``: false where ``MULTISPIN_NUMBA=0`` kept every compiled twin off (the
    search's kernels, the shared-band evaluator); ``compiled_search``: whether this run's draft
    controller ran the compiled search (the engine asks the run's controller; not whether this
    process ever imported it: a sweep worker or a second ``simulate`` call runs other scenarios
    after a searching one); ``compiled_shared_band``: whether its shared-band (multi-user
    MIMO) decisions ran on the compiled evaluator."""
    return {
        "multispin_sim_version": version,
        "seed": seed,
        "wall_time_s": wall_time_s,
        "command_line": None if command_line is None else list(command_line),
        "code_sha256": code_fingerprint(),
        "packages": package_versions(),
        "platform": _platform(),
        "numpy_simd": numpy_simd(),
        "compiled_search": bool(compiled_search),
        "compiled_shared_band": bool(compiled_shared_band),
        "numba_allowed": numba_allowed(),
        **extra,
    }


@functools.lru_cache(maxsize=1)
def _platform():
    return platform.platform()


class OutputExistsError(FileExistsError):
    pass


def output_folder(out=None, base="results", name="run", seed=0):
    """A new, empty folder for one run; never an existing non-empty one.

    With ``out`` given, that folder (it may exist only if empty). Otherwise
    ``base/<name>-seed<seed>``, with ``-2``, ``-3``, ... appended if taken.
    Raises ``OutputLocationError`` for a location that cannot take it, before any work.
    """
    if out is not None:
        path = Path(out)
        if path.is_dir() and any(path.iterdir()):
            raise OutputExistsError(f"{path}: output folder exists and is not empty; "
                                    "choose another --out (results are never overwritten)")
        return check_folder(path, "--out")
    base = check_folder(Path(base), "results folder")
    stem = f"{name}-seed{seed}"
    path = base / stem
    i = 2
    while path.exists():
        path = base / f"{stem}-{i}"
        i += 1
    path.mkdir(parents=True)
    return path
