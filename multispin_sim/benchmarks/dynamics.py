"""Engine throughput (rounds/s) with queueing and fading dynamics against the saturated default.

Cases (default scenario, K = 20, gamma = 4, optimal policy, full records), each against the
saturated default with i.i.d. Rayleigh fading per round (the paper), interleaved
(``abtest.against``):

- saturated, Gauss-Markov fading per round (f_D = 10 Hz);
- Poisson arrivals (0.08 requests/s per device, 64 tokens) + Gauss-Markov per round;
- the same with 42 ms fading blocks (pedestrian, 10 Hz): corrections span several blocks;
- the same with 2.1 ms fading blocks (vehicular, 200 Hz);
- saturated with random-waypoint mobility (1.4 m/s) and 8 dB shadowing.
"""
import tempfile

from .abtest import against

POISSON = {"workload.arrivals": "poisson", "workload.rate_per_s": 0.08}
GM = {"channel.fading": "gauss-markov", "channel.doppler_hz": 10.0}
CASES = {
    "saturated, Gauss-Markov": GM,
    "Poisson + Gauss-Markov": {**POISSON, **GM},
    "Poisson + Gauss-Markov, 42 ms blocks": {**POISSON, **GM, "channel.coherence_time_ms": 42.0},
    "Poisson + Gauss-Markov, 2.1 ms blocks": {**POISSON, **GM, "channel.doppler_hz": 200.0,
                                              "channel.coherence_time_ms": 2.1},
    "saturated, mobility + shadowing": {"mobility.model": "random-waypoint",
                                        "channel.shadowing_db": 8.0},
}


def run(quick=False):
    rounds = 1_000 if quick else 10_000
    with tempfile.TemporaryDirectory() as tmp:
        return against({}, CASES, rounds, 3, tmp, "saturated i.i.d. Rayleigh")
