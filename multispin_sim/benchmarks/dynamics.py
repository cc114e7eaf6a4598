"""Engine throughput (rounds/s) with queueing and fading dynamics against the saturated default.

Cases (default scenario, K = 20, gamma = 4, optimal policy, full records), each run once to warm
up and then timed end to end (best of ``repeats``):

- saturated, i.i.d. Rayleigh per round (the paper; the reference);
- saturated, Gauss-Markov fading per round (f_D = 10 Hz);
- Poisson arrivals (0.08 requests/s per device, 64 tokens) + Gauss-Markov per round;
- the same with 42 ms fading blocks (pedestrian, 10 Hz): corrections span several blocks;
- the same with 2.1 ms fading blocks (vehicular, 200 Hz);
- saturated with random-waypoint mobility (1.4 m/s) and 8 dB shadowing.
"""
import contextlib
import io
import tempfile
import time

from ..scenario import load_scenario

POISSON = {"workload.arrivals": "poisson", "workload.rate_per_s": 0.08}
GM = {"channel.fading": "gauss-markov", "channel.doppler_hz": 10.0}
CASES = {
    "saturated, i.i.d. Rayleigh": {},
    "saturated, Gauss-Markov": GM,
    "Poisson + Gauss-Markov": {**POISSON, **GM},
    "Poisson + Gauss-Markov, 42 ms blocks": {**POISSON, **GM, "channel.coherence_time_ms": 42.0},
    "Poisson + Gauss-Markov, 2.1 ms blocks": {**POISSON, **GM, "channel.doppler_hz": 200.0,
                                              "channel.coherence_time_ms": 2.1},
    "saturated, mobility + shadowing": {"mobility.model": "random-waypoint",
                                        "channel.shadowing_db": 8.0},
}


def _rate(overrides, rounds, repeats):
    from ..engine.simulation import simulate

    sc = load_scenario(None, overrides={**overrides, "run.rounds": rounds, "name": "bench"})
    best = 0.0
    # the runs' own warnings (a deep-fade round in a short run) are not benchmark output
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stderr(io.StringIO()):
        simulate(sc, out=f"{tmp}/warm")
        for i in range(repeats):
            t0 = time.perf_counter()
            simulate(sc, out=f"{tmp}/run{i}")
            best = max(best, rounds / (time.perf_counter() - t0))
    return best


def run(quick=False):
    rounds = 2_000 if quick else 20_000
    repeats = 2 if quick else 3
    figures = {}
    ref = None
    for name, overrides in CASES.items():
        rate = _rate(overrides, rounds, repeats)
        ref = rate if ref is None else ref
        figures[name] = rate
        print(f"{name:40s} {rate:8,.0f} rounds/s  ({rate / ref:.2f} x saturated i.i.d.)")
    print(f"({rounds:,} rounds per run, end to end, best of {repeats}; K = 20, gamma = 4)")
    return figures
