"""Several cells under the asynchronous protocol (continuous batching at each server): in
close cells a correction's bits are conserved across the interference changes that the other
cells' batches cut it into, and each correction's delay is its transmission's span in the
field. (One cell, and cells far apart, against single-cell runs: ``test_cells_engine``.)"""
import numpy as np

import multispin_sim as ms


def test_bits_are_conserved_across_the_other_cells_batches():
    res = ms.simulate(ms.load_scenario(None, overrides={
        "serving.protocol": "asynchronous", "run.rounds": 40, "cells.layout": "hex",
        "cells.count": 7, "cells.isd_m": 150.0, "devices.count": 8}))
    field = res.field
    cut = 0
    for tx in field.log:
        t0, t1, rate, interference, gain = np.array(tx.intervals).T
        assert t0[0] == tx.start
        np.testing.assert_array_equal(t0[1:], t1[:-1])
        rounding = np.sum(rate) * 4 * np.spacing(t1.max()) + 1e-12 * tx.bits
        assert abs(np.sum(rate * (t1 - t0)) - tx.bits) <= rounding
        b = tx.f1 - tx.f0
        shannon = b * np.log2(1 + tx.power * gain / (field.n0 * b + interference))
        np.testing.assert_allclose(rate, shannon, rtol=1e-12)
        cut += len(t0) > 1
    assert len(field.log) > 100 and cut > 10
    # each correction's realised delay is its transmission's span in the field
    for c, cell in enumerate(res.cells):
        d = cell.device_rounds
        sent = np.isin(np.asarray(d["mode"]), ("ul", "dl"))
        spans = sorted(tx.intervals[-1][1] - tx.start for tx in field.log if tx.cell == c)
        np.testing.assert_allclose(sorted(np.asarray(d["delay_s"])[sent]), spans, rtol=1e-9)
