"""Several cells under the asynchronous protocol (continuous batching at each server): in
close cells a correction's bits are conserved across the interference changes that the other
cells' batches cut it into, and each correction's delay is its transmission's span in the
field. (One cell, and cells far apart, against single-cell runs: ``test_cells_engine``.)"""
import numpy as np

import multispin_sim as ms

from test_cells_engine import assert_intervals_deliver


def test_bits_are_conserved_across_the_other_cells_batches():
    res = ms.simulate(ms.load_scenario(None, overrides={
        "serving.protocol": "asynchronous", "run.rounds": 40, "cells.layout": "hex",
        "cells.count": 7, "cells.isd_m": 150.0, "devices.count": 8}))
    field = res.field
    cut = 0
    for tx in field.log:
        assert_intervals_deliver(tx, field.n0)
        cut += len(tx.intervals) > 1
    assert len(field.log) > 100 and cut > 10
    # each correction's realised delay is its transmission's span in the field
    for c, cell in enumerate(res.cells):
        d = cell.device_rounds
        sent = np.isin(np.asarray(d["mode"]), ("ul", "dl"))
        spans = sorted(tx.intervals[-1][1] - tx.start for tx in field.log if tx.cell == c)
        np.testing.assert_allclose(sorted(np.asarray(d["delay_s"])[sent]), spans, rtol=1e-9)
