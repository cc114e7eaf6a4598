"""Queueing workloads against oracles (docs/model.md sections 9-10).

- One device with a fixed round time tau is an M/G/1 queue with service S = tau R_L: the mean
  time in system matches Pollaczek-Khinchine within a t-interval from 20 replications, and the
  interval excludes the formula evaluated at an arrival rate 10% off (the test has the power).
- Rounds on a fixed tick add exactly tau/2 (paired runs with common random numbers).
- Little's law holds on every queueing run's own sample path (an identity, float tolerance).
- Structure: only devices with work join a round, the batch (and verification time) follows
  them, the server idles until the next arrival, draft lengths never exceed what is still needed.

Fixed seeds; statistical tolerances come from the statistics' own laws.
"""
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import multispin_sim as ms
from multispin_sim.model.queueing import LENGTH_MODELS, pollaczek_khinchine, round_count_moments
from multispin_sim.scenario.names import MAX_REQUEST_TOKENS

ALPHA, GAMMA, LENGTH, TAU = 0.8, 4, 64, 0.05
REF_R1, REF_R2 = 19.503530, 384.845743  # docs/model.md section 10
REF_WQ, REF_W = 0.4933027, 1.4684792    # at rho = 0.5


def renewal_moments(alpha, gamma, length):
    """E[R_L], E[R_L^2] by the renewal recursion on the tokens still needed (independent code).

    A round gives N = A + 1 tokens, A truncated geometric on 0..gamma; R(n) = 1 + R(n - N).
    """
    p = [alpha**j * (1 - alpha) for j in range(gamma)] + [alpha**gamma]  # P(A = j)
    m1 = [0.0] * (length + 1)
    m2 = [0.0] * (length + 1)
    for n in range(1, length + 1):
        e1 = e2 = 1.0
        for j, pj in enumerate(p):
            rest = max(n - (j + 1), 0)
            e1 += pj * m1[rest]
            e2 += pj * (2 * m1[rest] + m2[rest])
        m1[n], m2[n] = e1, e2
    return m1[length], m2[length]


def pk_sojourn(rate, tau=TAU):
    r1, r2 = renewal_moments(ALPHA, GAMMA, LENGTH)
    es, es2 = tau * r1, tau * tau * r2
    rho = rate * es
    return rate * es2 / (2 * (1 - rho)) + es


def run(overrides, **kw):
    return ms.simulate(ms.load_scenario(None, overrides=overrides), **kw)


ONE_DEVICE = Path(__file__).resolve().parents[2] / "scenarios" / "queueing-one-device.yaml"


def one_device(rate, **extra):
    """``scenarios/queueing-one-device.yaml``: one device, fixed round time 4 drafts x 5 ms +
    (22.4 + 7.6) ms verification = 50 ms; a 2-bit payload at 10 m without fading makes a
    correction take 1.5e-8 s (a residual of 3e-7 of tau in rounds with a rejection, far below
    the statistical tolerance). The overrides for ``run``."""
    return {"workload.rate_per_s": rate, **extra}


def run_one(overrides):
    return ms.simulate(ms.load_scenario(ONE_DEVICE, overrides=overrides))


def test_the_one_device_scenario_is_the_setting_of_the_formula():
    sc = ms.load_scenario(ONE_DEVICE)
    assert sc.devices.count == 1 and sc.devices.overrides[0].alpha == ALPHA
    assert sc.policy.draft_length == GAMMA and sc.workload.length_tokens == LENGTH
    draft_s = GAMMA * sc.devices.draft_latency_ms * 1e-3
    verify_s = (sc.server.verify_fixed_ms + sc.server.verify_per_device_ms) * 1e-3
    assert draft_s + verify_s == pytest.approx(TAU, rel=1e-12)
    assert sc.devices.draft_latency_spread == (1, 1) and sc.channel.fading == "none"


def check_little(result):
    """Little's law on the run's sample path: mean number in system (from the queue-length
    integrals) = arrival rate x mean time in system (from the request times, the unfinished
    ones counted up to the end) -- and both agree with requests.csv."""
    s = result.summary
    req = s["requests"]
    end = req["time_s"]   # the run's sim_time_s, or where a limit stopped it mid-round
    if s["complete"]:
        assert end == pytest.approx(s["sim_time_s"], rel=1e-12)
    little = req["little"]
    assert little["in_system_mean"] == pytest.approx(little["arrival_rate_x_mean_time_in_system"],
                                                     rel=1e-9, abs=1e-12)
    table = result.requests
    sojourn = np.where(np.isnan(table["completion_s"]), end, table["completion_s"]) - table["arrival_s"]
    assert table["request"].size == req["arrivals"]
    assert sojourn.sum() / end == pytest.approx(req["queue_length_mean"], rel=1e-9, abs=1e-12)
    assert req["queue_length_mean"] == pytest.approx(sum(req["queue_length_mean_per_device"]), rel=1e-12)
    # waiting (not yet in service): the same identity with start times
    wait = np.where(np.isnan(table["start_s"]), end, table["start_s"]) - table["arrival_s"]
    assert wait.sum() / end == pytest.approx(req["waiting_mean"], rel=1e-9, abs=1e-12)


# ------------------------------------------------------------------------------- oracles

def test_renewal_moments_reproduce_the_reference_numbers():
    r1, r2 = renewal_moments(ALPHA, GAMMA, LENGTH)
    assert r1 == pytest.approx(REF_R1, abs=5e-7) and r2 == pytest.approx(REF_R2, abs=5e-7)
    assert round_count_moments(ALPHA, GAMMA, LENGTH) == pytest.approx((r1, r2), rel=1e-13)
    # capping the draft to what is still needed does not change the rounds needed
    assert round_count_moments(ALPHA, GAMMA, LENGTH, True) == pytest.approx((r1, r2), rel=1e-13)
    rate = 0.5 / (TAU * r1)
    wq, w = pollaczek_khinchine(rate, TAU * r1, TAU**2 * r2)
    assert wq == pytest.approx(REF_WQ, abs=5e-8) and w == pytest.approx(REF_W, abs=5e-8)
    assert pk_sojourn(rate) == pytest.approx(REF_W, abs=5e-8)


def test_round_count_moments_match_sampling():
    rng = np.random.default_rng(3)
    u = 1.0 - rng.random((20000, 40))
    tokens = np.minimum(np.floor(np.log(u) / np.log(ALPHA)), GAMMA) + 1
    rounds = (np.cumsum(tokens, axis=1) < LENGTH).sum(axis=1) + 1
    half = 4 * rounds.std() / math.sqrt(rounds.size)
    assert abs(rounds.mean() - REF_R1) < half


@pytest.fixture(scope="module")
def pk_runs():
    """20 replications at rho = 0.5, 600 s each; requests arriving in [50, 550) s are counted."""
    rate = 0.5 / (TAU * REF_R1)
    return rate, [run_one(one_device(rate, seed=seed, **{"run.max_time_s": 600.0})) for seed in range(20)]


def pk_interval(runs, warmup=50.0, end=550.0):
    means = []
    for r in runs:
        t = r.requests
        sel = (t["arrival_s"] >= warmup) & (t["arrival_s"] < end)
        assert not np.isnan(t["completion_s"][sel]).any()  # all of them completed by 600 s
        means.append(float(np.mean(t["completion_s"][sel] - t["arrival_s"][sel])))
    means = np.asarray(means)
    half = stats.t.ppf(0.975, means.size - 1) * means.std(ddof=1) / math.sqrt(means.size)
    return means.mean(), means.mean() - half, means.mean() + half


def test_pollaczek_khinchine_mean_time_in_system(pk_runs):
    rate, runs = pk_runs
    mean, lo, hi = pk_interval(runs)
    truth = pk_sojourn(rate)  # 1.4684792 s
    assert lo <= truth <= hi, (mean, lo, hi, truth)
    # the same test with the arrival rate 10% off fails: the interval excludes the formula
    for off in (0.9, 1.1):
        assert not lo <= pk_sojourn(rate * off) <= hi, (off, lo, hi, pk_sojourn(rate * off))
    # every round lasts tau (up to the 2-bit correction residual)
    rounds = runs[0].rounds
    np.testing.assert_allclose(rounds["duration_s"], TAU, rtol=1e-6)
    assert np.all(rounds["batch_size"] == 1)


def test_little_law_on_the_pk_runs(pk_runs):
    for r in pk_runs[1][:5]:
        check_little(r)
        req = r.summary["requests"]
        busy = r.rounds["duration_s"].sum()
        assert req["server_utilisation"] == pytest.approx(busy / r.summary["sim_time_s"], rel=1e-9)
        assert req["stable"] and not req["warnings"]


def test_fixed_period_ticks_add_half_a_period():
    """Rounds only on a 50 ms clock: each request's time in system grows by the time from its
    busy period's start to the next tick; with common random numbers the per-request
    differences average tau/2 (the phases are uniform in the long run)."""
    rate = 0.5 / (TAU * REF_R1)
    # rounds of 49.999 ms + the correction residual fit in the 50 ms tick
    base = one_device(rate, seed=7, **{"server.verify_fixed_ms": 22.399, "run.max_time_s": 1200.0})
    free = run_one(base).requests
    tick = run_one({**base, "workload.tick_period_s": TAU}).requests
    n = min(np.count_nonzero(~np.isnan(free["completion_s"])),
            np.count_nonzero(~np.isnan(tick["completion_s"])))
    assert n > 400
    np.testing.assert_array_equal(free["arrival_s"][:n], tick["arrival_s"][:n])
    np.testing.assert_array_equal(free["rounds"][:n], tick["rounds"][:n])  # same outcomes
    d = (tick["completion_s"] - tick["arrival_s"] - free["completion_s"] + free["arrival_s"])[:n]
    assert d.min() > -1e-3 and d.max() < TAU + 1e-3  # pathwise in [0, tau)
    # tick starts are on the grid
    starts = tick["start_s"][:n] / TAU
    np.testing.assert_allclose(starts, np.round(starts), atol=1e-6)
    # batch means (batches of busy periods are short: 40 requests per batch is plenty)
    batches = d[: n // 40 * 40].reshape(-1, 40).mean(axis=1)
    half = stats.t.ppf(0.9995, batches.size - 1) * batches.std(ddof=1) / math.sqrt(batches.size)
    assert abs(d.mean() - TAU / 2) < half + 1e-4, (d.mean(), half)
    assert half < TAU / 10


def test_no_round_starts_before_a_long_first_tick():
    # a 1e12 s clock: the requests of the first period pile up (to the backlog limit) before
    # any round; a time under 1e-9 periods used to count as on the tick at 0
    r = run({"devices.count": 2, "workload.arrivals": "poisson", "workload.rate_per_s": 0.5,
             "workload.tick_period_s": 1e12, "run.rounds": 30,
             "limits.max_backlog_requests": 1000})
    assert len(r.rounds["start_s"]) == 0 and not r.summary["complete"]
    assert "limits.max_backlog_requests" in r.summary["stop_reason"]


@pytest.mark.parametrize("tick, rate", [(0.3, 0.5), (1e6, 1e-5), (1e12, 1e-11)])
def test_rounds_start_on_the_tick_grid_whatever_its_period(tick, rate):
    r = run({"devices.count": 2, "workload.arrivals": "poisson", "workload.rate_per_s": rate,
             "workload.tick_period_s": tick, "run.rounds": 30})
    assert len(r.rounds["start_s"]) == 30
    starts = r.rounds["start_s"] / tick
    assert starts[0] >= 1.0   # the first request arrives after 0: the first round waits a tick
    np.testing.assert_allclose(starts, np.round(starts), rtol=0, atol=1e-9)


# ------------------------------------------------------------------------------- structure

@pytest.fixture(scope="module")
def poisson_run():
    return run({"devices.count": 6, "workload.arrivals": "poisson", "workload.rate_per_s": 0.2,
                "workload.length": "geometric", "workload.length_tokens": 40, "run.rounds": 4000,
                "seed": 3})


def test_little_law_multi_device(poisson_run):
    check_little(poisson_run)
    req = poisson_run.summary["requests"]
    assert req["completed"] + req["in_system_at_end"] == req["arrivals"] > 500
    assert 0 < req["server_utilisation"] < 1


def test_only_devices_with_work_join_and_the_batch_follows(poisson_run):
    r = poisson_run
    rounds, dr, reqs = r.rounds, r.device_rounds, r.requests
    sc = r.scenario
    counts = np.bincount(dr["round"], minlength=rounds["round"].size)
    np.testing.assert_array_equal(rounds["batch_size"], counts)
    assert rounds["batch_size"].min() >= 1 and rounds["batch_size"].max() <= 6
    assert (rounds["batch_size"] < 6).mean() > 0.3
    verify = (sc.server.verify_fixed_ms + rounds["batch_size"] * sc.server.verify_per_device_ms) * 1e-3
    np.testing.assert_allclose(rounds["verify_s"], verify, rtol=1e-12)
    # every (round, device) row belongs to a request in service: start <= round start < completion
    start = rounds["start_s"][dr["round"]]
    end = start + rounds["duration_s"][dr["round"]]
    for k in range(6):
        rows = dr["device"] == k
        mine = reqs["device"] == k
        s, c = reqs["start_s"][mine], reqs["completion_s"][mine]
        c = np.where(np.isnan(c), np.inf, c)
        served = np.zeros(rows.sum(), dtype=int)
        for a, b in zip(s, c):
            served += (start[rows] >= a - 1e-12) & (end[rows] <= b + 1e-12)
        assert np.all(served == 1), k
    # rounds per request: the rows of its device inside its service interval
    done = ~np.isnan(reqs["completion_s"])
    total = sum(reqs["rounds"][done & (reqs["device"] == k)].sum() for k in range(6))
    assert total <= dr["round"].size


def test_tokens_exactly_fill_requests_when_capped(poisson_run):
    r = poisson_run
    dr, reqs, rounds = r.device_rounds, r.requests, r.rounds
    end = rounds["start_s"][dr["round"]] + rounds["duration_s"][dr["round"]]
    for k in range(6):
        mine = (reqs["device"] == k) & ~np.isnan(reqs["completion_s"])
        rows = dr["device"] == k
        for s, c, n, nr in zip(reqs["start_s"][mine], reqs["completion_s"][mine],
                               reqs["tokens"][mine], reqs["rounds"][mine]):
            sel = rows & (end > s) & (end <= c + 1e-12)
            assert dr["tokens"][sel].sum() == n and sel.sum() == nr
            # the draft never exceeds what is still needed: gamma <= remaining - 1
            left = n - np.concatenate([[0], np.cumsum(dr["tokens"][sel])[:-1]])
            assert np.all(dr["draft_len"][sel] <= np.maximum(left - 1, 0))
    assert set(np.unique(dr["draft_len"])) > {4}  # capped below 4 near the end of requests


def test_server_idles_until_the_next_arrival(poisson_run):
    rounds, reqs = poisson_run.rounds, poisson_run.requests
    ends = rounds["start_s"] + rounds["duration_s"]
    starts = rounds["start_s"][1:]
    gap = starts - ends[:-1]
    assert np.all(gap >= -1e-12)
    idle = gap > 1e-12
    assert idle.sum() > 10
    # an idle server starts the next round exactly at an arrival
    assert np.all(np.isin(starts[idle], reqs["arrival_s"]))
    s = poisson_run.summary
    assert s["sim_time_s"] == pytest.approx(ends[-1], rel=1e-12)
    assert s["requests"]["server_utilisation"] == pytest.approx(
        rounds["duration_s"].sum() / ends[-1], rel=1e-9)


def test_request_times_are_ordered(poisson_run):
    t = poisson_run.requests
    done = ~np.isnan(t["completion_s"])
    a, s, f, c = (t[x][done] for x in ("arrival_s", "start_s", "first_token_s", "completion_s"))
    assert np.all(a <= s) and np.all(s < f) and np.all(f <= c)
    assert np.all(t["rounds"][done] >= np.ceil(t["tokens"][done] / 5))
    summary = poisson_run.summary["requests"]
    lat = c - a
    assert summary["latency_s"]["mean"] == pytest.approx(lat.mean(), rel=1e-9)
    assert summary["latency_s"]["median"] == pytest.approx(np.median(lat), rel=1e-6)
    assert summary["time_to_first_token_s"]["p95"] == pytest.approx(np.quantile(f - a, 0.95), rel=1e-6)
    lo, hi = summary["latency_s"]["ci95"]
    assert lo < lat.mean() < hi
    # FIFO per device
    for k in range(6):
        mine = done & (t["device"] == k)
        assert np.all(np.diff(t["start_s"][mine]) > 0)


@pytest.mark.parametrize("protocol", ["synchronous", "asynchronous"])
def test_uncapped_drafts_discard_the_surplus(protocol):
    r = run({"devices.count": 3, "workload.arrivals": "poisson", "workload.rate_per_s": 0.3,
             "workload.length_tokens": 10, "workload.cap_draft_to_remaining": False,
             "run.rounds": 600, "seed": 2, "serving.protocol": protocol})
    assert np.all(r.device_rounds["draft_len"] == 4)
    req = r.summary["requests"]
    # the goodput and the records count the tokens the requests used; the surplus apart
    assert req["tokens_per_s"] == pytest.approx(r.summary["goodput_tps"], rel=1e-12)
    assert r.rounds["tokens"].sum() == r.summary["tokens"] == r.device_rounds["tokens"].sum()
    assert req["surplus_tokens"] > 0
    done = ~np.isnan(r.requests["completion_s"])
    assert r.summary["tokens"] >= r.requests["tokens"][done].sum()
    check_little(r)


def test_a_run_the_backlog_stops_mid_round_counts_its_requests_to_the_stop():
    """Arrivals pass 1.25 x limits.max_backlog_requests within a round: the run stops there.
    The requests block covers the run up to the stop (its time_s, past the recorded rounds'
    sim_time_s), and Little's law holds on that path."""
    r = run({"devices.count": 3, "workload.arrivals": "poisson", "workload.rate_per_s": 300,
             "limits.max_backlog_requests": 40, "run.max_time_s": 300, "seed": 3})
    s = r.summary
    assert not s["complete"] and "max_backlog_requests" in s["stop_reason"]
    assert not s["requests"]["stable"]   # however few requests each device's queue holds
    assert "limits.max_backlog_requests" in s["requests"]["warnings"][0]
    assert s["requests"]["time_s"] > s["sim_time_s"]
    assert r.requests["arrival_s"].max() <= s["requests"]["time_s"]
    check_little(r)


def test_overload_warns():
    r = run({"devices.count": 2, "workload.arrivals": "poisson", "workload.rate_per_s": [2.0, 0.05],
             "run.rounds": 3000, "seed": 4})
    req = r.summary["requests"]
    assert not req["stable"] and len(req["warnings"]) == 1 and "device 0" in req["warnings"][0]
    assert "grow without bound at device(s) 0:" in r.summary["warnings"][0]
    check_little(r)


def test_trace_workload(tmp_path):
    trace = tmp_path / "trace.csv"
    trace.write_text("time_s,device,tokens\n0.5,1,12\n0.1,0,30\n3.0,0,7\n3.0,2,9\n40,1,5\n")
    r = run({"devices.count": 3, "workload.arrivals": "trace", "workload.trace_file": str(trace),
             "run.rounds": 10_000})
    t = r.requests
    # the run ends when the trace is replayed and its last request is served
    assert r.summary["rounds"] < 10_000 and r.summary["sim_time_s"] == t["completion_s"].max()
    np.testing.assert_array_equal(t["arrival_s"], [0.1, 0.5, 3.0, 3.0, 40.0])
    np.testing.assert_array_equal(t["device"], [0, 1, 0, 2, 1])
    np.testing.assert_array_equal(t["tokens"], [30, 12, 7, 9, 5])
    assert not np.isnan(t["completion_s"]).any()
    assert r.rounds["start_s"][0] == 0.1
    check_little(r)
    # lengths drawn when the trace has no tokens column
    trace.write_text("time_s,device\n1.0,0\n2.0,0\n")
    r = run({"devices.count": 1, "workload.arrivals": "trace", "workload.trace_file": str(trace),
             "workload.length": "empirical", "workload.length_values": [3, 8],
             "run.max_time_s": 50.0, "run.rounds": 1000})
    assert set(r.requests["tokens"]) <= {3, 8}


def test_length_models():
    rng = np.random.default_rng(5)
    n = 40000
    for model in ("geometric", "lognormal"):
        x = LENGTH_MODELS.lookup(model).draw(rng, n, 50, 0.8, ())
        assert x.min() >= 1
        assert abs(x.mean() - 50) < 5 * x.std() / math.sqrt(n) + 0.6, model  # rounding: +-0.5
    # a mean at the bound: the draws beyond it (a third of the geometric's, P(X > m) ~ 1/e;
    # 16% of this lognormal's, P(Z > sigma / 2)) are cut to it, as a scenario's lengths are
    for model, beyond in (("geometric", math.exp(-1)), ("lognormal", stats.norm.sf(1.0))):
        x = LENGTH_MODELS.lookup(model).draw(rng, 4000, MAX_REQUEST_TOKENS, 2.0, ())
        share = np.mean(x == MAX_REQUEST_TOKENS)
        assert x.max() == MAX_REQUEST_TOKENS and abs(share - beyond) < 5 * math.sqrt(
            beyond * (1 - beyond) / 4000), (model, share)
    x = LENGTH_MODELS.lookup("empirical").draw(rng, n, 64, 1.0, (3, 8, 100))
    assert set(np.unique(x)) == {3, 8, 100}
    assert stats.chisquare(np.bincount(np.searchsorted([3, 8, 100], x))).pvalue > 1e-3
    assert np.all(LENGTH_MODELS.lookup("fixed").draw(rng, 5, 17, 1.0, ()) == 17)
    r = run({"devices.count": 4, "devices.task": "gsm8k", "devices.overrides": {2: {"task": "ifeval"}},
             "workload.arrivals": "poisson", "workload.length": "per-task",
             "workload.length_per_task": {"ifeval": 9}, "workload.length_tokens": 21,
             "run.rounds": 400})
    t = r.requests
    assert set(t["tokens"][t["device"] == 2]) == {9} and set(t["tokens"][t["device"] != 2]) == {21}


def test_arrivals_are_poisson_per_device():
    r = run({"devices.count": 3, "workload.arrivals": "poisson", "workload.rate_per_s": [0.05, 0.1, 0.2],
             "run.rounds": 3000, "seed": 9})
    t = r.requests
    for k, rate in enumerate((0.05, 0.1, 0.2)):
        gaps = np.diff(np.concatenate([[0.0], t["arrival_s"][t["device"] == k]]))
        assert stats.kstest(gaps * rate, "expon").pvalue > 1e-3, k


def test_saturated_default_has_no_request_outputs(tmp_path):
    r = run({"run.rounds": 20}, out=tmp_path / "x")
    assert "requests" not in r.summary and not (tmp_path / "x" / "requests.csv").exists()


def capped_service_moments(alpha, gamma, length, t_draft, t_ver, correction_s):
    """E[S], E[S^2] of one request's service when each round drafts min(gamma, n - 1) for the
    n tokens still needed and a rejection adds a correction of fixed duration (independent code:
    the recursion on n, like ``renewal_moments`` with round times that depend on n)."""
    m1, m2 = [0.0] * (length + 1), [0.0] * (length + 1)
    for n in range(1, length + 1):
        g = min(gamma, n - 1)
        p = [alpha**j * (1 - alpha) for j in range(g)] + [alpha**g]
        for j, pj in enumerate(p):
            d = g * t_draft + t_ver + (correction_s if j < g else 0.0)
            rest = max(n - (j + 1), 0)
            m1[n] += pj * (d + m1[rest])
            m2[n] += pj * (d * d + 2 * d * m1[rest] + m2[rest])
    return m1[length], m2[length]


def test_capped_drafts_with_real_corrections_give_the_recursions_service_moments():
    """One device, no fading (every correction takes the same time), drafts capped to what the
    request still needs (the default): the requests' service times have the recursion's first
    two moments, the server's utilisation is lambda E[S], and Little's law holds."""
    over = {"devices.count": 1, "devices.draft_latency_ms": 5.0,
            "devices.draft_latency_spread": [1, 1], "devices.overrides": {0: {"alpha": ALPHA}},
            "policy.draft_length": GAMMA, "devices.distance_m": 200.0, "channel.fading": "none",
            "workload.arrivals": "poisson", "workload.length_tokens": LENGTH,
            "run.rounds": 10_000_000, "seed": 5}
    probe = run({**over, "workload.rate_per_s": 0.5, "run.max_time_s": 30.0})
    comm = probe.rounds["comm_s"][probe.rounds["n_rejected"] > 0]
    assert np.ptp(comm) < 1e-12
    system = probe.population.system
    t_ver = system.verify_fixed_s + system.verify_per_device_s
    es, es2 = capped_service_moments(ALPHA, GAMMA, LENGTH, 5e-3, t_ver, float(comm[0]))
    result = run({**over, "workload.rate_per_s": 0.5 / es, "run.max_time_s": 8000.0})
    t = result.requests
    done = ~np.isnan(t["completion_s"])
    s = t["completion_s"][done] - t["start_s"][done]   # independent from request to request
    assert abs(s.mean() - es) < 4 * s.std() / math.sqrt(s.size)
    assert abs((s**2).mean() - es2) < 4 * (s**2).std() / math.sqrt(s.size)
    req = result.summary["requests"]
    arrival_rate = req["arrivals"] / result.summary["sim_time_s"]
    # about 2,900 requests: E[S] is known to about 0.6% (one standard error), and the busy time
    # also holds the request in service at the end: 5% is far outside both
    assert req["server_utilisation"] == pytest.approx(arrival_rate * es, rel=0.05)
    check_little(result)
