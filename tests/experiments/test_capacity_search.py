"""The capacity search's bookkeeping: the network's device count, the bracket left by an
undecided midpoint, the stop label, and the per-replication file its intervals come from."""
import csv
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from multispin_sim.experiments.capacity import CapacitySearch, network_devices, write_capacity
from multispin_sim.experiments.sweepfile import replication_seeds
from multispin_sim.scenario import ScenarioError

ROOT = Path(__file__).resolve().parents[2]
SERVING = ROOT / "scenarios" / "serving" / "base.yaml"
HEX7 = ROOT / "scenarios" / "cells" / "hex7.yaml"


def _fake(attainment, counted=100_000):
    """A simulate that returns, at each rate (and seed), the attainment the curve gives."""
    def simulate(scenario):
        rate = float(np.mean(scenario.workload.rate_per_s))
        a, n = attainment(rate, scenario.seed), counted
        if isinstance(a, tuple):
            a, n = a
        return SimpleNamespace(stop_signal=None, summary={"complete": True, "requests": {
            "stable": True, "slo": {"met": int(round(a * n)), "counted": int(n),
                                    "goodput_rps": a * rate}}})
    return simulate


@pytest.mark.parametrize("overrides", [
    ["cells.layout=hex", "cells.count=7", "devices.count=2"],
    ["cells.layout=ppp", "cells.density_per_km2=4", "cells.region_m=800", "devices.count=2"],
    ["cells.layout=hex", "cells.count=7", "cells.drop=region", "devices.count=5"],
])
def test_run_length_counts_every_device_of_the_network(overrides):
    """devices.count is per cell with several cells: a 7-cell network of 2 devices each has 14
    devices, and runs planned for 2 expected 7 times the requests they were lengthened for.
    The search's count is the number of devices its first run (an engine run of that scenario
    at the first replication's seed) has."""
    from multispin_sim import load_scenario, simulate

    over = ["workload.arrivals=poisson"] + overrides
    search = CapacitySearch(HEX7, 2.0, 0.1, overrides=over, duration_s=30.0, start_rate=0.01)
    engine = simulate(load_scenario(HEX7, overrides=over + ["run.max_time_s=0.5",
                                                          f"seed={search.seeds[0]}"]))
    devices = len(engine.summary["device_goodput_tps"])
    assert search.devices == devices
    rate = 0.01
    assert search.expected_requests(rate) == pytest.approx(
        rate * devices * search.duration_for(rate))
    assert search.duration_for(rate) == pytest.approx(
        min(max(30.0, search.min_requests / (rate * devices)), 30.0 * 100))


def test_an_undecided_midpoint_leaves_a_bracket_without_a_failed_rate():
    """Bisection of [0.1, 0.2] stops at an undecided midpoint 0.1414; its probes are 0.1189
    (fails) and 0.1682 (undecided). The lower probe failing did not lower hi, so the interval
    [0.1, 0.2] held a rate that failed. Now: [highest rate that met, lowest that failed]."""
    table = {0.1: (0.95, 100_000), 0.2: (0.80, 100_000), 0.14142: (0.90, 50),
             0.11892: (0.85, 100_000), 0.16818: (0.89, 50)}

    def curve(rate, seed):
        return next(v for r, v in table.items() if abs(rate - r) < 1e-4)

    search = CapacitySearch(SERVING, 2.0, 0.1, simulate=_fake(curve), start_rate=0.1,
                            overrides=["workload.arrivals=poisson"])
    res = search.run()
    verdicts = {r: p["verdict"] for r, p in search.points.items()}
    lo, hi = res["interval"]
    assert res["verdict"] == "found" and res["stopped_by"] == "undecided"
    assert verdicts[lo] == "meets" and verdicts[hi] == "fails"
    assert not [r for r, v in verdicts.items() if lo <= r < hi and v == "fails"]
    assert not [r for r, v in verdicts.items() if lo < r <= hi and v == "meets"]
    assert hi == pytest.approx(0.11892, abs=1e-5)
    assert lo <= res["capacity_per_device_rps"] <= hi


@pytest.mark.parametrize("max_steps", [2, 3, 4])
def test_stopped_by_says_tolerance_when_the_bracket_is_within_it(max_steps):
    """The tolerance was tested only before a step: a last step that met it was labelled
    max_steps. The label now matches the final bracket."""
    def curve(rate, seed):
        return 1 - rate * 0.1 / 0.23   # crosses 0.9 at 0.23

    search = CapacitySearch(SERVING, 2.0, 0.1, simulate=_fake(curve), start_rate=0.1,
                            max_steps=max_steps, rel_tol=0.2,
                            overrides=["workload.arrivals=poisson"])
    res = search.run()
    lo, hi = res["interval"]
    assert res["stopped_by"] == ("tolerance" if hi / lo - 1 <= 0.2 else "max_steps")
    assert res["stopped_by"] == "tolerance"


def _read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _interval(met, counted):
    """The documented interval, written out anew: Wilson on n / deff, t(R - 1) quantile."""
    met, n = np.asarray(met, float), np.asarray(counted, float)
    total = n.sum()
    p = met.sum() / total
    reps = int((n > 0).sum())
    deff = 1.0
    if reps >= 2:
        z = stats.t.ppf(0.975, reps - 1)
        var = reps / (reps - 1) * ((met - p * n) ** 2).sum() / total ** 2
        if p * (1 - p) > 0:
            deff = max(1.0, var / (p * (1 - p) / total))
    else:
        z = stats.norm.ppf(0.975)
    neff = total / deff
    centre = (p + z * z / (2 * neff)) / (1 + z * z / neff)
    half = z * math.sqrt(p * (1 - p) / neff + z * z / (4 * neff * neff)) / (1 + z * z / neff)
    return p, max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


def test_the_curve_can_be_recomputed_from_capacity_reps_csv(tmp_path):
    """capacity.csv has each rate's pooled requests and met, but its interval depends on how
    they split between replications (the design effect): capacity_reps.csv has every run's
    counted and met, and recomputing each rate's interval from it gives capacity.csv's."""
    def curve(rate, seed):
        rng = np.random.default_rng(seed * 1000 + int(rate * 1e6))
        n = int(rng.integers(40, 400))
        return float(np.clip(1 - rate * 0.1 / 0.23 + rng.normal(0, 0.04), 0, 1)), n

    search = CapacitySearch(SERVING, 2.0, 0.1, simulate=_fake(curve), start_rate=0.1,
                            overrides=["workload.arrivals=poisson", "seed=40"], reps_max=6)
    search.run()
    write_capacity(tmp_path, search)
    reps = _read(tmp_path / "capacity_reps.csv")
    rates = _read(tmp_path / "capacity.csv")
    assert len(reps) == search.runs and len(rates) == len(search.points)
    for row in rates:
        mine = [r for r in reps if r["rate_per_s"] == row["rate_per_s"]]
        assert [int(r["replication"]) for r in mine] == list(range(int(row["replications"])))
        assert [int(r["seed"]) for r in mine] == replication_seeds(40, len(mine))
        met = [int(r["met"]) for r in mine]
        counted = [int(r["counted"]) for r in mine]
        assert sum(met) == int(row["met"]) and sum(counted) == int(row["requests"])
        p, lo, hi = _interval(met, counted)
        assert float(row["attainment_mean"]) == pytest.approx(p, rel=1e-12)
        assert float(row["ci95_lo"]) == pytest.approx(lo, rel=1e-9)
        assert float(row["ci95_hi"]) == pytest.approx(hi, rel=1e-9)
        assert {r["duration_s"] for r in mine} == {row["duration_s"]}


def test_a_poisson_layout_is_checked_at_the_seeds_the_runs_use():
    """No run uses the scenario's own seed (the replications' seeds are spawned from it): a
    Poisson layout that draws no server at seed 6 (lambda pi R^2 = 1.54) but one or more at
    each replication's seed is searched, its device count from the first replication."""
    over = ["workload.arrivals=poisson", "cells.layout=ppp", "cells.density_per_km2=1",
            "cells.region_m=700", "channel.coherence_time_ms=null", "seed=6"]
    from multispin_sim import load_scenario
    from multispin_sim.engine.cell_plan import check_cell_layout

    with pytest.raises(ScenarioError, match="drew no server"):
        check_cell_layout(load_scenario(SERVING, overrides=over))
    search = CapacitySearch(SERVING, 2.0, 0.1, simulate=_fake(lambda rate, seed: 0.95),
                            overrides=over, reps_min=2, reps_max=2, start_rate=0.1)
    assert search.seeds == replication_seeds(6, 2)
    first = load_scenario(SERVING, overrides=over + [f"seed={search.seeds[0]}"])
    assert search.devices == network_devices(first) > 0
