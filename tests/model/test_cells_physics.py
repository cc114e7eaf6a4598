"""Multi-cell geometry and large-scale physics against brute force and closed forms: the
reuse-3 plan of a hexagonal grid, the wrap-around distance for any position, the drops, the
'joint' rule's SINR, and the spatially consistent LOS state and shadowing of moving devices."""
import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

import multispin_sim as ms
from multispin_sim.engine.cell_plan import (association_view, cell_layout, cell_plan,
                                            drop_over_region, initial_positions,
                                            wrapped_population)
from multispin_sim.engine.cells import Links
from multispin_sim.engine.population import build_population
from multispin_sim.model.association import ASSOCIATION_RULES, AssociationView
from multispin_sim.model.cells import HexGrid, PoissonServers, link_distances
from multispin_sim.model.pathloss import pathloss_gain
from multispin_sim.model.pathloss_3gpp import PATHLOSS_MODELS, PowerLaw, UMi
from multispin_sim.model.pathloss_spatial import ConsistentLinks
from multispin_sim.model.sinr import cochannel
from multispin_sim.scenario import ScenarioError


def scenario(**overrides):
    return ms.load_scenario(None, overrides=overrides)


def brute_force_distances(grid, points, reach):
    """Distances to the nearest of every image i a + j b, |i|, |j| <= reach."""
    a, b = grid.lattice
    best = np.full((len(points), grid.count), np.inf)
    for i in range(-reach, reach + 1):
        for j in range(-reach, reach + 1):
            best = np.minimum(best, link_distances(points, grid.sites + i * a + j * b))
    return best


# -- reuse 3 ---------------------------------------------------------------------------------

@pytest.mark.parametrize("count", [7, 19, 37])
def test_reuse_3_on_a_hex_grid_gives_no_neighbours_the_same_sub_band(count):
    isd = 100.0
    grid = HexGrid(count, isd, wrap_around=False)
    d = link_distances(grid.sites, grid.sites)
    co = cochannel(grid, 3)
    adjacent = np.isclose(d, isd)
    assert adjacent.sum() > 0 and not np.any(adjacent & co)
    # the nearest co-channel site of any cell that has one is sqrt(3) ISD away
    nearest = np.where(co, d, np.inf).min(axis=1)
    has = np.isfinite(nearest)
    np.testing.assert_allclose(nearest[has], math.sqrt(3) * isd, rtol=1e-12)
    # the three colours tile the plane: the centre's 6 neighbours alternate the other two
    colours = grid.colours(3)
    ring = colours[1:7]
    assert colours[0] not in ring and np.all(ring != np.roll(ring, 1))
    # reuse 1: every other cell
    assert np.array_equal(cochannel(grid, 1), ~np.eye(count, dtype=bool))


def proper_3_colouring_exists(adjacent):
    """Backtracking: can the graph be coloured with 3 colours, no edge monochrome?"""
    n = adjacent.shape[0]
    colour = [-1] * n
    neighbours = [np.flatnonzero(adjacent[i]).tolist() for i in range(n)]

    def place(i):
        if i == n:
            return True
        for c in range(3):
            if all(colour[j] != c for j in neighbours[i]):
                colour[i] = c
                if place(i + 1):
                    return True
        colour[i] = -1
        return False
    return place(0)


@pytest.mark.parametrize("count", [7, 19, 37])
def test_no_wrap_around_cluster_has_a_reuse_3_plan_so_it_is_refused(count):
    isd = 100.0
    wrapped = HexGrid(count, isd, wrap_around=True)
    d = wrapped.distances(wrapped.sites)
    adjacent = np.isclose(d, isd)
    assert proper_3_colouring_exists(np.isclose(
        link_distances(wrapped.sites, wrapped.sites), isd))   # the plain grid has one
    assert not proper_3_colouring_exists(adjacent)
    with pytest.raises(ValueError, match="wrap-around"):
        wrapped.colours(3)
    keys = {"cells.layout": "hex", "cells.count": count, "cells.reuse": 3}
    with pytest.raises(ScenarioError, match="cells.wrap_around") as err:
        scenario(**keys)
    assert err.value.path == "cells.reuse" and "\n" not in str(err.value)
    assert scenario(**keys, **{"cells.wrap_around": False}).cells.reuse == 3


# -- wrap-around distances -------------------------------------------------------------------

@pytest.mark.parametrize("count", [7, 19])
def test_wrapped_distances_are_the_torus_distances_for_any_position(count):
    isd = 100.0
    grid = HexGrid(count, isd, wrap_around=True)
    rng = np.random.default_rng(38901)
    # points up to 30 ISD away: far outside the cluster, where the 7 nearest images fail
    points = rng.uniform(-30 * isd, 30 * isd, size=(3000, 2))
    reach = int(np.ceil(60 * isd / np.hypot(*grid.lattice[0]))) + 2
    np.testing.assert_allclose(grid.distances(points),
                               brute_force_distances(grid, points, reach), rtol=1e-9)
    # a point and its image nearest a site are the same point of the torus
    for cell in (0, count - 1):
        image = grid.nearest_image(points, cell)
        ij = np.linalg.solve(grid.lattice.T, (points - image).T)
        np.testing.assert_allclose(ij, np.round(ij), atol=1e-9)
        np.testing.assert_allclose(np.hypot(*(image - grid.sites[cell]).T),
                                   grid.distances(points)[:, cell], rtol=1e-9)
        np.testing.assert_allclose(grid.distances(image), grid.distances(points), rtol=1e-9)
    # within the inradius sqrt(N) ISD / 2 of the torus's hexagonal fundamental region around
    # its own site a point is its own nearest image
    inradius = math.sqrt(count) * isd / 2.0
    near = grid.sites[2] + 0.999 * inradius * np.column_stack(
        [np.cos(np.linspace(0, 2 * np.pi, 50)), np.sin(np.linspace(0, 2 * np.pi, 50))])
    assert np.array_equal(grid.nearest_image(near, 2), near)


def test_a_per_cell_drop_beyond_the_torus_is_seen_at_its_wrapped_distance():
    # 100 to 500 m from the site at ISD 100 (torus inradius sqrt(7) 50 = 132 m): the devices'
    # own distance (devices.csv) and own gain are the wrapped ones, shadowing kept
    sc = scenario(**{"cells.layout": "hex", "cells.count": 7, "cells.isd_m": 100.0,
                     "devices.count": 40, "channel.shadowing_db": 6.0})
    layout = HexGrid(7, 100.0, wrap_around=True)
    cell = 4
    cell_sc = dataclasses.replace(sc, topology=dataclasses.replace(
        sc.topology, server_xy_m=tuple(float(v) for v in layout.sites[cell])))
    pop = build_population(cell_sc, np.random.default_rng(1), np.random.default_rng(2),
                           np.random.default_rng(3))
    model = PowerLaw.from_scenario(sc)
    seen = wrapped_population(layout, model, cell, pop)
    wrapped = layout.distances(pop.positions)[:, cell]
    assert np.any(wrapped < pop.distance_m - 1.0)
    np.testing.assert_allclose(seen.distance_m, wrapped, rtol=1e-12)
    np.testing.assert_allclose(np.hypot(*(seen.positions - layout.sites[cell]).T), wrapped,
                               rtol=1e-12)
    expect = (pathloss_gain(wrapped, sc.channel.ref_gain_db, sc.channel.pathloss_exponent)
              * 10 ** (pop.shadowing_db / 10))
    np.testing.assert_allclose(seen.system.pathloss, expect, rtol=1e-12)
    # inside the torus nothing changes, to the bit
    big = HexGrid(7, 1000.0, wrap_around=True)
    assert wrapped_population(big, model, 0, pop) is pop


def test_region_drops_report_the_wrapped_distance_their_gains_use():
    sc = scenario(**{"cells.layout": "hex", "cells.count": 7, "cells.isd_m": 200.0,
                     "cells.drop": "region", "devices.count": 70, "cells.pathloss": "umi"})
    rng = np.random.default_rng(5)
    layout = cell_layout(sc, rng)
    model = PATHLOSS_MODELS.lookup("umi").from_scenario(sc)
    links = Links(layout, model, rng)
    plan = cell_plan(sc, layout, model, links, rng)
    assert sum(c_sc.devices.count for _, c_sc in plan) == 70
    for c, c_sc in plan:
        xy = np.array(c_sc.topology.device_xy_m)
        plain = np.hypot(*(xy - layout.sites[c]).T)   # what the population reports
        np.testing.assert_allclose(plain, layout.distances(xy)[:, c], rtol=1e-12)
        # the gains the association drew are those of these distances' torus points
        assert links.drawn[c].shape == (len(xy), 7)


# -- drops -----------------------------------------------------------------------------------

def test_per_cell_drops_of_moving_devices_are_uniform_in_distance_as_static_ones():
    sc = scenario(**{"cells.layout": "hex", "cells.count": 7, "cells.isd_m": 5000.0,
                     "devices.count": 600, "devices.distance_m": [100.0, 500.0]})
    layout = HexGrid(7, 5000.0)
    pos = initial_positions(sc, layout, np.random.default_rng(11))
    d = np.hypot(*(pos - np.repeat(layout.sites, 600, axis=0)).T)
    # the static per-cell drop (the annulus layout) draws the distance uniformly
    assert stats.kstest((d - 100.0) / 400.0, "uniform").pvalue > 1e-3
    bearings = np.arctan2(*(pos - np.repeat(layout.sites, 600, axis=0)).T[::-1])
    assert stats.kstest((bearings + np.pi) / (2 * np.pi), "uniform").pvalue > 1e-3


def test_region_drops_of_a_poisson_layout_cover_its_disc():
    radius = 1000.0
    rng = np.random.default_rng(7)
    layout = PoissonServers(rng, 3e-6, radius, centre=(250.0, -40.0))   # a few servers
    assert layout.count >= 1
    np.testing.assert_array_equal(layout.centre, [250.0, -40.0])
    sc = SimpleNamespace(devices=SimpleNamespace(count=20000),
                         cells=SimpleNamespace(region_m=radius))
    r = np.hypot(*(drop_over_region(sc, layout, rng) - layout.centre).T)
    assert r.max() <= radius
    assert stats.kstest((r / radius) ** 2, "uniform").pvalue > 1e-3


# -- the 'joint' rule ------------------------------------------------------------------------

def joint_view(rsrp, bandwidth, co, n0=4e-21, bits=2e4):
    s = rsrp.shape[1]
    return AssociationView(rsrp, np.ones_like(rsrp), np.zeros(s), np.zeros(s), bandwidth, n0,
                           bits, cochannel=co)


def test_joint_counts_only_co_channel_servers_and_a_share_independent_sinr():
    rsrp = np.array([[1e-10, 8e-11, 5e-12]])
    n0, bits = 4e-21, 2e4
    band = np.full(3, 20e6 / 3)
    joint = ASSOCIATION_RULES.make("joint")
    # reuse 3 on three servers of three colours: no interference at all
    grid = HexGrid(7, 100.0, wrap_around=False)
    co = cochannel(grid, 3)[:3, :3]
    assert not co.any()
    for counts in (np.zeros(3), np.array([0.0, 4.0, 9.0])):
        share = band / (counts + 1)
        expect = bits / (share * np.log2(1 + rsrp[0] / (n0 * band)))
        np.testing.assert_allclose(joint.cost(joint_view(rsrp, band, co), 0, counts), expect,
                                   rtol=1e-12)
    # reuse 1: each server's power spread over its band, so signal, interference and noise
    # scale alike with the share
    co1 = ~np.eye(3, dtype=bool)
    counts = np.array([3.0, 0.0, 1.0])
    psd = rsrp[0] / band
    sinr = psd / (n0 + co1.astype(float) @ psd)
    expect = bits / (band / (counts + 1) * np.log2(1 + sinr))
    np.testing.assert_allclose(joint.cost(joint_view(rsrp, band, None), 0, counts), expect,
                               rtol=1e-12)


def test_the_association_view_carries_the_reuse_plan():
    sc = scenario(**{"cells.layout": "hex", "cells.count": 7, "cells.wrap_around": False,
                     "cells.reuse": 3})
    layout = HexGrid(7, 500.0, wrap_around=False)
    pos = layout.sites + 10.0
    view = association_view(sc, layout, np.ones((7, 7)), pos)
    assert np.array_equal(view.cochannel, cochannel(layout, 3))


# -- spatially consistent LOS state and shadowing -------------------------------------------

def test_links_that_have_not_moved_are_the_static_drop():
    model = UMi()
    d = np.random.default_rng(0).uniform(20, 400, size=(30, 7))
    gain, los = model.draw(np.random.default_rng(9), d)
    links = ConsistentLinks(model, np.random.default_rng(9), d, 50.0, np.random.default_rng(1))
    assert np.array_equal(links.gain, gain) and np.array_equal(links.los, los)
    links.at(d, np.zeros(30))
    assert np.array_equal(links.gain, gain) and np.array_equal(links.los, los)


def test_the_los_fraction_follows_the_distance_a_device_reaches():
    # every link starts 30 m from its server and walks away to 200 m in 10 m steps: the LOS
    # fraction is P_LOS at the distance reached, not at the drop
    model = UMi()
    n = 20000
    links = ConsistentLinks(model, np.random.default_rng(3), np.full((n, 1), 30.0), 50.0,
                            np.random.default_rng(4))
    p0 = float(model.los_probability(30.0))
    assert abs(links.los.mean() - p0) < 4.5 * math.sqrt(p0 * (1 - p0) / n)
    for d in np.arange(40.0, 201.0, 10.0):
        links.at(np.full((n, 1), d), np.full(n, d - 30.0))
    p = float(model.los_probability(200.0))
    assert abs(links.los.mean() - p) < 4.5 * math.sqrt(p * (1 - p) / n)


def test_the_los_state_flips_as_a_gaussian_copula_of_the_correlation_distance():
    # moving m metres at a constant distance: P(flip) = 2 (p - Phi2(a, a; rho)), a = Phi^-1(p),
    # rho = exp(-m / 50 m) (TR 38.901 Table 7.6.3.1-2)
    model = UMi()
    n, dist, moved = 40000, 60.0, 20.0
    links = ConsistentLinks(model, np.random.default_rng(5), np.full((n, 1), dist), 50.0,
                            np.random.default_rng(6))
    before = links.los.copy()
    links.at(np.full((n, 1), dist), np.full(n, moved))
    p = float(model.los_probability(dist))
    a, rho = stats.norm.ppf(p), math.exp(-moved / model.los_correlation_m)
    both = stats.multivariate_normal([0, 0], [[1, rho], [rho, 1]]).cdf([a, a])
    expect = 2 * (p - both)
    flips = float(np.mean(before != links.los))
    assert abs(flips - expect) < 4.5 * math.sqrt(expect * (1 - expect) / n)


def test_shadowing_decorrelates_with_the_distance_moved():
    # Gudmundson: corr = exp(-moved / d_corr), the marginal N(0, sigma^2) kept
    sigma, corr_m, moved = 8.0, 50.0, 35.0
    model = PowerLaw(-30.0, 3.5, sigma)
    n = 40000
    d = np.full((n, 2), 120.0)
    links = ConsistentLinks(model, np.random.default_rng(7), d, corr_m,
                            np.random.default_rng(8))
    mean_db = model.gain_db(d)
    s0 = 10 * np.log10(links.gain) - mean_db
    s1 = 10 * np.log10(links.at(d, np.full(n, moved))) - mean_db
    r = np.corrcoef(s0.ravel(), s1.ravel())[0, 1]
    assert abs(r - math.exp(-moved / corr_m)) < 4.5 / math.sqrt(2 * n)
    assert abs(s1.std() / sigma - 1) < 4.5 / math.sqrt(2 * 2 * n)
    assert np.all(links.los)


def test_links_do_not_depend_on_how_often_they_are_read():
    """The gains after a walk are the same whether the links were read at every metre or only
    at its end: LOS states and shadowing follow the distance walked, not the reads."""
    model = UMi()
    d = np.random.default_rng(0).uniform(20, 400, size=(12, 3))
    often, rarely = (ConsistentLinks(model, np.random.default_rng(9), d, 20.0,
                                     np.random.default_rng(1)) for _ in range(2))
    speeds = np.linspace(0.5, 2.0, 12)
    for t in np.arange(1.0, 201.0):
        often.at(d, speeds * t)
    rarely.at(d, speeds * 200.0)
    np.testing.assert_allclose(rarely.gain, often.gain, rtol=1e-12, atol=0)
    assert np.array_equal(rarely.los, often.los)
    drop, _ = model.draw(np.random.default_rng(9), d)
    assert np.all(rarely.gain != drop)   # 100 to 400 m walked, shadowing decorrelates over 20 m
