"""Figures of a sweep: one PNG per figure spec, with the CSV of every curve beside it.

Reads only the sweep's output folder (``sweep.json`` and ``cells.csv``). A figure spec (the
``plot:`` list of a sweep file) is::

    name: goodput                 # file name: figures/goodput.png and figures/goodput.csv
    x: server.dl_power_dbm        # a swept key (numeric: a line; otherwise categories)
    y: goodput_tps                # a metric of cells.csv, or a list (one curve per metric)
    curves: model_pair            # optional: swept key(s), one curve per value
    panels: server.dl_power_ratio # optional: swept key(s), one subplot per value
    title, xlabel, ylabel, logx, logy   # optional

Swept keys named in none of x / curves / panels that still take several values among the cells
with the same x, panel and curve become curves too, so points are never averaged silently (a
key zipped with one of them adds nothing). Without a ``plot:`` section one figure of goodput
against the first numeric swept key (else the first) is drawn. Error bars are the 95% confidence
intervals across replications from cells.csv (``<metric>_ci95_lo`` / ``_hi``); the title says
over how many replications (the ``n`` of the cells drawn) and whether the sweep is complete;
a cell no run finished is not drawn. ``logx`` needs a numeric x above 0, ``logy`` metrics above 0
(an error bar below 0 is cut at the axis). A figure's CSV holds
panel, curve, metric, x, mean, ci95_lo, ci95_hi and n of every cell.
"""
from __future__ import annotations

import difflib
import math
from pathlib import Path

import numpy as np

from ..outputs.checked import RERUN, OutputError, read_csv, read_json
from .output import PlotError, check_out_folder, save_image, write_csv


METRIC_LABELS = {
    "goodput_tps": ("sum token goodput", "tokens/s"),
    "goodput_ci95_lo": ("goodput, lower 95% bound within a run", "tokens/s"),
    "goodput_ci95_hi": ("goodput, upper 95% bound within a run", "tokens/s"),
    "tokens": ("tokens generated", "tokens"),
    "rounds": ("rounds", "rounds"),
    "sim_time_s": ("simulated time", "s"),
    "mean_draft_len": ("mean draft length", "tokens"),
    "rejections": ("rejections", "device-rounds"),
    "ul_corrections": ("UL corrections", "device-rounds"),
    "dl_corrections": ("DL corrections", "device-rounds"),
    "device_rounds": ("device-rounds", "device-rounds"),
    "share_accepted": ("accepted (no correction)", "share of device-rounds"),
    "share_ul": ("corrected by UL", "share of device-rounds"),
    "share_dl": ("corrected by DL", "share of device-rounds"),
    "wall_time_s": ("wall time", "s"),
    "rounds_per_s": ("simulation speed", "rounds/s"),
}
METRIC_LABELS.update({f"{base}_{stat}": (f"{what}, {stat}", "s")
                      for base, what in (("duration_s", "round duration"),
                                         ("comm_s", "communication time per round"))
                      for stat in ("mean", "median", "p95", "max")})
METRIC_LABELS.update({  # serving (outputs.slo)
    "requests_slo_attainment": ("SLO attainment", "share of requests"),
    "requests_slo_goodput_rps": ("SLO goodput", "requests/s"),
    "requests_slo_ttft_s_p99": ("p99 time to first token", "s"),
    "requests_slo_tpot_s_p99": ("p99 time per output token", "s"),
})

KEY_LABELS = {
    "server.dl_power_dbm": "DL power budget P_dl",
    "server.dl_power_ratio": "DL-to-UL power-budget ratio P_dl / P_ul",
    "devices.count": "number of devices K",
    "devices.ul_power_dbm": "UL power budget P_ul",
    "policy.mode": "mode selection",
    "policy.draft": "draft-length control",
    "policy.draft_length": "draft length",
    "model_pair": "model pair",
    "channel.bandwidth_mhz": "bandwidth B",
}


LINESTYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def metric_label(name):
    return METRIC_LABELS.get(name, (name, ""))


def key_label(key, info=None):
    unit = (info or {}).get(key, {}).get("unit", "")
    label = KEY_LABELS.get(key, key)
    if key == "server.dl_power_ratio":
        unit = unit or "linear"
    return f"{label} ({unit})" if unit else label


def _require_matplotlib(error=None):
    """matplotlib's Figure class; without matplotlib, ``error`` (a caller's own, such as the
    report's) or the plot command's PlotError."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise error or PlotError("plot: plotting needs matplotlib; pip install "
                                 "'multispin_sim[plot]'") from None
    return Figure


def integer_ticks(ax):
    """Integer ticks only on the x axis of ``ax`` (device indices, counts)."""
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def shown(text):
    """``text`` with what cannot be shown replaced: a file name that is not UTF-8 (Python holds
    its bytes as lone surrogates) would stop matplotlib and the HTML writer."""
    return str(text).encode("utf-8", "replace").decode("utf-8")


def load_sweep_output(folder):
    """sweep.json and cells.csv of a sweep folder, checked (``OutputError`` naming the file and
    the line): what ``plot`` and ``report`` draw a sweep from."""
    folder = Path(folder)
    meta_path, cells_path = folder / "sweep.json", folder / "cells.csv"
    if not meta_path.is_file():
        raise PlotError(f"{meta_path}: not found; expected the output folder of 'multispin-sim "
                        "sweep' (sweep.json and cells.csv)")
    meta = read_json(meta_path, ("keys",))
    keys = meta["keys"]
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise OutputError(f"{meta_path}: keys is {keys!r}; expected the list of swept keys: "
                          f"{RERUN}")
    if not cells_path.is_file():
        raise PlotError(f"{cells_path}: not found: the sweep stopped before writing its tables "
                        f"(status {meta.get('status')!r} in sweep.json); rerun the sweep command "
                        "to finish it (its finished runs are kept)")
    cells = read_csv(cells_path, ("cell", "n", *keys), ("cell", "n"))
    if len(cells["cell"]) == 0:
        raise PlotError(f"{cells_path}: no cells, nothing to draw; rerun the sweep (failed runs "
                        "are retried)")
    return meta, cells


def _scalar(v):
    return v.item() if hasattr(v, "item") else v


def _is_numeric(arr):
    return arr.dtype.kind in "iuf"


def _fmt(v):
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


def default_figures(meta, cells):
    keys = meta["keys"]
    if not keys:
        return []
    x = next((k for k in keys if _is_numeric(cells[k])), keys[0])
    return [{"name": "goodput_tps", "x": x, "y": ["goodput_tps"], "curves": [], "panels": []}]


def _groups(cells, keys):
    """Unique tuples of the values of ``keys`` and their row masks; ordered key by key, a
    numeric key by value, any other in first-appearance order (the sweep file's)."""
    n = len(cells["cell"])
    order, masks = [], {}
    for i in range(n):
        t = tuple(_scalar(cells[k][i]) for k in keys)
        if t not in masks:
            order.append(t)
            masks[t] = np.zeros(n, dtype=bool)
        masks[t][i] = True
    ranks = [{v: (v if _is_numeric(cells[k]) else j) for j, v in
              enumerate(dict.fromkeys(t[i] for t in order))} for i, k in enumerate(keys)]
    order.sort(key=lambda t: tuple(r[v] for r, v in zip(ranks, t)))
    return order, masks


def _varies_within(cells, key, given):
    """Whether ``key`` takes more than one value among the cells that agree on ``given``: a key
    zipped with a panel or curve key (or with x) adds nothing to tell the points apart."""
    seen = {}
    for i in range(len(cells["cell"])):
        group = tuple(_scalar(cells[k][i]) for k in given)
        if seen.setdefault(group, _scalar(cells[key][i])) != _scalar(cells[key][i]):
            return True
    return False


def _label(keys, values):
    """A curve's name in the figure's CSV: the value, or key=value pairs."""
    if not keys:
        return ""
    if len(keys) == 1:
        return _fmt(values[0])
    return ", ".join(f"{KEY_LABELS.get(k, k)}={_fmt(v)}" for k, v in zip(keys, values))


def write_figure(fig, rows, name, folder):
    """The PNG of a rendered figure and the CSV of its points, in ``folder`` (made if
    missing); return the two paths."""
    png = save_image(fig, Path(folder) / f"{name}.png", dpi=120)
    csv_path = Path(folder) / f"{name}.csv"
    cols = ["panel", "curve", "metric", "x", "mean", "ci95_lo", "ci95_hi", "n"]
    write_csv(csv_path, cols, ([repr(r[c]) if isinstance(r[c], float) else r[c] for c in cols]
                               for r in rows), "\n")
    return png, csv_path


def check_metrics(spec, cells):
    """PlotError unless cells.csv has every metric the figure ``spec`` plots; the message says
    what there is (the closest metric of the same family, or that the runs have none)."""
    metrics = [c[:-5] for c in cells if c.endswith("_mean")]
    for m in (spec["y"] if isinstance(spec["y"], list) else [spec["y"]]):
        if m in metrics:
            continue
        head = m.split("_")[0] + "_"
        kin = [k for k in metrics if k.startswith(head)]
        close = difflib.get_close_matches(m, kin, n=1)
        if close:
            hint = f"did you mean {close[0]!r}?"
        elif kin:
            hint = f"{head}... metrics here: {', '.join(kin[:8])}"
        else:
            hint = (f"its runs have no {head}... metric (that part of summary.json comes with "
                    "some components only)")
        raise PlotError(f"{spec['name']}: cells.csv has no metric {m!r}; {hint}")


def check_log_axes(spec, cells):
    """PlotError unless a ``logx`` figure has a numeric x above 0 and a ``logy`` figure metrics
    above 0: a category or 0 has no place on a log axis (matplotlib would pile the points up at
    an edge, or leave a curve without points)."""
    if spec.get("logy"):
        for m in (spec["y"] if isinstance(spec["y"], list) else [spec["y"]]):
            means = cells[f"{m}_mean"].astype(float)
            low = means[np.isfinite(means)].min(initial=np.inf)
            if not low > 0:
                raise PlotError(f"{spec['name']}: logy: {m} takes the value {_fmt(low)}, which a "
                                "log axis cannot show; remove logy from this plot entry "
                                "(sweep.json and the sweep file)")
    if not spec.get("logx"):
        return
    x = spec["x"]
    xs = cells[x]
    if not _is_numeric(xs):
        values = ", ".join(map(_fmt, dict.fromkeys(xs.tolist())))
        raise PlotError(f"{spec['name']}: logx: {x} is not numeric ({values}), a log axis "
                        "cannot show it; remove logx from this plot entry (sweep.json and the "
                        "sweep file)")
    low = xs.astype(float).min(initial=np.inf)
    if not low > 0:
        raise PlotError(f"{spec['name']}: logx: {x} takes the value {_fmt(low)}, which a log axis "
                        "cannot show; remove logx from this plot entry (sweep.json and the sweep "
                        "file), or sweep values above 0")


def figure_keys(spec, meta, cells):
    """The panel and curve keys of a figure: those the spec names, and every other swept key
    that still varies among the cells with the same x, panel and curve (so points are never
    averaged silently); a key zipped with one of those adds no curve."""
    x = spec["x"]
    panels = list(spec.get("panels") or [])
    curves = list(spec.get("curves") or [])
    for k in meta["keys"]:
        if k != x and k not in panels and k not in curves \
                and _varies_within(cells, k, [x, *panels, *curves]):
            curves.append(k)
    return panels, curves


def _subtitle(meta, rows, n_cells):
    """What the points are: the replications actually behind them (the n of cells.csv), and
    whether the sweep is complete."""
    ns = [r["n"] for r in rows if r["n"] > 0]
    if not ns:
        text = "no replication finished"
    else:
        lo, hi = min(ns), max(ns)
        n = f"{lo}" if lo == hi else f"{lo} to {hi}"
        if hi < 2:
            text = f"mean of {n} replication{'s' if hi > 1 else ''} (no CI: fewer than 2)"
        elif lo < 2:
            text = f"mean and 95% CI over {n} replications (no CI where n < 2)"
        else:
            text = f"mean and 95% CI over {n} replications"
    if n_cells:
        text += f"\n{n_cells} cell{'s' if n_cells > 1 else ''} without a finished run not drawn"
    status = meta.get("status")
    if status not in (None, "complete"):
        text += f"\n(sweep not complete: status {status!r} in sweep.json)"
    return text


def _legend_width(labels, title):
    """Inches a legend beside the axes takes: about 0.07 in a character at font size 8."""
    chars = max([len(str(t)) for t in labels] + [len(title or "")], default=0)
    return min(0.5 + 0.07 * chars, 4.5)


def render_figure(spec, meta, cells, max_curves=None, legend_outside=False, max_cols=3):
    """The matplotlib Figure of one figure spec and the rows of its CSV.
    ``max_curves``: at most this many curves per panel; a panel with more is split into several
    (titled "curves i-j of n"), so any grid stays legible. ``legend_outside``: each panel's
    legend to the right of its axes, never over the points, the figure widened to hold it.
    A curve keeps its colour, marker and line style in every panel; its legend shows its
    values, the legend's title the keys."""
    Figure = _require_matplotlib()
    x = spec["x"]
    ys = spec["y"] if isinstance(spec["y"], list) else [spec["y"]]
    check_metrics(spec, cells)
    check_log_axes(spec, cells)
    panels, curves = figure_keys(spec, meta, cells)
    panel_order, panel_masks = _groups(cells, panels)
    curve_order, curve_masks = _groups(cells, curves)
    drawn = cells["n"] > 0   # a cell no run finished has no point (its means are nan)
    xs_all = cells[x]
    numeric_x = _is_numeric(xs_all)
    categories = list(dict.fromkeys(xs_all.tolist()))
    multi = len(ys) > 1 and len(curve_order) > 1   # colour = metric, line style = curve

    def label(m, cvals):
        parts = [metric_label(m)[0] if len(ys) > 1 else "", ", ".join(map(_fmt, cvals))]
        return ", ".join(p for p in parts if p) or None

    legend_title = ", ".join(KEY_LABELS.get(k, k) for k in curves) or None
    # the curves each panel has, split into chunks of at most max_curves (curves x metrics)
    per_panel = max(1, max_curves // len(ys)) if max_curves else None
    layout = []
    for pvals in panel_order:
        have = [ci for ci, cvals in enumerate(curve_order)
                if (panel_masks[pvals] & curve_masks[cvals]).any()]
        size = per_panel or max(len(have), 1)
        chunks = [have[i:i + size] for i in range(0, len(have), size)] or [[]]
        layout.extend((pvals, chunk, i * size, len(chunks), len(have))
                      for i, chunk in enumerate(chunks))
    n_panels = len(layout)
    ncols = min(n_panels, max_cols)
    nrows = math.ceil(n_panels / ncols)
    extra = 0.0
    if legend_outside and (len(ys) > 1 or curves):
        extra = _legend_width([label(m, c) for m in ys for c in curve_order], legend_title)
    fig = Figure(figsize=((5.2 + extra) * ncols, 3.9 * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    rows = []
    units = {metric_label(m)[1] for m in ys}
    shared_unit = next(iter(units)) if len(units) == 1 and "" not in units else "value"
    for pi, (pvals, chunk, first, n_chunks, n_have) in enumerate(layout):
        ax = axes[pi // ncols][pi % ncols]
        for ci in chunk:
            cvals = curve_order[ci]
            mask = panel_masks[pvals] & curve_masks[cvals]
            for mi, m in enumerate(ys):
                xv = xs_all[mask]
                mean = cells[f"{m}_mean"][mask].astype(float)
                lo = cells[f"{m}_ci95_lo"][mask].astype(float)
                hi = cells[f"{m}_ci95_hi"][mask].astype(float)
                # the replications behind this metric's mean (those with a value)
                nn = cells[f"{m}_n" if f"{m}_n" in cells else "n"][mask]
                at = (xv.astype(float) if numeric_x else
                      np.array([categories.index(v) for v in xv.tolist()], dtype=float))
                order = np.argsort(at, kind="stable")
                pos = at[order]
                mean, lo, hi, nn, xv = mean[order], lo[order], hi[order], nn[order], xv[order]
                for i in range(len(pos)):
                    rows.append({"panel": _label(panels, pvals), "curve": _label(curves, cvals),
                                 "metric": m, "x": _scalar(xv[i]), "mean": float(mean[i]),
                                 "ci95_lo": float(lo[i]), "ci95_hi": float(hi[i]),
                                 "n": int(nn[i])})
                keep = drawn[mask][order]
                if not keep.any():
                    continue
                pos, mean, lo, hi = pos[keep], mean[keep], lo[keep], hi[keep]
                err = np.vstack([np.where(np.isfinite(lo), mean - lo, 0.0),
                                 np.where(np.isfinite(hi), hi - mean, 0.0)])
                style = ({"color": f"C{mi % 10}", "linestyle": LINESTYLES[ci % len(LINESTYLES)]}
                         if multi else {"color": f"C{(ci if len(ys) == 1 else mi) % 10}"})
                if not numeric_x:
                    style["linestyle"] = "none"
                ax.errorbar(pos, mean, yerr=err, marker=MARKERS[ci % len(MARKERS)], markersize=4,
                            capsize=3, linewidth=1.4, label=label(m, cvals), **style)
        titles = [", ".join(f"{KEY_LABELS.get(k, k)} = {_fmt(v)}" for k, v in zip(panels, pvals))]
        if n_chunks > 1:
            titles.append(f"curves {first + 1}-{first + len(chunk)} of {n_have}")
        if any(titles):
            ax.set_title("\n".join(t for t in titles if t), fontsize=10)
        ax.set_xlabel(spec.get("xlabel") or key_label(x, meta.get("key_info")))
        if spec.get("ylabel"):
            ax.set_ylabel(spec["ylabel"])
        elif len(ys) == 1:
            what, unit = metric_label(ys[0])
            ax.set_ylabel(f"{what} ({unit})" if unit else what)
        else:
            ax.set_ylabel(shared_unit)
        if not numeric_x:
            ax.set_xticks(range(len(categories)), [_fmt(c) for c in categories])
        elif xs_all.dtype.kind in "iu":
            integer_ticks(ax)
        if spec.get("logx"):
            ax.set_xscale("log")
            ticks = sorted(set(xs_all.astype(float).tolist()))
            ax.set_xticks(ticks, [_fmt(t) for t in ticks])
            ax.minorticks_off()
        if spec.get("logy"):
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[1]:
            where = ({"loc": "upper left", "bbox_to_anchor": (1.02, 1.0), "borderaxespad": 0.0}
                     if legend_outside else {})
            ax.legend(fontsize=8, title=legend_title, title_fontsize=8, **where)
    for j in range(n_panels, nrows * ncols):
        axes[j // ncols][j % ncols].set_visible(False)
    title = spec.get("title") or meta.get("name", "")
    empty = int((~drawn).sum())
    fig.suptitle(f"{title}\n{_subtitle(meta, rows, empty)}" if title
                 else _subtitle(meta, rows, empty), fontsize=11)
    return fig, rows


def plot_sweep(results_dir, out=None):
    """Draw every figure of a sweep output folder into ``out`` (default ``results_dir/figures``).
    Every figure is drawn, and ``out`` checked, before any file is written: a figure that cannot
    be drawn leaves nothing behind. Returns the written paths (PNG and CSV of each figure).
    """
    meta, cells = load_sweep_output(results_dir)
    specs = meta.get("plot") or default_figures(meta, cells)
    if not specs:
        raise PlotError(f"{results_dir}: the sweep has no swept key and no plot section; "
                        "nothing to draw")
    for spec in specs:   # the cheap checks of every figure before any is drawn
        check_metrics(spec, cells)
        check_log_axes(spec, cells)
    out = check_out_folder(Path(out) if out else Path(results_dir) / "figures")
    figures = [(spec["name"], *render_figure(spec, meta, cells)) for spec in specs]
    paths = []
    for name, fig, rows in figures:
        paths.extend(write_figure(fig, rows, name, out))
    return paths
