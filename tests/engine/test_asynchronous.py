"""The asynchronous protocol, SLO metrics and adaptive draft policies against oracles.

- One device: the asynchronous protocol equals the synchronous one event by event (every
  record of rounds.csv, device_rounds.csv and requests.csv identical), a moving one and a
  throttled one too.
- Deterministic times, no rejections, devices of different speeds: `immediate` batches form as
  computed by hand (membership and end times).
- Little's law on the server's draft queue and per device; utilisation = busy time / time;
  the queue's statistics on a sample path worked out by hand.
- M/D/1 (one device, alpha = 1, fixed gamma, one round per request): the mean wait matches
  Pollaczek-Khinchine and the waiting-time CDF matches Erlang's closed form.
- Draft policies: threshold = floor(ln h / ln alpha); backoff reproduces a hand-traced
  sequence; off-under-load never drafts above its threshold; goodput-argmax = brute force.
"""
import math

import numpy as np
import pytest
from scipy import stats

import multispin_sim as ms
from multispin_sim.engine.asynchronous import DraftQueue
from multispin_sim.model.queueing import md1_wait_cdf, pollaczek_khinchine
from multispin_sim.scenario import ScenarioError


def run(overrides, **kw):
    return ms.simulate(ms.load_scenario(None, overrides=overrides), **kw)


def same_tables(a, b, names=("rounds", "device_rounds", "requests")):
    for name in names:
        ta, tb = a.table(name), b.table(name)
        assert list(ta) == list(tb)
        for col in ta:
            if ta[col].dtype.kind == "f":
                assert np.array_equal(ta[col], tb[col], equal_nan=True), (name, col)
            else:
                assert np.array_equal(ta[col], tb[col]), (name, col)


@pytest.mark.parametrize("extra", [
    ["workload.arrivals=poisson", "workload.rate_per_s=0.5", "policy.draft=greedy",
     "policy.saa_samples=50"],
    ["policy.draft=backoff", "policy.mode=random"],
    # the NR link with one fading block per round: corrections decided and sent on one block
    ["policy.draft=greedy", "policy.saa_samples=50", "link.model=mcs"],
    ["server.antennas=4", "link.model=mcs", "devices.distance_m=900", "policy.mode=random"],
    # four server antennas (orthogonal schemes), with and without imperfect CSI
    ["server.antennas=4", "policy.draft=greedy", "policy.saa_samples=50"],
    ["server.antennas=4", "csi.estimation_error_variance=0.2", "channel.doppler_hz=30",
     "csi.delay_ms=2"],
    # fading blocks of 2 ms on the vectors (correlated in time and across the antennas), on
    # orthogonal subbands and on a shared band
    ["server.antennas=4", "server.dl_scheme=mu-mimo-zf", "server.ul_scheme=mu-mimo-mmse",
     "channel.coherence_time_ms=2", "channel.fading=gauss-markov", "channel.doppler_hz=40"],
    ["server.antennas=4", "server.antenna_correlation=0.5", "channel.coherence_time_ms=2",
     "channel.fading=gauss-markov", "channel.doppler_hz=40", "policy.draft=greedy",
     "policy.saa_samples=50"],
    # a shared band (ZF / MMSE), with and without imperfect CSI
    ["server.antennas=4", "server.dl_scheme=mu-mimo-zf", "server.ul_scheme=mu-mimo-mmse",
     "policy.draft=greedy", "policy.saa_samples=50"],
    ["server.antennas=4", "server.dl_scheme=mu-mimo-zf", "server.ul_scheme=mu-mimo-mmse",
     "csi.estimation_error_variance=0.2"],
    # a moving device: its gains and distance at each block's start, its shadowing along its
    # path, the controller pricing with them (at their ergodic rates: its path loss)
    ["mobility.model=random-waypoint", "mobility.speed_mps=30", "channel.shadowing_db=8",
     "policy.draft=greedy", "policy.saa_samples=50", "policy.plan_gains=ergodic"],
    ["mobility.model=random-waypoint", "mobility.speed_mps=30", "channel.fading=jakes",
     "channel.doppler=speed", "workload.arrivals=poisson", "workload.rate_per_s=0.5"],
    # thermal throttling with hysteresis (the device throttled and released within the run),
    # its multiplier priced by the controller, with Poisson requests (cooling while idle)
    ["compute.thermal=true", "compute.time_constant_s=2", "compute.throttle_c=40",
     "compute.release_c=38", "compute.throttle_factor=4", "policy.draft=greedy",
     "policy.saa_samples=50"],
    ["compute.thermal=true", "compute.time_constant_s=2", "compute.throttle_c=40",
     "compute.release_c=38", "compute.throttle_factor=4", "workload.arrivals=poisson",
     "workload.rate_per_s=0.3"],
])
def test_one_device_async_equals_sync_event_by_event(extra):
    base = ["devices.count=1", "run.rounds=150"] + extra
    sync = run(base)
    asyn = run(base + ["serving.protocol=asynchronous"])
    names = ("rounds", "device_rounds") + (("requests",) if "poisson" in str(extra) else ())
    same_tables(sync, asyn, names)
    if "compute.thermal=true" in extra:   # throttled and released
        slow = sync.device_rounds["slowdown"]
        assert np.any(slow > 1) and np.any(slow[np.argmax(slow > 1):] == 1)
    assert asyn.summary["sim_time_s"] == sync.summary["sim_time_s"]
    assert asyn.summary["goodput_tps"] == pytest.approx(sync.summary["goodput_tps"], rel=1e-12)


def deterministic(k_speeds, gamma=2, t0=30.0, t1=10.0, extra=()):
    over = {i: {"alpha": 1.0, "draft_latency_ms": t} for i, t in enumerate(k_speeds)}
    return [f"devices.count={len(k_speeds)}", f"devices.overrides={over}",
            f"policy.draft_length={gamma}", f"server.verify_fixed_ms={t0}",
            f"server.verify_per_device_ms={t1}", "channel.fading=none",
            "serving.protocol=asynchronous", *extra]


def test_immediate_batches_form_as_computed_by_hand():
    # drafts of 2 tokens: devices 0, 1 take 20 ms, device 2 60 ms; T_ver = 30 + 10 b ms.
    # t=20: batch {0,1} (50 ms) ends 70; device 2's draft arrived at 60: batch {2} 70-110;
    # devices 0,1 drafted again 70-90, wait: batch {0,1} 110-160; device 2 drafts 110-170:
    # batch {2} 170-210; devices 0,1 draft 160-180: batch {0,1} 210-260; then period 100 ms.
    r = run(deterministic([10.0, 10.0, 30.0], extra=["run.rounds=12"]))
    rounds = r.rounds
    end = rounds["start_s"] + rounds["duration_s"]
    order = np.argsort(rounds["round"])
    sizes = rounds["batch_size"][order]
    ends = end[order]
    assert sizes.tolist() == [2, 1] * 6
    hand = [0.07, 0.11, 0.16, 0.21] + [0.16 + 0.1 * j + d for j in range(1, 5) for d in (0.0, 0.05)]
    assert ends == pytest.approx(hand, abs=1e-12)
    dev = r.device_rounds
    members = [sorted(dev["device"][dev["round"] == i].tolist()) for i in range(12)]
    assert members == [[0, 1], [2]] * 6
    assert np.all(rounds["verify_s"][order] == pytest.approx(np.where(sizes == 2, 0.05, 0.04)))
    assert r.summary["asynchronous"]["mean_batch_size"] == pytest.approx(1.5)


def test_in_phase_devices_batch_together_and_window_waits():
    # equal speeds: every batch holds all K drafts; a window of 7 ms delays each batch by 7 ms
    k = 4
    r = run(deterministic([10.0] * k, extra=["run.rounds=5"]))
    assert r.rounds["batch_size"].tolist() == [k] * 5
    cycle = 0.02 + 0.03 + 0.01 * k
    assert r.summary["sim_time_s"] == pytest.approx(5 * cycle, abs=1e-12)
    w = run(deterministic([10.0] * k, extra=["run.rounds=5", "serving.batching=window",
                                                "serving.window_ms=7"]))
    assert w.summary["sim_time_s"] == pytest.approx(5 * (cycle + 0.007), abs=1e-12)
    # window closed early by max_batch: no waiting
    m = run(deterministic([10.0] * k, extra=["run.rounds=5", "serving.batching=window",
                                                "serving.window_ms=7", f"serving.max_batch={k}"]))
    assert m.summary["sim_time_s"] == pytest.approx(5 * cycle, abs=1e-12)
    # max-batch 2: two batches of 2 per cycle, the second waits for the first
    b = run(deterministic([10.0] * k, extra=["run.rounds=6", "serving.batching=max-batch",
                                                "serving.max_batch=2"]))
    assert b.rounds["batch_size"].tolist() == [2] * 6


def queueing(rate, k=3, protocol="asynchronous", extra=()):
    return [f"devices.count={k}", "workload.arrivals=poisson", f"workload.rate_per_s={rate}",
            "workload.length_tokens=20", "run.rounds=100000", "run.max_time_s=200",
            f"serving.protocol={protocol}", *extra]


class _Sent:
    def __init__(self, sent):
        self.sent = sent


def test_draft_queue_sample_path_by_hand():
    # drafts sent at 0, 1 and 3; one taken at 2, two at 4; one more sent at 4.5, still waiting
    # at 6: the length is 1 on [0, 1), 2 on [1, 2), 1 on [2, 3), 2 on [3, 4), 0, then 1 from 4.5
    q = DraftQueue()
    q.put(_Sent(0.0), 0.0)
    q.put(_Sent(1.0), 1.0)
    assert [d.sent for d in q.take(1, 2.0)] == [0.0]
    q.put(_Sent(3.0), 3.0)
    assert q.oldest_sent() == 1.0
    assert [d.sent for d in q.take(2, 4.0)] == [1.0, 3.0]
    q.put(_Sent(4.5), 4.5)
    area, total = q.totals(6.0)
    assert (q.sent, q.taken, len(q)) == (4, 3, 1)
    assert area == pytest.approx(1 + 2 + 1 + 2 + 0 + 1.5, rel=1e-15)
    # waits 2, 3, 1 of the drafts taken, 1.5 so far of the one waiting: Little's law on the
    # path (time-average length x time = total wait) holds exactly
    assert total == pytest.approx(2 + 3 + 1 + 1.5, rel=1e-15)
    assert total == pytest.approx(area, rel=1e-15)


def test_little_law_on_server_queue_and_per_device_and_utilisation():
    r = run(queueing(0.6))
    s = r.summary
    a = s["asynchronous"]
    # server queue: time-average drafts waiting = draft arrival rate x mean wait (sample path)
    assert a["server_queue_mean"] == pytest.approx(a["draft_rate_per_s"] * a["draft_wait_mean_s"],
                                                   rel=1e-9)
    assert a["server_queue_mean"] > 0
    # utilisation = time verifying / time, from rounds.csv (every batch verified is recorded)
    rounds = r.rounds
    assert a["server_busy_s"] == pytest.approx(rounds["verify_s"].sum(), rel=1e-12)
    assert s["requests"]["server_utilisation"] == pytest.approx(
        rounds["verify_s"].sum() / s["sim_time_s"], rel=1e-12)
    # per device: mean number in system = arrival rate x mean time in system (requests.csv)
    t = r.requests
    end = s["sim_time_s"]
    sojourn = np.where(np.isnan(t["completion_s"]), end, t["completion_s"]) - t["arrival_s"]
    per_dev = s["requests"]["queue_length_mean_per_device"]
    for k in range(3):
        sel = t["device"] == k
        assert per_dev[k] == pytest.approx(sel.sum() / end * sojourn[sel].mean(), rel=1e-9)
    little = s["requests"]["little"]
    assert little["in_system_mean"] == pytest.approx(little["arrival_rate_x_mean_time_in_system"],
                                                     rel=1e-9)


MD1 = dict(gamma=4, t_ms=5.0, t0=22.4, t1=7.6)  # D = 4 x 5 + 30 = 50 ms
D = 0.05


def md1(rate, seed, time_s=300.0, extra=()):
    over = {0: {"alpha": 1.0, "draft_latency_ms": MD1["t_ms"]}}
    return run(["devices.count=1", f"devices.overrides={over}", f"policy.draft_length={MD1['gamma']}",
                f"server.verify_fixed_ms={MD1['t0']}", f"server.verify_per_device_ms={MD1['t1']}",
                "channel.fading=none", "workload.arrivals=poisson", f"workload.rate_per_s={rate}",
                f"workload.length_tokens={MD1['gamma'] + 1}", "run.rounds=10000000",
                f"run.max_time_s={time_s}", "serving.protocol=asynchronous", f"seed={seed}",
                *extra])


def test_md1_mean_wait_and_wait_distribution():
    rate = 12.0  # rho = 0.6
    waits = []
    for seed in range(6):
        t = md1(rate, seed, time_s=120.0).requests
        sel = (t["arrival_s"] > 20) & ~np.isnan(t["start_s"])
        waits.append(t["start_s"][sel] - t["arrival_s"][sel])
        # every request is one round of exactly D
        done = ~np.isnan(t["completion_s"])
        assert t["completion_s"][done] - t["start_s"][done] == pytest.approx(D, abs=1e-12)
    means = np.array([w.mean() for w in waits])
    half = stats.t.ppf(0.995, means.size - 1) * means.std(ddof=1) / math.sqrt(means.size)
    wq, _ = pollaczek_khinchine(rate, D, D * D)  # 0.0375 s
    assert abs(means.mean() - wq) < half
    wq_off, _ = pollaczek_khinchine(rate * 1.15, D, D * D)
    assert abs(means.mean() - wq_off) > half  # the test has the power to see a 15% rate error
    # Erlang's closed-form waiting-time CDF at a few points, binomial 99.9% bounds
    allw = np.concatenate(waits)
    n = allw.size
    for x in (0.0, 0.03, 0.08, 0.15):
        p = md1_wait_cdf(x, rate, D)
        # correlated samples: inflate the binomial s.e. by an effective-size factor of 10
        assert abs((allw <= x).mean() - p) < 3.3 * math.sqrt(10 * p * (1 - p) / n) + 1e-9


def test_slo_metrics_from_requests_csv():
    r = run(queueing(0.5, extra=["serving.slo_ttft_s=0.5", "serving.slo_tpot_s=0.03"]))
    t = r.requests
    slo = r.summary["requests"]["slo"]
    done = ~np.isnan(t["completion_s"])
    ttft = (t["first_token_s"] - t["arrival_s"])[done]
    tpot = ((t["completion_s"] - t["first_token_s"]) / (t["tokens"] - 1))[done]
    e2e = (t["completion_s"] - t["arrival_s"])[done]
    for name, v in (("ttft_s", ttft), ("tpot_s", tpot), ("e2e_s", e2e)):
        assert slo[name]["p50"] == pytest.approx(np.quantile(v, 0.5))
        assert slo[name]["p99"] == pytest.approx(np.quantile(v, 0.99))
    met = (ttft <= 0.5) & (tpot <= 0.03)
    end = r.summary["sim_time_s"]
    late = (~done) & (np.where(np.isnan(t["first_token_s"]), end, t["first_token_s"])
                      - t["arrival_s"] > 0.5)
    assert slo["attainment"] == pytest.approx(met.sum() / (done.sum() + late.sum()))
    assert slo["goodput_rps"] == pytest.approx(met.sum() / end)
    assert 0 < slo["attainment"] < 1


# ------------------------------------------------------------------------ draft policies

def test_threshold_policy_is_the_specdec_stopping_rule():
    from multispin_sim.policies import DraftContext, make_draft_controller
    from multispin_sim.model.system import System

    alpha = np.array([0.5, 0.8, 0.93, 0.99, 1.0])
    system = System(alpha, np.full(5, 0.01), np.ones(5), np.ones(5), 1.0, 1.0, 1.0, 1.0, 0.03, 0.01)
    for h in (0.3, 0.5, 0.7):
        class A:
            threshold = h
        c = make_draft_controller("threshold", adaptive=A(), max_draft=20)
        got = c.lengths(DraftContext(0, system, np.ones(5), np.ones(5), np.ones(5, bool)))
        want = [min(math.floor(math.log(h) / math.log(a)), 20) if a < 1 else 20 for a in alpha]
        assert got.tolist() == want


def test_backoff_reproduces_a_hand_traced_sequence():
    from multispin_sim.policies import DraftContext, make_draft_controller
    from multispin_sim.model.system import System

    system = System(np.array([0.8]), np.array([0.01]), np.ones(1), np.ones(1), 1.0, 1.0, 1.0,
                    1.0, 0.03, 0.01)
    ctx = DraftContext(0, system, np.ones(1), np.ones(1), np.ones(1, bool))
    c = make_draft_controller("backoff", max_draft=10)  # HF: start 5, +2 / -1, min 1
    # outcomes (accepted) fed back; hand trace of gamma:
    # 5 -full-> 7 -full-> 9 -full-> 10 (cap) -rej(3)-> 9 -rej(0)-> 8 -full-> 10 -rej-> 9
    accepted = [5, 7, 9, 3, 0, 8, 1]
    trace = []
    for a in accepted:
        g = int(c.lengths(ctx)[0])
        trace.append(g)
        c.observe(np.array([g]), np.array([a]), np.ones(1, bool))
    trace.append(int(c.lengths(ctx)[0]))
    assert trace == [5, 7, 9, 10, 9, 8, 10, 9]
    # down to the floor: 1 stays 1
    for _ in range(12):
        c.observe(np.array([int(c.lengths(ctx)[0])]), np.array([0]), np.ones(1, bool))
    assert int(c.lengths(ctx)[0]) == 1
    # in the engine with alpha = 1 every draft is fully accepted: 5, 7, 9, ..., capped
    r = run(["devices.count=1", "devices.overrides={0: {alpha: 1.0}}", "policy.draft=backoff",
             "policy.max_draft=12", "run.rounds=6"])
    assert r.device_rounds["draft_len"].tolist() == [5, 7, 9, 11, 12, 12]


def test_off_under_load_never_drafts_above_its_threshold_sync():
    # synchronous: the load is the round's batch (devices with work)
    extra = ["policy.draft=off-under-load", "adaptive.load_threshold=2", "workload.length_tokens=40"]
    r = run(queueing(0.4, k=6, protocol="synchronous", extra=extra) + ["run.max_time_s=60"])
    dev, rounds = r.device_rounds, r.rounds
    size = dict(zip(rounds["round"].tolist(), rounds["batch_size"].tolist()))
    load = np.array([size[i] for i in dev["round"].tolist()])
    assert np.any(load > 2) and np.all(dev["draft_len"][load > 2] == 0)
    assert np.any(dev["draft_len"][load <= 2] > 0)


def test_off_under_load_async_load_log():
    from multispin_sim.engine import asynchronous

    seen = []
    original = asynchronous.AsyncLoop.__init__

    def init(self, *a, **kw):
        original(self, *a, **kw)
        self.load_log = seen

    asynchronous.AsyncLoop.__init__ = init
    try:
        run(queueing(0.4, k=6, extra=["policy.draft=off-under-load", "adaptive.load_threshold=2",
                                      "workload.length_tokens=40", "run.max_time_s=60"]))
    finally:
        asynchronous.AsyncLoop.__init__ = original
    log = np.array(seen)
    assert log.size and np.any(log[:, 1] > 2) and np.any(log[:, 1] <= 2)
    assert np.all(log[log[:, 1] > 2, 2] == 0)
    assert np.any(log[log[:, 1] <= 2, 2] > 0)


def test_goodput_argmax_equals_brute_force():
    from multispin_sim.policies import DraftContext, make_draft_controller
    from multispin_sim.model.system import System

    alpha = np.array([0.6, 0.8, 0.9, 0.95])
    t = np.array([0.015, 0.02, 0.01, 0.03])
    system = System(alpha, t, np.ones(4), np.ones(4), 1.0, 1.0, 1.0, 1.0, 0.0428, 0.0076)
    ctx = DraftContext(0, system, np.ones(4), np.ones(4), np.ones(4, bool))  # no reactive: c = 0
    got = make_draft_controller("goodput-argmax", max_draft=20).lengths(ctx)
    for k in range(4):
        rates = [sum(alpha[k] ** j for j in range(g + 1)) / (g * t[k] + 0.0428 + 4 * 0.0076)
                 for g in range(21)]
        assert got[k] == int(np.argmax(rates))


# ------------------------------------------------------------------------------ bad input

@pytest.mark.parametrize("setting, key", [
    ("serving.window_ms=-1", "serving.window_ms"),
    ("serving.max_batch=0", "serving.max_batch"),
    ("serving.protocol=lockstep", "serving.protocol"),
    ("serving.slo_ttft_s=0", "serving.slo_ttft_s"),
])
def test_bad_serving_keys(setting, key):
    with pytest.raises(ScenarioError, match=key.replace(".", r"\.")):
        ms.load_scenario(None, overrides=[setting])


# ------------------------------------------------------------------------------ capacity

def md1_scenario_file(tmp_path):
    import yaml

    sc = {"devices": {"count": 1, "overrides": {0: {"alpha": 1.0, "draft_latency_ms": 5.0}}},
          "policy": {"draft_length": 4},
          "server": {"verify_fixed_ms": 22.4, "verify_per_device_ms": 7.6},
          "channel": {"fading": "none"},
          "workload": {"arrivals": "poisson", "rate_per_s": 5.0, "length_tokens": 5},
          "serving": {"protocol": "asynchronous"}}
    path = tmp_path / "md1.yaml"
    path.write_text(yaml.safe_dump(sc), encoding="utf-8")
    return path


def test_capacity_interval_contains_the_md1_closed_form(tmp_path):
    from scipy.optimize import brentq

    from multispin_sim.experiments.capacity import CapacitySearch, write_capacity

    # TTFT = W_q + D; SLO TTFT <= 0.1 s in 90% of requests: P(W_q <= 0.05) = 0.9 (Erlang)
    truth = brentq(lambda lam: md1_wait_cdf(0.1 - D, lam, D) - 0.9, 0.1, 19.9)  # 7.83/s
    search = CapacitySearch(md1_scenario_file(tmp_path), 0.1, None, 0.9, duration_s=50,
                            reps_min=3, reps_max=6, rel_tol=0.1)
    res = search.run()
    lo, hi = res["interval"]
    assert lo <= truth <= hi
    assert hi / lo < 2.5  # the search narrowed the bracket
    curve, meta = write_capacity(tmp_path / "out", search)
    from multispin_sim.outputs.records import read_table

    table = read_table(curve)
    assert table["rate_per_s"].size == len(search.points)
    assert np.all(table["ci95_lo"] <= table["attainment_mean"])


class _Done:
    def __init__(self, returncode, stderr):
        self.returncode, self.stderr = returncode, stderr


@pytest.fixture
def cli(capsys):
    """The CLI in-process (``main``): exit status and stderr."""
    from multispin_sim.cli import main

    def call(*args):
        capsys.readouterr()
        code = main(list(args))
        return _Done(code, capsys.readouterr().err)
    return call


@pytest.mark.parametrize("args", [
    ["--slo", "ttft=abc"], ["--slo", "ttft=0.1,ttft=0.2"], ["--slo", "latency=1"],
    ["--slo", "ttft=-1"], ["--slo", "ttft=0.1", "--target", "1.5"],
])
def test_capacity_bad_input_one_line_exit_2_nothing_written(tmp_path, args, cli):
    out = tmp_path / "cap"
    p = cli("capacity", str(md1_scenario_file(tmp_path)), *args, "--out", str(out))
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1 and p.stderr.startswith("error: ")
    assert not out.exists()


def test_capacity_on_a_saturated_workload_is_refused(tmp_path, cli):
    out = tmp_path / "cap"
    p = cli("capacity", "--slo", "ttft=1", "--out", str(out))
    assert p.returncode == 2 and "workload.arrivals" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("setting", ["serving.window_ms=-1", "serving.max_batch=0"])
def test_bad_batching_keys_exit_2_nothing_written(tmp_path, setting, cli):
    out = tmp_path / "run"
    p = cli("run", "--set", setting, "--set", "serving.protocol=asynchronous", "--out", str(out))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_pre_drafting_hides_drafting_behind_verification_and_counts_waste():
    # alpha = 1: every draft fully accepted; a 20 ms draft pre-drafted during a 40 ms pass is
    # ready when the pass ends: cycles of 40 ms after the first 20 ms draft
    r = run(deterministic([10.0], extra=["run.rounds=10", "serving.pre_draft=true"]))
    assert r.summary["sim_time_s"] == pytest.approx(0.02 + 10 * 0.04, abs=1e-12)
    assert r.summary["asynchronous"]["wasted_drafts"] == 0
    # with rejections, every rejected draft discards the pre-draft made meanwhile
    r = run(["devices.count=1", "run.rounds=200", "serving.protocol=asynchronous",
             "serving.pre_draft=true"])
    a = r.summary["asynchronous"]
    assert a["wasted_drafts"] == r.summary["rejections"] > 0
    assert 0 < a["wasted_draft_tokens"] <= 4 * a["wasted_drafts"]


def test_async_trace_replayed_to_its_end_stops(tmp_path):
    trace = tmp_path / "trace.csv"
    trace.write_text("time_s,device\n0.1,0\n0.2,1\n0.25,0\n1.0,2\n", encoding="utf-8")
    r = run(["workload.arrivals=trace", f"workload.trace_file={trace}", "devices.count=3",
             "channel.fading=none", "serving.protocol=asynchronous"])
    assert r.summary["requests"]["completed"] == 4
    t = r.requests
    assert r.summary["sim_time_s"] == pytest.approx(np.nanmax(t["completion_s"]))


def test_in_phase_batches_with_deterministic_corrections():
    # alpha ~ 0: every draft is rejected at its first token, a deterministic correction follows
    # (no fading, all-UL at full power, both devices at 200 m): each batch's two corrections
    # share the band (B / 2 each), so a cycle is 2 t + (T0 + 2 T1) + d(B / 2), by hand:
    over = {i: {"alpha": 1e-12, "draft_latency_ms": 10.0, "distance_m": 200.0} for i in range(2)}
    r = run(["devices.count=2", f"devices.overrides={over}", "policy.draft_length=2",
             "server.verify_fixed_ms=30", "server.verify_per_device_ms=10",
             "channel.fading=none", "policy.mode=all-ul", "serving.protocol=asynchronous",
             "run.rounds=6"])
    bits = 1024 * (18 + 16)
    b = 10e6 / 2
    gain = 10 ** (-3.0) * 200.0 ** -3.5
    n0 = 10 ** (-17.4) * 1e-3
    d = bits / (b * math.log2(1 + 0.01 * gain / (n0 * b)))
    cycle = 0.02 + 0.05 + d
    rounds = r.rounds
    assert rounds["batch_size"].tolist() == [2] * 6 and rounds["n_ul"].tolist() == [2] * 6
    assert rounds["comm_s"] == pytest.approx(np.full(6, d), rel=1e-9)
    assert r.summary["sim_time_s"] == pytest.approx(6 * cycle, rel=1e-12)
    assert r.device_rounds["tokens"].tolist() == [1] * 12


def test_serving_scenario_and_sweep_files_load():
    from pathlib import Path

    from multispin_sim.experiments import load_sweep

    root = Path(__file__).resolve().parents[2] / "scenarios" / "serving"
    base = ms.load_scenario(root / "base.yaml")
    assert base.workload.arrivals == "poisson" and base.serving.slo_ttft_s == 2.0
    sweep = load_sweep(root / "slo_load.yaml")
    assert len(sweep.cells) == 3 * 10 * 2 * 3


def test_overlapping_batches_keep_their_own_harq_records():
    """On the NR link a batch can end while an earlier batch's corrections are still being
    sent: each batch takes only its own devices' HARQ counts, so device_rounds.csv adds up to
    the summary's link block and every correction row has at least one transmission."""
    r = ms.simulate(ms.load_scenario(None, overrides={
        "serving.protocol": "asynchronous", "run.rounds": 300, "serving.batching": "max-batch",
        "serving.max_batch": 3, "link.model": "mcs", "payload.model": "token",
        "link.harq_max_transmissions": 4, "channel.coherence_time_ms": 5}))
    d, link = r.device_rounds, r.summary["link"]
    assert int(d["harq_transmissions"].sum()) == link["harq_transmissions"]
    assert int(d["outages"].sum()) == link["outages"]
    assert (d["harq_transmissions"][d["mode"] != ""] >= 1).all()


def test_pre_drafting_is_charged_at_the_drafting_power():
    """Pre-drafting is drafting: with every draft fully accepted, each batch row charges its
    draft's whole gamma t_k (20 ms) at the drafting power, though most of it was pre-drafted
    during the previous pass; with rejections, the discarded pre-drafts' time is charged too
    (between the whole tokens counted as wasted and one more token per discarded pre-draft)."""
    r = run(deterministic([10.0], extra=["run.rounds=10", "serving.pre_draft=true"]))
    p = r.devices["draft_power_w"][0]
    d = r.device_rounds
    np.testing.assert_allclose(d["energy_draft_j"], p * 0.02, rtol=1e-12)
    assert (d["energy_draft_j"][1:] > p * r.rounds["draft_s"][1:] + 1e-9).all()   # pre-drafted
    r = run(["devices.count=1", "run.rounds=200", "serving.protocol=asynchronous",
             "serving.pre_draft=true"])
    d, a = r.device_rounds, r.summary["asynchronous"]
    t_k = r.devices["draft_latency_s"][0]
    extra = d["energy_draft_j"].sum() / r.devices["draft_power_w"][0] - (d["draft_len"] * t_k).sum()
    assert a["wasted_draft_tokens"] * t_k - 1e-9 <= extra
    assert extra <= (a["wasted_draft_tokens"] + a["wasted_drafts"]) * t_k + 1e-9
    assert extra > 0


def test_a_phase_decides_and_sends_its_corrections_on_one_fading_block():
    """The block drawn at a batch's end is the one the next correction phase decides on and
    sends on (it starts at that instant): on the NR link with exact CSI, the continuous table
    and a vanishing BLER, every correction's realised delay is its planned one, as in the
    synchronous protocol (a phase decided on the old block and sent on the new one differs)."""
    sc = ms.load_scenario(None, overrides={
        "serving.protocol": "asynchronous", "link.model": "mcs", "link.cqi_table": "continuous",
        "link.bler_target": 1e-6, "devices.count": 8, "run.rounds": 300, "seed": 3})
    rows = ms.simulate(sc).device_rounds
    sent = rows["mode"] != ""
    assert sent.sum() > 200
    np.testing.assert_allclose(rows["delay_s"][sent], rows["planned_delay_s"][sent], rtol=1e-12)


@pytest.mark.parametrize("csi", [[], ["csi.estimation_error_variance=0.1"]])
def test_shared_band_streams_are_recorded_with_their_own_batch(csi, shared_band_streams):
    """A shared band (ZF / MMSE, two antennas), twelve devices: each batch's correction phase is
    a set of streams on the pooled band. Every stream carries the payload at
    b |set| log2(1 + SINR) for its time on air (the set: its batch's streams on its link); a
    UL stream is on air from the phase's start, a DL stream from the end of its batch's
    previous ZF group; energy is power x airtime."""
    r = run(["serving.protocol=asynchronous", "server.antennas=2", "devices.count=12",
             "server.dl_scheme=mu-mimo-zf", "server.ul_scheme=mu-mimo-mmse", "run.rounds=300",
             "seed=5"] + csi)
    groups = "planned_delay_s" if csi else "delay_s"
    assert shared_band_streams(r.device_rounds, r.population.system.payload_bits, groups) > 5
    assert r.rounds["batch_size"].max() > 4


def test_array_streams_are_recorded_with_their_own_batch():
    """Four server antennas, eight devices, batches verified while others correct: each batch
    records its own streams, each with the array gain its decision saw (one fading block from a
    phase's decision to its last correction), on air for its delay; the others record none."""
    r = run(["serving.protocol=asynchronous", "server.antennas=4", "devices.count=8",
             "run.rounds=300", "seed=5"])
    d = r.device_rounds
    sent = np.asarray(d["mode"]).astype(str) != ""
    mode = np.asarray(d["mode"]).astype(str)[sent]
    assert sent.sum() > 200 and set(mode) == {"ul", "dl"}
    seen = np.where(mode == "ul", d["gain_ul"][sent], d["gain_dl"][sent])
    assert np.array_equal(d["gain_eff"][sent], seen)
    assert np.array_equal(d["airtime_s"][sent], d["delay_s"][sent])
    assert np.all(d["gain_eff"][~sent] == 0) and np.all(d["airtime_s"][~sent] == 0)
    np.testing.assert_allclose(d["tx_energy_j"], d["power_w"] * d["airtime_s"], rtol=1e-12)
    assert r.rounds["batch_size"].max() > 1


def test_throttled_devices_draft_slower_at_the_same_energy_per_token():
    """Several devices under thermal throttling: a device's multiplier is 1 or the factor,
    fixed at its draft's start (both occur), a throttled device drafts factor times slower at
    its power over the factor (the same energy per drafted token), and every temperature lies
    between the ambient and a device drafting without end."""
    r = run(["devices.count=4", "run.rounds=400", "serving.protocol=asynchronous",
             "compute.thermal=true", "compute.time_constant_s=2", "compute.throttle_c=40",
             "compute.release_c=38", "compute.throttle_factor=4"])
    d, dev = r.device_rounds, r.devices
    assert set(np.unique(d["slowdown"]).tolist()) == {1.0, 4.0}
    p, t_k = dev["draft_power_w"][d["device"]], dev["draft_latency_s"][d["device"]]
    np.testing.assert_allclose(d["energy_draft_j"], p * d["draft_len"] * t_k, rtol=1e-12)
    c = r.scenario.compute
    hottest = c.ambient_c + p * c.thermal_resistance_c_per_w
    assert np.all((c.ambient_c <= d["temperature_c"]) & (d["temperature_c"] <= hottest))


@pytest.mark.parametrize("extra", [[], ["serving.pre_draft=true"],
                                   ["serving.batching=max-batch", "serving.max_batch=3"]])
def test_a_devices_rows_account_for_its_time_once(extra):
    """Saturated devices are always in a draft-verify-correct cycle, so the time a device's
    rows account for (idle, drafting, its correction) adds up to the run's time, less its last
    cycle, which no batch ended: each row covers its device's own cycle (a row spanning the
    batch from its earliest draft counted up to 1.5 times the run's time)."""
    r = run(["devices.count=6", "devices.draft_latency_spread=[1,4]", "run.rounds=600",
             "serving.protocol=asynchronous", "seed=3", *extra])
    d, dev = r.device_rounds, r.devices
    k = d["device"]
    drafting = d["energy_draft_j"] * d["slowdown"] / dev["draft_power_w"][k]
    delay = np.where(d["mode"] != "", d["delay_s"], 0.0)
    idle_w = r.scenario.energy.idle_power_w
    accounted = np.bincount(k, weights=d["energy_idle_j"] / idle_w + drafting + delay)
    time = r.summary["sim_time_s"]
    longest = r.rounds["duration_s"].max()   # a cycle is at most a batch's span
    assert np.all(accounted <= time * (1 + 1e-12)), accounted / time
    assert np.all(accounted >= time - longest), (accounted / time, longest)
