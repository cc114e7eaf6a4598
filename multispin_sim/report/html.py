"""``write_report``: the page of a run folder (``report.run``), a sweep folder
(``report.sweep``) or a capacity folder (``report.capacity``). The folder and the output
location (``checks.check_output``) are checked first; the page is written atomically (a
signal leaves the old file or the new one)."""
from __future__ import annotations

from pathlib import Path

from ..outputs.atomic import write_text
from ..plots.figures import shown
from .checks import ReportError, check_output


def write_report(folder, out=None):
    """Write ``report.html`` for a run, sweep or capacity folder; returns its path."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ReportError(f"{folder}: not a folder; expected the output folder of 'multispin-sim "
                          "run', 'multispin-sim sweep' or 'multispin-sim capacity'")
    if (folder / "cells.csv").is_file() or (folder / "sweep.json").is_file():
        from .sweep import read_sweep_folder as read, sweep_report as page
    elif (folder / "summary.json").is_file() and (folder / "rounds.csv").is_file():
        from .run import read_run_folder as read, run_report as page
    elif (folder / "capacity.json").is_file():
        from .capacity import capacity_report as page, read_capacity_folder as read
    else:
        raise ReportError(f"{folder}: neither a run folder (summary.json, rounds.csv), a sweep "
                          "folder (sweep.json, cells.csv) nor a capacity folder (capacity.json); give the "
                          "output folder of 'multispin-sim run', 'sweep' or 'capacity'")
    path = check_output(out, folder)
    text = page(read(folder))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, shown(text))
    return path
