"""Where a CSV row is written: the per-round and per-device-round records of a run.

``rounds.csv`` (one row per round) and ``device_rounds.csv`` (one row per active device per
round) stream to disk in chunks while the run goes; ``RunStatistics`` keeps the totals.
``requests.csv`` (queueing workloads) is written by ``outputs.requests.RequestLog``.

Optional ``device_rounds.csv`` columns: ``planned_delay_s`` (when fading blocks are shorter than
rounds: the delay the decision planned on the CSI at its start, beside the realised
``delay_s``), ``distance_m`` (moving devices: the distance at the round start), and the
per-device columns a component declares (``extra``: e.g. the NR link's ``harq_transmissions``,
``harq_failures``, ``outages``). Energy columns (slowdown and joules per phase): ``outputs.energy``.
"""
import numpy as np

from .energy import ROUND_ENERGY_COLUMNS
from .records import ChunkedCsv, CsvStream, WriterProcess
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
_MODE_STR = np.array(["", "ul", "dl"], dtype=object)


class Recorder:
    """Receives each finished round from the engine and writes it out."""

    def __init__(self, folder, k, chunk_rounds=1024, planned=False, distance=False,
                 writer_process=False, energy=None, extra=None):
        self.folder = folder
        self.k = k
        self.stats = RunStatistics(k)
        self.writer = WriterProcess() if writer_process and WriterProcess.available() else None
        # energy: an outputs.energy.EnergyAccount (adds the energy columns), or None
        self.energy = energy
        round_columns = dict(ROUND_COLUMNS) | (ROUND_ENERGY_COLUMNS if energy else {})
        self.rounds_csv = ChunkedCsv(folder / "rounds.csv", round_columns, capacity=chunk_rounds,
                                     writer=self.writer)
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
        self.device_csv = ChunkedCsv(folder / "device_rounds.csv", columns,
                                     capacity=chunk_rounds * k, writer=self.writer)
        self._index = np.arange(k)

    def idle(self, duration):
        self.stats.add_idle(duration)

    def round(self, *, round, start, draft, verify, comm, duration, active, gamma, accepted,
              tokens, rejected, mode, power, bandwidth, delay, g_ul, g_dl, planned=None,
              distance=None, draft_each=None, slowdown=None, advance=None, extra=None):
        """``advance``: the run time this record accounts for in the statistics (asynchronous
        batches overlap: the time since the previous record; default ``duration``)."""
        n_ul = int(np.count_nonzero(mode == 1))
        n_dl = int(np.count_nonzero(mode == 2))
        n_active = int(np.count_nonzero(active))
        n_rej = int(np.count_nonzero(rejected))
        total = int(tokens.sum())
        self.stats.add_round(duration if advance is None else advance, comm, tokens, total, gamma, active, n_active, n_rej, n_ul, n_dl)
        # in ROUND_COLUMNS order
        row = (round, start, draft, verify, comm, duration, n_active, n_rej, n_ul, n_dl, total)
        if self._planned:
            # corrections sent this round (= the rejected ones, unless a policy deferred some)
            self.stats.add_delays(planned, delay, mode > 0, comm)
        if n_active == self.k:
            sel = slice(None)
        else:
            sel = active
            mode, power, delay, g_ul, g_dl = mode[sel], power[sel], delay[sel], g_ul[sel], g_dl[sel]
            gamma, accepted, tokens, rejected = gamma[sel], accepted[sel], tokens[sel], rejected[sel]
        values = {
            "round": round, "device": self._index[sel], "draft_len": gamma, "accepted": accepted,
            "tokens": tokens, "rejected": rejected, "mode": _MODE_STR[mode], "power_w": power,
            "bandwidth_hz": np.where(mode > 0, bandwidth, 0.0) if n_rej else 0.0,
            "delay_s": delay, "gain_ul": g_ul, "gain_dl": g_dl,
        }
        if self.energy is not None:
            energy_columns, energy_row = self.energy.round(
                sel, draft_each, mode, power, delay, duration, verify, slowdown)
            values.update(energy_columns)
            row += energy_row
        self.rounds_csv.put_row(row)
        if self._planned:
            values["planned_delay_s"] = planned[sel]
        if self._distance:
            values["distance_m"] = distance[sel]
        if extra is not None:
            for name, column in extra.items():
                values[name] = column[sel]
        self.device_csv.put(n_active, values)

    def close(self):
        """Flush every record; with a writer process, wait until it has written them all."""
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
        if self.energy is not None:
            modes = population.power_mode or (None,) * self.k
            extra.update({"power_mode": np.array([m or "" for m in modes], dtype=object),
                          "draft_power_w": self.energy.powers.draft_w,
                          **self.energy.device_columns(stats.device_tokens)})
        devices = CsvStream(self.folder / "devices.csv", DEVICE_COLUMNS + tuple(extra))
        devices.append(
            device=self._index, task=np.array(population.tasks, dtype=object), alpha=system.alpha,
            draft_latency_s=system.draft_latency_s, distance_m=population.distance_m,
            pathloss_gain=system.pathloss, ul_power_w=system.p_ul_w, tokens=stats.device_tokens,
            goodput_tps=goodput, **extra,
        )
        devices.close()
