"""SLO metrics of a queueing run (DistServe / Vidur conventions), pure numpy.

Per completed request: TTFT = first token - arrival (the end of the first round or cycle that
served it), TPOT = (completion - first token) / (tokens - 1) (none for one-token requests), and
end-to-end latency = completion - arrival. Each gets mean and p50/p90/p99.

SLO attainment: the fraction of requests meeting TTFT <= ``ttft_s`` and TPOT <= ``tpot_s`` (a
missing SLO is met; a request without a TPOT meets the TPOT SLO). The requests counted are the
completed ones plus the unfinished ones that have already missed the TTFT SLO at the end of the
run (so an overloaded run cannot look good by not finishing its requests); unfinished requests
still within it are left out (undecided). SLO goodput = requests meeting the SLO per second of
run time.
"""
import numpy as np

QUANTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))


def percentiles(values):
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return {"mean": float("nan"), **{name: float("nan") for name, _ in QUANTILES}, "n": 0}
    q = np.quantile(v, [p for _, p in QUANTILES])
    return {"mean": float(v.mean()), **{name: float(x) for (name, _), x in zip(QUANTILES, q)},
            "n": int(v.size)}


def slo_met(ttft, tpot, ttft_s=None, tpot_s=None):
    """Boolean mask of the requests meeting both SLOs (NaN TPOT: meets the TPOT SLO)."""
    ok = np.ones(np.shape(ttft), dtype=bool)
    if ttft_s is not None:
        ok &= np.asarray(ttft) <= ttft_s
    if tpot_s is not None:
        tpot = np.asarray(tpot)
        ok &= np.isnan(tpot) | (tpot <= tpot_s)
    return ok


def slo_summary(latency, ttft, tpot, run_time_s, ttft_s=None, tpot_s=None, late_unfinished=0):
    """The ``slo`` block of the request summary (see the module docstring)."""
    out = {"ttft_s": percentiles(ttft), "tpot_s": percentiles(tpot),
           "e2e_s": percentiles(latency)}
    if ttft_s is None and tpot_s is None:
        return out
    met = int(np.count_nonzero(slo_met(ttft, tpot, ttft_s, tpot_s)))
    counted = int(np.size(ttft)) + int(late_unfinished)
    out.update(
        ttft_limit_s=ttft_s, tpot_limit_s=tpot_s, met=met, counted=counted,
        attainment=met / counted if counted else float("nan"),
        goodput_rps=met / run_time_s if run_time_s > 0 else 0.0)
    return out
