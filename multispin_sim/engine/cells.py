"""Several cells in one SimPy environment: one edge server and one round loop per cell, and the
interference between their transmissions (docs/components/cells.md).

``builder(scenario, build_run)`` is what ``simulate`` asks: the one-cell ``build_run`` itself
when the layout has one server and no interference can change anything, else ``build_cells``.

Each cell is a complete single-cell system (population, channel, server, controller, workload,
recorder, ``RoundLoop``) built by ``build_run`` in the shared environment, with the cell's own
seed (cell 0 the run's seed, cell c > 0 a seed derived from (seed, c)) and its folder
``cell_<c>/``. The cells' loops run on their own: no global lock-step, so transmissions overlap
as their timing makes them. The cell's channel is the ``OFDMAChannel`` with its interference
part (``InterferingChannel``): a correction's rate follows its SINR, recomputed whenever a
co-channel transmission of another cell starts or ends (``InterferenceField``).
"""
import dataclasses
import functools
import math
import time

import numpy as np

from ..model.cells import CELL_LAYOUTS
from ..model.mobility import MOBILITY_MODELS
from ..model.pathloss_3gpp import PATHLOSS_MODELS
from ..model.reactive import DL, UL
from ..model.sinr import cochannel
from ..outputs.atomic import write_json
from ..outputs.statistics import describe
from .cell_plan import cell_layout, cell_plan, mobile_plan, noise_psd
from .channel import OFDMAChannel
from .handover import AttachedWorkload, CellMover

CELLS_STREAM_KEY = 1000   # SeedSequence(seed, spawn_key=(1000,)): layout, drops, cross links


def builder(scenario, build_run, result):
    """``build_run`` for one cell, ``build_cells`` (building each cell with ``build_run``,
    finishing with a ``result``) for several."""
    if not CELL_LAYOUTS.lookup(scenario.cells.layout).several:
        return build_run
    return functools.partial(build_cells, build_run=build_run, result=result)


class Links:
    """Large-scale gains (D, S) of every device (global index) to every server, and the
    devices' cells; own-cell entries are the cell population's gains."""

    def __init__(self, layout, model, rng):
        self.layout, self.model, self.rng = layout, model, rng
        self.gain = np.zeros((0, layout.count))
        self.cell_of = np.zeros(0, dtype=np.int64)
        self.base = {}
        self.drawn = {}   # cell -> gains (its devices, S) drawn at a region drop

    def add_cell(self, cell, population, drawn=None):
        """The rows of ``cell``'s devices; returns the population with its own gains. The gains
        are ``drawn`` (the rows the region drop associated on) or drawn here; a model that is
        the population's own (``model.population_gain``: today's power law, per-cell drops)
        keeps the population's gains to its server."""
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
        self.base[cell] = self.gain.shape[0]
        self.gain = np.vstack([self.gain, gain])
        self.cell_of = np.concatenate([self.cell_of, np.full(k, cell)])
        return population


class Tx:
    """One correction in flight: its cell, device, mode, power, subband [f0, f1), own gain,
    bits left, the rate now, and its intervals (t0, t1, rate, interference)."""

    __slots__ = ("cell", "device", "glob", "mode", "power", "f0", "f1", "gain", "bits", "left",
                 "rate", "interference", "t_last", "event", "intervals", "start", "planned",
                 "version", "contrib")


class InterferenceField:
    """The co-channel transmissions in flight across cells, and their mutual interference.

    Interference is same-direction: UL corrections of other cells at this cell's server, DL
    corrections of other servers at this device (cross-link server-server and device-device
    interference of unsynchronised TDD is left out). An interferer x adds P_x g_xy o / b_x on
    receiver y, o the overlap of their subbands, g_xy the large-scale gain times an Exp(1)
    fading draw per pair of transmissions. The fields's log keeps every transmission's
    intervals (``log``) for the bit-conservation check."""

    def __init__(self, links, co, n0, bandwidth, rng, keep_log=True):
        self.links, self.co, self.n0, self.bandwidth, self.rng = links, co, n0, bandwidth, rng
        self.active = {UL: [], DL: []}   # the transmissions in flight, by direction
        self.env = None
        self.fade = {}
        self.log = [] if keep_log else None
        # interference PSD now and its time integral at every server (UL, (S,)) and at every
        # device were it in each cell (DL, (D, S)), for the time-averaged CSI
        self.now_psd = self.int_psd = None
        self.t_int = 0.0

    def _track(self, tx, now, sign):
        """Add (sign 1) or remove (-1) ``tx``'s contribution to the PSD now, integrating first."""
        if self.now_psd is None:
            shape = self.links.gain.shape
            self.now_psd = {UL: np.zeros(shape[1]), DL: np.zeros(shape)}
            self.int_psd = {UL: np.zeros(shape[1]), DL: np.zeros(shape)}
        self._track_time(now)
        if sign > 0:
            weight = self.co[tx.cell] / self.bandwidth
            gain = self.links.gain
            tx.contrib = (tx.power * gain[tx.glob] * weight if tx.mode == UL
                          else tx.power * np.outer(gain[:, tx.cell], weight))
            self.now_psd[tx.mode] += tx.contrib
        else:
            self.now_psd[tx.mode] -= tx.contrib

    def mean_psd(self, cell, mode, globs, now):
        """The time average of the interference PSD over the run so far, at ``cell``'s server
        (UL) or at its devices ``globs`` (DL); the PSD now before any time has passed."""
        if self.now_psd is None:
            return np.zeros(len(globs))
        self._track_time(now)
        source = self.int_psd if self.t_int > 0 else self.now_psd
        scale = 1.0 / self.t_int if self.t_int > 0 else 1.0
        if mode == UL:
            return np.full(len(globs), source[UL][cell] * scale)
        return source[DL][globs, cell] * scale

    def _track_time(self, now):
        dt = now - self.t_int
        if dt > 0:
            for mode in (UL, DL):
                self.int_psd[mode] += self.now_psd[mode] * dt
            self.t_int = now

    def _gain(self, x, y):
        """Gain from interferer x to y's receiver (UL: x's device to y's server; DL: x's server
        to y's device), with the pair's fading."""
        key = (id(x), id(y))
        h = self.fade.get(key)
        if h is None:
            h = self.fade[key] = float(self.rng.standard_exponential())
        if x.mode == UL:
            return self.links.gain[x.glob, y.cell] * h
        return self.links.gain[y.glob, x.cell] * h

    def _interference(self, y):
        total = 0.0
        co = self.co[y.cell]
        for x in self.active[y.mode]:
            if x is y or not co[x.cell]:
                continue
            overlap = min(x.f1, y.f1) - max(x.f0, y.f0)
            if overlap > 0:
                total += x.power * self._gain(x, y) * overlap / (x.f1 - x.f0)
        return total

    def _set_rate(self, y):
        b = y.f1 - y.f0
        y.interference = self._interference(y)
        y.rate = b * math.log2(1.0 + y.power * y.gain / (self.n0 * b + y.interference))

    def measured_psd(self, cell, mode, globs):
        """Interference power per Hz over ``cell``'s band now, at its server (UL, one value)
        or at its devices ``globs`` (DL), each interferer at its large-scale gain."""
        out = np.zeros(len(globs))
        for x in self.active[mode]:
            if not self.co[x.cell, cell]:
                continue
            if mode == UL:
                out += x.power * self.links.gain[x.glob, cell]
            else:
                out += x.power * self.links.gain[globs, x.cell]
        return out / self.bandwidth[cell]

    def _account(self, y, now):
        if now > y.t_last:
            y.left -= y.rate * (now - y.t_last)
            y.intervals.append((y.t_last, now, y.rate, y.interference))
            y.t_last = now

    def _affected(self, y):
        co = self.co[y.cell]
        return [x for x in self.active[y.mode] if x is not y and co[x.cell]
                and min(x.f1, y.f1) > max(x.f0, y.f0)]

    def _changed(self, y, now):
        """A transmission starts or ends: every overlapping one accounts its bits at the old
        rate and continues at the new one (its delivery rescheduled)."""
        for x in self._affected(y):
            self._account(x, now)
            old = x.rate
            self._set_rate(x)
            if x.rate != old:
                self._schedule(x, x.left / x.rate if x.rate > 0 else None)

    def _schedule(self, tx, wait):
        """Deliver ``tx`` after ``wait`` seconds unless its rate changes first (a later
        schedule supersedes this one; None: never at the current rate)."""
        tx.version += 1
        if wait is None:
            return
        version = tx.version
        done = self.env.timeout(wait)
        done.callbacks.append(lambda _, tx=tx, v=version: self._due(tx, v))

    @staticmethod
    def _due(tx, version):
        if version == tx.version and not tx.event.triggered:
            tx.event.succeed()

    def transmit(self, env, tx):
        """SimPy: deliver ``tx.bits`` at the piecewise-constant rate; returns the delay. The
        process waits for one event, its delivery; rate changes reschedule it."""
        self.env = env
        now = tx.start = tx.t_last = env.now
        tx.left, tx.intervals, tx.version = tx.bits, [], 0
        tx.event = env.event()
        self._track(tx, now, 1)
        self.active[tx.mode].append(tx)
        self._set_rate(tx)
        self._changed(tx, now)
        clear = tx.interference == 0.0 and tx.planned is not None and tx.planned > 0
        if clear:
            # no interference: the policy's own delay for this rate (the one-cell timing)
            tx.rate = tx.bits / tx.planned
            self._schedule(tx, tx.planned)
        else:
            self._schedule(tx, tx.left / tx.rate if tx.rate > 0 else None)
        yield tx.event
        end = env.now
        if end > tx.t_last:
            tx.intervals.append((tx.t_last, end, tx.rate, tx.interference))
        tx.left = 0.0
        self._track(tx, end, -1)
        self.active[tx.mode].remove(tx)
        self._changed(tx, end)
        if self.log is not None:
            self.log.append(tx)
        return tx.planned if clear and tx.version == 1 else end - tx.start


class InterferingChannel(OFDMAChannel):
    """A cell's OFDMA channel with the other cells' interference: the cell's fading and path
    loss as in one cell; transmissions delivered over the field; the CSI the draft controller
    and the reactive policy see is g N0 / (N0 + psi), the SINR of a flat interference PSD psi
    over the band (``cells.interference_csi``): 'last', the PSD measured at that instant;
    'mean', its time average over the run so far; 'none', psi = 0 (blind to interference)."""

    plain_transmit = False

    @property
    def dynamic_csi(self):
        return True

    @classmethod
    def around(cls, channel, field, cell, globs, interference_csi="last"):
        obj = cls.__new__(cls)
        obj.__dict__.update(channel.__dict__)
        obj.field, obj.cell, obj.globs = field, cell, globs
        obj.interference_csi = interference_csi
        obj._band_t, obj._band_next = None, 0.0
        return obj

    def _seen(self, now):
        n0, field = self.n0, self.field
        measured = [field.measured_psd(self.cell, mode, self.globs) for mode in (UL, DL)]
        if self.interference_csi == "last":
            seen = measured
        elif self.interference_csi == "mean":
            seen = [field.mean_psd(self.cell, mode, self.globs, now) for mode in (UL, DL)]
        else:
            seen = [np.zeros(len(self.globs))] * 2
        # a planned delay holds when the decision saw no interference and none was there
        self._clear = (measured[0] == 0) & (seen[0] == 0), (measured[1] == 0) & (seen[1] == 0)
        return self.g_ul * (n0 / (n0 + seen[0])), self.g_dl * (n0 / (n0 + seen[1]))

    def new_block(self, now=0.0):
        super().new_block(now)
        return self._seen(now)

    def csi(self, now):
        return self._seen(now)

    def transmit(self, env, device, mode, power_w, bandwidth_hz, planned_s):
        # corrections starting together take consecutive subbands of the cell's band
        if self._band_t != env.now:
            self._band_t, self._band_next = env.now, 0.0
        tx = Tx()
        tx.cell, tx.device, tx.glob, tx.mode = self.cell, device, int(self.globs[device]), mode
        tx.power = power_w
        tx.f0 = self._band_next
        tx.f1 = self._band_next = self._band_next + bandwidth_hz
        tx.gain = float((self.g_ul if mode == UL else self.g_dl)[device])
        tx.bits = self.bits if self.round_bits is None else float(self.round_bits[device])
        # the planned delay is the delivery time when the decision saw no interference and
        # none is there at the start (then it is kept exactly, as on one cell)
        tx.planned = planned_s if self._clear[0 if mode == UL else 1][device] else None
        self.transmissions += 1
        delay = yield from self.field.transmit(env, tx)
        return delay


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


class CellsRun:
    """The cells' runs in one environment; ``start``, ``finish``, ``abort`` as ``Run``."""

    def __init__(self, scenario, folder, runs, ids, field, links, wall0, result):
        self.scenario, self.folder, self.runs, self.field, self.links = (
            scenario, folder, runs, field, links)
        self.ids = ids
        self.result = result
        self.network = None
        self.env = runs[0].env
        self.loop = CellLoops([r.loop for r in runs])
        self.wall0 = wall0

    def start(self):
        procs = [r.start() for r in self.runs]
        if self.network is None:
            return self.env.all_of(procs)
        self.env.process(self.network.run(self.env))
        return self.env.process(self._until_done(procs))

    def _until_done(self, procs):
        """SimPy: until every cell's loop has ended. With moving devices a cell may be left
        without devices: when a loop ends and every cell still running is idle, they end too
        (their rounds would wait for devices that only a handover could bring)."""
        env, network = self.env, self.network
        running = list(zip(self.ids, procs))
        while running:
            yield env.any_of([p for _, p in running])
            running = [(c, p) for c, p in running if not p.triggered]
            if running and all(network.idle(c) for c, _ in running):
                network.close()
                yield env.all_of([p for _, p in running])
                running = []

    def abort(self):
        for r in self.runs:
            r.abort()

    def finish(self, tmp=None, command_line=None, stop_reason=None):
        results = [r.finish(None, command_line, stop_reason) for r in self.runs]
        summary = cells_summary(self.scenario, [r.summary for r in results], self.ids,
                                self.field, time.perf_counter() - self.wall0,
                                [r.rounds for r in results])
        for name in ("rounds", "device_rounds", "devices"):
            combine_tables(self.folder, name, self.ids)
        if self.network is not None:
            summary["handover"] = self.network.summary(summary["sim_time_s"])
            self.network.write(self.folder / "handovers.csv")
        write_json(self.folder / "summary.json", summary)
        result = self.result(summary, self.folder, results[0].population, self.scenario, _tmp=tmp)
        result.cells = results
        result.field = self.field
        result.network = self.network
        result.stop_todo = None
        return result


def cells_summary(scenario, summaries, ids, field, wall, round_tables):
    """The run's summary: the one-cell summary's totals over the cells (the goodput the sum of
    the cells'; round statistics over every cell's rounds) and a ``cells`` block per cell."""
    time_s = max(s["sim_time_s"] for s in summaries)
    tokens = sum(s["tokens"] for s in summaries)
    ul = sum(s["ul_corrections"] for s in summaries)
    dl = sum(s["dl_corrections"] for s in summaries)
    per_cell = [{"cell": c, "devices": len(s["device_goodput_tps"]),
                 "goodput_tps": s["goodput_tps"], "rounds": s["rounds"],
                 "ul_corrections": s["ul_corrections"], "dl_corrections": s["dl_corrections"],
                 "mean_duration_s": s["duration_s"]["mean"]} for c, s in zip(ids, summaries)]
    goodputs = np.array([c["goodput_tps"] for c in per_cell])
    # the cells' intervals combined as if independent: the sum +- the root sum of squares
    half = [(s["goodput_ci95"][1] - s["goodput_ci95"][0]) / 2 for s in summaries]
    spread = float(np.sqrt(np.sum(np.square(half))))
    rounds = sum(s["rounds"] for s in summaries)
    device_rounds = sum(s["device_rounds"] for s in summaries)
    return {
        "goodput_tps": float(goodputs.sum()),   # each cell's tokens over its own time
        "goodput_ci95": [float(goodputs.sum()) - spread, float(goodputs.sum()) + spread],
        "tokens": tokens, "rounds": rounds, "sim_time_s": time_s,
        "device_rounds": device_rounds,
        "mean_draft_len": (sum(s["mean_draft_len"] * s["device_rounds"] for s in summaries)
                           / device_rounds if device_rounds else 0.0),
        "rejections": sum(s["rejections"] for s in summaries),
        "duration_s": describe(np.concatenate([rt["duration_s"] for rt in round_tables])),
        "comm_s": describe(np.concatenate([rt["comm_s"] for rt in round_tables])),
        "rounds_per_s": rounds / wall if wall > 0 else 0.0,
        "ul_corrections": ul, "dl_corrections": dl,
        "ul_share": ul / (ul + dl) if ul + dl else 0.0,
        "cells": per_cell,
        "load_balance": float(goodputs.min() / goodputs.max()) if goodputs.max() > 0 else 1.0,
        "interference": {"transmissions": len(field.log) if field.log is not None else None,
                         "cells": int(len(summaries)), "reuse": scenario.cells.reuse},
        "complete": all(s["complete"] for s in summaries),
        "wall_time_s": wall,
    }


def combine_tables(folder, name, ids):
    """``<name>.csv`` of the run: the cells' rows one after another with a leading ``cell``
    column (the lines copied, the cell prefixed)."""
    out, header = None, False
    try:
        for c in ids:
            path = folder / f"cell_{c}" / f"{name}.csv"
            if not path.exists():
                continue
            with open(path, encoding="utf-8", newline="") as f:
                head = f.readline()
                if out is None:
                    out = open(folder / f"{name}.csv", "w", encoding="utf-8", newline="")
                if not header:
                    out.write("cell," + head)
                    header = True
                prefix = f"{c},"
                out.writelines(prefix + line for line in f)
    finally:
        if out is not None:
            out.close()


def build_cells(scenario, folder, inputs, *, build_run, result, progress=False):
    """The cells' runs in one environment, ready to ``start`` (``CellsRun``)."""
    import simpy

    wall0 = time.perf_counter()
    cells = scenario.cells
    rng = np.random.Generator(np.random.PCG64(
        np.random.SeedSequence(scenario.seed, spawn_key=(CELLS_STREAM_KEY,))))
    layout = cell_layout(scenario, rng)
    if layout.count == 0:
        from ..scenario import ScenarioError
        raise ScenarioError("cells.density_per_km2", "the Poisson point process drew no server "
                            f"in the disc of cells.region_m = {cells.region_m:g} m",
                            "expected a density and region with servers (lambda pi R^2 >> 1)")
    model = PATHLOSS_MODELS.lookup(cells.pathloss).from_scenario(scenario)
    links = Links(layout, model, rng)
    band = scenario.channel.bandwidth_mhz * 1e6 / cells.reuse
    network = None
    if MOBILITY_MODELS.lookup(scenario.mobility.model).moves:
        plan, network = mobile_plan(scenario, layout, model, links, rng)
    else:
        plan = cell_plan(scenario, layout, model, links, rng)
    env = simpy.Environment()
    field = InterferenceField(links, cochannel(layout.count, cells.reuse), noise_psd(scenario),
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
            return InterferingChannel.around(channel, field, c, holder["globs"],
                                             cells.interference_csi)
        hooks = {} if network is None else {
            "workload_hook": functools.partial(AttachedWorkload, network=network, cell=c),
            "mover_hook": lambda _, c=c: CellMover(network, c)}
        runs.append(build_run(cell_scenario, sub, inputs, env=env, population_hook=add,
                              channel_hook=wrap, writer_process=False, **hooks))
    (folder / "scenario.yaml").write_text((folder / "cell_0" / "scenario.yaml").read_text())
    out = CellsRun(scenario, folder, runs, [c for c, _ in plan], field, links, wall0, result)
    out.network = network
    return out


