"""Topology (networkx graph, positions -> distances -> path loss) and random-waypoint mobility."""

import networkx as nx
import numpy as np
import pytest

import multispin_sim as ms
from multispin_sim.engine.streams import RandomStreams
from multispin_sim.model.mobility import RandomWaypoint
from multispin_sim.model.pathloss import pathloss_gain
from multispin_sim.model.topology import annulus_positions, distances
from multispin_sim.scenario import ScenarioError


def run(overrides, **kw):
    return ms.simulate(ms.load_scenario(None, overrides=overrides), **kw)


def test_default_annulus_keeps_the_paper_draws(tmp_path):
    r = run({"run.rounds": 5}, out=tmp_path / "x")
    dev, pop = r.devices, r.population
    # the devices stream is drawn exactly as before: task, spread, distance, 20 of each
    rng = RandomStreams(1).devices
    rng.integers(0, 4, size=20)
    rng.uniform(1.0, 1.15, size=20)
    np.testing.assert_array_equal(dev["distance_m"], rng.uniform(100.0, 500.0, size=20))
    np.testing.assert_array_equal(dev["pathloss_gain"], pathloss_gain(dev["distance_m"]))
    # positions on the annulus around the server at (0, 0)
    np.testing.assert_allclose(distances(pop.positions, (0, 0)), dev["distance_m"], rtol=1e-12)
    g = pop.graph
    assert g.number_of_nodes() == 21 and g.number_of_edges() == 20
    assert g.nodes["server"]["role"] == "server"
    for k in range(20):
        assert g.edges["server", k]["distance_m"] == dev["distance_m"][k]
        assert g.nodes[k]["x_m"] == pop.positions[k, 0]
    # the graph is written with the run
    back = nx.read_graphml(tmp_path / "x" / "topology.graphml")
    assert back.number_of_nodes() == 21
    assert float(back.nodes["0"]["x_m"]) == pytest.approx(pop.positions[0, 0], rel=1e-12)


def test_distance_override_moves_along_the_bearing():
    r = run({"devices.count": 3, "devices.overrides": {1: {"distance_m": 42.0}}, "run.rounds": 2})
    pop = r.population
    assert pop.distance_m[1] == 42.0
    assert distances(pop.positions, (0, 0))[1] == pytest.approx(42.0, rel=1e-12)


def test_coordinates_layout():
    xy = [[30.0, 40.0], [-100.0, 0.0], [10.0, 10.0]]
    r = run({"devices.count": 3, "topology.layout": "coordinates", "topology.server_xy_m": [10.0, 0.0],
             "topology.device_xy_m": xy, "run.rounds": 3})
    dev = r.devices
    expect = np.hypot(np.array(xy)[:, 0] - 10.0, np.array(xy)[:, 1])
    np.testing.assert_allclose(dev["distance_m"], expect, rtol=1e-12)
    np.testing.assert_allclose(dev["pathloss_gain"], 1e-3 * expect**-3.5, rtol=1e-12)


def write_graphml(path, server, devices, role=True):
    g = nx.Graph()
    g.add_node("bs", x=server[0], y=server[1], **({"role": "server"} if role else {}))
    for i, (x, y) in enumerate(devices):
        g.add_node(f"ue{i}", x=x, y=y)
        g.add_edge("bs", f"ue{i}")
    nx.write_graphml(g, path)


def test_graphml_layout(tmp_path):
    f = tmp_path / "cell.graphml"
    write_graphml(f, (5.0, 5.0), [(105.0, 5.0), (5.0, 305.0)])
    r = run({"devices.count": 2, "topology.layout": "graphml", "topology.graphml_file": str(f),
             "run.rounds": 3})
    np.testing.assert_allclose(r.devices["distance_m"], [100.0, 300.0], rtol=1e-12)
    np.testing.assert_allclose(r.population.server_position, [5.0, 5.0])


@pytest.mark.parametrize("devices, role, fragment", [
    ([(1.0, 1.0)], True, "device nodes"),
    ([(1.0, 1.0), (2.0, 2.0)], False, "no server node"),
    ([(5.0, 5.0), (2.0, 2.0)], True, "at the server position"),
])
def test_graphml_errors(tmp_path, devices, role, fragment):
    f = tmp_path / "cell.graphml"
    write_graphml(f, (5.0, 5.0), devices, role=role)
    with pytest.raises(ScenarioError) as info:
        run({"devices.count": 2, "topology.layout": "graphml", "topology.graphml_file": str(f)},
            out=tmp_path / "out")
    assert info.value.path == "topology.graphml_file" and fragment in str(info.value)
    assert not (tmp_path / "out").exists()


def test_a_runs_own_topology_file_places_its_devices_again(tmp_path):
    first = run({"run.rounds": 20}, out=tmp_path / "a")
    again = run({"run.rounds": 20, "topology.layout": "graphml",
                 "topology.graphml_file": str(tmp_path / "a" / "topology.graphml")})
    np.testing.assert_allclose(again.population.positions, first.population.positions, rtol=1e-12)
    np.testing.assert_allclose(again.devices["distance_m"], first.devices["distance_m"], rtol=1e-12)
    # the layout draws nothing the other streams see: the same channels, the same rounds
    for column in ("gain_ul", "gain_dl"):
        np.testing.assert_allclose(again.device_rounds[column], first.device_rounds[column],
                                   rtol=1e-12)
    np.testing.assert_allclose(again.rounds["duration_s"], first.rounds["duration_s"], rtol=1e-12)


def test_graphml_servers_without_coordinates_are_refused(tmp_path):
    g = nx.Graph()
    g.add_node("bs0", role="server", x=0.0, y=0.0)
    g.add_node("bs1", role="server", name="no position")
    nx.write_graphml(g, tmp_path / "sites.graphml")
    with pytest.raises(ScenarioError) as info:
        run({"cells.layout": "graphml", "topology.graphml_file": str(tmp_path / "sites.graphml")},
            out=tmp_path / "out")
    assert info.value.path == "topology.graphml_file" and "'bs1'" in str(info.value)
    assert not (tmp_path / "out").exists()


def test_random_waypoint_moves_at_its_speed():
    rng = np.random.default_rng(4)
    start = np.array([[200.0, 0.0], [0.0, 300.0]])
    walk = RandomWaypoint(start, (0.0, 0.0), (100.0, 500.0), (2.0, 2.0), 0.0, rng)
    prev = walk.pos.copy()
    for t in np.arange(1.0, 2000.0, 1.0):
        pos = walk.advance(t).copy()
        step = np.hypot(*(pos - prev).T)
        assert np.all(step <= 2.0 + 1e-9)  # never faster than its speed (corners cut short)
        assert np.all(distances(pos) <= 500.0 + 1e-9)  # the disc is convex
        prev = pos
    # without pauses, the distance travelled is speed x time
    np.testing.assert_allclose(walk.travelled, 2.0 * 1999.0, rtol=1e-9)
    # pauses: a device that reached its waypoint stays there for pause_s
    walk = RandomWaypoint(start, (0.0, 0.0), (100.0, 500.0), (5.0, 5.0), 50.0, np.random.default_rng(5))
    walk.advance(10_000.0)
    assert walk.travelled.max() < 5.0 * 10_000.0 * 0.95


def test_random_waypoint_path_depends_on_the_seed_only():
    """Asked at 2,000 instants or once, a walk is at the same place having gone as far: the
    legs come from each device's own stream, not from the order positions are asked for."""
    start = np.array([[200.0, 0.0], [0.0, 300.0], [-150.0, -150.0]])
    walks = [RandomWaypoint(start, (0.0, 0.0), (100.0, 500.0), (0.5, 2.0), 5.0,
                            np.random.default_rng(11)) for _ in range(2)]
    for t in np.sort(np.random.default_rng(2).uniform(0.0, 1e5, 2000)):
        walks[0].advance(t)
    for w in walks:
        w.advance(1e5)
    np.testing.assert_allclose(walks[0].pos, walks[1].pos, rtol=0, atol=1e-6)
    np.testing.assert_allclose(walks[0].travelled, walks[1].travelled, rtol=1e-9)


def test_random_waypoint_long_run_speed_is_the_renewal_rate():
    """Over 1e9 s (millions of legs, as a round of a hopeless link budget would ask), each
    device's distance over time is the renewal-reward rate E[L] / (E[L] / v + pause), E[L] the
    mean distance between two points uniform in the annulus (Monte Carlo, 1e6 pairs: 0.05%);
    a device's own figure has a relative standard deviation under 0.05% (3e6 legs), so 0.5%."""
    v, pause, t = 1.5, 5.0, 1e9
    start = np.array([[200.0, 0.0], [0.0, 300.0], [-150.0, -150.0]])
    walk = RandomWaypoint(start, (0.0, 0.0), (100.0, 500.0), (v, v), pause,
                          np.random.default_rng(12))
    pos = walk.advance(t)
    assert np.all(distances(pos) <= 500.0 + 1e-9)
    rng = np.random.default_rng(13)   # points uniform in area in the annulus: r^2 uniform
    r = np.sqrt(100.0 ** 2 + rng.random(2_000_000) * (500.0 ** 2 - 100.0 ** 2))
    pairs = annulus_positions(r, rng.random(r.size) * 2.0 * np.pi)
    mean_leg = np.hypot(*(pairs[::2] - pairs[1::2]).T).mean()
    np.testing.assert_allclose(walk.travelled / t, mean_leg / (mean_leg / v + pause),
                               rtol=5e-3)


def test_mobility_in_the_engine():
    """Devices move between rounds; the recorded distance follows the walk and the path loss
    the distance (no fading: the gain is the path loss)."""
    r = run({"devices.count": 4, "mobility.model": "random-waypoint", "mobility.speed_mps": 20.0,
             "channel.fading": "none", "run.rounds": 600, "seed": 6})
    dr, rounds = r.device_rounds, r.rounds
    d = dr["distance_m"].reshape(-1, 4)
    g = dr["gain_ul"].reshape(-1, 4)
    np.testing.assert_allclose(g, 1e-3 * np.maximum(d, 1.0) ** -3.5, rtol=1e-12)
    dt = np.diff(rounds["start_s"])
    assert np.all(np.abs(np.diff(d, axis=0)) <= 20.0 * dt[:, None] + 1e-9)
    assert np.ptp(d, axis=0).min() > 50.0  # everybody moved
    assert d[0].tolist() == pytest.approx(r.devices["distance_m"].tolist(), abs=20.0 * rounds["start_s"][0] + 1e-9)
    # the same seed without mobility: same devices, same acceptance outcomes
    still = run({"devices.count": 4, "channel.fading": "none", "run.rounds": 600, "seed": 6})
    np.testing.assert_array_equal(still.devices["distance_m"], r.devices["distance_m"])
    np.testing.assert_array_equal(still.device_rounds["accepted"], dr["accepted"])


def test_mobility_with_shadowing_and_queueing():
    r = run({"devices.count": 5, "mobility.model": "random-waypoint", "mobility.speed_mps": [1.0, 3.0],
             "mobility.pause_s": 2.0, "channel.shadowing_db": 6.0, "workload.arrivals": "poisson",
             "workload.rate_per_s": 0.1, "run.rounds": 800, "seed": 2})
    dr = r.device_rounds
    assert "distance_m" in dr and np.all(dr["distance_m"] > 0)
    req = r.summary["requests"]
    assert req["little"]["in_system_mean"] == pytest.approx(
        req["little"]["arrival_rate_x_mean_time_in_system"], rel=1e-9)
