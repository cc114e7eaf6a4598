"""A multi-antenna server without fading: each device's channel is the array's line of sight
toward it, so a shared band's streams depend on the geometry.

Closed forms written here, from the positions: a uniform linear array of M elements spaced
d wavelengths sees a device at bearing phi through s_i = exp(j 2 pi d i sin(phi - broadside)),
and two devices' vectors meet with |s_1^H s_2|^2 = sin^2(pi M d D) / sin^2(pi d D),
D = sin(phi_2 - broadside) - sin(phi_1 - broadside) (the Dirichlet kernel). Two ZF streams
with unit-norm columns then have gains G_k M (1 - |c|^2 / M^2); two MMSE streams the SINRs
r_1 M - r_1 r_2 |c|^2 / (1 + r_2 M), r_k = p_k G_k / N.
"""
import math

import numpy as np
import pytest

import multispin_sim as ms
from multispin_sim.engine.simulation import build_run
from multispin_sim.model.antennas import ServerArray

M, SPACING = 4, 0.5


def _run(xy, broadside_deg=0.0, **extra):
    over = {"devices.count": len(xy), "topology.layout": "coordinates",
            "topology.server_xy_m": [0.0, 0.0], "topology.device_xy_m": xy,
            "server.antennas": M, "server.antenna_spacing": SPACING,
            "server.array_broadside_deg": broadside_deg, "channel.fading": "none",
            "server.dl_scheme": "mu-mimo-zf", "server.ul_scheme": "mu-mimo-mmse",
            "run.rounds": 60, "seed": 2,
            **{f"devices.overrides.{i}.alpha": 0.02 for i in range(len(xy))}, **extra}
    res = ms.simulate(ms.load_scenario(None, overrides=over))
    return res, {c: np.asarray(v) for c, v in res.device_rounds.items()}


def _dirichlet(xy, broadside_deg):
    """|s_1^H s_2|^2 of the two devices at ``xy``, from their bearings."""
    phi = [math.atan2(y, x) - math.radians(broadside_deg) for x, y in xy]
    delta = math.sin(phi[1]) - math.sin(phi[0])
    return (math.sin(math.pi * M * SPACING * delta) / math.sin(math.pi * SPACING * delta)) ** 2


def _both(dr, mode):
    """Rows (round, device) where both devices sent on ``mode``, ordered by device."""
    on = dr["mode"] == mode
    rounds = [r for r in np.unique(dr["round"][on])
              if np.count_nonzero(on & (dr["round"] == r)) == 2]
    sel = np.isin(dr["round"], rounds) & on
    return {c: v[sel].reshape(len(rounds), 2) for c, v in dr.items()}


@pytest.mark.parametrize("broadside", [0.0, 30.0])
def test_two_zf_streams_lose_what_their_vectors_share(broadside):
    xy = [[98.0, 20.0], [100.0, 0.0]]
    res, dr = _run(xy, broadside, **{"policy.mode": "all-dl"})
    g = np.asarray(res.devices["pathloss_gain"])
    rows = _both(dr, "dl")
    assert len(rows["round"]) > 40
    np.testing.assert_allclose(rows["gain_dl"], np.broadcast_to(M * g, rows["gain_dl"].shape),
                               rtol=1e-12)
    c2 = _dirichlet(xy, broadside)
    assert c2 / M ** 2 > 0.3   # the two vectors share much of their direction
    np.testing.assert_allclose(rows["gain_eff"],
                               np.broadcast_to(g * M * (1 - c2 / M ** 2), rows["gain_eff"].shape),
                               rtol=1e-9)


def test_two_mmse_streams_interfere_through_their_vectors():
    xy = [[98.0, 20.0], [100.0, -5.0]]
    res, dr = _run(xy, **{"policy.mode": "all-ul"})
    sc = res.scenario
    g = np.asarray(res.devices["pathloss_gain"])
    p = np.asarray(res.devices["ul_power_w"])
    noise = 10 ** ((sc.channel.noise_psd_dbm_hz - 30) / 10) * sc.channel.bandwidth_mhz * 1e6
    r = p * g / noise   # both on UL: the pooled band is the whole band
    c2 = _dirichlet(xy, 0.0)
    want = r * M - r * r[::-1] * c2 / (1 + r[::-1] * M)
    rows = _both(dr, "ul")
    assert len(rows["round"]) > 40
    np.testing.assert_allclose(rows["snr_eff"], np.broadcast_to(want, rows["snr_eff"].shape),
                               rtol=1e-9)


def test_devices_mirrored_across_the_array_axis_share_one_vector():
    """A linear array cannot tell front from back: devices mirrored across its axis have one
    vector, their ZF pair is singular, and the optimal split never puts them on one DL set;
    with the array turned to face between them they are told apart."""
    xy = [[80.0, 60.0], [-80.0, 60.0]]   # bearings 36.9 and 143.1 degrees: one sine, 0.6
    _, dr = _run(xy, 0.0, **{"run.rounds": 40})
    assert len(_both(dr, "dl")["round"]) == 0 and np.isfinite(dr["delay_s"]).all()
    assert (dr["mode"] == "dl").sum() > 10   # DL is used, one device at a time
    _, dr = _run(xy, 90.0, **{"run.rounds": 40, "policy.mode": "all-dl"})
    rows = _both(dr, "dl")   # facing +y: sines -0.8 and 0.8, vectors apart
    assert len(rows["round"]) > 30 and (rows["gain_eff"] > 0).all()


def test_the_line_of_sight_follows_the_bearings_at_each_round_start():
    array = ServerArray(M, spacing=SPACING, broadside_rad=0.0)
    where = {"phi": np.array([0.0, 0.3])}
    los = array.line_of_sight(lambda: where["phi"], 2)
    source = array.rounds("none", np.random.default_rng(0), 2, True, 0.0, los=los)
    for phi in ([0.0, 0.3], [0.1, -1.2]):
        where["phi"] = np.array(phi)
        h_ul, h_dl = source.round_powers(0.0)
        want = np.exp(2j * np.pi * SPACING * np.sin(np.array(phi))[:, None] * np.arange(M))
        np.testing.assert_allclose(h_ul, want, rtol=1e-12)
        assert h_dl is h_ul
    grid = array.grid("none", np.random.default_rng(0), 2, True, 0.0, 1e-3, los=los)
    np.testing.assert_allclose(grid.powers_at(5.0)[0], want, rtol=1e-12)
    where["phi"] = np.array([0.5, 0.5])
    np.testing.assert_allclose(grid.powers_at(5.0)[0][0], grid.powers_at(5.0)[0][1], rtol=1e-15)


def test_moving_devices_are_seen_at_their_bearing_of_the_round(tmp_path):
    """Random waypoint without fading: every round's DL pair has the ZF gains of the bearings
    and path loss the devices had at the round's start (the mover's, read here)."""
    over = {"devices.count": 2, "server.antennas": M, "channel.fading": "none",
            "server.dl_scheme": "mu-mimo-zf", "policy.mode": "all-dl", "run.rounds": 40,
            "mobility.model": "random-waypoint", "mobility.speed_mps": [20.0, 30.0], "seed": 4,
            **{f"devices.overrides.{i}.alpha": 0.02 for i in range(2)}}
    sc = ms.load_scenario(None, overrides=over)
    seen = []

    def hook(mover):
        gains = mover.gains

        def record(t):
            out = gains(t)
            seen.append((mover.bearings().copy(), np.array(out)))
            return out
        mover.gains = record
        return mover

    run = build_run(sc, tmp_path, {}, mover_hook=hook)
    run.env.run(until=run.start())
    dr = {c: np.asarray(v) for c, v in run.finish().device_rounds.items()}
    rows = _both(dr, "dl")
    assert len(rows["round"]) > 30
    turned = 0.0
    for r, gain_eff in zip(rows["round"][:, 0], rows["gain_eff"]):
        phi, g = seen[r]
        delta = math.sin(phi[1]) - math.sin(phi[0])
        c2 = (math.sin(math.pi * M * SPACING * delta) / math.sin(math.pi * SPACING * delta)) ** 2
        np.testing.assert_allclose(gain_eff, g * M * (1 - c2 / M ** 2), rtol=1e-9)
        turned = max(turned, abs(phi[0] - seen[0][0][0]))
    assert turned > 0.01   # the devices' bearings did change over the run


def test_a_cell_sees_a_moving_device_from_its_own_server_on_the_torus():
    """In several cells a device's bearing is from the cell's server to the device's image
    nearest it (wrap-around): the same geometry as its gain."""
    from types import SimpleNamespace

    from multispin_sim.engine.handover import CellMover
    from multispin_sim.model.cells import HexGrid

    layout = HexGrid(7, 500.0, wrap_around=True)
    pos = np.array([[10.0, 20.0], [1300.0, 40.0]])   # the second beyond the cluster's edge
    network = SimpleNamespace(walk=None, layout=layout, pos=pos,
                              distance=layout.distances(pos), gain=np.ones((2, 7)),
                              update=lambda t: None)
    for cell in (0, 3):
        mover = CellMover(network, cell)
        near = layout.nearest_image(pos, cell)
        delta = near - layout.sites[cell]
        np.testing.assert_allclose(mover.bearings(), np.arctan2(delta[:, 1], delta[:, 0]),
                                   rtol=1e-15)
        np.testing.assert_allclose(np.hypot(*delta.T), layout.distances(pos)[:, cell],
                                   rtol=1e-12)
    assert not np.allclose(layout.nearest_image(pos, 0), pos)   # the torus moved one


@pytest.mark.parametrize("extra", [{}, {"channel.coherence_time_ms": 3.0},
                                   {"csi.cqi_quantisation": True}])
def test_a_forced_zf_pair_on_one_line_of_sight_stops_the_run_with_its_reason(extra):
    """Two devices at one place: their vectors are equal, so a ZF set of both is singular.
    Forced onto it ('all-dl'), the run stops before recording the round, saying why; with an
    estimation error the decision's estimates are independent and the pair is served."""
    xy = [[100.0, 0.0], [100.0, 0.0]]
    res, dr = _run(xy, **{"policy.mode": "all-dl", "run.rounds": 20, **extra})
    assert not res.complete and dr["round"].size == 0
    assert "zero-forcing DL set can never be served" in res.summary["stop_reason"]
    res, dr = _run(xy, **{"policy.mode": "all-dl", "run.rounds": 20,
                          "csi.estimation_error_variance": 0.2, **extra})
    assert res.complete and np.isfinite(dr["delay_s"]).all() and (dr["mode"] == "dl").any()
