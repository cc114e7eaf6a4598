"""Device mobility (pure numpy): ``mobility.model`` names a class of ``MOBILITY_MODELS``.

- ``none``: the devices stay where the topology put them (``moves`` False: the engine keeps
  the large-scale gains of the population).
- ``random-waypoint``: below.

A model that moves builds itself with ``from_scenario(scenario, positions, centre, region_m,
rng)`` and answers ``advance(t) -> (K, 2)`` positions and ``travelled`` (K,) metres so far.

Random waypoint:
Each device walks in a straight line at its leg's speed towards a waypoint drawn uniformly (in
area) in an annulus around the server, pauses there ``pause_s`` seconds, draws the next waypoint
and speed, and so on. ``advance(t)`` moves every device to where it is at time ``t`` (any number
of legs may end in between). All draws come from the generator given at construction, in the
order legs end (ties by device index), so a trajectory depends on the seed only.
"""
import numpy as np

from .pathloss import pathloss_gain
from .registry import Registry
from .topology import uniform_in_annulus

MOBILITY_MODELS = Registry("mobility model")

MIN_DISTANCE_M = 1.0  # the path-loss reference distance: not extrapolated below it


def clamped_pathloss_gain(distance_m, ref_gain_db=-30.0, exponent=3.5):
    """Path loss with the distance clamped to >= 1 m (a moving device may pass the server)."""
    return pathloss_gain(np.maximum(np.asarray(distance_m, dtype=float), MIN_DISTANCE_M),
                         ref_gain_db, exponent)


@MOBILITY_MODELS.register("none")
class Static:
    """No movement."""

    moves = False


@MOBILITY_MODELS.register("random-waypoint")
class RandomWaypoint:
    """Positions of K devices under the random-waypoint model.

    positions: (K, 2) start positions; centre: the server position; region_m: (r_min, r_max) of
    the waypoint annulus; speed_mps: (low, high) speed range, one speed per leg, uniform;
    pause_s: pause at each waypoint; rng: the mobility stream.
    """

    moves = True

    @classmethod
    def from_scenario(cls, scenario, positions, centre, region_m, rng):
        """The walk of the ``mobility`` keys from ``positions`` around ``centre``."""
        m = scenario.mobility
        speed = m.speed_mps if isinstance(m.speed_mps, tuple) else (m.speed_mps, m.speed_mps)
        return cls(positions, centre, region_m, speed, m.pause_s, rng)

    def __init__(self, positions, centre, region_m, speed_mps, pause_s, rng):
        if not 0 < speed_mps[0] <= speed_mps[1]:
            raise ValueError(f"speeds {speed_mps} not allowed; expected 0 < low <= high")
        self.pos = np.array(positions, dtype=float)
        self.k = self.pos.shape[0]
        self.centre = np.asarray(centre, dtype=float)
        self.r_min, self.r_max = float(region_m[0]), float(region_m[1])
        self.speed_lo, self.speed_hi = float(speed_mps[0]), float(speed_mps[1])
        self.pause_s = float(pause_s)
        self.rng = rng
        self.t = 0.0
        self.travelled = np.zeros(self.k)
        self.target = np.empty((self.k, 2))
        self.speed = np.empty(self.k)
        self.pause_until = np.full(self.k, -np.inf)
        self._new_legs(np.arange(self.k))

    def _new_legs(self, idx):
        n = idx.size
        self.target[idx] = uniform_in_annulus(self.rng, n, self.r_min, self.r_max, self.centre)
        self.speed[idx] = self.speed_lo + (self.speed_hi - self.speed_lo) * self.rng.random(n)

    def advance(self, t):
        """Move every device to its position at time ``t`` (>= the last time); returns (K, 2)."""
        while self.t < t:
            # time each device still needs to reach its waypoint (after any pause)
            start = np.maximum(self.pause_until, self.t)
            delta = self.target - self.pos
            left = np.hypot(delta[:, 0], delta[:, 1])
            arrive = start + left / self.speed
            step_end = min(float(arrive.min()), t)
            # the share of its leg's rest each device walks by step_end (all of it when none)
            walked = np.maximum(step_end - start, 0.0) * self.speed
            frac = np.minimum(np.divide(walked, left, out=np.ones(self.k), where=left > 0), 1.0)
            move = delta * frac[:, None]
            self.pos += move
            self.travelled += np.hypot(move[:, 0], move[:, 1])
            self.t = step_end
            done = np.flatnonzero(arrive <= step_end)
            if done.size:
                self.pos[done] = self.target[done]
                self.pause_until[done] = step_end + self.pause_s
                self._new_legs(done)
        return self.pos
