"""The NR link in several cells (``link.model: mcs``; engine/cell_channel.py
``_transmit_nr``): one hex cell is the single-cell NR run (its transport blocks in runs, one
per fading block, with the same draws); with co-channel neighbours each transport block meets
the SINR at its first attempt, and far from any interferer that gives the single cell's HARQ
law; close cells add outages; every logged interval's interference is the sum over what was in
flight (the fading of each pair set to 1)."""
import math

import numpy as np
import pytest

import multispin_sim as ms
from multispin_sim.engine.cell_plan import cell_seed
from multispin_sim.model.cells import HexGrid

from cells_checks import assert_interference_is_what_was_in_flight, unit_fading_run
from test_cells_engine import assert_first_batches_equal

NR = {"link.model": "mcs", "devices.count": 8}


def run(**overrides):
    return ms.simulate(ms.load_scenario(None, overrides=overrides))


@pytest.mark.parametrize("extra", [
    {}, {"csi.estimation_error_variance": 0.2}, {"server.antennas": 4},
    {"channel.coherence_time_ms": 2.0, "channel.fading": "gauss-markov",
     "channel.doppler_hz": 40.0},
    {"serving.protocol": "asynchronous"}, {"channel.fading": "jakes", "channel.doppler_hz": 20.0}],
    ids=["default", "estimated", "four-antennas", "blocks", "asynchronous", "jakes"])
def test_one_hex_cell_is_the_single_cell_nr_link(extra):
    base = {"run.rounds": 80, **NR, **extra}
    single, cell = run(**base), run(**base, **{"cells.layout": "hex", "cells.count": 1})
    assert single.summary["link"]["harq_transmissions"] > 0
    # (asynchronous: the single-cell run's batches; the horizon may find more in flight)
    assert_first_batches_equal(single, cell, 78, rtol=1e-9)
    if "serving.protocol" not in extra:   # (asynchronous: the horizon finds more in flight)
        assert (cell.summary["link"]["harq_transmissions"]
                == single.summary["link"]["harq_transmissions"])


def test_block_by_block_far_from_interferers_is_the_single_cells_harq_law():
    """Cells 10^6 m apart (interference ~1e-11 of the noise) send block by block at the SINR
    of each block's first attempt; the single cell sends runs. The decisions are the same
    (i.i.d. fading per round, exact CSI), the HARQ draws differ: the attempts per correction
    agree in the mean (paired by round and device, within 4 standard errors)."""
    isd, rounds = 1e6, 150
    base = {**NR, "link.bler_waterfall_db": 3.0}   # a wide waterfall: many retransmissions
    multi = run(**base, **{"run.rounds": rounds, "cells.layout": "hex", "cells.count": 7,
                           "cells.isd_m": isd})
    sites = HexGrid(7, isd).sites
    diffs = []
    for c in (0, 2, 5):
        alone = run(**base, **{"run.rounds": rounds, "seed": cell_seed(1, c),
                               "topology.server_xy_m": [float(sites[c][0]), float(sites[c][1])]})
        a, b = alone.table("device_rounds"), multi.cells[c].table("device_rounds")
        n = rounds * 8
        assert np.asarray(a["mode"])[:n].tolist() == np.asarray(b["mode"])[:n].tolist()
        sent = np.asarray(a["mode"])[:n] != ""
        ha = np.asarray(a["harq_transmissions"])[:n][sent]
        hb = np.asarray(b["harq_transmissions"])[:n][sent]
        assert not np.array_equal(ha, hb)   # other draws
        diffs.append(hb - ha)
    d = np.concatenate(diffs).astype(float)
    assert d.size > 300
    assert abs(d.mean()) < 4 * d.std() / math.sqrt(d.size)


def test_close_cells_add_outages():
    """At an ISD of 200 m the other cells' interference pushes transport blocks below the
    lowest MCS: more outages per correction than the same cells 10^6 m apart. (A device whose
    SINR almost never reaches the lowest MCS waits block after block while the other cells run
    on: the block limit keeps such a drop from simulating hours; its partial records count.)"""
    per = []
    for isd in (1e6, 200.0):
        res = run(**NR, **{"run.rounds": 60, "cells.layout": "hex", "cells.count": 7,
                           "cells.isd_m": isd, "limits.max_blocks_per_transmission": 20_000})
        links = [cell.summary["link"] for cell in res.cells]
        per.append(sum(x["outages"] + x["harq_failures"] for x in links)
                   / sum(x["corrections"] for x in links))
    assert per[1] > 2 * per[0] + 0.05


def test_each_intervals_interference_is_the_sum_over_what_was_in_flight():
    """The fading of each interfering pair set to 1: an NR correction is in flight from its
    start to its last attempt (waits for a new block included), its power over its subband,
    and meets the same-direction transmissions of the other cells in flight."""
    field = unit_fading_run({**NR, "run.rounds": 30, "cells.layout": "hex", "cells.count": 7,
                             "cells.isd_m": 150.0}).field
    assert all(tx.timed for tx in field.log)
    checked, interfered, _ = assert_interference_is_what_was_in_flight(field)
    assert checked > 200 and interfered > 50


@pytest.mark.parametrize("overrides,key", [
    ({"cells.reuse": 3, "cells.wrap_around": False}, "cells.reuse"),   # 8 PRBs for 8 + 2
    ({"mobility.model": "random-waypoint"}, "link.subcarrier_spacing_khz"),   # 24 for 70
])
def test_a_cell_without_a_prb_for_each_device_it_may_hold_is_refused(overrides, key):
    from multispin_sim.engine.link import check_link

    sc = ms.load_scenario(None, overrides={**NR, "devices.count": 10, "cells.layout": "hex",
                                           "cells.count": 7, **overrides})
    with pytest.raises(ms.ScenarioError) as err:
        check_link(sc)
    assert str(err.value).startswith(f"{key}: ") and "\n" not in str(err.value)


def test_moving_devices_reuse_3_and_every_interference_csi_run():
    """50 MHz at 15 kHz: 270 PRBs, a third of it 88 per cell; 28 devices attached to their best
    server; the decisions may see the interference measured now, its time average, or none
    (blind)."""
    for extra in ({"mobility.model": "random-waypoint", "mobility.speed_mps": [5.0, 10.0]},
                  {"cells.reuse": 3, "cells.wrap_around": False},
                  {"cells.interference_csi": "none"}, {"cells.interference_csi": "mean"}):
        res = run(**{**NR, "devices.count": 28, "cells.drop": "region", "run.rounds": 20,
                     "cells.layout": "hex", "cells.count": 7, "cells.isd_m": 300.0,
                     "channel.bandwidth_mhz": 50, "link.subcarrier_spacing_khz": 15, **extra})
        assert res.summary["complete"], (extra, res.summary.get("stop_reason"))
        assert res.summary["link"]["harq_transmissions"] > 0
