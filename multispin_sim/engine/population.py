"""The devices of a scenario as arrays: drawn once per run from the ``devices`` stream."""
from dataclasses import dataclass

import numpy as np

from ..model.pathloss import pathloss_gain
from ..model.payload import payload_bits
from ..model.rates import noise_psd_watt_per_hz
from ..model.system import System
from ..model.units import dbm_to_watt
from ..scenario import TASKS


@dataclass(frozen=True)
class Population:
    """What each device is: its task, its distance, and the ``System`` arrays derived from them."""

    tasks: tuple
    distance_m: np.ndarray
    draft_length: np.ndarray
    system: System


def _as_range(value):
    if isinstance(value, (list, tuple)):
        return float(value[0]), float(value[1])
    return float(value), float(value)


def dl_power_w(scenario):
    """The server's total DL budget in W: ``dl_power_dbm`` or ``dl_power_ratio`` x P_ul."""
    server = scenario.server
    if server.dl_power_dbm is not None:
        return float(dbm_to_watt(server.dl_power_dbm))
    return float(server.dl_power_ratio * dbm_to_watt(scenario.devices.ul_power_dbm))


def build_population(scenario, rng):
    """Draw every device once (task, drafting-speed factor, distance), then apply overrides.

    All K values of every draw are taken whether used or not, so fixing one key in the scenario
    (say the task) leaves every other draw of the stream unchanged.
    """
    dev = scenario.devices
    k = dev.count
    task_idx = rng.integers(0, len(TASKS), size=k)
    lo, hi = _as_range(dev.draft_latency_spread)
    spread = rng.uniform(lo, hi, size=k)
    dlo, dhi = _as_range(dev.distance_m)
    distance = rng.uniform(dlo, dhi, size=k)

    tasks = [TASKS[i] if dev.task == "uniform" else dev.task for i in task_idx]
    t_draft = dev.draft_latency_ms * 1e-3 * spread
    p_ul = np.full(k, float(dbm_to_watt(dev.ul_power_dbm)))
    gamma = np.broadcast_to(np.asarray(scenario.policy.draft_length, dtype=np.int64), (k,)).copy()
    alpha_override = {}
    for index, o in dev.overrides.items():
        i = int(index)
        if o.task is not None:
            tasks[i] = o.task
        if o.alpha is not None:
            alpha_override[i] = o.alpha
        if o.draft_latency_ms is not None:
            t_draft[i] = o.draft_latency_ms * 1e-3
        if o.distance_m is not None:
            distance[i] = o.distance_m
        if o.ul_power_dbm is not None:
            p_ul[i] = dbm_to_watt(o.ul_power_dbm)
        if o.draft_length is not None:
            gamma[i] = o.draft_length
    alpha = np.array([alpha_override.get(i, dev.acceptance[t]) for i, t in enumerate(tasks)])

    ch = scenario.channel
    pl = scenario.payload
    system = System(
        alpha=alpha,
        draft_latency_s=t_draft,
        p_ul_w=p_ul,
        pathloss=pathloss_gain(distance, ch.ref_gain_db, ch.pathloss_exponent),
        p_dl_w=dl_power_w(scenario),
        payload_bits=float(payload_bits(pl.effective_vocab, pl.vocab, pl.prob_bits)),
        bandwidth_hz=ch.bandwidth_mhz * 1e6,
        n0=noise_psd_watt_per_hz(ch.noise_psd_dbm_hz),
        verify_fixed_s=scenario.server.verify_fixed_ms * 1e-3,
        verify_per_device_s=scenario.server.verify_per_device_ms * 1e-3,
    )
    return Population(tuple(tasks), distance, gamma, system)
