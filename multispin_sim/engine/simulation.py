"""``simulate(scenario)``: build a scenario's system, run its SimPy rounds, write the outputs."""
import dataclasses
import shutil
import tempfile
import time
from pathlib import Path

import simpy

from ..version import __version__
from ..errors import RunFailed, os_advice, os_reason
from ..model.mobility import MOBILITY_MODELS
from ..outputs.atomic import write_json
from ..outputs.metadata import output_folder, run_metadata
from ..outputs.records import read_table
from ..outputs.recorder import Recorder
from ..outputs.requests import RequestLog
from ..policies import DRAFT_CONTROLLERS
from ..scenario import dump_scenario_yaml, load_scenario
from ..scenario.loading import names_scenario_file
from ..scenario.engine_registries import ARRIVAL_MODELS, PAYLOAD_MODELS, PROTOCOLS
from ..outputs.energy import EnergyAccount
from .acceptance import acceptance_inputs, acceptance_summary, build_acceptance
from .cell_plan import check_cell_layout, workload_devices
from .compute import check_verification, energy_powers, reactive_policy, thermal_state
from .link import build_channel, check_link, link_policy
from .guards import LimitReached, RecordedTotals, StopSignals, guard_backlog
from .population import build_population
from .progress import Progress
from .server import EdgeServer
from .streams import RandomStreams
from .tokens import read_pairs
from .topology import Mover, device_bearings, doppler_clock, layout_inputs
from .workload import queue_warnings


WRITER_PROCESS_MIN_ROWS = 200_000  # device-round rows from which a writer process pays off


class _Table:
    """A record table of the run's folder, read back as a dict of numpy arrays."""

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, result, owner=None):
        return self if result is None else result.table(self.name)


class Result:
    """A finished (or interrupted) run: ``summary`` (dict), ``folder``, and its record tables.

    ``result.rounds``, ``result.device_rounds``, ``result.devices`` and (queueing workloads,
    one row per request that arrived) ``result.requests`` read the CSVs back as dicts of numpy
    arrays. ``stop_signal``: the signal that interrupted the run, if one did; ``stop_todo``:
    what to do about the limit that stopped it, if one did.
    """

    stop_signal = stop_todo = None
    rounds = _Table()
    device_rounds = _Table()
    devices = _Table()
    requests = _Table()

    def __init__(self, summary, folder, population, scenario, _tmp=None):
        self.summary = summary
        self.folder = Path(folder)
        self.population = population
        self.scenario = scenario
        self._tmp = _tmp  # keeps a temporary folder alive as long as the result

    @property
    def complete(self):
        return self.summary["complete"]

    def table(self, name):
        path = self.folder / f"{name}.csv"
        if not path.is_file():   # requests.csv: written by queueing workloads only
            raise AttributeError(f"this run has no {name} table ({path.name} is written by "
                                 "the runs that have one: docs/guide/outputs.md)")
        return read_table(path)

    def __repr__(self):
        s = self.summary
        return (f"Result({s['rounds']} rounds, goodput {s['goodput_tps']:.2f} tokens/s, "
                f"folder={str(self.folder)!r})")


def write_topology(path, population):
    """The topology graph as GraphML (server and device nodes with positions at the start)."""
    import networkx as nx

    nx.write_graphml(population.graph, path)


@names_scenario_file   # its errors name the scenario file, as the loader's do
def read_inputs(scenario):
    """Files a scenario refers to, read and checked before anything is written: each chosen
    component reads its own (``read_inputs``), plus the verification table, the PRB check and
    the servers of several cells."""
    inputs = {}
    check_verification(scenario)
    check_link(scenario)
    check_cell_layout(scenario)
    inputs.update(ARRIVAL_MODELS.lookup(scenario.workload.arrivals).read_inputs(
        scenario, workload_devices(scenario)))
    inputs.update(acceptance_inputs(scenario))
    inputs.update(layout_inputs(scenario))
    if scenario.payload.pairs_file is not None:
        inputs["pairs"] = read_pairs(scenario.payload, scenario.limits)
    return inputs


def simulate(scenario, out=None, *, results_dir=None, progress=False, command_line=None):
    """Run one scenario (a ``Scenario``, a dict or a YAML path) and return its ``Result``.

    ``out``: the output folder (created; must be empty). Without it, a new folder under
    ``results_dir`` when given, else a temporary folder that lives as long as the Result.
    ``progress``: print progress on stderr. Ctrl-C stops the run between events and still
    writes valid CSVs and a summary with ``complete: false``.
    """
    if not hasattr(scenario, "devices"):
        scenario = load_scenario(scenario)
    inputs = read_inputs(scenario)
    tmp = None
    if out is None and results_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="multispin-")
        out = tmp.name
    folder = output_folder(out, base=results_dir or "results", name=scenario.name,
                           seed=scenario.seed)
    with StopSignals() as signals:
        try:
            return _simulate(scenario, folder, inputs, tmp, signals, progress, command_line)
        except OSError as exc:  # a full disk, a folder removed: leave nothing half-written
            shutil.rmtree(folder, ignore_errors=True)
            raise RunFailed(f"writing {exc.filename or folder}", os_reason(exc),
                            f"{os_advice(exc)}; the partial output {folder} was removed") from exc
        except Exception as exc:  # any other failure: the folder only if its rounds were kept
            if getattr(exc, "partial_output", None) is None:
                shutil.rmtree(folder, ignore_errors=True)
            raise


def _simulate(scenario, folder, inputs, tmp, signals, progress, command_line):
    from .cells import builder   # one cell: build_run; several: one round loop per cell
    run = builder(scenario, build_run, Result)(scenario, folder, inputs, progress=progress)
    signals.attach(run.loop)
    main = run.start()
    # the loop has ended: every round it made is recorded; a signal from here on waits for the
    # outputs and leaves the run as complete as the loop made it (``StopSignals.shutdown``)
    main.callbacks.append(lambda _event: setattr(signals, "shutdown", True))
    try:
        run.env.run(until=main)
    except KeyboardInterrupt:
        run.loop.stop_requested = True  # a second signal: stop mid-round, still write the summary
    except LimitReached as exc:
        exc.stop(run.loop)
    except BaseException as exc:
        signals.shutdown = True
        if isinstance(exc, Exception) and not isinstance(exc, (OSError, MemoryError)):
            _keep_partial(run, exc, tmp, command_line)   # a fault: keep the recorded rounds
        else:
            run.abort()
        raise
    signals.shutdown = True  # from here on, signals wait for the outputs to be written
    result = run.finish(tmp, command_line, stop_reason=signals.reason)
    result.stop_signal = signals.signum
    return result


def _keep_partial(run, exc, tmp, command_line):
    """Write the outputs of a run that ``exc`` broke off, as a stopped run's (complete: false,
    the error as its stop reason), and mark ``exc`` with the folder (``partial_output``; not a
    temporary one, removed with the run); if they cannot be written, close the records and
    leave ``exc`` unmarked (the caller removes the folder)."""
    run.loop.stop_requested = True
    run.loop.stop_reason = f"internal error: {type(exc).__name__}: {exc}"
    try:
        run.finish(tmp, command_line)
    except Exception:   # noqa: BLE001 -- the first error is the one to report
        run.abort()
        return
    if tmp is None:
        exc.partial_output = run.folder


class Run:
    """A system built from a scenario, its SimPy environment and round loop, before and while it
    runs: ``start()`` starts the loop's process, ``finish(...)`` writes the summary and returns
    the ``Result``, ``abort()`` closes the records of a run that failed. ``simulate`` runs one to
    its end; a caller stepping the environment itself (``env.run(until=...)``) holds one too."""

    def __init__(self, **parts):
        self.__dict__.update(parts)
        self.end_s = None   # when the loop ended (cells share one clock that runs on)

    def start(self):
        """The loop's SimPy process (started, not yet run). When it ends, the run's end time
        is kept and its workload takes no more requests."""
        process = self.env.process(self.loop.run(self.env))
        process.callbacks.append(self._ended)
        return process

    def _ended(self, _event):
        self.end_s = self.env.now
        self.workload.close()

    @property
    def compiled_search(self):
        """Whether this run's draft controller (or the scenario's own, when an outside one was
        put around it) ran the compiled search: run.json's ``compiled_search``."""
        return any(getattr(c, "compiled_search", False)
                   for c in (self.controller, self.own_controller))

    @property
    def compiled_shared_band(self):
        """Whether this run's shared-band decisions ran on the compiled evaluator (the
        system's antenna component says so)."""
        transmission = self.population.system.transmission
        return transmission is not None and transmission.compiled_ran

    def abort(self):
        if self.log is not None:
            self.log.close()  # what was written stays a valid CSV
        self.recorder.close()
        self.server.close()

    def utilisation(self):
        """The server's busy share of the simulated time (after the records are closed)."""
        stats = self.recorder.stats
        busy = self.loop.server_busy_s
        if busy is None:
            busy = stats.sim_time - stats.idle_time
        return busy / stats.sim_time if stats.sim_time > 0 else 0.0

    def finish(self, tmp=None, command_line=None, stop_reason=None):
        """Close the records, write the summary, run.json, devices and topology; the Result."""
        scenario, folder, population, acceptance, belief = (
            self.scenario, self.folder, self.population, self.acceptance, self.belief)
        env, channel, server, recorder, log, workload, loop = (
            self.env, self.channel, self.server, self.recorder, self.log, self.workload, self.loop)
        wall0 = self.wall0
        # complete: the loop ended without a stop (a signal, a limit); decided before anything
        # is written (a signal during the writing does not change it: ``StopSignals``)
        complete = not loop.stop_requested
        recorder.close()
        self.totals.restore()  # a run stopped mid-round: the totals of the recorded rounds
        server.close()
        stop_reason = stop_reason or loop.stop_reason
        requests = workload.finish(env.now if self.end_s is None else self.end_s)
        if log is not None:
            log.close()
        wall = time.perf_counter() - wall0
        # the agreements of the recorded rounds (the server's tally also has those of a round a
        # stopped run cut short)
        tally = recorder.stats.agreements
        recorder.write_devices(population, extra={
            "agreed_positions": tally.agreed, "verified_positions": tally.verified,
            "agreement_rate": tally.rate()})
        write_topology(folder / "topology.graphml", population)
        summary = recorder.stats.summary()
        if recorder.energy is not None:
            summary["energy"] = recorder.energy.summary(recorder.stats.tokens)
        summary.update(server.summary_blocks(summary["tokens"]))
        summary.update(loop.summary_blocks(env.now))
        summary["acceptance"] = acceptance_summary(scenario, acceptance, belief, tally)
        warnings = []
        if requests is not None:
            requests["server_utilisation"] = self.utilisation()
            summary["requests"] = requests
            warnings = queue_warnings(scenario, requests, summary["duration_s"]["max"],
                                      recorder.stats.sim_time)
        if channel.dynamic_csi:
            summary.setdefault("delays", {}).update(
                transmissions=channel.transmissions, over_several_blocks=channel.multi_block,
                blocks_per_transmission=(channel.blocks_used / channel.transmissions
                                         if channel.transmissions else 0.0))
        summary.update(channel.summary_blocks())
        if warnings:
            summary["warnings"] = warnings  # the CLI prints them; sweeps collect them
        summary.update(complete=complete, wall_time_s=wall,
                       rounds_per_s=summary["rounds"] / wall if wall > 0 else 0.0)
        if not complete:
            summary["stop_reason"] = stop_reason or "stopped"
        write_json(folder / "summary.json", summary)  # strict JSON (null for NaN), atomic
        meta = run_metadata(__version__, scenario.seed, wall, command_line,
                            compiled_search=self.compiled_search,
                            compiled_shared_band=self.compiled_shared_band,
                            scenario=scenario.name, complete=complete)
        write_json(folder / "run.json", meta)
        result = Result(summary, folder, population, scenario, _tmp=tmp)
        result.stop_todo = self.loop.stop_todo  # the limit's own advice
        return result


def build_run(scenario, folder, inputs, *, progress=False, controller=None, reactive=None,
              writer_process=None, env=None, population_hook=None, channel_hook=None,
              workload_hook=None, mover_hook=None):
    """The system of ``scenario`` (``scenario.yaml`` written to ``folder``), ready to ``start``.

    ``controller``, ``reactive``: optional callables given the scenario's draft controller and
    reactive policy, returning the objects the run asks instead (an outside decision maker, for
    example a learning agent); None keeps the scenario's own. ``writer_process``: format the
    records on a second process (None: for long runs, as ``WRITER_PROCESS_MIN_ROWS`` says;
    False: in this process, e.g. inside a worker process that may not have children).
    ``env``: the SimPy environment to build in (None: a new one); ``population_hook``,
    ``channel_hook``, ``mover_hook``: callables given the population, the channel and the mover
    as built, returning the ones to use (a cell of several, ``engine.cells``);
    ``workload_hook``: a callable given the function that builds the run's own workload
    (``own_workload(where=folder) -> (workload, request log or None)``), returning the
    (workload, log) to use: the cells of a network whose devices move share one workload.
    """
    (folder / "scenario.yaml").write_text(dump_scenario_yaml(scenario), encoding="utf-8")

    wall0 = time.perf_counter()
    streams = RandomStreams(scenario.seed)
    population = build_population(scenario, streams.devices, streams.topology, streams.shadowing,
                                   inputs.get("graphml"))
    if population_hook is not None:
        population = population_hook(population)
    payload = PAYLOAD_MODELS.lookup(scenario.payload.model)
    population, prepared = payload.prepare(scenario, population, streams, inputs)
    acceptance, belief = build_acceptance(scenario, population, streams.acceptance,
                                          inputs.get("acceptance_trace"))
    if acceptance.nominal is not population.system.alpha:   # the model's mean rates
        population = dataclasses.replace(population, system=dataclasses.replace(
            population.system, alpha=acceptance.nominal))
    system = population.system
    policy = scenario.policy
    ch = scenario.channel
    moving = MOBILITY_MODELS.lookup(scenario.mobility.model).moves
    own_controller = DRAFT_CONTROLLERS.lookup(policy.draft).from_scenario(
        scenario, draft_length=population.draft_length,
        powers=energy_powers(scenario, population))
    controller = own_controller if controller is None else controller(own_controller)
    env = simpy.Environment() if env is None else env
    coherence = None if ch.coherence_time_ms is None else ch.coherence_time_ms * 1e-3
    mover = (Mover(scenario, population, streams.mobility, streams.shadowing_path) if moving
             else None)
    if mover_hook is not None:
        mover = mover_hook(mover)
    channel = build_channel(scenario, system, streams, coherence, moving,
                            doppler_clock(scenario, mover), device_bearings(population, mover))
    if channel_hook is not None:
        channel = channel_hook(channel)
    own_policy = reactive_policy(scenario, population)
    own_policy = own_policy if reactive is None else reactive(own_policy)
    server = EdgeServer(system, link_policy(scenario, channel, own_policy),
                        streams.policy, streams.acceptance, acceptance=acceptance, belief=belief,
                        per_request=scenario.acceptance.session == "request")
    thermal = thermal_state(scenario, population)  # None without compute.thermal
    server = payload.serve(scenario, server, prepared, streams, folder, channel)
    # long runs format their CSV rows on the second core (same bytes, see WriterProcess)
    # many devices: fewer rounds per chunk of records (same bytes, bounded memory)
    rounds_per_block = max(16, min(1024, (1 << 22) // system.k))
    recorder = Recorder(folder, system.k, rounds_per_block, planned=channel.dynamic_csi,
                        distance=moving,
                        writer_process=(scenario.run.rounds * system.k >= WRITER_PROCESS_MIN_ROWS
                                        if writer_process is None else writer_process),
                        energy=EnergyAccount(energy_powers(scenario, population), system.k,
                                             thermal) if scenario.energy.record else None,
                        extra=channel.extra_columns)
    arrivals = ARRIVAL_MODELS.lookup(scenario.workload.arrivals)

    def own_workload(where=folder):
        """(the run's workload, its request log or None): queueing workloads start their SimPy
        arrival processes and write their requests to ``where``/requests.csv."""
        log = None
        if not arrivals.saturated:
            log = RequestLog(where / "requests.csv", system.k,
                             slo_ttft_s=scenario.serving.slo_ttft_s,
                             slo_tpot_s=scenario.serving.slo_tpot_s)
        return arrivals.from_scenario(scenario, population.tasks, streams.arrivals, env, log,
                                      inputs), log

    workload, log = own_workload() if workload_hook is None else workload_hook(own_workload)
    loop = PROTOCOLS.lookup(scenario.serving.protocol).from_scenario(
        scenario, env, population, channel, server, controller, workload, streams, recorder,
        progress=Progress.for_run(scenario, progress), mover=mover, thermal=thermal)
    channel.max_blocks = scenario.limits.max_blocks_per_transmission
    # counters the outputs report that are updated before a round is recorded (summary.json's
    # delays and link blocks, deferred, the token payload's totals and corrections.csv): kept as
    # of each record, so that a run stopped mid-round reports its recorded rounds (none on the
    # paper's channel: nothing to keep)
    totals = RecordedTotals(channel.counters() + loop.counters() + server.counters())
    if totals:
        recorder.commits.append(totals.commit)
    if log is not None:
        guard_backlog(workload, loop, scenario.limits.max_backlog_requests)
    return Run(scenario=scenario, folder=folder, wall0=wall0, streams=streams,
               population=population, acceptance=acceptance, belief=belief, controller=controller,
               own_controller=own_controller,
               env=env, channel=channel, server=server, thermal=thermal, recorder=recorder,
               log=log, workload=workload, loop=loop, totals=totals)
