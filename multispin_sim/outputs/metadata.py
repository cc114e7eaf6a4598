"""Run metadata (``run.json``) and the choice of a fresh output folder."""
import functools
import importlib.metadata
import platform
import sys
from pathlib import Path

PACKAGES = ("numpy", "scipy", "simpy", "networkx", "pyyaml", "numba")


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


def run_metadata(version, seed, wall_time_s, command_line=None, *, compiled_search=False,
                 **extra):
    """What ``run.json`` holds: enough to say which code and inputs made a result.

    ``compiled_search``: whether this run's draft controller ran the compiled search (the
    engine asks the run's controller; not whether this process ever imported it: a sweep
    worker or a second ``simulate`` call runs other scenarios after a searching one)."""
    return {
        "multispin_sim_version": version,
        "seed": seed,
        "wall_time_s": wall_time_s,
        "command_line": list(sys.argv if command_line is None else command_line),
        "packages": package_versions(),
        "platform": _platform(),
        "compiled_search": bool(compiled_search),
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
    """
    from .atomic import check_folder  # an unusable location: OutputLocationError, before work

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
