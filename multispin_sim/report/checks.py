"""The report's own checks: its output location, before any work. Its inputs are read by
``outputs.checked`` (a damaged file is refused with its line)."""
from __future__ import annotations

from pathlib import Path

from ..errors import OutputLocationError
from ..outputs.checked import OutputError
from ..plots.output import check_out_folder


class ReportError(OutputError):
    """A folder that is not a run or sweep output, a bad output location, or matplotlib missing
    (a one-line ``what: why; what to do`` message)."""


def check_output(out, folder):
    """The HTML file to write: ``out`` or ``folder/report.html``; refused when it is empty, a
    folder, not a regular file, or in a place that cannot be written (nothing is created:
    ``plots.output``)."""
    if out is not None and not str(out).strip():
        raise ReportError(f"--out {str(out)!r}: is empty; give the HTML file to write (or leave "
                          "--out out for RESULTS_DIR/report.html)")
    path = Path(out) if out is not None else Path(folder) / "report.html"
    option = "--out" if out is not None else "RESULTS_DIR"
    if path.parent.exists() and not path.parent.is_dir():
        raise ReportError(f"{option} {path}: {path.parent} is a file, not a folder; give an HTML "
                          "file in a folder")
    if path.is_dir():
        raise ReportError(f"{option} {path}: is a folder; give the HTML file to write")
    if path.exists() and not path.is_file():
        raise ReportError(f"{option} {path}: exists and is not a regular file; give the HTML "
                          "file to write")
    try:
        check_out_folder(path.parent, option)
    except OutputLocationError as exc:
        raise ReportError(exc.line()[len("error: "):]) from None
    return path
