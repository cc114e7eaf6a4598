"""The device compute component: power modes and thermal throttling (pure numpy).

Power modes: a small named table (``compute.power_modes``) gives, per mode, a reference per-token
drafting latency and the device's drafting power. A device in mode m drafts at
t_k = t_m s_k (s_k its heterogeneity spread) and draws P_m watts while drafting.

Thermal throttling: a first-order (lumped RC) thermal model per device,

    C_th dT/dt = P(t) - (T - T_amb) / R_th,   i.e.   dT/dt = (P R_th - (T - T_amb)) / tau,

tau = R_th C_th, with P the drafting power while the device drafts and 0 otherwise (the idle
heat is part of the ambient). Over an interval of length dt at constant P the exact solution is

    T(t + dt) = T_ss + (T(t) - T_ss) exp(-dt / tau),   T_ss = T_amb + P R_th.

Throttling with hysteresis: a device becomes throttled when its temperature reaches
``throttle_c`` and stays throttled until it falls below ``release_c`` (= throttle_c: no
hysteresis). While throttled its clock runs ``throttle_factor`` (the slowdown) times slower:
its per-token drafting latency is multiplied by the factor and its drafting power divided by
it (dynamic power in proportion to the clock at a fixed voltage: the same energy per token),
so that a throttled device heats less and cools down. The slowdown of a round is fixed at its
start from the temperature then (the draft controller sees it), and the temperature is advanced
at the end of the round over the drafting interval (P / slowdown) and the rest of the round
(0), and over idle gaps. Under the asynchronous protocol a device's draft-verify-correct cycle
takes the place of its round, each device on its own clock.
"""
import numpy as np


def apply_power_modes(names, table, spread, t_draft, exact, default_power_w):
    """Drafting latencies (in place in ``t_draft``) and powers from each device's mode.

    names: K mode names or None; table: name -> (latency s/token, power W); spread: s_k;
    exact: devices whose latency is given exactly (kept). Returns the (K,) drafting powers.
    """
    power = np.full(len(names), float(default_power_w))
    for i, name in enumerate(names):
        if name is None:
            continue
        latency, p = table[name]
        power[i] = p
        if not exact[i]:
            t_draft[i] = latency * spread[i]
    return power


def relax(temperature, power_w, dt, ambient, r_th, tau):
    """Exact RC step: temperature after ``dt`` seconds at constant power (arrays broadcast)."""
    steady = ambient + np.asarray(power_w, dtype=float) * r_th
    return steady + (np.asarray(temperature, dtype=float) - steady) * np.exp(-np.asarray(dt) / tau)


class ThermalState:
    """Temperatures and throttle flags of K devices; ``slowdown()`` at a round start,
    ``advance(...)`` at its end (the asynchronous protocol: ``device_slowdown`` at a device's
    draft start, ``device_advance`` at its cycle's end; each device keeps its own clock).

    draft_power_w: (K,) drafting power (W); ambient (degC); r_th (degC/W, scalar or (K,));
    tau (s); throttle_c, release_c (degC); factor (>= 1). Starts at ambient temperature,
    unthrottled, at time 0.
    """

    def __init__(self, draft_power_w, ambient=25.0, r_th=15.0, tau=120.0, throttle_c=60.0,
                 release_c=None, factor=2.0):
        self.power = np.asarray(draft_power_w, dtype=float)
        self.ambient, self.tau = float(ambient), float(tau)
        self.r_th = np.asarray(r_th, dtype=float)
        self.throttle_c = float(throttle_c)
        self.release_c = self.throttle_c if release_c is None else float(release_c)
        self.factor = float(factor)
        self.temperature = np.full(self.power.shape, self.ambient)
        self.throttled = np.zeros(self.power.shape, dtype=bool)
        self.time = np.zeros(self.power.shape)   # each device's last update
        self._slowdown = np.ones(self.power.shape)  # of the round (or draft) under way
        self._all = np.ones(self.power.shape, dtype=bool)

    def _update_flags(self):
        t = self.temperature
        self.throttled = np.where(self.throttled, t >= self.release_c, t >= self.throttle_c)

    def _relax(self, power, dt, who):
        """The temperatures of the devices ``who`` (mask) after ``dt`` at ``power``."""
        step = relax(self.temperature, power, dt, self.ambient, self.r_th, self.tau)
        self.temperature = np.where(who & (dt > 0), step, self.temperature)

    def idle_until(self, now, who=None):
        """Cool down (P = 0) from the last update to ``now`` (the devices ``who``: all)."""
        who = self._all if who is None else who
        self._relax(0.0, now - self.time, who)
        self.time = np.where(who, np.maximum(self.time, now), self.time)
        self._update_flags()

    def slowdown(self, now):
        """(K,) drafting-latency multipliers for a round starting at ``now``."""
        self.idle_until(now)
        self._slowdown = np.where(self.throttled, self.factor, 1.0)
        return self._slowdown

    def advance(self, draft_s, round_s):
        """End of a round that started at ``self.time``: each device drafted ``draft_s[k]``
        seconds (power P_k / its slowdown) and then waited until ``round_s`` (power 0)."""
        draft_s = np.asarray(draft_s, dtype=float)
        t = relax(self.temperature, self.power / self._slowdown, draft_s, self.ambient,
                  self.r_th, self.tau)
        self.temperature = relax(t, 0.0, np.maximum(round_s - draft_s, 0.0), self.ambient,
                                 self.r_th, self.tau)
        self.time += round_s
        self._update_flags()

    def device_slowdown(self, k, now):
        """Device ``k``'s multiplier for a draft starting at ``now`` (cooled until then)."""
        who = np.arange(self.power.size) == k
        self.idle_until(now, who)
        self._slowdown[k] = self.factor if self.throttled[k] else 1.0
        return float(self._slowdown[k])

    def slowdowns(self):
        """(K,) each device's multiplier as last set (a copy)."""
        return self._slowdown.copy()

    def device_advance(self, k, draft_s, now):
        """Device ``k``'s cycle, from its draft's start to ``now``, ended: it drafted
        ``draft_s`` seconds (at P_k / its slowdown), then waited (power 0)."""
        who = np.arange(self.power.size) == k
        self._relax(self.power / self._slowdown, np.where(who, draft_s, 0.0), who)
        self._relax(0.0, np.where(who, max(now - self.time[k] - draft_s, 0.0), 0.0), who)
        self.time[k] = now
        self._update_flags()
