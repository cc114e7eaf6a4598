"""Geometry of a cell: server and device positions in the plane (metres), pure numpy.

The engine builds the networkx graph of the topology from these (``engine.topology``).
"""
import numpy as np


def annulus_positions(distance_m, angle_rad, centre=(0.0, 0.0)):
    """Positions (K, 2) at the given distances and bearings around ``centre``."""
    d = np.asarray(distance_m, dtype=float)
    a = np.asarray(angle_rad, dtype=float)
    return np.asarray(centre, dtype=float) + np.stack([d * np.cos(a), d * np.sin(a)], axis=-1)


def distances(positions, centre=(0.0, 0.0)):
    """Euclidean distances (K,) of ``positions`` (K, 2) to ``centre``."""
    delta = np.asarray(positions, dtype=float) - np.asarray(centre, dtype=float)
    return np.hypot(delta[..., 0], delta[..., 1])


def uniform_in_annulus(rng, n, r_min, r_max, centre=(0.0, 0.0)):
    """``n`` points uniform in area in the annulus r_min <= r <= r_max around ``centre``.

    Draws n uniforms for the radius then n for the angle.
    """
    u = rng.random(n)
    r = np.sqrt(r_min * r_min + u * (r_max * r_max - r_min * r_min))
    angle = rng.random(n) * 2.0 * np.pi
    return annulus_positions(r, angle, centre)


def rescale_to_distance(position, centre, distance_m):
    """``position`` moved along its bearing from ``centre`` to the distance ``distance_m``."""
    position = np.asarray(position, dtype=float)
    centre = np.asarray(centre, dtype=float)
    delta = position - centre
    norm = float(np.hypot(*delta))
    if norm == 0.0:
        return centre + np.array([distance_m, 0.0])
    return centre + delta * (distance_m / norm)
