"""``multispin-sim report``: a self-contained report.html for a run and for a sweep, checked as
text (no network, no script, figures as decodable PNG, headline numbers equal to sums
recomputed from the CSVs) and in a real browser: headless Chromium renders it, every image
loads, nothing is logged to the console as an error, and the screenshot is not blank. Without a
browser (outside CI) the browser test skips with a message; ``.ci/run`` installs Debian's
``chromium``."""
import base64
import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from multispin_sim.cli import main
from multispin_sim.outputs.records import read_table
from multispin_sim.report.run import device_axis

pytest.importorskip("matplotlib", reason="the report draws figures with matplotlib (the 'plot' extra)")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "run"
    assert main(["run", "--set", "devices.count=4", "--rounds", "80", "--out", str(out), "--quiet"]) == 0
    return out


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    base = tmp_path_factory.mktemp("sweep")
    (base / "mini.yaml").write_text(
        "name: mini\nbase: {devices: {count: 3}, run: {rounds: 30}}\n"
        "sweep:\n  grid:\n    policy.mode: [optimal, all-dl]\n    server.dl_power_ratio: [4, 16]\n"
        "  replications: 2\n  seed: 3\n", encoding="utf-8")
    out = base / "out"
    assert main(["sweep", str(base / "mini.yaml"), "--out", str(out), "--executor", "serial"]) == 0
    return out


def _pngs(text):
    images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)
    sizes = []
    for data in images:
        raw = base64.b64decode(data, validate=True)
        assert raw[:8] == b"\x89PNG\r\n\x1a\n" and raw[12:16] == b"IHDR"
        sizes.append(struct.unpack(">II", raw[16:24]))
    return sizes


def _self_contained(text):
    assert "<script" not in text.lower()
    assert not re.search(r'(src|href)="(https?:)?//', text), "the page refers to the network"
    assert not re.search(r'src="(?!data:)', text), "the page refers to another file"


def test_run_report(run_dir, capsys):
    assert main(["report", str(run_dir)]) == 0
    path = run_dir / "report.html"
    assert capsys.readouterr().out.strip() == str(path)
    text = path.read_text(encoding="utf-8")
    _self_contained(text)
    sizes = _pngs(text)
    assert len(sizes) == 4 and all(w > 300 and h > 150 for w, h in sizes)   # goodput, comm, UL/DL, timeline
    rt = read_table(run_dir / "rounds.csv")
    goodput = rt["tokens"].sum() / rt["duration_s"].sum()                   # the ratio of sums
    summary = json.loads((run_dir / "summary.json").read_text())
    lo, hi = summary["goodput_ci95"]
    assert f"{goodput:.2f}" in text and f"{lo:.2f} to {hi:.2f}" in text
    budget = [rt[c].sum() / rt["duration_s"].sum() for c in ("draft_s", "verify_s", "comm_s")]
    assert (f"drafting {budget[0]:.0%}, verification {budget[1]:.0%}, communication "
            f"{budget[2]:.0%}") in text
    assert f"{summary['ul_corrections']:,} / {summary['dl_corrections']:,}" in text
    for section in ("Warnings", "Figures", "Scenario", "How it was made"):
        assert f"<h2>{section}</h2>" in text
    assert "name: default" in text                                          # the scenario
    made = text.split("<h2>How it was made</h2>")[1]      # what reproducing the bytes needs
    meta = json.loads((run_dir / "run.json").read_text())
    for key in ("code_sha256", "packages", "numpy_simd", "compiled_search", "numba_allowed"):
        assert f"&quot;{key}&quot;" in made
    assert meta["packages"]["numpy"] in made


def test_report_and_timeline_of_a_run_of_several_cells(tmp_path, capsys):
    """A run of 7 cells merges its cells' rounds in one rounds.csv: the report draws the timeline
    of cell 0 (its own folder), and ``plot --timeline`` of the merged folder names that folder
    instead of drawing every cell's rounds as one."""
    out = tmp_path / "run"
    assert main(["run", "--set", "cells.layout=hex", "--set", "cells.count=7", "--set",
                 "devices.count=14", "--rounds", "12",
                 "--out", str(out), "--quiet"]) == 0
    assert main(["report", str(out)]) == 0
    text = (out / "report.html").read_text(encoding="utf-8")
    assert len(_pngs(text)) == 4 and "timeline not drawn" not in text
    assert "The first three rounds of cell 0:" in text and "<h2>Cells</h2>" in text
    # per-device figures: one place per (cell, device), each device-round at its own device
    dev, dr = read_table(out / "devices.csv"), read_table(out / "device_rounds.csv")
    places, at, label = device_axis(dev, dr)
    assert len(set(places.tolist())) == len(dev["device"]) == 7 * 14 and "cell by cell" in label
    assert (dev["cell"][at] == dr["cell"]).all() and (dev["device"][at] == dr["device"]).all()
    capsys.readouterr()
    assert main(["plot", "--timeline", str(out)]) == 2
    err = capsys.readouterr().err
    assert "a run of several cells" in err and str(out / "cell_0") in err and err.count("\n") == 1
    assert not (out / "timeline.png").exists()
    assert main(["plot", "--timeline", str(out / "cell_0")]) == 0



def test_report_of_rounds_all_alike(tmp_path):
    """With too few devices drafting (off-under-load), every round is the same to rounding:
    the per-round goodput histogram takes one bin instead of failing on 40 bins of 1e-13."""
    out = tmp_path / "run"
    assert main(["run", "--set", "devices.count=10", "--set", "policy.draft=off-under-load",
                 "--rounds", "40", "--out", str(out), "--quiet"]) == 0
    assert main(["report", str(out)]) == 0
    text = (out / "report.html").read_text(encoding="utf-8")
    assert len(_pngs(text)) == 4 and "not drawn" not in text


def test_a_capacity_without_a_value_says_why(capacity_folder):
    """A search that found no capacity (verdict 'below', 'above', ...) shows its verdict, not
    Python's None."""
    result = json.loads((capacity_folder / "capacity.json").read_text())
    result.update(capacity_per_device_rps=None, verdict="below")
    (capacity_folder / "capacity.json").write_text(json.dumps(result))
    assert main(["report", str(capacity_folder)]) == 0
    text = (capacity_folder / "report.html").read_text(encoding="utf-8")
    assert "none (below)" in text and "None" not in text

def test_capacity_report(capacity_folder):
    """A capacity folder's page: the capacity and its interval, the curve as 'plot' draws it,
    and one table row per rate tried, in rate order."""
    folder = capacity_folder
    assert main(["report", str(folder)]) == 0
    text = (folder / "report.html").read_text(encoding="utf-8")
    _self_contained(text)
    assert len(_pngs(text)) == 1
    result = json.loads((folder / "capacity.json").read_text())
    rates = read_table(folder / "capacity.csv")["rate_per_s"]
    assert result["message"] in text
    table = text.split("<h2>Rates tried</h2>")[1]
    shown = [float(r) for r in re.findall(r"<tr><td>([0-9.e+-]+)</td>", table)]
    assert shown == pytest.approx(sorted(rates), rel=1e-3)


def test_sweep_report_lists_cells_and_failures(sweep_dir, tmp_path):
    path = tmp_path / "sweep.html"
    assert main(["report", str(sweep_dir), "--out", str(path)]) == 0
    text = path.read_text(encoding="utf-8")
    _self_contained(text)
    assert len(_pngs(text)) == 4                                # goodput, comm, shares, timeline
    with open(sweep_dir / "cells.csv") as f:
        cells = f.read().splitlines()[1:]
    assert text.count("<tr><td class=l>") == len(cells) == 4
    assert "No warnings." in text
    # a failed run is reported as a warning
    runs = (sweep_dir / "runs.csv").read_text().splitlines()
    runs[1] = runs[1].replace(",ok,,", ",failed,boom: out of memory,", 1)
    broken = tmp_path / "broken"
    shutil.copytree(sweep_dir, broken)
    (broken / "runs.csv").write_text("\n".join(runs) + "\n")
    assert main(["report", str(broken), "--out", str(tmp_path / "b.html")]) == 0
    assert "failed: boom: out of memory" in (tmp_path / "b.html").read_text()


def test_report_of_a_wrong_folder_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err)
    assert "neither a run folder" in err[1]


# ---------------------------------------------------------------------------- browser

PROBE = """<script>
window.__errors = [];
window.addEventListener('error', function (e) { window.__errors.push(String(e.message || e.target.src)); }, true);
window.addEventListener('load', function () {
  var imgs = document.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) { if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++; }
  var d = document.createElement('div'); d.id = 'probe';
  d.textContent = 'PROBE images=' + imgs.length + ' loaded=' + ok + ' errors=' + window.__errors.length;
  document.body.appendChild(d);
});
</script>"""


def _browser():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _chromium(browser, *args, timeout=120):
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def test_report_renders_in_headless_chromium(run_dir, tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("no headless Chromium found (CI installs it: apt-get install chromium); "
                    "the report page is not checked in a browser here")
    main(["report", str(run_dir)])
    page = run_dir / "report.html"
    text = page.read_text(encoding="utf-8")
    # 1. every image decodes and no error event fires: a probe script reads the DOM after load
    probe = tmp_path / "probe.html"
    probe.write_text(text.replace("</head>", PROBE + "</head>", 1), encoding="utf-8")
    dom = _chromium(browser, "--virtual-time-budget=10000", "--dump-dom", probe.as_uri())
    match = re.search(r"PROBE images=(\d+) loaded=(\d+) errors=(\d+)", dom.stdout)
    assert match, f"the page did not finish loading in Chromium: {dom.stderr[-2000:]}"
    images, loaded, errors = map(int, match.groups())
    assert images == 4 and loaded == 4 and errors == 0
    # 2. the page itself (no probe): a screenshot, and nothing on the console
    shot = tmp_path / "report.png"
    res = _chromium(browser, "--window-size=1200,2400", "--enable-logging=stderr", "--v=0",
                    f"--screenshot={shot}", page.as_uri())
    console = [line for line in res.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert console == [], console
    assert shot.is_file(), res.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(str(shot))[..., :3]
    assert pixels.shape[0] >= 2000 and pixels.shape[1] >= 1100
    not_white = (pixels < 0.95).any(axis=-1).mean()
    assert not_white > 0.05, f"the screenshot is nearly blank ({not_white:.1%} of pixels drawn)"
    # colour from the figures (blue bars, orange/green modes), not only black text
    assert (np.ptp(pixels, axis=-1) > 0.2).mean() > 0.01


# ---------------------------------------------------------------------------- the paper's sweep

LEGIBILITY_PROBE = """<script>
window.addEventListener('load', function () {
  var imgs = document.images, ok = 0, small = 0;
  for (var i = 0; i < imgs.length; i++) {
    if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++;
    if (imgs[i].width < 0.6 * Math.min(imgs[i].naturalWidth, 1100)) small++;
  }
  var d = document.createElement('div'); d.id = 'probe';
  d.textContent = 'PROBE images=' + imgs.length + ' loaded=' + ok + ' small=' + small +
    ' overflow=' + (document.documentElement.scrollWidth > window.innerWidth ? 1 : 0);
  document.body.appendChild(d);
});
</script>"""


@pytest.fixture(scope="module")
def paper_sweep(tmp_path_factory):
    """The paper's Figs 9/10 sweep (80 cells) with its own rounds and replications cut down."""
    import yaml

    root = Path(__file__).resolve().parents[2]
    src = root / "scenarios" / "paper" / "fig9_10_devices.yaml"
    doc = yaml.safe_load(src.read_text(encoding="utf-8"))
    doc["base_file"] = str((src.parent / doc["base_file"]).resolve())
    doc["base"]["run"]["rounds"] = 5
    doc["sweep"]["replications"] = 2
    base = tmp_path_factory.mktemp("paper")
    (base / "fig9_10.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    out = base / "out"
    assert main(["sweep", str(base / "fig9_10.yaml"), "--out", str(out), "--jobs", "2"]) == 0
    return out


def test_paper_sweep_report_uses_the_plot_entries_legibly(paper_sweep):
    """The report draws the sweep file's plot entry (as ``plot`` does): at most MAX_CURVES curves
    a panel, legends beside the axes (over none of them), every text inside the figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from multispin_sim.report.sweep import MAX_CURVES, read_sweep_folder, sweep_figures

    _, meta, table, _, _ = read_sweep_folder(paper_sweep)
    figs = sweep_figures(meta, table)
    assert [name for _, name in figs] == ["fig9_10_goodput"]
    fig = figs[0][0]
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    page = fig.bbox
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 2                                 # one panel per power ratio
    for ax in axes:
        assert 1 <= len(ax.get_lines()) <= MAX_CURVES * 3  # a curve is a line and its two caps
        assert len(ax.get_legend_handles_labels()[1]) == 4 <= MAX_CURVES
        legend = ax.get_legend().get_window_extent(renderer)
        assert not any(legend.overlaps(other.get_window_extent(renderer)) for other in axes)
        texts = [ax.xaxis.label, ax.yaxis.label, ax.title, *ax.get_xticklabels(),
                 *ax.get_yticklabels(), *ax.get_legend().get_texts()]
        for t in texts:
            if t.get_text() and t.get_visible():
                box = t.get_window_extent(renderer)
                assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1, t.get_text()
                assert page.y0 - 1 <= box.y0 and box.y1 <= page.y1 + 1, t.get_text()


def test_split_panels_for_many_curves(paper_sweep):
    """Without panels, the 8 (ratio, mode) curves of a panel are split into panels of at most
    MAX_CURVES, so any grid stays legible."""
    from multispin_sim.report.sweep import MAX_CURVES, read_sweep_folder, sweep_figures

    _, meta, table, _, _ = read_sweep_folder(paper_sweep)
    meta = dict(meta, plot=[{"name": "all", "x": "devices.count", "y": "goodput_tps"}])
    fig = sweep_figures(meta, table)[0][0]
    counts = [len(ax.get_legend_handles_labels()[1]) for ax in fig.axes if ax.get_visible()]
    assert sum(counts) == 8 and max(counts) <= MAX_CURVES and len(counts) == 2


def test_paper_sweep_report_in_headless_chromium(paper_sweep, tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("no headless Chromium found (CI installs it: apt-get install chromium); "
                    "the sweep report is not checked in a browser here")
    page = tmp_path / "sweep.html"
    assert main(["report", str(paper_sweep), "--out", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    _self_contained(text)
    probe = tmp_path / "probe.html"
    probe.write_text(text.replace("</head>", LEGIBILITY_PROBE + "</head>", 1), encoding="utf-8")
    dom = _chromium(browser, "--window-size=1200,2400", "--virtual-time-budget=10000",
                    "--dump-dom", probe.as_uri())
    match = re.search(r"PROBE images=(\d+) loaded=(\d+) small=(\d+) overflow=(\d+)", dom.stdout)
    assert match, f"the page did not finish loading in Chromium: {dom.stderr[-2000:]}"
    images, loaded, small, overflow = map(int, match.groups())
    # the plot entry and the timeline; every one shown at >= 60% of its size, no side scrolling
    assert images == loaded == 2 and small == 0 and overflow == 0


def test_report_of_moving_devices_in_cells_draws_each_device_once(tmp_path):
    """With moving devices every cell lists the network's devices: the per-device goodput is
    each device's goodput summed over the cells it was in, one bar a device."""
    out = tmp_path / "run"
    assert main(["run", "--set", "cells.layout=hex", "--set", "cells.count=7", "--set",
                 "devices.count=3", "--set", "mobility.model=random-waypoint", "--rounds", "20",
                 "--out", str(out), "--quiet"]) == 0
    dev, dr = read_table(out / "devices.csv"), read_table(out / "device_rounds.csv")
    places, at, label = device_axis(dev, dr)
    assert len(dev["device"]) == 7 * 21 and len(set(places.tolist())) == 21
    from multispin_sim.report.run import goodput_figure
    summary = json.loads((out / "summary.json").read_text())
    fig, _ = goodput_figure(summary, {"rounds": read_table(out / "rounds.csv"),
                                      "device_rounds": dr, "devices": dev})
    bars = fig.axes[1].patches
    assert len(bars) == 21
    want = np.bincount(dev["device"], weights=dev["goodput_tps"])
    np.testing.assert_allclose([b.get_height() for b in bars], want, rtol=1e-12)
