"""Where a run of several cells puts things (docs/components/cells.md): the servers (the
layout, read from GraphML for 'graphml'), each cell's seed and server settings, the devices
(per cell, or over the region and attached by the association rule), and what the rules see.

``cell_plan`` gives each cell the single-cell scenario it is built from; ``mobile_plan`` does it
for moving devices, every cell holding all of them (``engine.handover``).
"""
import dataclasses
import functools

import numpy as np

from ..model.association import ASSOCIATION_RULES, AssociationView
from ..model.cells import CELL_LAYOUTS
from ..model.mobility import MOBILITY_MODELS
from ..model.pathloss import pathloss_gain
from ..model.shadowing import shadowing_gain
from ..model.sinr import cochannel
from ..model.topology import annulus_positions
from ..scenario import ScenarioError
from .handover import Network
from .population import dl_power_w, fixed_payload_bits, noise_psd
from .topology import as_range, node_xy, read_graphml


def cell_seed(seed, c):
    """The seed of cell c: the run's for cell 0 (a one-cell run is the paper's single-cell
    run), else derived."""
    return seed if c == 0 else int(np.random.SeedSequence((seed, c)).generate_state(1)[0])


CELLS_STREAM_KEY = 1000   # SeedSequence(seed, spawn_key=(1000,)): layout, drops, links to servers
CROSS_STREAM_KEY = (CELLS_STREAM_KEY, 2)   # the cross links' gains (cells.cross_link)


def several_cells(scenario):
    """Whether ``cells.layout`` places several servers (one round loop each)."""
    return CELL_LAYOUTS.lookup(scenario.cells.layout).several


def cell_layout(scenario, rng):
    """The servers' layout of ``cells.layout``, drawn from ``rng`` (a layout that reads its
    servers takes those of ``topology.graphml_file``)."""
    cls = CELL_LAYOUTS.lookup(scenario.cells.layout)
    servers = (read_graphml_servers(scenario.topology.graphml_file) if cls.reads_servers
               else None)
    return cls.from_scenario(scenario, rng, servers)


def cells_layout(scenario):
    """(the cells stream, the servers' layout): the stream at the scenario's seed, which has
    drawn the layout (the same draw wherever it is asked). A Poisson layout that drew no server
    is refused (ScenarioError)."""
    cells = scenario.cells
    rng = np.random.Generator(np.random.PCG64(
        np.random.SeedSequence(scenario.seed, spawn_key=(CELLS_STREAM_KEY,))))
    layout = cell_layout(scenario, rng)
    if layout.count == 0:
        raise ScenarioError("cells.density_per_km2", "the Poisson point process drew no server "
                            f"in the disc of cells.region_m = {cells.region_m:g} m (at seed "
                            f"{scenario.seed}: mean lambda pi R^2 = "
                            f"{cells.density_per_km2 * np.pi * (cells.region_m / 1e3) ** 2:.3g})",
                            "expected a density and region with servers (lambda pi R^2 >> 1), "
                            "or another seed")
    return rng, layout


def check_cell_layout(scenario):
    """The servers a run of several cells would place (``cells_layout``), drawn before anything
    is written: a 'graphml' file without servers, a Poisson layout that drew none, or a
    ``cells.servers`` index beyond the layout's cells is refused (ScenarioError)."""
    if not several_cells(scenario):
        return
    count = cells_layout(scenario)[1].count
    beyond = sorted(c for c in dict(scenario.cells.servers) if c >= count)
    if beyond:
        raise ScenarioError(f"cells.servers.{beyond[0]}", f"cell index {beyond[0]} is out of "
                            f"range (the layout places {count} cells)",
                            f"expected 0 <= index < {count}")


def read_graphml_servers(path):
    """Positions (S, 2) of the nodes with role 'server' of a GraphML file."""
    xy = [node_xy(node, d, path) for node, d in read_graphml(path).nodes(data=True)
          if str(d.get("role", "")) == "server"]
    if not xy:
        raise ScenarioError("topology.graphml_file", f"{path!r} has no server node",
                            "expected nodes with role 'server' (cells.layout: graphml)")
    return np.array(xy, dtype=float)


def network_devices(scenario):
    """The devices of the whole network: devices.count, times the number of cells when each
    cell gets its own (``cells.drop: per-cell`` with a layout of several servers; a Poisson
    layout: the servers it draws at ``scenario.seed``, as the engine does; none is refused,
    ScenarioError, as a run would)."""
    count = int(scenario.devices.count)
    cells = scenario.cells
    if not several_cells(scenario) or cells.drop != "per-cell":
        return count
    return count * int(cells_layout(scenario)[1].count)


def workload_devices(scenario):
    """The devices one workload serves: the network's (``network_devices``) where the cells
    share one workload (devices that move or re-associate), else devices.count (each cell's
    own workload, as one cell's)."""
    cells = scenario.cells
    shared = several_cells(scenario) and (
        MOBILITY_MODELS.lookup(scenario.mobility.model).moves or cells.reassociate)
    return network_devices(scenario) if shared else int(scenario.devices.count)


def initial_positions(scenario, layout, rng):
    """(D, 2) start positions: ``devices.count`` around each site at distances uniform in
    ``devices.distance_m`` and uniform bearings (drop: per-cell; the law of a static per-cell
    drop, the single-cell annulus layout), or ``devices.count`` over the region. Per site: the
    distances, then the bearings."""
    cells = scenario.cells
    k = scenario.devices.count
    if cells.drop == "per-cell":
        lo, hi = as_range(scenario.devices.distance_m)
        out = []
        for site in layout.sites:
            r = rng.uniform(lo, hi, size=k)
            out.append(annulus_positions(r, rng.random(k) * 2.0 * np.pi, site))
        return np.vstack(out)
    return drop_over_region(scenario, layout, rng)


def drop_over_region(scenario, layout, rng):
    """(K, 2) positions of devices.count devices uniform over the region: a hexagonal grid's
    cells (a cell drawn uniformly, then a point uniform in its hexagon), else the disc of
    ``cells.region_m`` around ``layout.centre`` (a Poisson layout's own disc)."""
    k = scenario.devices.count
    if layout.drop_in_cell is not None:
        cell = rng.integers(layout.count, size=k)
        return np.vstack([layout.drop_in_cell(rng, int(c), 1) for c in cell])
    r = scenario.cells.region_m * np.sqrt(rng.random(k))
    a = rng.random(k) * 2 * np.pi
    return layout.centre + np.column_stack([r * np.cos(a), r * np.sin(a)])


def wrapped_population(layout, model, cell, population):
    """A cell's population seen on the wrap-around torus: each device at its image nearest the
    cell's server, so its ``distance_m`` (devices.csv) is the wrapped distance every gain
    uses. For a model whose own-link gains are the population's (``population_gain``: the
    power law), a device whose distance changed gets G_0 d^-eta at the new one times its own
    shadowing. Unchanged (the same object) without wrap-around or when nothing moves: a drop
    inside the torus's fundamental region keeps its numbers exactly."""
    if layout.lattice is None or population.positions is None:
        return population
    pos = layout.nearest_image(population.positions, cell)
    changed = np.any(pos != population.positions, axis=1)
    if not np.any(changed):
        return population
    d = population.distance_m.copy()
    d[changed] = np.hypot(*(pos[changed] - layout.sites[cell]).T)
    pathloss = population.system.pathloss
    if model.population_gain:
        pathloss = pathloss.copy()
        own = pathloss_gain(d[changed], model.ref_gain_db, model.exponent)
        if population.shadowing_db is not None and model.sigma_db > 0:
            own = own * shadowing_gain(population.shadowing_db[changed])
        pathloss[changed] = own
    return dataclasses.replace(population, positions=pos, distance_m=d,
                               system=dataclasses.replace(population.system, pathloss=pathloss))


def association_view(scenario, layout, gain, positions, serving=None, movable=None):
    """What the rule sees: RSRP = DL budget x the long-term gains ``gain`` (D, S); one
    correction's payload bits (a top-k distribution, ``model.payload``)."""
    bits = fixed_payload_bits(scenario.payload)
    d = layout.distances(positions)
    s = layout.count
    servers = [server_of(scenario, c) for c in range(s)]
    return AssociationView(
        server_powers(scenario, s) * gain, d,
        np.array([(v.verify_fixed_ms or 0.0) * 1e-3 for v in servers]),
        np.array([(v.verify_per_device_ms or 0.0) * 1e-3 for v in servers]),
        np.full(s, scenario.channel.bandwidth_mhz * 1e6 / scenario.cells.reuse),
        noise_psd(scenario), bits, serving, movable, cochannel(layout, scenario.cells.reuse))


def server_of(scenario, c):
    """The ``server`` section of cell c: the scenario's, with ``cells.servers[c]`` applied."""
    override = dict(scenario.cells.servers).get(c)
    if override is None:
        return scenario.server
    changes = {k: v for k, v in dataclasses.asdict(override).items() if v is not None}
    if "dl_power_dbm" in changes:
        changes["dl_power_ratio"] = None   # the two are exclusive
    return dataclasses.replace(scenario.server, **changes)


def server_powers(scenario, count):
    """DL budgets (S,) of the cells' servers (W)."""
    return np.array([dl_power_w(dataclasses.replace(scenario, server=server_of(scenario, c)))
                     for c in range(count)])


def cell_scenario(scenario, layout, c, seed, xy=None):
    """Cell c's one-cell scenario: its server (at its site, ``cells.servers[c]`` applied) on its
    share of the band (``cells.reuse``), with ``seed``; ``xy``: its devices' positions (a
    'coordinates' topology of that many devices), else the scenario's own devices."""
    topology = {"server_xy_m": tuple(float(v) for v in layout.sites[c])}
    devices = scenario.devices
    if xy is not None:
        topology.update(layout="coordinates", device_xy_m=xy)
        devices = dataclasses.replace(devices, count=len(xy))
    return dataclasses.replace(
        scenario, seed=seed, devices=devices, server=server_of(scenario, c),
        cells=dataclasses.replace(scenario.cells, layout="single"),
        channel=dataclasses.replace(
            scenario.channel, bandwidth_mhz=scenario.channel.bandwidth_mhz / scenario.cells.reuse),
        topology=dataclasses.replace(scenario.topology, **topology))


def mobile_plan(scenario, layout, model, links, rng, moving=True):
    """([(cell, its scenario)], Network): every cell holds all D devices at their start
    positions (the same seed, so the same devices), attached by ``cells.association``; static
    devices re-associated at round ends (``moving`` False, ``cells.reassociate``) dropped per
    cell start on the cell they were dropped in."""
    positions = initial_positions(scenario, layout, rng)
    rule = ASSOCIATION_RULES.lookup(scenario.cells.association).from_scenario(scenario)
    network = Network(scenario, layout, model, links, positions, rng,
                      server_powers(scenario, layout.count), rule,
                      functools.partial(association_view, scenario, layout), moving=moving)
    if not moving and scenario.cells.drop == "per-cell":
        network.attach(np.repeat(np.arange(layout.count), scenario.devices.count))
    else:
        network.attach(rule.choose(association_view(scenario, layout, network.gain, positions)))
    links.gain = network.gain
    # the devices at their images nearest each cell's server: the population's distances
    # (devices.csv) are the wrapped ones of the gains
    plan = [(c, cell_scenario(scenario, layout, c, scenario.seed,
                              tuple(map(tuple, layout.nearest_image(positions, c).tolist()))))
            for c in range(layout.count)]
    return plan, network


def cell_plan(scenario, layout, model, links, rng):
    """[(cell, its scenario)]: each cell's seed, server position, devices and band."""
    cells = scenario.cells
    if cells.drop == "per-cell":
        return [(c, cell_scenario(scenario, layout, c, cell_seed(scenario.seed, c)))
                for c in range(layout.count)]
    out = []
    positions = drop_over_region(scenario, layout, rng)
    gain, _ = model.draw(rng, layout.distances(positions))
    rule = ASSOCIATION_RULES.lookup(cells.association).from_scenario(scenario)
    chosen = rule.choose(association_view(scenario, layout, gain, positions))
    for c in range(layout.count):
        # the devices at their images nearest their server: the population's distance is the
        # wrapped one the drawn gains use
        mine = layout.nearest_image(positions[chosen == c], c)
        if mine.shape[0] == 0:
            continue
        links.drawn[c] = gain[chosen == c]
        out.append((c, cell_scenario(scenario, layout, c, cell_seed(scenario.seed, c),
                                     tuple(map(tuple, mine.tolist())))))
    return out
