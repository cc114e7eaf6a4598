"""Several cells under the asynchronous protocol (continuous batching at each server): one
cell through the cells machinery is the single-cell run, cells far apart are independent
runs, and in close cells a correction's bits are conserved across the interference changes
that the other cells' batches cut it into.

The network's horizon stops each cell's loop before its next batch; the batches it finds in
flight complete, so a cell may record a few batches more than ``run.rounds`` (the first ones
are compared).
"""
import numpy as np

import multispin_sim as ms
from multispin_sim.engine.cell_plan import cell_seed
from multispin_sim.model.cells import HexGrid

ASYNC = {"serving.protocol": "asynchronous"}


def run(**overrides):
    return ms.simulate(ms.load_scenario(None, overrides={**ASYNC, **overrides}))


def assert_first_batches_equal(a, b, n, rtol=1e-12):
    """The records of batches 0..n-1 of two runs agree (numbers within ``rtol``)."""
    for name in ("rounds", "device_rounds"):
        ta, tb = a.table(name), b.table(name)
        ma, mb = np.asarray(ta["round"]) < n, np.asarray(tb["round"]) < n
        assert ma.sum() == mb.sum() > 0, name
        for col, va in ta.items():
            if col == "cell" or col not in tb:
                continue
            va, vb = np.asarray(va)[ma], np.asarray(tb[col])[mb]
            if va.dtype.kind in "fi":
                np.testing.assert_allclose(vb, va, rtol=rtol, atol=1e-300, err_msg=f"{name}.{col}")
            else:
                assert va.tolist() == vb.tolist(), f"{name}.{col}"


def test_one_hex_cell_is_the_single_cell_run():
    alone = run(**{"run.rounds": 150})
    cell = run(**{"run.rounds": 150, "cells.layout": "hex", "cells.count": 1})
    assert cell.summary["rounds"] >= 150
    assert_first_batches_equal(alone, cell, 150)


def test_cells_1000_km_apart_are_independent_single_cell_runs():
    # as for the synchronous protocol (test_cells_engine): the interference is ~1e-11 of the
    # noise, rtol 1e-9; each cell against its own run of as many batches
    isd = 1e6
    multi = run(**{"run.rounds": 60, "cells.layout": "hex", "cells.count": 7, "cells.isd_m": isd})
    sites = HexGrid(7, isd).sites
    for c in (0, 3, 6):
        batches = multi.cells[c].summary["rounds"]
        assert batches >= 60
        alone = run(**{"run.rounds": batches, "seed": cell_seed(1, c),
                       "topology.server_xy_m": [float(sites[c][0]), float(sites[c][1])]})
        assert_first_batches_equal(alone, multi.cells[c], batches - 2, rtol=1e-9)


def test_bits_are_conserved_across_the_other_cells_batches():
    res = run(**{"run.rounds": 40, "cells.layout": "hex", "cells.count": 7, "cells.isd_m": 150.0,
                 "devices.count": 8})
    field = res.field
    cut = 0
    for tx in field.log:
        t0, t1, rate, interference = np.array(tx.intervals).T
        assert t0[0] == tx.start
        np.testing.assert_array_equal(t0[1:], t1[:-1])
        rounding = np.sum(rate) * 4 * np.spacing(t1.max()) + 1e-12 * tx.bits
        assert abs(np.sum(rate * (t1 - t0)) - tx.bits) <= rounding
        b = tx.f1 - tx.f0
        shannon = b * np.log2(1 + tx.power * tx.gain / (field.n0 * b + interference))
        np.testing.assert_allclose(rate, shannon, rtol=1e-12)
        cut += len(t0) > 1
    assert len(field.log) > 100 and cut > 10
    # each correction's realised delay is its transmission's span in the field
    for c, cell in enumerate(res.cells):
        d = cell.device_rounds
        sent = np.isin(np.asarray(d["mode"]), ("ul", "dl"))
        spans = sorted(tx.intervals[-1][1] - tx.start for tx in field.log if tx.cell == c)
        np.testing.assert_allclose(sorted(np.asarray(d["delay_s"])[sent]), spans, rtol=1e-9)
