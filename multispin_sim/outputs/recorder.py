"""Where a CSV row is written: the per-round and per-device-round records of a run.

``rounds.csv`` (one row per round) and ``device_rounds.csv`` (one row per active device per
round) stream to disk in chunks while the run goes; ``RunStatistics`` keeps the totals.
"""
import numpy as np

from .records import CsvStream
from .statistics import RunStatistics

ROUND_COLUMNS = ("round", "start_s", "draft_s", "verify_s", "comm_s", "duration_s",
                 "batch_size", "n_rejected", "n_ul", "n_dl", "tokens")
DEVICE_ROUND_COLUMNS = ("round", "device", "draft_len", "accepted", "tokens", "rejected", "mode",
                        "power_w", "bandwidth_hz", "delay_s", "gain_ul", "gain_dl")
DEVICE_COLUMNS = ("device", "task", "alpha", "draft_latency_s", "distance_m", "pathloss_gain",
                  "ul_power_w", "tokens", "goodput_tps")
_MODE_STR = np.array(["", "ul", "dl"], dtype=object)


class Recorder:
    """Receives each finished round from the engine and writes it out."""

    def __init__(self, folder, k, chunk_rounds=512):
        self.folder = folder
        self.k = k
        self.stats = RunStatistics(k)
        self.rounds_csv = CsvStream(folder / "rounds.csv", ROUND_COLUMNS, chunk=chunk_rounds)
        self.device_csv = CsvStream(folder / "device_rounds.csv", DEVICE_ROUND_COLUMNS,
                                    chunk=chunk_rounds * k)
        self._index = np.arange(k)

    def idle(self, duration):
        self.stats.add_idle(duration)

    def round(self, *, round, start, draft, verify, comm, duration, active, gamma, accepted,
              tokens, rejected, mode, power, bandwidth, delay, g_ul, g_dl):
        n_ul = int(np.count_nonzero(mode == 1))
        n_dl = int(np.count_nonzero(mode == 2))
        n_active = int(active.sum())
        self.stats.add_round(duration, comm, tokens, gamma, active, rejected, n_ul, n_dl)
        self.rounds_csv.append(
            round=round, start_s=start, draft_s=draft, verify_s=verify, comm_s=comm,
            duration_s=duration, batch_size=n_active, n_rejected=int(rejected.sum()),
            n_ul=n_ul, n_dl=n_dl, tokens=int(tokens.sum()),
        )
        sel = active if n_active < self.k else slice(None)
        transmitting = mode[sel] > 0
        self.device_csv.append(
            round=np.full(n_active, round), device=self._index[sel], draft_len=gamma[sel],
            accepted=accepted[sel], tokens=tokens[sel], rejected=rejected[sel].astype(np.int8),
            mode=_MODE_STR[mode[sel]], power_w=power[sel],
            bandwidth_hz=np.where(transmitting, bandwidth, 0.0), delay_s=delay[sel],
            gain_ul=g_ul[sel], gain_dl=g_dl[sel],
        )

    def close(self):
        self.rounds_csv.close()
        self.device_csv.close()

    def write_devices(self, population):
        system = population.system
        stats = self.stats
        time = stats.sim_time
        goodput = stats.device_tokens / time if time > 0 else np.zeros(self.k)
        devices = CsvStream(self.folder / "devices.csv", DEVICE_COLUMNS)
        devices.append(
            device=self._index, task=np.array(population.tasks, dtype=object), alpha=system.alpha,
            draft_latency_s=system.draft_latency_s, distance_m=population.distance_m,
            pathloss_gain=system.pathloss, ul_power_w=system.p_ul_w, tokens=stats.device_tokens,
            goodput_tps=goodput,
        )
        devices.close()
