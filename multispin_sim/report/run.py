"""The report page of a run folder (``multispin-sim run``): the scenario, the headline figures
with their 95% confidence intervals, the run's time budget (shares of the simulated time, idle
included; of the summed batch spans for the asynchronous protocol), distributions of per-round
goodput and of the communication time (with its heavy tail on a log-log survival plot), the
UL/DL shares of the corrections (overall and per device), a timeline of the first rounds, the
warnings, and how the run was made (version, seed, command)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..outputs.checked import number, read_csv, read_json
from ..plots.figures import integer_ticks
from .checks import ReportError
from .common import (_cards, _e, _figure_class, _fmt, _img, _page, _png, _table, _timeline,
                     _warnings, _yaml_text)

ROUND_COLUMNS = ("round", "start_s", "draft_s", "verify_s", "comm_s", "duration_s", "tokens")
DEVICE_ROUND_COLUMNS = ("round", "device", "draft_len", "mode")
DEVICE_COLUMNS = ("device", "goodput_tps", "draft_latency_s")
SUMMARY_KEYS = ("rounds", "goodput_tps", "sim_time_s")
# how a device-round ended (device_rounds.csv mode): (name, mode, colour)
MODES = (("no correction", "", "#D9D9D9"), ("UL", "ul", "#DD8452"), ("DL", "dl", "#55A868"))


def read_run(folder):
    """summary.json and the three tables of a run folder, checked (``ReportError``)."""
    summary = read_json(folder / "summary.json", SUMMARY_KEYS)
    for key in ("rounds", "ul_corrections", "dl_corrections"):
        v = summary.get(key, 0)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ReportError(f"{folder / 'summary.json'}: {key} is {v!r}; expected a count "
                              f"(an integer >= 0): rerun the command that wrote it (or restore "
                              "the file)")
    tables = {}
    # the device rows (K a round): only the columns the page draws
    for name, required, finite, columns in (
            ("rounds", ROUND_COLUMNS, ROUND_COLUMNS, None),
            ("device_rounds", DEVICE_ROUND_COLUMNS, ("round", "device"), ("cell",)),
            ("devices", DEVICE_COLUMNS, ("device",), None)):
        path = folder / f"{name}.csv"
        if not path.is_file():
            raise ReportError(f"{path}: not found; expected a whole run folder of "
                              "'multispin-sim run' (summary.json and rounds.csv, "
                              "device_rounds.csv, devices.csv)")
        tables[name] = read_csv(path, required, finite, columns)
    n = len(tables["rounds"]["round"])
    if n == 0 and summary.get("complete") is False:
        raise ReportError(f"{folder}: the run stopped before its first round ended "
                          f"({summary.get('stop_reason', 'stopped')}), nothing to report; "
                          "remove what stopped it and run it again")
    if n == 0:
        raise ReportError(f"{folder}: the run has no rounds (rounds.csv has none), nothing to "
                          "report; run it again with more rounds (run.rounds) or a longer "
                          "run.max_time_s")
    return summary, tables


def device_axis(dev, dr):
    """Where each device (row of ``devices.csv``) and each device-round go on the per-device
    axes, and the axis label: the device index; in a run of several cells (a ``cell`` column,
    device indices counted within each cell) the devices cell by cell; but where every cell
    lists the network's devices (moving devices, reassociation), each device once, its rows in
    the cells together."""
    if "cell" not in dev:
        return dev["device"], dr["device"], "device"
    if _shared_devices(dev):
        return dev["device"], dr["device"], "device (over the cells it was in)"
    # a (cell, device) pair as one number, looked up in the devices table's order (millions
    # of device rows in a long run: no Python loop over them)
    width = int(max(dev["device"].max(initial=0), dr["device"].max(initial=0))) + 1
    keys = dev["cell"] * width + dev["device"]
    order = np.argsort(keys, kind="stable")
    at = order[np.searchsorted(keys, dr["cell"] * width + dr["device"], sorter=order)]
    return np.arange(keys.size), at, "device (cell by cell)"


def _shared_devices(dev):
    """Whether every cell's table lists the same devices (the same indices with the same
    drafting latencies, drawn once for the network) rather than devices of its own."""
    cells = np.unique(dev["cell"])
    if cells.size < 2 or "draft_latency_s" not in dev:
        return False

    def listed(c):   # the cell's devices and their latencies, in device order
        rows = dev["cell"] == c
        order = np.argsort(dev["device"][rows], kind="stable")
        return np.stack([dev["device"][rows][order], dev["draft_latency_s"][rows][order]])

    first = listed(cells[0])
    return all(np.array_equal(listed(c), first) for c in cells[1:])


def time_budget(summary, tables, cell_times=None):
    """(shares, what they are of): where the time of the run went, from rounds.csv.
    Synchronous: shares of the simulated time (summary ``sim_time_s``), with the time no round
    was running (a light load waiting for requests) as ``idle``; several cells: of the cells'
    simulated times summed (``cell_times``, each cell's own ``sim_time_s``). Asynchronous:
    batches overlap, so the shares are of the summed batch spans (rounds.csv ``duration_s``,
    from a batch's earliest draft start to its last correction's end), the rest of a span
    being the waits for the server and the channel."""
    rt = tables["rounds"]
    parts = {"drafting": float(rt["draft_s"].sum()), "verification": float(rt["verify_s"].sum()),
             "communication": float(rt["comm_s"].sum())}
    spans = float(rt["duration_s"].sum())
    if is_asynchronous(summary):
        total = spans
        parts["waiting for the server or the channel"] = max(spans - sum(parts.values()), 0.0)
        what = ("of the summed batch spans (each from the batch's earliest draft start to its "
                "last correction's end; batches overlap, so these are not shares of the "
                "simulated time)")
    elif cell_times:
        total = float(sum(cell_times.values()))
        parts["idle (no round running)"] = max(total - spans, 0.0)
        what = (f"of the simulated time of the {len(cell_times)} cells with rounds (each cell's "
                f"own sim_time_s, summed: {total:.4g} s)")
    else:
        total = number(summary.get("sim_time_s"))
        total = total if np.isfinite(total) else spans
        parts["idle (no round running)"] = max(total - spans, 0.0)
        what = "of the simulated time"
    return {k: v / total if total > 0 else 0.0 for k, v in parts.items()}, what


def is_asynchronous(summary):
    return isinstance(summary.get("asynchronous"), dict)


def _cell_goodputs(summary):
    cells = summary.get("cells")
    if not isinstance(cells, list):
        return []
    goodputs = [number(c.get("goodput_tps")) for c in cells if isinstance(c, dict)]
    return [g for g in goodputs if np.isfinite(g)]


def _two_panels(**subplots):
    """(figure, left axes, right axes): the page's figure of two panels side by side."""
    fig = _figure_class()(figsize=(10, 3.4), layout="constrained")
    return (fig, *fig.subplots(1, 2, **subplots))


def goodput_figure(summary, tables):
    """Goodput of each round (of each batch: tokens over its span, asynchronous) against the
    run's goodput, or each cell's in a run of several cells (the network's is their sum, far
    right of any round); and the goodput of each device. Returns (figure, caption)."""
    rt, dr, dev = tables["rounds"], tables["device_rounds"], tables["devices"]
    dur = rt["duration_s"]
    fig, a1, a2 = _two_panels()
    with np.errstate(divide="ignore", invalid="ignore"):
        per_round = np.where(dur > 0, rt["tokens"] / dur, np.nan)
    per_round = per_round[np.isfinite(per_round)]
    # rounds all alike (nobody drafts) differ in rounding only: one bin, not 40 of 1e-13
    spread = np.ptp(per_round) if per_round.size else 0.0
    a1.hist(per_round, bins=40 if spread > 1e-9 * np.abs(per_round).max(initial=0.0) else 1,
            color="#4C72B0")
    g = number(summary.get("goodput_tps"))
    lo, hi = _interval(summary)
    cells = _cell_goodputs(summary)
    if is_asynchronous(summary):
        a1.set(xlabel="tokens / batch span (tokens/s)", title="goodput of each batch")
        caption = ("Left: tokens of each batch divided by its span (earliest draft start to last "
                   "correction). Batches overlap, so the run's goodput, tokens over the "
                   f"simulated time ({_f(g, '.1f')} tokens/s), is not read from this histogram.")
    elif cells:
        for i, c in enumerate(cells):
            a1.axvline(c, color="#DD8452", linewidth=1.0,
                       label="each cell's goodput" if i == 0 else None)
        a1.legend(fontsize=8)
        a1.set(xlabel="tokens / round length (tokens/s)", title="goodput of each round, all cells")
        caption = ("Left: tokens of each round of every cell divided by its length; the lines are "
                   "the cells' goodputs (each the ratio of its sums). The network's goodput, "
                   f"{_f(g, '.1f')} tokens/s, is their sum.")
    else:
        if np.isfinite(lo) and np.isfinite(hi):
            a1.axvspan(lo, hi, color="#DD8452", alpha=0.3, label="95% CI of the run's goodput")
        if np.isfinite(g):
            a1.axvline(g, color="#DD8452", label=f"run goodput {g:.1f} tokens/s")
            a1.legend(fontsize=8)
        a1.set(xlabel="tokens / round length (tokens/s)", title="goodput of each round")
        caption = ("Left: tokens of each round divided by its length (the run's goodput is the "
                   "ratio of sums, not the mean of this histogram).")
    a1.set(ylabel="batches" if is_asynchronous(summary) else "rounds")
    devices, _, device_label = device_axis(dev, dr)
    places = np.unique(devices)
    a2.bar(places, np.bincount(devices, weights=dev["goodput_tps"])[places], color="#55A868")
    a2.set(xlabel=device_label, ylabel="tokens/s", title="goodput per device")
    integer_ticks(a2)
    return fig, caption + " Right: per-device goodput."


def _run_figures(folder, summary, tables):
    rt, dr, dev = tables["rounds"], tables["device_rounds"], tables["devices"]
    fig, caption = goodput_figure(summary, tables)
    figs = [_img(_png(fig), "goodput distribution", _e(caption))]

    devices, device_of_row, device_label = device_axis(dev, dr)

    fig, a1, a2 = _two_panels()
    comm = rt["comm_s"][rt["comm_s"] > 0] * 1e3
    if comm.size:
        bins = np.logspace(np.log10(comm.min()), np.log10(max(comm.max(), comm.min() * 1.01)), 40)
        a1.hist(comm, bins=bins, color="#8172B3")
        a1.set_xscale("log")
        # the empirical survival at the sorted values, each counted in: P(comm >= x), 1 at
        # the least
        c = np.sort(comm)
        a2.loglog(c, 1.0 - np.arange(c.size) / c.size, ".", ms=3, color="#8172B3")
        for q, ls in ((0.5, "--"), (0.95, ":")):
            v = np.quantile(comm, q)
            a1.axvline(v, color="k", ls=ls, label=f"{'median' if q == 0.5 else 'p95'} {v:.2f} ms")
        a1.legend(fontsize=8)
    unit = "batch" if is_asynchronous(summary) else "round"
    a1.set(xlabel=f"communication time per {unit} (ms)", ylabel=f"{unit}s",
           title=f"comm time ({comm.size} {unit}s with a correction)")
    a2.set(xlabel="communication time (ms)", ylabel="P(comm \u2265 x)",
           title="survival (log-log): the tail")
    figs.append(_img(_png(fig), "communication delay distribution",
                     "The correction phase of each round. Under Rayleigh fading the delay has a 1/t "
                     "tail (infinite mean): read the median and p95 rather than the mean."))

    fig, a1, a2 = _two_panels(width_ratios=(1, 3))
    modes = np.char.lower(np.char.strip(dr["mode"].astype(str)))
    n = max(len(modes), 1)
    bottom = 0.0
    for name, code, colour in MODES:
        v = np.mean(modes == code)
        a1.bar([0], [v], bottom=bottom, color=colour, label=f"{name} {v:.1%}")
        bottom += v
    a1.set_xticks([0], ["all"])
    a1.set(ylabel="share of device-rounds", ylim=(0, 1))
    a1.legend(fontsize=8, loc="lower center")
    places = np.unique(devices)
    bottom = np.zeros(len(places))
    size = int(max(np.max(devices, initial=0), np.max(device_of_row, initial=0))) + 1
    rows = np.bincount(device_of_row, minlength=size)
    for _, code, colour in MODES:
        hits = np.bincount(device_of_row, weights=modes == code, minlength=size)
        with np.errstate(invalid="ignore", divide="ignore"):
            v = np.where(rows > 0, hits / rows, 0.0)[places]
        a2.bar(places, v, bottom=bottom, color=colour)
        bottom += v
    a2.set(xlabel=device_label, ylim=(0, 1), title="per device")
    integer_ticks(a2)
    figs.append(_img(_png(fig), "UL and DL shares",
                     f"How the {n:,} device-rounds ended: no correction, a UL correction (the device "
                     "uploads its draft distribution) or a DL correction (the server sends the "
                     "target distribution)."))
    figs.append(_timeline(folder, "timeline of the first rounds", ": drafting, waiting, the "
                          "batched verification and the UL/DL corrections of each device."))
    return figs


def _interval(summary):
    ci = summary.get("goodput_ci95")
    if isinstance(ci, list) and len(ci) == 2:
        return number(ci[0]), number(ci[1])
    return np.nan, np.nan


def _f(x, spec=".2f"):
    return format(x, spec) if np.isfinite(x) else "-"


def _stat(summary, key, q, scale=1.0):
    s = summary.get(key)
    return number(s.get(q)) * scale if isinstance(s, dict) else np.nan


def _cells_section(summary):
    """A run of several cells: one row per cell, and the handovers (docs/components/cells.md)."""
    cells = summary.get("cells")
    if not isinstance(cells, list) or not cells:
        return []
    keys = (("cell", "cell", "d"), ("devices", "devices", "d"), ("goodput_tps", "goodput (tokens/s)", ".2f"),
            ("rounds", "rounds", "d"), ("ul_corrections", "UL", "d"), ("dl_corrections", "DL", "d"),
            ("mean_duration_s", "mean duration (s)", ".4f"))
    rows = [[_e(format(c.get(k), spec)) if isinstance(c.get(k), (int, float)) else "-"
             for k, _, spec in keys] for c in cells if isinstance(c, dict)]
    out = [f"<h2>Cells</h2><p>{len(cells)} cells; UL share of corrections "
           f"{_fmt(summary.get('ul_share'))}; load balance (smallest over largest cell goodput) "
           f"{_fmt(summary.get('load_balance'))}.</p>"
           + _table([_e(label) for _, label, _ in keys], rows)]
    ho = summary.get("handover")
    if isinstance(ho, dict):
        out.append(f"<p>Handovers: {ho.get('handovers', '?')} ({ho.get('ping_pongs', '?')} "
                   f"ping-pongs), {_fmt(ho.get('per_device_per_s'))} per device per second, mean "
                   f"interruption {_fmt(ho.get('mean_interruption_s'))} s (handovers.csv).</p>")
    return out


def read_run_folder(folder):
    """Everything the run page needs, read and checked before any figure is drawn."""
    folder = Path(folder)
    summary, tables = read_run(folder)
    meta = read_json(folder / "run.json") if (folder / "run.json").is_file() else {}
    return folder, summary, tables, meta, cell_times(summary, tables["rounds"])


def cell_times(summary, rounds):
    """{cell: its simulated time} of a run of several cells (None for one cell): the
    ``sim_time_s`` of the summary's block of each cell, or (a folder written before the blocks
    had it) the end of its last round (a cell without rounds takes no time in the budget)."""
    if "cell" not in rounds:
        return None
    given = {b.get("cell"): number(b.get("sim_time_s")) for b in summary.get("cells") or []
             if isinstance(b, dict)}
    times = {}
    for c in np.unique(rounds["cell"]).tolist():
        t = given.get(c, np.nan)
        if not np.isfinite(t):
            sel = rounds["cell"] == c
            t = float((rounds["start_s"][sel] + rounds["duration_s"][sel]).max())
        times[c] = t
    return times


def run_report(checked):
    folder, summary, tables, meta, cells = checked
    figs = _run_figures(folder, summary, tables)
    budget, of_what = time_budget(summary, tables, cells)
    batches = is_asynchronous(summary)
    lo, hi = _interval(summary)
    comm_med, comm_p95 = _stat(summary, "comm_s", "median", 1e3), _stat(summary, "comm_s", "p95", 1e3)
    cards = [
        ("goodput (tokens/s), 95% CI", f"{_f(number(summary['goodput_tps']))}<br><small>"
                                       f"{_f(lo)} to {_f(hi)}</small>"),
        (f"{'batches' if batches else 'rounds'} / simulated time",
         f"{summary['rounds']:,}<br><small>{_f(number(summary['sim_time_s']))} s</small>"),
        ("mean draft length", _f(number(summary.get("mean_draft_len")))),
        ("corrections UL / DL", f"{summary.get('ul_corrections', 0):,} / "
                                f"{summary.get('dl_corrections', 0):,}"),
        # over every round (0 where nobody was rejected), as summary.json; the histogram below
        # shows the rounds with a correction only
        (f"comm time median / p95, all {'batches' if batches else 'rounds'}",
         f"{_f(comm_med)} ms<br><small>p95 {_f(comm_p95)} ms</small>"),
    ]
    stats = ("mean", "median", "p95", "max")
    # asynchronous: summary.json duration_s is the time between batch ends (serving.md)
    length = "time between batch ends" if batches else "round length"
    rows = [[label] + [_f(_stat(summary, key, q, 1e3), ".3f") for q in stats]
            for key, label in (("duration_s", length), ("comm_s", "communication time"))
            if isinstance(summary.get(key), dict)]
    body = [_cards(cards)]
    if budget:
        body.append("<p>Time budget of the run: " + ", ".join(
            f"{k} {v:.0%}" for k, v in budget.items()) + f" {_e(of_what)}.</p>")
    body.append(_table([f"per {'batch' if batches else 'round'} (ms)", *stats], rows, left=1))
    req = summary.get("requests")
    if isinstance(req, dict):
        lat = req.get("latency_s", {})
        body.append(f"<p>Requests: {req.get('completed', '?')} of {req.get('arrivals', '?')} completed; "
                    f"latency median {_fmt(lat.get('median'))} s, p95 {_fmt(lat.get('p95'))} s; server "
                    f"utilisation {_fmt(req.get('server_utilisation'))}.</p>")
    body.extend(_cells_section(summary))
    warnings = [str(w) for w in summary.get("warnings") or [] if w]
    if not summary.get("complete", True):
        warnings.insert(0, "the run was interrupted: complete is false, the figures cover the rounds done")
    body.append("<h2>Warnings</h2>" + _warnings(warnings))
    body.append("<h2>Figures</h2>" + "".join(figs))
    body.append("<h2>Scenario</h2><pre>" + _e(_yaml_text(folder / "scenario.yaml")) + "</pre>")
    if meta:
        # what tells whether another machine should write the same bytes
        # (docs/background/reproducibility.md)
        keep = {k: meta[k] for k in ("multispin_sim_version", "seed", "wall_time_s",
                                     "command_line", "code_sha256", "packages", "platform",
                                     "numpy_simd", "compiled_search", "compiled_shared_band",
                                     "numba_allowed", "complete")
                if k in meta}
        body.append("<h2>How it was made</h2><pre>" + _e(json.dumps(keep or meta, indent=2)) + "</pre>")
    sub = f"run folder <code>{_e(folder.resolve())}</code>"
    return _page(f"multispin-sim run report: {folder.name}", sub, "\n".join(body))
