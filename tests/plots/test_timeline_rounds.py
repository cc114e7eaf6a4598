"""The timeline and the compute series against the run's own files: throttled drafting, the
corrections a deadline carries into the next round, a run's tables never replaced by a chart
written into its folder, and nothing written when the command is refused."""
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from multispin_sim.cli import main  # noqa: E402
from multispin_sim.outputs.records import read_table  # noqa: E402
from multispin_sim.plots import PlotError, compute_timeseries, plot_compute_timeseries  # noqa: E402
from multispin_sim.plots import timeline_segments  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _run(out, *args, scenario=None):
    argv = ["run", *([str(ROOT / "scenarios" / scenario)] if scenario else []), *args,
            "--out", str(out), "--quiet"]
    assert main(argv) == 0
    return out


def _lanes(segs, r):
    lanes = {}
    for s in segs:
        if s[1] == r and s[0] != "server":
            lanes.setdefault(s[0], []).append(s)
    return {k: sorted(v, key=lambda s: s[3]) for k, v in lanes.items()}


def _tiles(segs, rt):
    """Every device lane of every round drawn covers the round exactly, segment after segment."""
    for r in sorted({s[1] for s in segs}):
        start, end = rt["start_s"][r], rt["start_s"][r] + rt["duration_s"][r]
        for lane in _lanes(segs, r).values():
            assert lane[0][3] == pytest.approx(start, abs=1e-12)
            assert lane[-1][4] == pytest.approx(end, abs=1e-12), (r, lane)
            for a, b in zip(lane, lane[1:]):
                assert a[4] == pytest.approx(b[3], abs=1e-12)


@pytest.fixture(scope="module")
def throttled(tmp_path_factory):
    """A Jetson fleet that heats up within a few rounds (1 s time constant, 30 degC limit)."""
    return _run(tmp_path_factory.mktemp("jet") / "run", "--rounds", "40",
                "--set", "compute.time_constant_s=1", "--set", "compute.throttle_c=30",
                "--set", "compute.release_c=28", scenario="compute/jetson-fleet.yaml")


def test_throttled_drafting_lasts_its_slowdown_times_longer(throttled):
    rt, dr = read_table(throttled / "rounds.csv"), read_table(throttled / "device_rounds.csv")
    dev = read_table(throttled / "devices.csv")
    slow = dr["slowdown"] > 1
    assert (slow & (dr["draft_len"] > 0)).any()
    first = int(dr["round"][slow & (dr["draft_len"] > 0)][0])
    segs = timeline_segments(throttled, rounds=10, first=first)
    t_k = dict(zip(dev["device"].tolist(), dev["draft_latency_s"].tolist()))
    for r in sorted({s[1] for s in segs}):
        start = rt["start_s"][r]
        lanes = _lanes(segs, r)
        ends = []
        for j in np.flatnonzero(dr["round"] == r):
            k = int(dr["device"][j])
            drafting = [s for s in lanes[f"device {k}"] if s[2] == "drafting"]
            want = dr["draft_len"][j] * t_k[k] * dr["slowdown"][j]
            got = drafting[0][4] - drafting[0][3] if drafting else 0.0
            assert got == pytest.approx(want, rel=1e-12, abs=1e-15)
            ends.append(start + got)
        # the slowest draft is the round's drafting phase (rounds.csv draft_s)
        assert max(ends) == pytest.approx(start + rt["draft_s"][r], rel=1e-12)
    _tiles(segs, rt)


@pytest.fixture(scope="module")
def deadline(tmp_path_factory):
    """A deadline run whose carried corrections are long next to a short drafting and
    verification (1 ms a token, 0.5 ms verification): some outlast both."""
    return _run(tmp_path_factory.mktemp("deadline") / "run", "--rounds", "40",
                "--set", "policy.mode=deadline", "--set", "straggler.deadline_ms=3",
                "--set", "policy.draft=fixed", "--set", "policy.draft_length=1",
                "--set", "server.verify_fixed_ms=0.5", "--set", "server.verify_per_device_ms=0.1",
                "--set", "devices.draft_latency_ms=1", "--set", "devices.count=8",
                "--set", "seed=3")


def test_carried_corrections_are_sent_from_the_round_start(deadline):
    """docs/components/csi.md: a carried correction (rejected 0 and a mode) is sent from the
    start of the round while the others draft; the round's own corrections start once the
    carried ones have ended, and the round ends with the last correction."""
    rt, dr = read_table(deadline / "rounds.csv"), read_table(deadline / "device_rounds.csv")
    segs = timeline_segments(deadline, rounds=40)
    carried = (dr["rejected"] == 0) & (dr["mode"] != "")
    assert carried.any()
    waited = 0
    for r in np.unique(dr["round"][carried]).tolist():
        start = rt["start_s"][r]
        ver_end = start + rt["draft_s"][r] + rt["verify_s"][r]
        lanes = _lanes(segs, r)
        rows = np.flatnonzero(dr["round"] == r)
        carry_end = start
        for j in rows[carried[rows]]:
            tx = [s for s in lanes[f"device {dr['device'][j]}"] if s[2] in ("ul", "dl")]
            assert len(tx) == 1 and tx[0][2] == dr["mode"][j]
            assert tx[0][3] == start and tx[0][4] == pytest.approx(start + dr["delay_s"][j])
            carry_end = max(carry_end, tx[0][4])
        for j in rows[~carried[rows] & (dr["mode"][rows] != "")]:
            tx = [s for s in lanes[f"device {dr['device'][j]}"] if s[2] in ("ul", "dl")]
            assert tx[0][3] == pytest.approx(max(ver_end, carry_end))
            waited += carry_end > ver_end
    assert waited   # the run has a round whose own corrections waited for a carried one
    for s in segs:   # nothing drawn past its round's end
        r = s[1]
        assert s[4] <= rt["start_s"][r] + rt["duration_s"][r] + 1e-12
    _tiles(segs, rt)


def test_a_chart_in_the_run_folder_never_replaces_its_tables(deadline, tmp_path, capsys):
    """``--out RUN/rounds.png`` would put the segments in the run's rounds.csv: refused (exit 2,
    one line naming the file), nothing written, and the report still reads the run; the same
    for the compute series. A CSV the command wrote itself is replaced when drawn again."""
    before = {p.name: p.read_bytes() for p in deadline.iterdir() if p.is_file()}
    for name in ("rounds", "device_rounds", "devices"):
        out = deadline / f"{name}.png"
        code = main(["plot", "--timeline", str(deadline), "--out", str(out)])
        with pytest.raises(PlotError, match=f"{name}.csv"):
            plot_compute_timeseries(deadline, out=out, window_s=0.01)
        assert {p.name: p.read_bytes() for p in deadline.iterdir() if p.is_file()} == before
        assert code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(deadline / f"{name}.csv") in err
    assert main(["report", str(deadline), "--out", str(tmp_path / "r.html")]) == 0
    capsys.readouterr()
    out = deadline / "mine.png"
    for _ in range(2):
        assert main(["plot", "--timeline", str(deadline), "--out", str(out)]) == 0
        assert capsys.readouterr().out.split() == [str(out), str(deadline / "mine.csv")]
    assert read_table(deadline / "mine.csv")["kind"].size
    out.unlink()
    (deadline / "mine.csv").unlink()


def test_a_refused_timeline_writes_nothing(deadline, tmp_path, capsys):
    cases = [
        ["--timeline", str(deadline), "--first", "9999", "--out", str(tmp_path / "a" / "t.png")],
        ["--timeline", str(tmp_path / "empty"), "--out", str(tmp_path / "b" / "t.png")],
        ["--timeline", str(deadline), "--out", str(tmp_path / "c" / "t.jpg")],
    ]
    (tmp_path / "empty").mkdir()
    for argv in cases:
        assert main(["plot", *argv]) == 2
        assert capsys.readouterr().err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]
    assert not any((tmp_path / "empty").iterdir())


def test_compute_series_refuse_a_run_of_several_cells(tmp_path):
    """The merged tables of several cells number rounds and devices within each cell: binning
    them as one run's would mix the cells; the series name a cell folder instead."""
    out = _run(tmp_path / "run", "--set", "cells.layout=hex", "--set", "cells.count=7",
               "--set", "devices.count=7", "--rounds", "6")
    with pytest.raises(PlotError, match="cell_0"):
        compute_timeseries(out)
    with pytest.raises(PlotError, match="several cells"):
        plot_compute_timeseries(out, out=tmp_path / "figs" / "c.png")
    assert not (tmp_path / "figs").exists()
    assert compute_timeseries(out / "cell_0")["goodput_tps"].size


@pytest.mark.parametrize("cut", ["mid-row", "at-a-line-end"])
def test_a_device_table_cut_within_the_rounds_drawn_is_refused(tmp_path, capsys, cut):
    run = _run(tmp_path / "run", "--rounds", "5")
    table = run / "device_rounds.csv"
    lines = table.read_bytes().splitlines(keepends=True)
    kept = b"".join(lines[:30])   # the header, round 0 and 9 rows of round 1 (20 devices)
    table.write_bytes(kept[:-4] if cut == "mid-row" else kept)
    assert main(["plot", "--timeline", str(run), "--out", str(tmp_path / "t.png")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "device_rounds.csv" in err
    assert ("no line end" if cut == "mid-row" else "9 rows of round 1") in err
    assert not (tmp_path / "t.png").exists()
