"""The devices of a scenario as arrays: drawn once per run from the ``devices`` stream."""
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..model.pathloss import pathloss_gain
from ..model.shadowing import shadowing_gain
from ..model.payload import format_from_scenario
from ..model.rates import noise_psd_watt_per_hz
from ..model.mimo import Transmission
from ..model.system import System
from ..model.topology import rescale_to_distance
from ..model.units import dbm_to_watt
from ..model.compute import apply_power_modes
from ..scenario import TASKS
from .compute import verification_cost
from .topology import as_range, build_layout, topology_graph


@dataclass(frozen=True)
class Population:
    """What each device is: its task, its position and distance, and the ``System`` arrays.

    ``system.pathloss`` is the large-scale gain at the start: path loss at ``distance_m`` times
    the shadowing ``shadowing_db`` (0 dB without shadowing). ``positions`` (K, 2) and
    ``server_position`` (2,) are in metres; ``graph`` is the networkx topology graph.
    """

    tasks: tuple
    distance_m: np.ndarray
    draft_length: np.ndarray
    system: System
    positions: Optional[np.ndarray] = None
    server_position: Optional[np.ndarray] = None
    shadowing_db: Optional[np.ndarray] = None
    graph: object = None
    power_mode: Optional[tuple] = None          # each device's compute.power_modes name or None
    draft_power_w: Optional[np.ndarray] = None  # drafting power per device (W)


def dl_power_w(scenario):
    """The server's total DL budget in W: ``dl_power_dbm`` or ``dl_power_ratio`` x P_ul."""
    server = scenario.server
    if server.dl_power_dbm is not None:
        return float(dbm_to_watt(server.dl_power_dbm))
    return float(server.dl_power_ratio * dbm_to_watt(scenario.devices.ul_power_dbm))


def fixed_payload_bits(payload):
    """Bits of one correction in the ``payload`` section's format; 0 for 'topp' (its sizes are
    per position: token model)."""
    fmt = format_from_scenario(payload)
    return float(fmt.bits()) if fmt.fixed_size else 0.0


def noise_psd(scenario):
    """The receivers' noise PSD N0 (W/Hz): ``channel.noise_psd_dbm_hz`` plus the noise figure."""
    ch = scenario.channel
    return noise_psd_watt_per_hz(ch.noise_psd_dbm_hz + ch.noise_figure_db)


def _stratified_draws(rng, k, n_tasks, spread_range, distance_range):
    """``devices.draw: stratified``: the per-device draws spread evenly over the K devices.

    Distances and drafting-speed factors are Latin hypercube samples: the K uniforms are
    (pi(i) + v_i) / K, pi a random permutation, v_i ~ U[0, 1). Tasks are balanced against
    distance: walking the distance strata from near to far, each block of ``n_tasks``
    consecutive strata gets every task once, in random order (the last block a random subset).
    Every device keeps the i.i.d. law of its task, speed factor and distance; the K values
    together cover their ranges evenly, so drops differ much less.
    """
    strata = rng.permutation(k)                      # device i is in distance stratum strata[i]
    (lo, hi), (dlo, dhi) = spread_range, distance_range
    distance = dlo + (dhi - dlo) * (strata + rng.random(k)) / k
    spread = lo + (hi - lo) * (rng.permutation(k) + rng.random(k)) / k
    blocks = -(-k // n_tasks)
    by_stratum = np.argsort(rng.random((blocks, n_tasks)), axis=1).ravel()[:k]
    return by_stratum[strata], spread, distance


def build_population(scenario, rng, topology_rng=None, shadowing_rng=None, graphml=None):
    """Draw every device once (task, drafting-speed factor, distance), then apply overrides.

    All K values of every draw are taken whether used or not, so fixing one key in the scenario
    (say the task) leaves every other draw of the stream unchanged. The layout (bearings) comes
    from ``topology_rng`` and the shadowing from ``shadowing_rng`` (fresh generators with seed 0
    when not given); ``graphml``: the parsed GraphML positions, if the layout uses a file.
    """
    dev = scenario.devices
    k = dev.count
    lo, hi = as_range(dev.draft_latency_spread)
    dlo, dhi = as_range(dev.distance_m)
    if dev.draw == "stratified":
        task_idx, spread, distance = _stratified_draws(rng, k, len(TASKS), (lo, hi), (dlo, dhi))
    else:
        task_idx = rng.integers(0, len(TASKS), size=k)
        spread = rng.uniform(lo, hi, size=k)
        distance = rng.uniform(dlo, dhi, size=k)
    if topology_rng is None:
        topology_rng = np.random.default_rng(0)
    server_xy, positions, distance = build_layout(scenario, distance, topology_rng, graphml)
    distance = np.array(distance, dtype=float)

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
            positions[i] = rescale_to_distance(positions[i], server_xy, o.distance_m)
        if o.ul_power_dbm is not None:
            p_ul[i] = dbm_to_watt(o.ul_power_dbm)
        if o.draft_length is not None:
            gamma[i] = o.draft_length
    alpha = np.array([alpha_override.get(i, dev.acceptance[t]) for i, t in enumerate(tasks)])
    modes, draft_power = device_power_modes(scenario, spread, t_draft)

    ch = scenario.channel
    large_scale = pathloss_gain(distance, ch.ref_gain_db, ch.pathloss_exponent)
    shadow_db = np.zeros(k)
    if ch.shadowing_db > 0:
        if shadowing_rng is None:
            shadowing_rng = np.random.default_rng(0)
        shadow_db = ch.shadowing_db * shadowing_rng.standard_normal(k)
        large_scale = large_scale * shadowing_gain(shadow_db)
    system = System(
        alpha=alpha,
        draft_latency_s=t_draft,
        p_ul_w=p_ul,
        pathloss=large_scale,
        p_dl_w=dl_power_w(scenario),
        payload_bits=fixed_payload_bits(scenario.payload),
        bandwidth_hz=ch.bandwidth_mhz * 1e6,
        n0=noise_psd(scenario),
        verify_fixed_s=scenario.server.verify_fixed_ms * 1e-3,
        verify_per_device_s=scenario.server.verify_per_device_ms * 1e-3,
        verify_cost=verification_cost(scenario),
        transmission=shared_band_transmission(scenario),
    )
    population = Population(tuple(tasks), distance, gamma, system, positions, server_xy, shadow_db,
                            power_mode=modes, draft_power_w=draft_power)
    object.__setattr__(population, "graph", topology_graph(population))
    return population


def shared_band_transmission(scenario):
    """The antenna component (``model.mimo.Transmission``) when a link shares its band, else
    None: the orthogonal schemes need only the array gains, the paper's reactive problem."""
    transmission = Transmission.from_scenario(scenario)
    return transmission if transmission.multi_user else None


def device_power_modes(scenario, spread, t_draft):
    """Apply ``compute.power_mode`` and per-device ``power_mode`` overrides to the drafting
    latencies ``t_draft`` (in place: mode latency x spread, unless the override gives an exact
    ``draft_latency_ms``); returns (mode names, drafting powers in W)."""
    c = scenario.compute
    k = len(t_draft)
    names = [c.power_mode] * k
    exact = np.zeros(k, dtype=bool)
    for index, o in scenario.devices.overrides.items():
        if o.power_mode is not None:
            names[int(index)] = o.power_mode
        if o.draft_latency_ms is not None:
            exact[int(index)] = True
    table = {name: (m.draft_latency_ms * 1e-3, m.draft_power_w)
             for name, m in c.power_modes.items()}
    power = apply_power_modes(names, table, spread, t_draft, exact, scenario.energy.draft_power_w)
    return tuple(names), power
