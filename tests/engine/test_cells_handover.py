"""Moving devices across cells: A3 handovers, context migration over the backhaul, and a device
served by one cell at a time (never while its context migrates)."""
import math

import pytest

import multispin_sim as ms
from cells_checks import assert_served_by_one_cell_at_a_time

MOVING = {"run.rounds": 150, "cells.layout": "hex", "cells.count": 7, "cells.isd_m": 200.0,
          "devices.count": 6, "mobility.model": "random-waypoint", "mobility.speed_mps": 25.0}


def run(**overrides):
    return ms.simulate(ms.load_scenario(None, overrides={**MOVING, **overrides}))


@pytest.fixture(scope="module")
def moving():
    return run()


def test_contexts_migrate_with_their_size_over_the_backhaul(moving):
    sc = moving.scenario.cells
    log = [r for r in moving.network.log if "arrival_s" in r]
    assert len(log) > 10
    bits = math.ceil(math.log2(moving.scenario.payload.vocab))
    for r in log:
        assert r["context_bits"] >= sc.context_prompt_tokens * bits
        assert (r["context_bits"] / bits) % 1 == 0           # whole tokens
        assert r["migration_s"] == pytest.approx(sc.backhaul_latency_ms * 1e-3
                                                 + r["context_bits"] / (sc.backhaul_rate_mbps * 1e6),
                                                 rel=1e-12)
        assert r["migration_start_s"] >= r["time_s"]
        assert r["interruption_s"] == pytest.approx(r["arrival_s"] - r["time_s"], rel=1e-12)
        assert r["source"] != r["target"]
    s = moving.summary["handover"]
    assert s["handovers"] == len(moving.network.log)
    assert (moving.folder / "handovers.csv").exists()


def test_a_device_is_served_by_one_cell_at_a_time_and_not_while_migrating(moving):
    assert_served_by_one_cell_at_a_time(moving)


def test_hysteresis_and_time_to_trigger_cut_handovers_and_ping_pongs(moving):
    eager = run(**{"cells.hysteresis_db": 0.0, "cells.time_to_trigger_ms": 0.0})
    assert eager.summary["handover"]["handovers"] > moving.summary["handover"]["handovers"]
    assert eager.summary["handover"]["ping_pongs"] >= moving.summary["handover"]["ping_pongs"]


def test_static_devices_never_hand_over():
    r = ms.simulate(ms.load_scenario(None, overrides={
        "run.rounds": 20, "cells.layout": "hex", "cells.count": 7, "devices.count": 4}))
    assert "handover" not in r.summary and not (r.folder / "handovers.csv").exists()


def test_association_handover_re_places_a_cells_devices_at_its_round_ends():
    r = run(**{"cells.handover": "association", "cells.association": "nearest"})
    log = r.network.log
    assert len(log) > 10
    grid_sites = r.network.layout.sites
    assert grid_sites.shape == (7, 2)
    # every handover goes to a different cell, and each arrival is after its trigger
    assert all(x["source"] != x["target"] for x in log)
    assert all(x["arrival_s"] >= x["time_s"] for x in log if "arrival_s" in x)
    # nearest without hysteresis hands over at least as often as A3 with its 3 dB and 160 ms
    assert len(log) >= run().summary["handover"]["handovers"]


def test_the_engine_hands_over_at_the_hexagonal_boundary_crossing_rate():
    # hexagonal cells of ISD D have boundary length 2 / D per unit area, so a device moving at v
    # crosses 4 v / (pi D) boundaries per second (the same argument as Lin et al.'s 4 v
    # sqrt(lambda) / pi for a PPP); with no hysteresis, no time-to-trigger and a fine
    # measurement grid every crossing is a handover, except while a context is in flight (the
    # device is then not considered): the time at risk excludes those interruptions
    v, isd, horizon = 20.0, 200.0, 30.0
    count = exposure = 0.0
    for seed in (1, 2, 3, 4):
        r = ms.simulate(ms.load_scenario(None, overrides={
            "seed": seed, "run.rounds": 100000, "run.max_time_s": horizon,
            "cells.layout": "hex", "cells.count": 7, "cells.isd_m": isd, "devices.count": 10,
            "mobility.model": "random-waypoint", "mobility.speed_mps": v,
            "cells.hysteresis_db": 0.0, "cells.time_to_trigger_ms": 0.0,
            "cells.measurement_period_ms": 5.0}))
        log = r.network.log
        count += len(log)
        exposure += r.network.d * horizon - sum(x.get("interruption_s", horizon - x["time_s"])
                                                for x in log)
    expected = 4 * v / (math.pi * isd)
    # Poisson bound on the count (crossings of long paths are less dispersed than Poisson)
    assert abs(count / exposure - expected) < 4.0 * math.sqrt(expected * exposure) / exposure


def test_a_cell_left_without_devices_does_not_hold_the_run():
    # one device in the whole network: the cells it never visits wait for work forever unless
    # the run ends them when every other loop is done
    r = ms.simulate(ms.load_scenario(None, overrides={
        "run.rounds": 30, "cells.layout": "hex", "cells.count": 7, "cells.isd_m": 200.0,
        "cells.drop": "region", "devices.count": 1, "mobility.model": "random-waypoint",
        "mobility.speed_mps": 5.0}))
    assert max(c["rounds"] for c in r.summary["cells"]) <= 30
    assert r.summary["rounds"] >= 30


def test_load_aware_re_association_moves_static_devices_off_an_overloaded_server():
    # 7 cells of 10 static devices each; server 0 verifies 30 ms per device (the others the
    # default): at its round ends load-aware moves cell 0's devices to neighbours until none
    # would verify faster elsewhere (best response on the loads), with their contexts
    import numpy as np

    from multispin_sim.engine.cell_plan import association_view

    kw = {"run.rounds": 40, "cells.layout": "hex", "cells.count": 7, "cells.isd_m": 200.0,
          "devices.count": 10, "devices.distance_m": [20.0, 100.0],
          "cells.association": "load-aware", "cells.association_range_db": 20.0,
          "cells.servers": {0: {"verify_per_device_ms": 30.0}}, "cells.reassociate": True}
    r = ms.simulate(ms.load_scenario(None, overrides=kw))
    net = r.network
    log = net.log
    assert log and all(x["source"] == 0 for x in log)
    assert all(x["context_bits"] > 0 and x["arrival_s"] > x["time_s"] for x in log)
    load = np.bincount(net.attached, minlength=7)
    assert load.sum() == 70 and load[0] < 10
    # no device left on server 0 would verify faster on another server within range
    view = association_view(r.scenario, net.layout, net.gain, net.pos)
    t0, t1 = view.verify_fixed_s, view.verify_per_device_s
    for k in np.flatnonzero(net.attached == 0):
        rsrp = view.rsrp_w[k]
        near = rsrp >= 10 ** -2 * rsrp.max()
        assert t0[0] + load[0] * t1[0] <= np.min(np.where(near, t0 + (load + 1) * t1, np.inf)[1:])
    # max-rsrp does not depend on the loads: a static device moves at most once, from the cell
    # it was dropped in to its strongest server, and stays there
    still = ms.simulate(ms.load_scenario(None, overrides={**kw, "cells.association": "max-rsrp"}))
    moved = [x["device"] for x in still.network.log]
    assert len(moved) == len(set(moved))
    rsrp = net.p_dl * still.network.gain
    assert still.network.attached.tolist() == np.argmax(rsrp, axis=1).tolist()


@pytest.mark.parametrize("seed", [0, 7])
def test_association_handovers_of_moving_devices_never_target_a_finished_cell(seed):
    """cells.handover 'association' re-places a cell's devices at its round ends. A cell whose
    rounds are all done takes nobody (a device sent there would wait for ever, and the run with
    it): every run completes, and each handover's target was still running at its time."""
    res = run(**{"cells.handover": "association", "devices.count": 4, "run.rounds": 200,
                 "mobility.speed_mps": 30.0, "seed": seed})
    assert res.summary["complete"]
    _targets_were_running(res, at_least=10)


def test_the_time_to_trigger_fires_at_the_first_measurement_it_has_held_for():
    """Measurement instants are float sums of the period: 4 x 40 ms may add up to just below
    160 ms. A device whose A3 condition holds from one measurement on hands over 160 ms later,
    at the 4th measurement after, whatever the rounding of the instants."""
    import numpy as np

    from multispin_sim.model.handover import A3Trigger

    period, ttt = 0.04, 0.16
    late = []
    for start in range(0, 1500, 7):        # the condition begins at measurement `start`
        trig = A3Trigger([0], 3.0, ttt)
        t, fired = 0.0, None
        for m in range(start + 10):
            t += period                    # the clock as a sum of timeouts
            better = m >= start
            rsrp = np.array([[0.0, 10.0 if better else -10.0]])
            devices, targets, _ = trig.step(t, rsrp)
            if devices.size:
                fired = m
                assert targets.tolist() == [1]
                break
        late.append(fired - start)
    assert set(late) == {4}


def test_a3_handovers_fire_exactly_the_time_to_trigger_after_the_condition(monkeypatch):
    """In the engine every A3 handover comes ttt after its condition began (to the clock's
    rounding), not one measurement period later."""
    import numpy as np

    from multispin_sim.engine import handover as handover_engine
    from multispin_sim.model.handover import A3Trigger

    held = []

    class Recording(A3Trigger):
        def step(self, t, rsrp_db):
            entered = self.entered.copy()
            devices, targets, pong = super().step(t, rsrp_db)
            held.extend((t - entered[devices]).tolist())
            return devices, targets, pong

    monkeypatch.setattr(handover_engine, "A3Trigger", Recording)
    res = run(**{"devices.count": 10, "mobility.speed_mps": 20.0, "run.rounds": 200})
    ttt = res.scenario.cells.time_to_trigger_ms * 1e-3
    assert len(held) == res.summary["handover"]["handovers"] > 20
    np.testing.assert_allclose(held, ttt, rtol=0, atol=1e-9)


def test_a3_never_hands_over_to_a_cell_that_has_stopped(tmp_path):
    """A stopped cell takes nobody (a device sent there would get no service): with cell 0's
    loop marked ended from the start, A3 hands over to every other cell but never to it."""
    from multispin_sim.engine.cells import builder
    from multispin_sim.engine.simulation import Result, build_run, read_inputs

    sc = ms.load_scenario(None, overrides={**MOVING, "devices.count": 10,
                                           "cells.hysteresis_db": 0.0,
                                           "cells.time_to_trigger_ms": 0.0})
    net = builder(sc, build_run, Result)(sc, tmp_path / "run", read_inputs(sc))
    net.network.ended[0] = True
    net.env.run(until=net.start())
    net.finish()
    log = net.network.log
    assert len(log) > 50
    assert all(r["target"] != 0 for r in log)
    assert any(r["source"] == 0 for r in log)     # devices still leave it


@pytest.mark.parametrize("seed", [1, 2])
def test_a3_handovers_target_cells_still_running(seed):
    """With one horizon the cells stop together: each A3 handover's target was still in a
    round or waiting for work at its time (it served after it, or the network stopped)."""
    res = run(**{"devices.count": 10, "mobility.speed_mps": 20.0, "run.rounds": 150,
                 "seed": seed})
    _targets_were_running(res, at_least=20)


def _targets_were_running(res, at_least):
    """More than ``at_least`` handovers, each to a cell that had not yet ended its last round."""
    import numpy as np

    log = res.table("handovers")
    assert log["time_s"].size > at_least
    r = res.rounds
    for t, target in zip(log["time_s"].tolist(), log["target"].tolist()):
        mine = r["cell"] == target
        assert mine.any() and t <= np.max(r["start_s"][mine] + r["duration_s"][mine]) + 1e-9
