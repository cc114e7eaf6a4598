"""Goodput, throttling and draft lengths over simulated time (compute and energy runs).

Reads only a run folder: ``rounds.csv`` (start, duration, tokens), ``device_rounds.csv``
(draft_len, slowdown, temperature_c when thermal throttling is on) and ``devices.csv``
(power_mode). ``compute_timeseries`` bins them into windows of ``window_s`` seconds of simulated
time; ``plot_compute_timeseries`` draws four panels: goodput (tokens / time within the window),
the share of device-rounds throttled, the mean draft length and the mean temperature (when
recorded), each per power mode. The series are also written as CSV beside the image
(``output.sidecar_csv``). A run of several cells is refused: its merged tables number rounds
and devices within each cell; draw a cell folder instead.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..outputs.checked import read_csv
from ..outputs.records import read_header
from .figures import _require_matplotlib
from .output import PlotError, check_image, check_out_folder, save_image, sidecar_csv, write_csv
from .timeline import first_cell


def compute_timeseries(run_dir, window_s=30.0):
    """dict: ``t_s`` (window starts), ``goodput_tps``, and per power mode (``''`` = none)
    ``draft_len``, ``throttled`` (share), ``temperature_c`` (nan if not recorded)."""
    run = Path(run_dir)
    for name in ("rounds.csv", "device_rounds.csv", "devices.csv"):
        if not (run / name).exists():
            raise PlotError(f"{run}: no {name} (is this a run folder?)")
    if "cell" in read_header(run / "rounds.csv"):
        raise PlotError(f"{run}: a run of several cells numbers its rounds and devices within "
                        f"each cell; draw one cell, e.g. {first_cell(run)}")
    rd = read_csv(run / "rounds.csv", ("start_s", "duration_s", "tokens"))
    header = read_header(run / "device_rounds.csv")
    if "slowdown" not in header:
        raise PlotError(f"{run}: device_rounds.csv has no slowdown column (an older run?)")
    # the device rows (K a round): only the columns of the series
    dr = read_csv(run / "device_rounds.csv", ("round", "device", "draft_len", "slowdown"),
                  columns=("temperature_c",))
    dv = read_csv(run / "devices.csv", ("device",))
    start = np.asarray(rd["start_s"], float)
    end = float(start[-1] + rd["duration_s"][-1]) if start.size else 0.0
    edges = np.arange(0.0, end + window_s, window_s)
    rbin = np.searchsorted(edges, start, side="right") - 1
    nb = int(rbin.max(initial=0)) + 1  # up to the window of the last round's start
    tokens = np.bincount(rbin, weights=rd["tokens"], minlength=nb)
    time = np.bincount(rbin, weights=rd["duration_s"], minlength=nb)
    modes = np.asarray(dv.get("power_mode", np.full(len(dv["device"]), "")), dtype=str)
    dmode = modes[dr["device"]]
    dbin = rbin[dr["round"]]
    out = {"t_s": edges[:nb], "goodput_tps": np.divide(tokens, time, out=np.zeros(nb),
                                                        where=time > 0), "modes": {}}
    for m in np.unique(modes):
        sel = dmode == m
        n = np.bincount(dbin[sel], minlength=nb).astype(float)

        def mean(values):   # per window, over the device-rounds of mode m (``values``: theirs)
            return np.bincount(dbin[sel], weights=values, minlength=nb) / n
        with np.errstate(invalid="ignore", divide="ignore"):
            series = {
                "draft_len": mean(dr["draft_len"][sel]),
                "throttled": mean(dr["slowdown"][sel] > 1),
                "temperature_c": (mean(dr["temperature_c"][sel]) if "temperature_c" in dr
                                  else np.full(nb, np.nan)),
            }
        out["modes"][str(m)] = series
    return out


def plot_compute_timeseries(run_dir, out=None, window_s=30.0):
    """The image (.png, .svg or .pdf; default RUN_DIR/compute_timeseries.png) and CSV
    (``<stem>.csv`` beside it) of ``compute_timeseries``; returns the image's path."""
    out = check_image(out or Path(run_dir) / "compute_timeseries.png", "out",
                      "give the image to write")
    ts = compute_timeseries(run_dir, window_s)
    header = ["t_s", "goodput_tps"] + [f"{k}[{m or 'none'}]" for m in ts["modes"]
                                       for k in ts["modes"][m]]
    check_out_folder(out.parent, "out")
    csv_path = sidecar_csv(out, header, "out")
    Figure = _require_matplotlib()
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = ([t, ts["goodput_tps"][i]] + [ts["modes"][m][k][i] for m in ts["modes"]
                                         for k in ts["modes"][m]] for i, t in enumerate(ts["t_s"]))
    write_csv(csv_path, header, rows, "\r\n")   # csv's default line ends
    fig = Figure(figsize=(8, 8))
    axes = fig.subplots(4, 1, sharex=True)
    t = ts["t_s"] + window_s / 2
    axes[0].plot(t, ts["goodput_tps"], "k-")
    axes[0].set_ylabel("goodput (tokens/s)")
    for ax, key, ylabel in zip(axes[1:], ("throttled", "draft_len", "temperature_c"),
                               ("share throttled", "mean draft length", "temperature (degC)")):
        for m, s in ts["modes"].items():
            ax.plot(t, s[key], label=m or "no mode")
        ax.set_ylabel(ylabel)
    axes[3].set_xlabel("simulated time (s)")
    axes[1].legend(fontsize="small")
    fig.suptitle(f"{Path(run_dir).name}: {window_s:g} s windows")
    fig.tight_layout()
    return save_image(fig, out, dpi=110)
