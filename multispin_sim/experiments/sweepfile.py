"""Sweep files: a base scenario, the keys to vary, replications; parsed and validated up front.

A sweep file is YAML::

    name: fig9-devices            # folder-safe name (default: the file's stem)
    description: free text        # optional, copied to the outputs
    base_file: ../default.yaml    # optional: a scenario file, relative to this sweep file
    base:                         # optional: a scenario mapping, merged over base_file
      run: {rounds: 500}
    sweep:
      grid:                       # the cartesian product of these axes (file order, last fastest)
        policy.mode: [optimal, all-ul, all-dl, random]    # a list of values
        devices.count: {start: 2, stop: 20, step: 2}      # a range, stop included
        server.dl_power_dbm: {start: 10, stop: 40, num: 7}  # num evenly spaced values
      zip:                        # keys that vary together: one more axis of the product
        server.dl_power_ratio: [4, 16]                    # (a list of such groups is allowed)
        name: [ratio4, ratio16]
      replications: 5             # independent seeds per cell (default 1)
      seed: 2024                  # master seed (default: the base scenario's seed)
    plot:                         # optional figures for ``multispin-sim plot`` (see plots.figures)
      - {name: goodput, x: devices.count, y: goodput_tps, curves: policy.mode}

Any scenario key path (``multispin-sim keys``) can be swept, ``seed`` excepted: the seeds of the
replications come from ``sweep.seed``. Replication r of every cell uses the same seed (spawned
from the master seed with ``numpy.random.SeedSequence``), so cells are compared with common
random numbers, and adding replications later keeps the seeds of the existing ones.

Validation happens before anything runs: unknown or misspelt keys, bad ranges, and every cell's
scenario is loaded and given the checks a run makes before it starts (``read_inputs``: input
files, read once for all cells; PRBs per device; the servers of several cells at every
replication's seed), so a value refused in one cell is reported with its cell (the base alone
need not be valid when the swept keys make every cell so). A range giving a value twice is
refused as a list with a repeated value is, and so is a ``--set`` that the swept keys would
override in every cell (a swept key, its parent or part, its exclusive sibling; ``seed`` when
``sweep.seed`` is given). Errors are one-line :class:`ScenarioError`s.
"""
from __future__ import annotations

import copy
import dataclasses
import difflib
import hashlib
import itertools
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from ..scenario import (ScenarioError, load_scenario, parse_set_options, reference_rows,
                        scenario_to_dict)
from ..scenario import Scenario, apply_overrides, read_yaml_file
from ..scenario.loading import exclusive_sibling, file_at_fault
from ..scenario.params import kind_of, python_values, section_hints
from ..engine.cell_plan import check_cell_layout
from ..engine.reading import reading_once
from ..engine.simulation import read_inputs
from .executors import plain
from .metrics import plot_y_problem

__all__ = ["Sweep", "Cell", "Axis", "load_sweep", "replication_seeds", "run_key", "TOP_KEYS",
           "SWEEP_KEYS"]

TOP_KEYS = ("name", "description", "base", "base_file", "sweep", "plot")
SWEEP_KEYS = ("grid", "zip", "replications", "seed")
RANGE_KEYS = ("start", "stop", "step", "num")
PLOT_KEYS = ("name", "title", "x", "y", "curves", "panels", "xlabel", "ylabel", "logx", "logy")
MAX_AXIS_VALUES = 10_000
MAX_RUNS = 100_000  # cells x replications of one sweep (checked before the grid is expanded)
_NAME_RE = re.compile(r"^[A-Za-z0-9._-]+$")
_PLOT_OPTION_KINDS = {"logx": (bool, "true or false"), "logy": (bool, "true or false"),
                      **{opt: (str, "a string") for opt in ("title", "xlabel", "ylabel")}}


@dataclass(frozen=True)
class Axis:
    """One axis of the product: one key (grid) or several keys varying together (zip)."""

    keys: tuple
    values: tuple        # tuple of tuples, one entry per key
    kind: str            # "grid" or "zip"


@dataclass(frozen=True)
class Cell:
    """One point of the sweep: its swept values and its resolved scenario (seed not yet set)."""

    index: int
    values: dict         # key path -> value, in axis order
    scenario: dict       # plain resolved scenario (scenario_to_dict), seed of replication 0

    def label(self):
        """``key=value, ...`` of the swept values."""
        return _label(self.values)


@dataclass
class Sweep:
    """A validated sweep: ``cells`` x ``seeds`` runs."""

    name: str
    description: str
    source: Optional[str]
    spec: dict                       # the sweep file as read (+ --set), for the record
    axes: list
    cells: list
    replications: int
    seed: int
    seeds: list
    plot: list = field(default_factory=list)
    key_info: dict = field(default_factory=dict)   # key path -> {"unit", "doc"}
    base_raw: dict = field(default_factory=dict)   # base_file + base + --set, not yet resolved

    @property
    def keys(self):
        return [k for axis in self.axes for k in axis.keys]

    @property
    def n_runs(self):
        return len(self.cells) * self.replications

    def run_scenario(self, cell, rep):
        """The plain scenario dict of replication ``rep`` of ``cell``."""
        sc = copy.deepcopy(cell.scenario)
        sc["seed"] = self.seeds[rep]
        return sc


# ------------------------------------------------------------------------------------------
# helpers


def _label(values):
    return ", ".join(f"{k}={_show(v)}" for k, v in values.items())


def _show(value):
    if isinstance(value, str):
        return value
    return json.dumps(value) if isinstance(value, (list, dict)) else repr(value)


def _err(path, problem, allowed=None, source=None):
    return ScenarioError(path, problem, allowed, source=source)


def _check_keys(mapping, allowed, path, source, what):
    for key in mapping:
        if str(key) not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = (f"did you mean {close[0]!r}?" if close
                    else f"allowed keys of {what}: {', '.join(allowed)}")
            raise _err(f"{path}.{key}" if path else str(key), "unknown key", hint, source)


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _tidy(v):
    """Round away float noise of a range (0.1 * 3 = 0.30000000000000004 -> 0.3)."""
    return float(f"{v:.12g}")


def expand_range(spec, path, source=None):
    """``{start, stop, step}`` (stop included when on the grid) or ``{start, stop, num}``."""
    _check_keys(spec, RANGE_KEYS, path, source, "a range")
    for k in ("start", "stop"):
        if k not in spec:
            raise _err(path, f"a range without '{k}'",
                       "expected {start, stop, step} or {start, stop, num}", source)
        if not _is_number(spec[k]):   # a number here is inf or nan: named by its value
            what = repr(spec[k]) if isinstance(spec[k], float) else kind_of(spec[k])
            raise _err(f"{path}.{k}", f"{what} is not allowed", "expected a finite number", source)
    if ("step" in spec) == ("num" in spec):
        raise _err(path, "a range needs exactly one of 'step' and 'num'",
                   "expected {start, stop, step} or {start, stop, num}", source)
    start, stop = spec["start"], spec["stop"]
    if "num" in spec:
        num = spec["num"]
        if not isinstance(num, int) or isinstance(num, bool) or num < 1:
            raise _err(f"{path}.num", f"{num!r} is not allowed", "expected an integer >= 1",
                       source)
        if num > MAX_AXIS_VALUES:
            raise _err(f"{path}.num", f"{num} values", f"expected at most {MAX_AXIS_VALUES}",
                       source)
        if num == 1:
            return [start]
        values = [_tidy(start + (stop - start) * i / (num - 1)) for i in range(num)]
        ints = isinstance(start, int) and isinstance(stop, int)
        if ints and all(float(v).is_integer() for v in values):
            values = [int(v) for v in values]
        return _distinct(values, path, source)
    step = spec["step"]
    if not _is_number(step) or step == 0 or (stop - start) * step < 0:
        raise _err(f"{path}.step", f"{step!r} is not allowed",
                   "expected a finite non-zero number that goes from start towards stop", source)
    n = math.floor((stop - start) / step * (1 + 1e-12) + 1e-9) + 1
    if n > MAX_AXIS_VALUES:
        raise _err(f"{path}.step", f"{step!r} gives {n} values",
                   f"expected at most {MAX_AXIS_VALUES}", source)
    if all(isinstance(x, int) and not isinstance(x, bool) for x in (start, stop, step)):
        return [start + i * step for i in range(n)]
    return _distinct([_tidy(start + i * step) for i in range(n)], path, source)


def _distinct(values, path, source):
    """A range's values, refused when one comes twice (start == stop with num > 1, or values
    closer than the 12 significant digits a range keeps): as a list with a repeated value is."""
    seen = set()
    for v in values:
        if v in seen:
            raise _err(path, f"the range gives the value {_show(v)} more than once",
                       "a range of distinct values (start != stop for num > 1, values apart in "
                       "their first 12 significant digits)", source)
        seen.add(v)
    return values


def _axis_values(value, path, source):
    if isinstance(value, Mapping):
        return expand_range(value, path, source)
    if isinstance(value, list):
        if not value:
            raise _err(path, "an empty list of values", "expected at least one value", source)
        seen = []
        for i, v in enumerate(value):
            if v in seen:
                raise _err(f"{path}.{i}", f"the value {_show(v)} appears twice",
                           "each value of an axis once", source)
            seen.append(v)
        return list(value)
    raise _err(path, f"{kind_of(value)} is not allowed",
               "expected a list of values, {start, stop, step} or {start, stop, num}", source)


def _key_path(key, path, source):
    key = str(key)
    if not key or any(not p or p != p.strip() for p in key.split(".")):
        raise _err(f"{path}.{key}", "malformed key path",
                   "expected a dotted scenario key, e.g. devices.count", source)
    if key == "seed":
        raise _err(f"{path}.seed", "the seed cannot be swept",
                   "set sweep.replications and sweep.seed (replication seeds are spawned from it)",
                   source)
    return key


def replication_seeds(master, n):
    """Seeds of replications 0..n-1: one ``SeedSequence(master).spawn`` child each (63-bit ints).

    Child i does not depend on n, so adding replications keeps the seeds already used.
    """
    children = np.random.SeedSequence(int(master)).spawn(int(n))
    return [int(c.generate_state(1, dtype=np.uint64)[0]) >> 1 for c in children]


def run_key(scenario_dict):
    """Content hash of one run's scenario (name excluded): the identity used to resume."""
    plain = {k: v for k, v in scenario_dict.items() if k != "name"}
    text = json.dumps(plain, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


# ------------------------------------------------------------------------------------------
# loading


def _load_base(doc, source, overrides, first_cell=None):
    base_dir = Path(source).parent if source else Path.cwd()
    raw = {}
    if doc.get("base_file") is not None:
        bf = doc["base_file"]
        if not isinstance(bf, str) or not bf:
            raise _err("base_file", f"{kind_of(bf)} is not allowed",
                       "expected a path to a scenario file", source)
        path = Path(bf) if os.path.isabs(bf) else base_dir / bf
        try:
            raw = read_yaml_file(os.fspath(path))
        except ScenarioError as exc:
            raise _err("base_file", f"{path}: {exc.problem}", exc.allowed, source) from None
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise _err("base_file", f"{path} holds {kind_of(raw)}", "expected a scenario mapping",
                       source)
    if doc.get("base") is not None:
        if not isinstance(doc["base"], Mapping):
            raise _err("base", f"{kind_of(doc['base'])} is not allowed",
                       "expected a scenario mapping", source)
        raw = apply_overrides(raw, _flatten(doc["base"]))
    own, raw = raw, apply_overrides(raw, overrides) if overrides else raw
    try:
        base = load_scenario(raw)
    except ScenarioError as exc:
        try:   # a base valid only with the swept keys (exhaustive, devices.count: [3, 4]):
            return raw, load_scenario(raw, overrides=first_cell or {})   # every cell is checked
        except ScenarioError:
            pass
        if overrides and not file_at_fault(
                exc, overrides, lambda: load_scenario(own, overrides=first_cell or {})):
            raise _err(exc.path, f"{exc.problem} (from --set)", exc.allowed) from None
        where = "base" if doc.get("base") is not None or not doc.get("base_file") else "base_file"
        raise _err(f"{where}.{exc.path}" if exc.path else where, exc.problem, exc.allowed,
                   source) from None
    return raw, base


def _parse_axes(sweep, source):
    axes = []
    grid = sweep.get("grid") or {}
    if not isinstance(grid, Mapping):
        raise _err("sweep.grid", f"{kind_of(grid)} is not allowed",
                   "expected a mapping key.path -> list of values or range", source)
    for key, value in grid.items():
        k = _key_path(key, "sweep.grid", source)
        vals = _axis_values(value, f"sweep.grid.{k}", source)
        axes.append(Axis((k,), tuple((v,) for v in vals), "grid"))
    zips = sweep.get("zip")
    if zips is None:
        zips = []
    elif isinstance(zips, Mapping):
        zips = [zips]
    elif not isinstance(zips, list):
        raise _err("sweep.zip", f"{kind_of(zips)} is not allowed",
                   "expected a mapping key.path -> list (keys varying together), or a list of "
                   "such mappings", source)
    single = isinstance(sweep.get("zip"), Mapping)   # one group, written without a list
    for gi, group in enumerate(zips):
        gpath = "sweep.zip" if single else f"sweep.zip.{gi}"
        if not isinstance(group, Mapping) or not group:
            raise _err(gpath, f"{kind_of(group)} is not allowed",
                       "expected a non-empty mapping key.path -> list of values", source)
        keys, columns = [], []
        for key, value in group.items():
            k = _key_path(key, gpath, source)
            keys.append(k)
            columns.append(_axis_values(value, f"{gpath}.{k}", source))
        lengths = {len(c) for c in columns}
        if len(lengths) > 1:
            detail = ", ".join(f"{k} has {len(c)}" for k, c in zip(keys, columns))
            raise _err(gpath, f"zipped keys have different numbers of values ({detail})",
                       "expected lists of equal length (they vary together)", source)
        axes.append(Axis(tuple(keys), tuple(zip(*columns)), "zip"))
    seen = {}
    for axis in axes:
        for k in axis.keys:
            if k in seen:
                raise _err(f"sweep.{axis.kind}.{k}",
                           f"the key is swept twice (also in sweep.{seen[k]})",
                           "sweep each key in one place", source)
            seen[k] = axis.kind
    for a in list(seen):
        for b in seen:
            if a != b and b.startswith(a + "."):
                raise _err(f"sweep.{seen[b]}.{b}", f"overlaps the swept key {a}",
                           "sweep a key or its sub-keys, not both", source)
    return axes


def _parse_plot(doc, keys, source):
    plot = doc.get("plot")
    if plot is None:
        return []
    if isinstance(plot, Mapping):
        plot = [plot]
    if not isinstance(plot, list):
        raise _err("plot", f"{kind_of(plot)} is not allowed", "expected a list of figure mappings",
                   source)
    out, names = [], set()
    for i, fig in enumerate(plot):
        path = f"plot.{i}"
        if not isinstance(fig, Mapping):
            raise _err(path, f"{kind_of(fig)} is not allowed",
                       "expected a figure mapping {name, x, y, ...}", source)
        _check_keys(fig, PLOT_KEYS, path, source, "a figure")
        fig = dict(fig)
        for req in ("name", "x", "y"):
            if req not in fig:
                raise _err(path, f"a figure without '{req}'", "expected name, x and y", source)
        if not isinstance(fig["name"], str) or not _NAME_RE.match(fig["name"]):
            raise _err(f"{path}.name", f"{fig['name']!r} is not allowed",
                       "a file name of letters, digits, '-', '_' and '.'", source)
        if fig["name"] in names:
            raise _err(f"{path}.name", f"the figure name {fig['name']!r} is used twice",
                       "one name per figure", source)
        names.add(fig["name"])
        if not keys:
            raise _err(f"{path}.x", "the sweep has no swept key to plot against",
                       "add sweep.grid or sweep.zip, or remove plot", source)
        if fig["x"] not in keys:
            raise _err(f"{path}.x", f"{fig['x']!r} is not a swept key",
                       f"expected one of {', '.join(keys)}", source)
        ys = fig["y"] if isinstance(fig["y"], list) else [fig["y"]]
        if not ys:
            raise _err(f"{path}.y", "an empty list", "expected a metric or a list of them", source)
        for y in ys:
            why = plot_y_problem(y)
            if why is not None:
                raise _err(f"{path}.y", *why, source)
        fig["y"] = ys
        others = [k for k in keys if k != fig["x"]]
        for opt in ("curves", "panels"):
            v = fig.get(opt)
            if v is None:
                fig[opt] = []
                continue
            v = v if isinstance(v, list) else [v]
            for k in v:
                if k not in others:
                    raise _err(f"{path}.{opt}", f"{k!r} is not a swept key other than x",
                               f"expected some of {', '.join(others)}" if others else
                               f"no other key is swept: remove {opt}", source)
            fig[opt] = v
        for opt, (kind, expected) in _PLOT_OPTION_KINDS.items():
            if fig.get(opt) is not None and not isinstance(fig[opt], kind):
                raise _err(f"{path}.{opt}", f"{fig[opt]!r} is not allowed", f"expected {expected}",
                           source)
        out.append(fig)
    return out


def load_sweep(source, overrides=None):
    """Parse and validate a sweep file (path) or mapping; ``overrides`` (``--set``) apply to
    the base.

    Every cell's scenario is loaded here, so a returned :class:`Sweep` can run without
    validation errors. Raises :class:`ScenarioError`.
    """
    path = None
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        doc = read_yaml_file(path, "sweep file")
    else:
        doc = python_values(source)
    if not isinstance(doc, Mapping):
        raise _err(path or "", f"the sweep file holds {kind_of(doc)}",
                   f"expected a mapping with keys {', '.join(TOP_KEYS)}", path)
    doc = dict(doc)
    others = set(map(str, doc)) - set(TOP_KEYS)
    if "sweep" not in doc and others and others <= set(section_hints(Scenario)):
        raise _err(path or "sweep", "is a scenario file (it has no 'sweep' section), not a sweep "
                   "file" if path else "missing", "run it with 'multispin-sim run', or write a "
                   "sweep file: base: {...} and sweep: {grid: ...} (docs/guide/sweeps.md)", path)
    _check_keys(doc, TOP_KEYS, "", path, "a sweep file")
    if "sweep" not in doc or not isinstance(doc["sweep"], Mapping):
        raise _err("sweep", "missing or not a mapping" if "sweep" in doc else "missing",
                   "expected sweep: {grid: ..., zip: ..., replications: N, seed: S}", path)
    sweep = dict(doc["sweep"])
    _check_keys(sweep, SWEEP_KEYS, "sweep", path, "sweep")

    default_name = Path(path).stem if path else "sweep"
    name = doc.get("name", default_name)
    if not isinstance(name, str) or not _NAME_RE.match(name) or name in (".", ".."):
        raise _err("name", f"{name!r} is not allowed",
                   "a non-empty folder name of ASCII letters, digits, '-', '_' and '.'", path)
    description = doc.get("description") or ""
    if not isinstance(description, str):
        raise _err("description", f"{kind_of(description)} is not allowed", "expected text", path)

    if overrides is not None and not isinstance(overrides, Mapping):
        overrides = parse_set_options(overrides)
    overrides = dict(overrides or {})
    for k in overrides:
        head = str(k).split(".")[0]
        if head in TOP_KEYS and head != "name":   # the scenario's name is its own key too
            raise _err(k, "--set sets keys of the base scenario, and this is a key of the sweep "
                       "file", f"edit {k} in the sweep file (--set applies to scenario keys, e.g. "
                       "--set run.rounds=100)", path)
    axes = _parse_axes(sweep, path)
    first_cell = {k: v for a in axes for k, v in zip(a.keys, a.values[0])}
    base_raw, base = _load_base(doc, path, overrides, first_cell)

    reps = sweep.get("replications", 1)
    if not isinstance(reps, int) or isinstance(reps, bool) or reps < 1:
        raise _err("sweep.replications", f"{reps!r} is not allowed", "expected an integer >= 1",
                   path)
    master = sweep.get("seed", base.seed)
    if not isinstance(master, int) or isinstance(master, bool) or master < 0:
        raise _err("sweep.seed", f"{master!r} is not allowed", "expected an integer >= 0", path)

    keys = [k for a in axes for k in a.keys]
    _check_set_against_sweep(overrides, sweep, axes, path)
    plot = _parse_plot(doc, keys, path)

    n_cells = math.prod(len(a.values) for a in axes)
    if n_cells * reps > MAX_RUNS:
        raise _err("sweep", f"{n_cells:,} cells x {reps} replications = {n_cells * reps:,} runs",
                   f"expected at most {MAX_RUNS:,} runs (each cell is validated and run): "
                   "use fewer or coarser axes, or split the sweep into several files", path)
    seeds = replication_seeds(master, reps)
    cells = []
    with reading_once():   # each input file is read once for all the cells
        for index, combo in enumerate(itertools.product(*[a.values for a in axes])):
            values = {k: v for axis, vals in zip(axes, combo) for k, v in zip(axis.keys, vals)}
            rep = 0
            try:   # what a run checks before it starts, at replication 0's seed; the servers
                # of a layout of several cells at every replication's (a Poisson one may draw none)
                sc = load_scenario(base_raw, overrides=dict(values))
                read_inputs(dataclasses.replace(sc, seed=seeds[0]))
                for rep, seed in enumerate(seeds[1:], start=1):
                    check_cell_layout(dataclasses.replace(sc, seed=seed))
            except ScenarioError as exc:
                where = (f"in sweep cell {index}: {_label(values)}"
                         + (f"; replication {rep}" if rep else ""))
                raise _cell_error(exc, values, axes, where, path) from None
            cells.append(Cell(index, values, scenario_to_dict(sc)))

    rows = {r[0]: {"unit": r[2], "doc": r[4]} for r in reference_rows()}
    key_info = {k: rows.get(k, {"unit": "", "doc": ""}) for k in keys}
    spec = plain(doc)
    if overrides:
        spec["set"] = {k: plain(v) for k, v in overrides.items()}
    return Sweep(name=name, description=description, source=path, spec=spec, axes=axes,
                 cells=cells, replications=reps, seed=master, seeds=seeds, plot=plot,
                 key_info=key_info, base_raw=plain(base_raw))


def _cell_error(exc, values, axes, where, source):
    """A cell's ScenarioError as the sweep's: a swept key's path under ``sweep.grid`` or
    ``sweep.zip``, the cell (``where``) after the problem."""
    path = next((f"sweep.{a.kind}.{exc.path}" for a in reversed(axes) for k in a.keys
                 if exc.path == k or exc.path.startswith(k + ".")), exc.path)
    allowed = exc.allowed
    value = values.get(exc.path)
    if isinstance(value, float) and value.is_integer() and "integer" in (allowed or ""):
        allowed += ("; a range gives integers only from integer start and stop with an integer "
                    "step, or a num that lands on whole numbers")
    return _err(path, f"{exc.problem} ({where})", allowed, source)


def _flatten(mapping, prefix=""):
    """``{"server": {"dl_power_dbm": 20}}`` -> ``{"server.dl_power_dbm": 20}`` (so that an
    exclusive sibling given in base_file, e.g. server.dl_power_ratio, is cleared)."""
    out = {}
    for k, v in mapping.items():
        path = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, Mapping) and v:
            out.update(_flatten(v, path))
        else:
            out[path] = v
    return out


def _check_set_against_sweep(overrides, sweep, axes, source):
    """Refuse a --set that the sweep would override in every cell, so it would have no effect:
    a swept key itself, its parent or sub-key, its exclusive sibling (server.dl_power_ratio
    given while server.dl_power_dbm is swept), and the seed when sweep.seed is given."""
    if "seed" in overrides and "seed" in sweep:
        raise _err("seed", "--set seed is overridden by sweep.seed (the master seed the "
                   "replications' seeds are spawned from)", "remove --set seed, or change "
                   "sweep.seed in the sweep file", source)
    for k, value in overrides.items():
        k = str(k)
        for leaf in _leaves(k, value):
            parts = leaf.split(".")
            sibling = exclusive_sibling(parts)
            sibling = ".".join(parts[:-1] + [sibling]) if sibling else None
            for axis in axes:
                for s, values in zip(axis.keys, zip(*axis.values)):
                    swept = {x for v in values for x in _leaves(s, v)}
                    if not any(leaf == x or leaf.startswith(x + ".") or x.startswith(leaf + ".")
                               or sibling == x for x in swept):
                        continue
                    if k == s:
                        how = "--set overrides a swept key"
                    elif s.startswith(k + "."):
                        how = f"--set of a key that holds the swept key {s}"
                    elif k.startswith(s + "."):
                        how = f"--set of a part of the swept key {s}"
                    else:
                        how = (f"--set of a key that the swept key {s} excludes (only one of "
                               "them is given, and the swept one wins in every cell)")
                    raise _err(k, how, f"remove it from --set, or from sweep.{axis.kind}",
                               source)


def _leaves(key, value):
    """The key paths a value set at ``key`` gives (a mapping sets each of its leaves)."""
    if isinstance(value, Mapping) and value:
        return list(_flatten(value, key))
    return [key]
