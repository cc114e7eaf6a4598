"""Straggler-aware reactive policies (issue 12): 'deadline' and 'robust'."""
import numpy as np
import pytest

from multispin_sim.engine import simulate
from multispin_sim.model import reactive as solver
from multispin_sim.model.reactive import DL, UL, ReactiveProblem
from multispin_sim.policies import make_reactive_policy
from multispin_sim.policies.straggler import DeadlineSplit, RobustSplit

N0 = 1e-3 * 10 ** (-17.4)
S = 34816.0


def _problem(rng, k=10, m=1):
    g = 1e-3 * rng.uniform(100, 500, k) ** -3.5 * rng.standard_exponential((m, k))
    rej = rng.random((m, k)) < 0.6
    rej[:, 0] = True
    return ReactiveProblem(rej, g, g, 0.01, 0.04, S, 10e6, N0)


@pytest.mark.parametrize("seed", range(5))
def test_deadline_defers_exactly_the_slow_ones_and_the_rest_meet_it(seed):
    rng = np.random.default_rng(seed)
    p = _problem(rng, m=20)
    opt = solver.optimal_split(p)
    for policy in (DeadlineSplit(deadline_ms=30.0), DeadlineSplit(median_multiple=1.5)):
        d = policy.decide(p)
        limit = policy.deadline(opt, p.rejected)[:, None]
        assert np.array_equal(d.deferred, p.rejected & (opt.delay_s > limit))
        sent = (d.mode == UL) | (d.mode == DL)
        assert np.array_equal(sent | d.deferred, p.rejected) and not (sent & d.deferred).any()
        # fewer devices share the band: every remaining correction is no slower than planned
        assert np.all(d.delay_s[sent] <= np.broadcast_to(limit, sent.shape)[sent] * (1 + 1e-12))


def test_deadline_never_loses_a_token():
    r = simulate({"run": {"rounds": 300}, "devices": {"count": 10}, "seed": 2,
                  "policy": {"mode": "deadline"}, "straggler": {"deadline_median_multiple": 1.2}})
    d = r.device_rounds
    carried = (d["rejected"] == 0) & (d["mode"] != "")
    deferred = (d["rejected"] == 1) & (d["mode"] == "")
    assert deferred.sum() == r.summary["deferred"]["corrections"] > 20
    pending = r.summary["deferred"]["pending_at_end"]
    # every drafting device-round yields accepted + 1 tokens, the +1 of a deferred correction
    # one round later (or pending at the end)
    assert d["tokens"].sum() + pending == (d["accepted"][~carried] + 1).sum()
    # each deferred correction is carried by the same device in the next round
    last = d["round"].max()
    key = set(zip(d["round"][carried].tolist(), d["device"][carried].tolist()))
    want = {(rd + 1, dev) for rd, dev in zip(d["round"][deferred].tolist(),
                                             d["device"][deferred].tolist()) if rd < last}
    assert key == want
    assert pending == int(np.count_nonzero(deferred & (d["round"] == last)))
    assert np.all(d["tokens"][carried] == 1) and np.all(d["draft_len"][carried] == 0)


def test_robust_with_perfect_csi_is_optimal():
    rng = np.random.default_rng(7)
    p = _problem(rng, m=6)
    a, b = RobustSplit().decide(p, rng), solver.optimal_split(p)
    assert np.array_equal(a.mode, b.mode) and np.array_equal(a.power_w, b.power_w)


def _realised_quantile(problem, ul_mask, pl, rho, s2, q, rng, n=20000):
    """Independent oracle: decide powers on the estimate, draw the truth, take the quantile of
    the realised T_comm (Shannon)."""
    d = solver.evaluate_assignment(problem, ul_mask)
    idx = np.flatnonzero(problem.rejected[0])
    g_hat = problem.g_ul[idx]
    var = 1 - rho ** 2 + rho ** 2 * s2
    shape = (n, idx.size)
    w = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) * np.sqrt(var / 2)
    g = pl[idx] * np.abs(rho * np.sqrt(g_hat / pl[idx]) + w) ** 2
    b = problem.bandwidth_hz / idx.size
    snr = d.power_w[0, idx] * g / (N0 * b)
    t = (S / (b * np.log2(1 + snr))).max(axis=1)
    return np.quantile(t, q)


@pytest.mark.parametrize("seed", range(3))
def test_robust_minimises_the_quantile_over_prefix_splits(seed):
    rng = np.random.default_rng(seed)
    k = 8
    pl = 1e-3 * rng.uniform(100, 500, k) ** -3.5
    g = pl * rng.standard_exponential(k)
    p = ReactiveProblem(np.ones(k, bool), g, g, 0.01, 0.04, S, 10e6, N0)
    rho, s2, q = 0.8, 0.1, 0.9
    robust = RobustSplit(q, 4000, rho, s2, pathloss=pl)
    choice = robust.decide(p, np.random.default_rng(100 + seed)).mode[0] == UL
    order = np.argsort(-g, kind="stable")
    values = []
    for n in range(k + 1):
        mask = np.zeros((1, k), bool)
        mask[0, order[:n]] = True
        values.append(_realised_quantile(p, mask, pl, rho, s2, q, np.random.default_rng(seed)))
    chosen = _realised_quantile(p, choice[None, :], pl, rho, s2, q, np.random.default_rng(seed))
    assert chosen <= min(values) * 1.03
    opt = solver.optimal_split(p).mode[0] == UL
    assert chosen <= _realised_quantile(p, opt[None, :], pl, rho, s2, q,
                                        np.random.default_rng(seed)) * 1.03



class _NoError:
    """A stream whose normal draws are all 0: the true gains are rho^2 times the estimates."""

    def standard_normal(self, shape):
        return np.zeros(shape)


def test_robust_decides_many_rejected_sets_as_it_decides_each_alone():
    """Rows of every size (none, one, some, all rejected), decided together, get the split
    each gets alone (with the CSI error's draws at 0, a decision depends on its row only); at
    rho^2 < 1 every gain shrinks alike, so the split is the optimal one on the estimates."""
    rng = np.random.default_rng(3)
    k, m = 8, 30
    pl = 1e-3 * rng.uniform(100, 500, k) ** -3.5
    g = pl * rng.standard_exponential((m, k))
    rej = rng.random((m, k)) < 0.5
    rej[0], rej[1], rej[2] = False, True, np.arange(k) == 3
    p = ReactiveProblem(rej, g, g, 0.01, 0.04, S, 10e6, N0)
    robust = RobustSplit(0.9, 16, 0.8, 0.1, pathloss=pl)
    together = robust.decide(p, _NoError())
    for i in range(m):
        alone = robust.decide(ReactiveProblem(rej[i:i + 1], g[i], g[i], 0.01, 0.04, S, 10e6,
                                              N0), _NoError())
        assert together.mode[i].tolist() == alone.mode[0].tolist()
        np.testing.assert_allclose(together.power_w[i], alone.power_w[0], rtol=1e-12)
    assert np.array_equal(together.mode, solver.optimal_split(p).mode)

def test_policies_are_registered_and_configured_from_the_scenario():
    from multispin_sim.scenario import load_scenario

    sc = load_scenario({"policy": {"mode": "deadline"}, "straggler": {"deadline_ms": 12}})
    p = make_reactive_policy("deadline", sc)
    assert isinstance(p, DeadlineSplit) and p.deadline_s == pytest.approx(0.012)
    sc = load_scenario({"csi": {"delay_ms": 5}, "channel": {"doppler_hz": 0},
                        "straggler": {"robust_quantile": 0.95}})
    r = make_reactive_policy("robust", sc)
    assert isinstance(r, RobustSplit) and r.rho == 1.0 and r.quantile == 0.95
