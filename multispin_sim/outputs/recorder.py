"""Where a CSV row is written: the per-round and per-device-round records of a run.

``rounds.csv`` (one row per round) and ``device_rounds.csv`` (one row per active device per
round) stream to disk in chunks while the run goes; ``RunStatistics`` keeps the totals.
``requests.csv`` (queueing workloads) is written by ``outputs.requests.RequestLog``.

Optional ``device_rounds.csv`` columns: ``planned_delay_s`` (when fading blocks are shorter than
rounds: the delay the decision planned on the CSI at its start, beside the realised
``delay_s``), ``distance_m`` (moving devices: the distance at the round start), and the
per-device columns a component declares (``extra``: e.g. the NR link's ``harq_transmissions``,
``harq_failures``, ``outages``). Energy columns (slowdown and joules per phase):
``outputs.energy``.

Recording a round only copies its (K,) arrays and scalars into one row of preallocated block
buffers (one (rounds, K) array per per-device quantity). The rows of the CSVs, the statistics
and the energy totals are computed for a whole block at once, vectorised, when the block is
full, when ``stats`` (or ``energy``) is read, and at ``close()``: the same values, summed in the
same order, as computing them round by round (tests/outputs/test_recorder.py).
"""
import dataclasses
from typing import Any, Optional

import numpy as np

from .energy import ROUND_ENERGY_COLUMNS
from .records import ChunkedCsv, CsvStream, Labels, WriterProcess
from .statistics import RunStatistics

ROUND_COLUMNS = {
    "round": np.int64, "start_s": float, "draft_s": float, "verify_s": float, "comm_s": float,
    "duration_s": float, "batch_size": np.int64, "n_rejected": np.int64, "n_ul": np.int64,
    "n_dl": np.int64, "tokens": np.int64,
}
DEVICE_ROUND_COLUMNS = {
    "round": np.int64, "device": np.int64, "draft_len": np.int64, "accepted": np.int64,
    "tokens": np.int64, "rejected": np.int64, "mode": object, "power_w": float,
    "bandwidth_hz": float, "delay_s": float, "gain_ul": float, "gain_dl": float,
}
DEVICE_COLUMNS = ("device", "task", "alpha", "draft_latency_s", "distance_m", "pathloss_gain",
                  "ul_power_w", "tokens", "goodput_tps")
_MODE_LABELS = ("", "ul", "dl")  # mode 0 (none), 1 (UL), 2 (DL)
BLOCK_VALUES = 1 << 17  # per-device values per buffer of a block (rounds x K), at most


@dataclasses.dataclass(slots=True)
class RoundRecord:
    """One finished round (or asynchronous batch) as the engine hands it to ``Recorder.round``.

    Times in seconds: ``start`` of the round, its phases ``draft``, ``verify``, ``comm`` and its
    ``duration``; ``advance``: the run time it accounts for in the statistics (asynchronous
    batches overlap: the time since the previous record; None: ``duration``). The arrays are
    (K,) over all devices (``g_dl`` may be ``g_ul`` itself on a reciprocal channel);
    ``bandwidth``: each correction's bandwidth (Hz). Optional: ``planned`` delays (CSI that
    changes within a round), ``distance`` (moving devices), ``draft_each`` (per-device drafting
    time, energy records), ``span`` (per-device time an energy row accounts for, where devices'
    cycles differ: an asynchronous batch's, from each draft's start to its outcome's end; None:
    ``duration``), ``slowdown`` (throttled drafting), ``extra`` (name -> (K,) column a
    component adds), ``verified``: the devices in the verification batch (None: the active
    ones; a device that only sends a correction carried from the last round is active, not
    verified). ``bandwidth`` may be (K,) when corrections have bands of their own (carried ones).
    """

    round: int
    start: float
    draft: float
    verify: float
    comm: float
    duration: float
    active: Any
    gamma: Any
    accepted: Any
    tokens: Any
    rejected: Any
    mode: Any
    power: Any
    bandwidth: float
    delay: Any
    g_ul: Any
    g_dl: Any
    planned: Any = None
    distance: Any = None
    draft_each: Any = None
    span: Any = None
    slowdown: Any = None
    advance: Optional[float] = None
    extra: Optional[dict] = None
    verified: Optional[int] = None


class Recorder:
    """Receives each finished round from the engine (a ``RoundRecord``) and writes it out."""

    def __init__(self, folder, k, chunk_rounds=1024, planned=False, distance=False,
                 writer_process=False, energy=None, extra=None):
        self.folder = folder
        self.k = k
        self._stats = RunStatistics(k)
        self.writer = WriterProcess() if writer_process and WriterProcess.available() else None
        # energy: an outputs.energy.EnergyAccount (adds the energy columns), or None
        self._energy = energy
        round_columns = dict(ROUND_COLUMNS) | (ROUND_ENERGY_COLUMNS if energy else {})
        self.rounds_csv = ChunkedCsv(folder / "rounds.csv", round_columns, writer=self.writer)
        columns = dict(DEVICE_ROUND_COLUMNS)
        if energy is not None:
            columns |= energy.device_columns_spec
        if planned:
            columns["planned_delay_s"] = float
        if distance:
            columns["distance_m"] = float
        self._extra = dict(extra or {})  # name -> dtype: per-device columns a component adds
        columns.update(self._extra)
        self._planned = planned
        self._distance = distance
        self.device_csv = ChunkedCsv(folder / "device_rounds.csv", columns, writer=self.writer)
        self._index = np.arange(k)
        # the block: row i of every buffer is the i-th round since the last flush
        self._capacity = rounds = max(1, min(chunk_rounds, BLOCK_VALUES // max(k, 1)))
        shape = (rounds, k)
        self._active = np.zeros(shape, dtype=bool)
        self._gamma = np.zeros(shape, dtype=np.int64)
        self._accepted = np.zeros(shape, dtype=np.int64)
        self._tokens = np.zeros(shape, dtype=np.int64)
        self._rejected = np.zeros(shape, dtype=bool)
        self._mode = np.zeros(shape, dtype=np.int8)  # 0 (none), 1 (UL), 2 (DL)
        self._power = np.zeros(shape)
        self._delay = np.zeros(shape)
        self._g_ul = np.zeros(shape)
        self._g_dl = np.zeros(shape)
        if energy is not None:
            self._draft_each = np.zeros(shape)
            self._span = np.zeros(shape)
            self._spans = False   # some record carried per-device spans (asynchronous batches)
            self._slowdown = np.ones(shape)
            self._thermal = energy.thermal
            self._temperature = np.zeros(shape) if energy.thermal is not None else None
        self._planned_delay = np.zeros(shape) if planned else None
        self._distance_m = np.zeros(shape) if distance else None
        self._extra_values = {name: np.zeros(shape, dtype=dt) for name, dt in self._extra.items()}
        # per round: (round, start, draft, verify, comm, duration, advance, bandwidth,
        #            g_dl is g_ul, no slowdown, verified)
        self._scalars = []
        self._bandwidth_each = {}   # row -> (K,) bandwidths of a round whose bands differ
        self._idle = []      # (rounds recorded before it in the block, seconds)
        self._n = 0          # rounds in the block
        self._done = 0       # of which already in the statistics and turned into columns
        self._device_parts = []
        self._round_parts = []
        # called after each round is recorded: engine parts that count totals before a round
        # is recorded keep them as of the last record (``engine.guards.RecordedTotals``)
        self.commits = []

    @property
    def stats(self):
        """The run's ``RunStatistics``, up to date with every round recorded so far."""
        self._process()
        return self._stats

    @property
    def energy(self):
        """The ``EnergyAccount`` (None without energy records), its totals up to date."""
        if self._energy is not None:
            self._process()
        return self._energy

    def idle(self, duration):
        self._idle.append((self._n, duration))

    def round(self, record):
        """Record one ``RoundRecord``: its arrays are copied (the caller may reuse them)."""
        r = record
        i = self._n
        self._active[i] = r.active
        self._gamma[i] = r.gamma
        self._accepted[i] = r.accepted
        self._tokens[i] = r.tokens
        self._rejected[i] = r.rejected
        self._mode[i] = r.mode
        self._power[i] = r.power
        self._delay[i] = r.delay
        self._g_ul[i] = r.g_ul
        same_dl = r.g_dl is r.g_ul
        if not same_dl:  # a reciprocal channel passes one array for both
            self._g_dl[i] = r.g_dl
        bandwidth = r.bandwidth
        if isinstance(bandwidth, np.ndarray):   # per device: kept aside (carried corrections)
            self._bandwidth_each[i] = np.array(bandwidth, dtype=float)
            bandwidth = 0.0
        self._scalars.append((r.round, r.start, r.draft, r.verify, r.comm, r.duration,
                              r.duration if r.advance is None else r.advance, bandwidth,
                              same_dl, r.slowdown is None, r.verified))
        if self._energy is not None:
            self._draft_each[i] = r.draft_each
            if r.span is not None:
                self._span[i], self._spans = r.span, True
            if r.slowdown is not None:
                self._slowdown[i] = r.slowdown
            if self._temperature is not None:
                self._temperature[i] = self._thermal.temperature  # at the round's end
        if self._planned:
            self._planned_delay[i] = r.planned
            # corrections sent this round (= the rejected ones, unless a policy deferred some)
            self._stats.add_delays(r.planned, r.delay, np.asarray(r.mode) > 0, r.comm)
        if self._distance:
            self._distance_m[i] = r.distance
        if r.extra is not None:
            values = self._extra_values
            for name, column in r.extra.items():
                values[name][i] = column
        self._n = i + 1
        for commit in self.commits:
            commit()
        if self._n == self._capacity:
            self.flush()

    def _process(self):
        """Statistics, energy totals and CSV columns of the rounds recorded since the last call."""
        lo, hi = self._done, self._n
        idle, self._idle = self._idle, []
        if hi == lo:
            for _, seconds in idle:
                self._stats.add_idle(seconds)
            return
        k = self.k
        (rnd, start, draft, verify, comm, duration, advance, bandwidth, dl_same,
         no_slowdown, verified) = zip(*self._scalars[lo:hi])
        active = self._active[lo:hi]
        mode = self._mode[lo:hi]
        tokens = self._tokens[lo:hi]
        gamma = self._gamma[lo:hi]
        n_active, n_rej, n_ul, n_dl = (
            np.count_nonzero(x, axis=1).astype(np.int64, copy=False)
            for x in (active, self._rejected[lo:hi], mode == 1, mode == 2))
        totals = tokens.sum(axis=1)
        batch = n_active
        if any(v is not None for v in verified):
            batch = np.array([n if v is None else v for n, v in zip(n_active.tolist(), verified)],
                             dtype=np.int64)
        self._stats.add_rounds(
            advance, comm, totals.tolist(), tokens.sum(axis=0),
            int(np.where(active, gamma, 0).sum()), int(batch.sum()), int(n_rej.sum()),
            int(n_ul.sum()), int(n_dl.sum()), idle=[(j - lo, s) for j, s in idle])
        rejected = self._rejected[lo:hi]
        if n_active.sum() == active.size:
            self._stats.agreements.add(self._accepted[lo:hi].sum(axis=0),
                                       np.count_nonzero(rejected, axis=0))
        else:
            self._stats.agreements.add(np.where(active, self._accepted[lo:hi], 0).sum(axis=0),
                                       np.count_nonzero(rejected & active, axis=0))

        rounds = np.array(rnd, dtype=np.int64)
        durations = np.array(duration, dtype=float)
        verify = np.array(verify, dtype=float)
        rows, devices = np.nonzero(active)
        # the active entries, row by row: with every device active, the rows laid end to end
        # (a view, no copy: the parts are written before these rows are recorded over)
        pick = np.ravel if len(devices) == active.size else (lambda x: x[active])
        band = np.where(n_rej > 0, np.array(bandwidth, dtype=float), 0.0)
        bw = np.where(mode > 0, band[:, None], 0.0)
        for row in [i for i in self._bandwidth_each if lo <= i < hi]:
            bw[row - lo] = np.where(mode[row - lo] > 0, self._bandwidth_each.pop(row), 0.0)
        values = {
            "round": rounds[rows], "device": devices, "draft_len": pick(gamma),
            "accepted": pick(self._accepted[lo:hi]), "tokens": pick(tokens),
            "rejected": pick(self._rejected[lo:hi]).astype(np.int64),
            "mode": Labels(pick(mode), _MODE_LABELS),
            "power_w": pick(self._power[lo:hi]),
            "bandwidth_hz": pick(bw),
            "delay_s": pick(self._delay[lo:hi]), "gain_ul": pick(self._g_ul[lo:hi]),
            "gain_dl": pick(np.where(np.array(dl_same)[:, None], self._g_ul[lo:hi],
                                     self._g_dl[lo:hi])),
        }
        round_columns = [rounds, np.array(start, dtype=float), np.array(draft, dtype=float),
                         verify, np.array(comm, dtype=float), durations, batch, n_rej, n_ul,
                         n_dl, totals]
        if self._energy is not None:
            slowdown = (None if all(no_slowdown) else
                        np.where(np.array(no_slowdown)[:, None], 1.0, self._slowdown[lo:hi]))
            per_device, per_round = self._energy.rounds(
                active, n_active == k, self._draft_each[lo:hi], mode, self._power[lo:hi],
                self._delay[lo:hi], self._span[lo:hi] if self._spans else durations, verify,
                link={name: column[lo:hi] for name, column in self._extra_values.items()},
                slowdown=slowdown)
            values["slowdown"] = pick(np.ones((hi - lo, k)) if slowdown is None else slowdown)
            for name, column in per_device.items():
                values[name] = pick(column)
            if self._temperature is not None:
                values["temperature_c"] = pick(self._temperature[lo:hi])
            round_columns += per_round
        if self._planned:
            values["planned_delay_s"] = pick(self._planned_delay[lo:hi])
        if self._distance:
            values["distance_m"] = pick(self._distance_m[lo:hi])
        for name, column in self._extra_values.items():
            values[name] = pick(column[lo:hi])
        self._device_parts.append([values[name] for name in self.device_csv.names])
        self._round_parts.append(round_columns)
        self._done = hi

    def flush(self):
        """Write every round recorded so far (whole rows in both tables)."""
        self._process()
        for csv, parts in ((self.rounds_csv, self._round_parts),
                           (self.device_csv, self._device_parts)):
            if len(parts) == 1:
                csv.write(parts[0])
            elif parts:
                csv.write([_concatenate(column) for column in zip(*parts)])
        self._round_parts, self._device_parts = [], []
        self._scalars = []
        self._n = self._done = 0

    def close(self):
        """Flush every record; with a writer process, wait until it has written them all."""
        self.flush()
        self.rounds_csv.close()
        self.device_csv.close()
        if self.writer is not None:
            self.writer.close()

    def write_devices(self, population, extra=None):
        """devices.csv; ``extra``: more columns (name -> (K,) values) after the standard ones."""
        system = population.system
        stats = self.stats
        time = stats.sim_time
        goodput = stats.device_tokens / time if time > 0 else np.zeros(self.k)
        extra = dict(extra or {})
        energy = self.energy
        if energy is not None:
            modes = population.power_mode or (None,) * self.k
            extra.update({"power_mode": np.array([m or "" for m in modes], dtype=object),
                          "draft_power_w": energy.powers.draft_w,
                          **energy.device_columns(stats.device_tokens)})
        devices = CsvStream(self.folder / "devices.csv", DEVICE_COLUMNS + tuple(extra))
        devices.append(
            device=self._index, task=np.array(population.tasks, dtype=object), alpha=system.alpha,
            draft_latency_s=system.draft_latency_s, distance_m=population.distance_m,
            pathloss_gain=system.pathloss, ul_power_w=system.p_ul_w, tokens=stats.device_tokens,
            goodput_tps=goodput, **extra,
        )
        devices.close()


def _concatenate(parts):
    if isinstance(parts[0], Labels):
        return Labels(np.concatenate([p.codes for p in parts]), parts[0].labels)
    return np.concatenate(parts)
