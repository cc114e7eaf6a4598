"""Checks shared by the tests of several cells: a run whose interfering pairs have no fading
(the interference is then a function of the log alone), the interference of every logged
interval rebuilt from the log, and moving devices served by one cell at a time."""
import numpy as np
import pytest

import multispin_sim as ms
from multispin_sim.engine.interference import InterferenceField
from multispin_sim.model.reactive import DL, UL


class _UnitFading:
    """Every interfering pair's fading draw is 1."""

    def standard_exponential(self, size):
        return np.ones(size)


def unit_fading_run(overrides):
    """``ms.simulate`` of the default scenario with ``overrides``, each interfering pair's
    fading set to 1."""
    mp = pytest.MonkeyPatch()
    init = InterferenceField.__init__

    def unit_init(self, links, co, n0, bandwidth, rng, log_limit=None):
        init(self, links, co, n0, bandwidth, _UnitFading(), log_limit)

    mp.setattr(InterferenceField, "__init__", unit_init)
    try:
        return ms.simulate(ms.load_scenario(None, overrides=overrides))
    finally:
        mp.undo()


def _gain(field, x, y):
    """x's transmitter to y's receiver, written out from the four cases."""
    if x.mode == UL and y.mode == UL:
        return field.links.gain[x.glob, y.cell]
    if x.mode == DL and y.mode == DL:
        return field.links.gain[y.glob, x.cell]
    if x.mode == DL:
        return field.ss[x.cell, y.cell]
    return field.dd[x.glob, y.glob]


def assert_interference_is_what_was_in_flight(field, cross=False):
    """Each logged interval's interference (before the first transmission still in flight at
    the end) is the sum, over the other cells' co-channel transmissions in flight at its middle
    (same direction; with ``cross`` both), of their power times the gain over the overlap of the
    subbands over their own width. Returns (intervals checked, those with interference, terms
    across directions)."""
    pending = [tx.start for mode in (UL, DL) for tx in field.active[mode]]
    horizon = min(pending, default=np.inf)
    spans = [(tx, tx.start, tx.intervals[-1][1]) for tx in field.log]
    checked = interfered = crossed = 0
    for y in field.log:
        for t0, t1, _, seen, _ in y.intervals:
            mid = 0.5 * (t0 + t1)
            if t1 >= horizon or t1 <= t0:
                continue
            total = 0.0
            for x, s0, s1 in spans:
                if x is y or not s0 <= mid < s1 or not field.co[x.cell, y.cell]:
                    continue
                if x.mode != y.mode and not cross:
                    continue
                overlap = min(x.f1, y.f1) - max(x.f0, y.f0)
                if overlap <= 0:
                    continue
                total += x.power * _gain(field, x, y) * overlap / (x.f1 - x.f0)
                crossed += x.mode != y.mode
            assert seen == pytest.approx(total, rel=1e-9, abs=1e-300)
            checked += 1
            interfered += seen > 0
    return checked, interfered, crossed


def device_spans(res):
    """{device: [(start, end, cell)]}: the rounds each device joined (its cell's round span)
    and, cell -1, its context migrations (from the start of the transfer to the arrival)."""
    rounds, dev = res.rounds, res.device_rounds
    span = {(c, r): (s, s + d) for c, r, s, d in zip(rounds["cell"], rounds["round"],
                                                     rounds["start_s"], rounds["duration_s"])}
    busy = {}
    for c, r, k in zip(dev["cell"], dev["round"], dev["device"]):
        busy.setdefault(int(k), []).append((*span[(int(c), int(r))], int(c)))
    for rec in res.network.log:
        if "arrival_s" in rec:
            busy.setdefault(rec["device"], []).append(
                (rec["migration_start_s"], rec["arrival_s"], -1))
    return busy


def assert_served_by_one_cell_at_a_time(res):
    """No device's rounds (in any cell) and context migrations overlap."""
    for k, spans in device_spans(res).items():
        spans.sort()
        for (a0, a1, ca), (b0, b1, cb) in zip(spans, spans[1:]):
            assert b0 >= a1 - 1e-12 * max(1.0, a1), (k, (a0, a1, ca), (b0, b1, cb))
