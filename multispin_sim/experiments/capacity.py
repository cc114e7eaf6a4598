"""Capacity search: the highest per-device Poisson arrival rate meeting an SLO attainment target.

``CapacitySearch(scenario_file, ttft_s, tpot_s, target).run()`` runs the scenario with
``workload.arrivals: poisson`` at trial rates (every device the same rate), each for
``duration_s`` of simulated time and several replications (seeds spawned from the scenario's
``seed`` as a sweep spawns them, ``sweepfile.replication_seeds``, the same seeds at every rate:
common random numbers; searches at two seeds share no run). A replication counts its requests (the
completed ones plus the unfinished ones already past the TTFT limit, ``outputs.slo``) and how
many of them met TTFT <= ttft_s and TPOT <= tpot_s.

Requests, not runs: a rate's attainment is met / counted over all its replications. A run that
counts no request adds no evidence (it is not attainment 0). So that a run can decide anything,
a rate whose runs expect fewer than ``min_requests`` requests (rate x devices x duration, with
devices the network's: devices.count in each cell of a multi-cell scenario) is *extended*: its
runs last min_requests / (rate x devices) seconds, at most ``max_extension`` x ``duration_s``;
the curve's ``duration_s`` column and the result's ``extended`` list say which rates were
extended and to how long. By default ``min_requests`` is what a run needs for "all requests
met" to decide *meets* after ``reps_min`` replications: 2 z^2 target / (1 - target) / reps_min
with z the t quantile of reps_min - 1 degrees of freedom, so a small ``reps_min`` (wide t
quantile: 12.7 at 2 replications) makes every run much longer.

Interval (bounded in [0, 1]): the Wilson score interval of the pooled proportion with the
effective number of requests n / deff, where the design effect deff >= 1 is the variance of
the ratio estimator between replications over the binomial variance (requests in one run share
the queue, so they are not independent); the quantile is Student's t with R - 1 degrees of
freedom for R replications with requests (normal for R = 1). No request at all: [0, 1].

Verdict at one rate: *fails* when most of its replications end with a queue that grows without
bound (``requests.stable`` false, or stopped by ``limits.max_backlog_requests``: the long-run
attainment of an unstable queue is 0 whatever the SLO); otherwise *meets* when the interval
lies above the target, *fails* when it lies below, *undecided* otherwise (replications are
added one at a time, from ``reps_min`` up to ``reps_max``, while undecided).

Search, bounded in rate and in the number of runs:
1. bracketing: from the start rate, double (at most ``max_doublings`` times) until a rate fails,
   and halve (at most ``max_halvings`` times) until a rate meets;
2. bisection (geometric midpoints, at most ``max_steps``) of [lo, hi] = [highest rate that met,
   lowest that failed], until hi / lo - 1 <= ``rel_tol``, or a midpoint stays undecided after
   ``reps_max`` replications (the target is within the simulation's resolution there: the
   midpoints of [lo, m] and [m, hi] are tried once more, each narrowing [lo, hi] by its own
   verdict, then the search stops).

The result's ``verdict``: ``found`` (the capacity is in ``interval`` [lo, hi] unless one of the
95% decisions at lo or hi was wrong; the point estimate interpolates the attainment linearly
between the rates around the target crossing), ``below`` (no rate down to the lowest tried
meets: the capacity is below it), ``above`` (every rate up to the highest tried meets: the
capacity is at least that), ``undecided`` (too few requests to decide at the rates left) or
``interrupted`` (a stop signal; ``complete`` false). Only ``found`` has a capacity.

Attainment is measured from the empty system at time 0 (no warm-up deletion): choose
``duration_s`` long against the requests' latency (many requests per device).
"""
import dataclasses
import math
import re
from pathlib import Path

import numpy as np
from scipy import stats

from ..engine import simulate as engine_simulate
from ..engine.cell_plan import check_cell_layout, network_devices, several_cells
from ..engine.simulation import read_inputs
from ..errors import OutputLocationError, os_reason
from ..outputs.atomic import check_folder, write_json
from ..outputs.metadata import code_fingerprint, package_versions
from ..scenario import ScenarioError, load_scenario
from ..version import __version__
from .sweepfile import replication_seeds
from .tables import write_csv

CURVE_COLUMNS = ("rate_per_s", "replications", "attainment_mean", "ci95_lo", "ci95_hi",
                 "slo_goodput_rps", "verdict", "requests", "met", "duration_s", "unstable_runs")
# capacity_reps.csv: one row per run, the values a rate's interval is computed from
REPS_COLUMNS = ("rate_per_s", "replication", "seed", "duration_s", "counted", "met",
                "slo_goodput_rps", "unstable")
MAX_DURATION_S = 1e9      # simulated seconds of one run (about 32 years)
MAX_REPLICATIONS = 1000

_SLO_RE = re.compile(r"^\s*(ttft|tpot)\s*=\s*([0-9.eE+-]+)\s*(ms|s)?\s*$")


def parse_slo(text):
    """``'ttft=0.5,tpot=0.05'`` (seconds; a value may end in ``ms`` or ``s``) -> (ttft_s, tpot_s),
    either None when absent. Raises ScenarioError('--slo', ...) when malformed."""
    allowed = ("expected ttft=SECONDS and/or tpot=SECONDS separated by a comma, e.g. "
               "ttft=0.5,tpot=50ms")
    out = {}
    if not text or not text.strip():
        raise ScenarioError("--slo", "an empty SLO is not allowed", allowed)
    for part in str(text).split(","):
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


def wilson_interval(p, n, z):
    """Wilson score interval of a proportion ``p`` seen in ``n`` (effective) trials, quantile
    ``z``; always within [0, 1] and around ``p`` (at p = 1 the upper end is 1 in exact
    arithmetic, one ulp below it in floats); [0, 1] when n is 0."""
    if not n > 0:
        return 0.0, 1.0
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denom
    half = z * math.sqrt(max(p * (1.0 - p), 0.0) / n + z2 / (4.0 * n * n)) / denom
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


def attainment_interval(met, counted, level=0.95):
    """(pooled attainment, lo, hi) from per-replication ``met`` and ``counted`` requests (see the
    module docstring); attainment NaN and [0, 1] when no request was counted."""
    met = np.asarray(met, dtype=float)
    n = np.asarray(counted, dtype=float)
    total = float(n.sum())
    if total <= 0:
        return float("nan"), 0.0, 1.0
    p = float(met.sum()) / total
    reps = int(np.count_nonzero(n > 0))
    deff = 1.0
    if reps >= 2:
        z = float(stats.t.ppf(0.5 + level / 2, reps - 1))
        binomial = p * (1.0 - p) / total
        ratio = reps / (reps - 1) * float(np.sum((met - p * n) ** 2)) / (total * total)
        if binomial > 0:
            deff = max(1.0, ratio / binomial)
    else:
        z = float(stats.norm.ppf(0.5 + level / 2))
    lo, hi = wilson_interval(p, total / deff, z)
    return p, lo, hi


def _number(option, value, allowed, low=0.0, high=math.inf, strict_low=True):
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ScenarioError(option, f"{value!r} is not a number", allowed) from None
    if not math.isfinite(x) or x < low or (strict_low and x == low) or x > high:
        raise ScenarioError(option, f"{value!r} is not allowed", allowed)
    return x


class SearchInterrupted(KeyboardInterrupt):
    """A stop signal ended a run of the search (that run's replication is not counted)."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


class CapacitySearch:
    """See the module docstring; ``run()`` returns the result dict (also in ``self.result``).

    Every option is checked here, before any run: a bad one raises ScenarioError naming it."""

    def __init__(self, scenario_file, ttft_s, tpot_s, target=0.9, overrides=(), duration_s=300.0,
                 reps_min=3, reps_max=10, rel_tol=0.05, start_rate=None, max_steps=12,
                 max_halvings=12, simulate=None, progress=None, max_doublings=24,
                 max_extension=100.0, min_requests=None):
        self.target = _number("--target", target, "expected 0 < target < 1",
                              high=math.nextafter(1.0, 0.0))   # 1 itself excluded
        if ttft_s is None and tpot_s is None:
            raise ScenarioError("--slo", "no SLO given",
                                "expected ttft=SECONDS and/or tpot=SECONDS")
        self.duration_s = _number("--duration", duration_s, "expected simulated seconds per run, "
                                  f"> 0 and <= {MAX_DURATION_S:g}", high=MAX_DURATION_S)
        self.reps_min, self.reps_max = int(reps_min), int(reps_max)
        if not all(1 <= n <= MAX_REPLICATIONS for n in (self.reps_min, self.reps_max)):
            raise ScenarioError("--reps-min/--reps-max", f"{reps_min}/{reps_max} is not allowed",
                                f"expected integers from 1 to {MAX_REPLICATIONS}")
        if self.reps_min > self.reps_max:
            raise ScenarioError("--reps-min", f"{reps_min} is more than --reps-max {reps_max}",
                                "expected --reps-min <= --reps-max")
        self.rel_tol = _number("--tol", rel_tol,
                               "expected a relative bracket width > 0, e.g. 0.05", high=1e6)
        self.max_extension = _number("max_extension", max_extension, "expected >= 1", low=1.0,
                                     strict_low=False)
        self.file = scenario_file
        self.overrides = list(overrides)
        base = load_scenario(scenario_file, overrides=self.overrides)
        if base.workload.arrivals != "poisson":
            raise ScenarioError("workload.arrivals", f"{base.workload.arrivals!r}: a capacity "
                                "search needs Poisson arrivals (a saturated workload has no "
                                "arrival rate)", "expected 'poisson' (e.g. --set "
                                "workload.arrivals=poisson)")
        self.base = base
        self.ttft_s, self.tpot_s = ttft_s, tpot_s
        self.seeds = replication_seeds(base.seed, self.reps_max)
        check_inputs(base, self.seeds)
        # a Poisson layout's servers as the first replication draws them (no run uses base.seed)
        self.devices = network_devices(dataclasses.replace(base, seed=self.seeds[0]))
        rate = base.workload.rate_per_s
        self.start_rate = _number("--rate", start_rate if start_rate is not None
                                  else float(np.mean(rate)), "expected requests/s per device "
                                  "> 0 (finite)", high=1e12)
        self.max_steps, self.max_halvings = int(max_steps), int(max_halvings)
        self.max_doublings = int(max_doublings)
        if min_requests is None:  # enough that all met decides 'meets' at reps_min replications
            z = (float(stats.t.ppf(0.975, self.reps_min - 1)) if self.reps_min >= 2
                 else float(stats.norm.ppf(0.975)))
            min_requests = max(10, math.ceil(2 * z * z * self.target / (1 - self.target)
                                             / self.reps_min))
        self.min_requests = int(min_requests)
        self._check_duration(self.start_rate * 2.0 ** -self.max_halvings)
        self._simulate = engine_simulate if simulate is None else simulate
        self.progress = progress
        self.points = {}  # rate -> {"reps": [{met, counted, goodput, unstable}], "verdict"}
        self.runs = 0
        self.result = None
        self.lowest_failing = None   # the lowest rate that failed, when none met

    def _check_duration(self, rate):
        """The longest run the search may make (lowest rate, extended) is one the limits allow:
        checked before any run."""
        over = self.overrides + [f"run.max_time_s={self.duration_for(rate)!r}",
                                 "workload.arrivals=poisson"]
        load_scenario(self.file, overrides=over)

    def duration_for(self, rate):
        """Simulated seconds per run at ``rate`` (extended at low rates, see the docstring)."""
        need = self.min_requests / (rate * self.devices)
        return float(min(max(self.duration_s, need), self.duration_s * self.max_extension,
                         MAX_DURATION_S))

    def expected_requests(self, rate):
        """Requests one run at ``rate`` expects (all devices)."""
        return rate * self.devices * self.duration_for(rate)

    def _scenario(self, rate, rep):
        over = self.overrides + [
            f"workload.rate_per_s={rate!r}", f"seed={self.seeds[rep]}",
            f"run.max_time_s={self.duration_for(rate)!r}", "run.rounds=1000000000",
            f"serving.slo_ttft_s={'null' if self.ttft_s is None else repr(self.ttft_s)}",
            f"serving.slo_tpot_s={'null' if self.tpot_s is None else repr(self.tpot_s)}"]
        return load_scenario(self.file, overrides=over)

    def _replicate(self, rate):
        point = self.points.setdefault(rate, {"reps": []})
        result = self._simulate(self._scenario(rate, len(point["reps"])))
        signum = result.stop_signal
        if signum is not None:
            raise SearchInterrupted(signum)
        s = result.summary
        req = s.get("requests") or {}
        slo = req.get("slo", {})
        stopped = not s.get("complete", True)  # the backlog bound (or another limit)
        unstable = stopped or not req.get("stable", True)
        point["reps"].append({"met": int(slo.get("met", 0)), "counted": int(slo.get("counted", 0)),
                              "goodput": float(slo.get("goodput_rps", 0.0)),
                              "unstable": bool(unstable),
                              "seed": self.seeds[len(point["reps"])]})
        # (one append: a signal never leaves half a replication)
        self.runs += 1

    def stats_at(self, rate):
        reps = self.points[rate]["reps"]
        return attainment_interval([r["met"] for r in reps], [r["counted"] for r in reps])

    def verdict(self, rate):
        """'meets', 'fails' or 'undecided' at ``rate`` (runs replications as needed)."""
        point = self.points.setdefault(rate, {"reps": []})
        while len(point["reps"]) < self.reps_min:
            self._replicate(rate)
        while True:
            reps = point["reps"]
            m, lo, hi = self.stats_at(rate)
            unstable = sum(r["unstable"] for r in reps)
            if 2 * unstable > len(reps):
                v = "fails"
            elif lo > self.target:
                v = "meets"
            elif hi < self.target:
                v = "fails"
            else:
                v = "undecided"
            if v != "undecided" or len(reps) >= self.reps_max:
                break
            self._replicate(rate)
        point["verdict"] = v
        if self.progress:
            n = sum(r["counted"] for r in reps)
            ext = self.duration_for(rate)
            note = f", runs extended to {ext:.4g} s" if ext > self.duration_s else ""
            note += f", {unstable} unstable" if unstable else ""
            self.progress(f"rate {rate:.5g}/s: attainment {m:.3f} [{lo:.3f}, {hi:.3f}] "
                          f"({len(reps)} runs, {n} requests{note}): {v}")
        return v

    def run(self):
        """The search (see the module docstring); a stop signal raises SearchInterrupted with
        ``self.result`` holding the partial result (``complete`` false)."""
        try:
            return self._run()
        except KeyboardInterrupt as exc:
            self.result = self._result(None, None, "interrupted", "signal")
            self.result["complete"] = False
            if isinstance(exc, SearchInterrupted):
                raise
            raise SearchInterrupted(None) from None

    def _run(self):
        rate = self.start_rate
        lo = hi = None
        v = self.verdict(rate)
        if v == "meets":
            lo = rate
        elif v == "fails":
            hi = rate
        up = down = rate  # an undecided start: search both ways
        for _ in range(self.max_doublings):
            if hi is not None:
                break
            up *= 2
            w = self.verdict(up)
            if w == "meets":
                lo = up
            elif w == "fails":
                hi = up
        if hi is None:
            return self._result(lo, None, "above" if lo is not None else "undecided",
                                "max_doublings")
        for _ in range(self.max_halvings):
            if lo is not None:
                break
            down /= 2
            w = self.verdict(down)
            if w == "fails":
                hi = min(hi, down)
            elif w == "meets":
                lo = down
            elif self.expected_requests(down) < self.min_requests:
                break  # too few requests even in extended runs: lower rates cannot decide
        if lo is None:
            failed = [r for r in self.points if self.points[r].get("verdict") == "fails"]
            self.lowest_failing = min(failed) if failed else None
            return self._result(None, hi, "below" if failed else "undecided", "max_halvings")
        stop = None
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
                # each probe narrows the bracket by its own verdict, whichever side of mid it
                # is on (a probe below mid that fails lowers hi); a verdict that contradicts
                # the other probe's (noise: a rate above one that failed meets) leaves the
                # bracket as the first one made it, so lo < hi holds
                for q in (math.sqrt(lo * mid), math.sqrt(mid * hi)):
                    w = self.verdict(q)
                    if w == "meets" and lo < q < hi:
                        lo = q
                    elif w == "fails" and lo < q < hi:
                        hi = q
                break
        if stop is None:   # the last step may have brought the bracket within the tolerance
            stop = "tolerance" if hi / lo - 1 <= self.rel_tol else "max_steps"
        return self._result(lo, hi, "found", stop)

    def _result(self, lo, hi, verdict, stop):
        extended = [{"rate_per_s": r, "duration_s": self.duration_for(r)}
                    for r in sorted(self.points) if self.duration_for(r) > self.duration_s]
        found = verdict == "found"
        tried = sorted(self.points) or [self.start_rate]
        self.result = {
            "verdict": verdict, "complete": verdict != "interrupted",
            "capacity_per_device_rps": self.point_estimate(lo, hi) if found else None,
            "interval": [lo, hi] if found else [None, None],
            "message": self.message(verdict, lo, hi, tried),
            "target": self.target,
            "slo": {"ttft_s": self.ttft_s, "tpot_s": self.tpot_s}, "stopped_by": stop,
            "runs": self.runs, "duration_s": self.duration_s, "min_requests": self.min_requests,
            "extended": extended, "reps_min": self.reps_min, "reps_max": self.reps_max,
            "rel_tol": self.rel_tol, "devices": self.devices, "scenario": self.base.name,
            "protocol": self.base.serving.protocol, "draft": self.base.policy.draft,
            "interval_method": "wilson, effective requests (design effect), t quantile",
        }
        return self.result

    def message(self, verdict, lo, hi, tried):
        goal = f"{self.target:.0%} of requests meeting the SLO"
        if verdict == "found":
            return f"capacity between {lo:.4g} and {hi:.4g} requests/s per device"
        if verdict == "below":
            low = self.lowest_failing or tried[0]
            note = ""
            if tried[0] < low:
                few = self.expected_requests(tried[0]) < self.min_requests
                why = ("had too few requests to decide, even in runs lengthened to "
                       f"{self.max_extension:g} x --duration" if few else
                       f"stayed undecided: their 95% intervals still held the target after "
                       f"{self.reps_max} replications (raise --reps-max or --duration)")
                note = f" (lower rates, down to {tried[0]:.3g}/s, {why})"
            return (f"no arrival rate tried reaches {goal}; the capacity is below {low:.3g}/s "
                    f"per device{note}")
        if verdict == "above":
            return (f"every arrival rate up to {lo:.3g}/s per device reaches {goal} with a "
                    "stable queue: the capacity is at least that")
        if verdict == "undecided":
            return (f"too few requests to decide at rates from {tried[0]:.3g} to "
                    f"{tried[-1]:.3g}/s per device")
        return "interrupted"

    def point_estimate(self, lo, hi):
        rates = np.array(sorted(r for r in self.points if lo <= r <= hi))
        att = np.array([self.stats_at(r)[0] for r in rates])
        for i in range(len(rates) - 1):
            a, b = att[i] - self.target, att[i + 1] - self.target
            if a >= 0 >= b and a != b:
                return float(rates[i] + (rates[i + 1] - rates[i]) * a / (a - b))
        return float(math.sqrt(lo * hi))

    def curve(self):
        """Rows of capacity.csv (``CURVE_COLUMNS``): one per rate tried, in increasing rate."""
        rows = []
        for rate in sorted(self.points):
            p = self.points[rate]
            reps = p["reps"]
            if not reps:
                continue
            m, lo, hi = self.stats_at(rate)
            rows.append((rate, len(reps), m, lo, hi, float(np.mean([r["goodput"] for r in reps])),
                         p.get("verdict", ""), sum(r["counted"] for r in reps),
                         sum(r["met"] for r in reps), self.duration_for(rate),
                         sum(r["unstable"] for r in reps)))
        return rows

    def replications(self):
        """Rows of capacity_reps.csv: every run's counted and met requests (the pooled
        attainment and its interval at a rate are computed from these, ``attainment_interval``)."""
        rows = []
        for rate in sorted(self.points):
            for i, r in enumerate(self.points[rate]["reps"]):
                rows.append((rate, i, r["seed"], self.duration_for(rate),
                             r["counted"], r["met"], r["goodput"], int(r["unstable"])))
        return rows


def check_inputs(scenario, seeds):
    """What every run of the search checks before it starts (``engine.simulation.read_inputs``:
    the files the scenario reads, the checks that need the model), once, before any run; for a
    layout of several cells, the servers drawn at each replication's seed (a Poisson layout may
    draw none at some). The rate, duration and SLO the runs set change none of it."""
    read_inputs(dataclasses.replace(scenario, seed=seeds[0]))   # no run uses scenario.seed
    if several_cells(scenario):
        for seed in seeds[1:]:
            check_cell_layout(dataclasses.replace(scenario, seed=seed))


OTHER_OUTPUTS = (("sweep", "sweep.json"), ("run", "summary.json"))


def check_output(folder, overwrite=False):
    """Before any run: ``folder`` can take the search's files, holds no sweep or run, and holds
    no other search (nor anything else) unless ``overwrite``. Returns the folder (created)."""
    folder = Path(folder)
    if str(folder).strip() == "":
        raise OutputLocationError("--out ''", "is empty", "give the folder to write the "
                                  "capacity curve into (or leave --out out)")
    try:
        other = next((f"holds a {kind}'s outputs ({name})" for kind, name in OTHER_OUTPUTS
                      if (folder / name).exists()), None)
        if other:   # a search written there would make plot and report take it for the other
            raise OutputLocationError(f"--out {folder}", other, "give the capacity search a "
                                      "folder of its own")
        if folder.is_dir() and any(folder.iterdir()) and not overwrite:
            has = ("holds a capacity search" if (folder / "capacity.json").exists()
                   else "is not empty")
            raise OutputLocationError(f"--out {folder}", has, "give a new folder, or add "
                                      "--overwrite to replace capacity.csv, capacity_reps.csv "
                                      "and capacity.json there")
        return check_folder(folder, "--out")
    except OSError as exc:  # e.g. a name longer than the file system allows
        raise OutputLocationError(f"--out {folder}", os_reason(exc), "give a shorter or "
                                  "other folder name") from None


def write_capacity(folder, search):
    """capacity.csv (the curve), capacity_reps.csv (every run's counted and met requests) and
    capacity.json (the result, and ``made_with``: the code and packages, as a run's run.json
    records them) in ``folder`` (created); each file is written whole or not at all (temporary
    file + rename)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, columns, rows in (("capacity_reps.csv", REPS_COLUMNS, search.replications()),
                                ("capacity.csv", CURVE_COLUMNS, search.curve())):
        write_csv(folder / name, columns, [dict(zip(columns, row)) for row in rows])
    made_with = {"multispin_sim_version": __version__, "code_sha256": code_fingerprint(),
                 "packages": package_versions(), "seed": search.base.seed}
    write_json(folder / "capacity.json", {**search.result, "made_with": made_with})
    return folder / "capacity.csv", folder / "capacity.json"
