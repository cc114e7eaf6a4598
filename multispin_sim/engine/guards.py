"""What stops a run early and how it still leaves valid outputs.

- ``StopSignals``: SIGINT, SIGTERM and SIGHUP. The first one asks the round loop to stop at the
  next round boundary (the outputs stay complete up to that round, ``complete: false``). A
  second one stops at once (``KeyboardInterrupt`` out of the SimPy loop), except while a round
  is being recorded (it then stops at that round's end, a few microseconds later, so both CSV
  tables keep whole rows and the same rounds) and during the shutdown (writing the CSV tails
  and the summary, well under a second, then the process exits).
- ``guard_backlog``: a queueing workload whose backlog passes ``limits.max_backlog_requests``
  stops the run (``complete: false``, with the reason) instead of growing without bound.
- ``LimitReached``: raised by engine parts when a bound of ``limits`` is reached mid-round
  (e.g. a correction that needs more fading blocks than ``limits.max_blocks_per_transmission``);
  the run stops there and still writes its outputs.
- ``RecordedTotals``: what a run stopped mid-round (a limit, a second signal) had counted of
  its unrecorded last round is taken back, so that every total describes the recorded rounds.
- ``die_with_parent``: worker processes (sweeps) never outlive the process that started them.
"""
from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
from pathlib import Path

from ..errors import RECEIVED, STOP_SIGNALS, catch
from ..model.mobility import LegLimit


_OUTPUTS = str(Path(__file__).resolve().parent.parent / "outputs")


class LimitReached(Exception):
    """A bound of ``limits`` was reached during a run: ``reason`` and what to do."""

    def __init__(self, reason, todo=""):
        self.reason, self.todo = reason, todo
        super().__init__(reason, todo)  # both in args: SimPy re-raises type(exc)(*exc.args)

    def __str__(self):
        return self.reason

    def stop(self, loop):
        """Stop ``loop`` (its run, or the cells' loops together) as this limit says: flagged
        incomplete with the first reason and what to do."""
        loop.stop_requested = True
        loop.stop_reason = loop.stop_reason or self.reason
        loop.stop_todo = self.todo


NOT_FINITE_TODO = ("check the scenario's extreme values (multispin-sim keys shows each key's "
                   "limits) and report the scenario if they are all ordinary")


def _legs(call, *args):
    """``call(*args)``, a walk of more legs than ``limits.max_legs_per_round`` stopping the
    run (``LimitReached``)."""
    try:
        return call(*args)
    except LegLimit as exc:
        raise LimitReached(f"{exc} (limits.max_legs_per_round)", LIMIT_TODO["legs"]) from None


def walk_to(walk, t):
    """``walk.advance(t)``: the positions (K, 2) in metres at ``t``, within the legs' limit."""
    return _legs(walk.advance, t)


class LegGuard:
    """``clock(t, device=None)`` (a walk's distance at an instant the walk has not reached,
    ``model.mobility.Wavelengths``) that stops the run as ``walk_to`` does past the legs'
    limit."""

    def __init__(self, clock):
        self.clock = clock

    def __call__(self, t, device=None):
        return _legs(self.clock, t, device)


def stop_if_not_finite(now, index):
    """A round that ends at a time that is not finite (an infinite delay, a NaN gain): the run
    stops after recording it (``complete: false``), since every later round would be
    meaningless. Value limits refuse the known causes up front; this is the last guard."""
    if not math.isfinite(now):
        raise LimitReached(f"round {index} ended at simulated time {now} (not finite)",
                           NOT_FINITE_TODO)


def _recording(frame):
    """True when the interrupted code is writing records (outputs/...): a round half-recorded."""
    while frame is not None:
        if frame.f_code.co_filename.startswith(_OUTPUTS):
            return True
        frame = frame.f_back
    return False


class StopSignals:
    """Installs the stop handlers (main thread only) for the duration of a run.

    ``signum``: the first signal received (None if none), also one that came during the
    shutdown (the caller honours it: exit status 128 + N, a sweep stops); ``loop``: the round
    loop to stop (may be attached after the handlers are installed: a signal before it exists
    stops the run before its first round). ``shutdown``: set when the loop has ended (the
    outputs are being written): a signal from then on changes nothing of the run (a run whose
    every round ran stays complete) and waits for the outputs.
    """

    def __init__(self):
        self.signum = None
        self.stopped_by = None   # the first signal before the shutdown: the one that stopped
        self.stops = 0           # signals before the shutdown
        self.loop = None
        self.shutdown = False
        self._previous = {}

    def attach(self, loop):
        self.loop = loop
        if self.stopped_by is not None:
            loop.stop_requested = True

    def _handler(self, signum, frame):
        RECEIVED.append(signum)
        if self.signum is None:
            self.signum = signum
        if self.shutdown:   # the loop has ended: the run is what it made, the outputs are written
            return
        self.stops += 1
        if self.stopped_by is None:
            self.stopped_by = signum
            if self.loop is not None:
                self.loop.stop_requested = True
            return
        if self.loop is None or _recording(frame):
            return
        raise KeyboardInterrupt

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._previous = catch(STOP_SIGNALS, self._handler)
        return self

    def __exit__(self, *exc):
        for s, previous in self._previous.items():
            signal.signal(s, previous)
        self._previous = {}
        return False

    @property
    def reason(self):
        """The stop reason of a run a signal stopped (None: none came before the shutdown)."""
        if self.stopped_by is None:
            return None
        name = signal.Signals(self.stopped_by).name
        return f"stopped by {name}" + (" (twice: stopped mid-round)" if self.stops > 1 else "")


class RecordedTotals:
    """Counters that engine parts update before a round is recorded (a correction's HARQ
    transmissions and fading blocks as it is sent, a deferral as it is decided), as of the last
    recorded round: ``commit()`` (called by the recorder after each round it records) keeps
    their values, ``restore()`` puts them back. A run stopped mid-round (``LimitReached``, a
    second stop signal) so reports the rounds its records hold, nothing of the round it left
    unrecorded; after a whole round (or a complete run) ``restore`` changes nothing.

    ``parts``: (object, attribute names) pairs, each component's ``counters()``. The values are
    kept, not copied: attributes holding numbers, or objects replaced rather than changed.
    """

    def __init__(self, parts):
        self.parts = list(parts)
        self.commit()

    def __bool__(self):
        return bool(self.parts)

    def commit(self):
        self.saved = [[getattr(obj, n) for n in names] for obj, names in self.parts]

    def restore(self):
        for (obj, names), values in zip(self.parts, self.saved):
            for n, v in zip(names, values):
                setattr(obj, n, v)


def guard_backlog(workload, loop, limit):
    """Stop the run when more than ``limit`` requests wait in all queues together.

    At the limit the loop stops at the next round boundary; if arrivals go on within that round
    up to 1.25 x the limit, ``LimitReached`` stops it at once.
    """
    arrive = workload.arrive
    hard = limit + max(limit // 4, 1)
    reason = (f"the queues hold more than {limit:,} requests (limits.max_backlog_requests): "
              "requests arrive faster than they are served")

    def guarded(k, now, length):
        arrive(k, now, length)
        n = workload.in_system
        if n >= limit:
            workload.backlog_limit = limit
            if loop.stop_reason is None:
                loop.stop_reason, loop.stop_todo = reason, LIMIT_TODO["backlog"]
                loop.stop_requested = True
            if n >= hard:
                raise LimitReached(reason, LIMIT_TODO["backlog"])

    workload.arrive = guarded


LIMIT_TODO = {
    "backlog": "lower workload.rate_per_s below the service rate, or raise "
               "limits.max_backlog_requests (the summary has the run up to the stop)",
    "blocks": "raise limits.max_blocks_per_transmission, or use a longer "
              "channel.coherence_time_ms or shorter distances",
    "legs": "check the link budget (a round this long means almost no rate: power, noise, "
            "distances, bandwidth), or raise limits.max_legs_per_round",
    "link_blocks": "raise the power, shorten the distances or lower the noise (the SNR is rarely "
                   "above the lowest MCS), or raise limits.max_blocks_per_transmission",
}


def die_with_parent(parent_pid=None):
    """Make this (worker) process die when its parent does (Linux: PR_SET_PDEATHSIG; elsewhere
    a watchdog thread polling the parent pid). Stop signals are left to the parent: the worker
    ignores SIGINT, SIGTERM and SIGHUP between runs (a run installs its own handlers)."""
    parent_pid = os.getppid() if parent_pid is None else parent_pid
    for s in STOP_SIGNALS:
        try:
            signal.signal(s, signal.SIG_IGN)
        except (ValueError, OSError):
            pass
    if os.getppid() != parent_pid:  # the parent died before this worker got here
        os._exit(1)
    armed = False
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(1, signal.SIGKILL, 0, 0, 0) == 0  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            armed = False
        if armed and os.getppid() != parent_pid:  # the parent died before prctl
            os._exit(1)
    if not armed:
        watch_parent(parent_pid)


def watch_parent(pid, period_s=1.0):
    """A daemon thread that ends this process when its parent ``pid`` is gone (this process is
    then re-parented, so ``getppid`` changes; a dead but unreaped parent counts as gone)."""
    def watch():
        while os.getppid() == pid:
            time.sleep(period_s)
        os._exit(1)

    threading.Thread(target=watch, name="multispin-watch-parent", daemon=True).start()
