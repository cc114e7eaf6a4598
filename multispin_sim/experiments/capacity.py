"""Capacity search: the highest per-device Poisson arrival rate meeting an SLO attainment target.

``capacity_search(scenario_file, ttft_s, tpot_s, target)`` runs the scenario with
``workload.arrivals: poisson`` at trial rates (every device the same rate), each for
``duration_s`` of simulated time and several replications (seeds ``seed``, ``seed + 1``, ...,
the same seeds at every rate: common random numbers). A replication's SLO attainment is the
fraction of its requests meeting TTFT <= ttft_s and TPOT <= tpot_s (``outputs.slo``).

Verdict at one rate: the 95% Student-t interval of the mean attainment over the replications
(at least ``reps_min``; more are added one at a time, up to ``reps_max``, while the interval
contains the target). The rate *meets* the target when the interval lies above it (or every
replication is at 1), *fails* when it lies below, and is *undecided* otherwise.

Search:
1. bracketing: from the start rate, double until a rate fails and halve until a rate meets
   (only upwards from a start that meets, only downwards from one that fails; none meeting in
   ``max_halvings`` halvings: an error, the SLO is out of reach);
2. bisection (geometric midpoints) of [lo, hi] = [highest rate that met, lowest that failed].

Stopping rule: stop when hi / lo - 1 <= ``rel_tol``, or when a midpoint m stays undecided after
``reps_max`` replications (the target is then within the simulation's resolution at m: narrowing
further would need longer runs or more replications; the geometric midpoints of [lo, m] and
[m, hi] are tried once more to narrow the bracket), or after ``max_steps`` bisections. The reported interval is [lo, hi]: if attainment decreases with the rate, the
capacity lies in it unless one of the decisions at lo or hi was wrong (each a 95% one-sided
decision). The point estimate interpolates the mean attainment linearly between the evaluated
rates around the target crossing.

Attainment is measured from the empty system at time 0 (no warm-up deletion): choose
``duration_s`` long against the requests' latency (many requests per device).
"""
import math
import re

import numpy as np
from scipy import stats

from ..scenario import ScenarioError, load_scenario

CURVE_COLUMNS = ("rate_per_s", "replications", "attainment_mean", "ci95_lo", "ci95_hi",
                 "slo_goodput_rps", "verdict")

_SLO_RE = re.compile(r"^\s*(ttft|tpot)\s*=\s*([0-9.eE+-]+)\s*(ms|s)?\s*$")


def parse_slo(text):
    """``'ttft=0.5,tpot=0.05'`` (seconds; a value may end in ``ms`` or ``s``) -> (ttft_s, tpot_s),
    either None when absent. Raises ScenarioError('--slo', ...) when malformed."""
    allowed = "expected ttft=SECONDS and/or tpot=SECONDS separated by a comma, e.g. ttft=0.5,tpot=50ms"
    out = {}
    parts = [p for p in str(text).split(",")]
    if not text or not text.strip():
        raise ScenarioError("--slo", "an empty SLO is not allowed", allowed)
    for part in parts:
        m = _SLO_RE.match(part)
        if not m:
            raise ScenarioError("--slo", f"{part.strip()!r} is not allowed", allowed)
        name, value, unit = m.groups()
        try:
            x = float(value)
        except ValueError:
            raise ScenarioError("--slo", f"{part.strip()!r} is not a number", allowed) from None
        if unit == "ms":
            x *= 1e-3
        if not (math.isfinite(x) and x > 0):
            raise ScenarioError("--slo", f"{name} = {value} is not allowed", allowed + " (> 0)")
        if name in out:
            raise ScenarioError("--slo", f"{name} is given twice", allowed)
        out[name] = x
    return out.get("ttft"), out.get("tpot")


def mean_interval(values, level=0.95):
    v = np.asarray(values, dtype=float)
    m = float(v.mean())
    if v.size < 2 or np.all(v == v[0]):
        return m, m, m
    half = stats.t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
    return m, m - float(half), m + float(half)


class CapacitySearch:
    """See the module docstring; ``run()`` returns the result dict (also in ``self.result``)."""

    def __init__(self, scenario_file, ttft_s, tpot_s, target=0.9, overrides=(), duration_s=300.0,
                 reps_min=3, reps_max=10, rel_tol=0.05, start_rate=None, max_steps=12,
                 max_halvings=12, simulate=None, progress=None):
        if not 0 < target < 1:
            raise ScenarioError("--target", f"{target} is not allowed", "expected 0 < target < 1")
        if ttft_s is None and tpot_s is None:
            raise ScenarioError("--slo", "no SLO given", "expected ttft=SECONDS and/or tpot=SECONDS")
        self.file = scenario_file
        self.overrides = list(overrides)
        base = load_scenario(scenario_file, overrides=self.overrides)
        if base.workload.arrivals != "poisson":
            raise ScenarioError("workload.arrivals", f"{base.workload.arrivals!r}: a capacity "
                                "search needs Poisson arrivals (a saturated workload has no "
                                "arrival rate)", "expected 'poisson' (e.g. --set "
                                "workload.arrivals=poisson)")
        self.base = base
        self.ttft_s, self.tpot_s, self.target = ttft_s, tpot_s, float(target)
        self.duration_s = float(duration_s)
        self.reps_min, self.reps_max = int(reps_min), int(reps_max)
        self.rel_tol = float(rel_tol)
        rate = base.workload.rate_per_s
        self.start_rate = float(start_rate if start_rate is not None else np.mean(rate))
        self.max_steps, self.max_halvings = int(max_steps), int(max_halvings)
        if simulate is None:
            from ..engine import simulate
        self._simulate = simulate
        self.progress = progress
        self.points = {}  # rate -> {"att": [...], "goodput": [...]}
        self.runs = 0

    def _scenario(self, rate, rep):
        over = self.overrides + [
            f"workload.rate_per_s={rate!r}", f"seed={self.base.seed + rep}",
            f"run.max_time_s={self.duration_s!r}", "run.rounds=1000000000",
            f"serving.slo_ttft_s={'null' if self.ttft_s is None else repr(self.ttft_s)}",
            f"serving.slo_tpot_s={'null' if self.tpot_s is None else repr(self.tpot_s)}"]
        return load_scenario(self.file, overrides=over)

    def _replicate(self, rate):
        point = self.points.setdefault(rate, {"att": [], "goodput": []})
        rep = len(point["att"])
        slo = self._simulate(self._scenario(rate, rep)).summary["requests"]["slo"]
        self.runs += 1
        att = slo["attainment"]
        point["att"].append(0.0 if att != att else att)  # no request counted: nothing met
        point["goodput"].append(slo["goodput_rps"])

    def verdict(self, rate):
        """'meets', 'fails' or 'undecided' at ``rate`` (runs replications as needed)."""
        point = self.points.setdefault(rate, {"att": [], "goodput": []})
        while len(point["att"]) < self.reps_min:
            self._replicate(rate)
        while True:
            m, lo, hi = mean_interval(point["att"])
            if lo > self.target or (lo == hi == m and m > self.target):
                v = "meets"
            elif hi < self.target or (lo == hi == m and m < self.target):
                v = "fails"
            else:
                v = "undecided"
            if v != "undecided" or len(point["att"]) >= self.reps_max:
                break
            self._replicate(rate)
        point["verdict"] = v
        if self.progress:
            self.progress(f"rate {rate:.5g}/s: attainment {m:.3f} [{lo:.3f}, {hi:.3f}] "
                          f"({len(point['att'])} runs): {v}")
        return v

    def run(self):
        rate = self.start_rate
        lo = hi = None
        v = self.verdict(rate)
        if v == "meets":
            lo = rate
        elif v == "fails":
            hi = rate
        up = down = rate  # an undecided start: search both ways
        for _ in range(60):
            if hi is not None:
                break
            up *= 2
            w = self.verdict(up)
            if w == "meets":
                lo = up
            elif w == "fails":
                hi = up
        for _ in range(self.max_halvings):
            if lo is not None:
                break
            down /= 2
            w = self.verdict(down)
            if w == "fails":
                hi = min(hi, down)
            elif w == "meets":
                lo = down
        if lo is None:
            raise ScenarioError(
                "--slo", f"no arrival rate down to {down:.3g}/s per device meets the SLO in "
                f"{self.target:.0%} of requests", "expected a looser SLO or a lower --target")
        if hi is None:
            raise RuntimeError("no failing rate found")  # unreachable for a finite server
        stop = "tolerance"
        for _ in range(self.max_steps):
            if hi / lo - 1 <= self.rel_tol:
                break
            mid = math.sqrt(lo * hi)
            v = self.verdict(mid)
            if v == "meets":
                lo = mid
            elif v == "fails":
                hi = mid
            else:  # the target is within resolution at mid: narrow [lo, hi] around it, stop
                stop = "undecided"
                for side in ("lo", "hi"):
                    q = math.sqrt(lo * mid) if side == "lo" else math.sqrt(mid * hi)
                    w = self.verdict(q)
                    if side == "lo" and w == "meets":
                        lo = q
                    if side == "hi" and w == "fails":
                        hi = q
                break
        else:
            stop = "max_steps"
        self.result = {
            "capacity_per_device_rps": self.point_estimate(lo, hi),
            "interval": [lo, hi], "target": self.target,
            "slo": {"ttft_s": self.ttft_s, "tpot_s": self.tpot_s}, "stopped_by": stop,
            "runs": self.runs, "duration_s": self.duration_s,
            "reps_min": self.reps_min, "reps_max": self.reps_max, "rel_tol": self.rel_tol,
            "devices": self.base.devices.count, "scenario": self.base.name,
            "protocol": self.base.serving.protocol, "draft": self.base.policy.draft,
        }
        return self.result

    def point_estimate(self, lo, hi):
        rates = np.array(sorted(r for r in self.points if lo <= r <= hi))
        att = np.array([np.mean(self.points[r]["att"]) for r in rates])
        for i in range(len(rates) - 1):
            a, b = att[i] - self.target, att[i + 1] - self.target
            if a >= 0 >= b and a != b:
                return float(rates[i] + (rates[i + 1] - rates[i]) * a / (a - b))
        return float(math.sqrt(lo * hi))

    def curve(self):
        rows = []
        for rate in sorted(self.points):
            p = self.points[rate]
            m, lo, hi = mean_interval(p["att"])
            rows.append((rate, len(p["att"]), m, lo, hi, float(np.mean(p["goodput"])),
                         p.get("verdict", "")))
        return rows


def write_capacity(folder, search):
    """capacity.csv (the curve) and capacity.json (the result) in ``folder`` (created)."""
    import csv
    import json
    from pathlib import Path

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "capacity.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(CURVE_COLUMNS)
        for row in search.curve():
            w.writerow([repr(float(x)) if isinstance(x, float) else x for x in row])
    (folder / "capacity.json").write_text(json.dumps(search.result, indent=2) + "\n",
                                          encoding="utf-8")
    return folder / "capacity.csv", folder / "capacity.json"
