"""The capacity curve of ``multispin-sim capacity``: SLO attainment against the arrival rate.

Reads ``capacity.csv`` and ``capacity.json`` of a capacity folder; draws the mean attainment with
its 95% interval at every rate tried (colour by verdict), the target, and the capacity with its
interval (shaded). Writes ``capacity.png`` beside the CSV, or ``out`` (a .png, .svg or .pdf
file, or a folder for ``capacity.png``).
"""
from pathlib import Path

import numpy as np

from ..outputs.checked import read_csv, read_json
from .figures import _require_matplotlib
from .output import IMAGE_FORMATS, PlotError, check_out_folder, save_image

_COLOURS = {"meets": "tab:green", "fails": "tab:red", "undecided": "tab:orange", "": "grey"}


CURVE = (("rate_per_s", "rate (requests/s per device)", 4), ("replications", "runs", 4),
         ("requests", "requests", 4), ("attainment_mean", "SLO attainment", 3),
         ("ci95_lo", "95% CI low", 3), ("ci95_hi", "95% CI high", 3), ("verdict", "verdict", None))


def read_capacity_output(folder):
    """capacity.json and capacity.csv of a capacity folder, checked (``OutputError`` naming the
    file and the line): what ``plot`` and ``report`` draw."""
    folder = Path(folder)
    result = read_json(folder / "capacity.json",
                       ("target", "slo", "scenario", "protocol", "draft", "message"))
    curve = read_csv(folder / "capacity.csv", [c for c, _, _ in CURVE],
                     ("rate_per_s", "attainment_mean", "ci95_lo", "ci95_hi"))
    return result, curve


def capacity_image(folder, out=None):
    """Where the figure goes: ``out`` if it is a .png, .svg or .pdf file, ``out/capacity.png``
    if it is a folder (an existing one, or a name without a suffix), ``folder/capacity.png``
    without ``out``; another suffix is refused (``PlotError``) rather than taken as a folder."""
    if not out:
        return Path(folder) / "capacity.png"
    out = Path(out)
    if out.is_dir():
        return out / "capacity.png"
    if out.suffix.lower() in IMAGE_FORMATS:
        return out
    if out.suffix:
        raise PlotError(f"--out {out}: is neither a .png, .svg or .pdf file nor a folder; give "
                        "the image file to write, or a folder for capacity.png")
    return out / "capacity.png"


def plot_capacity(folder, out=None):
    """Draw the capacity curve (see ``capacity_image`` for where); the inputs and the place are
    checked before anything is written. Returns [image path]."""
    folder = Path(folder)
    png = capacity_image(folder, out)
    res, curve = read_capacity_output(folder)
    check_out_folder(png.parent)
    fig = capacity_figure(res, curve)
    return [save_image(fig, png, dpi=120)]


def capacity_figure(res, curve):
    """The matplotlib Figure of a capacity search: ``res`` its capacity.json, ``curve`` the
    columns of its capacity.csv."""
    Figure = _require_matplotlib()
    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    ax = fig.subplots()
    rate, mean = curve["rate_per_s"], curve["attainment_mean"]
    lo, hi = curve["ci95_lo"], curve["ci95_hi"]
    order = rate.argsort()
    ax.plot(rate[order], mean[order], color="black", linewidth=0.8, zorder=1)
    for verdict, colour in _COLOURS.items():
        sel = curve["verdict"] == verdict
        if sel.any():
            # clipped at 0: an end may sit one ulp inside the mean (a capacity.csv of 0.1.0)
            yerr = np.maximum([mean[sel] - lo[sel], hi[sel] - mean[sel]], 0.0)
            ax.errorbar(rate[sel], mean[sel], yerr=yerr,
                        fmt="o", color=colour, capsize=3, label=verdict or "?", zorder=2)
    ax.axhline(res["target"], color="grey", linestyle="--", linewidth=0.8,
               label=f"target {res['target']:.0%}")
    a, b = res.get("interval") or (None, None)
    if a is not None and b is not None:  # only a search that found the capacity has one
        ax.axvspan(a, b, color="tab:blue", alpha=0.12, label="capacity interval")
    if res.get("capacity_per_device_rps") is not None:
        ax.axvline(res["capacity_per_device_rps"], color="tab:blue", linewidth=1.2,
                   label=f"capacity {res['capacity_per_device_rps']:.3g}/s")
    slo = ", ".join(f"{k.split('_')[0].upper()} <= {v:g} s" for k, v in res["slo"].items()
                    if v is not None)
    ax.set_title(f"{res['scenario']} ({res['protocol']}, draft {res['draft']}): {slo}",
                 fontsize=9)
    ax.set_xlabel("arrival rate per device (requests/s)")
    ax.set_ylabel("SLO attainment (share of requests)")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig
