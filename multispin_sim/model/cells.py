"""Where the cells' servers are (pure numpy): ``cells.layout`` names a class of ``CELL_LAYOUTS``.

- ``single``: one server at ``topology.server_xy_m`` (the paper's system).
- ``hex``: ``cells.count`` sites (1, 7, 19, 37, ... = 1 + 3 n (n + 1): the centre and n rings)
  on a hexagonal grid of inter-site distance ``cells.isd_m``, optionally with wrap-around.
- ``ppp``: a Poisson point process of ``cells.density_per_km2`` servers in a disc of radius
  ``cells.region_m`` (the number of servers is Poisson, the positions uniform in area).
- ``graphml``: the nodes with role 'server' of ``topology.graphml_file`` (the engine reads the
  file; the layout takes the positions).

Wrap-around (``cells.wrap_around``): the hexagonal cluster of N = 3n^2 + 3n + 1 sites tiles the
plane by the translations i a + j b, with a, b the axial vectors (2n + 1, -n) and (n, n + 1)
(length sqrt(N) ISD, 60 degrees apart); a link's distance is the shortest over all the images of
its site (the distance on the torus), so every site sees the same surroundings and the edge
cells are as interfered as the centre one (3GPP TR 38.901 / 36.814 system-level practice). The
shortest image is found for any position, also far outside the cluster (``image_shifts``).

Frequency reuse (``CellLayout.colours``): reuse 3 gives a hexagonal site the colour (q - r) mod 3
of its axial coordinates, so no two neighbours share a sub-band and co-channel sites are
sqrt(3) ISD apart. A wrap-around cluster has no such plan (N = 3n^2 + 3n + 1 is never a
multiple of 3, and the 7-site torus makes every cell a neighbour of every other), so reuse 3
is refused there. Layouts without a grid colour server c with c mod 3: for a Poisson layout,
whose servers are drawn independently of their index, a colouring independent of the
positions (each colour a thinning of the process); for 'graphml', the file's order.
"""
import functools

import numpy as np

from .registry import Registry
from .topology import annulus_positions

CELL_LAYOUTS = Registry("cell layout")

SQRT3 = float(np.sqrt(3.0))


def hex_rings(count):
    """The number of rings n of a hexagonal cluster of ``count`` = 3n^2 + 3n + 1 sites
    (ValueError for any other count)."""
    n = int(round((-3 + np.sqrt(9 + 12 * (count - 1))) / 6)) if count >= 1 else -1
    if n < 0 or 3 * n * n + 3 * n + 1 != count:
        raise ValueError("a hexagonal grid has 1, 7, 19, 37, ... (3n^2 + 3n + 1) sites, "
                         f"not {count}")
    return n


def axial_to_xy(q, r, isd_m):
    """Cartesian positions of axial hexagonal coordinates (q, r) at spacing ``isd_m``."""
    q = np.asarray(q, dtype=float)
    r = np.asarray(r, dtype=float)
    return np.stack([isd_m * (q + 0.5 * r), isd_m * (SQRT3 / 2.0) * r], axis=-1)


def hex_axial(count):
    """Axial coordinates (q (count,), r (count,)) of a hexagonal cluster's sites: the centre
    first, then ring by ring (within a ring, counter-clockwise from the east)."""
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
    return q, r


def wrap_lattice(count, isd_m):
    """The translations of the wrap-around as a basis (2, 2), rows a and b: every copy of the
    cluster is shifted by i a + j b (integers i, j)."""
    n = hex_rings(count)
    return np.array([axial_to_xy(2 * n + 1, -n, isd_m), axial_to_xy(n, n + 1, isd_m)])


# lattice coordinates (x, y) of a vector are split into floor(x, y) plus a part in [0, 1)^2;
# a and b are 60 degrees apart, so that unit cell is two equilateral triangles of the lattice
# (Delaunay triangles) and the nearest lattice point is one of its four corners
_CORNERS = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])


def _shortest(delta, lattice):
    """(the shortest images of the vectors ``delta`` (..., 2), the translations taken off)."""
    basis = np.asarray(lattice, dtype=float)
    inverse, corners = _lattice_tables(basis.tobytes())
    d = delta.reshape(-1, 2)
    base = np.floor(d @ inverse) @ basis
    # one column per coordinate and corner: on this scale (tens of devices, a few sites) a
    # batch of (4, 2) @ (2, 2) products and 3-D broadcasts cost about three times as much
    sx, sy = base[:, :1] + corners[:, 0], base[:, 1:] + corners[:, 1]
    ix, iy = d[:, :1] - sx, d[:, 1:] - sy
    rows = np.arange(d.shape[0])
    best = np.argmin(ix * ix + iy * iy, axis=1)
    images = np.stack([ix[rows, best], iy[rows, best]], axis=-1).reshape(delta.shape)
    return images, np.stack([sx[rows, best], sy[rows, best]], axis=-1).reshape(delta.shape)


@functools.lru_cache(maxsize=16)
def _lattice_tables(basis_bytes):
    basis = np.frombuffer(basis_bytes).reshape(2, 2)
    return np.linalg.inv(basis), _CORNERS @ basis


def image_shifts(delta, lattice):
    """The wrap-around translations (..., 2) to take off the vectors ``delta`` (..., 2) to get
    their shortest images (exactly 0.0 where a vector is its own shortest image)."""
    return _shortest(np.asarray(delta, dtype=float), lattice)[1]


def link_distances(points, sites, lattice=None):
    """2-D distances (P, S) from every point to every site: direct, or with ``lattice`` (2, 2)
    (the wrap-around basis, ``wrap_lattice``) from the site's image nearest the point, for any
    position of the point (the distance on the torus)."""
    v = np.asarray(points, dtype=float)[:, None, :] - np.asarray(sites, dtype=float)[None, :, :]
    if lattice is not None:
        v = _shortest(v, lattice)[0]
    return np.hypot(v[..., 0], v[..., 1])


def ppp_disc(rng, density_per_m2, radius_m, centre=(0.0, 0.0)):
    """A Poisson point process of intensity ``density_per_m2`` in a disc: Poisson(lambda pi R^2)
    points, uniform in area. Draws the count, then the radii, then the bearings."""
    n = int(rng.poisson(density_per_m2 * np.pi * radius_m * radius_m))
    r = radius_m * np.sqrt(rng.random(n))
    return annulus_positions(r, rng.random(n) * 2.0 * np.pi, centre)


def uniform_in_hexagon(rng, n, isd_m, centre=(0.0, 0.0)):
    """``n`` points uniform in area in the hexagonal cell of a site: the points closer to it
    than to any neighbour (the neighbours lie at 0, 60, ..., 300 degrees, ``axial_to_xy``), a
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
    """Interface of a cell layout, the server positions and the images used for distances:
    ``sites`` (S, 2) server positions (metres); ``lattice`` the wrap-around basis (2, 2), or
    None; ``centre`` (2,) the centre of the region devices are dropped over (drop: region,
    layouts without ``drop_in_cell``): the grid's or the disc's own centre where the layout
    has one (a Poisson layout's servers' centroid is off it by chance), else the servers'
    centroid; ``region_m`` its radius (None: the layout has no disc); ``drop_in_cell(rng, cell,
    n)``: n points uniform in one cell (None: cells without a shape); ``isd_m``: the
    inter-site distance of a regular grid (None: no grid)."""

    _centre = None
    lattice = None
    region_m = None
    drop_in_cell = None
    isd_m = None
    several = True   # the engine builds one round loop per server (False: the paper's one cell)
    reads_servers = False   # the engine reads the server positions from a file for it
    drawn = False   # the servers are drawn at the scenario's seed: their number depends on it

    @classmethod
    def from_scenario(cls, scenario, rng, servers=None):
        """The layout of the ``cells`` keys (``rng``: the cells stream, for random layouts;
        ``servers``: positions read from the scenario's file, for layouts that read one)."""
        raise NotImplementedError

    @property
    def count(self):
        return self.sites.shape[0]

    @property
    def centre(self):
        return self.sites.mean(axis=0) if self._centre is None else self._centre

    def distances(self, points):
        """2-D distances (P, S) of ``points`` (P, 2) to every server."""
        return link_distances(points, self.sites, self.lattice)

    def nearest_image(self, points, cell):
        """``points`` (P, 2) moved by whole wrap-around translations to their image nearest
        the server ``cell`` (the same points on the torus; unchanged without wrap-around), so
        their plain distance to it is the one the gains use."""
        points = np.asarray(points, dtype=float).reshape(-1, 2)
        if self.lattice is None:
            return points
        return points - image_shifts(points - self.sites[cell], self.lattice)

    def colours(self, reuse):
        """The sub-band (S,) of each server under frequency reuse ``reuse`` (1 or 3): the
        index modulo ``reuse`` (no grid to colour)."""
        return np.arange(self.count) % int(reuse)


@CELL_LAYOUTS.register("single")
class SingleCell(CellLayout):
    """One server (the paper's system)."""

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
        self.axial = hex_axial(count)
        self._centre = np.asarray(centre, dtype=float)
        self.sites = self._centre + axial_to_xy(*self.axial, self.isd_m)
        self.lattice = wrap_lattice(count, self.isd_m) if wrap_around and count > 1 else None

    def colours(self, reuse):
        """Reuse 3: (q - r) mod 3 of the axial coordinates (neighbours differ by (1, 0),
        (0, 1) or (1, -1), so none shares a sub-band; the nearest co-channel sites are (1, 1)
        apart, sqrt(3) ISD). Refused with wrap-around (ValueError): no translation-invariant
        reuse-3 plan exists on that torus."""
        if int(reuse) == 1:
            return np.zeros(self.count, dtype=np.int64)
        if int(reuse) != 3:
            raise ValueError(f"reuse {reuse} is not supported; expected 1 or 3")
        if self.lattice is not None:
            raise ValueError(f"no reuse-3 plan exists on a wrap-around cluster of {self.count} "
                             "sites; expected reuse 1, or no wrap-around")
        q, r = self.axial
        return (q - r) % 3

    def drop_in_cell(self, rng, cell, n):
        """``n`` positions uniform in the hexagonal cell of site ``cell``."""
        return uniform_in_hexagon(rng, n, self.isd_m, self.sites[cell])


@CELL_LAYOUTS.register("ppp")
class PoissonServers(CellLayout):
    """Servers a Poisson point process of ``density_per_m2`` in a disc of ``radius_m``."""

    drawn = True

    @classmethod
    def from_scenario(cls, scenario, rng, servers=None):
        c = scenario.cells
        return cls(rng, c.density_per_km2 * 1e-6, c.region_m, scenario.topology.server_xy_m)

    def __init__(self, rng, density_per_m2, radius_m, centre=(0.0, 0.0)):
        self.region_m = float(radius_m)
        self._centre = np.asarray(centre, dtype=float)
        self.sites = ppp_disc(rng, density_per_m2, self.region_m, centre)


@CELL_LAYOUTS.register("graphml")
class GivenServers(CellLayout):
    """Servers at given positions (the server nodes of a GraphML topology)."""

    reads_servers = True

    @classmethod
    def from_scenario(cls, scenario, rng, servers=None):
        return cls(servers)

    def __init__(self, positions):
        self.sites = np.asarray(positions, dtype=float).reshape(-1, 2)
