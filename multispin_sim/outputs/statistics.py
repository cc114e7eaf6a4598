"""Run statistics accumulated round by round in bounded memory, and confidence intervals.

Goodput is a ratio of sums (tokens / time). Its 95% confidence interval comes from batch means:
rounds are grouped into consecutive batches; when there are 2 x ``n_batches`` batches, pairs are
merged (the batch size doubles), so memory stays bounded however long the run. The interval is
the ratio estimator's delta-method interval over batches with Student's t quantile, the batch
still filling at the end included (a shorter batch: the estimator allows unequal ones), so it is
centred on the run's goodput. 10 to 19 closed batches, the range batch-means texts recommend
(Schmeiser, 1982): rounds correlated over a few
rounds (bursty acceptance, slow fading) need batches longer than that, and 32 to 63 batches
covered 82% in such a run of 200 rounds where 10 to 19 cover 90% (docs/guide/outputs.md).

Round durations and communication times are heavy-tailed under Rayleigh fading (the mean
transmission delay is infinite, docs/model.md section 8): the summary reports medians and
quantiles beside the means. Quantiles are computed from the values kept as float64 (8 bytes per
round: the same numbers as in rounds.csv).
"""
from functools import reduce
from operator import add

import numpy as np

from ..model.beliefs import AgreementTally
from .tquantile import t_quantile


def ratio_confidence_interval(numerators, denominators, level=0.95):
    """CI of sum(x)/sum(y) from batch totals (x_i, y_i) by the delta method; (nan, nan) if < 2."""
    x = np.asarray(numerators, dtype=float)
    y = np.asarray(denominators, dtype=float)
    n = x.size
    if n < 2 or y.sum() <= 0:
        return float("nan"), float("nan")
    r = x.sum() / y.sum()
    resid = x - r * y
    se = np.sqrt(resid.var(ddof=1) / n) / y.mean()
    half = t_quantile(0.5 + level / 2, n - 1) * se
    return float(r - half), float(r + half)


class GrowingArray:
    """An append-only array with amortised doubling (float64 by default: 8 bytes a value)."""

    def __init__(self, dtype=np.float64):
        self.data = np.empty(1024, dtype=dtype)
        self.n = 0

    def add(self, value):
        if self.n == self.data.size:
            self.data = np.concatenate([self.data, np.empty_like(self.data)])
        self.data[self.n] = value
        self.n += 1

    def extend(self, values):
        """Append many values (the same as ``add`` for each in turn)."""
        values = np.asarray(values, dtype=self.data.dtype)
        end = self.n + values.size
        if end > self.data.size:
            size = self.data.size
            while size < end:
                size *= 2
            data = np.empty(size, dtype=self.data.dtype)
            data[: self.n] = self.data[: self.n]
            self.data = data
        self.data[self.n: end] = values
        self.n = end

    def values(self):
        return self.data[: self.n]


def describe(values):
    """Mean, median, p95 and max of ``values``; nan (null in summary.json) for an empty sample:
    a run without rounds, or without a completed request, has no such value (a 0 would be
    averaged as one)."""
    if values.size == 0:
        nan = float("nan")
        return {"mean": nan, "median": nan, "p95": nan, "max": nan}
    v = values.astype(float)
    return {
        "mean": float(v.mean()),
        "median": float(np.median(v)),
        "p95": float(np.quantile(v, 0.95)),
        "max": float(v.max()),
    }


class RunStatistics:
    """Totals, per-device tokens and agreements, batch means for the goodput CI, and
    round-time quantiles."""

    def __init__(self, k, n_batches=10):
        self.k = k
        self.rounds = 0
        self.tokens = 0
        self.device_tokens = np.zeros(k, dtype=np.int64)
        # draft positions the target agreed on, and tested (agreed, plus one disagreement per
        # rejection), per device over the recorded rounds (devices.csv, summary's acceptance)
        self.agreements = AgreementTally(k)
        self.draft_len_sum = 0
        self.draft_len_count = 0
        self.rejections = 0
        self.ul = 0
        self.dl = 0
        self.sim_time = 0.0
        self.idle_time = 0.0
        self.n_batches = n_batches
        self.batch_size = 1
        self._batch_tokens = []
        self._batch_time = []
        self._cur_tokens = 0
        self._cur_time = 0.0
        self._cur_rounds = 0
        self.duration = GrowingArray()
        self.comm = GrowingArray()
        self._delays = None  # planned vs realised corrections (fading blocks shorter than rounds)

    def add_round(self, duration, comm, tokens, total, draft_len, active, n_active, n_rejected,
                  n_ul, n_dl):
        """One round: ``tokens``, ``draft_len``, ``active`` are (K,) arrays, the rest counts."""
        self.rounds += 1
        self.tokens += total
        self.device_tokens += tokens
        drafted = draft_len if n_active == self.k else draft_len[active]
        self.draft_len_sum += int(drafted.sum())
        self.draft_len_count += n_active
        self.rejections += n_rejected
        self.ul += int(n_ul)
        self.dl += int(n_dl)
        self.sim_time += duration
        self.duration.add(duration)
        self.comm.add(comm)
        self._cur_tokens += total
        self._cur_time += duration
        self._cur_rounds += 1
        if self._cur_rounds == self.batch_size:
            self._close_batch()

    def add_rounds(self, durations, comms, totals, device_tokens, draft_len_sum, n_active,
                   n_rejected, n_ul, n_dl, idle=()):
        """Many rounds at once, with the same results as ``add_round`` for each in turn (and
        ``add_idle`` between them): ``durations``, ``comms``, ``totals`` (Python numbers) per
        round; ``device_tokens`` (K,) the rounds' per-device tokens summed; the rest the
        rounds' sums of ``add_round``'s counts (``draft_len_sum`` over active devices only);
        ``idle``: (i, seconds) pairs in order, an idle period before round i (i = len: after
        the last)."""
        self.rounds += len(durations)
        self.tokens += sum(totals)
        self.device_tokens += device_tokens
        self.draft_len_sum += draft_len_sum
        self.draft_len_count += n_active
        self.rejections += n_rejected
        self.ul += n_ul
        self.dl += n_dl
        self.duration.extend(durations)
        self.comm.extend(comms)
        start = 0
        for i, seconds in idle:
            self._add_busy(durations[start:i], totals[start:i])
            self.add_idle(seconds)
            start = i
        self._add_busy(durations[start:], totals[start:])

    def _add_busy(self, durations, totals):
        """Consecutive rounds with no idle time between them into the run time and the batches:
        the same float additions in the same order as one round at a time, a batch's share of
        them at once (reduce: the loop in C)."""
        self.sim_time = reduce(add, durations, self.sim_time)
        i, n = 0, len(durations)
        while i < n:
            j = min(n, i + self.batch_size - self._cur_rounds)
            self._cur_tokens += sum(totals[i:j])
            self._cur_time = reduce(add, durations[i:j], self._cur_time)
            self._cur_rounds += j - i
            i = j
            if self._cur_rounds == self.batch_size:
                self._close_batch()

    def add_idle(self, duration):
        """Time the server spent with no work (queueing workloads): counts in the goodput."""
        self.sim_time += duration
        self.idle_time += duration
        self._cur_time += duration

    def add_delays(self, planned, realised, rejected, comm):
        """One round's corrections: delays planned on the CSI at their start vs realised."""
        if self._delays is None:
            self._delays = {"ratio": GrowingArray(), "diff": GrowingArray(), "planned_comm": 0.0,
                            "realised_comm": 0.0, "n": 0, "longer": 0, "shorter": 0}
        d = self._delays
        d["realised_comm"] += comm
        if not rejected.any():
            return
        p, r = planned[rejected], realised[rejected]
        d["planned_comm"] += float(p.max())
        d["n"] += p.size
        d["longer"] += int(np.count_nonzero(r > p))
        d["shorter"] += int(np.count_nonzero(r < p))
        d["ratio"].extend(r / p)
        d["diff"].extend(r - p)

    def _close_batch(self):
        self._batch_tokens.append(self._cur_tokens)
        self._batch_time.append(self._cur_time)
        self._cur_tokens, self._cur_time, self._cur_rounds = 0, 0.0, 0
        if len(self._batch_tokens) == 2 * self.n_batches:
            t = np.asarray(self._batch_tokens).reshape(-1, 2).sum(axis=1)
            s = np.asarray(self._batch_time).reshape(-1, 2).sum(axis=1)
            self._batch_tokens, self._batch_time = t.tolist(), s.tolist()
            self.batch_size *= 2

    def summary(self):
        time = self.sim_time
        goodput = self.tokens / time if time > 0 else 0.0
        tokens, times = self._batch_tokens, self._batch_time
        if self._cur_time > 0:   # the batch still filling counts too: the ratio of the
            tokens, times = tokens + [self._cur_tokens], times + [self._cur_time]   # whole run
        lo, hi = ratio_confidence_interval(tokens, times)
        per_device = (self.device_tokens / time).tolist() if time > 0 else [0.0] * self.k
        return {
            "goodput_tps": goodput,
            "goodput_ci95": [lo, hi],
            "goodput_ci_batches": len(tokens),
            "tokens": int(self.tokens),
            "rounds": int(self.rounds),
            "sim_time_s": time,
            "device_goodput_tps": per_device,
            "device_rounds": int(self.draft_len_count),
            "mean_draft_len": (self.draft_len_sum / self.draft_len_count
                               if self.draft_len_count else 0.0),
            "rejections": int(self.rejections),
            "ul_corrections": int(self.ul),
            "dl_corrections": int(self.dl),
            "duration_s": describe(self.duration.values()),
            "comm_s": describe(self.comm.values()),
        } | ({"delays": self._delay_summary()} if self._delays is not None else {})

    def _delay_summary(self):
        d = self._delays
        n = max(d["n"], 1)
        return {
            "corrections": d["n"],
            "longer_than_planned": d["longer"] / n,
            "shorter_than_planned": d["shorter"] / n,
            "realised_over_planned": describe(d["ratio"].values())
            | {"p05": float(np.quantile(d["ratio"].values(), 0.05)) if d["n"] else 0.0},
            "realised_minus_planned_s": describe(d["diff"].values()),
            "comm_time_planned_s": d["planned_comm"],
            "comm_time_realised_s": d["realised_comm"],
        }
