"""Geometry of a cell: server and device positions in the plane (metres), pure numpy.

``LAYOUTS``: the layouts of ``topology.layout``, each a class whose ``place`` puts the server and
the devices (the engine reads the files a layout needs and passes their contents). The engine
builds the networkx graph of the topology from these (``engine.topology``).
"""
import numpy as np

from .registry import Registry

# topology.layout -> class: the one list of the layouts' names (the schema reads it)
LAYOUTS = Registry("topology layout")


def annulus_positions(distance_m, angle_rad, centre=(0.0, 0.0)):
    """Positions (K, 2) at the given distances and bearings around ``centre``."""
    d = np.asarray(distance_m, dtype=float)
    a = np.asarray(angle_rad, dtype=float)
    return np.asarray(centre, dtype=float) + np.stack([d * np.cos(a), d * np.sin(a)], axis=-1)


def distances(positions, centre=(0.0, 0.0)):
    """Euclidean distances (K,) of ``positions`` (K, 2) to ``centre``."""
    delta = np.asarray(positions, dtype=float) - np.asarray(centre, dtype=float)
    return np.hypot(delta[..., 0], delta[..., 1])


def bearings(positions, centre=(0.0, 0.0)):
    """The bearing (K,) of each of ``positions`` (K, 2) seen from ``centre``: radians from the
    x axis, counter-clockwise, in (-pi, pi]."""
    delta = np.asarray(positions, dtype=float) - np.asarray(centre, dtype=float)
    return np.arctan2(delta[..., 1], delta[..., 0])


def rescale_to_distance(position, centre, distance_m):
    """``position`` moved along its bearing from ``centre`` to the distance ``distance_m``."""
    position = np.asarray(position, dtype=float)
    centre = np.asarray(centre, dtype=float)
    delta = position - centre
    norm = float(np.hypot(*delta))
    if norm == 0.0:
        return centre + np.array([distance_m, 0.0])
    return centre + delta * (distance_m / norm)


class Layout:
    """Interface of a layout (``topology.layout``): where the server and the devices are."""

    # the waypoint region defaults to devices.distance_m's range (the layout draws from it)
    uses_distance_keys = False
    # the engine reads topology.graphml_file for it: inputs["graphml"] = (server, devices)
    reads_graphml = False

    @classmethod
    def place(cls, scenario, distance, rng, inputs):
        """(server position (2,), device positions (K, 2), distances (K,)); ``distance``: the
        distances drawn by the population, ``rng``: the topology stream, ``inputs``: the
        contents of the files the layout reads."""
        raise NotImplementedError


@LAYOUTS.register("annulus")
class AnnulusLayout(Layout):
    """Each device at its distance d_k (drawn from ``devices.distance_m`` by the ``devices``
    stream, as in the paper) from the server, at a uniform bearing drawn from the ``topology``
    stream; the drawn distance itself feeds the path loss (the paper's draws exactly)."""

    uses_distance_keys = True

    @classmethod
    def place(cls, scenario, distance, rng, inputs):
        server = np.asarray(scenario.topology.server_xy_m, dtype=float)
        angle = rng.random(distance.size) * 2.0 * np.pi
        return server, annulus_positions(distance, angle, server), distance


@LAYOUTS.register("coordinates")
class CoordinatesLayout(Layout):
    """The devices at ``topology.device_xy_m``."""

    @classmethod
    def place(cls, scenario, distance, rng, inputs):
        topo = scenario.topology
        server = np.asarray(topo.server_xy_m, dtype=float)
        positions = np.asarray(topo.device_xy_m, dtype=float).reshape(-1, 2)
        return server, positions, distances(positions, server)


@LAYOUTS.register("graphml")
class GraphmlLayout(Layout):
    """The server and the devices at the nodes of ``topology.graphml_file``."""

    reads_graphml = True

    @classmethod
    def place(cls, scenario, distance, rng, inputs):
        server, positions = inputs["graphml"]
        return server, positions, distances(positions, server)
