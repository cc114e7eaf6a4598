"""The goodput interval of a run, recomputed from rounds.csv by the procedure the outputs page
describes (consecutive batches of rounds, merged pairwise at 20 so that 10 to 19 closed ones
remain, the batch still filling counted as one more, idle time counted with the next round, the
delta-method interval of a ratio of sums with Student's t), written here without the package's
statistics code."""
import numpy as np
import pytest
from scipy import stats

import multispin_sim as ms


def documented_interval(tokens, times):
    batches, size, cur_x, cur_y, filled = [], 1, 0.0, 0.0, 0
    for x, y in zip(tokens, times):
        cur_x, cur_y, filled = cur_x + x, cur_y + y, filled + 1
        if filled == size:
            batches.append((cur_x, cur_y))
            cur_x, cur_y, filled = 0.0, 0.0, 0
            if len(batches) == 20:
                batches = [(a[0] + b[0], a[1] + b[1]) for a, b in zip(batches[::2], batches[1::2])]
                size *= 2
    if cur_y > 0:
        batches.append((cur_x, cur_y))
    x, y = np.array(batches).T
    r = x.sum() / y.sum()
    half = stats.t.ppf(0.975, x.size - 1) * np.sqrt(np.var(x - r * y, ddof=1) / x.size) / y.mean()
    return x.size, (r - half, r + half)


@pytest.mark.parametrize("overrides", [
    {"run.rounds": 1000},
    {"run.rounds": 37},
    {"workload.arrivals": "poisson", "workload.rate_per_s": 0.05, "run.max_time_s": 200.0,
     "run.rounds": 10**6},
])
def test_the_goodput_interval_is_the_documented_batch_means_interval(overrides):
    res = ms.simulate(ms.load_scenario(None, overrides={"devices.count": 6, "seed": 3,
                                                        **overrides}))
    r, s = res.rounds, res.summary
    # each round's time with the idle period before it (queueing: the server waits for work)
    ends = r["start_s"] + r["duration_s"]
    idle = r["start_s"] - np.concatenate([[0.0], ends[:-1]])
    n, (lo, hi) = documented_interval(r["tokens"], r["duration_s"] + idle)
    assert s["goodput_ci_batches"] == n and (10 <= n <= 20 or n == len(r["round"]) < 20)
    np.testing.assert_allclose(s["goodput_ci95"], [lo, hi], rtol=1e-9)
    # centred on the run's goodput: the interval is that of the whole run's ratio
    assert 0.5 * (lo + hi) == pytest.approx(s["goodput_tps"], rel=1e-12)


def test_short_runs_of_correlated_rounds_keep_most_of_the_coverage():
    """Markov acceptance correlates a device's rounds over about 4 rounds: batches of 4 rounds
    (32 to 63 batches in 200 rounds) covered the true goodput in 82% of runs; batches of 10 to
    19 rounds cover about 90%. 200 runs of 200 rounds at one fixed placement; the truth,
    102.85 +- 0.11 tokens/s, is the mean of 5 runs of 40,000 rounds. The bound 0.86 is 2 binomial
    standard errors (0.021 each) below 0.905 and 1.5 above the 0.82 of the shorter batches."""
    tasks = ["humaneval", "gsm8k", "ifeval", "mt-bench"]
    base = {"devices.count": 8, "acceptance.model": "markov", "channel.coherence_time_ms": 5,
            "run.rounds": 200,
            "devices.overrides": {i: {"task": tasks[i % 4], "distance_m": 100.0 + 50.0 * (i + 0.5),
                                      "draft_latency_ms": 15.2 * (1.0 + 0.15 * (i + 0.5) / 8)}
                                  for i in range(8)}}
    covered = 0
    for seed in range(1000, 1200):
        lo, hi = ms.simulate(ms.load_scenario(None, overrides={**base, "seed": seed})).summary[
            "goodput_ci95"]
        covered += lo <= 102.85 <= hi
    assert covered / 200 >= 0.86


def test_a_figure_of_no_values_is_null_not_zero(tmp_path):
    """A queueing run in which no request arrives has no round and no completed request: its
    round-time and latency figures have no value (null in summary.json), not 0 s, which a
    sweep's mean over replications would average as a real latency."""
    import json

    res = ms.simulate(ms.load_scenario(None, overrides={
        "workload.arrivals": "poisson", "workload.rate_per_s": 1e-6, "run.max_time_s": 5.0,
        "devices.count": 2}), out=tmp_path / "run")
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert s["rounds"] == 0 and s["requests"]["completed"] == 0
    for block in (s["duration_s"], s["comm_s"], s["requests"]["latency_s"],
                  s["requests"]["time_to_first_token_s"], s["requests"]["wait_s"]):
        assert all(block[q] is None for q in ("mean", "median", "p95", "max")), block
    assert res.summary["requests"]["latency_s"]["mean"] != 0.0


def test_a_long_last_round_moves_the_interval_with_the_goodput():
    """64 rounds of 1 s and 10 tokens, then a batch still filling whose one round lasts 40 s:
    the goodput falls to 640 / 104 and the interval, which counts that round too, holds it."""
    from multispin_sim.outputs.statistics import RunStatistics

    st = RunStatistics(1)
    one = np.ones(1, dtype=np.int64)
    for i in range(65):
        tokens = 10 + (i % 3)          # some spread between batches
        st.add_round(40.0 if i == 64 else 1.0, 0.0, one * tokens, tokens, one, np.ones(1, bool),
                     1, 0, 0, 0)
    s = st.summary()
    lo, hi = s["goodput_ci95"]
    assert lo <= s["goodput_tps"] <= hi and s["goodput_tps"] < 7.0
    assert s["goodput_ci_batches"] == 17   # 16 closed batches of 4 rounds and the last
