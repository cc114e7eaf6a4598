"""``channel.doppler`` 'speed' in the engine: the channel's Jakes processes run on the distance
each device walks (the run's own walk), a paused device keeps its channel from round to round,
aged CSI and the 'robust' policy see each device's own correlation, and the refusals."""
import subprocess
import sys

import numpy as np
import pytest
from scipy.special import j0

import multispin_sim as ms
from multispin_sim.engine.compute import reactive_policy
from multispin_sim.engine.link import build_channel, link_policy
from multispin_sim.engine.population import build_population
from multispin_sim.engine.streams import RandomStreams
from multispin_sim.engine.topology import Mover, doppler_clock
from multispin_sim.scenario import ScenarioError

MOVING = {"channel.fading": "jakes", "mobility.model": "random-waypoint",
          "mobility.speed_mps": [0.5, 2.0], "mobility.pause_s": 5.0, "devices.count": 8}
LAMBDA = 299_792_458.0 / 3.5e9   # cells.fc_ghz's default


def _still_pairs(res):
    """(gain_ul of round r, of round r + 1) of the devices at the same distance at both round
    starts (paused in between: a walking device's distance changes continuously)."""
    d = res.device_rounds
    k = int(d["device"].max()) + 1
    dist = np.asarray(d["distance_m"]).reshape(-1, k)
    gain = np.asarray(d["gain_ul"]).reshape(-1, k)
    still = dist[1:] == dist[:-1]
    return gain[:-1][still], gain[1:][still], gain[:-1][~still], gain[1:][~still]


@pytest.mark.parametrize("antennas", [1, 4])
def test_a_paused_device_keeps_its_channel_between_rounds(tmp_path, antennas):
    runs = {}
    for doppler in ("speed", "fixed"):
        sc = ms.load_scenario(None, overrides={
            **MOVING, "channel.doppler": doppler, "server.antennas": antennas,
            "mobility.speed_mps": [5.0, 10.0], "mobility.region_m": [50.0, 150.0],
            "run.rounds": 120})
        runs[doppler] = _still_pairs(ms.simulate(sc, out=tmp_path / doppler))
    a, b, moved_a, moved_b = runs["speed"]
    assert a.size >= 20   # legs of ~10 s, then 5 s pauses, at ~0.4 s rounds
    np.testing.assert_array_equal(a, b)   # same path loss and shadowing, and same fading
    assert np.all(moved_a != moved_b)
    fa, fb, _, _ = runs["fixed"]   # one Doppler for all: a paused device still fades
    assert np.all(fa != fb)


def _built(overrides, seed=3):
    sc = ms.load_scenario(None, overrides={**MOVING, "channel.doppler": "speed", **overrides})
    streams = RandomStreams(seed)
    pop = build_population(sc, streams.devices, streams.topology, streams.shadowing)
    mover = Mover(sc, pop, streams.mobility, streams.shadowing_path)
    coh = sc.channel.coherence_time_ms
    channel = build_channel(sc, pop.system, streams, None if coh is None else coh * 1e-3, True,
                            doppler_clock(sc, mover))
    return sc, pop, mover, channel


@pytest.mark.parametrize("coherence", [None, 2.0])
def test_aged_csi_is_the_process_where_the_device_was(coherence):
    """The CSI of a delay d is the same process read at the distance walked by t - d."""
    sc, pop, mover, ch = _built({"csi.delay_ms": 7.0, "channel.coherence_time_ms": coherence})
    t = 2.5
    mover.gains(t)
    est, _ = ch.new_block(t)
    src = ch.fading_source
    np.testing.assert_allclose(est, ch.pathloss * src.powers_at(t - 0.007)[0], rtol=1e-12)
    np.testing.assert_allclose(ch.g_ul, ch.pathloss * src.powers_at(t)[0], rtol=1e-12)
    # the source's clock is the run's walk in wavelengths of cells.fc_ghz
    np.testing.assert_allclose(src.clock(t), mover.walk.travelled_at(t) / LAMBDA, rtol=1e-12)


def test_robust_policy_sees_each_devices_own_correlation():
    """rho_k = J0(2 pi v_k d / lambda) for a device walking its first leg at v_k."""
    sc, pop, mover, ch = _built({"csi.delay_ms": 5.0, "policy.mode": "robust"})
    policy = link_policy(sc, ch, reactive_policy(sc, pop))
    robust = getattr(policy, "inner", policy)
    robust = getattr(robust, "policy", robust)
    assert robust.rho == ch.csi_correlation
    t = 0.5   # legs of >= 50 m at <= 2 m/s: every device is on its first leg
    mover.gains(t)
    ch.new_block(t)
    v = mover.walk._v
    np.testing.assert_allclose(robust.rho(), j0(2 * np.pi * v * 0.005 / LAMBDA), rtol=1e-9)
    assert np.ptp(robust.rho()) > 0.01   # the devices' speeds differ, so do their rho


def test_cells_a_paused_device_keeps_its_channel_to_each_server(tmp_path):
    """Several cells: every cell's channel runs on the network's one walk. With blind
    interference CSI the recorded gain is the true one, so a device at the same distance from a
    server at two of that cell's round starts has the same gain to it under 'speed' (and not
    under 'fixed')."""
    counts = {}
    for doppler in ("speed", "fixed"):
        sc = ms.load_scenario(None, overrides={
            **MOVING, "channel.doppler": doppler, "devices.count": 4, "cells.layout": "hex",
            "cells.count": 7, "cells.interference_csi": "none", "run.rounds": 60,
            "mobility.speed_mps": [5.0, 10.0], "mobility.region_m": [50.0, 300.0]})
        d = ms.simulate(sc, out=tmp_path / doppler).device_rounds
        cell, rnd, dev, dist, g = (np.asarray(d[c]) for c in ("cell", "round", "device",
                                                               "distance_m", "gain_ul"))
        still = equal = 0
        for c, k in {(int(c), int(k)) for c, k in zip(cell, dev)}:
            rows = np.flatnonzero((cell == c) & (dev == k))
            rows = rows[np.argsort(rnd[rows])]
            paused = dist[rows[1:]] == dist[rows[:-1]]
            still += paused.sum()
            equal += (g[rows[1:]][paused] == g[rows[:-1]][paused]).sum()
        counts[doppler] = still, equal
    assert counts["speed"][0] >= 10 and counts["speed"][1] == counts["speed"][0]
    assert counts["fixed"][0] >= 10 and counts["fixed"][1] == 0


@pytest.mark.parametrize("overrides, says", [
    ({"channel.fading": "rayleigh"}, "channel.fading 'rayleigh'"),
    ({"channel.fading": "gauss-markov"}, "channel.fading 'gauss-markov'"),
    ({"channel.fading": "none"}, "channel.fading 'none'"),
    ({"mobility.model": "none"}, "mobility.model 'none'"),
])
def test_refused_combinations_name_the_key(overrides, says):
    with pytest.raises(ScenarioError) as info:
        ms.load_scenario(None, overrides={**MOVING, "channel.doppler": "speed", **overrides})
    msg = str(info.value)
    assert msg.startswith("channel.doppler: ") and says in msg and "\n" not in msg


def test_refusal_exits_2_before_any_work(tmp_path):
    r = subprocess.run([sys.executable, "-m", "multispin_sim", "run", "--quiet", "--rounds", "5",
                        "--set", "channel.fading=jakes", "--set", "channel.doppler=speed"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: channel.doppler:"), r.stderr
    assert not (tmp_path / "results").exists()


def test_a_clock_asked_past_the_legs_limit_stops_the_run():
    """The channel may ask the distance at an instant the walk has not reached; past
    ``limits.max_legs_per_round`` legs ahead it stops the run as the walk's own advance does."""
    from multispin_sim.engine.guards import LimitReached

    sc, pop, mover, ch = _built({"limits.max_legs_per_round": 3,
                                 "mobility.speed_mps": [500.0, 1000.0]})
    clock = ch.fading_source.clock
    clock(1.0)   # within the first legs: fine
    with pytest.raises(LimitReached, match="max_legs_per_round"):
        clock(1e4, 0)
