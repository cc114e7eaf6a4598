"""Plots from output files only (never the engine); matplotlib (the ``plot`` extra) is imported
when a figure is drawn, and figures are drawn on ``matplotlib.figure.Figure`` objects (no pyplot,
no global backend state).

- ``figures``: ``plot_sweep(results_dir)``: the figures of a sweep (PNG + the CSV of every curve).
- ``timeline``: ``plot_timeline(run_dir, rounds=3)``: a Gantt chart of a few rounds of one run.
- ``compute``: ``plot_compute_timeseries(run_dir)``: goodput, throttling, draft lengths and
  temperatures over simulated time.
"""
from .compute import compute_timeseries, plot_compute_timeseries
from .figures import plot_sweep
from .output import PlotError
from .timeline import plot_timeline, timeline_segments

__all__ = ["PlotError", "plot_sweep", "plot_timeline", "timeline_segments",
           "compute_timeseries", "plot_compute_timeseries"]
