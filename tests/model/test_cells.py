"""Cell layouts (hexagonal grid, wrap-around, PPP, drops in a cell) and association rules."""
import math

import numpy as np
import pytest

from multispin_sim.model.association import ASSOCIATION_RULES, AssociationView
from multispin_sim.model.cells import (CELL_LAYOUTS, HexGrid, PoissonServers, hex_rings,
                                       link_distances, uniform_in_hexagon)


@pytest.mark.parametrize("count,rings", [(1, 0), (7, 1), (19, 2), (37, 3)])
def test_a_hex_grid_has_its_rings_and_neighbours_at_the_isd(count, rings):
    assert hex_rings(count) == rings
    grid = HexGrid(count, 500.0, wrap_around=False)
    d = link_distances(grid.sites, grid.sites)
    assert np.allclose(d[0, 0], 0.0)
    # ring j's sites are between j sqrt(3)/2 ISD and j ISD from the centre
    r = d[0] / 500.0
    assert r.max() <= rings + 1e-9
    # every site's nearest other site is one ISD away
    if count > 1:
        np.fill_diagonal(d, np.inf)
        np.testing.assert_allclose(d.min(axis=1), 500.0, rtol=1e-12)
    # sites are distinct
    assert len({(round(x, 6), round(y, 6)) for x, y in grid.sites}) == count


def test_other_counts_are_refused():
    with pytest.raises(ValueError, match="1, 7, 19"):
        hex_rings(8)


@pytest.mark.parametrize("count", [7, 19])
def test_with_wrap_around_every_site_sees_the_same_surroundings(count):
    grid = HexGrid(count, 200.0, wrap_around=True)
    d = grid.distances(grid.sites)
    rows = np.sort(d, axis=1)
    np.testing.assert_allclose(rows, np.broadcast_to(rows[0], rows.shape), rtol=1e-12, atol=1e-9)
    # the wrapped distances of the centre site are the plain ones
    plain = HexGrid(count, 200.0, wrap_around=False).distances(grid.sites[:1])
    np.testing.assert_allclose(d[0], plain[0], rtol=1e-12)
    # the cluster tiles the plane: a point uniform in a fundamental domain of the translations
    # (the parallelogram of a and b, centred) has its wrapped nearest site within the cell
    # circumradius, and each site is nearest for 1/N of the domain
    rng = np.random.default_rng(3)
    a, b = grid.lattice
    u = rng.random((40000, 2)) - 0.5
    points = u[:, :1] * a + u[:, 1:] * b
    dw = grid.distances(points)
    assert dw.min(axis=1).max() <= 200.0 / math.sqrt(3) + 1e-9
    share = np.bincount(dw.argmin(axis=1), minlength=count) / points.shape[0]
    n = points.shape[0]
    assert np.all(np.abs(share - 1 / count) < 4.5 * math.sqrt((1 / count) * (1 - 1 / count) / n))


def test_drops_in_a_hex_cell_are_uniform_in_that_cell():
    grid = HexGrid(7, 300.0, wrap_around=False)
    rng = np.random.default_rng(5)
    p = grid.drop_in_cell(rng, 3, 20000)
    d = grid.distances(p)
    assert np.all(d.argmin(axis=1) == 3)
    # the mean squared distance to the centre of a regular hexagon of inradius a is 5 a^2 / 9
    a = 150.0
    msd = float(np.mean(d[:, 3] ** 2))
    se = float(np.std(d[:, 3] ** 2) / math.sqrt(len(p)))
    assert abs(msd - 5 * a * a / 9) < 4.5 * se
    np.testing.assert_allclose(uniform_in_hexagon(np.random.default_rng(1), 5, 300.0).shape, (5, 2))


def test_a_ppp_has_poisson_counts_uniform_in_area():
    lam, radius = 2e-5, 2000.0
    mean = lam * math.pi * radius ** 2
    counts, radii = [], []
    for seed in range(300):
        s = PoissonServers(np.random.default_rng(seed), lam, radius).sites
        counts.append(s.shape[0])
        radii.append(np.hypot(*s.T) / radius)
    counts = np.array(counts)
    assert abs(counts.mean() - mean) < 4.5 * math.sqrt(mean / counts.size)
    assert abs(counts.var(ddof=1) / mean - 1) < 4.5 * math.sqrt(2 / (counts.size - 1))
    u = np.concatenate(radii) ** 2   # uniform in area: (r/R)^2 ~ U(0, 1)
    from scipy import stats
    assert stats.kstest(u, "uniform").pvalue > 1e-3


def test_every_layout_and_rule_is_registered():
    assert list(CELL_LAYOUTS) == ["single", "hex", "ppp", "graphml"]
    assert list(ASSOCIATION_RULES) == ["max-rsrp", "nearest", "load-aware", "joint"]


def view(rsrp, distance=None, t0=None, t1=None, bw=None, n0=4e-21, bits=1e5):
    rsrp = np.asarray(rsrp, dtype=float)
    s = rsrp.shape[1]
    return AssociationView(rsrp, rsrp * 0 + 1 if distance is None else np.asarray(distance),
                           np.full(s, 0.02) if t0 is None else np.asarray(t0, dtype=float),
                           np.full(s, 0.005) if t1 is None else np.asarray(t1, dtype=float),
                           np.full(s, 1e6) if bw is None else np.asarray(bw, dtype=float), n0, bits)


def test_max_rsrp_and_nearest():
    v = view([[1e-9, 2e-9, 5e-10], [3e-9, 1e-9, 1e-9]], distance=[[50, 10, 20], [5, 9, 1]])
    assert ASSOCIATION_RULES.make("max-rsrp").choose(v).tolist() == [1, 0]
    assert ASSOCIATION_RULES.make("nearest").choose(v).tolist() == [1, 2]


def test_load_aware_spreads_devices_over_servers_within_range():
    # 6 devices all strongest at server 0, server 1 within 3 dB: with equal compute the
    # batches balance; a server 10 dB down (out of a 6 dB range) gets nobody
    rsrp = np.tile([1e-9, 0.6e-9, 1e-10], (6, 1)) * np.linspace(1, 1.1, 6)[:, None]
    choice = ASSOCIATION_RULES.make("load-aware", 6.0).choose(view(rsrp))
    assert np.bincount(choice, minlength=3).tolist() == [3, 3, 0]
    # a server twice as fast per device takes twice the devices (cost T0 + (n + 1) T1)
    choice = ASSOCIATION_RULES.make("load-aware", 6.0).choose(
        view(rsrp, t0=[0.0, 0.0, 0.0], t1=[0.01, 0.005, 0.01]))
    assert np.bincount(choice, minlength=3).tolist() == [2, 4, 0]


def test_joint_trades_airtime_for_compute():
    # one device, two servers: the weaker radio link wins when its server verifies enough
    # faster to pay for the longer correction (the cost computed here independently)
    rsrp = np.array([[4e-12, 1e-12]])
    n0, bw, bits = 4e-21, 1e6, 5e4
    for t0_b, expect in ((0.0, 1), (0.2, 0)):
        v = view(rsrp, t0=[0.2, t0_b], t1=[0.0, 0.0], bw=[bw, bw], n0=n0, bits=bits)
        cost = [t0 + bits / (bw * math.log2(1 + s / (n0 * bw + i)))
                for t0, s, i in ((0.2, 4e-12, 1e-12), (t0_b, 1e-12, 4e-12))]
        assert int(np.argmin(cost)) == expect
        assert ASSOCIATION_RULES.make("joint").choose(v).tolist() == [expect]


def test_re_evaluation_moves_devices_only_on_the_loads():
    # 2 servers, equal RSRP; 6 devices all on server 0: load-aware moves half of them (the best
    # response: a device leaves while T0 + n0 T1 > T0 + (n1 + 1) T1), max-rsrp moves none
    view = AssociationView(np.ones((6, 2)), np.ones((6, 2)), np.zeros(2), np.full(2, 1e-3),
                           serving=np.zeros(6, dtype=np.int64))
    moved = ASSOCIATION_RULES.lookup("load-aware")(range_db=6.0).reevaluate(view)
    assert np.bincount(moved, minlength=2).tolist() == [3, 3]
    assert ASSOCIATION_RULES.lookup("max-rsrp")().reevaluate(view).tolist() == [0] * 6
    # only the movable devices move
    fixed = np.array([True, True, False, False, False, False])
    import dataclasses
    some = ASSOCIATION_RULES.lookup("load-aware")(range_db=6.0).reevaluate(
        dataclasses.replace(view, movable=fixed))
    assert some[2:].tolist() == [0] * 4 and np.bincount(some, minlength=2).tolist() == [4, 2]
