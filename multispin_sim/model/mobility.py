"""Device mobility (pure numpy): ``mobility.model`` names a class of ``MOBILITY_MODELS``.

- ``none``: the devices stay where the topology put them (``moves`` False: the engine keeps
  the large-scale gains of the population).
- ``random-waypoint``: below.

A model that moves builds itself with ``from_scenario(scenario, positions, centre, region_m,
rng)`` and answers ``advance(t) -> (K, 2)`` positions and ``travelled`` (K,) metres so far, and
``travelled_at(t)``: the metres walked by any instant t, without moving (the clock of a fading
process that follows the devices' speeds, ``channel.doppler`` 'speed'; ``Wavelengths``).

Random waypoint:
Each device walks in a straight line at its leg's speed towards a waypoint drawn uniformly (in
area) in an annulus around the server, pauses there ``pause_s`` seconds, draws the next waypoint
and speed, and so on. ``advance(t)`` moves every device to where it is at time ``t`` (any number
of legs may end in between). Each device draws its legs from a stream of its own, spawned from
the generator given at construction, so a trajectory depends on the seed only, not on when
positions are asked for; a long gap (a round of hours) costs vectorised draws, not a step per
leg. The walk keeps the leg before the one under way, so ``travelled_at`` is exact from that
leg's departure on (and ahead, drawing the legs not begun yet), and through the pause before
it; earlier still, that leg's speed is extended backwards (before t = 0: the first leg's, with
no pause), which errs only when two legs and a pause end between the instant asked and the
walk's clock.
"""
import numpy as np

from .pathloss import pathloss_gain
from .registry import Registry
from .topology import annulus_positions

MOBILITY_MODELS = Registry("mobility model")

MIN_DISTANCE_M = 1.0  # the path-loss reference distance: not extrapolated below it


def clamped_pathloss_gain(distance_m, ref_gain_db=-30.0, exponent=3.5):
    """Path loss with the distance clamped to >= 1 m (a moving device may pass the server)."""
    return pathloss_gain(np.maximum(np.asarray(distance_m, dtype=float), MIN_DISTANCE_M),
                         ref_gain_db, exponent)


class LegLimit(RuntimeError):
    """A device would walk more legs than ``max_legs`` between two position updates."""


@MOBILITY_MODELS.register("none")
class Static:
    """No movement."""

    moves = False


@MOBILITY_MODELS.register("random-waypoint")
class RandomWaypoint:
    """Positions of K devices under the random-waypoint model.

    positions: (K, 2) start positions; centre: the server position; region_m: (r_min, r_max) of
    the waypoint annulus; speed_mps: (low, high) speed range, one speed per leg, uniform;
    pause_s: pause at each waypoint; rng: the mobility stream, from which each device's own
    stream is spawned at construction; max_legs: legs a device may walk between two calls of
    ``advance`` (``LegLimit`` beyond).
    """

    moves = True
    _FIRST_BATCH = 16       # legs drawn at once for a device; doubled while a gap needs more
    _MAX_BATCH = 1 << 16

    @classmethod
    def from_scenario(cls, scenario, positions, centre, region_m, rng):
        """The walk of the ``mobility`` keys from ``positions`` around ``centre``."""
        m = scenario.mobility
        speed = m.speed_mps if isinstance(m.speed_mps, tuple) else (m.speed_mps, m.speed_mps)
        return cls(positions, centre, region_m, speed, m.pause_s, rng,
                   max_legs=scenario.limits.max_legs_per_round)

    def __init__(self, positions, centre, region_m, speed_mps, pause_s, rng, max_legs=None):
        if not 0 < speed_mps[0] <= speed_mps[1]:
            raise ValueError(f"speeds {speed_mps} not allowed; expected 0 < low <= high")
        self.pos = np.array(positions, dtype=float)
        self.k = k = self.pos.shape[0]
        self.centre = np.asarray(centre, dtype=float)
        self.r_min, self.r_max = float(region_m[0]), float(region_m[1])
        self.speed_lo, self.speed_hi = float(speed_mps[0]), float(speed_mps[1])
        self.pause_s = float(pause_s)
        self.max_legs = max_legs
        seeds = np.random.SeedSequence(rng.integers(0, 2**63, size=4, dtype=np.uint64))
        self._rngs = [np.random.default_rng(s) for s in seeds.spawn(k)]
        self.t = 0.0
        self.travelled = np.zeros(k)
        # each device's current leg: from a to b at speed v, departing at dep; it arrives
        # dep + length / v and the next leg departs at ``end`` (after the pause); ``done``:
        # metres of the legs before it; ``queued``: legs drawn and not yet begun
        self._a, self._b = self.pos.copy(), self.pos.copy()
        self._v, self._length = np.ones(k), np.zeros(k)
        self._dep, self._end = np.zeros(k), np.zeros(k)
        self._done = np.zeros(k)
        self._queued = [None] * k
        self._ahead = [None] * k   # legs ``travelled_at`` drew beyond the queue, for ``_draw``
        self._pdep, self._pv, self._plen = np.zeros(k), np.ones(k), np.zeros(k)  # previous leg
        for i in range(k):
            self._catch_up(i, 0.0)
        # before t = 0: a leg of no length departing with the first one at its speed
        self._pdep, self._pv, self._plen = self._dep.copy(), self._v.copy(), np.zeros(k)

    def _draw(self, i, n):
        """Device i's next ``n`` legs (waypoints (n, 2), speeds (n,)): first those
        ``travelled_at`` drew ahead, then new ones, so the walk's batches (and the rounding of
        their sums of leg times) are the same whether or not anything looked ahead."""
        ahead = self._ahead[i]
        if ahead is None:
            return self._fresh(i, n)
        targets, speed = ahead
        self._ahead[i] = (targets[n:], speed[n:]) if len(speed) > n else None
        if len(speed) >= n:
            return targets[:n], speed[:n]
        more, fast = self._fresh(i, n - len(speed))
        return np.vstack([targets, more]), np.concatenate([speed, fast])

    def _fresh(self, i, n):
        """``n`` new legs of device i from its stream: three uniforms per leg (radius, bearing,
        speed) in order, so the legs do not depend on how many are drawn at once."""
        u = self._rngs[i].random((n, 3))
        r = np.sqrt(self.r_min ** 2 + u[:, 0] * (self.r_max ** 2 - self.r_min ** 2))
        speed = self.speed_lo + (self.speed_hi - self.speed_lo) * u[:, 2]
        return annulus_positions(r, 2.0 * np.pi * u[:, 1], self.centre), speed

    def _catch_up(self, i, t):
        """Make device i's current leg the one under way at time t (any number of legs may
        end before t: whole batches are walked at once)."""
        n, legs = self._FIRST_BATCH, 0
        while self._end[i] <= t:
            if self._queued[i] is None:
                self._queued[i] = self._draw(i, n)
                n = min(2 * n, self._MAX_BATCH)
            targets, speed = self._queued[i]
            starts = np.vstack([self._b[i], targets[:-1]])
            length = np.hypot(*(targets - starts).T)
            ends = self._end[i] + np.cumsum(length / speed + self.pause_s)
            j = int(np.searchsorted(ends, t, side="right"))   # the first leg still under way
            if j == len(ends) and ends[-1] == self._end[i]:
                self._end[i] = np.inf   # zero-length legs without pauses: it stays where it is
                break
            j = min(j, len(ends) - 1)
            legs += j + 1
            if self.max_legs is not None and legs > self.max_legs:
                raise LegLimit(f"device {i} would walk more than {self.max_legs:,} waypoint "
                               f"legs between t = {self.t:.6g} s and t = {t:.6g} s")
            if j:
                self._pdep[i] = ends[j - 2] if j > 1 else self._end[i]
                self._pv[i], self._plen[i] = speed[j - 1], length[j - 1]
            else:
                self._pdep[i], self._pv[i] = self._dep[i], self._v[i]
                self._plen[i] = self._length[i]
            self._done[i] += self._length[i] + length[:j].sum()
            self._a[i], self._b[i] = starts[j], targets[j]
            self._v[i], self._length[i] = speed[j], length[j]
            self._dep[i] = ends[j - 1] if j else self._end[i]
            self._end[i] = ends[j]
            self._queued[i] = (targets[j + 1:], speed[j + 1:]) if j + 1 < len(ends) else None

    def advance(self, t):
        """Move every device to its position at time ``t`` (>= the last time); returns (K, 2)."""
        if t <= self.t:
            return self.pos
        for i in np.flatnonzero(self._end <= t):
            self._catch_up(i, t)
        walked = np.maximum(t - self._dep, 0.0) * self._v
        frac = np.minimum(np.divide(walked, self._length, out=np.ones(self.k),
                                    where=self._length > 0), 1.0)
        self.pos = self._a + (self._b - self._a) * frac[:, None]
        self.travelled = self._done + self._length * frac
        self.t = t
        return self.pos

    # -- the distance walked by any instant (pure: the trajectory does not change) ---------------
    def _queue_until(self, i, t):
        """Device i's legs not begun yet (targets, speeds, lengths): the queued ones, then those
        drawn ahead (``_ahead``, which ``_draw`` hands to the walk later), drawn on until they
        end after ``t``; the walk's own queue is left as it is."""
        parts = [p for p in (self._queued[i], self._ahead[i]) if p is not None]
        targets = np.vstack([p[0] for p in parts]) if parts else np.empty((0, 2))
        speed = np.concatenate([p[1] for p in parts]) if parts else np.empty(0)
        n, before = self._FIRST_BATCH, None
        while True:
            starts = np.vstack([self._b[i], targets[:-1]])
            length = np.hypot(*(targets - starts).T)
            span = float(np.sum(length / speed)) + self.pause_s * len(speed)
            if self._end[i] + span > t or span == before:   # (no time: legs of no length)
                break
            if self.max_legs is not None and len(speed) > self.max_legs:
                raise LegLimit(f"device {i} would walk more than {self.max_legs:,} waypoint "
                               f"legs between t = {self.t:.6g} s and t = {t:.6g} s")
            more, fast = self._fresh(i, n)
            ahead = self._ahead[i]
            self._ahead[i] = (more, fast) if ahead is None else (
                np.vstack([ahead[0], more]), np.concatenate([ahead[1], fast]))
            targets, speed = np.vstack([targets, more]), np.concatenate([speed, fast])
            n, before = min(2 * n, self._MAX_BATCH), span
        return targets, speed, length

    def _knots(self, i, t_max):
        """(times, metres) of device i's walk as a piecewise-linear function: the previous
        leg, the one under way, and the queued legs up to one that ends after ``t_max``."""
        pdep, pv, plen = self._pdep[i], self._pv[i], self._plen[i]
        dep, v, length, done = self._dep[i], self._v[i], self._length[i], self._done[i]
        ts = [pdep, pdep + plen / pv, dep, dep + length / v]
        ss = [done - plen, done, done, done + length]
        if t_max >= self._end[i]:
            _, speed, legs = self._queue_until(i, t_max)
            walk = legs / speed
            deps = self._end[i] + np.concatenate(([0.0], np.cumsum(walk + self.pause_s)[:-1]))
            before = done + length + np.concatenate(([0.0], np.cumsum(legs)[:-1]))
            ts = np.concatenate([ts, np.column_stack([deps, deps + walk]).ravel()])
            ss = np.concatenate([ss, np.column_stack([before, before + legs]).ravel()])
        return np.asarray(ts, dtype=float), np.asarray(ss, dtype=float)

    def _one(self, i, t):
        """Metres device i has walked by the time(s) ``t`` (any shape)."""
        t = np.asarray(t, dtype=float)
        if t.ndim == 0 and self._dep[i] <= t < self._end[i]:   # the leg under way
            return self._done[i] + min((float(t) - self._dep[i]) * self._v[i], self._length[i])
        ts, ss = self._knots(i, float(np.max(t, initial=-np.inf)))
        s = np.interp(t, ts, ss)
        # before the previous leg: the pause before it (every leg but the first, which departs
        # at t = 0), then its speed extended backwards (module docstring)
        back = ts[0] - t
        if ts[0] > 0:
            back = np.maximum(back - self.pause_s, 0.0)
        return np.where(t < ts[0], ss[0] - back * self._pv[i], s)

    def travelled_at(self, t, device=None):
        """Metres s_k(t) each device has walked by the time(s) ``t`` (0 at t = 0), without
        moving the walk (``advance`` and ``travelled`` are unchanged): t.shape + (K,), or
        t.shape for one ``device``; exact from the previous leg's departure on, ahead included
        (module docstring)."""
        if device is not None:
            s = self._one(int(device), t)
            return float(s) if np.ndim(s) == 0 else s
        if np.ndim(t) == 0:
            t = float(t)
            s = self._done + np.minimum(np.maximum(t - self._dep, 0.0) * self._v, self._length)
            for i in np.flatnonzero((t < self._dep) | (t >= self._end)).tolist():
                s[i] = self._one(i, t)
            return s
        t = np.asarray(t, dtype=float)
        return np.stack([self._one(i, t) for i in range(self.k)], axis=-1)


class Wavelengths:
    """The distance each device of ``walk`` has travelled, in carrier wavelengths: the clock
    of a Jakes process whose Doppler follows the device's speed (``model.jakes``): called
    ``(t, device=None)`` like ``travelled_at``."""

    def __init__(self, walk, wavelength_m):
        self.walk, self.wavelength_m = walk, float(wavelength_m)

    def __call__(self, t, device=None):
        return self.walk.travelled_at(t, device) / self.wavelength_m
