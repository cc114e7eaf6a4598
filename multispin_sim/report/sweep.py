"""The report page of a sweep folder (``multispin-sim sweep``): the sweep file, a table of the
cells (mean and 95% CI across replications), the figures, the timeline of the first run, failed
runs and warnings.

The figures are the sweep file's ``plot:`` entries, drawn as ``multispin-sim plot`` draws them
(``plots.figures``); without any, goodput, the median communication time and the UL/DL shares
against the first numeric swept key. For any grid the page stays legible: at most
``MAX_CURVES`` curves per panel (more are split into panels), legends beside the axes, two
panels a row, and constrained layout so that no label is clipped.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

from ..outputs.checked import OutputError, read_csv, read_json
from ..plots.figures import load_sweep_output, render_figure
from ..plots.output import PlotError
from .checks import ReportError
from .common import (_cards, _e, _figure_class, _fmt, _img, _page, _png, _table, _timeline,
                     _warnings, _yaml_text)

MAX_CURVES = 5   # curves per panel: more are not told apart by colour and marker
MAX_COLS = 2     # panels a row: the page is at most 1100 px wide

CAPTION = ("Each point is a cell: the mean over its replications and a 95% Student-t interval. "
           "Replications share seeds across cells (common random numbers), so differences between "
           "curves are tighter than the bars suggest.")


def _rows(path):
    """The rows of the CSV file ``path`` as dicts of strings."""
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _ci(cell, metric, scale=1.0, digits=4):
    """'mean [lo, hi]' (HTML) of ``metric`` in a row of cells.csv, each times ``scale``."""
    mean, lo, hi = (_fmt(_num(cell.get(f"{metric}_{stat}")) * scale, digits)
                    for stat in ("mean", "ci95_lo", "ci95_hi"))
    return f"{mean} <small>[{lo}, {hi}]</small>"


def read_sweep_folder(folder):
    """sweep.json, cells.csv and runs.csv, checked before any figure is drawn."""
    folder = Path(folder)
    meta, table = load_sweep_output(folder)
    cells = _rows(folder / "cells.csv")
    runs = []
    if (folder / "runs.csv").is_file():
        read_csv(folder / "runs.csv", ("status",))
        runs = _rows(folder / "runs.csv")
    return folder, meta, table, cells, runs


def default_specs(meta, table):
    keys = meta["keys"]
    if not keys:
        return []
    x = next((k for k in keys if table[k].dtype.kind in "iuf" and len(set(table[k].tolist())) > 1),
             keys[0])
    return [{"name": "goodput", "x": x, "y": "goodput_tps"},
            {"name": "comm", "x": x, "y": "comm_s_median",
             "title": "median communication time per round"},
            {"name": "shares", "x": x, "y": ["share_ul", "share_dl"],
             "ylabel": "share of device-rounds", "title": "who corrects: UL or DL"}]


def sweep_figures(meta, table):
    """[(matplotlib Figure, name)] of the page: the plot entries (or the defaults), each with
    at most MAX_CURVES curves a panel and its legends outside the axes."""
    _figure_class()  # matplotlib missing: the report's own message
    specs = meta.get("plot") or default_specs(meta, table)
    figs = []
    for spec in specs:
        ys = spec["y"] if isinstance(spec["y"], list) else [spec["y"]]
        if any(f"{m}_mean" not in table for m in ys):
            continue  # a metric this sweep did not record (e.g. an SLO without requests)
        try:
            fig, _ = render_figure(spec, meta, table, max_curves=MAX_CURVES,
                                   legend_outside=True, max_cols=MAX_COLS)
        except PlotError as exc:
            raise ReportError(f"{spec.get('name')}: {exc}; check the plot entries of the sweep "
                              "file") from None
        figs.append((fig, spec.get("name", "figure")))
    return figs


def sweep_report(checked):
    folder, meta, table, cells, runs = checked
    keys = meta["keys"]
    ok = [r for r in runs if r.get("status") == "ok"]
    failed = [r for r in runs if r.get("status") not in (None, "ok")]
    warnings = [f"run {r.get('run_dir')} failed: {r.get('error')}" for r in failed]
    if meta.get("status") in ("interrupted", "running"):   # running: killed, or still going
        warnings.insert(0, f"the sweep is not complete (status {meta['status']!r} in sweep.json):"
                        f" {len(ok)} of {meta.get('runs', '?')} runs finished; rerun the sweep "
                        "command to finish it")
    for c in cells:
        if _num(c.get("n")) < 2:
            warnings.append(f"cell {c.get('cell')} has {c.get('n')} successful replication(s): no confidence interval")
    seen = set()
    for r in ok:
        path = folder / r.get("run_dir", "") / "summary.json"
        if path.is_file():
            try:
                run_warnings = read_json(path).get("warnings") or []
            except OutputError as exc:
                run_warnings = [f"not read: {exc}"]
            for w in run_warnings:
                if w not in seen:
                    seen.add(w)
                    warnings.append(f"{r.get('run_dir')}: {w}")
    figures = [_img(_png(fig), name, CAPTION) for fig, name in sweep_figures(meta, table)]
    body = [_cards([("cells", f"{len(cells):,}"), ("runs ok / failed", f"{len(ok):,} / {len(failed):,}"),
                    ("swept keys", "<br>".join(_e(k) for k in keys) or "-")])]
    if meta.get("description"):
        body.append(f"<p>{_e(meta['description'])}</p>")
    rows = [[_e(c[k]) for k in keys] + [
        _e(c.get("n")), _ci(c, "goodput_tps"), _ci(c, "comm_s_median", 1e3, 3),
        _ci(c, "share_ul", 1, 3), _ci(c, "share_dl", 1, 3)] for c in cells]
    head = [_e(k) for k in keys] + ["n", "goodput (tokens/s) [95% CI]", "median comm (ms)",
                                    "UL-corrected share", "DL-corrected share"]
    body.append("<h2>Cells</h2>" + _table(head, rows, left=len(keys)))
    body.append("<h2>Warnings</h2>" + _warnings(warnings))
    body.append("<h2>Figures</h2>" + "".join(figures))
    if ok:
        body.append(_timeline(folder / ok[0]["run_dir"], "timeline of the first rounds of the "
                              "first run", f" of <code>{_e(ok[0]['run_dir'])}</code>."))
    body.append("<h2>Sweep file</h2><pre>" + _e(_yaml_text(folder / "sweep.yaml")) + "</pre>")
    sub = f"sweep folder <code>{_e(folder.resolve())}</code>"
    return _page(f"multispin-sim sweep report: {meta.get('name', folder.name)}", sub, "\n".join(body))
