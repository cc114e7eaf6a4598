"""``run_sweep(sweep)``: every (cell, replication) run, resumable, then the tables.

Output folder (default ``results/<sweep name>``)::

    sweep.yaml        the sweep file as read (with --set options under ``set:``)
    sweep.json        machine-readable description: axes, cells, seeds, units, plot spec, status
    runs/c0003-r001-<hash>/   one run: the engine's files (rounds.csv, device_rounds.csv, ...,
                      summary.json) and ``done.json``, the marker written when the run succeeded
    runs.csv, cells.csv (+ runs.parquet, cells.parquet with pyarrow): see ``tables``

Resume: a run is identified by the hash of its full resolved scenario (every key with its
default filled in, seed included). Rerunning a sweep into the same folder reuses every run whose
``done.json`` holds that hash -- also after the grid was extended or reordered -- and runs the
rest. A code update that adds a scenario key or changes a default changes the hash. A marker
also records the fingerprint of the code that made the run and the content hashes of the input
files its scenario names (``fingerprint``): a run made by other code, or from an input file
that has changed since, is made again rather than mixed with results of the current code and
inputs (how many, and why, is printed and kept in ``sweep.json`` as ``redone``). Folders of
runs that no cell uses any more stay until removed. Markers are written by this process as
each run finishes, so killing a sweep loses only the runs in flight. A failed run writes
``error.txt`` in its folder, is listed in ``sweep.json`` and ``runs.csv`` (status ``failed``),
and is retried on the next invocation.

A stop signal (Ctrl-C, SIGTERM, SIGHUP), whenever it comes, ends the sweep with every finished
run kept and the tables written (``SweepSignals``). Every table is written to a temporary file
and renamed.
"""
from __future__ import annotations

import functools
import json
import os
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..version import __version__
from ..errors import RECEIVED, STOP_SIGNALS, catch, restore
from ..outputs.atomic import check_folder, write_json, write_text   # strict JSON, file + rename
from ..outputs.metadata import code_fingerprint
from .executors import check_executor, get_executor
from .fingerprint import input_fingerprints, stale_reason
from .sweepfile import run_key
from .tables import write_tables

MARKER = "done.json"


class OutputConflictError(ValueError):
    """The output folder holds something else than this sweep."""


@dataclass
class SweepResult:
    folder: Path
    records: dict                       # (cell, rep) -> record
    runs: list                          # rows of runs.csv
    cells: list                         # rows of cells.csv
    paths: dict
    ran: int = 0                        # runs executed now
    reused: int = 0                     # runs found complete from an earlier invocation
    redone: dict = field(default_factory=dict)   # reason -> runs made again (not reused)
    failures: list = field(default_factory=list)
    wall_time_s: float = 0.0
    n_runs: int = 0

    @property
    def complete(self):
        """Every run of the sweep succeeded."""
        return not self.failures and len(self.records) == self.n_runs


class SweepProgress:
    """``cells 3/26  runs 15/130  ...`` on stderr, rewritten in place (only on a terminal)."""

    LINE_PERIOD_S = 5.0  # not on a terminal (batch jobs): one line every few seconds

    def __init__(self, sweep, stream=sys.stderr, enabled=None):
        self.stream = stream
        tty = stream.isatty()
        self.enabled = tty if enabled is None else enabled
        self.lines = enabled is None and not tty
        self.n_cells = len(sweep.cells)
        self.n_runs = sweep.n_runs
        self.reps = sweep.replications
        self.per_cell = Counter()   # cell -> runs done
        self.t0 = time.perf_counter()
        self.new = 0
        self.failed = 0
        self.todo = 0
        self.last = 0.0

    def start(self, records, todo):
        self.per_cell.update(cell for cell, _ in records)
        self.todo = todo
        self.show(force=True)

    def update(self, cell, ok):
        self.per_cell[cell] += 1
        self.new += 1
        self.failed += not ok
        self.show(force=self.new == self.todo)

    def show(self, force=False):
        """The bar, redrawn at most every 0.2 s; off a terminal, one line every
        ``LINE_PERIOD_S``."""
        if not (self.enabled or self.lines):
            return
        now = time.perf_counter()
        if not force and now - self.last < (self.LINE_PERIOD_S if self.lines else 0.2):
            return
        self.last = now
        cells, runs, elapsed, left, failed = self._state(now)
        if self.lines:
            self.stream.write(f"sweep: cells {cells}/{self.n_cells}, runs {runs}/{self.n_runs}"
                              f"{failed}, {elapsed:,.0f} s{left}\n")
        else:
            fill = int(30 * cells / max(self.n_cells, 1))   # a bar 30 characters wide
            end = "\n" if self.new >= self.todo else ""
            self.stream.write(f"\r[{'#' * fill}{'.' * (30 - fill)}] cells {cells}/{self.n_cells}  "
                              f"runs {runs}/{self.n_runs}{failed}  {elapsed:,.0f} s{left} {end}")
        self.stream.flush()

    def _state(self, now):
        """(cells done, runs done, seconds so far, ', ~N s left' or '', ', N failed' or '')."""
        cells = sum(1 for n in self.per_cell.values() if n >= self.reps)
        runs = sum(self.per_cell.values())
        elapsed = now - self.t0
        left = (f", ~{elapsed / self.new * (self.todo - self.new):,.0f} s left"
                if self.new and self.new < self.todo else "")
        failed = f", {self.failed} failed" if self.failed else ""
        return cells, runs, elapsed, left, failed


def scan_markers(runs_dir):
    """{run key: [(folder, marker), ...]} of every completed run under ``runs_dir`` (a key can
    have several folders: a run made again by other code in a cell of another index)."""
    found = {}
    if not runs_dir.is_dir():
        return found
    for marker in sorted(runs_dir.glob(f"*/{MARKER}")):
        try:
            data = json.loads(marker.read_text(encoding="utf-8"))
            found.setdefault(data["key"], []).append((marker.parent, data))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a damaged marker: the run is redone
    return found


def reusable(candidates, code, inputs):
    """(folder, marker) of a finished run that this code and these inputs would make, else
    (None, why the candidates cannot be reused, or None when there are none)."""
    why = None
    for run_dir, marker in candidates:
        reason = stale_reason(marker, code, inputs)
        if reason is None:
            return (run_dir, marker), None
        why = why or reason
    return None, why


def redone_text(redone):
    """``'3 finished runs redone (2 made by other code, 1 an input file changed)'``."""
    total = sum(redone.values())
    parts = ", ".join(f"{n} {why}" for why, n in sorted(redone.items()))
    return f"{total} finished run{'s' if total != 1 else ''} redone ({parts})"


def sweep_description(sweep, **status):
    return {
        "name": sweep.name,
        "description": sweep.description,
        "source": sweep.source,
        "multispin_sim_version": __version__,
        "keys": sweep.keys,
        "key_info": sweep.key_info,
        "axes": [{"kind": a.kind, "keys": list(a.keys), "values": [list(v) for v in a.values]}
                 for a in sweep.axes],
        "replications": sweep.replications,
        "seed": sweep.seed,
        "seeds": sweep.seeds,
        "cells": [{"cell": c.index, "values": c.values} for c in sweep.cells],
        "plot": sweep.plot,
        **status,
    }


def prepare_output(folder, sweep):
    """Create the output folder or check that it holds this sweep (resume), before any run."""
    folder = Path(folder)
    meta = folder / "sweep.json"
    if folder.exists():
        if not folder.is_dir():
            raise OutputConflictError(f"{folder}: exists and is not a folder; choose another "
                                      "--out")
        if meta.exists():
            try:
                name = json.loads(meta.read_text(encoding="utf-8")).get("name")
            except (OSError, ValueError):
                name = None
            if name != sweep.name:
                raise OutputConflictError(
                    f"{folder}: holds the sweep {name!r}, not {sweep.name!r}; choose another "
                    "--out (a folder is resumed only by the sweep that made it)")
        elif any(p.name != LOCK for p in folder.iterdir()):   # a lock alone: stopped at once
            raise OutputConflictError(f"{folder}: output folder exists, is not empty and holds no "
                                      "sweep.json; choose another --out")
    check_folder(folder, "--out")
    lock_folder(folder)
    if not meta.exists():   # first: a sweep stopped from here on leaves a folder it resumes
        write_json(meta, sweep_description(sweep, status="running"))
    (folder / "runs").mkdir(parents=True, exist_ok=True)
    write_text(folder / "sweep.yaml", dump_sweep_yaml(sweep))   # temporary file + rename
    return folder


_LOCKS = {}
LOCK = ".lock"


def lock_folder(folder):
    """Hold an exclusive lock on ``folder/.lock`` until ``unlock_folder``: a second sweep into a
    folder in use is refused (``OutputConflictError``) instead of racing the first one."""
    try:
        import fcntl
    except ImportError:  # not on POSIX: no lock
        return
    key = str(Path(folder).resolve())
    if key in _LOCKS:
        return
    path = Path(folder) / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        try:
            owner = os.read(fd, 32).decode().strip() or "?"
        except OSError:
            owner = "?"
        os.close(fd)
        raise OutputConflictError(f"{folder}: in use by another sweep (process {owner}); wait "
                                  "for it to end (then rerun to resume) or choose another --out")
    try:
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
    except OSError as exc:   # a full disk: say which file
        os.close(fd)
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    _LOCKS[key] = fd


def unlock_folder(folder):
    fd = _LOCKS.pop(str(Path(folder).resolve()), None)
    if fd is not None:
        os.close(fd)


class SweepSignals:
    """The stop signals (SIGINT, SIGTERM, SIGHUP) for the whole of a sweep, installed once (no
    signal falls between two handlers); main thread only, and not those ignored (``nohup``, a
    background job's SIGINT).

    Whenever a signal comes (also during the scan of the markers, before the runs, or while the
    tables are written) the sweep ends the same way: the runs in flight stop at a round boundary
    and are not kept; a run that was already writing its outputs is complete, so it is kept
    (with its ``done.json``, also one a worker finished as the pool stopped); every finished run
    has its ``done.json``, the tables hold those runs, ``sweep.json`` says ``interrupted``, and
    ``run_sweep`` raises ``KeyboardInterrupt``.

    While the sweep keeps its books (the marker scan before the runs; after them the markers
    of the runs that finished as the workers stopped, the tables and sweep.json), a signal is
    held: recorded (``signum``, and ``errors.RECEIVED``: the exit status 128 + N) and acted on
    when the books are written: no run starts after it and the sweep ends ``interrupted``; a
    further signal waits too. While the runs go (``passing`` true) the first signal raises
    ``KeyboardInterrupt`` out of the executor's loop, as a Ctrl-C does (SIGTERM and SIGHUP too,
    as the CLI takes them), and the books are held from then on. A run made in this process
    (the serial executor) installs its own handlers for its duration (``engine.guards``).
    """

    def __init__(self):
        self.signum = None
        self.passing = False
        self._previous = {}

    def _handler(self, signum, frame):
        RECEIVED.append(signum)
        if self.signum is None:
            self.signum = signum
        if self.passing:
            self.passing = False   # the sweep now keeps its books: a further signal waits
            raise KeyboardInterrupt

    def release(self):
        """Let the next signal raise ``KeyboardInterrupt`` (the runs go); at once when one was
        held already."""
        self.passing = True
        if self.signum is not None:
            self.passing = False
            raise KeyboardInterrupt

    def __enter__(self):
        self._previous = catch([s for s in STOP_SIGNALS if signal.getsignal(s) != signal.SIG_IGN],
                               self._handler)
        return self

    def __exit__(self, *exc):
        restore(self._previous)
        self._previous = {}
        return False


def default_output(sweep, results_dir="results"):
    return Path(results_dir) / sweep.name


def run_sweep(sweep, out=None, *, executor="local", jobs=None, scheduler=None, runner=None,
              progress=None, stream=None, dask_processes=True):
    """Run every (cell, replication) of ``sweep`` not yet complete in ``out``; write the tables.

    ``executor``: "serial", "local" (``jobs`` processes, default all cores) or "dask"
    (``scheduler`` address, else a LocalCluster of ``jobs`` workers; ``dask_processes=False``
    makes it threads in this process). ``runner(scenario_dict, run_dir) -> summary`` replaces the
    engine (tests; it must be picklable for the process and dask executors). ``progress``: show
    the progress bar (default: when ``stream``, stderr by default, is a terminal).
    A stop signal ends the sweep as ``SweepSignals`` says.
    """
    stream = stream or sys.stderr
    check_executor(executor, scheduler, jobs)
    folder = Path(out or default_output(sweep))
    execute = functools.partial(get_executor(executor), jobs=jobs, runner=runner,
                                scheduler=scheduler, processes=dask_processes)
    where = {"executor": executor, "jobs": jobs, "scheduler": scheduler}
    with SweepSignals() as signals:
        try:
            prepare_output(folder, sweep)
            return _run_sweep(sweep, folder, execute, where, progress, stream, signals)
        finally:
            unlock_folder(folder)


def _run_sweep(sweep, folder, execute, where, progress, stream, signals):
    """``execute(tasks, late=...)``: the executor with its options; ``where``: them, for
    sweep.json."""
    runs_dir = folder / "runs"
    t0 = time.perf_counter()
    done = scan_markers(runs_dir)
    code = code_fingerprint()

    records, pending = {}, {}
    reused = 0
    redone = Counter()
    for cell in sweep.cells:
        inputs = input_fingerprints(cell.scenario)   # the seed names no file
        for rep in range(sweep.replications):
            scenario = sweep.run_scenario(cell, rep)
            key = run_key(scenario)
            if key in pending:  # two cells with the same resolved scenario: run it once
                pending[key]["also"].append((cell.index, rep))
                continue
            found, why = reusable(done.get(key, ()), code, inputs)
            if found is not None:
                run_dir, marker = found
                records[(cell.index, rep)] = {"status": "ok", "summary": marker["summary"],
                                              "run_dir": str(run_dir.relative_to(folder))}
                reused += 1
                continue
            if why is not None:
                redone[why] += 1
            name = f"c{cell.index:04d}-r{rep:03d}-{key[:10]}"
            pending[key] = {"cell": cell.index, "replication": rep, "key": key,
                            "run_dir": str(runs_dir / name), "scenario": scenario,
                            "values": cell.values, "seed": sweep.seeds[rep], "inputs": inputs,
                            "also": []}
    if redone:
        stream.write(f"sweep: {redone_text(redone)}: their done.json differs from this code or "
                     "these input files\n")
        stream.flush()

    status = {"status": "running", **where, "code": code, "redone": redone}
    write_json(folder / "sweep.json", sweep_description(sweep, **status))
    bar = SweepProgress(sweep, stream, progress)
    bar.start(records, sum(1 + len(t["also"]) for t in pending.values()))
    failures = []
    ran = 0
    tasks = [{k: v for k, v in t.items() if k not in ("also", "inputs")}
             for t in pending.values()]

    def record(task, outcome):
        """A run's outcome: its marker (a success), its records and the progress."""
        nonlocal ran
        ran += 1
        run_dir = Path(task["run_dir"])
        rel = str(run_dir.relative_to(folder))
        targets = [(task["cell"], task["replication"])] + pending[task["key"]]["also"]
        if outcome["status"] == "ok":
            run_dir.mkdir(parents=True, exist_ok=True)
            write_json(run_dir / MARKER, {
                "key": task["key"], "cell": task["cell"], "replication": task["replication"],
                "values": task["values"], "seed": task["seed"], "summary": outcome["summary"],
                "elapsed_s": outcome.get("elapsed_s"), "multispin_sim_version": __version__,
                "code": code, "inputs": pending[task["key"]]["inputs"],
            })
            rec = {"status": "ok", "summary": outcome["summary"], "run_dir": rel}
        else:
            rec = {"status": "failed", "error": outcome["error"], "run_dir": rel}
            for cell, rep in targets:
                failures.append({"cell": cell, "replication": rep, "error": outcome["error"],
                                 "run_dir": rel})
        for target in targets:
            records[target] = rec
            bar.update(target[0], rec["status"] == "ok")

    # a signal held so far (the marker scan): no run starts; else the runs, where the first
    # signal raises KeyboardInterrupt (SweepSignals.passing)
    interrupted = signals.signum is not None
    late = []   # runs that succeeded as the workers stopped (the executor's ``late``)
    if not interrupted:
        runs = execute(tasks, late=late)
        try:
            try:
                signals.release()
                for task, outcome in runs:
                    signals.passing = False   # this outcome's marker and records: held
                    if outcome["status"] == "interrupted":
                        raise KeyboardInterrupt
                    record(task, outcome)
                    if outcome.get("stop"):   # a signal came as this run finished: kept, stop
                        raise KeyboardInterrupt
                    signals.release()
            finally:
                signals.passing = False   # from here on the books: a signal waits for them
        except KeyboardInterrupt:
            interrupted = True
        runs.close()   # the executor stops its workers (a run writing its files finishes: late)
    for task, outcome in late:
        record(task, outcome)
    wall = time.perf_counter() - t0
    paths, rows, cell_rows = write_tables(folder, sweep, records)
    failures.sort(key=lambda f: (f["cell"], f["replication"]))
    while True:   # a signal held as sweep.json was written: written again, interrupted
        stopped = interrupted or signals.signum is not None
        final = "interrupted" if stopped else ("failed" if failures else "complete")
        status.update(status=final, runs=sweep.n_runs, ran=ran, reused=reused,
                      failures=failures, wall_time_s=wall)
        write_json(folder / "sweep.json", sweep_description(sweep, **status))
        if stopped or signals.signum is None:
            break
    if stopped:
        raise KeyboardInterrupt
    return SweepResult(folder, records, rows, cell_rows, paths, ran=ran, reused=reused,
                       redone=redone, failures=failures, wall_time_s=wall, n_runs=sweep.n_runs)


def dump_sweep_yaml(sweep):
    """A self-contained sweep file for the output folder: ``base_file``, ``base`` and ``--set``
    merged into one ``base`` mapping, so ``multispin-sim sweep OUT/sweep.yaml --out OUT`` resumes
    the same runs from anywhere."""
    doc = {"name": sweep.name}
    if sweep.description:
        doc["description"] = sweep.description
    doc["base"] = sweep.base_raw
    doc["sweep"] = sweep.spec["sweep"]
    if sweep.spec.get("plot") is not None:
        doc["plot"] = sweep.spec["plot"]
    origin = sweep.source or "a mapping"
    extra = f" and --set {', '.join(f'{k}={v}' for k, v in sweep.spec.get('set', {}).items())}" \
        if sweep.spec.get("set") else ""
    header = (f"# Written by multispin-sim sweep from {origin}: base_file, base{extra} merged "
              "into base.\n")
    return header + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None,
                                   allow_unicode=True)
