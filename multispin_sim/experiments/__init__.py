"""Experiments: sweeps over scenario keys with replications, on local cores or a Dask cluster.

- ``sweepfile``: the sweep file format (documented there), parsing, validation, grid expansion
  and the replication seeds (common random numbers across cells).
- ``executors``: where runs execute: serial, local processes, dask.distributed.
- ``runner``: ``run_sweep``: resume, per-run folders and markers, failures, progress.
- ``tables``: runs.csv (tidy, one row per cell x replication) and cells.csv (mean, 95% CI).

>>> from multispin_sim.experiments import load_sweep, run_sweep
>>> sweep = load_sweep("scenarios/paper/fig9_10_devices.yaml", overrides=["run.rounds=50"])
>>> result = run_sweep(sweep, "results/fig9", executor="local", jobs=2)   # doctest: +SKIP
"""
from .executors import EXECUTORS, ExecutorError
from .metrics import METRICS
from .runner import OutputConflictError, SweepResult, default_output, run_sweep
from .sweepfile import Sweep, load_sweep, replication_seeds, run_key

__all__ = ["load_sweep", "run_sweep", "Sweep", "SweepResult", "METRICS", "EXECUTORS",
           "ExecutorError", "OutputConflictError", "replication_seeds", "run_key",
           "default_output"]
