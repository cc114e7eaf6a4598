"""The paper's figures at publication quality: every sweep file in ``scenarios/paper/`` (2,000
rounds x 10 replications per point), then its plots, timed; and the precision they reach.

For each figure: runs, wall time and CPU time (this process and its workers) of ``sweep`` then
``plot`` (all cores, the local executor: what ``multispin-sim sweep`` does by default), and the
95% CI half-width of the goodput points relative to their mean at K = 20 (every point of Figs
7/8 and 11, the K = 20 points of Figs 9/10), the largest of each curve. Outputs go to a new
folder under the system's temporary directory (printed; figures included).

``--quick``: 100 rounds x 2 replications per point (a few minutes; the precision figures then
mean little).
"""
import csv
import dataclasses
import os
import tempfile
import time
from pathlib import Path


HEADLINE_K = 20
QUICK = {"rounds": 100, "replications": 2}


def paper_dir():
    """``scenarios/paper`` of the working directory, else of the source checkout."""
    for base in (Path.cwd(), Path(__file__).resolve().parents[2]):
        d = base / "scenarios" / "paper"
        if d.is_dir():
            return d
    raise SystemExit("error: bench paper: scenarios/paper/ not found; run it from the "
                     "project's folder (the sweep files are not installed with the package)")


def _cpu():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def precision(cells_csv, curve=None):
    """{curve value: [95% CI half-width / mean of goodput at each K = 20 point]} from a sweep's
    cells.csv (``curve``: the column the figure draws one curve per value of; None: one curve)."""
    with open(cells_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    out = {}
    for row in rows:
        if int(float(row.get("devices.count", HEADLINE_K))) != HEADLINE_K:
            continue
        mean = float(row["goodput_tps_mean"])
        lo, hi = float(row["goodput_tps_ci95_lo"]), float(row["goodput_tps_ci95_hi"])
        out.setdefault(row[curve] if curve else "all", []).append((hi - lo) / 2 / mean)
    return out


def goodput_curve(plots):
    """The column a sweep's goodput plot draws one curve per value of (None: one curve); a
    loaded sweep holds ``y`` and ``curves`` as lists."""
    for plot in plots:
        y = plot.get("y")
        if y == "goodput_tps" or (isinstance(y, (list, tuple)) and "goodput_tps" in y):
            curves = plot.get("curves")
            if isinstance(curves, (list, tuple)):
                return curves[0] if curves else None
            return curves
    return None


def run_figure(path, out, quick=False):
    """Sweep then plot one paper sweep file into ``out``; prints and returns its figures."""
    from ..experiments import load_sweep, run_sweep

    overrides = [f"run.rounds={QUICK['rounds']}"] if quick else []
    sweep = load_sweep(str(path), overrides=overrides)
    if quick:
        n = QUICK["replications"]
        sweep = dataclasses.replace(sweep, replications=n, seeds=sweep.seeds[:n])
    w0, c0 = time.perf_counter(), _cpu()
    result = run_sweep(sweep, out, executor="local", progress=False)
    w1, c1 = time.perf_counter(), _cpu()
    try:
        from ..plots import plot_sweep

        plot_sweep(out)
        plotted = "sweep + plot"
    except ImportError:
        plotted = "sweep only (plot needs the 'plot' extra)"
    w2, c2 = time.perf_counter(), _cpu()
    curve = goodput_curve(sweep.plot)
    hw = precision(Path(out) / "cells.csv", curve)
    fig = {"file": path.name, "runs": sweep.n_runs, "failed": len(result.failures),
           "rounds": int(sweep.cells[0].scenario["run"]["rounds"]),
           "replications": sweep.replications, "sweep_wall_s": w1 - w0, "sweep_cpu_s": c1 - c0,
           "plot_wall_s": w2 - w1, "wall_s": w2 - w0, "cpu_s": c2 - c0,
           "halfwidth_max_k20": {c: float(max(v)) for c, v in hw.items()}}
    text = (f"{path.name}: {fig['runs']} runs of {fig['rounds']:,} rounds ({fig['failed']} failed),"
            f" {plotted}: {fig['wall_s']:.0f} s wall, {fig['cpu_s']:.0f} s CPU; goodput 95% CI "
            f"half-width at K = {HEADLINE_K}, largest per curve: "
            + ", ".join(f"{c} {100 * max(v):.2f}%" for c, v in hw.items()) + " of the mean")
    print(text, flush=True)
    return fig


def run(quick=False):
    files = sorted(paper_dir().glob("*.yaml"))
    root = Path(tempfile.mkdtemp(prefix="bench-paper-"))
    print(f"outputs in {root} (every run's records: about 7 GB in full, delete it after); "
          f"{os.cpu_count()} cores"
          + (f" (--quick: {QUICK['rounds']} rounds x {QUICK['replications']} replications)"
             if quick else ""), flush=True)
    figures = {}
    w0, c0 = time.perf_counter(), _cpu()
    for path in files:
        figures[path.stem] = run_figure(path, root / path.stem, quick=quick)
    total = {"wall_s": time.perf_counter() - w0, "cpu_s": _cpu() - c0}
    print(f"all {len(files)} figures: {total['wall_s'] / 60:.1f} min wall, "
          f"{total['cpu_s'] / 60:.1f} min CPU", flush=True)
    figures["total"] = total
    return figures
