"""The report page of a run folder (``multispin-sim run``) or a sweep folder (``sweep``).

A run: the scenario, the headline figures with their 95% confidence intervals, the round's time
budget, distributions of per-round goodput and of the communication time (with its heavy tail on
a log-log survival plot), the UL/DL shares of the corrections (overall and per device), a
timeline of the first rounds, the warnings, and how the run was made (version, seed, command).

A sweep: the sweep file, a table of the cells (mean and 95% CI across replications), goodput and
UL/DL shares against the first swept key (one curve per value of the others), the timeline of
the first run, failed runs and warnings.
"""
from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
from pathlib import Path

import numpy as np

from ..outputs.records import read_table

CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1100px; color: #222; line-height: 1.4; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em; }
.sub { color: #666; margin-top: 0; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.92em; }
td, th { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
.cards { display: flex; flex-wrap: wrap; gap: 0.8em; margin: 1em 0; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 0.6em 1em; min-width: 11em; background: #fafafa; }
.card .v { font-size: 1.5em; font-weight: 600; } .card .k { color: #666; font-size: 0.85em; }
.warn { background: #fff4e5; border-left: 4px solid #f0a020; padding: 0.5em 1em; margin: 0.5em 0; }
.ok { background: #eef8ee; border-left: 4px solid #4a4; padding: 0.5em 1em; }
figure { margin: 1em 0; } figcaption { color: #555; font-size: 0.9em; }
img { max-width: 100%; height: auto; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
"""


class ReportError(ValueError):
    """A folder that is not a run or sweep output, or matplotlib missing (one-line message)."""


def _figure_class():
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ReportError("the report draws its figures with matplotlib: "
                          "pip install 'multispin_sim[plot]'") from None
    return Figure


def _png(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _img(data, alt, caption):
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(alt)}">'
            f"<figcaption>{caption}</figcaption></figure>")


def _e(x):
    return html.escape(str(x))


def _fmt(x, digits=4):
    if isinstance(x, (int, np.integer)):
        return f"{int(x):,}"
    try:
        x = float(x)
    except (TypeError, ValueError):
        return _e(x)
    if math.isnan(x):
        return "-"
    return f"{x:.{digits}g}"


def _page(title, subtitle, body):
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(title)}</title><style>{CSS}</style></head><body>\n"
            f"<h1>{_e(title)}</h1><p class=\"sub\">{subtitle}</p>\n{body}\n"
            f"<p class=\"sub\">Written by multispin-sim report; self-contained (figures embedded).</p>"
            f"</body></html>\n")


def _cards(items):
    return '<div class="cards">' + "".join(
        f'<div class="card"><div class="v">{v}</div><div class="k">{k}</div></div>' for k, v in items
    ) + "</div>"


def _warnings(items):
    if not items:
        return '<div class="ok">No warnings.</div>'
    return "".join(f'<div class="warn">{_e(w)}</div>' for w in items)


# ---------------------------------------------------------------------------- run


def _timeline_png(run_dir, rounds=3):
    import tempfile

    from ..plots.timeline import plot_timeline

    with tempfile.TemporaryDirectory(prefix="multispin-report-") as tmp:
        png, _ = plot_timeline(run_dir, rounds=rounds, out=Path(tmp) / "timeline.png")
        return base64.b64encode(Path(png).read_bytes()).decode("ascii")


def _run_figures(folder, summary):
    Figure = _figure_class()
    rt = read_table(folder / "rounds.csv")
    dr = read_table(folder / "device_rounds.csv")
    dev = read_table(folder / "devices.csv")
    figs = []
    if len(rt["round"]) == 0:
        return figs, {}
    dur = rt["duration_s"]
    # time budget
    parts = {"drafting": rt["draft_s"].sum(), "verification": rt["verify_s"].sum(),
             "communication": rt["comm_s"].sum()}
    total = sum(parts.values())
    budget = {k: v / total if total > 0 else 0.0 for k, v in parts.items()}

    fig = Figure(figsize=(10, 3.4), layout="constrained")
    a1, a2 = fig.subplots(1, 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_round = np.where(dur > 0, rt["tokens"] / dur, np.nan)
    per_round = per_round[np.isfinite(per_round)]
    a1.hist(per_round, bins=40, color="#4C72B0")
    g = summary.get("goodput_tps")
    lo, hi = summary.get("goodput_ci95", (np.nan, np.nan))
    if g is not None:
        a1.axvspan(lo, hi, color="#DD8452", alpha=0.3, label="95% CI of the run's goodput")
        a1.axvline(g, color="#DD8452", label=f"run goodput {g:.1f} tokens/s")
        a1.legend(fontsize=8)
    a1.set(xlabel="tokens / round length (tokens/s)", ylabel="rounds", title="goodput of each round")
    from matplotlib.ticker import MaxNLocator

    a2.bar(dev["device"], dev["goodput_tps"], color="#55A868")
    a2.set(xlabel="device", ylabel="tokens/s", title="goodput per device")
    a2.xaxis.set_major_locator(MaxNLocator(integer=True))
    figs.append(_img(_png(fig), "goodput distribution",
                     "Left: tokens of each round divided by its length (the run's goodput is the "
                     "ratio of sums, not the mean of this histogram). Right: per-device goodput."))

    fig = Figure(figsize=(10, 3.4), layout="constrained")
    a1, a2 = fig.subplots(1, 2)
    comm = rt["comm_s"][rt["comm_s"] > 0] * 1e3
    if comm.size:
        bins = np.logspace(np.log10(comm.min()), np.log10(max(comm.max(), comm.min() * 1.01)), 40)
        a1.hist(comm, bins=bins, color="#8172B3")
        a1.set_xscale("log")
        c = np.sort(comm)
        a2.loglog(c, 1.0 - np.arange(c.size) / c.size, ".", ms=3, color="#8172B3")
        for q, ls in ((0.5, "--"), (0.95, ":")):
            v = np.quantile(comm, q)
            a1.axvline(v, color="k", ls=ls, label=f"{'median' if q == 0.5 else 'p95'} {v:.2f} ms")
        a1.legend(fontsize=8)
    a1.set(xlabel="communication time per round (ms)", ylabel="rounds",
           title=f"comm time ({comm.size} rounds with a correction)")
    a2.set(xlabel="communication time (ms)", ylabel="P(comm > x)", title="survival (log-log): the tail")
    figs.append(_img(_png(fig), "communication delay distribution",
                     "The correction phase of each round. Under Rayleigh fading the delay has a 1/t "
                     "tail (infinite mean): read the median and p95 rather than the mean."))

    fig = Figure(figsize=(10, 3.4), layout="constrained")
    a1, a2 = fig.subplots(1, 2, width_ratios=(1, 3))
    modes = np.char.lower(np.char.strip(dr["mode"].astype(str)))
    n = max(len(modes), 1)
    shares = {"no correction": np.mean(modes == ""), "UL": np.mean(modes == "ul"),
              "DL": np.mean(modes == "dl")}
    colours = {"no correction": "#D9D9D9", "UL": "#DD8452", "DL": "#55A868"}
    bottom = 0.0
    for name, v in shares.items():
        a1.bar([0], [v], bottom=bottom, color=colours[name], label=f"{name} {v:.1%}")
        bottom += v
    a1.set_xticks([0], ["all"]); a1.set(ylabel="share of device-rounds", ylim=(0, 1))
    a1.legend(fontsize=8, loc="lower center")
    devices = dev["device"]
    bottom = np.zeros(len(devices))
    for name, code in (("no correction", ""), ("UL", "ul"), ("DL", "dl")):
        v = np.array([np.mean(modes[dr["device"] == k] == code) if np.any(dr["device"] == k) else 0.0
                      for k in devices])
        a2.bar(devices, v, bottom=bottom, color=colours[name])
        bottom += v
    a2.set(xlabel="device", ylim=(0, 1), title="per device")
    a2.xaxis.set_major_locator(MaxNLocator(integer=True))
    figs.append(_img(_png(fig), "UL and DL shares",
                     f"How the {n:,} device-rounds ended: no correction, a UL correction (the device "
                     "uploads its draft distribution) or a DL correction (the server sends the "
                     "target distribution)."))
    try:
        figs.append(_img(_timeline_png(folder, 3), "timeline of the first rounds",
                         "The first three rounds: drafting, waiting, the batched verification and "
                         "the UL/DL corrections of each device."))
    except Exception as exc:  # a figure that cannot be drawn is reported, not fatal
        figs.append(f'<div class="warn">timeline not drawn: {_e(exc)}</div>')
    return figs, budget


def _yaml_text(path):
    return path.read_text(encoding="utf-8") if path.is_file() else "(not found)"


def run_report(folder):
    folder = Path(folder)
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    meta = {}
    if (folder / "run.json").is_file():
        meta = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    figs, budget = _run_figures(folder, summary)
    lo, hi = summary.get("goodput_ci95", (float("nan"), float("nan")))
    comm = summary.get("comm_s", {})
    cards = [
        ("goodput (tokens/s), 95% CI", f"{summary['goodput_tps']:.2f}<br><small>{lo:.2f} to {hi:.2f}</small>"),
        ("rounds / simulated time", f"{summary['rounds']:,}<br><small>{summary['sim_time_s']:.2f} s</small>"),
        ("mean draft length", f"{summary.get('mean_draft_len', float('nan')):.2f}"),
        ("corrections UL / DL", f"{summary.get('ul_corrections', 0):,} / {summary.get('dl_corrections', 0):,}"),
        ("comm time median / p95", f"{comm.get('median', float('nan')) * 1e3:.2f} ms<br>"
                                   f"<small>p95 {comm.get('p95', float('nan')) * 1e3:.2f} ms</small>"),
    ]
    rows = []
    for key, label in (("duration_s", "round length"), ("comm_s", "communication time")):
        s = summary.get(key)
        if isinstance(s, dict):
            rows.append(f"<tr><td class=l>{label}</td>" + "".join(
                f"<td>{s.get(q, float('nan')) * 1e3:.3f}</td>" for q in ("mean", "median", "p95", "max")) + "</tr>")
    body = [_cards(cards)]
    if budget:
        body.append("<p>Time budget of the run: " + ", ".join(
            f"{k} {v:.0%}" for k, v in budget.items()) + " of the simulated time.</p>")
    body.append("<table><tr><th class=l>per round (ms)</th><th>mean</th><th>median</th><th>p95</th>"
                "<th>max</th></tr>" + "".join(rows) + "</table>")
    req = summary.get("requests")
    if isinstance(req, dict):
        lat = req.get("latency_s", {})
        body.append(f"<p>Requests: {req.get('completed', '?')} of {req.get('arrivals', '?')} completed; "
                    f"latency median {_fmt(lat.get('median'))} s, p95 {_fmt(lat.get('p95'))} s; server "
                    f"utilisation {_fmt(req.get('server_utilisation'))}.</p>")
    warnings = list(summary.get("warnings", []))
    if not summary.get("complete", True):
        warnings.insert(0, "the run was interrupted: complete is false, the figures cover the rounds done")
    body.append("<h2>Warnings</h2>" + _warnings(warnings))
    body.append("<h2>Figures</h2>" + "".join(figs))
    body.append("<h2>Scenario</h2><pre>" + _e(_yaml_text(folder / "scenario.yaml")) + "</pre>")
    if meta:
        keep = {k: meta[k] for k in ("version", "multispin_sim_version", "seed", "wall_time_s",
                                     "command_line", "python", "platform", "complete") if k in meta}
        body.append("<h2>How it was made</h2><pre>" + _e(json.dumps(keep or meta, indent=2)) + "</pre>")
    sub = f"run folder <code>{_e(folder.resolve())}</code>"
    return _page(f"multispin-sim run report: {folder.name}", sub, "\n".join(body))


# ---------------------------------------------------------------------------- sweep


def _read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _sweep_figures(cells, keys):
    Figure = _figure_class()
    figs = []
    if not cells or not keys:
        return figs
    def numeric_axis(k):
        values = {c[k] for c in cells}
        return len(values) > 1 and all(not math.isnan(_num(v)) for v in values)

    x_key = next((k for k in keys if numeric_axis(k)), keys[0])  # a numeric axis if there is one
    others = [k for k in keys if k != x_key]
    xs = [c[x_key] for c in cells]
    numeric = all(not math.isnan(_num(x)) for x in xs)
    order = sorted(set(xs), key=_num) if numeric else list(dict.fromkeys(xs))
    pos = {x: (_num(x) if numeric else i) for i, x in enumerate(order)}
    groups = {}
    for c in cells:
        groups.setdefault(tuple(c[k] for k in others), []).append(c)

    def panel(ax, metric, label):
        for g, rows in groups.items():
            rows = sorted(rows, key=lambda c: pos[c[x_key]])
            x = [pos[c[x_key]] for c in rows]
            y = np.array([_num(c.get(f"{metric}_mean")) for c in rows])
            lo = np.array([_num(c.get(f"{metric}_ci95_lo")) for c in rows])
            hi = np.array([_num(c.get(f"{metric}_ci95_hi")) for c in rows])
            err = np.vstack([np.nan_to_num(y - lo), np.nan_to_num(hi - y)])
            name = ", ".join(f"{k}={v}" for k, v in zip(others, g)) or metric
            ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=name)
        if not numeric:
            ax.set_xticks(range(len(order)), order)
        ax.set(xlabel=x_key, ylabel=label)
        ax.grid(alpha=0.3)

    fig = Figure(figsize=(10, 3.8), layout="constrained")
    a1, a2 = fig.subplots(1, 2)
    panel(a1, "goodput_tps", "goodput (tokens/s)")
    a1.set_title("goodput, mean and 95% CI across replications")
    panel(a2, "comm_s_median", "median comm time per round (s)")
    a2.set_title("median communication time")
    a1.legend(fontsize=7)
    figs.append(_img(_png(fig), "goodput against the first swept key",
                     "Each point is a cell: the mean over its replications and a 95% Student-t "
                     "interval. Replications share seeds across cells (common random numbers), so "
                     "differences between curves are tighter than the bars suggest."))
    fig = Figure(figsize=(10, 3.8), layout="constrained")
    a1, a2 = fig.subplots(1, 2)
    panel(a1, "share_ul", "share of device-rounds corrected by UL")
    a1.set_title("UL share")
    panel(a2, "share_dl", "share of device-rounds corrected by DL")
    a2.set_title("DL share")
    a1.legend(fontsize=7)
    figs.append(_img(_png(fig), "UL and DL shares against the first swept key",
                     "Who corrects: the share of device-rounds with a UL (left) or DL (right) correction."))
    return figs


def sweep_report(folder):
    folder = Path(folder)
    cells = _read_csv(folder / "cells.csv")
    runs = _read_csv(folder / "runs.csv") if (folder / "runs.csv").is_file() else []
    meta = json.loads((folder / "sweep.json").read_text(encoding="utf-8")) if (folder / "sweep.json").is_file() else {}
    keys = meta.get("keys") or [k for k in (cells[0] if cells else {}) if "." in k]
    ok = [r for r in runs if r.get("status") == "ok"]
    failed = [r for r in runs if r.get("status") not in (None, "ok")]
    warnings = [f"run {r.get('run_dir')} failed: {r.get('error')}" for r in failed]
    for c in cells:
        if _num(c.get("n")) < 2:
            warnings.append(f"cell {c.get('cell')} has {c.get('n')} successful replication(s): no confidence interval")
    seen = set()
    for r in ok:
        path = folder / r.get("run_dir", "") / "summary.json"
        if path.is_file():
            for w in json.loads(path.read_text(encoding="utf-8")).get("warnings", []):
                if w not in seen:
                    seen.add(w)
                    warnings.append(f"{r.get('run_dir')}: {w}")
    body = [_cards([("cells", f"{len(cells):,}"), ("runs ok / failed", f"{len(ok):,} / {len(failed):,}"),
                    ("swept keys", "<br>".join(_e(k) for k in keys) or "-")])]
    if meta.get("description"):
        body.append(f"<p>{_e(meta['description'])}</p>")
    head = "".join(f"<th class=l>{_e(k)}</th>" for k in keys)
    rows = []
    for c in cells:
        def ci(m, scale=1.0, digits=4):
            return (f"{_fmt(_num(c.get(m + '_mean')) * scale, digits)} "
                    f"<small>[{_fmt(_num(c.get(m + '_ci95_lo')) * scale, digits)}, "
                    f"{_fmt(_num(c.get(m + '_ci95_hi')) * scale, digits)}]</small>")
        rows.append("<tr>" + "".join(f"<td class=l>{_e(c[k])}</td>" for k in keys)
                    + f"<td>{_e(c.get('n'))}</td><td>{ci('goodput_tps')}</td>"
                    f"<td>{ci('comm_s_median', 1e3, 3)}</td><td>{ci('share_ul', 1, 3)}</td>"
                    f"<td>{ci('share_dl', 1, 3)}</td></tr>")
    body.append("<h2>Cells</h2><table><tr>" + head + "<th>n</th><th>goodput (tokens/s) [95% CI]</th>"
                "<th>median comm (ms)</th><th>UL share</th><th>DL share</th></tr>" + "".join(rows) + "</table>")
    body.append("<h2>Warnings</h2>" + _warnings(warnings))
    body.append("<h2>Figures</h2>" + "".join(_sweep_figures(cells, keys)))
    if ok:
        first = folder / ok[0]["run_dir"]
        try:
            body.append(_img(_timeline_png(first, 3), "timeline of the first rounds of the first run",
                             f"The first three rounds of <code>{_e(ok[0]['run_dir'])}</code>."))
        except Exception as exc:
            body.append(f'<div class="warn">timeline not drawn: {_e(exc)}</div>')
    body.append("<h2>Sweep file</h2><pre>" + _e(_yaml_text(folder / "sweep.yaml")) + "</pre>")
    sub = f"sweep folder <code>{_e(folder.resolve())}</code>"
    return _page(f"multispin-sim sweep report: {meta.get('name', folder.name)}", sub, "\n".join(body))


def write_report(folder, out=None):
    """Write ``report.html`` for a run or sweep folder; returns its path."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ReportError(f"{folder}: not a folder; expected the output folder of 'multispin-sim run' "
                          "or 'multispin-sim sweep'")
    if (folder / "cells.csv").is_file():
        text = sweep_report(folder)
    elif (folder / "summary.json").is_file() and (folder / "rounds.csv").is_file():
        text = run_report(folder)
    else:
        raise ReportError(f"{folder}: neither a run folder (summary.json, rounds.csv) nor a sweep "
                          "folder (cells.csv)")
    path = Path(out) if out else folder / "report.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
