"""Stochastic-geometry oracles, run on the simulator's own components (the PPP layout, the
Rayleigh fading draw, the association rules, the SIR, the A3 trigger, the random-waypoint walk):

- Andrews, Baccelli & Ganti (IEEE Trans. Commun. 59(11), 2011), Theorem 2 with path-loss
  exponent 4, interference-limited, reuse 1: the typical device, served by its nearest server
  of a PPP, has P(SIR > T) = 1 / (1 + sqrt(T) (pi/2 - arctan(1 / sqrt(T)))), whatever the density.
- Lin, Ganti, Fleming & Andrews (IEEE Trans. Wireless Commun. 12(9), 2013): a device moving at
  speed v through the Voronoi cells of a PPP of density lambda hands over 4 v sqrt(lambda) / pi
  times per second (no hysteresis). The expected number of Voronoi boundaries a fixed curve
  crosses is its length times 2/pi times the boundary length per unit area 2 sqrt(lambda), so
  the rate holds for any path independent of the servers, the random waypoint's legs included.
"""
import math

import numpy as np
from scipy import stats

from multispin_sim.model.association import ASSOCIATION_RULES, AssociationView
from multispin_sim.model.cells import PoissonServers, link_distances
from multispin_sim.model.handover import A3Trigger
from multispin_sim.model.mobility import RandomWaypoint
from multispin_sim.model.pathloss_3gpp import PowerLaw


def sir_of_serving(received_w, serving):
    """SIR (P,) of each point's serving link: its received power (P, S) over the sum of the
    others (every other server transmitting: reuse 1, full load)."""
    signal = np.take_along_axis(received_w, np.asarray(serving)[:, None], axis=1)[:, 0]
    return signal / (received_w.sum(axis=1) - signal)


def abg_coverage(t):
    s = math.sqrt(t)
    return 1.0 / (1.0 + s * (math.pi / 2 - math.atan(1.0 / s)))


def test_sir_coverage_of_the_typical_device_matches_andrews_baccelli_ganti():
    lam = 1e-5            # servers per m^2 (the law does not depend on it)
    mean_servers = 1500   # disc radius: the interference beyond it is ~1/1500 of the signal
    radius = math.sqrt(mean_servers / (lam * math.pi))
    pathloss = PowerLaw(0.0, 4.0)
    nearest = ASSOCIATION_RULES.make("nearest")
    rng = np.random.default_rng(2011)
    thresholds_db = np.arange(-10, 21, 2.5)
    t_lin = 10 ** (thresholds_db / 10)
    trials = 6000
    covered = np.zeros(t_lin.size)
    for _ in range(trials):
        servers = PoissonServers(rng, lam, radius).sites
        d = link_distances(np.zeros((1, 2)), servers)
        received = pathloss.mean_gain(d, True) * rng.standard_exponential(d.shape)
        serving = nearest.choose(AssociationView(received, d))
        covered += sir_of_serving(received, serving)[0] > t_lin
    p_hat = covered / trials
    for t, p in zip(t_lin, p_hat):
        ref = abg_coverage(t)
        # 99.99% binomial interval (13 thresholds)
        half = 3.9 * math.sqrt(ref * (1 - ref) / trials)
        assert abs(p - ref) < half, (10 * math.log10(t), p, ref, half)



def test_handover_rate_matches_lin_ganti_fleming_andrews():
    lam = 1e-4            # one server per 100 m x 100 m
    v = 10.0              # m/s, constant (the waypoint speed range (v, v), no pause)
    walk_radius = 400.0   # the walk stays in this disc; servers out to 700 m cover it
    dt = 0.05             # a measurement every 0.5 m of path (corner cuts ~0.6% of crossings)
    duration = 60.0
    k = 40
    rates = []
    for seed in range(16):
        rng = np.random.default_rng([28, seed])
        servers = PoissonServers(rng, lam, 700.0).sites
        start = rng.uniform(-200, 200, size=(k, 2))
        walk = RandomWaypoint(start, (0.0, 0.0), (0.0, walk_radius), (v, v), 0.0, rng)
        power = PowerLaw(0.0, 3.5)

        def rsrp_db(positions):
            d = np.hypot(positions[:, None, 0] - servers[None, :, 0],
                         positions[:, None, 1] - servers[None, :, 1])
            return power.gain_db(d, True)

        first = rsrp_db(walk.advance(0.0))
        trigger = A3Trigger(ASSOCIATION_RULES.make("max-rsrp").choose(
            AssociationView(first, first)), hysteresis_db=0.0, ttt_s=0.0)
        for i in range(1, int(round(duration / dt)) + 1):
            trigger.step(i * dt, rsrp_db(walk.advance(i * dt)))
        rates.append(trigger.handovers / (k * duration))
    rates = np.array(rates)
    expected = 4 * v * math.sqrt(lam) / math.pi
    half = stats.t.ppf(0.9995, rates.size - 1) * rates.std(ddof=1) / math.sqrt(rates.size)
    assert abs(rates.mean() - expected) < half, (rates.mean(), expected, half)



def test_hysteresis_and_time_to_trigger_hand_over_less_and_count_ping_pongs():
    # a device between two servers whose RSRP difference flips sign every step
    diff = np.array([1.0, -1.0] * 10)
    rsrp = np.column_stack([np.zeros(20), diff])
    plain, hyst, ttt = A3Trigger([0]), A3Trigger([0], hysteresis_db=2.0), A3Trigger([0], ttt_s=0.15)
    for i, row in enumerate(rsrp):
        for trig in (plain, hyst, ttt):
            trig.step(i * 0.1, row[None, :])
    assert plain.handovers == 20 and plain.ping_pongs == 19
    assert hyst.handovers == 0 and ttt.handovers == 0
