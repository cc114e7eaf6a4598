"""Tests of multispin_sim.plots: sweep figures (PNG + CSV) and the round timeline, from files."""
import json
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("matplotlib")

from multispin_sim import load_scenario, simulate  # noqa: E402
from multispin_sim.cli import main  # noqa: E402
from multispin_sim.experiments import load_sweep, run_sweep  # noqa: E402
from multispin_sim.outputs.records import read_table  # noqa: E402
from multispin_sim.plots import timeline_segments  # noqa: E402
from multispin_sim.plots.figures import load_sweep_output, render_figure  # noqa: E402
from multispin_sim.plots.output import PlotError  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

SWEEP = {
    "name": "plots",
    "base": {"devices": {"count": 3}, "run": {"rounds": 20}},
    "sweep": {"grid": {"model_pair": ["qwen2.5", "deepseek-r1"],
                       "server.dl_power_dbm": [10, 20, 30],
                       "policy.mode": ["optimal", "all-ul"]},
              "replications": 2, "seed": 5},
    "plot": [
        {"name": "goodput", "x": "server.dl_power_dbm", "y": "goodput_tps", "curves": "policy.mode",
         "panels": "model_pair"},
        {"name": "modes", "x": "server.dl_power_dbm", "y": ["share_accepted", "share_ul",
                                                            "share_dl"],
         "panels": "model_pair"},
        {"name": "by_mode", "x": "policy.mode", "y": "comm_s_median", "logy": True},
    ],
}


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "out"
    run_sweep(load_sweep(SWEEP), out, executor="serial")
    return out


def test_plot_command_writes_png_and_csv_per_figure(sweep_dir, capsys):
    assert main(["plot", str(sweep_dir)]) == 0
    printed = capsys.readouterr().out.split()
    figs = sweep_dir / "figures"
    for name in ("goodput", "modes", "by_mode"):
        png, csv = figs / f"{name}.png", figs / f"{name}.csv"
        assert str(png) in printed and str(csv) in printed
        assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 5000
    cells = read_table(sweep_dir / "cells.csv")
    data = read_table(figs / "goodput.csv")
    assert len(data["x"]) == 12  # 2 panels x 2 curves x 3 powers
    assert set(data["panel"]) == {"qwen2.5",
                                  "deepseek-r1"} and set(data["curve"]) == {"optimal", "all-ul"}
    for i in range(12):
        row = ((cells["model_pair"] == data["panel"][i])
               & (cells["policy.mode"] == data["curve"][i])
               & (cells["server.dl_power_dbm"] == data["x"][i]))
        assert row.sum() == 1
        assert data["mean"][i] == cells["goodput_tps_mean"][row][0]
        assert data["ci95_lo"][i] == cells["goodput_tps_ci95_lo"][row][0]
        assert data["n"][i] == 2
    modes = read_table(figs / "modes.csv")
    # policy.mode is swept but not named in the figure: it becomes curves (no silent averaging)
    assert len(modes["x"]) == 2 * 3 * 2 * 3 and set(modes["metric"]) == {"share_accepted",
                                                                         "share_ul", "share_dl"}
    by_mode = read_table(figs / "by_mode.csv")
    assert set(by_mode["x"]) == {"optimal", "all-ul"}


def test_plot_without_plot_section_draws_goodput(tmp_path):
    doc = {k: v for k, v in SWEEP.items() if k != "plot"}
    doc["sweep"] = {"grid": {"server.dl_power_dbm": [10, 30]}, "replications": 2}
    run_sweep(load_sweep(doc), tmp_path / "out", executor="serial")
    assert main(["plot", str(tmp_path / "out"), "--out", str(tmp_path / "figs")]) == 0
    assert (tmp_path / "figs" / "goodput_tps.png").read_bytes()[:8] == PNG_MAGIC
    assert len(read_table(tmp_path / "figs" / "goodput_tps.csv")["x"]) == 2


def test_capacity_curve_to_its_folder_a_png_or_another_folder(capacity_folder, tmp_path,
                                                             capsys):
    """A capacity folder gets one figure: capacity.png beside the CSV, or where --out says (a
    PNG file, or a folder to hold capacity.png); no sweep 'figures' folder appears."""
    folder = capacity_folder
    for out, png in ((None, folder / "capacity.png"), (tmp_path / "a" / "c.png", None),
                     (tmp_path / "b", tmp_path / "b" / "capacity.png")):
        png = png or out
        assert main(["plot", str(folder)] + (["--out", str(out)] if out else [])) == 0
        assert capsys.readouterr().out.split() == [str(png)]
        assert png.read_bytes()[:8] == PNG_MAGIC
    assert sorted(p.name for p in folder.iterdir()) == ["capacity.csv", "capacity.json",
                                                        "capacity.png", "capacity_reps.csv"]
    # an interval end one ulp inside its mean (as earlier versions wrote at 100% attainment)
    # is drawn as a zero error bar, not refused
    text = (folder / "capacity.csv").read_text().splitlines()
    head = text[0].split(",")
    row = text[1].split(",")
    row[head.index("ci95_hi")] = repr(float(row[head.index("attainment_mean")]) - 1e-16)
    (folder / "capacity.csv").write_text("\n".join([text[0], ",".join(row)] + text[2:]) + "\n")
    assert main(["plot", str(folder)]) == 0


def test_timeline_from_a_small_run(tmp_path, capsys):
    run = tmp_path / "run"
    simulate(load_scenario(None, {"devices.count": 4, "run.rounds": 10, "seed": 3,
                                  "server.dl_power_ratio": 16}), out=run)
    out = tmp_path / "tl.png"
    assert main(["plot", "--timeline", str(run), "--rounds", "3", "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG_MAGIC and out.with_suffix(".csv").exists()
    assert main(["plot", "--timeline", str(run), "--rounds",
                 "2"]) == 0  # default: in the run folder
    assert (run / "timeline.png").exists()

    segs = timeline_segments(run, rounds=3)
    rounds = read_table(run / "rounds.csv")
    dr = read_table(run / "device_rounds.csv")
    assert {s[1] for s in segs} == {0, 1, 2}
    for r in range(3):
        start, end = rounds["start_s"][r], rounds["start_s"][r] + rounds["duration_s"][r]
        ver = [s for s in segs if s[0] == "server" and s[1] == r]
        assert len(ver) == 1 and ver[0][4] - ver[0][3] == pytest.approx(rounds["verify_s"][r])
        for k in range(4):
            lane = sorted((s for s in segs if s[0] == f"device {k}" and s[1] == r),
                          key=lambda s: s[3])
            # a device's segments tile its round: no gap, no overlap
            assert lane[0][3] == pytest.approx(start) and lane[-1][4] == pytest.approx(end)
            for a, b in zip(lane, lane[1:]):
                assert a[4] == pytest.approx(b[3])
            row = (dr["round"] == r) & (dr["device"] == k)
            tx = [s for s in lane if s[2] in ("ul", "dl")]
            if dr["mode"][row][0] in ("ul", "dl"):
                assert len(tx) == 1 and tx[0][2] == dr["mode"][row][0]
                assert tx[0][4] - tx[0][3] == pytest.approx(dr["delay_s"][row][0])
            else:
                assert not tx
    kinds = {s[2] for s in segs}
    assert {"drafting", "waiting", "verification"} <= kinds
    # a later window reads the device rows up to its last round: each of its device lanes has
    # the rows of its rounds
    later = timeline_segments(run, rounds=3, first=6)
    assert {s[1] for s in later} == {6, 7, 8}
    for r in (6, 7, 8):
        assert {s[0] for s in later if s[1] == r} == \
            {f"device {k}" for k in dr["device"][dr["round"] == r]} | {"server"}
    # a device_rounds.csv without a column the chart draws: one line naming it, exit 2
    text = (run / "device_rounds.csv").read_text().splitlines()
    col = text[0].split(",").index("delay_s")
    (run / "device_rounds.csv").write_text("\n".join(
        ",".join(v for j, v in enumerate(line.split(",")) if j != col) for line in text) + "\n")
    capsys.readouterr()
    assert main(["plot", "--timeline", str(run), "--out", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "no column delay_s" in err and err.count("\n") == 1 and not (tmp_path / "x.png").exists()


def test_plot_errors_exit_2(tmp_path, capsys):
    assert main(["plot", str(tmp_path)]) == 2
    assert "sweep.json: not found" in capsys.readouterr().err
    (tmp_path / "rounds.csv").write_text("round\n0\n")   # a run's folder: --timeline says how
    assert main(["plot", str(tmp_path)]) == 2
    assert f"plot --timeline {tmp_path}" in capsys.readouterr().err
    assert not (tmp_path / "figures").exists()
    (tmp_path / "rounds.csv").unlink()
    assert main(["plot", "--timeline", str(tmp_path), "--out", str(tmp_path / "new" / "t.png")]) == 2
    assert "rounds.csv: not found" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
    assert main(["plot"]) == 2


@pytest.mark.parametrize("y, words", [
    ("requests_latency_s_median", "no requests_... metric"),   # no queued requests here
    ("goodput_tsp", "did you mean 'goodput_tps'?"),
])
def test_a_metric_the_runs_lack_is_named_with_what_there_is(sweep_dir, y, words):
    meta, cells = load_sweep_output(sweep_dir)
    with pytest.raises(PlotError) as info:
        render_figure({"name": "f", "x": "server.dl_power_dbm", "y": y}, meta, cells)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_a_figure_that_cannot_be_drawn_stops_plot_before_any_is_written(sweep_dir, tmp_path,
                                                                        capsys):
    folder = tmp_path / "copy"
    shutil.copytree(sweep_dir, folder, ignore=shutil.ignore_patterns("figures"))
    meta = json.loads((folder / "sweep.json").read_text())
    meta["plot"].append({"name": "late", "x": "server.dl_power_dbm",
                         "y": "requests_latency_s_median"})
    (folder / "sweep.json").write_text(json.dumps(meta))
    assert main(["plot", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "late: cells.csv has no metric" in err and err.count("\n") == 1
    assert not any((folder / "figures").glob("*"))   # checked, maybe made, and left empty


def test_plots_read_files_only_and_import_matplotlib_lazily(sweep_dir, tmp_path):
    code = (
        "import sys\n"
        "import multispin_sim.plots as p\n"
        "assert 'matplotlib' not in sys.modules\n"
        f"p.plot_sweep({str(sweep_dir)!r}, out={str(tmp_path / 'f')!r})\n"
        "assert 'matplotlib' in sys.modules\n"
        "bad = [m for m in sys.modules if m.startswith(('multispin_sim.engine', "
        "'multispin_sim.experiments', 'simpy', 'matplotlib.pyplot'))]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
