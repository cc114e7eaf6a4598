"""``multispin-sim report RESULTS_DIR``: one self-contained ``report.html`` for a run, a sweep or a
capacity search.

Reads output files only (like ``plots``); figures are drawn with matplotlib and embedded as
base64 PNG, so the page needs no network, no JavaScript and no other file.
"""
from .html import ReportError, write_report

__all__ = ["ReportError", "write_report"]
