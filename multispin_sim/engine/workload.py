"""Workload: which devices have work in a round, and the requests behind it.

- ``Saturated``: every device always has work (the paper, docs/model.md section 2).
- ``PoissonArrivals`` / ``TraceArrivals``: requests arrive per device (a SimPy process per device,
  or one replaying a trace) into a FIFO queue per device; a device joins a round only when it has
  a request, and the round serves the head of its queue; the server idles until an arrival
  (``work_event``). Each request needs its length in tokens; the tokens of every round it joins
  count towards it, and it leaves at the end of the round that completes it.

The interface the round loop uses: ``saturated``, ``has_work()``, ``work_event(env)``,
``start_round(now) -> active (K,) bool``, ``remaining() -> (K,) or None``,
``tokens_delivered(now, tokens)``, ``close()`` (the run has ended: no request arrives after),
``finish(now) -> summary dict or None``.

The workloads (``workload.arrivals``) are registered in
``scenario.engine_registries.ARRIVAL_MODELS``.
"""
import csv
import math
from array import array
from collections import deque

import numpy as np

from ..model.link import LINK_MODELS
from ..model.queueing import LENGTH_MODELS
from ..scenario import ScenarioError
from ..scenario.names import MAX_REQUEST_TOKENS
from .reading import read_once


class Arrivals:
    """Interface of a workload: ``from_scenario`` builds it, ``read_inputs`` reads its files."""

    @classmethod
    def read_inputs(cls, scenario, devices):
        """The files this workload of ``devices`` devices needs, read and checked before a run
        writes anything (name -> contents, handed back to ``from_scenario`` as ``inputs``)."""
        return {}

    @classmethod
    def from_scenario(cls, scenario, tasks, rng, env=None, log=None, inputs=None):
        """The workload of K = len(tasks) devices on the ``arrivals`` stream ``rng``; queueing
        workloads start their SimPy processes in ``env`` and write their requests to ``log``."""
        raise NotImplementedError

    def batch_ended(self, now):
        """A batch of the asynchronous protocol ended at ``now`` (nothing to do here)."""


class Saturated(Arrivals):
    """Every device always has tokens to generate (docs/model.md section 2)."""

    saturated = True

    @classmethod
    def from_scenario(cls, scenario, tasks, rng, env=None, log=None, inputs=None):
        return cls(len(tasks))

    def __init__(self, k):
        self._all = np.ones(k, dtype=bool)

    def start_round(self, now):
        return self._all

    def has_work(self):
        return True

    def exhausted(self):
        return False

    def remaining(self):
        return None

    def needed(self):
        return None

    def tokens_delivered(self, now, tokens):
        """Account the tokens each device got from the round that ended at ``now``; returns
        the tokens the work used (all of them here)."""
        return tokens

    def close(self):
        """The run has ended."""

    def finish(self, now):
        return None

    # -- the asynchronous protocol's per-device interface (engine/asynchronous.py) ------------
    def start_device(self, k, now):
        return True

    def device_work_event(self, env, k):
        raise RuntimeError("a saturated device always has work")

    def device_tokens(self, k, now, got):
        """Account the ``got`` tokens device ``k`` received at ``now``; returns those used."""
        return got


class Request:
    """One request: ``length`` tokens wanted by ``device``; times in simulated seconds."""

    __slots__ = ("id", "device", "arrival", "length", "remaining", "start", "first", "rounds")

    def __init__(self, rid, device, arrival, length):
        self.id = rid
        self.device = device
        self.arrival = arrival
        self.length = length
        self.remaining = length
        self.start = math.nan
        self.first = math.nan
        self.rounds = 0


def make_lengths(workload, rng, task, block=256):
    """The request lengths of one device under ``workload.length`` (``next()`` -> tokens;
    the length models are pure draws: ``model.queueing.LENGTH_MODELS``)."""
    return LENGTH_MODELS.lookup(workload.length)(workload, rng, task, block)


def device_generators(rng, k):
    """Two independent generators per device (arrival times, lengths) from the arrivals stream:
    changing one device's rate or the length model leaves every other draw unchanged."""
    children = np.random.SeedSequence(rng.integers(2**63, size=4).tolist()).spawn(2 * k)
    gens = [np.random.Generator(np.random.PCG64(c)) for c in children]
    return gens[0::2], gens[1::2]


class QueueingWorkload:
    """FIFO queues of requests per device; arrivals are added by subclasses' SimPy processes.

    Tracks, per device, the time integrals of the number of requests in the system (waiting or
    in service) and of the number waiting, for time averages (Little's law: the mean number in
    system equals the arrival rate times the mean time in system on the same sample path).
    ``log``: an ``outputs.requests.RequestLog`` (requests.csv and the request statistics).
    """

    saturated = False

    def __init__(self, k, log=None, cap_to_remaining=True, snapshots=512):
        self.k = k
        self.log = log
        self.cap = cap_to_remaining
        self.queues = [deque() for _ in range(k)]
        self.serving = [None] * k
        self.n = [0] * k
        self.n_wait = [0] * k
        self.area = [0.0] * k
        self.wait_area = [0.0] * k
        self.last = [0.0] * k
        self.arrived = [0] * k
        self.completed = [0] * k
        self.in_system = 0
        self.useful_tokens = 0
        self.surplus_tokens = 0   # drafted past a request's end (drafts not capped), discarded
        self.next_id = 0
        self._active = np.zeros(k, dtype=bool)
        self._remaining = np.zeros(k, dtype=np.int64)
        self._serving_idx = []
        self._waiter = None
        self.closed = False   # the run has ended (its cell's; the clock may run on)
        self._snap_every = 1
        self._snap_count = 0
        self._snap_max = snapshots
        self.snapshots = []  # (time, in system per device, arrived per device)
        self.backlog_limit = None   # set when the queues together passed it (guards)
        self._device_waiters = {}  # asynchronous protocol: device -> event of its next arrival
        # called with the device of every request that arrives (a network of cells that share
        # this workload wakes the cell the device is attached to)
        self.listener = None

    # -- bookkeeping ---------------------------------------------------------------------------
    def _account(self, k, now):
        dt = now - self.last[k]
        if dt:
            self.area[k] += self.n[k] * dt
            self.wait_area[k] += self.n_wait[k] * dt
            self.last[k] = now

    def arrive(self, k, now, length):
        """A request of ``length`` tokens arrives at device ``k`` at ``now``."""
        if self.closed:
            return
        self._account(k, now)
        self.queues[k].append(Request(self.next_id, k, now, int(length)))
        self.next_id += 1
        self.n[k] += 1
        self.n_wait[k] += 1
        self.arrived[k] += 1
        self.in_system += 1
        self._active[k] = True
        if self._device_waiters and k in self._device_waiters:
            self._device_waiters.pop(k).succeed()
        if self.listener is not None:
            self.listener(k)
        if self._waiter is not None:
            waiter, self._waiter = self._waiter, None
            waiter.succeed()

    # -- the round loop's interface ------------------------------------------------------------
    def has_work(self):
        return self.in_system > 0

    def close(self):
        """The run has ended: requests that come later are not its requests."""
        self.closed = True

    def exhausted(self):
        """True when no request will ever arrive again."""
        return False

    def work_event(self, env):
        """An event that fires at the next arrival."""
        if self._waiter is None:
            self._waiter = env.event()
        return self._waiter

    def start_round(self, now):
        """A round starts at ``now``: every device with a request joins; a head-of-line request
        not yet in service enters service. Returns the active mask (K,) (do not modify)."""
        serving = self.serving
        idx = []
        for k in range(self.k):
            if self.n[k]:
                idx.append(k)
                if serving[k] is None:
                    self._enter_service(k, now)
        self._serving_idx = idx
        self._snapshot(now)
        return self._active

    def remaining(self):
        """Tokens the head-of-line request of each device still needs (0 when idle), or None
        when draft lengths are not capped to it."""
        return self.needed() if self.cap else None

    def needed(self):
        """Tokens the head-of-line request of each device still needs (0 when idle), whether or
        not draft lengths are capped to it: where requests end (acceptance sessions per request)."""
        return self._remaining.copy()

    def tokens_delivered(self, now, tokens):
        """A round ended at ``now``: each device being served got ``tokens[k]`` tokens.
        Returns the tokens the requests used: a request's surplus over its end (drafts not
        capped to it, ``workload.cap_draft_to_remaining: false``) is discarded."""
        return self.deliver(now, tokens, self._serving_idx)

    def deliver(self, now, tokens, devices):
        """``tokens_delivered`` for the round's ``devices`` (each in service)."""
        used = tokens
        for k in devices:
            got = int(tokens[k])
            useful = self.device_tokens(k, now, got)
            if useful < got:
                used = used.copy() if used is tokens else used
                used[k] = useful
        return used

    # -- the asynchronous protocol's per-device interface (engine/asynchronous.py) ------------
    def start_device(self, k, now):
        """Device ``k`` starts a draft at ``now`` if it has a request (its head-of-line request
        enters service if it was waiting); returns whether it has work."""
        if not self.n[k]:
            return False
        if self.serving[k] is None:
            self._enter_service(k, now)
        self._snapshot(now)
        return True

    def _enter_service(self, k, now):
        """Device ``k``'s head-of-line request, waiting until now, enters service at ``now``."""
        req = self.serving[k] = self.queues[k][0]
        req.start = now
        self._account(k, now)
        self.n_wait[k] -= 1
        self._remaining[k] = req.remaining

    def device_work_event(self, env, k):
        """An event that fires at device ``k``'s next arrival."""
        event = self._device_waiters.get(k)
        if event is None:
            event = self._device_waiters[k] = env.event()
        return event

    def device_tokens(self, k, now, got):
        """Device ``k``'s draft-verify-correct cycle ended at ``now`` with ``got`` tokens;
        returns those its request used (a surplus over its end is discarded)."""
        req = self.serving[k]
        if req.rounds == 0:
            req.first = now
        req.rounds += 1
        useful = min(got, req.remaining)
        self.useful_tokens += useful
        self.surplus_tokens += got - useful
        req.remaining -= got
        if req.remaining > 0:
            self._remaining[k] = req.remaining
            return useful
        self._account(k, now)
        self.queues[k].popleft()
        self.serving[k] = None
        self.n[k] -= 1
        self.completed[k] += 1
        self.in_system -= 1
        self._remaining[k] = 0
        if not self.n[k]:
            self._active[k] = False
        if self.log is not None:
            self.log.write(req.id, k, req.arrival, req.start, req.first, now, req.length,
                           req.rounds)
        return useful

    def _snapshot(self, now):
        self._snap_count += 1
        if self._snap_count < self._snap_every:
            return
        self._snap_count = 0
        self.snapshots.append((now, list(self.n), list(self.arrived)))
        if len(self.snapshots) >= self._snap_max:
            self.snapshots = self.snapshots[::2]
            self._snap_every *= 2

    def finish(self, now):
        """The run ended at ``now``: close the time integrals, write the unfinished requests
        (NaN for what did not happen), and return the request summary."""
        for k in range(self.k):
            self._account(k, now)
        if self.log is None:
            return None
        for k in range(self.k):
            for req in self.queues[k]:
                self.log.write(req.id, k, req.arrival, req.start,
                               req.first if req.rounds else math.nan, math.nan, req.length,
                               req.rounds, finished=False)
        return self.log.summary(
            now, area=self.area, wait_area=self.wait_area, arrived=self.arrived,
            completed=self.completed, in_system=self.n, useful_tokens=self.useful_tokens,
            surplus_tokens=self.surplus_tokens,
            warnings=self.stability_warnings(now))

    def stability_warnings(self, now):
        """Devices whose queue grows without bound, one line each.

        Flagged: a queue at the end longer than chance allows for a stable queue fed by the
        same arrivals (more than 10 and more than 3 sqrt(arrivals) requests) and still growing
        over the second half of the run: the device is served slower than its requests arrive.
        And the queues together, when they passed ``limits.max_backlog_requests``, however
        they share it.
        """
        out = []
        if self.backlog_limit is not None:
            out.append(f"all devices: more than {self.backlog_limit:,} requests in the queues "
                       "together (limits.max_backlog_requests)")
        if not self.snapshots or now <= 0:
            return out
        t_mid, n_mid, _ = min(self.snapshots, key=lambda s: abs(s[0] - now / 2))
        for k in range(self.k):
            arrivals = self.arrived[k]
            if self.n[k] > max(10.0, 3.0 * math.sqrt(arrivals + 1.0)) and self.n[k] > n_mid[k]:
                out.append(f"device {k}: {n_mid[k]} requests at {t_mid:.4g} s, {self.n[k]} at the "
                           f"end ({arrivals / now:.3g} arrivals/s, {self.completed[k] / now:.3g} "
                           "served/s)")
        return out


class PoissonArrivals(QueueingWorkload, Arrivals):
    """Poisson arrivals per device at ``rates`` (K,), one SimPy process per device."""

    @classmethod
    def from_scenario(cls, scenario, tasks, rng, env=None, log=None, inputs=None):
        w = scenario.workload
        rates = np.broadcast_to(np.asarray(w.rate_per_s, dtype=float), (len(tasks),))
        return cls(env, rates, w, tasks, rng, log)

    def __init__(self, env, rates, workload, tasks, rng, log=None):
        k = len(rates)
        super().__init__(k, log, workload.cap_draft_to_remaining)
        times, lengths = device_generators(rng, k)
        for i in range(k):
            env.process(self._arrivals(env, i, float(rates[i]), times[i],
                                       make_lengths(workload, lengths[i], tasks[i])))

    def _arrivals(self, env, k, rate, rng, lengths, block=256):
        while True:
            for gap in (rng.standard_exponential(block) / rate).tolist():
                yield env.timeout(gap)
                self.arrive(k, env.now, lengths.next())


TRACE_KEY = "workload.trace_file"
TRACE_FORMAT = "expected a CSV with a header time_s,device[,tokens] and one arrival per row"


def read_trace(path, k):
    """(times, devices, tokens or None) of a trace CSV with columns time_s, device[, tokens];
    the file is parsed once per ``reading_once`` scope (``engine.reading``), checked against
    ``k`` = devices.count each time."""
    lines, times, devices, tokens, fixed_ok, invalid = read_once(_parse_trace, path)
    bad = ~fixed_ok | (devices < 0) | (devices >= k)
    if bad.any():   # the first row in file order that is out of range for this k
        i = int(np.argmax(bad))   # (every parsed row comes before an unparsable one)
        row = _row_at(path, int(lines[i]))
        raise ScenarioError(TRACE_KEY, f"{path!r} line {lines[i]}: {','.join(row)!r} is out of "
                            f"range", f"expected time_s >= 0, 0 <= device < {k} (devices.count; "
                            "the network's devices where they move between cells) and tokens "
                            f"in 1..{MAX_REQUEST_TOKENS:,}")
    if invalid is not None:
        line, row = invalid
        raise ScenarioError(TRACE_KEY, f"{path!r} line {line}: {','.join(row)!r} is not valid",
                            TRACE_FORMAT)
    order = np.argsort(times, kind="stable")
    return times[order], devices[order], tokens[order] if tokens is not None else None


def _parse_trace(path):
    """What a trace CSV says independently of devices.count: its rows up to the first one that
    does not parse, as (line numbers, times, devices (-1 for a negative or huge index), tokens or
    None (0 where out of range), whether time and tokens are in range, (line, row) of the first
    unparsable row or None). The file is streamed into typed arrays rather than held as rows:
    a trace of millions of arrivals would otherwise take about 250 bytes a row while parsing."""
    try:
        # utf-8-sig: a byte-order mark (as spreadsheets write) is not part of the first column
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f)
            try:
                return _parse_rows(reader, path)
            except csv.Error as exc:   # a field over csv's size limit, a NUL in a field, ...
                raise ScenarioError(TRACE_KEY, f"{path!r} line {reader.line_num}: {exc}",
                                    TRACE_FORMAT) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(TRACE_KEY, f"cannot read {path!r}: {exc}", TRACE_FORMAT) from None


def _parse_rows(reader, path):
    first = next(reader, None)
    if first is None:
        raise ScenarioError(TRACE_KEY, f"{path!r} is empty", TRACE_FORMAT)
    header = [h.strip() for h in first]
    if "time_s" not in header or "device" not in header:
        raise ScenarioError(TRACE_KEY, f"{path!r} has columns {header}", TRACE_FORMAT)
    it, idev = header.index("time_s"), header.index("device")
    itok = header.index("tokens") if "tokens" in header else None
    lines, times, devices = array("q"), array("d"), array("q")
    tokens, ok = array("q"), array("b")
    invalid = None
    for line, row in _numbered(reader):
        if not row or all(not c.strip() for c in row):
            continue
        try:
            t, d = float(row[it]), int(row[idev])
            n = int(row[itok]) if itok is not None else 0
        except (ValueError, IndexError):
            invalid = (line, row)
            break
        lines.append(line)
        times.append(t)
        fine = math.isfinite(t) and t >= 0 and (itok is None or 1 <= n <= MAX_REQUEST_TOKENS)
        devices.append(d if 0 <= d < 2**62 else -1)   # (-1: out of range for every count)
        tokens.append(n if fine else 0)
        ok.append(fine)
    tokens = np.array(tokens, dtype=np.int64) if itok is not None else None
    return (np.array(lines, dtype=np.int64), np.array(times, dtype=float),
            np.array(devices, dtype=np.int64), tokens, np.array(ok, dtype=bool), invalid)


def _numbered(reader):
    """(line, row) of each row ``reader`` yields, ``line`` the file line the row begins on (a
    quoted field may span several; ``line_num`` counts the lines read so far)."""
    start = reader.line_num + 1
    for row in reader:
        yield start, row
        start = reader.line_num + 1


def _row_at(path, line):
    """The CSV row that begins on ``line`` (1-based) of ``path``, read again only to quote it
    in an error; [] where the file no longer holds it (changed since it was parsed, in a sweep
    that reads it once), so the error is still the one line."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            return next((row for n, row in _numbered(csv.reader(f)) if n == line), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return []


class TraceArrivals(QueueingWorkload, Arrivals):
    """Arrivals replayed from a trace (times, devices, tokens or None: lengths then drawn)."""

    @classmethod
    def read_inputs(cls, scenario, devices):
        return {"trace": read_trace(scenario.workload.trace_file, devices)}

    @classmethod
    def from_scenario(cls, scenario, tasks, rng, env=None, log=None, inputs=None):
        trace = (inputs or {}).get("trace") or read_trace(scenario.workload.trace_file, len(tasks))
        return cls(env, trace, scenario.workload, tasks, rng, log)

    def __init__(self, env, trace, workload, tasks, rng, log=None):
        k = len(tasks)
        super().__init__(k, log, workload.cap_draft_to_remaining)
        _, gens = device_generators(rng, k)
        self._lengths = [make_lengths(workload, gens[i], tasks[i]) for i in range(k)]
        self._left = len(trace[0])
        env.process(self._replay(env, *trace))

    def exhausted(self):
        return self._left == 0

    def _replay(self, env, times, devices, tokens):
        for i, (t, k) in enumerate(zip(times.tolist(), devices.tolist())):
            if t > env.now:
                yield env.timeout(t - env.now)
            n = int(tokens[i]) if tokens is not None else self._lengths[k].next()
            self._left -= 1
            self.arrive(k, env.now, n)


def queue_warnings(scenario, requests, longest, sim_time):
    """summary.json's warnings of a queueing run (strings): queues that grow without bound, and
    a round of ``longest`` seconds that takes more than 5% of the ``sim_time`` seconds where the
    correction delay has an infinite mean (the paper's link, one fading block per round)."""
    warnings = []
    # the devices whose own queue grows (a stop at the backlog limit is the stop reason)
    devices = ", ".join(w.split(":")[0].split()[1] for w in requests["warnings"]
                        if w.startswith("device "))
    if devices:
        warnings.append(f"queues grow without bound at device(s) {devices}: requests arrive "
                        "faster than these devices are served, so their latencies grow with the "
                        "run length (see requests.warnings in summary.json)")
    heavy_tail = (LINK_MODELS.lookup(scenario.link.model).ideal
                  and scenario.channel.coherence_time_ms is None)
    if heavy_tail and sim_time > 0 and longest > 0.05 * sim_time:
        warnings.append(f"one round took {longest:.4g} s ({longest / sim_time:.0%} of the run): "
                        "a correction in a deep fade; with one fading block per round the "
                        "correction delay has an infinite mean (docs/model.md section 8), so "
                        "queues and means depend on such rounds -- channel.coherence_time_ms "
                        "bounds them physically")
    return warnings
