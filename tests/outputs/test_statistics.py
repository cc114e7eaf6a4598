"""The goodput interval of a run, recomputed from rounds.csv by the procedure the outputs page
describes (consecutive batches of rounds, merged pairwise at 20 so that 10 to 19 remain, the
batch still filling left out, idle time counted with the next round, the delta-method interval
of a ratio of sums with Student's t), written here without the package's statistics code."""
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
    assert s["goodput_ci_batches"] == n and (10 <= n <= 19 or n == len(r["round"]) < 20)
    np.testing.assert_allclose(s["goodput_ci95"], [lo, hi], rtol=1e-9)
