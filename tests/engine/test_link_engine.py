"""Link layer and CSI in the engine (issue 12): decisions, CSI laws, noise figure, bad input."""
import math

import numpy as np
import pytest
from scipy import stats

from multispin_sim.cli import main
from multispin_sim.engine import simulate
from multispin_sim.model.csi import ImperfectCsi
from multispin_sim.model.link import Blocks, McsLink

SMALL = {"devices": {"count": 8}, "run": {"rounds": 150}, "seed": 4}


def _run(**sections):
    sc = {k: dict(v) for k, v in SMALL.items() if isinstance(v, dict)}
    sc["seed"] = SMALL["seed"]
    for key, value in sections.items():
        sc.setdefault(key, {}).update(value)
    return simulate(sc)


def test_mcs_keeps_the_reactive_split_of_the_shannon_link():
    """Same seed, i.i.d. fading per round, fixed draft lengths: every round sees the same gains
    and outcomes; with a common bandwidth the Shannon-optimal split also minimises the slowest
    mcs delay, so modes are exactly the Shannon run's and powers its numbers (perfect CSI;
    within rtol 1e-12: the Shannon run decides its rounds in blocks, EdgeServer.steady_decisions)."""
    a = _run().device_rounds
    b = _run(link={"model": "mcs"}).device_rounds
    assert np.array_equal(a["mode"], b["mode"])
    np.testing.assert_allclose(b["power_w"], a["power_w"], rtol=1e-12, atol=1e-300)
    assert np.array_equal(a["gain_ul"], b["gain_ul"])
    rej = b["rejected"] == 1
    # mcs delays are whole slots (30 kHz: 0.5 ms) when nothing had to wait for a new block
    slots = b["planned_delay_s"][rej] / 5e-4
    assert np.allclose(slots, np.round(slots))


def test_stale_csi_without_doppler_is_perfect_csi():
    base = _run(link={"model": "mcs"}, channel={"doppler_hz": 0.0})
    stale = _run(link={"model": "mcs"}, channel={"doppler_hz": 0.0}, csi={"delay_ms": 20.0})
    for col in ("mode", "power_w", "delay_s", "planned_delay_s"):
        assert np.array_equal(base.device_rounds[col], stale.device_rounds[col]), col
    assert ImperfectCsi(delay_s=0.02, doppler_hz=0.0).estimate(
        np.array([0.3, 2.0]), np.array([0.3, 2.0]), True, None)[0].tolist() == [0.3, 2.0]


def test_stale_csi_with_doppler_changes_decisions_and_records_planned_vs_realised():
    r = _run(link={"model": "mcs"}, channel={"doppler_hz": 200.0}, csi={"delay_ms": 5.0})
    dr = r.device_rounds
    rej = dr["rejected"] == 1
    assert np.any(dr["planned_delay_s"][rej] != dr["delay_s"][rej])
    assert r.summary["link"]["harq_transmissions"] >= r.summary["link"]["corrections"]
    for col in ("harq_transmissions", "harq_failures", "outages"):
        assert int(dr[col].sum()) == r.summary["link"][col]
    assert np.all(dr["harq_transmissions"][~rej] == 0) and np.all(dr["harq_transmissions"][rej] > 0)


def test_stale_csi_law():
    """|h_old|^2 is Exp(1) and corr(|h|^2, |h_old|^2) = rho^2 = J0(2 pi f_D tau)^2."""
    rng = np.random.default_rng(2)
    n = 20000
    csi = ImperfectCsi(delay_s=2e-3, doppler_hz=100.0)
    h = rng.standard_exponential(n)
    est, _ = csi.estimate(h, h, True, rng)
    assert stats.kstest(est, "expon").pvalue > 1e-3
    r = np.corrcoef(h, est)[0, 1]
    assert abs(r - csi.rho ** 2) < 4 * (1 - csi.rho ** 4) / math.sqrt(n)


def test_mmse_estimate_law():
    """h_hat ~ CN(0, 1 - s2): |h_hat|^2 / (1 - s2) ~ Exp(1); E[|h|^2 - |h_hat|^2] = s2."""
    rng = np.random.default_rng(3)
    s2, n = 0.2, 20000
    h = rng.standard_exponential(n)
    est, _ = ImperfectCsi(error_variance=s2).estimate(h, h, True, rng)
    assert stats.kstest(est / (1 - s2), "expon").pvalue > 1e-3
    d = h - est
    assert abs(d.mean() - s2) < 4 * d.std() / math.sqrt(n)


def test_cqi_quantisation_reports_the_lower_bin_edge():
    link = McsLink(10e6, 1e-3 * 10 ** (-17.4))
    ref = np.full(200, 1e8)
    csi = ImperfectCsi(quantise=True, switch_db=link.switch_db, ref_snr=ref)
    g = np.geomspace(1e-10, 1e-6, 200)
    q = csi.quantised(g)
    snr_db, q_db = 10 * np.log10(g * 1e8), 10 * np.log10(q * 1e8)
    inside = (snr_db >= link.switch_db[0]) & (snr_db < link.switch_db[-1])
    assert np.all(q[inside] <= g[inside] * (1 + 1e-12))
    assert np.all(np.isin(np.round(q_db[inside], 9), np.round(link.switch_db, 9)))
    assert len(np.unique(q)) <= 16


def test_noise_figure_adds_to_n0():
    """Every UL correction's delay is S / (b log2(1 + P g / (N0 F b))), N0 F in dB: -174 + 5."""
    r = simulate({"run": {"rounds": 20}, "devices": {"count": 6},
                  "channel": {"noise_figure_db": 5.0}})
    d = r.device_rounds
    ul = d["mode"] == "ul"
    assert ul.sum() > 5
    n0 = 1e-3 * 10 ** ((-174 + 5) / 10)
    b, p, g = d["bandwidth_hz"][ul], d["power_w"][ul], d["gain_ul"][ul]
    np.testing.assert_allclose(d["delay_s"][ul], 34816 / (b * np.log2(1 + p * g / (n0 * b))),
                               rtol=1e-12)


@pytest.mark.parametrize("setting, path", [
    ("link.cqi_table=qam9", "link.cqi_table"),
    ("link.bler_target=1", "link.bler_target"),
    ("link.bler_target=0", "link.bler_target"),
    ("link.harq_max_transmissions=0", "link.harq_max_transmissions"),
    ("link.subcarrier_spacing_khz=45", "link.subcarrier_spacing_khz"),
    ("link.model=ns3", "link.model"),
    ("channel.noise_figure_db=-1", "channel.noise_figure_db"),
    ("csi.estimation_error_variance=1", "csi.estimation_error_variance"),
])
def test_bad_link_input_exits_2_with_one_line(tmp_path, monkeypatch, capsys, setting, path):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--set", setting, "--rounds", "3", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {path}:"), err
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("sets, path, allowed", [
    (["link.frequency_range=FR2", "link.subcarrier_spacing_khz=15"],
     "link.subcarrier_spacing_khz", "60, 120 kHz"),
    (["link.subcarrier_spacing_khz=120", "channel.bandwidth_mhz=100"],
     "link.subcarrier_spacing_khz", "15, 30, 60 kHz"),
    (["link.frequency_range=FR2", "link.subcarrier_spacing_khz=60", "channel.bandwidth_mhz=400"],
     "channel.bandwidth_mhz", "50, 100, 200 MHz"),
    (["link.subcarrier_spacing_khz=15", "channel.bandwidth_mhz=100"],
     "channel.bandwidth_mhz", "40, 45, 50 MHz"),
    (["link.frequency_range=FR3"], "link.frequency_range", "'FR1', 'FR2'"),
    (["link.model=shannon", "csi.cqi_quantisation=true", "link.subcarrier_spacing_khz=120"],
     "link.subcarrier_spacing_khz", "link.frequency_range FR2"),   # the CQI grid's carrier
])
def test_a_carrier_outside_the_range_table_exits_2_with_one_line(tmp_path, monkeypatch, capsys,
                                                                  sets, path, allowed):
    """A spacing the frequency range does not have, or a channel bandwidth its table marks
    N/A at the spacing: one line naming the key and the allowed values, before any output."""
    monkeypatch.chdir(tmp_path)
    args = ["run", "--set", "link.model=mcs", "--rounds", "3", "--quiet"]
    for s in sets:
        args += ["--set", s]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {path}:") and allowed in err[0], err
    assert not (tmp_path / "results").exists()


def test_too_few_prbs_refused_up_front_with_the_numbers(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(["run", "--set", "link.model=mcs", "--set", "link.subcarrier_spacing_khz=60",
                 "--set", "channel.bandwidth_mhz=10", "--rounds", "3", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "11 usable PRBs" in err[0] and "20" in err[0]
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("mode", ["optimal", "all-ul", "all-dl"])
def test_draft_kernel_on_the_nr_link_equals_the_policy(mode):
    """The closed-form T_comm kernel with the link's delay = the link-aware policy's T_comm."""
    from multispin_sim.model.tcomm import PolicyKernel
    from multispin_sim.policies import make_reactive_policy
    from multispin_sim.policies.linkaware import LinkAwarePolicy, LinkTcommKernel
    from multispin_sim.scenario import load_scenario
    from multispin_sim.engine.population import build_population

    sc = load_scenario({"devices": {"count": 12}})
    system = build_population(sc, np.random.default_rng(0)).system
    link = McsLink(system.bandwidth_hz, system.n0)
    policy = LinkAwarePolicy(make_reactive_policy(mode), link, 0.01)
    rng = np.random.default_rng(1)
    g = system.pathloss * rng.standard_exponential((300, 12))
    rej = rng.random((300, 12)) < 0.5
    fast = policy.tcomm_kernel(system, g, g, None)
    assert isinstance(fast, LinkTcommKernel)
    slow = PolicyKernel(system, g, g, policy)
    np.testing.assert_allclose(fast(rej), slow(rej), rtol=1e-12)


def test_link_scenario_files_load_and_the_sweep_validates():
    from pathlib import Path

    from multispin_sim.experiments.sweepfile import load_sweep
    from multispin_sim.scenario import load_scenario

    root = Path(__file__).resolve().parents[2] / "scenarios" / "link"
    names = {load_scenario(f).name for f in root.glob("*.yaml") if not f.name.startswith("fig")}
    assert names == {"link-mcs", "link-mcs-harq-stale-pedestrian", "link-mcs-harq-stale-vehicular",
                     "link-deadline"}
    sw = load_sweep(root / "fig9_10_link.yaml")
    assert {c.values["link.model"] for c in sw.cells} == {"shannon", "mcs"}
    assert {c.values["server.dl_power_ratio"] for c in sw.cells} == {4, 16}


def test_scalar_replan_equals_the_vectorised_one():
    from multispin_sim.model.reactive import ReactiveProblem
    from multispin_sim.policies import make_reactive_policy
    from multispin_sim.policies.linkaware import LinkAwarePolicy

    n0 = 1e-3 * 10 ** (-17.4)
    link = McsLink(10e6, n0)
    policy = LinkAwarePolicy(make_reactive_policy("optimal"), link, 0.01)
    rng = np.random.default_rng(8)
    for _ in range(30):
        g = 1e-3 * rng.uniform(100, 500, 20) ** -3.5 * rng.standard_exponential(20)
        rej = rng.random(20) < 0.5
        one = policy.decide(ReactiveProblem(rej, g, g, 0.01, 0.04, 34816.0, 10e6, n0))
        two = policy.decide(ReactiveProblem(np.stack([rej, rej]), g, g, 0.01, 0.04, 34816.0,
                                            10e6, n0))
        np.testing.assert_allclose(one.delay_s[0], two.delay_s[0], rtol=1e-12)
        assert one.bandwidth_hz[0] == two.bandwidth_hz[0]


def test_many_transport_blocks_repetition_total_is_negative_binomial():
    """n blocks, repetition at BLER q, no total failure possible within the horizon (M large):
    total attempts = sum of n Geometric(1 - q): mean n / (1 - q), variance n q / (1 - q)^2."""
    link = McsLink(10e6, 1e-3 * 10 ** (-17.4), harq_max=60, combining="repetition",
                   bler_target=0.5)
    snr = 10 ** (link.switch_db[6] / 10) * (1 + 1e-9)
    q = float(link.curve.bler(link.thr_db[6], snr))
    n_prb = 4
    tbs = int(link.tbs[6, n_prb])
    n_tb = 40

    class Static(Blocks):
        static = True

        def current(self, t):
            return snr * link.noise_w(n_prb), math.inf

        def next(self, t):
            return t + 0.01

    rng = np.random.default_rng(9)
    tx = np.array([link.deliver(n_tb * tbs, n_prb, 1.0, snr, Static(),
                                rng).transmissions for _ in range(3000)])
    mean, var = n_tb / (1 - q), n_tb * q / (1 - q) ** 2
    assert abs(tx.mean() - mean) < 4 * math.sqrt(var / tx.size)
    assert 0.85 < tx.var(ddof=1) / var < 1.15


@pytest.mark.parametrize("mode", ["fidelity", "optimal"])
def test_token_payloads_on_the_nr_link_share_whole_prbs(mode):
    """Token-level payloads (the fidelity policy decides on per-device payload tables) on the
    NR link: every correction of a round with |R| rejected devices gets floor(24 / |R|) PRBs of
    360 kHz (10 MHz at 30 kHz spacing: 24 PRBs, TS 38.101-1 Table 5.3.2-1), as with bits."""
    import multispin_sim as ms

    res = ms.simulate(ms.load_scenario(None, overrides={
        "devices.count": 4, "run.rounds": 150, "payload.model": "token", "policy.mode": mode,
        "link.model": "mcs"}))
    d = res.device_rounds
    rej = d["rejected"] == 1
    n_rej = np.bincount(d["round"], weights=rej)[d["round"]]
    assert rej.sum() > 50
    np.testing.assert_array_equal(d["bandwidth_hz"][rej], (24 // n_rej[rej]) * 360e3)


@pytest.mark.parametrize("policy_args", [{"deadline_ms": 40.0}, {"median_multiple": 2.0}],
                         ids=["fixed", "median"])
def test_deadline_on_the_nr_link_compares_the_links_planned_delays(policy_args):
    """'deadline' on the NR link defers exactly the corrections whose planned link delay (what
    the engine waits for and records as planned_delay_s) is over the deadline, and every
    correction it sends meets the deadline on the link, not only on Shannon's formula."""
    from multispin_sim.model.reactive import DL, UL, ReactiveProblem
    from multispin_sim.policies.linkaware import LinkAwarePolicy
    from multispin_sim.policies.straggler import DeadlineSplit

    n0 = 1e-3 * 10 ** (-17.4)
    link = McsLink(10e6, n0)
    deadline = DeadlineSplit(**policy_args)
    policy = LinkAwarePolicy(deadline, link, 0.01)
    plain = LinkAwarePolicy(make_reactive_policy_optimal(), link, 0.01)
    rng = np.random.default_rng(3)
    g = 1e-3 * rng.uniform(100, 500, (200, 20)) ** -3.5 * rng.standard_exponential((200, 20))
    rej = rng.random((200, 20)) < 0.5
    problem = ReactiveProblem(rej, g, g, 0.01, 0.04, 34816.0, 10e6, n0)
    first = plain.decide(problem)          # the optimal split's planned link delays
    limit = deadline.deadline(first, rej)[:, None]
    d = policy.decide(problem)
    assert np.array_equal(d.deferred, rej & (first.delay_s > limit))
    assert d.deferred.any()
    sent = (d.mode == UL) | (d.mode == DL)
    assert np.all(d.delay_s[sent] <= np.broadcast_to(limit, sent.shape)[sent] * (1 + 1e-12))


def make_reactive_policy_optimal():
    from multispin_sim.policies import make_reactive_policy

    return make_reactive_policy("optimal")


def test_deadline_on_the_nr_link_sends_no_correction_planned_over_the_deadline():
    """The engine: a correction sent in its own round (its device drafted) has a planned
    delay within straggler.deadline_ms; only carried ones (drafting nothing) may be slower."""
    import multispin_sim as ms

    res = ms.simulate(ms.load_scenario(None, overrides={
        "devices.count": 20, "run.rounds": 200, "link.model": "mcs", "policy.mode": "deadline",
        "straggler.deadline_ms": 40, "policy.draft": "fixed", "policy.draft_length": 4,
        "server.dl_power_ratio": 4, "seed": 1}))
    d = res.device_rounds
    own = (d["mode"] != "") & (d["draft_len"] > 0)
    assert own.sum() > 500
    assert d["planned_delay_s"][own].max() <= 0.040
    assert ((d["mode"] != "") & (d["draft_len"] == 0)).any()   # some were carried


def test_a_static_channel_retries_a_failed_block_at_the_decided_power():
    """No fading, all-DL, one HARQ transmission per block: a far device's block fails now and
    then, and its retry meets the same channel. The near device (alpha 0.01) is rejected in
    every round, so the far one always shares the band, with almost all of P_dl on half the
    PRBs: about -7.7 dB, above CQI 1. At the decided power the retry succeeds and the run
    completes; at the flat-PSD share of P_dl (3 dB less, below CQI 1) it would be an outage 'for
    good' that stops the run in its first round."""
    import multispin_sim as ms

    res = ms.simulate(ms.load_scenario(None, overrides={
        "devices.count": 2,
        "devices.overrides": {0: {"distance_m": 100, "alpha": 0.01}, 1: {"distance_m": 789}},
        "channel.fading": "none", "server.dl_power_ratio": 4, "policy.mode": "all-dl",
        "policy.draft": "fixed", "policy.draft_length": 4, "run.rounds": 200,
        "link.model": "mcs", "link.harq_max_transmissions": 1, "seed": 1}))
    s = res.summary
    assert s["complete"] is True and s["rounds"] == 200
    assert s["link"]["harq_failures"] > 0    # retries happened
    assert s["link"]["outages"] == 0


def test_the_exact_estimator_on_the_nr_link_enumerates_the_random_splits_coins():
    """'random' on the NR link under the exact estimator: E[T_comm] over every outcome and coin,
    on the link's planned delays, equals the mean of many sampled outcomes and coins (SAA,
    within 5 standard errors of its per-sample values); it used to stop with 'needs the coin
    table'."""
    from multispin_sim.engine.population import build_population
    from multispin_sim.policies import make_reactive_policy
    from multispin_sim.policies.draft_search import make_objective
    from multispin_sim.policies.linkaware import LinkAwarePolicy
    from multispin_sim.scenario import load_scenario

    sc = load_scenario({"devices": {"count": 4}})
    system = build_population(sc, np.random.default_rng(0)).system
    policy = LinkAwarePolicy(make_reactive_policy("random"), McsLink(system.bandwidth_hz,
                                                                     system.n0), 0.01)
    g = system.pathloss * np.random.default_rng(2).standard_exponential(4)
    active, caps = np.ones(4, bool), np.full(4, 6)
    gamma = np.array([[2, 3, 1, 4]])
    exact = make_objective(system, g, g, active, caps, policy, estimator="exact")
    saa = make_objective(system, g, g, active, caps, policy, np.random.default_rng(3), 40_000)
    want = exact.tcomm.mean(gamma)[0]
    t = np.asarray(saa.tcomm.per_sample(gamma[0]), dtype=float)
    assert want > 0
    assert abs(t.mean() - want) < 5 * t.std(ddof=1) / np.sqrt(t.size)
