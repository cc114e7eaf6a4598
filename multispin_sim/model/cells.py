"""Where the cells' servers are (pure numpy): ``cells.layout`` names a class of ``CELL_LAYOUTS``.

- ``single``: one server at ``topology.server_xy_m`` (the paper; today's system).
- ``hex``: ``cells.count`` sites (1, 7, 19, 37, ... = 1 + 3 n (n + 1): the centre and n rings)
  on a hexagonal grid of inter-site distance ``cells.isd_m``, optionally with wrap-around.
- ``ppp``: a Poisson point process of ``cells.density_per_km2`` servers in a disc of radius
  ``cells.region_m`` (the number of servers is Poisson, the positions uniform in area).
- ``graphml``: the nodes with role 'server' of ``topology.graphml_file`` (the engine reads the
  file; the layout takes the positions).

Wrap-around (``cells.wrap_around``): the hexagonal cluster of N = 3n^2 + 3n + 1 sites tiles the
plane by the translations i a + j b, with a, b the axial vectors (2n + 1, -n) and (n, n + 1)
(length sqrt(N) ISD, 60 degrees apart); a link's distance is the shortest over the site's seven
images (itself and its six nearest translations), so every site sees the same surroundings and
the edge cells are as interfered as the centre one (3GPP TR 38.901 / 36.814 system-level
practice).
"""
import numpy as np

from .registry import Registry

CELL_LAYOUTS = Registry("cell layout")

SQRT3 = float(np.sqrt(3.0))


def hex_rings(count):
    """The number of rings n of a hexagonal cluster of ``count`` = 3n^2 + 3n + 1 sites
    (ValueError for any other count)."""
    n = int(round((-3 + np.sqrt(9 + 12 * (count - 1))) / 6)) if count >= 1 else -1
    if n < 0 or 3 * n * n + 3 * n + 1 != count:
        raise ValueError(f"a hexagonal grid has 1, 7, 19, 37, ... (3n^2 + 3n + 1) sites, not {count}")
    return n


def axial_to_xy(q, r, isd_m):
    """Cartesian positions of axial hexagonal coordinates (q, r) at spacing ``isd_m``."""
    q = np.asarray(q, dtype=float)
    r = np.asarray(r, dtype=float)
    return np.stack([isd_m * (q + 0.5 * r), isd_m * (SQRT3 / 2.0) * r], axis=-1)


def hex_sites(count, isd_m, centre=(0.0, 0.0)):
    """Site positions (count, 2) of a hexagonal cluster: the centre first, then ring by ring
    (within a ring, counter-clockwise from the east)."""
    n = hex_rings(count)
    qr = [(0, 0)]
    # the six directions of a hexagonal ring walk in axial coordinates
    steps = [(-1, 1), (-1, 0), (0, -1), (1, -1), (1, 0), (0, 1)]
    for ring in range(1, n + 1):
        q, r = ring, 0
        for dq, dr in steps:
            for _ in range(ring):
                qr.append((q, r))
                q, r = q + dq, r + dr
    q, r = np.array(qr).T
    return np.asarray(centre, dtype=float) + axial_to_xy(q, r, isd_m)


def wrap_shifts(count, isd_m):
    """The seven translations (7, 2) of the wrap-around: zero, then the six nearest copies of
    the cluster (+-a, +-b, +-(b - a))."""
    n = hex_rings(count)
    a = axial_to_xy(2 * n + 1, -n, isd_m)
    b = axial_to_xy(n, n + 1, isd_m)
    return np.array([np.zeros(2), a, -a, b, -b, b - a, a - b])


def link_vectors(points, sites, shifts=None):
    """Vectors (P, S, 2) from each site to each point, the shortest over the site's images when
    ``shifts`` (M, 2) are given (wrap-around), else direct."""
    points = np.asarray(points, dtype=float)
    sites = np.asarray(sites, dtype=float)
    delta = points[:, None, :] - sites[None, :, :]
    if shifts is None:
        return delta
    images = delta[:, :, None, :] - np.asarray(shifts, dtype=float)[None, None, :, :]
    d2 = np.einsum("psmc,psmc->psm", images, images)
    best = np.argmin(d2, axis=-1)
    return np.take_along_axis(images, best[..., None, None], axis=2)[:, :, 0, :]


def link_distances(points, sites, shifts=None):
    """2-D distances (P, S) from every point to every site (wrap-around with ``shifts``)."""
    v = link_vectors(points, sites, shifts)
    return np.hypot(v[..., 0], v[..., 1])


def ppp_disc(rng, density_per_m2, radius_m, centre=(0.0, 0.0)):
    """A Poisson point process of intensity ``density_per_m2`` in a disc: Poisson(lambda pi R^2)
    points, uniform in area. Draws the count, then the radii, then the bearings."""
    n = int(rng.poisson(density_per_m2 * np.pi * radius_m * radius_m))
    r = radius_m * np.sqrt(rng.random(n))
    angle = rng.random(n) * 2.0 * np.pi
    return np.asarray(centre, dtype=float) + np.stack([r * np.cos(angle), r * np.sin(angle)], -1)


def uniform_in_hexagon(rng, n, isd_m, centre=(0.0, 0.0)):
    """``n`` points uniform in area in the hexagonal cell of a site: the points closer to it
    than to any neighbour (the neighbours lie at 0, 60, ..., 300 degrees, ``hex_sites``), a
    hexagon of inradius ISD/2 with its edge normals at 0, 60 and 120 degrees. Rejection from
    the bounding box; draws blocks of 2n + 8 pairs of uniforms until n are kept."""
    out = np.empty((0, 2))
    half = isd_m / 2.0
    rx, ry = half, isd_m / SQRT3   # inradius (x extent) and circumradius (y extent)
    while out.shape[0] < n:
        u = rng.random((2 * n + 8, 2))
        p = np.column_stack([(2 * u[:, 0] - 1) * rx, (2 * u[:, 1] - 1) * ry])
        inside = ((np.abs(p[:, 0]) <= half)
                  & (np.abs(0.5 * p[:, 0] + (SQRT3 / 2) * p[:, 1]) <= half)
                  & (np.abs(-0.5 * p[:, 0] + (SQRT3 / 2) * p[:, 1]) <= half))
        out = np.vstack([out, p[inside]])
    return np.asarray(centre, dtype=float) + out[:n]


class CellLayout:
    """Interface of a cell layout: the server positions, and the images used for distances.

    ``sites`` (S, 2) server positions (metres); ``shifts`` the wrap-around translations (M, 2),
    or None; ``cell_radius_m`` the radius device drops per cell use (None: the layout has no
    regular cells, drops go over the region)."""

    shifts = None
    cell_radius_m = None
    several = True   # the engine builds one round loop per server (False: today's one cell)
    reads_servers = False   # the engine reads the server positions from a file for it

    @classmethod
    def from_scenario(cls, scenario, rng, servers=None):
        """The layout of the ``cells`` keys (``rng``: the cells stream, for random layouts;
        ``servers``: positions read from the scenario's file, for layouts that read one)."""
        raise NotImplementedError

    @property
    def count(self):
        return self.sites.shape[0]

    def distances(self, points):
        """2-D distances (P, S) of ``points`` (P, 2) to every server."""
        return link_distances(points, self.sites, self.shifts)


@CELL_LAYOUTS.register("single")
class SingleCell(CellLayout):
    """One server (today's system)."""

    several = False

    @classmethod
    def from_scenario(cls, scenario, rng, servers=None):
        return cls(scenario.topology.server_xy_m)

    def __init__(self, server_xy_m=(0.0, 0.0)):
        self.sites = np.asarray(server_xy_m, dtype=float).reshape(1, 2)


@CELL_LAYOUTS.register("hex")
class HexGrid(CellLayout):
    """``count`` sites on a hexagonal grid of inter-site distance ``isd_m`` around ``centre``."""

    @classmethod
    def from_scenario(cls, scenario, rng, servers=None):
        c = scenario.cells
        return cls(c.count, c.isd_m, c.wrap_around, scenario.topology.server_xy_m)

    def __init__(self, count, isd_m, wrap_around=True, centre=(0.0, 0.0)):
        self.isd_m = float(isd_m)
        self.sites = hex_sites(count, self.isd_m, centre)
        self.shifts = wrap_shifts(count, self.isd_m) if wrap_around and count > 1 else None
        self.cell_radius_m = self.isd_m / SQRT3

    def drop_in_cell(self, rng, cell, n):
        """``n`` positions uniform in the hexagonal cell of site ``cell``."""
        return uniform_in_hexagon(rng, n, self.isd_m, self.sites[cell])


@CELL_LAYOUTS.register("ppp")
class PoissonServers(CellLayout):
    """Servers a Poisson point process of ``density_per_m2`` in a disc of ``radius_m``."""

    @classmethod
    def from_scenario(cls, scenario, rng, servers=None):
        c = scenario.cells
        return cls(rng, c.density_per_km2 * 1e-6, c.region_m, scenario.topology.server_xy_m)

    def __init__(self, rng, density_per_m2, radius_m, centre=(0.0, 0.0)):
        self.radius_m = float(radius_m)
        self.sites = ppp_disc(rng, density_per_m2, self.radius_m, centre)


@CELL_LAYOUTS.register("graphml")
class GivenServers(CellLayout):
    """Servers at given positions (the server nodes of a GraphML topology)."""

    reads_servers = True

    @classmethod
    def from_scenario(cls, scenario, rng, servers=None):
        return cls(servers)

    def __init__(self, positions):
        self.sites = np.asarray(positions, dtype=float).reshape(-1, 2)
