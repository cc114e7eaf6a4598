"""One horizon for a network of cells: every cell serves (and so interferes) until each has done
``run.rounds`` rounds, then every cell stops at the end of its round in progress; the network's
goodput sums the cells' tokens over their spans, which all cover that common horizon."""
import numpy as np
import pytest

import multispin_sim as ms
from multispin_sim.engine import cells as cells_engine
from multispin_sim.engine.simulation import Result, build_run, read_inputs

CLOSE = {"cells.layout": "hex", "cells.count": 7, "cells.isd_m": 100.0, "devices.count": 4,
         "run.rounds": 30}


def run_to_end(tmp_path, **overrides):
    """(the CellsRun after its environment ran to the end, its Result): the runs' end times
    and the horizon stay visible."""
    sc = ms.load_scenario(None, overrides={**CLOSE, **overrides})
    net = cells_engine.builder(sc, build_run, Result)(sc, tmp_path / "run", read_inputs(sc))
    net.env.run(until=net.start())
    return net, net.finish()


def round_ends(result):
    """Per cell: (starts, ends) of its rounds in order."""
    out = []
    for c in result.cells:
        r = c.rounds
        out.append((r["start_s"], r["start_s"] + r["duration_s"]))
    return out


def test_every_cell_serves_until_the_last_one_has_done_its_rounds(tmp_path):
    """Interference-limited cells (ISD 100 m) have heavy-tailed rounds, so the cells reach their
    30 rounds at very different times; each serves on until the last has, and then ends with
    the round it is in: the cells' ends differ by less than a round, and the network's goodput
    sums each cell's tokens over its span, which covers the horizon and passes it by less than
    its last round."""
    net, res = run_to_end(tmp_path, seed=3)
    rounds = res.scenario.run.rounds
    spans = round_ends(res)
    # the horizon: the last cell to complete its 30th round
    horizon = max(float(ends[rounds - 1]) for _, ends in spans)
    for c, (starts, ends) in enumerate(spans):
        assert ends.size >= rounds
        tol = 1e-12 * horizon
        # its last round was in progress at the horizon (or ended there), the one before not
        assert starts[-1] <= horizon + tol <= ends[-1] + 2 * tol, c
        assert net.runs[c].end_s == pytest.approx(ends[-1], rel=1e-12)
    last = np.array([ends[-1] for _, ends in spans])
    longest_last = max(ends[-1] - starts[-1] for starts, ends in spans)
    assert last.max() - last.min() <= longest_last
    assert last.max() - last.min() > 0        # they do not stop in lock-step
    s = res.summary
    assert res.summary["complete"]
    assert s["sim_time_s"] == pytest.approx(last.max(), rel=1e-12)
    assert s["tokens"] == sum(int(c.rounds["tokens"].sum()) for c in res.cells)
    goodput = sum(int(c.rounds["tokens"].sum()) / float(ends[-1])
                  for c, (_, ends) in zip(res.cells, spans))
    assert s["goodput_tps"] == pytest.approx(goodput, rel=1e-12)
    for block, (_, ends) in zip(s["cells"], spans):
        assert block["sim_time_s"] == pytest.approx(ends[-1], rel=1e-12)
    assert s["rounds"] > 7 * rounds


def test_an_idle_cell_ends_at_the_horizon_and_takes_no_later_request(tmp_path):
    """With a queueing workload a cell may be waiting for work at the horizon: it ends then
    (not at its next arrival), its workload closed, so each cell's request figures are over
    its own run; a cell in a round ends with it."""
    net, res = run_to_end(tmp_path, **{"workload.arrivals": "poisson",
                                       "workload.rate_per_s": 0.05, "run.rounds": 15, "seed": 7})
    spans = round_ends(res)
    horizon = max(float(ends[14]) for _, ends in spans)
    idle = 0
    for run, cell, (_, ends) in zip(net.runs, res.cells, spans):
        if ends[-1] < horizon:      # waiting for an arrival at the horizon
            idle += 1
            assert run.end_s == horizon
        else:
            assert run.end_s == pytest.approx(ends[-1], rel=1e-12)
        assert run.workload.closed
        arrivals = cell.requests["arrival_s"]
        assert np.nanmax(arrivals) <= run.end_s
        assert cell.summary["requests"]["arrivals"] == arrivals.size
    assert idle > 0


def test_a_cell_left_without_devices_ends_with_the_network(tmp_path):
    """Static devices re-associated at round ends leave some cells without devices: those
    cells wait for work until the network's horizon and end there."""
    net, res = run_to_end(tmp_path, **{"devices.count": 4, "run.rounds": 60, "seed": 7,
                                       "cells.drop": "region", "cells.reassociate": True})
    empty = [c for c, cell in enumerate(res.cells) if cell.summary["rounds"] == 0]
    assert empty and res.summary["complete"]
    ends = [run.end_s for run in net.runs]
    horizon = min(ends)          # the cells with work end at their round's end after it
    for c in empty:
        assert ends[c] == horizon
    longest = max(float(cell.rounds["duration_s"].max()) for cell in res.cells
                  if cell.summary["rounds"])
    assert max(ends) - horizon <= longest
    # every cell with devices served at the horizon
    for cell, end in zip(res.cells, ends):
        r = cell.rounds
        if cell.summary["rounds"] and end > horizon:
            assert np.any(r["start_s"] <= horizon) and end == pytest.approx(
                float(np.max(r["start_s"] + r["duration_s"])), rel=1e-12)


def test_the_progress_shows_the_slowest_cells_rounds(tmp_path):
    sc = ms.load_scenario(None, overrides=CLOSE)
    net = cells_engine.builder(sc, build_run, Result)(sc, tmp_path / "run", read_inputs(sc))
    shown = []
    net.horizon.progress = lambda done, now: shown.append(done)
    net.env.run(until=net.start())
    net.finish()
    assert shown == sorted(set(shown)) and shown[-1] == 30 and shown.count(30) == 1


def test_the_rounds_of_all_cells_stay_within_the_memory_limit(tmp_path, monkeypatch):
    """A cell's rounds are not bounded by run.rounds (it serves until the horizon): the total
    is bounded by what limits.max_memory_mb leaves for rounds, and at it the network stops as
    a limit stops a run."""
    from multispin_sim.scenario import limits

    sc = ms.load_scenario(None, overrides=CLOSE)
    terms = limits.memory_terms(sc)
    budget = cells_engine.round_budget(sc)
    used = (limits.BASE_BYTES + sum(v for k, v in terms.items() if k != "run.rounds")
            + budget * limits.PER_ROUND_BYTES)
    assert used <= sc.limits.max_memory_mb * (1 << 20)
    assert budget >= 7 * sc.run.rounds      # the estimate admitted the scenario
    monkeypatch.setattr(cells_engine, "round_budget", lambda _: 50)
    res = ms.simulate(sc)
    s = res.summary
    assert not s["complete"] and "limits.max_memory_mb" in s["stop_reason"]
    assert 50 <= s["rounds"] < 50 + 7    # the rounds in progress end whole
