"""Queueing workloads in several cells: requests that follow moving devices from cell to cell
(one workload for the network), and asynchronous cells whose devices wait for requests."""
import math

import numpy as np
import pytest

import multispin_sim as ms
from cells_checks import assert_served_by_one_cell_at_a_time

RATE = 0.2   # requests/s per device: light load, the queues stay short
MOVING = {"run.rounds": 300, "cells.layout": "hex", "cells.count": 7, "cells.isd_m": 200.0,
          "devices.count": 6, "mobility.model": "random-waypoint", "mobility.speed_mps": 25.0,
          "workload.arrivals": "poisson", "workload.rate_per_s": RATE, "seed": 3}


def run(**overrides):
    return ms.simulate(ms.load_scenario(None, overrides={**MOVING, **overrides}))


@pytest.fixture(scope="module")
def moving():
    return run()


def assert_poisson_count(n, mean):
    """A Poisson count within 4 standard deviations of its mean (a miss about once in 15,000
    runs; the seeds are fixed)."""
    assert abs(n - mean) < 4 * math.sqrt(mean), (n, mean)


def assert_tokens_go_to_requests(requests, device_rounds, devices):
    """Each device's tokens serve its requests in order: the rounds it joined are its requests'
    rounds, and its tokens are the lengths of its completed requests plus part of the one in
    service (none when that one has not started)."""
    for k in devices:
        mine = requests["device"] == k
        rounds = np.count_nonzero(device_rounds["device"] == k)
        assert requests["rounds"][mine].sum() == rounds
        got = device_rounds["tokens"][device_rounds["device"] == k].sum()
        done = np.isfinite(requests["completion_s"]) & mine
        completed = requests["tokens"][done].sum()
        order = np.argsort(requests["arrival_s"][mine], kind="stable")
        finished = np.isfinite(requests["completion_s"][mine][order])
        # FIFO: the completed requests are the first ones
        assert not np.any(finished[1:] & ~finished[:-1]), k
        head = np.flatnonzero(~finished)
        if head.size and requests["rounds"][mine][order][head[0]] > 0:
            assert completed < got < completed + requests["tokens"][mine][order][head[0]], k
        else:
            assert got == completed, k


def test_one_workload_for_the_network_its_arrivals_poisson_at_every_device(moving):
    """The devices' request processes are the network's, not one copy per cell: the arrivals
    count is Poisson with mean rate x devices x time (seven copies would be seven times it)."""
    q = moving.summary["requests"]
    d = MOVING["cells.count"] * MOVING["devices.count"]
    assert_poisson_count(q["arrivals"], RATE * d * q["time_s"])
    assert q["arrivals"] == moving.requests["arrival_s"].size
    assert q["completed"] + q["in_system_at_end"] == q["arrivals"]
    assert np.unique(moving.requests["request"]).size == q["arrivals"]
    assert (moving.folder / "requests.csv").exists()
    assert not any((moving.folder / f"cell_{c}" / "requests.csv").exists() for c in range(7))


def test_requests_follow_their_devices_and_each_round_serves_them(moving):
    """A device joins a round of the cell it is attached to, only with a request, and its
    tokens go to its requests in order whichever cell served them."""
    assert moving.summary["handover"]["completed"] > 20   # requests served across cells
    assert_served_by_one_cell_at_a_time(moving)
    req, dev, rounds = moving.requests, moving.device_rounds, moving.rounds
    start = {(c, r): s for c, r, s in zip(rounds["cell"], rounds["round"], rounds["start_s"])}
    log = moving.network.log
    cells_of = {}
    for c, r, k in zip(dev["cell"].tolist(), dev["round"].tolist(), dev["device"].tolist()):
        s = start[(c, r)]
        before = [h for h in log if h["device"] == k and h["time_s"] < s]
        if before:   # attached to the last handover's target, once it arrived
            assert before[-1]["arrival_s"] <= s and before[-1]["target"] == c
        else:
            cells_of.setdefault(k, set()).add(c)
            first = [h for h in log if h["device"] == k]
            assert not first or first[0]["source"] == c
        mine = req["device"] == k
        # a request had arrived and was not completed before the round started
        open_ = (req["arrival_s"] <= s) & ~(req["completion_s"] < s)
        assert np.any(mine & open_), (k, c, r)
    assert all(len(c) == 1 for c in cells_of.values())
    assert_tokens_go_to_requests(req, dev, range(42))
    q = moving.summary["requests"]
    np.testing.assert_allclose(q["tokens_per_s"] * q["time_s"], dev["tokens"].sum(), rtol=1e-12)


def test_the_network_queue_length_is_the_requests_time_in_system(moving):
    """Little's law on the sample path: the time-average number of requests in the system is
    the total time the requests spent in it (the unfinished ones up to the end) over the run,
    whichever cells they were served in."""
    q, req = moving.summary["requests"], moving.requests
    end = q["time_s"]
    left = np.where(np.isfinite(req["completion_s"]), req["completion_s"], end)
    np.testing.assert_allclose(q["queue_length_mean"],
                               np.sum(left - req["arrival_s"]) / end, rtol=1e-9)
    assert 0 < q["server_utilisation"] < 1


@pytest.mark.parametrize("protocol", ["synchronous", "asynchronous"])
@pytest.mark.parametrize("handover", ["a3", "association"])
def test_a_trace_replayed_to_its_end_ends_the_network(tmp_path, handover, protocol):
    """With devices moving, the cells stop when the trace is replayed and its requests served
    (no horizon needed): every request completes. Under 'association' handovers come only at
    round ends, so cells waiting for work must hear that the trace has ended (no event would
    wake them: SimPy ran out of events); an asynchronous cell keeps a device handed over during
    its cycle until the cycle ends (else the device's context never left)."""
    trace = tmp_path / "trace.csv"
    rng = np.random.default_rng(0)
    times = np.sort(rng.uniform(0, 5, 30))
    trace.write_text("time_s,device,tokens\n" + "".join(
        f"{t},{d},{n}\n" for t, d, n in zip(times, rng.integers(0, 42, 30),
                                            rng.integers(8, 40, 30))))
    res = run(**{"workload.arrivals": "trace", "workload.trace_file": str(trace),
                 "run.rounds": 10**6, "cells.handover": handover, "serving.protocol": protocol,
                 "run.max_time_s": 300.0})   # ends a run that would wait for good: no hang
    q = res.summary["requests"]
    assert res.complete and q["arrivals"] == q["completed"] == 30
    assert res.summary["sim_time_s"] < 60
    assert_tokens_go_to_requests(res.requests, res.device_rounds, range(42))


def test_the_backlog_bound_counts_the_networks_queues(tmp_path):
    """limits.max_backlog_requests bounds the requests waiting in the whole network: the run
    stops flagged incomplete, with every file written."""
    res = run(**{"workload.rate_per_s": 5.0, "limits.max_backlog_requests": 100,
                 "run.rounds": 10**6})
    assert not res.complete
    assert "limits.max_backlog_requests" in res.summary["stop_reason"]
    assert 100 <= res.summary["requests"]["in_system_at_end"] <= 125
    assert not res.summary["requests"]["stable"]
    assert res.requests["arrival_s"].size == res.summary["requests"]["arrivals"]


def test_asynchronous_cells_wait_for_requests_and_stop_at_the_horizon():
    """Asynchronous cells with Poisson requests: each cell's requests are its own (Poisson
    counts) and served in order, and every cell stops at the network's horizon, the slowest
    cell having done exactly run.rounds batches, even while its server waits for a draft."""
    rounds = 120
    res = ms.simulate(ms.load_scenario(None, overrides={
        "run.rounds": rounds, "cells.layout": "hex", "cells.count": 7, "cells.isd_m": 200.0,
        "devices.count": 6, "workload.arrivals": "poisson", "workload.rate_per_s": RATE,
        "serving.protocol": "asynchronous", "seed": 5}))
    assert res.complete
    assert min(c["rounds"] for c in res.summary["cells"]) >= rounds
    # the horizon: when the last cell recorded its run.rounds-th batch
    horizon = max(np.sort(c.rounds["start_s"] + c.rounds["duration_s"])[rounds - 1]
                  for c in res.cells)
    for cell in res.cells:
        ends = cell.rounds["start_s"] + cell.rounds["duration_s"]
        assert cell.rounds["start_s"].max() <= horizon
        # a cell ends with its batches in flight, or at the horizon when it waits for drafts
        assert cell.summary["sim_time_s"] <= max(horizon, ends.max()) * (1 + 1e-12)
        q = cell.summary["requests"]
        assert_poisson_count(q["arrivals"], RATE * 6 * q["time_s"])
        assert_tokens_go_to_requests(cell.requests, cell.device_rounds, range(6))


def test_the_run_report_counts_the_requests_of_several_cells(tmp_path, capsys):
    """The command line's report of static cells with queues (each cell's latencies in its own
    summary) and of a network whose devices move (the network's latencies)."""
    from multispin_sim.cli import main

    common = ["run", "--rounds", "60", "--set", "cells.layout=hex", "--set", "devices.count=3",
              "--set", "workload.arrivals=poisson", "--set", f"workload.rate_per_s={RATE}"]
    for name, extra in (("static", []), ("moving", ["--set", "mobility.model=random-waypoint"])):
        assert main(common + ["--out", str(tmp_path / name)] + extra) == 0
        out = capsys.readouterr().out
        assert "completed, latency median" in out and "server utilisation" in out, name


def test_static_cells_pool_their_requests_latencies():
    """Cells with their own queues: the network's latency, waiting time and time to first
    token describe every cell's completed requests together."""
    res = ms.simulate(ms.load_scenario(None, overrides={
        "run.rounds": 100, "cells.layout": "hex", "cells.count": 7, "devices.count": 4,
        "workload.arrivals": "poisson", "workload.rate_per_s": RATE, "seed": 2}))
    net = res.summary["requests"]
    req = {key: np.concatenate([c.requests[key] for c in res.cells])
           for key in ("arrival_s", "start_s", "first_token_s", "completion_s")}
    done = np.isfinite(req["completion_s"])
    assert np.count_nonzero(done) == net["completed"] > 50
    for key, column in (("latency_s", "completion_s"), ("wait_s", "start_s"),
                        ("time_to_first_token_s", "first_token_s")):
        x = (req[column] - req["arrival_s"])[done]
        for stat, value in (("mean", x.mean()), ("median", np.median(x)), ("max", x.max())):
            np.testing.assert_allclose(net[key][stat], value, rtol=1e-12, err_msg=key)
    np.testing.assert_allclose(net["server_utilisation"], np.mean(
        [c.summary["requests"]["server_utilisation"] for c in res.cells]), rtol=1e-12)


def test_static_devices_re_associated_take_their_requests_along():
    """Load-aware re-association moves static devices off a slow server (30 ms per device) at
    its round ends, each with its queue: the requests of a moved device are served in order
    across its two cells, and the network's arrivals are one Poisson process per device."""
    res = run(**{"mobility.model": "none", "run.rounds": 60, "devices.count": 10,
                 "devices.distance_m": [20.0, 100.0], "cells.association": "load-aware",
                 "cells.association_range_db": 20.0, "cells.reassociate": True,
                 "cells.servers": {0: {"verify_per_device_ms": 30.0}},
                 "workload.rate_per_s": 0.5})
    log = res.network.log
    assert log and all(x["source"] == 0 for x in log)
    moved = {x["device"] for x in log}
    dev = res.device_rounds
    both = [k for k in moved if set(dev["cell"][dev["device"] == k].tolist()) >= {0}
            and len(set(dev["cell"][dev["device"] == k].tolist())) == 2]
    assert both   # some moved device was served in both cells
    assert_served_by_one_cell_at_a_time(res)
    assert_tokens_go_to_requests(res.requests, dev, range(70))
    q = res.summary["requests"]
    assert_poisson_count(q["arrivals"], 0.5 * 70 * q["time_s"])
