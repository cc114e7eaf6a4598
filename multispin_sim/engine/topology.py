"""The topology as a networkx graph (server and device nodes with positions), and mobility.

``build_layout`` places the server and the devices with the layout of ``topology.layout`` (a
class of ``model.topology.LAYOUTS``); this module reads the GraphML file a layout may need (x, y
node attributes; the node with role 'server', or id 'server', is the server).

``topology_graph`` makes the networkx graph: node ``"server"`` and nodes 0..K-1 with x_m, y_m;
one edge server-device per device with its distance and large-scale gain.

``Mover`` is the SimPy-free side of mobility: at each round start the engine asks it for the
large-scale gains at that time (random-waypoint positions, path loss from the new distances,
shadowing as a function of the distance each device has travelled,
``model.shadowing.PathProcess``). ``doppler_clock`` makes its walk the clock of the fading under
``channel.doppler`` 'speed'.
"""
import numpy as np

from ..model.mobility import MOBILITY_MODELS, Wavelengths, clamped_pathloss_gain
from ..model.shadowing import PathProcess, shadowing_gain
from ..model.topology import LAYOUTS, bearings, distances
from ..model.units import SPEED_OF_LIGHT
from ..scenario import ScenarioError
from ..scenario.limits import MAX_DISTANCE_M, MIN_DISTANCE_M
from .guards import LegGuard, walk_to
from .reading import read_once

GRAPHML_KEY = "topology.graphml_file"


def as_range(value):
    """(low, high) of a key that takes one value or a range [low, high]."""
    if isinstance(value, (list, tuple)):
        return float(value[0]), float(value[1])
    return float(value), float(value)


def read_graphml(path):
    """The networkx graph of the GraphML file ``path`` (ScenarioError if it cannot be read),
    read once per ``reading_once`` scope (shared: not to be modified)."""
    return read_once(_parse_graphml, path)


def _parse_graphml(path):
    import networkx as nx

    try:
        return nx.read_graphml(path)
    except Exception as exc:  # noqa: BLE001 -- any parse failure is a bad input file
        raise ScenarioError(GRAPHML_KEY, f"cannot read {path!r} as GraphML: {exc}",
                            "expected a GraphML file with x and y (or x_m and y_m) node "
                            "attributes") from None


def node_xy(node, data, path):
    """(x, y) in metres of a GraphML node: its ``x`` and ``y`` attributes, or the ``x_m`` and
    ``y_m`` a run writes to its ``topology.graphml`` (so a run's layout can be read back)."""
    for keys in (("x", "y"), ("x_m", "y_m")):
        if keys[0] in data or keys[1] in data:
            try:
                return float(data[keys[0]]), float(data[keys[1]])
            except (KeyError, TypeError, ValueError):
                break
    raise ScenarioError(GRAPHML_KEY, f"node {node!r} of {path!r} has no numeric x, y",
                        "expected x and y (or x_m and y_m) attributes in metres on every node")


def read_graphml_positions(path, count):
    """(server (2,), devices (K, 2)) from a GraphML file; ScenarioError if it does not fit."""
    nodes = list(read_graphml(path).nodes(data=True))
    roles = [str(data.get("role", "")) for _, data in nodes]
    if roles.count("server") > 1:
        raise ScenarioError(GRAPHML_KEY, f"{path!r} has more than one server node",
                            "expected exactly one node with role 'server'")
    if "server" in roles:
        server_index = roles.index("server")
    else:
        ids = [str(node) for node, _ in nodes]
        server_index = ids.index("server") if "server" in ids else None
    server, devices = None, []
    for i, (node, data) in enumerate(nodes):
        xy = node_xy(node, data, path)
        if i == server_index:
            server = xy
        else:
            devices.append(xy)
    if server is None:
        raise ScenarioError(GRAPHML_KEY, f"{path!r} has no server node",
                            "expected one node with role 'server' (or id 'server')")
    if len(devices) != count:
        raise ScenarioError(GRAPHML_KEY, f"{path!r} has {len(devices)} device nodes",
                            f"expected devices.count ({count}) device nodes")
    server, devices = np.array(server), np.array(devices, dtype=float).reshape(-1, 2)
    if not (np.all(np.isfinite(server)) and np.all(np.isfinite(devices))):
        raise ScenarioError(GRAPHML_KEY, f"{path!r} has a node with a coordinate that is not a "
                            "finite number (NaN or infinite)", "expected finite x and y (metres)")
    d = distances(devices, server)
    far = float(np.max(d, initial=0.0))
    if not far <= MAX_DISTANCE_M:
        raise ScenarioError(GRAPHML_KEY, f"{path!r} has a device {far:.4g} m from the server",
                            f"expected distances of at most {MAX_DISTANCE_M:,.0f} m")
    if np.any(d == 0):
        raise ScenarioError(GRAPHML_KEY, f"{path!r} has a device at the server position",
                            "expected every device at a distance > 0")
    near = float(np.min(d, initial=np.inf))
    if near < MIN_DISTANCE_M:
        raise ScenarioError(GRAPHML_KEY, f"{path!r} has a device {near:.4g} m from the server",
                            f"expected distances of at least {MIN_DISTANCE_M:g} m (the "
                            "reference distance of the path loss G_0)")
    return server, devices


def layout_inputs(scenario):
    """The files the layout of ``topology.layout`` reads (``Layout.reads_graphml``), read and
    checked before a run writes anything."""
    if not LAYOUTS.lookup(scenario.topology.layout).reads_graphml:
        return {}
    return {"graphml": read_graphml_positions(scenario.topology.graphml_file,
                                              scenario.devices.count)}


def build_layout(scenario, distance, rng, graphml=None):
    """(server position (2,), device positions (K, 2), distances (K,)) of ``topology.layout``
    (``model.topology.LAYOUTS``).

    ``distance``: the distances drawn by the population (annulus radii); ``rng``: the topology
    stream (bearings, annulus only); ``graphml``: the parsed (server, devices) of the GraphML
    file if already read.
    """
    layout = LAYOUTS.lookup(scenario.topology.layout)
    inputs = {"graphml": graphml} if graphml is not None else layout_inputs(scenario)
    return layout.place(scenario, distance, rng, inputs)


def topology_graph(population):
    """The networkx graph of a population: server and device nodes, server-device edges."""
    import networkx as nx

    graph = nx.Graph()
    sx, sy = (float(v) for v in population.server_position)
    graph.add_node("server", role="server", x_m=sx, y_m=sy)
    for k, ((x, y), d, g, task) in enumerate(zip(population.positions.tolist(),
                                                population.distance_m.tolist(),
                                                population.system.pathloss.tolist(),
                                                population.tasks)):
        graph.add_node(k, role="device", x_m=x, y_m=y, task=task)
        graph.add_edge("server", k, distance_m=d, large_scale_gain=g)
    return graph


def mobility_region(scenario, distance):
    """The waypoint annulus: ``mobility.region_m``, else ``devices.distance_m``'s range (annulus)
    or the range of the initial distances."""
    m = scenario.mobility
    if m.region_m is not None:
        return m.region_m
    if LAYOUTS.lookup(scenario.topology.layout).uses_distance_keys:
        return as_range(scenario.devices.distance_m)
    return float(np.min(distance)), float(np.max(distance))


class Mover:
    """Large-scale gains of moving devices, evaluated at round starts.

    gains(t) -> (K,) G_k(t) = path loss at the device's distance at t (clamped to >= 1 m) times
    its shadowing sigma X_k(s_k(t)) dB (``shadow_db``), where s_k(t) is the distance the device
    has walked by t and X_k the ``PathProcess`` started at the population's drawn value:
    N(0, sigma^2) dB at every t, correlation exp(-|s - s'| / ``channel.shadowing_decorrelation_m``)
    between values on its grid or in different grid intervals (Gudmundson), a deterministic
    function of the walk and the seed. ``shadowing_rng``: the generator the devices' own streams
    are spawned from (the ``shadowing_path`` stream), so the shadowing does not depend on when,
    or how often, rounds start.
    """

    def __init__(self, scenario, population, rng, shadowing_rng):
        ch = scenario.channel
        self.centre = population.server_position
        self.walk = MOBILITY_MODELS.lookup(scenario.mobility.model).from_scenario(
            scenario, population.positions, self.centre,
            mobility_region(scenario, population.distance_m), rng)
        self.ref_gain_db = ch.ref_gain_db
        self.exponent = ch.pathloss_exponent
        self.sigma_db = ch.shadowing_db
        self.shadow_db = population.shadowing_db.copy()
        self.path = None
        if self.sigma_db > 0:
            self.path = PathProcess(self.shadow_db, ch.shadowing_decorrelation_m,
                                    shadowing_rng, scale=self.sigma_db)
        self.distance = population.distance_m.copy()
        self.positions = population.positions
        self._bearings = (None, None)   # (the positions they are of, the bearings)

    def gains(self, t):
        positions = self.positions = walk_to(self.walk, t)
        self.distance = distances(positions, self.centre)
        gain = clamped_pathloss_gain(self.distance, self.ref_gain_db, self.exponent)
        if self.path is not None:
            self.shadow_db = self.path.at(self.walk.travelled)
            gain = gain * shadowing_gain(self.shadow_db)
        return gain

    def bearings(self):
        """The devices' bearings (K,) from the server at the last ``gains`` (one array while
        the positions stay)."""
        if self._bearings[0] is not self.positions:
            self._bearings = (self.positions, bearings(self.positions, self.centre))
        return self._bearings[1]


def device_bearings(population, mover=None):
    """The devices' bearings from their server now, a function of nothing (``mover``'s at its
    last round start, else the population's fixed ones); None without positions."""
    if mover is not None:
        return mover.bearings
    if population.positions is None or population.server_position is None:
        return None
    fixed = bearings(population.positions, population.server_position)
    return lambda: fixed


def doppler_clock(scenario, mover):
    """The clock of a fading process whose Doppler follows each device's own speed
    (``channel.doppler`` 'speed'): the wavelengths of f_c = ``cells.fc_ghz`` each device of the
    mover's walk has travelled (``model.mobility.Wavelengths``); None under 'fixed' or
    without a mover."""
    if scenario.channel.doppler != "speed" or mover is None or mover.walk is None:
        return None
    return LegGuard(Wavelengths(mover.walk, SPEED_OF_LIGHT / (scenario.cells.fc_ghz * 1e9)))
