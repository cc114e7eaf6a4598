"""Several cells in one SimPy environment: one edge server and one protocol loop per cell, and
the interference between their transmissions (docs/components/cells.md).

``builder(scenario, build_run)`` is what ``simulate`` asks: the one-cell ``build_run`` itself
when the layout has one server and no interference can change anything, else ``build_cells``.

Each cell is a complete single-cell system (population, channel, server, controller, workload,
recorder, the protocol's loop: ``RoundLoop``, or ``AsyncLoop`` whose batches are its rounds)
built by ``build_run`` in the shared environment, with the cell's own seed (cell 0 the run's
seed, cell c > 0 a seed derived from (seed, c)) and its folder ``cell_<c>/``. The cells' loops
run on their own: no global lock-step, so transmissions overlap as their timing makes them.
The cell's channel is the ``OFDMAChannel`` with its interference part
(``InterferingChannel``): a correction's rate follows its SINR, recomputed whenever a
co-channel transmission of another cell starts or ends (``engine.interference``).

The network has one horizon (``Horizon``): every cell serves, and so interferes, until each
cell has completed ``run.rounds`` rounds; then every cell stops at the end of its round in
progress (an asynchronous cell before its next batch, its batches in flight completing). The
network's goodput is the sum of the cells' goodputs, each cell's tokens over its own span;
every span covers the common horizon.
"""
import dataclasses
import functools
import time

import numpy as np
import simpy

from ..model.cells import link_distances
from ..model.mobility import MOBILITY_MODELS
from ..model.pathloss_3gpp import PATHLOSS_MODELS
from ..model.sinr import cochannel
from ..outputs.atomic import write_json
from ..outputs.energy import summed_energy
from ..outputs.metadata import run_metadata
from ..outputs.statistics import describe
from ..scenario import dump_scenario_yaml
from ..scenario.limits import BASE_BYTES, PER_ROUND_BYTES, memory_terms
from ..version import __version__
from .cell_channel import InterferingChannel
from .cell_plan import (CROSS_STREAM_KEY, cell_plan, cells_layout, mobile_plan, several_cells,
                        wrapped_population)
from .guards import guard_backlog
from .handover import CellMover
from .interference import InterferenceField
from .population import noise_psd
from .progress import Progress
from .workload import queue_warnings


def builder(scenario, build_run, result):
    """``build_run`` for one cell, ``build_cells`` (building each cell with ``build_run``,
    finishing with a ``result``) for several."""
    if not several_cells(scenario):
        return build_run
    return functools.partial(build_cells, build_run=build_run, result=result)


def _joined(name):
    """A table of ``Links``, with the rows added since it was last read."""
    def get(self):
        self._join()
        return getattr(self, name)

    def put(self, value):
        self._join()
        setattr(self, name, value)
    return property(get, put)


class Links:
    """Large-scale gains (D, S) of every device (global index) to every server, and the
    devices' cells; own-cell entries are the cell population's gains."""

    def __init__(self, layout, model, rng):
        self.layout, self.model, self.rng = layout, model, rng
        self._gain = np.zeros((0, layout.count))
        self._positions = np.zeros((0, 2))   # the devices' (wrapped) positions, by global index
        self._cell_of = np.zeros(0, dtype=np.int64)
        # the cells' rows added since the tables were last read, joined at the next read (one
        # copy of the table, not one per cell: thousands of cells)
        self._added = []
        self._count = 0
        self.base = {}
        self.drawn = {}   # cell -> gains (its devices, S) drawn at a region drop

    def _join(self):
        if self._added:
            gain, positions, cell_of = zip(*self._added)
            self._gain = np.vstack([self._gain, *gain])
            self._positions = np.vstack([self._positions, *positions])
            self._cell_of = np.concatenate([self._cell_of, *cell_of])
            self._added = []

    gain, positions, cell_of = _joined("_gain"), _joined("_positions"), _joined("_cell_of")

    def add_cell(self, cell, population, drawn=None):
        """The rows of ``cell``'s devices; returns the population with its own gains. The gains
        are ``drawn`` (the rows the region drop associated on) or drawn here; a model that is
        the population's own (``model.population_gain``: the paper's power law, per-cell drops)
        keeps the population's gains to its server."""
        if drawn is None:   # a per-cell drop: its devices at their torus points
            population = wrapped_population(self.layout, self.model, cell, population)
        d = self.layout.distances(population.positions)
        gain = self.model.draw(self.rng, d)[0] if drawn is None else np.array(drawn)
        k = d.shape[0]
        own = population.system.pathloss
        if drawn is None and self.model.population_gain:
            gain[:, cell] = own
        else:
            own = gain[:, cell].copy()
            population = dataclasses.replace(population, system=dataclasses.replace(
                population.system, pathloss=own))
        self.base[cell] = self._count
        self._count += k
        self._added.append((gain, population.positions, np.full(k, cell)))
        return population

    def cross_gains(self, rng):
        """(S, S) server-to-server and (D, D) device-to-device large-scale gains of the cross
        links (``cells.cross_link``): the model's ``cross_models`` at the wrapped distances,
        one draw per pair (the same gain both ways), 0 from an end to itself. Draws the
        servers' pairs, then the devices', each in the order of ``np.triu_indices``."""
        ss_model, dd_model = self.model.cross_models()
        layout = self.layout
        ss = _pair_gains(ss_model, rng, layout.sites, layout.lattice)
        return ss, _pair_gains(dd_model, rng, self.positions, layout.lattice)


def _pair_gains(model, rng, points, lattice, rows=256):
    """Symmetric (P, P) gains of ``model`` between ``points`` (distances in blocks of ``rows``
    rows: the minimum-image search holds 8 numbers per pair)."""
    n = points.shape[0]
    d = np.empty((n, n))
    for i in range(0, n, rows):
        d[i:i + rows] = link_distances(points[i:i + rows], points, lattice)
    upper = np.triu_indices(n, 1)
    gain = np.zeros((n, n))
    gain[upper] = model.draw(rng, d[upper])[0]
    gain.T[upper] = gain[upper]
    return gain


class CellLoops:
    """The round loops of the cells, as the one loop ``simulate`` stops and asks."""

    def __init__(self, loops):
        object.__setattr__(self, "loops", loops)

    def __getattr__(self, name):
        return getattr(self.loops[0], name)

    def __setattr__(self, name, value):
        for loop in self.loops:
            setattr(loop, name, value)

    @property
    def rounds_done(self):
        return sum(loop.rounds_done for loop in self.loops)


MEMORY_TODO = ("use fewer rounds, or raise limits.max_memory_mb if this machine has the memory "
               "(the summary has the run up to the stop)")


def round_budget(scenario):
    """Rounds the network may record within ``limits.max_memory_mb``: the memory estimate's
    room after every other term, at ``PER_ROUND_BYTES`` a round. A cell's rounds are not
    bounded by ``run.rounds`` (it serves until the horizon), so this bounds their total."""
    terms = memory_terms(scenario)
    terms.pop("run.rounds", None)
    room = scenario.limits.max_memory_mb * (1 << 20) - BASE_BYTES - sum(terms.values())
    return max(int(room // PER_ROUND_BYTES), 1)


class Horizon:
    """The network's one horizon, so that every cell's span covers one interference regime.

    The network runs until every cell has completed ``rounds`` rounds (or ``run.max_time_s``,
    or a stop); a cell that has done its rounds keeps serving, and so keeps interfering, until
    then. At the horizon every cell stops at the end of its round in progress (its loop's
    ``max_time_s`` lowered to now: the loop checks it at its next round start), and a cell
    waiting for work stops at once (its workload closed and woken; with moving devices
    ``Network.close``). A cell counts as done when its loop has ended (a trace replayed to its
    end), and with devices that hand over when none is attached or on its way to it (only a
    handover could bring it work, and a static re-association may never).

    Each loop reports its rounds through its ``progress`` hook (``round_done``) and its end
    through its process's callback (``loop_ended``). ``budget`` bounds the rounds of all cells
    (``round_budget``): at it the run stops as ``limits`` stops a run (``complete: false``).
    ``progress``: the display (``Progress``) of the slowest cell's rounds, or None.
    """

    def __init__(self, env, runs, ids, rounds, budget, network=None, progress=None):
        self.env, self.runs, self.ids, self.rounds = env, runs, ids, rounds
        self.budget, self.network, self.progress = budget, network, progress
        n = len(runs)
        self.done = np.zeros(n, dtype=np.int64)     # rounds recorded, per cell
        self.ended = np.zeros(n, dtype=bool)        # loops that have ended
        self.below = n          # cells short of ``rounds`` whose loops run
        self.total = 0
        self.time = None        # when the horizon was reached
        self._shown = -1
        for i, run in enumerate(runs):
            run.loop.rounds = budget   # the horizon (or the budget) ends a loop, not a count
            run.loop.progress = functools.partial(self.round_done, i)

    def watch(self, procs):
        for i, proc in enumerate(procs):
            proc.callbacks.append(functools.partial(self.loop_ended, i))

    def round_done(self, i, done, now):
        """Cell ``i``'s loop recorded its round ``done`` at ``now``."""
        self.done[i] = done
        self.total += 1
        if done == self.rounds:
            self.below -= 1
        if self.progress is not None:
            self._show(now)
        if self.time is not None:
            return
        if self.total >= self.budget:
            self.stop(f"the network's cells recorded {self.total:,} rounds, what "
                      f"limits.max_memory_mb ({self.runs[0].scenario.limits.max_memory_mb:,.0f} "
                      "MB) allows", MEMORY_TODO)
        elif self.all_done():
            self.reach(now)
            if self.progress is not None and self._shown != self.rounds:
                self._shown = self.rounds   # the cells short of it have no work: done
                self.progress(self.rounds, now)

    def loop_ended(self, i, _event):
        """Cell ``i``'s loop has ended (at the horizon, or on its own: a stop, the time limit,
        its workload exhausted)."""
        self.ended[i] = True
        if self.network is not None:
            self.network.ended[self.ids[i]] = True
            if self.ended.all():
                self.network.loops_ended(self.env.now)
        if self.done[i] < self.rounds:
            self.below -= 1
        if self.time is None and (self.runs[i].loop.stop_requested or self.all_done()):
            self.reach(self.env.now)   # a stopped cell stops the network

    def all_done(self):
        if self.below == 0:
            return True
        if self.network is None:
            return False
        short = np.flatnonzero(~self.ended & (self.done < self.rounds))
        return all(self.network.idle(self.ids[i]) for i in short.tolist())

    def reach(self, now):
        """Every cell stops at the end of its round in progress; a cell waiting for work now."""
        self.time = now
        for i, run in enumerate(self.runs):
            if self.ended[i]:
                continue
            loop, workload = run.loop, run.workload
            loop.halt(now)
            if self.network is None and not workload.saturated and not workload.has_work():
                # its loop waits for an arrival: requests from now on are not its own (closed
                # first, so no arrival wakes the same event twice)
                workload.close()
                event = workload.work_event(self.env)
                if not event.triggered:
                    event.succeed()
        if self.network is not None:
            self.network.close()

    def stop(self, reason, todo):
        """Stop every cell at the end of its round in progress, as a ``limits`` bound does."""
        for run in self.runs:
            loop = run.loop
            if loop.stop_reason is None:
                loop.stop_reason, loop.stop_todo = reason, todo
            loop.stop_requested = True
        self.reach(self.env.now)

    def _show(self, now):
        """The slowest cell's rounds (the cells that count: running, with work to do)."""
        left = [int(self.done[i]) for i in range(len(self.runs)) if not self.ended[i]
                and (self.network is None or not self.network.idle(self.ids[i]))]
        slowest = min(min(left, default=self.rounds), self.rounds)
        if slowest != self._shown:
            self._shown = slowest
            self.progress(slowest, now)


class CellsRun:
    """The cells' runs in one environment; ``start``, ``finish``, ``abort`` as ``Run``."""

    def __init__(self, scenario, folder, runs, ids, field, wall0, result, horizon):
        self.scenario, self.folder, self.runs, self.field = scenario, folder, runs, field
        self.ids = ids
        self.result = result
        self.horizon = horizon
        self.network = horizon.network
        self.env = runs[0].env
        self.loop = CellLoops([r.loop for r in runs])
        self.wall0 = wall0

    def start(self):
        procs = [r.start() for r in self.runs]
        self.horizon.watch(procs)
        if self.network is not None:
            self.env.process(self.network.run(self.env))
        return self.env.all_of(procs)

    def abort(self):
        for r in self.runs:
            r.abort()
        if self.network is not None and self.network.work_log is not None:
            self.network.work_log.close()   # what was written stays a valid CSV

    def finish(self, tmp=None, command_line=None, stop_reason=None):
        results = [r.finish(None, command_line, stop_reason) for r in self.runs]
        summary = cells_summary(self.scenario, [r.summary for r in results], self.ids,
                                time.perf_counter() - self.wall0,
                                [r.recorder.stats for r in self.runs],
                                [r.log for r in self.runs])
        for name in ("rounds", "device_rounds", "devices"):
            combine_tables(self.folder, name, self.ids)
        if self.network is not None:
            summary["handover"] = self.network.summary(summary["sim_time_s"])
            self.network.write(self.folder / "handovers.csv")
            if self.network.work_log is not None:   # the requests, served cell after cell
                summary["requests"] = network_queues(self.network, self.runs)
                warnings = queue_warnings(self.scenario, summary["requests"],
                                          summary["duration_s"]["max"], summary["sim_time_s"])
                if warnings:
                    summary["warnings"] = warnings
        stopped = [r for r in results if not r.summary["complete"]]
        if stopped:   # the reason of the first cell that stopped (they stop together)
            summary["stop_reason"] = stopped[0].summary.get("stop_reason", "stopped")
        write_json(self.folder / "summary.json", summary)
        write_json(self.folder / "run.json", run_metadata(
            __version__, self.scenario.seed, summary["wall_time_s"], command_line,
            compiled_search=any(r.compiled_search for r in self.runs),   # any cell's controller
            compiled_shared_band=any(r.compiled_shared_band for r in self.runs),
            scenario=self.scenario.name, complete=summary["complete"]))
        result = self.result(summary, self.folder, results[0].population, self.scenario, _tmp=tmp)
        result.cells = results
        result.field = self.field
        result.network = self.network
        result.stop_todo = stopped[0].stop_todo if stopped else None
        return result


def cells_summary(scenario, summaries, ids, wall, stats, logs):
    """The run's summary: the one-cell summary's totals over the cells (round statistics over
    every cell's rounds) and a ``cells`` block per cell. The network's goodput is the sum of
    the cells' goodputs, each cell's tokens over its own span: every span covers the common
    horizon and passes it by less than the cell's last round, so the sum is over one
    interference regime. (Dividing all tokens by the longest span would charge every cell for
    one cell's last round, which can be far longer than the others' heavy-tailed rounds.)
    ``stats``, ``logs``: the cells' round statistics and request logs (None without queues)."""
    time_s = max(s["sim_time_s"] for s in summaries)
    total = {key: sum(s[key] for s in summaries)   # counts: integer sums
             for key in ("tokens", "rounds", "device_rounds", "rejections", "ul_corrections",
                         "dl_corrections")}
    tokens, rounds, device_rounds = total["tokens"], total["rounds"], total["device_rounds"]
    ul, dl = total["ul_corrections"], total["dl_corrections"]
    per_cell = [{"cell": c, "devices": len(s["device_goodput_tps"]),
                 "goodput_tps": s["goodput_tps"], "rounds": s["rounds"],
                 "ul_corrections": s["ul_corrections"], "dl_corrections": s["dl_corrections"],
                 "mean_duration_s": s["duration_s"]["mean"], "sim_time_s": s["sim_time_s"]}
                for c, s in zip(ids, summaries)]
    goodputs = np.array([c["goodput_tps"] for c in per_cell])
    goodput = float(goodputs.sum())
    # the cells' intervals combined as if independent: the sum +- the root sum of squares (a
    # cell without rounds has goodput 0 exactly)
    half = [(s["goodput_ci95"][1] - s["goodput_ci95"][0]) / 2 if s["rounds"] else 0.0
            for s in summaries]
    spread = float(np.sqrt(np.sum(np.square(half))))
    blocks = {}
    if all("energy" in s for s in summaries):     # energy.record false: no cell has one
        blocks["energy"] = summed_energy([s["energy"] for s in summaries], tokens)
    if all("requests" in s for s in summaries):   # queueing workloads
        blocks["requests"] = network_requests([s["requests"] for s in summaries], ids, logs)
    if all("link" in s for s in summaries):       # the NR link: its totals over the cells
        blocks["link"] = network_link([s["link"] for s in summaries])
    return {
        "goodput_tps": goodput,
        "goodput_ci95": [goodput - spread, goodput + spread],
        "tokens": tokens, "rounds": rounds, "sim_time_s": time_s,
        # cell by cell, in the order of devices.csv
        "device_goodput_tps": [g for s in summaries for g in s["device_goodput_tps"]],
        "device_rounds": device_rounds,
        "mean_draft_len": (sum(s["mean_draft_len"] * s["device_rounds"] for s in summaries)
                           / device_rounds if device_rounds else 0.0),
        "rejections": total["rejections"],
        # the cells' round times as their summaries keep them (the rounds.csv columns)
        "duration_s": describe(np.concatenate([st.duration.values() for st in stats])),
        "comm_s": describe(np.concatenate([st.comm.values() for st in stats])),
        "rounds_per_s": rounds / wall if wall > 0 else 0.0,
        "ul_corrections": ul, "dl_corrections": dl,
        "ul_share": ul / (ul + dl) if ul + dl else 0.0,
        **blocks,
        "cells": per_cell,
        "load_balance": float(goodputs.min() / goodputs.max()) if goodputs.max() > 0 else 1.0,
        # the cells' transmissions of their recorded rounds (the field's own count, the same in
        # a complete run, has those of a round a stopped run cut short too)
        "interference": {"transmissions": sum(s["delays"]["transmissions"] for s in summaries),
                         "cells": int(len(summaries)), "reuse": scenario.cells.reuse,
                         "cross_link": scenario.cells.cross_link},
        "complete": all(s["complete"] for s in summaries),
        "wall_time_s": wall,
    }


def network_link(blocks):
    """The NR link's totals over the cells (each cell's ``link`` block): counts summed, the
    carrier's figures as every cell has them."""
    out = dict(blocks[0])
    for key in ("corrections", "harq_transmissions", "harq_failures", "outages"):
        if key in out:
            out[key] = sum(b[key] for b in blocks)
    if "transmissions_per_correction" in out:
        out["transmissions_per_correction"] = out["harq_transmissions"] / max(
            out["corrections"], 1)
    return out


SUMMED_REQUEST_KEYS = ("arrivals", "completed", "in_system_at_end", "throughput_rps",
                       "tokens_per_s", "queue_length_mean", "waiting_mean")


def network_requests(blocks, ids, logs):
    """The cells' request figures that add up across cells: counts, rates (each over its
    cell's time), time averages and the SLO's met and counted requests; the latency, the
    waiting time and the time to first token of the completed requests of every cell pooled
    (``logs``: the cells' ``RequestLog``s; their intervals stay in each cell's summary); the
    servers' mean busy share."""
    out = {key: sum(b[key] for b in blocks) for key in SUMMED_REQUEST_KEYS}
    for key, part in (("latency_s", "latency"), ("wait_s", "wait"),
                      ("time_to_first_token_s", "ttft")):
        out[key] = describe(np.concatenate([getattr(log, part).values() for log in logs]))
    out["server_utilisation"] = float(np.mean([b["server_utilisation"] for b in blocks]))
    out["stable"] = all(b["stable"] for b in blocks)
    out["warnings"] = [f"cell {c}: {w}" for c, b in zip(ids, blocks) for w in b["warnings"]]
    slos = [b["slo"] for b in blocks]
    if all("met" in slo for slo in slos):   # SLO limits set: the same in every cell
        met, counted = sum(slo["met"] for slo in slos), sum(slo["counted"] for slo in slos)
        out["slo"] = {"ttft_limit_s": slos[0]["ttft_limit_s"],
                      "tpot_limit_s": slos[0]["tpot_limit_s"], "met": met, "counted": counted,
                      "attainment": met / counted if counted else float("nan"),
                      "goodput_rps": sum(slo["goodput_rps"] for slo in slos)}
    return out


def network_queues(network, runs):
    """summary.json's ``requests`` block of a network whose cells share one workload: the
    request statistics up to the end of the last cell's loop (requests.csv closed)."""
    end = network.work_end
    if end is None:   # a run stopped before every loop ended: up to the last end, or now
        end = max((r.end_s for r in runs if r.end_s is not None), default=runs[0].env.now)
    network.work.close()
    requests = network.work.finish(end)
    network.work_log.close()
    # the servers' mean busy share (each cell's over its own span)
    requests["server_utilisation"] = float(np.mean([r.utilisation() for r in runs]))
    return requests


def combine_tables(folder, name, ids):
    """``<name>.csv`` of the run: the cells' rows one after another with a leading ``cell``
    column (the lines copied, the cell prefixed); none when no cell wrote one."""
    paths = [(c, folder / f"cell_{c}" / f"{name}.csv") for c in ids]
    paths = [(c, path) for c, path in paths if path.exists()]
    if not paths:
        return
    with open(folder / f"{name}.csv", "w", encoding="utf-8", newline="") as out:
        for i, (c, path) in enumerate(paths):
            with open(path, encoding="utf-8", newline="") as f:
                head = f.readline()
                if i == 0:
                    out.write("cell," + head)
                out.writelines(f"{c}," + line for line in f)


def build_cells(scenario, folder, inputs, *, build_run, result, progress=False, cell_hooks=None):
    """The cells' runs in one environment, ready to ``start`` (``CellsRun``); ``progress``:
    show the slowest cell's rounds on stderr (a terminal's); ``cell_hooks``: None, or a
    callable giving cell c's further keyword arguments of ``build_run`` (an outside draft
    controller or reactive policy: ``gym.cells``)."""
    wall0 = time.perf_counter()
    cells = scenario.cells
    rng, layout = cells_layout(scenario)
    model = PATHLOSS_MODELS.lookup(cells.pathloss).from_scenario(scenario)
    links = Links(layout, model, rng)
    band = scenario.channel.bandwidth_mhz * 1e6 / cells.reuse
    network = None
    moving = MOBILITY_MODELS.lookup(scenario.mobility.model).moves
    if moving or cells.reassociate:
        plan, network = mobile_plan(scenario, layout, model, links, rng, moving)
    else:
        plan = cell_plan(scenario, layout, model, links, rng)
    env = simpy.Environment()
    field = InterferenceField(links, cochannel(layout, cells.reuse), noise_psd(scenario),
                              np.full(layout.count, band), rng)
    runs = []
    for c, cell_scenario in plan:
        sub = folder / f"cell_{c}"
        sub.mkdir(parents=True, exist_ok=True)
        holder = {}

        def add(population, c=c):
            if network is not None:   # every cell holds all devices; gains to its server
                holder["globs"] = np.arange(network.d)
                return dataclasses.replace(population, system=dataclasses.replace(
                    population.system, pathloss=network.gain[:, c].copy()))
            population = links.add_cell(c, population, links.drawn.get(c))
            holder["globs"] = np.arange(links.base[c], links.base[c] + population.system.k)
            return population

        def wrap(channel, c=c):
            field.n0 = channel.n0
            return InterferingChannel(channel, field, c, holder["globs"],
                                      cells.interference_csi)
        hooks = {} if network is None else {
            "workload_hook": functools.partial(network.share_work, cell=c, folder=folder),
            **({"mover_hook": lambda _, c=c: CellMover(network, c)} if moving else {})}
        if cell_hooks is not None:
            hooks.update(cell_hooks(c))
        runs.append(build_run(cell_scenario, sub, inputs, env=env, population_hook=add,
                              channel_hook=wrap, writer_process=False, **hooks))
    if cells.cross_link:
        field.cross_link(*links.cross_gains(np.random.Generator(np.random.PCG64(
            np.random.SeedSequence(scenario.seed, spawn_key=CROSS_STREAM_KEY)))))
    # the scenario that was run (each cell_<c>/scenario.yaml is its one-cell part)
    (folder / "scenario.yaml").write_text(dump_scenario_yaml(scenario), encoding="utf-8")
    if network is not None and network.work_log is not None:   # the shared queues' bound
        guard_backlog(network.work, CellLoops([r.loop for r in runs]),
                      scenario.limits.max_backlog_requests)
    ids = [c for c, _ in plan]
    horizon = Horizon(env, runs, ids, scenario.run.rounds, round_budget(scenario), network,
                      Progress.for_run(scenario, progress))
    return CellsRun(scenario, folder, runs, ids, field, wall0, result, horizon)


