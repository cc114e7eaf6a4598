"""The benchmarks' timing helpers (``benchmarks/abtest.py``): the order of interleaved runs, the
ratios they report, and the scenario variants ``against`` times, on a clock the test sets."""
import json

import pytest

from multispin_sim.benchmarks import abtest


@pytest.fixture
def clock(monkeypatch):
    """``timed`` replaced: each call runs the function and returns the (wall, CPU) seconds the
    test gives for it (``clock.seconds``: function -> list of durations, taken in turn); the
    calls are kept in ``clock.order``."""
    class Clock:
        seconds = {}
        order = []

        def timed(self, fn):
            fn()
            self.order.append(fn)
            wall = self.seconds[fn].pop(0)
            return wall, 2 * wall

    c = Clock()
    monkeypatch.setattr(abtest, "timed", c.timed)
    return c


def test_interleaved_alternates_the_order_and_takes_the_median_of_the_pair_ratios(clock):
    def a():
        pass

    def b():
        pass
    clock.seconds = {a: [1.0, 1.0, 2.0, 1.0], b: [3.0, 1.5, 2.0, 10.0]}
    res = abtest.interleaved(a, b, pairs=4)
    assert clock.order == [a, b, b, a, a, b, b, a]
    # pair ratios b / a: 3, 1.5, 1, 10 -> median 2.25 (wall); CPU is twice wall on both sides
    assert res["ratio_wall"] == pytest.approx(2.25)
    assert res["ratio_cpu"] == pytest.approx(2.25)
    assert res["a_wall_s"] == [1.0, 1.0, 2.0, 1.0] and res["b_cpu_s"] == [6.0, 3.0, 4.0, 20.0]


def test_interleaved_runs_at_least_three_pairs(clock):
    def a():
        pass

    def b():
        pass
    clock.seconds = {a: [1.0] * 3, b: [1.0] * 3}
    assert abtest.interleaved(a, b, pairs=1)["pairs"] == 3
    assert len(clock.order) == 6


def test_scenario_run_writes_a_fresh_folder_each_time_and_keeps_the_summary(tmp_path):
    run = abtest.scenario_run(tmp_path, {"run.rounds": 3, "devices.count": 2})
    run()
    first = run.summary
    run()
    folders = sorted(p for p in tmp_path.iterdir() if p.is_dir())
    assert len(folders) == 2
    for folder in folders:
        assert json.loads((folder / "summary.json").read_text())["rounds"] == 3
    assert first["rounds"] == run.summary["rounds"] == 3


def test_timed_runs_leave_no_folder_behind_and_keep_their_summary(tmp_path):
    """A timed scenario run's folder is removed after the clock stops (kept, the runs' files
    pile up pages the kernel writes back during the next runs); its summary stays."""
    run = abtest.scenario_run(tmp_path, {"run.rounds": 3, "devices.count": 2})
    wall, cpu = abtest.timed(run)
    assert wall > 0 and cpu > 0
    assert run.summary["rounds"] == 3 and not any(tmp_path.iterdir())


def test_against_reports_each_case_relative_to_the_base(clock, tmp_path, monkeypatch, capsys):
    made = []
    real = abtest.scenario_run

    def scenario_run(folder, overrides=None):
        run = real(folder, overrides)
        made.append((overrides, run))
        return run
    monkeypatch.setattr(abtest, "scenario_run", scenario_run)

    class Seconds(dict):
        """The base run takes 1 s of wall time, the case 4 s (the warm-up is not timed)."""

        def __missing__(self, fn):
            overrides = next(o for o, r in made if r is fn)
            return [4.0] * 3 if "devices.count" in overrides else [1.0] * 3
    clock.seconds = Seconds()
    figures = abtest.against({"seed": 5}, {"two devices": {"devices.count": 2}}, 100, 3,
                             tmp_path, "the default")
    fig = figures["two devices"]
    assert fig["ratio"] == pytest.approx(0.25) and fig["ratio_cpu"] == pytest.approx(0.25)
    assert fig["rounds_per_s"] == pytest.approx(25.0)
    assert fig["base_rounds_per_s"] == pytest.approx(100.0)
    # base, warm-up and case: each the base's overrides (plus the case's), with the rounds asked
    assert [o.get("devices.count") for o, _ in made] == [None, None, 2]
    assert all(o["seed"] == 5 and o["run.rounds"] == 100 for o, _ in made)
    assert "0.25 of the default" in capsys.readouterr().out
