"""Which server each device is attached to: ``cells.association`` names a rule of
``ASSOCIATION_RULES`` (pure numpy), re-evaluated at round boundaries.

A rule answers ``choose(view) -> (K,)`` server indices from an ``AssociationView``: the
long-term received power of every device at every server (transmit power times the large-scale
gain, no fast fading: RSRP), the 2-D distances, and each server's compute (its verification
cost T0_s + n T1_s for a batch of n) and band.

At the drop (``view.serving`` None) the rules place every device. At a re-evaluation the view
also holds each device's server now (``serving``) and which devices may move (``movable``):
the loads n_s are the devices attached now, and each movable device in turn (strongest first)
moves to the server of least cost given the others where they are (its own server counted
without it), only when that is strictly cheaper than staying, so a rule whose cost does not
depend on the loads (max-rsrp, nearest) keeps static devices where they are.

- ``max-rsrp``: the strongest long-term received power (ties: the lower server index).
- ``nearest``: the shortest distance (with a power-law path loss and no shadowing, the same
  server as ``max-rsrp``).
- ``load-aware``: devices in order of their best RSRP, strongest first, each takes, among the
  servers within ``range_db`` of its best RSRP, the one whose batch would verify fastest with it
  added, T0_s + (n_s + 1) T1_s, counting the devices already placed (ties: the stronger server).
- ``joint``: radio plus compute. In the same order, each device takes the server minimising
  its expected round time there: verification T0_s + (n_s + 1) T1_s plus the time to send one
  correction, ``bits`` over an equal share b = B_s / (n_s + 1) of that server's band at the
  long-term SINR on that share with every co-channel server transmitting (fully loaded). Each
  server spreads its power over its band, so on the share the signal is RSRP_s b / B_s, a
  co-channel server j adds RSRP_j b / B_j and the noise is N0 b: the SINR is
  (RSRP_s / B_s) / (N0 + sum over co-channel j of RSRP_j / B_j), the same for any share.
  ``view.cochannel`` says which servers share a sub-band (None: all, reuse 1).
"""
import dataclasses

import numpy as np

from .registry import Registry

ASSOCIATION_RULES = Registry("association rule")


@dataclasses.dataclass
class AssociationView:
    """What a rule sees. rsrp_w (K, S); distance_m (K, S); verify_fixed_s, verify_per_device_s,
    bandwidth_hz (S,); noise_psd_w_hz (N0); bits: one correction's payload; cochannel (S, S),
    ``model.sinr.cochannel``."""

    rsrp_w: np.ndarray
    distance_m: np.ndarray
    verify_fixed_s: np.ndarray = None
    verify_per_device_s: np.ndarray = None
    bandwidth_hz: np.ndarray = None
    noise_psd_w_hz: float = 0.0
    bits: float = 0.0
    serving: np.ndarray = None   # (K,) the servers now (a re-evaluation), None at the drop
    movable: np.ndarray = None   # (K,) bool: the devices a re-evaluation may move (None: all)
    cochannel: np.ndarray = None   # (S, S) bool: j interferes at i (None: every other one)

    @property
    def servers(self):
        return self.rsrp_w.shape[1]


class AssociationRule:
    """``choose(view) -> (K,)`` server indices."""

    @classmethod
    def from_scenario(cls, scenario):
        return cls()

    def choose(self, view):
        raise NotImplementedError

    def reevaluate(self, view):
        """The servers after a re-evaluation (``view.serving`` set): a rule whose choice does
        not depend on the loads moves a device only when its own choice changed."""
        chosen = self.choose(dataclasses.replace(view, serving=None, movable=None))
        keep = ~view.movable if view.movable is not None else np.zeros(len(chosen), bool)
        return np.where(keep, view.serving, chosen)


@ASSOCIATION_RULES.register("max-rsrp")
class MaxRsrp(AssociationRule):
    def choose(self, view):
        return np.argmax(view.rsrp_w, axis=1)


@ASSOCIATION_RULES.register("nearest")
class Nearest(AssociationRule):
    def choose(self, view):
        return np.argmin(view.distance_m, axis=1)


class Greedy(AssociationRule):
    """Devices placed one by one, strongest best-RSRP first, each on the server of least cost
    given the devices already placed (ties: the larger RSRP)."""

    def order(self, view):
        return np.argsort(-view.rsrp_w.max(axis=1), kind="stable")

    def cost(self, view, k, counts):
        raise NotImplementedError

    def reevaluate(self, view):
        """Best response to the loads now: each movable device, strongest first, leaves its
        server for the cheapest other one when that is strictly cheaper (loads updated)."""
        serving = np.array(view.serving, dtype=np.int64)
        counts = np.bincount(serving, minlength=view.servers).astype(float)
        movable = (np.ones(len(serving), bool) if view.movable is None
                   else np.asarray(view.movable, bool))
        for k in self.order(view):
            if not movable[k]:
                continue
            own = serving[k]
            counts[own] -= 1.0   # the others as they are
            cost = self.cost(view, k, counts)
            best = np.lexsort((-view.rsrp_w[k], cost))[0]
            if cost[best] < cost[own]:
                serving[k] = best
            counts[serving[k]] += 1.0
        return serving

    def choose(self, view):
        k_total, s = view.rsrp_w.shape
        counts = np.zeros(s)
        out = np.zeros(k_total, dtype=np.int64)
        for k in self.order(view):
            cost = self.cost(view, k, counts)
            # lexicographic: least cost, then strongest RSRP
            best = np.lexsort((-view.rsrp_w[k], cost))[0]
            out[k] = best
            counts[best] += 1
        return out

    @staticmethod
    def verify_time(view, counts):
        return view.verify_fixed_s + (counts + 1.0) * view.verify_per_device_s


@ASSOCIATION_RULES.register("load-aware")
class LoadAware(Greedy):
    """The fastest batch among the servers within ``range_db`` of the best RSRP."""

    def __init__(self, range_db=6.0):
        self.range = 10.0 ** (-float(range_db) / 10.0)

    @classmethod
    def from_scenario(cls, scenario):
        return cls(scenario.cells.association_range_db)

    def cost(self, view, k, counts):
        rsrp = view.rsrp_w[k]
        return np.where(rsrp >= self.range * rsrp.max(), self.verify_time(view, counts), np.inf)


@ASSOCIATION_RULES.register("joint")
class Joint(Greedy):
    """Verification plus one correction's airtime at the long-term SINR of an equal band share."""

    def cost(self, view, k, counts):
        rsrp = view.rsrp_w[k]
        share = view.bandwidth_hz / (counts + 1.0)
        co = view.cochannel
        if co is None:
            co = ~np.eye(rsrp.size, dtype=bool)
        psd = rsrp / view.bandwidth_hz   # W/Hz: each server's power over its band
        sinr = psd / (view.noise_psd_w_hz + np.asarray(co, dtype=float) @ psd)
        with np.errstate(divide="ignore"):
            airtime = view.bits / (share * np.log2(1.0 + sinr))
        return self.verify_time(view, counts) + airtime
