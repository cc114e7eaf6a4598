"""The CLI's one error path: every failure ends as one line on stderr,

    error: <what>: <why>; <what to do>

and an exit status: 2 for bad input found before any work (scenario, sweep file, option, output
location), 1 for a failure during the run (a full disk, a run stopped by a limit, an internal
error), 128 + N for a run stopped by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP). No traceback
unless ``--debug`` (or the environment variable ``MULTISPIN_SIM_DEBUG=1``).
"""
from __future__ import annotations

import errno
import os
import signal
import sys
import traceback

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2

# Every stop signal this process received, in order (a run's handlers, ``engine.guards``, and
# the CLI's record them here): the one place a command reads the signal that stopped it (exit
# 128 + N), whether it arrived inside a run or between runs.
RECEIVED = []


def first_signal(default=2):
    """The first stop signal received (``default``, SIGINT, when none was: a plain Ctrl-C)."""
    return RECEIVED[0] if RECEIVED else default


# The stop signals this process was started ignoring stay ignored: ``nohup`` ignores SIGHUP so
# that a long sweep outlives its terminal, and a shell script's background job ignores SIGINT.
# Read once, when the package is first imported: a sweep's forked worker inherits this record,
# not the ignoring it does itself between runs (``engine.guards.die_with_parent``).
STOP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP")
                     if hasattr(signal, n))
IGNORED_AT_START = frozenset(s for s in STOP_SIGNALS if signal.getsignal(s) == signal.SIG_IGN)


def catch(signals, handler):
    """Install ``handler`` for each of ``signals`` but those ignored at start
    (``IGNORED_AT_START``); the handlers it replaced, to put back."""
    previous = {}
    for sig in signals:
        if sig in IGNORED_AT_START:
            continue
        try:
            previous[sig] = signal.signal(sig, handler)
        except (ValueError, OSError):   # not the main thread, or not a signal here
            pass
    return previous


def restore(previous):
    """Put back the handlers ``catch`` replaced (``None``, one not installed from Python: the
    default action)."""
    for sig, handler in previous.items():
        signal.signal(sig, signal.SIG_DFL if handler is None else handler)


class CliError(Exception):
    """An anticipated failure: ``what`` failed ``why``; ``todo`` says what to do."""

    def __init__(self, what, why, todo, status=EXIT_BAD_INPUT):
        self.what, self.why, self.todo, self.status = str(what), str(why), str(todo), status
        super().__init__(self.line())

    def line(self):
        return one_line(f"error: {self.what}: {self.why}; {self.todo}")

    def __reduce__(self):
        return (type(self), (self.what, self.why, self.todo, self.status))


class OutputLocationError(CliError):
    """An output location that cannot take the outputs (found before any work)."""


class RunFailed(CliError):
    """A run that failed after it started (status 1)."""

    def __init__(self, what, why, todo, status=EXIT_FAILED):
        super().__init__(what, why, todo, status)


def one_line(text):
    return " ".join(str(text).split())


def os_reason(exc):
    """The reason of an OSError in words (strerror), without the Python decoration."""
    return exc.strerror or exc.__class__.__name__


def os_advice(exc):
    if exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        return "free some disk space (or raise the quota) or choose another output folder"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "choose a folder you can write to"
    return "check the path and try again"


def debug_enabled(argv_flag=False):
    return argv_flag or os.environ.get("MULTISPIN_SIM_DEBUG", "") not in ("", "0")


def report(exc, debug=False, stream=None):
    """Print the one line for ``exc`` (and the traceback with ``debug``); return the status."""
    from .scenario import ScenarioError

    stream = stream or sys.stderr
    if debug:
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=stream)
    if isinstance(exc, CliError):
        line, status = exc.line(), exc.status
    elif isinstance(exc, ScenarioError):
        text = str(exc)
        if exc.source and not text.startswith(str(exc.source)):   # which file holds the key
            text = f"{exc.source}: {text}"
        if "; " not in text:
            text += "; fix the value and try again"
        line, status = one_line(f"error: {text}"), EXIT_BAD_INPUT
    elif isinstance(exc, MemoryError):
        line = ("error: memory: the run needs more memory than this machine (or its limit) "
                "gives; use fewer devices or rounds (see limits.max_memory_mb)")
        status = EXIT_FAILED
    elif isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG:
        what = exc.filename or "a file name"  # a name the user gave (an --out, a name key)
        line = one_line(f"error: {str(what)[:80]}...: {os_reason(exc)}; give a shorter name")
        status = EXIT_BAD_INPUT
    elif isinstance(exc, OSError):
        what = exc.filename or "a file"
        line = one_line(f"error: {what}: {os_reason(exc)}; {os_advice(exc)}")
        status = EXIT_FAILED
    elif isinstance(exc, RecursionError):
        line = "error: input: nested too deep; simplify the input"
        status = EXIT_BAD_INPUT
    else:
        where = ""
        tb = traceback.extract_tb(exc.__traceback__)
        if tb:
            where = f" at {os.path.basename(tb[-1].filename)}:{tb[-1].lineno}"
        kept = getattr(exc, "partial_output", None)
        kept = f"; partial output in {kept} (complete: false)" if kept else ""
        line = one_line(f"error: internal error{where}: {type(exc).__name__}: {exc}; rerun with "
                        f"--debug for the traceback and report it{kept}")
        status = EXIT_FAILED
    print(line, file=stream)
    return status
