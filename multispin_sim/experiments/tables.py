"""The sweep's tables: ``runs.csv`` (tidy, one row per cell x replication) and ``cells.csv``.

``runs.csv`` columns: ``cell``, ``replication``, ``seed``, one column per swept key (named by its
key path), ``status`` (ok / failed), ``error``, ``run_dir``, then every scalar metric of the run
summary, flattened (``goodput_ci95`` -> ``goodput_ci95_lo`` / ``_hi``, ``comm_s`` ->
``comm_s_mean`` ...), and the derived shares of device-rounds:

- ``device_rounds`` = the summary's own ``device_rounds`` when the engine reports one (0 for a
  run without rounds), else rounds x devices.count (the paper's saturated workload: every
  device takes part in every round); other workloads without it get NaN rather than a guess;
- ``share_accepted`` = 1 - rejections / device_rounds (all drafts accepted, or no draft);
- ``share_ul`` = ul_corrections / device_rounds, ``share_dl`` = dl_corrections / device_rounds
  (the three shares are NaN when device_rounds is 0 or unknown).

``cells.csv``: one row per cell: ``cell``, the swept values, ``n`` (replications that succeeded),
``n_failed``, and for each metric ``<metric>_mean``, ``<metric>_ci95_lo``, ``<metric>_ci95_hi``
and ``<metric>_n``: the mean across the successful replications that have a value of that
metric, its 95% confidence interval (Student t with ``<metric>_n`` - 1 degrees of freedom; NaN
when ``<metric>_n`` < 2), and that number of replications. ``<metric>_n`` is below ``n`` when
some runs have no value (null in their summary.json: a latency of a run that completed no
request, an SLO attainment with no request counted). An infinite value is stored as null in
summary.json too (strict JSON), so it counts as missing alike, and a run read back on resume
gives the same row. Wall-clock metrics (``wall_time_s``, ``rounds_per_s``) are left out of
``cells.csv``, so that file is byte-identical whatever the executor and the number of workers.

Floats are written with Python's shortest round-trip repr (like ``outputs.records``).
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

from ..outputs.atomic import replacing, strict
from ..outputs.tquantile import t_quantile
from .metrics import METRICS, WALL_CLOCK


def flatten_summary(summary, prefix=""):
    """Scalar metrics of a run summary, flattened with ``_`` (``comm_s.median`` ->
    ``comm_s_median``); ``*_ci95`` pairs become ``_lo`` / ``_hi``; other lists and text are left
    out."""
    out = {}
    for key, value in summary.items():
        name = f"{prefix}{key}"
        if isinstance(value, bool):
            out[name] = int(value)
        elif isinstance(value, (int, float)):
            out[name] = value
        elif isinstance(value, dict):
            out.update(flatten_summary(value, f"{name}_"))
        elif name.endswith("_ci95") and isinstance(value, (list, tuple)) and len(value) == 2:
            out[f"{name}_lo"], out[f"{name}_hi"] = value
    return out


def derived_metrics(summary, scenario):
    """Shares of device-rounds accepted / corrected by UL / by DL.

    The denominator is the summary's ``device_rounds`` when the engine reports it (kept as
    reported, 0 included), else rounds x devices.count, exact for the saturated workload (every
    device in every round); for other workloads without that key it is NaN rather than wrong.
    The shares are NaN without device-rounds to share.
    """
    count = int(scenario["devices"]["count"])
    arrivals = (scenario.get("workload") or {}).get("arrivals", "saturated")
    if summary.get("device_rounds") is not None:
        device_rounds = int(summary["device_rounds"])
    elif arrivals == "saturated":
        device_rounds = int(summary["rounds"]) * count
    else:
        device_rounds = math.nan
    some = device_rounds > 0
    return {
        "device_rounds": device_rounds,
        "share_accepted": 1.0 - summary["rejections"] / device_rounds if some else math.nan,
        "share_ul": summary["ul_corrections"] / device_rounds if some else math.nan,
        "share_dl": summary["dl_corrections"] / device_rounds if some else math.nan,
    }


def run_metrics(summary, scenario):
    """Every metric of one run, in table order (known metrics first, new summary keys after).

    The summary is read as summary.json stores it (``strict``: NaN and infinities None), so a
    run finished in this call and one read back on resume give the same row."""
    flat = flatten_summary(strict(summary))
    flat.update(derived_metrics(summary, scenario))
    ordered = {m: flat[m] for m in METRICS if m in flat}
    ordered.update({k: v for k, v in flat.items() if k not in ordered})
    return ordered


def _cell_text(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value)
    if isinstance(value, float):
        return repr(float(value))
    return str(value)


def write_csv(path, columns, rows):
    """The table as CSV, written to a temporary file beside ``path`` and renamed over it: a
    reader, or a sweep stopped at any moment, sees the old table or the new one, never part."""
    with replacing(path) as tmp:
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(columns)
            for row in rows:
                w.writerow([_cell_text(row.get(c)) for c in columns])


def write_parquet(path, columns, rows):
    """Parquet copy of a table when pyarrow is importable; returns whether it was written.

    Each column gets its own type; a column whose values Arrow cannot hold in one type (a swept
    key with values of mixed types, ``[every-round, 5]``) is written as text, that column only.
    """
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return False
    arrays = []
    for c in columns:
        vals = [row.get(c) for row in rows]
        if any(isinstance(v, (list, tuple, dict)) for v in vals):
            vals = [None if v is None else json.dumps(v) for v in vals]
        elif any(isinstance(v, float) for v in vals) and all(
                v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
                for v in vals):
            vals = [None if v is None else float(v) for v in vals]
        try:
            arrays.append(pa.array(vals))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arrays.append(pa.array([None if v is None else _cell_text(v) for v in vals],
                                   type=pa.string()))
    table = pa.Table.from_arrays(arrays, names=list(columns))
    with replacing(path) as tmp:   # as write_csv: the old file or the new one, never part
        pq.write_table(table, tmp)
    return True


def finite_values(values):
    """The values that count in a cell's statistics: not None, not NaN, not infinite."""
    x = np.asarray([v for v in values if v is not None], dtype=float)
    return x[np.isfinite(x)]


def mean_ci(values, level=0.95):
    """(mean, lo, hi) of the finite values of a sample; Student t interval, NaN bounds when
    fewer than 2 values."""
    x = finite_values(values)
    n = x.size
    if n == 0:
        return math.nan, math.nan, math.nan
    mean = float(x.mean())
    if n < 2:
        return mean, math.nan, math.nan
    half = float(t_quantile(0.5 + level / 2, n - 1) * x.std(ddof=1) / math.sqrt(n))
    return mean, mean - half, mean + half


def build_tables(sweep, records):
    """(run columns, run rows, cell columns, cell rows) from the per-run records.

    ``records``: {(cell, rep): {"status", "error", "run_dir", "summary"}}; missing runs (an
    interrupted sweep) are left out of runs.csv and counted as not done in cells.csv.
    """
    keys = sweep.keys
    metric_names = {}   # an ordered set: each metric where a run first has it
    rows = []
    for cell in sweep.cells:
        for rep in range(sweep.replications):
            rec = records.get((cell.index, rep))
            if rec is None:
                continue
            row = {"cell": cell.index, "replication": rep, "seed": sweep.seeds[rep], **cell.values,
                   "status": rec["status"], "error": rec.get("error") or "",
                   "run_dir": rec.get("run_dir", "")}
            if rec["status"] == "ok":
                metrics = run_metrics(rec["summary"], cell.scenario)
                metric_names.update(dict.fromkeys(metrics))
                row.update(metrics)
            rows.append(row)
    metric_names = list(metric_names or METRICS)
    for row in rows:
        for m in metric_names:
            row.setdefault(m, math.nan)
    run_cols = ["cell", "replication", "seed", *keys, "status", "error", "run_dir", *metric_names]

    cell_metrics = [m for m in metric_names if m not in WALL_CLOCK]
    by_cell = {}
    for r in rows:
        by_cell.setdefault(r["cell"], []).append(r)
    cell_rows = []
    for cell in sweep.cells:
        mine = by_cell.get(cell.index, [])
        ok = [r for r in mine if r["status"] == "ok"]
        crow = {"cell": cell.index, **cell.values, "n": len(ok),
                "n_failed": sum(r["status"] != "ok" for r in mine)}
        for m in cell_metrics:
            values = [r[m] for r in ok]
            mean, lo, hi = mean_ci(values)
            crow[f"{m}_mean"], crow[f"{m}_ci95_lo"], crow[f"{m}_ci95_hi"] = mean, lo, hi
            crow[f"{m}_n"] = int(finite_values(values).size)
        cell_rows.append(crow)
    cell_cols = ["cell", *keys, "n", "n_failed",
                 *(f"{m}_{s}" for m in cell_metrics for s in ("mean", "ci95_lo", "ci95_hi", "n"))]
    return run_cols, rows, cell_cols, cell_rows


def write_tables(folder, sweep, records):
    """Write runs.csv, cells.csv (and runs.parquet, cells.parquet with pyarrow), each to a
    temporary file renamed over the table; return paths."""
    folder = Path(folder)
    run_cols, rows, cell_cols, cell_rows = build_tables(sweep, records)
    paths = {"runs": folder / "runs.csv", "cells": folder / "cells.csv"}
    write_csv(paths["runs"], run_cols, rows)
    write_csv(paths["cells"], cell_cols, cell_rows)
    if write_parquet(folder / "runs.parquet", run_cols, rows):
        write_parquet(folder / "cells.parquet", cell_cols, cell_rows)
        paths["runs_parquet"] = folder / "runs.parquet"
        paths["cells_parquet"] = folder / "cells.parquet"
    return paths, rows, cell_rows
