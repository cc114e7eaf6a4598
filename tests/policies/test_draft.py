"""Draft controllers behind the DraftController interface (multispin_sim.policies.draft).

Checks: the registry names of the scenario schema, inactive devices and the batch size, the
update schedules (every round, once against sampled fading, every N rounds), the remaining-token
cap, determinism given the seed, and end-to-end runs through ``simulate``.
"""
import math

import numpy as np
import pytest

from multispin_sim.engine.population import build_population
from multispin_sim.engine.simulation import simulate
from multispin_sim.engine.streams import RandomStreams
from multispin_sim.model.ergodic import GainLaw
from multispin_sim.model.fading import channel_gains
from multispin_sim.policies import DRAFT_CONTROLLERS, DraftContext, make_draft_controller
from multispin_sim.policies.draft import FixedDraft, priced_objective
from multispin_sim.policies.reactive import make_reactive_policy
from multispin_sim.scenario import load_scenario
from multispin_sim.scenario.names import DRAFT_POLICIES

SEARCHES = ("greedy", "uniform", "computation-only", "budget")


def system_of(seed=1, **overrides):
    sc = load_scenario(None, overrides={"seed": seed, **overrides})
    return build_population(sc, RandomStreams(sc.seed).devices).system


def context(system, round_index, fading_rng, ctl_rng, active=None, remaining=None, mode="optimal"):
    g_ul, g_dl = channel_gains(fading_rng, system.pathloss)
    active = np.ones(system.k, bool) if active is None else active
    return DraftContext(round_index, system, g_ul, g_dl, active, remaining,
                        make_reactive_policy(mode), ctl_rng)


def test_registry_covers_the_schema():
    assert set(DRAFT_CONTROLLERS) == set(DRAFT_POLICIES)
    assert make_draft_controller("fixed", draft_length=3).name == "fixed"
    with pytest.raises(ValueError, match="allowed"):
        make_draft_controller("nope")


@pytest.mark.parametrize("name", SEARCHES)
def test_inactive_devices_get_zero_and_leave_the_batch(name):
    s = system_of(2)
    active = np.ones(20, bool)
    active[[0, 5, 6, 19]] = False
    ctl = make_draft_controller(name, saa_samples=300)
    ctx = context(s, 0, np.random.default_rng(1), np.random.default_rng(2), active=active)
    gamma = ctl.lengths(ctx)
    assert gamma.dtype == np.int64 and gamma.shape == (20,)
    assert np.all(gamma[~active] == 0)
    assert np.all((0 <= gamma) & (gamma <= 20))
    obj = ctl.objective(context(s, 0, np.random.default_rng(1), np.random.default_rng(2), active=active))
    assert obj.verify_s == pytest.approx(s.verification_s(16))
    assert np.all(obj.caps[~active] == 0)
    # nobody active: all zeros, no search
    none = context(s, 0, np.random.default_rng(1), np.random.default_rng(2), active=np.zeros(20, bool))
    assert np.all(make_draft_controller(name).lengths(none) == 0)


@pytest.mark.parametrize("name", SEARCHES)
def test_controllers_deterministic_given_seed(name):
    s = system_of(3)
    runs = []
    for _ in range(2):
        ctl = make_draft_controller(name, saa_samples=300, mode="random")
        fr, cr = np.random.default_rng(7), np.random.default_rng(8)
        runs.append([ctl.lengths(context(s, r, fr, cr, mode="random")) for r in range(3)])
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


def test_max_draft_and_remaining_cap():
    s = system_of(1)
    ctl = make_draft_controller("budget", max_draft=6, saa_samples=300)
    remaining = np.full(20, 50)
    remaining[3] = 3          # may draft at most 2 (the round yields at least one more token)
    remaining[4] = 1
    gamma = ctl.lengths(context(s, 0, np.random.default_rng(1), np.random.default_rng(2),
                                remaining=remaining))
    assert gamma.max() <= 6
    assert gamma[3] <= 2 and gamma[4] == 0
    assert ctl.objective(context(s, 0, np.random.default_rng(1), np.random.default_rng(2),
                                 remaining=remaining)).caps[3] == 2


def test_every_round_follows_the_channel():
    """The server re-optimises for this round's CSI: a device in a deep fade drafts less."""
    s = system_of(1, **{"server.dl_power_dbm": 10.0})
    ctl = make_draft_controller("budget", saa_samples=400)
    ctx = context(s, 0, np.random.default_rng(1), np.random.default_rng(2))
    g = ctx.g_ul.copy()
    g[0] = np.median(g) * 10 ** -2.5
    bad = DraftContext(0, s, g, g, ctx.active, None, ctx.reactive, np.random.default_rng(2))
    good_g = ctx.g_ul.copy()
    good_g[0] = np.max(good_g)
    good = DraftContext(0, s, good_g, good_g, ctx.active, None, ctx.reactive, np.random.default_rng(2))
    assert ctl.lengths(bad)[0] == 0
    assert ctl.lengths(good)[0] > 0


def test_update_once_uses_sampled_fading_and_keeps_gamma():
    s = system_of(4)
    calls = []

    ctl = make_draft_controller("greedy", update="once", saa_samples=300)
    decide = ctl.decide
    ctl.decide = lambda ctx: calls.append(ctx.round) or decide(ctx)
    fr, cr = np.random.default_rng(1), np.random.default_rng(2)
    first = ctl.lengths(context(s, 0, fr, cr))
    for r in range(1, 5):
        np.testing.assert_array_equal(ctl.lengths(context(s, r, fr, cr)), first)
    assert calls == [0]
    # the decision does not depend on this round's gains (sampled fading), only on the stream
    other = make_draft_controller("greedy", update="once", saa_samples=300)
    g = context(s, 0, np.random.default_rng(99), np.random.default_rng(2))
    np.testing.assert_array_equal(other.lengths(g), first)
    # inactive in the first round: the kept gamma still covers every device
    active = np.ones(20, bool)
    active[:5] = False
    third = make_draft_controller("greedy", update="once", saa_samples=300)
    g0 = third.lengths(context(s, 0, np.random.default_rng(1), np.random.default_rng(2), active=active))
    assert np.all(g0[:5] == 0)
    g1 = third.lengths(context(s, 1, np.random.default_rng(1), np.random.default_rng(2)))
    np.testing.assert_array_equal(g1, first)


def test_update_every_n_rounds():
    s = system_of(5)
    calls = []
    ctl = make_draft_controller("uniform", update=3, saa_samples=200)
    decide = ctl.decide
    ctl.decide = lambda ctx: calls.append(ctx.round) or decide(ctx)
    fr, cr = np.random.default_rng(1), np.random.default_rng(2)
    out = [ctl.lengths(context(s, r, fr, cr)) for r in range(8)]
    assert calls == [0, 3, 6]
    np.testing.assert_array_equal(out[0], out[2])


def test_fixed_draft_unchanged():
    s = system_of(1)
    ctl = FixedDraft(draft_length=np.arange(20) % 5, max_draft=20)
    active = np.ones(20, bool)
    active[2] = False
    gamma = ctl.lengths(context(s, 0, np.random.default_rng(1), None, active=active))
    np.testing.assert_array_equal(gamma, np.where(active, np.arange(20) % 5, 0))


def test_saa_needs_the_stream():
    s = system_of(1)
    ctx = context(s, 0, np.random.default_rng(1), None)
    with pytest.raises(ValueError, match="ctx.rng"):
        make_draft_controller("greedy").lengths(ctx)
    assert make_draft_controller("computation-only").lengths(ctx).mean() > 0


@pytest.mark.parametrize("draft,mode,update", [
    ("greedy", "optimal", "every-round"), ("budget", "optimal", "every-round"),
    ("budget", "random", "every-round"), ("uniform", "all-dl", 2),
    ("computation-only", "all-ul", "every-round"), ("greedy", "optimal", "once"),
])
def test_simulate_end_to_end(draft, mode, update):
    import multispin_sim as ms

    sc = load_scenario(None, overrides={"policy.draft": draft, "policy.mode": mode,
                                        "policy.draft_update": update, "policy.saa_samples": 200,
                                        "run.rounds": 6, "devices.count": 8})
    result = ms.simulate(sc)
    s = result.summary
    assert s["rounds"] == 6 and result.complete
    assert s["goodput_tps"] > 0
    gamma = np.asarray(result.device_rounds["draft_len"])
    assert gamma.size == 6 * 8
    assert gamma.max() <= 20 and gamma.min() >= 0
    assert s["mean_draft_len"] > 0


def test_the_exact_estimator_is_free_of_sampling_noise():
    """policy.estimator 'exact' weighs every rejected set by its probability: the decisions do
    not depend on the sample count, which changes those of the sampled estimator. The greedy
    decision of each round is the greedy on the exact objective of that round's gains."""
    import multispin_sim as ms
    from multispin_sim.policies.draft_search import greedy_search, make_objective

    def lengths(estimator, samples):
        res = ms.simulate(load_scenario(None, overrides={
            "devices.count": 4, "policy.draft": "greedy", "policy.estimator": estimator,
            "policy.saa_samples": samples, "run.rounds": 40, "seed": 5}))
        return res, res.device_rounds["draft_len"].reshape(40, 4)

    exact, few = lengths("exact", 10)
    assert np.array_equal(few, lengths("exact", 1000)[1])
    assert not np.array_equal(lengths("saa", 10)[1], lengths("saa", 1000)[1])
    d, system = exact.device_rounds, exact.population.system
    for r in range(0, 40, 7):
        row = d["round"] == r
        obj = make_objective(system, d["gain_ul"][row], d["gain_dl"][row], np.ones(4, bool),
                             np.full(4, 20), estimator="exact")
        assert greedy_search(obj).gamma.tolist() == few[r].tolist()


def test_the_exact_estimator_is_refused_for_many_devices():
    from multispin_sim.scenario import ScenarioError

    load_scenario(None, overrides={"policy.estimator": "exact", "devices.count": 14})
    with pytest.raises(ScenarioError, match=r"^policy\.estimator: 'exact' with devices.count = 15"):
        load_scenario(None, overrides={"policy.estimator": "exact", "devices.count": 15})
    with pytest.raises(ScenarioError, match=r"devices.count <= 10"):
        load_scenario(None, overrides={"policy.estimator": "exact", "devices.count": 11,
                                       "policy.mode": "random"})


@pytest.mark.parametrize("overrides, plan", [
    ({}, "instantaneous"),                                             # one block per round
    ({"channel.coherence_time_ms": 5.0}, "auto"),          # blocks on a time grid: each round
    ({"channel.coherence_time_ms": 5.0, "channel.fading": "none"}, "instantaneous"),
    ({"channel.coherence_time_ms": 5.0, "policy.plan_gains": "instantaneous"}, "instantaneous"),
    ({"policy.plan_gains": "ergodic"}, "ergodic"),
])
def test_auto_is_decided_each_round_where_blocks_are_on_a_time_grid(overrides, plan):
    sc = load_scenario(None, overrides={"policy.draft": "greedy", **overrides})
    assert DRAFT_CONTROLLERS.lookup("greedy").from_scenario(sc).plan_gains == plan


@pytest.mark.parametrize("name", ["greedy", "budget"])
def test_ergodic_planning_prices_every_device_at_its_mean_rate(name, monkeypatch):
    """The objective is built on the ergodic gains of the path loss (the round's CSI unused),
    the band and the DL budget shared by the active devices; the instantaneous plan passes the
    round's CSI through."""
    from multispin_sim.model.rates import ergodic_gain
    from multispin_sim.policies import draft

    seen = []
    real = draft.make_objective
    monkeypatch.setattr(draft, "make_objective",
                        lambda system, g_ul, g_dl, *a, **kw: seen.append((g_ul, g_dl))
                        or real(system, g_ul, g_dl, *a, **kw))
    s = system_of(3)
    active = np.ones(20, bool)
    active[:5] = False
    ctx = context(s, 0, np.random.default_rng(1), np.random.default_rng(2), active=active)
    make_draft_controller(name, saa_samples=200, plan_gains="ergodic").lengths(ctx)
    make_draft_controller(name, saa_samples=200).lengths(ctx)
    band = s.bandwidth_hz / 15
    np.testing.assert_allclose(seen[0][0], ergodic_gain(s.pathloss, s.p_ul_w, band, s.n0),
                               rtol=1e-12)
    np.testing.assert_allclose(seen[0][1], ergodic_gain(s.pathloss, s.p_dl_w / 15, band, s.n0),
                               rtol=1e-12)
    assert seen[1][0] is ctx.g_ul and seen[1][1] is ctx.g_dl


@pytest.mark.parametrize("block_ms, expected", [(5.0, False), (5000.0, True)])
def test_auto_prices_at_the_ergodic_gains_when_the_last_round_outlasted_a_block(
        block_ms, expected, monkeypatch):
    """Rounds last about 0.2-0.5 s here: 5 ms blocks never hold for a round, 5 s blocks hold
    from the second round on (the first round's is not known: ergodic)."""
    from multispin_sim.engine.simulation import simulate
    from multispin_sim.policies import draft

    holds = []
    real = draft.plans_ergodic
    monkeypatch.setattr(draft, "plans_ergodic",
                        lambda plan, ctx: holds.append(ctx.gains_hold) or real(plan, ctx))
    simulate(load_scenario(None, overrides={
        "devices.count": 4, "run.rounds": 12, "policy.draft": "greedy",
        "policy.saa_samples": 50, "channel.coherence_time_ms": block_ms}))
    assert holds[0] is False and len(holds) == 12
    assert set(holds[1:]) == {expected}


@pytest.mark.parametrize("m, corr", [(4, 0.0), (4, 0.7)])
def test_update_once_samples_the_array_gain(m, corr):
    """With M antennas under maximum-ratio beams the 'once' objective prices each sample at
    G X, X = sum_i lambda_i E_i the array gain's law (``channel.gain_law``): over 2,000
    samples x 20 devices the UL gains divided by G have mean M and variance sum lambda_i^2
    (within 5 standard errors; the fourth moment of the hypoexponential gives the variance's);
    reciprocal channel: the DL's are the same draws."""
    s = system_of(4)
    law = GainLaw.of("rayleigh", m, corr)
    ctx = DraftContext(0, s, np.ones(s.k), np.ones(s.k), np.ones(s.k, bool), None,
                       make_reactive_policy("optimal"), np.random.default_rng(8),
                       gain_law=law)
    obj = priced_objective(ctx, ctx.active, np.full(s.k, 20), ctx.reactive, ctx.rng, 2000,
                           update="once")
    kernel = obj.tcomm.kernel
    x = (kernel.q / np.asarray(s.p_ul_w) / s.pathloss).ravel()
    np.testing.assert_allclose(1.0 / (kernel.v * s.pathloss), x.reshape(kernel.v.shape),
                               rtol=1e-12)
    lam = law.eigenvalues
    # cumulants of sum lambda E: kappa_n = (n - 1)! sum lambda^n
    k2, k4 = (lam ** 2).sum(), 6 * (lam ** 4).sum()
    assert abs(x.mean() - m) < 5 * math.sqrt(k2 / x.size)
    var_of_var = (k4 + 2 * k2 ** 2) / x.size   # Var of the sample variance, large n
    assert abs(x.var(ddof=1) - k2) < 5 * math.sqrt(var_of_var)
    assert corr == 0 or k2 > m + 1   # correlation widens the law (so the test tells them apart)


def test_array_gain_sample_of_one_rayleigh_element_is_the_papers_draws():
    a = GainLaw.of("jakes").sample(np.random.default_rng(4), (2, 30, 5))
    np.testing.assert_array_equal(a, np.random.default_rng(4).standard_exponential((2, 30, 5)))
    np.testing.assert_array_equal(GainLaw.of("none", 3).sample(None, (2, 2)), np.full((2, 2), 3.0))


def test_update_once_runs_with_an_antenna_array():
    """End to end: greedy 'once' at M = 4 decides in round 0 and keeps its lengths."""
    sc = load_scenario(None, overrides={"server.antennas": 4, "policy.draft": "greedy",
                                        "policy.draft_update": "once", "policy.saa_samples": 200,
                                        "run.rounds": 6, "devices.count": 6})
    result = simulate(sc)
    rows = result.device_rounds
    assert result.complete and len(rows["draft_len"]) == 6 * 6
    first = {d: g for r, d, g in zip(rows["round"], rows["device"], rows["draft_len"]) if r == 0}
    assert all(first[d] == g for d, g in zip(rows["device"], rows["draft_len"]))
    assert sum(first.values()) > 0


def test_a_shared_band_plans_once_against_the_law_of_its_channel_vectors():
    """A shared band's 'once' objective draws channel vectors, h = L w (``VectorLaw``), one
    channel state per SAA sample: the covariance across the antennas is R within 5 standard
    errors, and each sample's T_comm is the policy's on that sample's vectors alone (rtol 1e-12:
    rows of different samples never share a state)."""
    from multispin_sim.model.antennas import ArrayGains, ServerArray, VectorLaw

    m, corr, n = 3, 0.6, 4000
    array = ServerArray(m, corr)
    law = VectorLaw(m, array.factor)
    h = law.sample(np.random.default_rng(3), (n, 2))
    cov = np.einsum("nki,nkj->ij", h, h.conj()) / (2 * n)
    r = corr ** np.abs(np.subtract.outer(np.arange(m), np.arange(m)))
    # each entry is a mean of 2n products of unit-variance Gaussians: standard error <= 1/sqrt(2n)
    assert np.max(np.abs(cov - r)) < 5 / math.sqrt(2 * n)
    s = system_of(2, **{"devices.count": 5, "server.antennas": m,
                        "server.dl_scheme": "mu-mimo-zf", "server.ul_scheme": "mu-mimo-mmse"})
    ctx = DraftContext(0, s, np.ones(s.k), np.ones(s.k), np.ones(s.k, bool), None,
                       make_reactive_policy("optimal"), np.random.default_rng(8), gain_law=law)
    obj = priced_objective(ctx, ctx.active, np.full(s.k, 6), ctx.reactive, ctx.rng, 300,
                           update="once")
    kernel = obj.tcomm.kernel
    a_ul, a_dl = kernel.states
    assert a_ul.shape == (300, s.k, m) and a_dl is a_ul
    rng = np.random.default_rng(1)
    rows = rng.integers(0, 300, 60)
    rejected = rng.random((60, s.k)) < 0.5
    got = kernel(rejected, rows)
    for i, row in enumerate(rows):
        gains = ArrayGains.of(a_ul[row])
        want = s.transmission.problem(s, rejected[i:i + 1], gains, gains)
        assert got[i] == pytest.approx(float(ctx.reactive.decide(want).t_comm[0]), rel=1e-12)


def test_a_shared_band_runs_the_once_objective_end_to_end():
    sc = load_scenario(None, overrides={"server.antennas": 4, "server.dl_scheme": "mu-mimo-zf",
                                        "server.ul_scheme": "mu-mimo-mmse",
                                        "policy.draft": "greedy", "policy.draft_update": "once",
                                        "policy.saa_samples": 200, "run.rounds": 6,
                                        "devices.count": 6})
    result = simulate(sc)
    rows = result.device_rounds
    assert result.complete
    first = {d: g for r, d, g in zip(rows["round"], rows["device"], rows["draft_len"]) if r == 0}
    assert all(first[d] == g for d, g in zip(rows["device"], rows["draft_len"]))
    assert sum(first.values()) > 0
