"""A shared band in several cells (``server.dl_scheme: mu-mimo-zf``, ``server.ul_scheme:
mu-mimo-mmse``; engine/cell_streams.py): one hex cell, and cells too far apart to interfere,
are the single-cell runs of the shared band (itself checked against a symbol-level simulation
in tests/model/test_antennas.py); in close cells every logged interval of a shared stream has
the Shannon rate of its pooled band at S / (N0 B + F + I), its bits are delivered, ZF groups
take their turns, zero-forcing leaves no leakage with exact CSI while MMSE sets do, and each
interval's interference is the sum over what was in flight (fading of each pair set to 1)."""
import numpy as np
import pytest

import multispin_sim as ms
from multispin_sim.engine.cell_plan import cell_seed
from multispin_sim.model.cells import HexGrid
from multispin_sim.model.reactive import DL

from cells_checks import assert_interference_is_what_was_in_flight, unit_fading_run
from test_cells_engine import assert_first_batches_equal

SHARED = {"server.antennas": 4, "server.dl_scheme": "mu-mimo-zf",
          "server.ul_scheme": "mu-mimo-mmse", "devices.count": 10}
DENSE = {"run.rounds": 30, "cells.layout": "hex", "cells.count": 7, "cells.isd_m": 150.0,
         **SHARED}


def run(**overrides):
    return ms.simulate(ms.load_scenario(None, overrides=overrides))


@pytest.mark.parametrize("extra", [
    {}, {"policy.mode": "all-dl"}, {"csi.estimation_error_variance": 0.2},
    {"server.zf_groups": "best", "policy.mode": "all-dl", "server.ul_power": "descent"},
    {"policy.mode": "deadline"}, {"serving.protocol": "asynchronous"},
    {"channel.coherence_time_ms": 2.0, "channel.fading": "gauss-markov",
     "channel.doppler_hz": 40.0, "policy.mode": "all-dl"},
    {"channel.coherence_time_ms": 2.0, "channel.fading": "jakes", "channel.doppler_hz": 40.0,
     "csi.estimation_error_variance": 0.2}],
    ids=["optimal", "zf-groups", "estimated", "best-groups", "carried", "asynchronous",
         "blocks-zf-groups", "blocks-estimated"])
def test_one_hex_cell_is_the_single_cell_shared_band(extra):
    """Modes, powers, delays, stream SINRs and times on air as the single-cell run (the field
    adds a stream's bits interval by interval: rtol 1e-9); asynchronous: the single-cell
    run's batches (the horizon may find the last ones in flight)."""
    base = {"run.rounds": 80, **SHARED, **extra}
    single = run(**base)
    modes = np.asarray(single.device_rounds["mode"])
    if extra.get("policy.mode") == "all-dl":   # ten DL streams on four antennas: in turns
        assert np.all(modes[modes != ""] == "dl")
    if extra.get("policy.mode") == "deadline":
        assert single.summary["deferred"]["corrections"] > 0
    cell = run(**base, **{"cells.layout": "hex", "cells.count": 1})
    assert_first_batches_equal(single, cell, 78, rtol=1e-9)


def test_cells_too_far_apart_to_interfere_are_their_own_runs():
    isd = 1e6   # the other cells' interference is ~1e-11 of the noise
    multi = run(**{**SHARED, "run.rounds": 40, "cells.layout": "hex", "cells.count": 7,
                   "cells.isd_m": isd})
    sites = HexGrid(7, isd).sites
    for c in (0, 4):
        rounds = multi.cells[c].summary["rounds"]
        alone = run(**{**SHARED, "run.rounds": rounds, "seed": cell_seed(1, c),
                       "topology.server_xy_m": [float(sites[c][0]), float(sites[c][1])]})
        assert_first_batches_equal(alone, multi.cells[c], rounds, rtol=1e-9)


@pytest.fixture(scope="module")
def dense():
    return run(**DENSE)


def test_a_shared_streams_rate_is_shannons_of_its_pooled_band_under_interference(dense):
    field = dense.field
    n0 = field.n0
    shared = [tx for tx in field.log if tx.f1 - tx.f0 > 1.5 * min(
        t.f1 - t.f0 for t in field.log if t.cell == tx.cell)]
    assert len(shared) > 100
    interfered = 0
    for tx in field.log:
        t0, t1, rate, interference, gain = np.array(tx.intervals).T
        b = tx.f1 - tx.f0
        np.testing.assert_allclose(
            rate, b * np.log2(1 + tx.power * gain / (n0 * b + tx.floor + interference)),
            rtol=1e-12)
        assert t0[0] == tx.start
        rounding = np.sum(rate) * 4 * np.spacing(t1.max()) + 1e-12 * tx.bits
        assert abs(np.sum(rate * (t1 - t0)) - tx.bits) <= rounding
        interfered += bool(np.any(interference > 0))
    assert interfered > 40


def test_zero_forcing_leaks_nothing_and_mmse_sets_do(dense):
    """With exact CSI a ZF group's streams do not leak into each other (the floor is within
    rounding of 0 against the noise); the MMSE combiners of a set of two or more streams
    leave each some leakage (positive: the vectors are never orthogonal)."""
    n0 = dense.field.n0
    by_set = {}
    for tx in dense.field.log:
        by_set.setdefault((tx.cell, tx.mode, tx.f0, tx.f1, tx.start), []).append(tx)
    zf = mmse = 0
    for (_, mode, f0, f1, _), txs in by_set.items():
        noise = n0 * (f1 - f0)
        floors = np.array([tx.floor for tx in txs])
        if mode == DL:
            assert np.all(floors <= 1e-9 * noise)
            zf += len(txs) > 1
        elif len(txs) > 1:
            assert np.all(floors > 0.0)
            mmse += 1
    assert zf > 20 and mmse > 20


def test_zf_groups_take_turns():
    """All DL, ten devices on four antennas: three groups; in each cell and round a group
    starts when the previous group's last stream is delivered."""
    res = run(**{**DENSE, "policy.mode": "all-dl", "run.rounds": 10})
    turns = 0
    by_cell = {}
    for tx in res.field.log:
        by_cell.setdefault(tx.cell, []).append(tx)
    for txs in by_cell.values():
        starts = sorted({tx.start for tx in txs})
        for s0, s1 in zip(starts, starts[1:]):
            ended = [tx.intervals[-1][1] for tx in txs if tx.start == s0]
            if len(ended) <= 4:   # a group (a round's first group starts at its own time)
                if s1 == max(ended):
                    turns += 1
    assert turns > 20


def test_each_intervals_interference_is_the_sum_over_what_was_in_flight():
    """The fading of each interfering pair set to 1: a shared stream's interference is every
    co-channel transmission of another cell in flight, its power spread over its own band (a
    shared link's pooled band), over the overlap."""
    checked, interfered, _ = assert_interference_is_what_was_in_flight(
        unit_fading_run(DENSE).field)
    assert checked > 200 and interfered > 50


def test_on_a_grid_of_fading_blocks_each_block_is_met_and_the_bits_delivered():
    """Fading blocks of 1 ms in close cells: shared streams are cut at block boundaries (their
    signal and leakage follow each block's filters) as well as by the interference, and the
    intervals of every stream deliver its bits."""
    res = run(**{**DENSE, "channel.coherence_time_ms": 1.0, "channel.fading": "gauss-markov",
                 "channel.doppler_hz": 40.0})
    crossed = 0
    for tx in res.field.log:
        t0, t1, rate, _, gain = np.array(tx.intervals).T
        rounding = np.sum(rate) * 4 * np.spacing(t1.max()) + 1e-12 * tx.bits
        assert abs(np.sum(rate * (t1 - t0)) - tx.bits) <= rounding
        # a boundary inside the stream: its gain changes there
        for i in np.flatnonzero(np.diff(gain) != 0):
            assert abs(t1[i] / 1e-3 - round(t1[i] / 1e-3)) < 1e-6
            crossed += 1
    assert crossed > 50
