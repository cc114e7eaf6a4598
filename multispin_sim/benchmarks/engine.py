"""Engine throughput (rounds/s) against a bare SimPy loop with the same events, and peak memory;
the engine with Jakes fading against i.i.d. Rayleigh (``jakes_vs_iid``).

The bare loop has the same processes and the same events per round as the engine (K device
processes; a shared round-start event; one drafting timeout each; a barrier; one verification
timeout; a shared verification event; one transmission timeout per rejected device; a barrier)
with fixed durations and no model, policy or records: the engine's cost over it is the cost of
the model, the reactive decision and the CSV records.
"""
import subprocess
import sys
import tempfile
import time
from unittest import mock

import simpy

from .abtest import against, describe, interleaved, records_in_process, scenario_run


class _CountingEnvironment(simpy.Environment):
    scheduled = 0

    def schedule(self, event, priority=1, delay=0):
        self.scheduled += 1
        super().schedule(event, priority, delay)


def bare_loop(env, k, rounds, rejected_per_round):
    """The engine's event pattern with nothing computed: returns the main process."""
    state = {"start": env.event(), "verified": env.event(), "pending": 0, "done": None}

    def fire(name):
        ev = state[name]
        state[name] = env.event()
        ev.succeed()

    def arrive():
        state["pending"] -= 1
        if state["pending"] == 0:
            state["done"].succeed()

    def device(i):
        while True:
            yield state["start"]
            yield env.timeout(0.01 * (1 + i / k))
            arrive()
            yield state["verified"]
            if i < state["n_rej"]:
                yield env.timeout(0.02 * (1 + i / k))
            arrive()

    def server():
        for _ in range(rounds):
            state["n_rej"] = rejected_per_round
            state["pending"], state["done"] = k, env.event()
            fire("start")
            yield state["done"]
            yield env.timeout(0.1)
            state["pending"], state["done"] = k, env.event()
            fire("verified")
            yield state["done"]

    for i in range(k):
        env.process(device(i))
    return env.process(server())


JAKES = {"channel.fading": "jakes", "channel.doppler_hz": 10.0}  # one block per round


def _events_per_round_engine(rounds):
    """Events scheduled per round by the engine (counting environment)."""
    import multispin_sim.engine.simulation as simulation

    envs = []

    class Kept(_CountingEnvironment):   # each environment made, to read its count afterwards
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            envs.append(self)

    with mock.patch.object(simulation.simpy, "Environment", Kept), \
            tempfile.TemporaryDirectory() as tmp:
        run = scenario_run(tmp, {"run.rounds": rounds})
        run()
    return envs[0].scheduled / rounds, run.summary["rejections"] / rounds


def peak_memory_mb(rounds):
    """Peak resident memory (MB) of a separate process running ``rounds`` default rounds, its
    rounds/s, and the most private memory its forked CSV writer held (MB, sampled every 0.1 s;
    0 without a writer, None where /proc cannot say)."""
    # its own peak from VmHWM where there is one: Linux keeps ru_maxrss across execve, so that
    # would report the (larger) benchmark process the child was started from
    code = (
        "import sys, tempfile, resource; import multispin_sim as ms\n"
        "sc = ms.load_scenario(None, overrides={'run.rounds': int(sys.argv[1]), 'name': 'bench'})\n"
        "with tempfile.TemporaryDirectory() as tmp:\n"
        "    r = ms.simulate(sc, out=tmp + '/run')\n"
        "try:\n"
        "    with open('/proc/self/status') as f:\n"
        "        peak = next(int(l.split()[1]) for l in f if l.startswith('VmHWM:')) / 1024\n"
        "except (OSError, StopIteration):\n"
        "    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "print(peak, r.summary['rounds_per_s'])\n"
    )
    p = subprocess.Popen([sys.executable, "-c", code, str(rounds)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    # the writer's own pages, sampled from here: a forked child's resident size counts the
    # pages it shares with the run, and a polling thread in the run would keep it from forking
    writer = 0.0 if sys.platform.startswith("linux") else None
    while p.poll() is None:
        for child in _children(p.pid):
            writer = max(writer, _private_mb(child) or 0.0)
        time.sleep(0.1)
    out, err = p.communicate()
    if p.returncode:
        raise subprocess.CalledProcessError(p.returncode, p.args, out, err)
    peak, rate = out.split()
    return float(peak), float(rate), writer


def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def _private_mb(pid):
    """Memory (MB) process ``pid`` holds of its own (None: it has gone, or no /proc)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            return sum(int(line.split()[1]) for line in f
                       if line.startswith(("Private_Clean:", "Private_Dirty:"))) / 1024
    except OSError:
        return None


def jakes_vs_iid(rounds, pairs):
    """engine/jakes: the default scenario with Jakes fading (f_D = 10 Hz, sampled once per
    round) against i.i.d. Rayleigh, interleaved, CSV formatting in-process."""
    with tempfile.TemporaryDirectory() as tmp:
        return against({}, {"jakes": JAKES}, rounds, pairs, tmp, "i.i.d. Rayleigh")["jakes"]


def run(quick=False):
    """engine/bare, both on this core with CSV formatting in-process, interleaved (A B B A ...)."""
    rounds = 2_000 if quick else 10_000
    pairs = 3 if quick else 5
    k = 20
    events, rejected = _events_per_round_engine(min(rounds, 2_000))
    n_rej = int(round(rejected))
    env = _CountingEnvironment()
    bare_loop(env, k, 1000, n_rej)
    env.run()
    bare_events = env.scheduled / 1000

    def bare():
        env = simpy.Environment()
        env.run(until=bare_loop(env, k, rounds, n_rej))

    with tempfile.TemporaryDirectory() as tmp, records_in_process():   # one core
        scenario_run(tmp, {"run.rounds": 200})()   # warm
        res = interleaved(bare, scenario_run(tmp, {"run.rounds": rounds}), pairs)
    print(f"engine: default scenario K={k}, gamma=4, optimal policy, full records formatted "
          f"in-process, {rounds:,} rounds; {events:.1f} events/round, {rejected:.2f} rejected "
          f"devices/round; bare SimPy loop with the same pattern: {bare_events:.1f} events/round")
    describe("bare", "engine", res, units=rounds)
    ratio_wall, ratio_cpu = 1.0 / res["ratio_wall"], 1.0 / res["ratio_cpu"]
    print(f"  engine/bare = {ratio_wall:.2f} (wall), {ratio_cpu:.2f} (CPU)")
    figures = {"rounds": rounds, "events_per_round": events, "bare_events_per_round": bare_events,
               "ratio": ratio_wall, "ratio_cpu": ratio_cpu, "pairs": res}
    print("engine/jakes: channel.fading jakes (f_D = 10 Hz, one sample per round) against "
          "i.i.d. Rayleigh")
    figures["jakes"] = jakes_vs_iid(rounds, pairs)
    if not quick:
        mem_rounds = 1_000_000
        t0 = time.perf_counter()
        mem, rate, writer_mem = peak_memory_mb(mem_rounds)
        writer = "" if writer_mem is None else (
            f"; its forked CSV writer held at most {writer_mem:.0f} MB of its own")
        print(f"peak memory of a {mem_rounds:,}-round run: {mem:.0f} MB{writer} "
              f"({time.perf_counter() - t0:.0f} s, {rate:,.0f} rounds/s)")
        figures.update(peak_memory_mb=mem, writer_memory_mb=writer_mem, memory_rounds=mem_rounds)
    return figures
