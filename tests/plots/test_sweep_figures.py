"""Sweep figures drawn as the cells are: a key zipped with a panel key adds no curve, a panel
has the curves it holds, a curve looks the same in every panel, the legend names its key and
lists numbers in order, the title says how many replications are behind the points, a log
axis refuses what it cannot show, and a refused ``plot`` writes nothing. Capacity figures go
to the image file ``--out`` names (PNG, SVG or PDF)."""
import json
import shutil

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from multispin_sim.cli import main  # noqa: E402
from multispin_sim.outputs.records import read_table  # noqa: E402
from multispin_sim.plots.figures import load_sweep_output, render_figure  # noqa: E402
from multispin_sim.plots.output import PlotError  # noqa: E402

SWEEP = {
    "name": "zipped",
    "base": {"devices": {"count": 2}, "run": {"rounds": 5}},
    "sweep": {"grid": {"policy.mode": ["optimal", "all-ul", "all-dl"],
                       "server.dl_power_ratio": [16, 1, 4]},
              "zip": {"channel.bandwidth_mhz": [10, 20], "devices.ul_power_dbm": [20, 23]},
              "replications": 2, "seed": 7},
    "plot": [{"name": "by_ratio", "x": "server.dl_power_ratio", "y": "goodput_tps",
              "curves": "policy.mode", "panels": "channel.bandwidth_mhz"},
             {"name": "by_mode", "x": "policy.mode", "y": "comm_s_median",
              "panels": "channel.bandwidth_mhz"}],
}


@pytest.fixture(scope="module")
def sweep(swept):
    return swept(SWEEP, "zipped")


def _visible(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


def test_a_zipped_key_adds_no_curve_and_every_panel_has_its_curves(sweep):
    """``devices.ul_power_dbm`` is zipped with the panel key: it tells no points apart, so the
    curves are the modes alone; with the report's 5 curves a panel, the 3 modes of a panel stay
    together (not split by the 6 of the cross product, leaving an empty panel)."""
    from multispin_sim.report.sweep import MAX_CURVES, sweep_figures

    meta, cells = load_sweep_output(sweep)
    for kwargs in ({}, {"max_curves": MAX_CURVES, "legend_outside": True, "max_cols": 2}):
        fig, rows = render_figure(meta["plot"][0], meta, cells, **kwargs)
        axes = _visible(fig)
        assert len(axes) == 2
        for ax in axes:
            assert ax.get_legend_handles_labels()[1] == ["optimal", "all-ul", "all-dl"]
            assert ax.get_legend().get_title().get_text() == "mode selection"
        assert {r["curve"] for r in rows} == {"optimal", "all-ul", "all-dl"}
        # each point is one cell's mean
        for r in rows:
            row = ((cells["policy.mode"] == r["curve"]) & (cells["server.dl_power_ratio"] == r["x"])
                   & (cells["channel.bandwidth_mhz"].astype(str) == r["panel"]))
            assert row.sum() == 1 and cells["goodput_tps_mean"][row][0] == r["mean"]
    # a curve keeps its marker and colour from panel to panel
    fig, _ = render_figure(meta["plot"][0], meta, cells)
    styles = [{label: (h.lines[0].get_marker(), h.lines[0].get_color())
               for h, label in zip(*ax.get_legend_handles_labels())} for ax in _visible(fig)]
    assert styles[0] == styles[1] and len(set(styles[0].values())) == 3
    # the report's figures: every label inside the image, no panel without a curve
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = sweep_figures(meta, cells)[0][0]
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer, page = canvas.get_renderer(), fig.bbox
    for ax in _visible(fig):
        assert ax.get_legend_handles_labels()[1]
        for t in [ax.xaxis.label, ax.yaxis.label, ax.title, *ax.get_legend().get_texts(),
                  ax.get_legend().get_title()]:
            box = t.get_window_extent(renderer)
            assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1, t.get_text()


def test_legends_name_the_key_and_list_numbers_in_order(sweep):
    """The swept power ratio (16, 1, 4 in the sweep file) becomes the curves of a figure that
    does not name it: the legend's title is its name, its entries the values in numeric
    order, one colour each."""
    meta, cells = load_sweep_output(sweep)
    fig, rows = render_figure(meta["plot"][1], meta, cells)
    for ax in _visible(fig):
        assert ax.get_legend_handles_labels()[1] == ["1", "4", "16"]
        assert ax.get_legend().get_title().get_text().startswith("DL-to-UL power-budget ratio")
    assert {r["curve"] for r in rows} == {"1", "4", "16"}


def test_the_title_counts_the_replications_behind_the_points(sweep):
    meta, cells = load_sweep_output(sweep)
    spec = meta["plot"][0]
    title = render_figure(spec, dict(meta, replications=5), cells)[0].get_suptitle()
    assert "over 2 replications" in title and "over 5" not in title   # cells.csv's n
    one = {k: (np.ones_like(cells["n"]) if k == "n" or k.endswith("_n") else v)
           for k, v in cells.items()}   # one replication behind every mean
    assert "no CI" in render_figure(spec, meta, one)[0].get_suptitle()
    # an interrupted sweep: cells without a run are not drawn, and the title says so
    part = {k: (np.where(cells["policy.mode"] == "optimal", v, 0)
                if k == "n" or k.endswith("_n") else v) for k, v in cells.items()}
    for m in ("goodput_tps_mean", "goodput_tps_ci95_lo", "goodput_tps_ci95_hi"):
        part[m] = np.where(part["n"] > 0, cells[m], np.nan)
    fig, rows = render_figure(spec, dict(meta, status="interrupted"), part)
    title = fig.get_suptitle()
    assert "interrupted" in title and "12 cells without a finished run" in title
    for ax in _visible(fig):
        assert ax.get_legend_handles_labels()[1] == ["optimal"]
    assert len(rows) == 18   # the CSV keeps every cell


def test_logx_refuses_what_a_log_axis_cannot_show(sweep, tmp_path, capsys):
    meta, cells = load_sweep_output(sweep)
    with pytest.raises(PlotError, match="not numeric"):
        render_figure({"name": "c", "x": "policy.mode", "y": "goodput_tps", "logx": True},
                      meta, cells)
    zero = dict(cells, **{"server.dl_power_ratio": np.where(
        cells["server.dl_power_ratio"] == 1, 0, cells["server.dl_power_ratio"])})
    with pytest.raises(PlotError, match="takes the value 0"):
        render_figure({"name": "z", "x": "server.dl_power_ratio", "y": "goodput_tps",
                       "logx": True}, meta, zero)
    # logy: a metric at 0 somewhere (a curve that would lose its points); above 0 it draws
    none = dict(cells, goodput_tps_mean=np.where(cells["policy.mode"] == "all-ul", 0.0,
                                                 cells["goodput_tps_mean"]))
    with pytest.raises(PlotError, match="logy: goodput_tps takes the value 0"):
        render_figure({"name": "y", "x": "server.dl_power_ratio", "y": "goodput_tps",
                       "logy": True}, meta, none)
    assert render_figure({"name": "y", "x": "server.dl_power_ratio", "y": "goodput_tps",
                          "logy": True}, meta, cells)[1]
    # the command: exit 2, one line, no figure and no folder
    folder = tmp_path / "copy"
    shutil.copytree(sweep, folder, ignore=shutil.ignore_patterns("figures", "runs"))
    doc = json.loads((folder / "sweep.json").read_text())
    doc["plot"].append({"name": "late", "x": "policy.mode", "y": "goodput_tps", "logx": True})
    (folder / "sweep.json").write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["plot", str(folder)]) == 2
    assert "late: logx" in capsys.readouterr().err
    assert not (folder / "figures").exists()


def test_a_refused_plot_writes_nothing(sweep, capacity_folder, tmp_path, capsys):
    folder = tmp_path / "copy"
    shutil.copytree(sweep, folder, ignore=shutil.ignore_patterns("figures", "runs"))
    doc = json.loads((folder / "sweep.json").read_text())
    doc["plot"].append({"name": "miss", "x": "policy.mode", "y": "requests_slo_attainment"})
    (folder / "sweep.json").write_text(json.dumps(doc))
    bad_capacity = tmp_path / "badcap"
    shutil.copytree(capacity_folder, bad_capacity)
    text = (bad_capacity / "capacity.csv").read_text()
    (bad_capacity / "capacity.csv").write_text(text[:-5])   # cut mid-row
    for argv in ([str(folder)], [str(folder), "--out", str(tmp_path / "new" / "figs")],
                 [str(bad_capacity), "--out", str(tmp_path / "nd_cap" / "x")],
                 [str(capacity_folder), "--out", str(tmp_path / "nd_jpg" / "c.jpg")]):
        assert main(["plot", *argv]) == 2
        assert capsys.readouterr().err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["badcap", "cap", "copy"]
    assert not (folder / "figures").exists()
    assert sorted(p.name for p in bad_capacity.iterdir()) == ["capacity.csv", "capacity.json",
                                                             "capacity_reps.csv"]


@pytest.mark.parametrize("name, magic", [("fig.svg", b"<?xml"), ("fig.pdf", b"%PDF"),
                                         ("fig.png", b"\x89PNG")])
def test_capacity_out_names_the_image_file(capacity_folder, tmp_path, name, magic, capsys):
    out = tmp_path / "capout" / name
    assert main(["plot", str(capacity_folder), "--out", str(out)]) == 0
    assert capsys.readouterr().out.split() == [str(out)]
    assert out.is_file() and out.read_bytes().startswith(magic)
    # an existing folder, even with a dot in its name, takes capacity.png
    (tmp_path / "v1.2").mkdir()
    assert main(["plot", str(capacity_folder), "--out", str(tmp_path / "v1.2")]) == 0
    assert (tmp_path / "v1.2" / "capacity.png").is_file()
    assert read_table(capacity_folder / "capacity.csv")["rate_per_s"].size


def test_plot_of_an_incomplete_sweep_warns(sweep, tmp_path, capsys):
    folder = tmp_path / "copy"
    shutil.copytree(sweep, folder, ignore=shutil.ignore_patterns("figures", "runs"))
    doc = json.loads((folder / "sweep.json").read_text())
    (folder / "sweep.json").write_text(json.dumps(dict(doc, status="interrupted")))
    assert main(["plot", str(folder)]) == 0
    assert "warning: the sweep is not complete (status 'interrupted'" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["plot", "report"])
def test_a_capacity_folder_without_its_table_is_refused_in_one_line(capacity_folder, command,
                                                                    capsys):
    (capacity_folder / "capacity.csv").unlink()
    capsys.readouterr()
    assert main([command, str(capacity_folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "capacity.csv: not found" in err
    assert sorted(p.name for p in capacity_folder.iterdir()) == ["capacity.json",
                                                                "capacity_reps.csv"]
