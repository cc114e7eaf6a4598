"""The random-waypoint walk against its time-stationary law (renewal-reward theory: Le Boudec
and Vojnovic, "Perfect simulation and stationarity of a class of mobility models", INFOCOM
2005). Seen at an arbitrary late instant, a device is paused at a waypoint with probability
p / (p + E[L] E[1/v]), a waypoint being uniform in the annulus; otherwise it is on a leg chosen
with probability proportional to its duration L / v, uniformly along it. The reference is
sampled from that law directly, with no code of the walk."""
import numpy as np

from multispin_sim.model.mobility import RandomWaypoint

R_MIN, R_MAX, PAUSE, SPEED = 100.0, 500.0, 4.0, (10.0, 40.0)


def _waypoints(rng, n):
    r = np.sqrt(R_MIN ** 2 + rng.random(n) * (R_MAX ** 2 - R_MIN ** 2))
    phi = rng.random(n) * 2.0 * np.pi
    return np.c_[r * np.cos(phi), r * np.sin(phi)]


def _stationary_distances(rng, n):
    a, b = _waypoints(rng, n), _waypoints(rng, n)
    length = np.hypot(*(b - a).T)
    mean_inverse_speed = np.log(SPEED[1] / SPEED[0]) / (SPEED[1] - SPEED[0])
    paused = PAUSE / (PAUSE + length.mean() * mean_inverse_speed)
    leg = rng.choice(n, size=n, p=length / length.sum())   # L / v, v independent of L
    on_leg = a[leg] + rng.random(n)[:, None] * (b[leg] - a[leg])
    at_waypoint = _waypoints(rng, n)
    where = np.where((rng.random(n) < paused)[:, None], at_waypoint, on_leg)
    return np.hypot(*where.T), paused


def test_late_positions_follow_the_time_stationary_law():
    k = 200
    rng = np.random.default_rng(5)
    walk = RandomWaypoint(_waypoints(rng, k), (0.0, 0.0), (R_MIN, R_MAX), SPEED, PAUSE,
                          np.random.default_rng(1))
    # from 100 s on (several legs: the law of the leg under way no longer depends on the
    # start), every 0.5 s for 2,000 s
    times = 100.0 + 0.5 * np.arange(4000)
    dist, still = np.empty((len(times), k)), np.empty((len(times) - 1, k), dtype=bool)
    last = None
    for i, t in enumerate(times):
        pos = walk.advance(t)
        dist[i] = np.hypot(*pos.T)
        if last is not None:
            still[i - 1] = np.all(pos == last, axis=1)
        last = pos.copy()
    ref, paused = _stationary_distances(np.random.default_rng(2), 2_000_000)
    stats = {"mean distance": lambda d: d, "P(d < 150 m)": lambda d: d < 150.0,
             "P(d < 250 m)": lambda d: d < 250.0, "P(d > 400 m)": lambda d: d > 400.0}
    for name, f in stats.items():
        # devices walk independently: the spread of their own time averages gives the error
        per_device = np.mean(f(dist), axis=0)
        se = per_device.std(ddof=1) / np.sqrt(k)
        expected = np.mean(f(ref))
        assert abs(per_device.mean() - expected) < 4.5 * se, (name, per_device.mean(),
                                                               expected, se)
    # a 0.5 s step with no motion lies inside one pause (4 s): a fraction (4 - 0.5) / 4 of the
    # paused time
    per_device = still.mean(axis=0)
    se = per_device.std(ddof=1) / np.sqrt(k)
    expected = paused * (PAUSE - 0.5) / PAUSE
    assert abs(per_device.mean() - expected) < 4.5 * se, (per_device.mean(), expected, se)
