"""Where the runs of a sweep execute: in this process, on local processes, or on a Dask cluster.

Every executor is a generator ``(tasks, jobs, runner, ...) -> (task, outcome)`` in completion
order. A task is a plain dict (``cell``, ``replication``, ``key``, ``run_dir``, ``scenario``);
``execute_run`` does one run and never raises: an exception becomes
``{"status": "failed", "error": ...}`` (its traceback goes to ``run_dir/error.txt``), so one
failing cell does not stop the others. An outcome with ``"stop": True`` is a complete run made
while a stop signal came: the sweep records it, then stops. Results are identical whatever the
executor: each run is a function of its scenario (seed included) only.

- ``serial``: one run after the other, in this process (debugging, tests).
- ``local``: ``concurrent.futures.ProcessPoolExecutor`` with ``jobs`` worker processes
  (default: all cores).
- ``dask``: ``dask.distributed`` (the ``dask`` extra, imported only here): on an existing
  cluster with ``scheduler="tcp://host:8786"`` (the workers need ``multispin_sim`` installed and
  the output folder on a shared file system), else on a ``LocalCluster`` of ``jobs`` workers.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import time
import traceback
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from ..engine.simulation import simulate
from ..errors import CliError, first_signal, one_line
from ..scenario import load_scenario

EXECUTORS = ("serial", "local", "dask")


class ExecutorError(RuntimeError):
    """An executor cannot start (dask missing, scheduler unreachable)."""


class RunInterrupted(Exception):
    """Ctrl-C stopped a run (the engine finished its round and returned ``complete: false``)."""


class RunStopped(Exception):
    """A limit stopped a run (``limits.*``): its cell fails with the reason, the others go on."""


class StopAfterRun(Exception):
    """A stop signal came while a run was already finishing: the run is complete and kept
    (``summary``), and the sweep stops after recording it. The engine's own stop handler took
    the signal, so nothing else would tell the sweep that it was asked to stop."""

    def __init__(self, summary):
        super().__init__("a stop signal came as the run finished")
        self.summary = summary


def simulate_run(scenario, out):
    """The default runner: run the engine on a plain scenario dict, write into ``out``."""
    result = simulate(load_scenario(scenario), out=out)
    signalled = result.stop_signal is not None
    if not result.complete:
        if not signalled:  # a limit: this cell fails, others go on
            raise RunStopped(f"run stopped early: {result.summary.get('stop_reason')}")
        raise RunInterrupted("the run was interrupted (summary complete: false)")
    if signalled:
        raise StopAfterRun(result.summary)
    return result.summary


def plain(value):
    """JSON- and YAML-ready copy of a summary or a document: mappings become dicts, tuples lists,
    numpy scalars and arrays Python numbers and lists."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "tolist"):  # numpy scalar or array
        return plain(value.tolist())
    return value


def cpu_count():
    """Cores this process may use (the default number of workers)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_STOPPING = None   # in a local worker: the pool's "the sweep is stopping" event


def execute_run(task, runner=None):
    """One run: a fresh ``run_dir`` (a partial one from a killed sweep is replaced); none when
    the sweep is stopping (a task a worker had already taken from the pool's queue)."""
    if _STOPPING is not None and _STOPPING.is_set():
        return {"status": "interrupted", "error": "not started: the sweep was stopping"}
    run_dir = Path(task["run_dir"])
    t0 = time.perf_counter()
    try:
        if run_dir.exists():
            shutil.rmtree(run_dir)
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        summary = plain((runner or simulate_run)(task["scenario"], run_dir))
        return {"status": "ok", "summary": summary, "elapsed_s": time.perf_counter() - t0}
    except StopAfterRun as exc:  # a whole run, then the sweep stops
        return {"status": "ok", "summary": plain(exc.summary),
                "elapsed_s": time.perf_counter() - t0, "stop": True}
    except RunInterrupted as exc:  # Ctrl-C: not a failure of the cell; the sweep stops
        return {"status": "interrupted", "error": one_line(exc)}
    except Exception as exc:  # reported per run; the sweep goes on
        # a limit's stop is a finding about the scenario, not a fault: its reason, no traceback
        stopped = isinstance(exc, RunStopped)
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
            (run_dir / "error.txt").write_text(f"{exc}\n" if stopped else traceback.format_exc(),
                                               encoding="utf-8")
        except OSError:
            pass
        if stopped:
            error = exc
        elif isinstance(exc, CliError):   # its own one line (a full disk): no class name
            error = exc.line()[len("error: "):]
        else:
            error = f"{type(exc).__name__}: {exc}"
        return {"status": "failed", "error": one_line(error),
                "elapsed_s": time.perf_counter() - t0}


def serial_runs(tasks, jobs=1, runner=None, **_):
    for task in tasks:
        yield task, execute_run(task, runner)


def _worker_init(parent_pid, stopping=None):
    global _STOPPING
    _STOPPING = stopping
    try:
        from ..engine.guards import die_with_parent

        die_with_parent(parent_pid)
    except BaseException:  # e.g. a stop signal during start-up: end quietly (the pool reports it)
        os._exit(1)


def _stop_workers(pool, stopping):
    """Ask the pool's workers to stop their runs at a round boundary, with the signal that
    stopped this process (a Ctrl-C when none did): one its workers do not ignore either; and
    to start no other (``stopping``)."""
    stopping.set()
    for process in list(getattr(pool, "_processes", {}).values()):
        try:
            os.kill(process.pid, first_signal())
        except (OSError, AttributeError):
            pass


def _outcomes(completed, tasks, key, yielded):
    """(task, outcome) of each future of ``completed`` as it finishes (``tasks``: {key(future):
    task}); a run whose worker died fails. ``yielded`` gets the keys of the outcomes taken."""
    for fut in completed:
        try:
            outcome = fut.result()
        except Exception as exc:  # a worker process died (BrokenProcessPool, ...)
            outcome = {"status": "failed",
                       "error": one_line(f"worker failed: {type(exc).__name__}: {exc}")}
        yielded.add(key(fut))
        yield tasks[key(fut)], outcome


def _late_outcomes(futures, yielded, late, result):
    """Into ``late``: (task, outcome) of the runs that succeeded after the sweep stopped taking
    their outcomes (``futures``: {future: task}; ``result(future)``: its outcome). They are
    complete (a run the stop signal reached in its rounds is ``interrupted``), so the sweep
    keeps them; any other outcome is left out: the run is made again on the next invocation."""
    if late is None:
        return
    for fut, task in futures.items():
        if fut in yielded:
            continue
        try:
            outcome = result(fut)
        except Exception:   # not finished, cancelled, or its worker died
            continue
        if isinstance(outcome, dict) and outcome.get("status") == "ok":
            late.append((task, outcome))


def local_runs(tasks, jobs=None, runner=None, late=None, **_):
    """``late``: a list that gets the runs that succeed after the caller stopped taking
    outcomes (it left the loop on a stop signal): the workers are asked to stop, and a run
    already writing its files when they were is complete (``_late_outcomes``)."""
    tasks = list(tasks)
    if not tasks:
        return
    workers = max(1, min(jobs or cpu_count(), len(tasks)))
    # workers die with this process (even on SIGKILL) and leave stop signals to it
    stopping = multiprocessing.Event()
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_worker_init,
                               initargs=(os.getpid(), stopping))
    finished = False
    futures, yielded = {}, set()
    try:
        futures = {pool.submit(execute_run, t, runner): t for t in tasks}
        yield from _outcomes(as_completed(futures), futures, lambda f: f, yielded)
        finished = True
    finally:
        if not finished:
            _stop_workers(pool, stopping)
        pool.shutdown(wait=True, cancel_futures=True)
        if not finished:
            _late_outcomes(futures, yielded, late,
                           lambda f: f.result(timeout=0) if f.done() else None)


def dask_runs(tasks, jobs=None, runner=None, scheduler=None, processes=True, late=None, **_):
    """``late``: as ``local_runs``'s, the runs that had succeeded (but were not taken yet) when
    the caller stopped taking outcomes; the runs still going are cancelled."""
    tasks = list(tasks)
    if not tasks:
        return
    distributed = _dask()
    Client, LocalCluster = distributed.Client, distributed.LocalCluster
    cluster = None
    try:
        if scheduler:
            client = Client(scheduler, timeout="15s")
        else:
            workers = max(1, min(jobs or cpu_count(), len(tasks)))
            # silence_logs: a killed worker is reported per run, not by Dask's log tracebacks
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes,
                                   dashboard_address=None, silence_logs=logging.CRITICAL)
            client = Client(cluster)
            if processes:  # local worker processes die with this process
                client.run(_worker_init, None)
    except (OSError, TimeoutError) as exc:
        if cluster is not None:
            cluster.close()
        where = scheduler or "a LocalCluster"
        raise ExecutorError(f"cannot start the dask executor on {where}: {one_line(exc)}; "
                            "check that the scheduler runs and this machine reaches it (or use "
                            "--executor local)") from None
    futures, by_key, yielded, finished = {}, {}, set(), False   # by the futures' keys
    try:
        for t in tasks:
            fut = client.submit(execute_run, t, runner, pure=False)
            futures[fut.key], by_key[fut.key] = fut, t
        yield from _outcomes(distributed.as_completed(list(futures.values())), by_key,
                             lambda f: f.key, yielded)
        finished = True
    finally:
        if not finished:
            _late_outcomes(by_key, yielded, late,
                           lambda key: (futures[key].result(timeout=5)
                                        if futures[key].status == "finished" else None))
        try:
            if futures:
                client.cancel(list(futures.values()))
        except Exception:
            pass
        client.close()
        if cluster is not None:
            cluster.close()


RUNNERS = {"serial": serial_runs, "local": local_runs, "dask": dask_runs}


def check_executor(name, scheduler=None, jobs=None):
    """Fail early (before any output is written) on an unknown executor, a number of jobs that
    is not a count, a missing dask, or a scheduler that is not an address or does not answer."""
    get_executor(name)
    if jobs is not None and (type(jobs) is bool or not hasattr(jobs, "__index__") or jobs < 1):
        raise ExecutorError(f"jobs={jobs!r}: expected a number of worker processes >= 1 (or "
                            "None for one per core)")
    if name == "dask":
        distributed = _dask()
        if scheduler:
            try:
                distributed.comm.parse_address(scheduler)
                distributed.Client(scheduler, timeout="15s").close()
            except (ValueError, OSError, TimeoutError) as exc:
                raise ExecutorError(f"cannot start the dask executor on {scheduler}: "
                                    f"{one_line(exc)}; give the address of a running scheduler, "
                                    "e.g. tcp://host:8786 (or use --executor local)") from None


def _dask():
    """``dask.distributed`` (the ``dask`` extra), or the one line that says how to get it."""
    try:
        import dask.distributed
    except ImportError:
        raise ExecutorError("the dask executor needs dask.distributed; pip install "
                            "'multispin_sim[dask]' (or use --executor local)") from None
    return dask.distributed


def get_executor(name):
    try:
        return RUNNERS[name]
    except KeyError:
        allowed = ", ".join(EXECUTORS)
        raise ExecutorError(f"unknown executor {name!r}; allowed: {allowed}") from None
