"""``simulate(scenario)``: build the system from a scenario, run the SimPy rounds, write the outputs."""
import contextlib
import json
import signal
import sys
import threading
import tempfile
import time
from pathlib import Path

import simpy
import yaml

from .. import __version__
from ..outputs.metadata import output_folder, run_metadata
from ..outputs.records import read_table
from ..outputs.recorder import Recorder
from ..policies import make_draft_controller, make_reactive_policy
from ..scenario import dump_scenario_yaml, load_scenario
from .channel import OFDMAChannel
from .population import build_population
from .round import RoundLoop
from .server import EdgeServer
from .streams import RandomStreams
from .workload import Saturated


class Result:
    """A finished (or interrupted) run: ``summary`` (dict), ``folder``, and its record tables.

    ``result.rounds``, ``result.device_rounds``, ``result.devices`` read the CSVs back as dicts
    of numpy arrays.
    """

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
        return read_table(self.folder / f"{name}.csv")

    @property
    def rounds(self):
        return self.table("rounds")

    @property
    def device_rounds(self):
        return self.table("device_rounds")

    @property
    def devices(self):
        return self.table("devices")

    def __repr__(self):
        s = self.summary
        return (f"Result({s['rounds']} rounds, goodput {s['goodput_tps']:.2f} tokens/s, "
                f"folder={str(self.folder)!r})")


class Progress:
    """Rounds done, rounds/s and time left on stderr, at most twice a second."""

    def __init__(self, total, stream=sys.stderr):
        self.total = total
        self.stream = stream
        self.t0 = time.perf_counter()
        self.last = 0.0

    def __call__(self, done, now):
        if done & 63 and done != self.total:
            return
        t = time.perf_counter()
        if t - self.last < 0.5 and done != self.total:
            return
        self.last = t
        rate = done / max(t - self.t0, 1e-9)
        left = (self.total - done) / rate if rate > 0 else float("inf")
        self.stream.write(f"\rround {done}/{self.total}  {rate:,.0f} rounds/s  {left:,.0f} s left ")
        if done == self.total:
            self.stream.write("\n")
        self.stream.flush()


@contextlib.contextmanager
def _stop_on_interrupt(loop):
    """First Ctrl-C: finish the current round, then stop (outputs stay consistent).

    A second Ctrl-C interrupts at once. Only the main thread can install signal handlers;
    elsewhere (worker threads) the default behaviour stays.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        if loop.stop_requested:
            raise KeyboardInterrupt
        loop.stop_requested = True

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def build_workload(scenario, population, streams):
    return Saturated(population.system.k)


def simulate(scenario, out=None, *, results_dir=None, progress=False, command_line=None):
    """Run one scenario (a ``Scenario``, a dict or a YAML path) and return its ``Result``.

    ``out``: the output folder (created; must be empty). Without it, a new folder under
    ``results_dir`` when given, else a temporary folder that lives as long as the Result.
    ``progress``: print progress on stderr. Ctrl-C stops the run between events and still
    writes valid CSVs and a summary with ``complete: false``.
    """
    if not hasattr(scenario, "devices"):
        scenario = load_scenario(scenario)
    tmp = None
    if out is None and results_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="multispin-")
        out = tmp.name
    folder = output_folder(out, base=results_dir or "results", name=scenario.name, seed=scenario.seed)
    (folder / "scenario.yaml").write_text(dump_scenario_yaml(scenario), encoding="utf-8")

    wall0 = time.perf_counter()
    streams = RandomStreams(scenario.seed)
    population = build_population(scenario, streams.devices)
    system = population.system
    policy = scenario.policy
    controller = make_draft_controller(
        policy.draft, draft_length=population.draft_length, max_draft=policy.max_draft,
        update=policy.draft_update, saa_samples=policy.saa_samples, mode=policy.mode,
    )
    env = simpy.Environment()
    channel = OFDMAChannel(system, streams.fading, scenario.channel.fading, scenario.channel.reciprocal)
    server = EdgeServer(system, make_reactive_policy(policy.mode), streams.policy, streams.acceptance)
    workload = build_workload(scenario, population, streams)
    recorder = Recorder(folder, system.k)
    show = progress and sys.stderr.isatty()
    loop = RoundLoop(env, population, channel, server, controller, workload, streams, recorder,
                     scenario.run.rounds, scenario.run.max_time_s,
                     progress=Progress(scenario.run.rounds) if show else None)
    main = env.process(loop.run(env))
    try:
        with _stop_on_interrupt(loop):
            env.run(until=main)
    finally:
        recorder.close()
    complete = not loop.stop_requested
    wall = time.perf_counter() - wall0
    recorder.write_devices(population)
    summary = recorder.stats.summary()
    summary.update(complete=complete, wall_time_s=wall,
                   rounds_per_s=summary["rounds"] / wall if wall > 0 else 0.0)
    (folder / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    meta = run_metadata(__version__, scenario.seed, wall, command_line,
                        scenario=scenario.name, complete=complete)
    (folder / "run.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return Result(summary, folder, population, scenario, _tmp=tmp)
