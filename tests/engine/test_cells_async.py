"""Several cells under the asynchronous protocol (continuous batching at each server): in
close cells a correction's bits are conserved across the interference changes that the other
cells' batches cut it into, and each correction's delay is its transmission's span in the
field; devices that move or re-associate draft in one cell at a time, their requests following
them. (One cell, and cells far apart, against single-cell runs: ``test_cells_engine``.)"""
import numpy as np
import pytest

import multispin_sim as ms
from multispin_sim.engine.handover import AttachedWorkload

from test_cells_engine import assert_intervals_deliver
from test_cells_queueing import RATE, assert_poisson_count, assert_tokens_go_to_requests


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


# ------------------------------------------------------------ devices that move or re-associate

MOVING = {"serving.protocol": "asynchronous", "run.rounds": 200, "cells.layout": "hex",
          "cells.count": 7, "cells.isd_m": 200.0, "devices.count": 6,
          "mobility.model": "random-waypoint", "mobility.speed_mps": 25.0, "seed": 3}


def run_logging_cycles(monkeypatch, overrides):
    """``ms.simulate`` of ``MOVING`` with ``overrides``, and each device's cycles in the cells:
    {device: [(start, end, cell)]} (a cycle: from its draft's start to its tokens)."""
    started, cycles = {}, {}
    start, tokens = AttachedWorkload.start_device, AttachedWorkload.device_tokens

    def start_device(self, k, now):
        ok = start(self, k, now)
        if ok:
            assert self.network.attached[k] == self.cell and (k not in started)
            started[k] = (now, self.cell)
        return ok

    def device_tokens(self, k, now, got):
        t0, cell = started.pop(k)
        assert cell == self.cell
        cycles.setdefault(k, []).append((t0, now, cell))
        return tokens(self, k, now, got)

    monkeypatch.setattr(AttachedWorkload, "start_device", start_device)
    monkeypatch.setattr(AttachedWorkload, "device_tokens", device_tokens)
    res = ms.simulate(ms.load_scenario(None, overrides={**MOVING, **overrides}))
    return res, cycles


def assert_one_cell_at_a_time(res, cycles):
    """No device's cycles (in any cell) and context migrations overlap, and a device's cycle
    is in the cell it was attached to (its last handover's target, arrived) when it started."""
    log = res.network.log
    for k, spans in cycles.items():
        moves = [h for h in log if h["device"] == k]
        for t0, _, cell in spans:
            before = [h for h in moves if h["time_s"] <= t0]
            if before:
                assert before[-1]["target"] == cell and before[-1]["arrival_s"] <= t0
            else:
                assert not moves or moves[0]["source"] == cell
        spans = sorted(spans + [(h["migration_start_s"], h["arrival_s"], -1) for h in moves
                                if "arrival_s" in h])
        for (a0, a1, ca), (b0, b1, cb) in zip(spans, spans[1:]):
            assert b0 >= a1, (k, (a0, a1, ca), (b0, b1, cb))


def test_moving_devices_draft_in_one_cell_at_a_time(monkeypatch):
    """Saturated devices that move: each drafts only in the cell it is attached to, one
    draft-verify-correct cycle at a time, its context migrating between its cycles; every cell
    does its run.rounds batches."""
    res, cycles = run_logging_cycles(monkeypatch, {})
    assert res.complete
    assert res.summary["handover"]["completed"] > 50
    assert min(c["rounds"] for c in res.summary["cells"]) >= MOVING["run.rounds"]
    assert_one_cell_at_a_time(res, cycles)
    # each device's batch rows are its cycles, in the cells they were in
    dev = res.device_rounds
    for k, spans in cycles.items():
        mine = dev["device"] == k
        assert np.count_nonzero(mine) == len(spans)
        assert sorted(dev["cell"][mine].tolist()) == sorted(c for _, _, c in spans)


@pytest.mark.parametrize("handover", ["a3", "association"])
def test_requests_follow_moving_devices_between_asynchronous_cells(monkeypatch, handover):
    """Poisson requests at moving devices: the network's arrivals are one Poisson process per
    device, its requests are served in order whichever cells serve them, a device drafts only
    with a request, and Little's law holds across the network."""
    res, cycles = run_logging_cycles(monkeypatch, {
        "workload.arrivals": "poisson", "workload.rate_per_s": RATE, "cells.handover": handover})
    assert_one_cell_at_a_time(res, cycles)
    assert res.summary["handover"]["completed"] > 20
    q, req = res.summary["requests"], res.requests
    assert_poisson_count(q["arrivals"], RATE * 42 * q["time_s"])
    assert q["completed"] + q["in_system_at_end"] == q["arrivals"]
    assert_tokens_go_to_requests(req, res.device_rounds, range(42))
    for k, spans in cycles.items():   # a request was open when each cycle started
        mine = req["device"] == k
        for t0, _, _ in spans:
            assert np.any(mine & (req["arrival_s"] <= t0) & ~(req["completion_s"] < t0))
    end = q["time_s"]
    left = np.where(np.isfinite(req["completion_s"]), req["completion_s"], end)
    np.testing.assert_allclose(q["queue_length_mean"], np.sum(left - req["arrival_s"]) / end,
                               rtol=1e-9)


def test_static_devices_re_associate_at_batch_ends(monkeypatch):
    """Load-aware re-association under the asynchronous protocol: static devices leave a slow
    server (30 ms per device) at its batch ends, each with its queue, and are served in both
    cells one cycle at a time."""
    res, cycles = run_logging_cycles(monkeypatch, {
        "mobility.model": "none", "run.rounds": 60, "devices.count": 10,
        "devices.distance_m": [20.0, 100.0], "cells.association": "load-aware",
        "cells.association_range_db": 20.0, "cells.reassociate": True,
        "cells.servers": {0: {"verify_per_device_ms": 30.0}},
        "workload.arrivals": "poisson", "workload.rate_per_s": 0.5})
    log = res.network.log
    assert log and all(x["source"] == 0 for x in log)
    r = res.rounds
    ends = (r["start_s"] + r["duration_s"])[r["cell"] == 0]
    assert all(np.isclose(ends, x["time_s"], rtol=1e-12, atol=0).any() for x in log)
    assert any({c for _, _, c in cycles.get(x["device"], [])} == {0, x["target"]} for x in log)
    assert_one_cell_at_a_time(res, cycles)
    assert_tokens_go_to_requests(res.requests, res.device_rounds, range(70))
