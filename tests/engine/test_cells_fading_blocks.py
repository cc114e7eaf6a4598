"""Several cells with fading blocks on a time grid (``channel.coherence_time_ms``).

A correction's rate changes when a co-channel transmission of another cell starts or ends and
when its own channel enters a new fading block: its bits are conserved over the intervals these
cut, each interval's rate is Shannon's at its SINR with its block's gain, its gain changes only
at block boundaries and every boundary it spans cuts it; two corrections of a device on one link
in one block meet one gain. One hex cell is the single-cell run with the same grid.
"""
import numpy as np
import pytest
from scipy import stats

import multispin_sim as ms

from test_cells_engine import (assert_first_batches_equal, assert_intervals_deliver,
                               assert_tables_equal)

TC = 2e-3
DENSE = {"run.rounds": 40, "cells.layout": "hex", "cells.count": 7, "cells.isd_m": 150.0,
         "devices.count": 8, "channel.coherence_time_ms": TC * 1e3}


def run(**overrides):
    return ms.simulate(ms.load_scenario(None, overrides=overrides))


@pytest.mark.parametrize("extra", [{}, {"server.antennas": 2, "channel.fading": "gauss-markov",
                                        "channel.doppler_hz": 30.0}],
                         ids=["rayleigh", "two-antennas-gauss-markov"])
def test_bits_are_conserved_across_interference_and_block_changes(extra):
    r = run(**DENSE, **extra)
    field, n0 = r.field, r.field.n0
    assert len(field.log) > 100
    crossed = 0
    seen = {}
    for tx in field.log:
        assert_intervals_deliver(tx, n0)
        t0, t1, rate, interference, gain = np.array(tx.intervals).T
        # the gain changes only where a block starts, and each block spanned cuts the correction
        change = t0[1:][gain[1:] != gain[:-1]]
        np.testing.assert_allclose(change / TC, np.round(change / TC), rtol=0, atol=1e-6)
        first, last = int(np.floor(tx.start / TC)), int(np.floor(t1[-1] / TC * (1 - 1e-12)))
        for n in range(first + 1, last + 1):
            assert np.min(np.abs(t0 - n * TC)) < 1e-12
        crossed += last > first
        # one gain per device, link and block, whichever correction meets it
        for lo, g in zip(t0, gain):
            key = (tx.cell, tx.device, tx.mode, int(np.floor(lo / TC + 1e-9)))
            assert seen.setdefault(key, g) == pytest.approx(g, rel=1e-12)
    assert crossed > 50
    # each cell's summary counts the corrections over several blocks
    assert sum(c.summary["delays"]["over_several_blocks"] for c in r.cells) == crossed


def test_blocks_meet_the_fading_law():
    r = run(**{**DENSE, "run.rounds": 60})
    pathloss = [cell.population.system.pathloss for cell in r.cells]
    blocks = {}
    for tx in r.field.log:
        for lo, g in zip(np.array(tx.intervals)[:, 0], np.array(tx.intervals)[:, 4]):
            key = (tx.cell, tx.device, tx.mode, int(np.floor(lo / TC + 1e-9)))
            blocks[key] = g / pathloss[tx.cell][tx.device]
    x = np.array(list(blocks.values()))
    assert x.size > 500
    assert stats.kstest(x, "expon").pvalue > 1e-3


def test_one_hex_cell_is_the_single_cell_run_with_the_grid():
    # (Gauss-Markov blocks: a block's value does not depend on the instant it is read at, as
    # Jakes' single-precision sums do to ~1e-7 when two clocks differ by a rounding)
    base = {"run.rounds": 120, "channel.coherence_time_ms": 3.0,
            "channel.fading": "gauss-markov", "channel.doppler_hz": 40.0}
    # a correction over several blocks: the field adds its bits interval by interval, one cell
    # by a cumulative sum over the blocks; the same delays to their rounding (rtol 1e-9)
    assert_tables_equal(run(**base), run(**base, **{"cells.layout": "hex", "cells.count": 1}),
                        rtol=1e-9)
    base["serving.protocol"] = "asynchronous"
    cell = run(**base, **{"cells.layout": "hex", "cells.count": 1})
    assert_first_batches_equal(run(**base), cell, 120, rtol=1e-9)


def test_a_correction_over_too_many_blocks_stops_the_network_as_one_cell_does():
    """``limits.max_blocks_per_transmission`` holds in every cell: a correction that would span
    more blocks stops the run, complete: false, with the reason and every cell's records."""
    r = run(**{**DENSE, "cells.isd_m": 500.0, "devices.count": 3,
               "channel.coherence_time_ms": 0.05, "devices.distance_m": [800, 1200],
               "limits.max_blocks_per_transmission": 16})
    assert not r.summary["complete"]
    assert "limits.max_blocks_per_transmission" in r.summary["stop_reason"]
    assert "16 fading blocks" in r.summary["stop_reason"]


def test_one_hex_cell_with_an_estimated_array_channel_is_the_single_cell_run():
    # the first block of a correction through the beam of the decision's estimate, later
    # blocks tracked (engine/csi.py): the field meets the gains the single cell meets
    base = {"run.rounds": 120, "channel.coherence_time_ms": 3.0, "server.antennas": 2,
            "channel.fading": "gauss-markov", "channel.doppler_hz": 40.0,
            "csi.estimation_error_variance": 0.2}
    assert_tables_equal(run(**base), run(**base, **{"cells.layout": "hex", "cells.count": 1}),
                        rtol=1e-9)
