"""Long outages on the NR link: the fading blocks surely in outage are passed over in runs.

A far device on the NR link can wait through thousands of fading blocks below CQI 1 before a
correction gets through. ``McsLink.deliver`` reads them in runs once four outages come in a row
(``skip_below``: of the fading grid, ``GridBlocks`` over the grid's ``block_powers``; of the Jakes
process sampled at each retry, ``ProcessBlocks``); what it computes must be what reading them one
by one gives, block for block, on every kind of fading.
"""
from types import SimpleNamespace

import numpy as np
import pytest

from multispin_sim.engine import simulate
from multispin_sim.engine.link import GridBlocks, ProcessBlocks
from multispin_sim.model.link import Blocks

RECORDS = ("rounds", "device_rounds")
FARTHER = {"devices": {"count": 6, "distance_m": [100.0, 1300.0]}}


def _far(fading, **more):
    return {"devices": {"count": 6, "distance_m": [100.0, 1000.0]}, "run": {"rounds": 60},
            "seed": 3, "link": {"model": "mcs"},
            "channel": {"fading": fading, "coherence_time_ms": 5.0, "doppler_hz": 20.0},
            **more}


def _run(scenario, monkeypatch, skip):
    """The run, and how many blocks were read one at a time (``current``)."""
    reads = [0]

    def counted(current):
        def read(self, t):
            reads[0] += 1
            return current(self, t)
        return read

    with monkeypatch.context() as m:
        for kind in (GridBlocks, ProcessBlocks):
            m.setattr(kind, "current", counted(kind.current))
            if not skip:
                m.setattr(kind, "skip_below", Blocks.skip_below)
        return simulate(scenario), reads[0]


@pytest.mark.parametrize("fading, more", [
    ("jakes", {}),
    ("gauss-markov", {}),
    ("rayleigh", {}),
    ("jakes", {"mobility": {"model": "random-waypoint", "speed_mps": [1.0, 3.0]},
               "channel": {"fading": "jakes", "coherence_time_ms": 5.0, "doppler": "speed"}}),
    # no grid: the process sampled at each retry
    ("jakes", {"channel": {"fading": "jakes", "doppler_hz": 20.0}, **FARTHER}),
    ("jakes", {"mobility": {"model": "random-waypoint", "speed_mps": [1.0, 3.0]},
               "channel": {"fading": "jakes", "doppler": "speed"}, **FARTHER}),
])
def test_outages_read_in_runs_give_what_reading_them_one_by_one_gives(fading, more, monkeypatch):
    sc = _far(fading, **more)
    fast, fast_reads = _run(sc, monkeypatch, skip=True)
    slow, slow_reads = _run(sc, monkeypatch, skip=False)
    outages = fast.summary["link"]["outages"]
    # the case is one of long outages (not vacuous): most of them were passed over in runs
    assert outages > 10_000 and fast_reads < outages / 4
    assert slow_reads > outages   # one by one: every outage block was read alone
    assert fast.summary["link"] == slow.summary["link"]
    assert fast.summary["goodput_tps"] == slow.summary["goodput_tps"]
    for name in RECORDS:
        a, b = getattr(fast, name), getattr(slow, name)
        for col in a:
            x, y = np.asarray(a[col]), np.asarray(b[col])
            assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), (name, col)


def test_the_block_limit_stops_a_correction_after_as_many_blocks_either_way(monkeypatch):
    """A correction that would need more than ``limits.max_blocks_per_transmission`` blocks
    stops the run at the same round, with the same message, whether its outages were read in
    runs or one by one."""
    sc = _far("jakes", limits={"max_blocks_per_transmission": 3000})
    sc["devices"]["distance_m"] = [100.0, 2000.0]
    fast, _ = _run(sc, monkeypatch, skip=True)
    slow, _ = _run(sc, monkeypatch, skip=False)
    assert fast.summary["stop_reason"] == slow.summary["stop_reason"]
    assert "3,000 fading blocks" in fast.summary["stop_reason"]
    assert fast.summary["rounds"] == slow.summary["rounds"]


@pytest.mark.parametrize("t0", [0.0123, 5.3e3, 1.38307965e5, 9.9e5])
def test_the_grid_blocks_move_on_one_block_at_a_time_however_late_the_correction(t0):
    """``next`` from a block's start is the next block's start, also a day of simulated time
    and more into a run of 5 ms blocks (block indices past 10^7, where a fixed snapping margin
    read a boundary as the block before it and ``next`` stood still)."""
    ch = SimpleNamespace(coherence_s=0.005)
    blocks = GridBlocks(ch, 0, 0, t0)
    t = blocks.next(0.0)
    first = blocks._index(t)
    for i in range(1, 20_000):
        t_next = blocks.next(t)
        assert t_next > t and blocks._index(t_next) == first + i
        t = t_next
