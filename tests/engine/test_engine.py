"""The engine against the model: outcome laws, timing identities, CRN across policies, outputs.

Every statistical check uses a fixed seed and a tolerance from the statistic's own law
(chi-square / KS p-values, t-intervals); identities use floating-point tolerances only.
"""
import json

import numpy as np
import pytest
from scipy import stats

import multispin_sim as ms
from multispin_sim.model.reactive import ReactiveProblem, exhaustive_split
from multispin_sim.model.speculative import accepted_pmf, expected_tokens
from multispin_sim.model.units import dbm_to_watt

P_MIN = 1e-3


def run(overrides, **kw):
    return ms.simulate(ms.load_scenario(None, overrides=overrides), **kw)


SMALL = {"devices.count": 5, "run.rounds": 3000, "seed": 11}


@pytest.fixture(scope="module")
def small_run():
    return run(SMALL)


def test_tokens_follow_truncated_geometric_law(small_run):
    dr, dev = small_run.device_rounds, small_run.devices
    gamma = 4
    for k, alpha in enumerate(dev["alpha"]):
        accepted = dr["accepted"][dr["device"] == k]
        assert np.all(dr["draft_len"][dr["device"] == k] == gamma)
        observed = np.bincount(accepted, minlength=gamma + 1)
        expected = accepted_pmf(alpha, gamma) * accepted.size
        assert expected.min() >= 5
        assert stats.chisquare(observed, expected).pvalue > P_MIN
        np.testing.assert_array_equal(dr["tokens"][dr["device"] == k], accepted + 1)
        np.testing.assert_array_equal(dr["rejected"][dr["device"] == k], accepted < gamma)


def test_token_rate_per_round_equals_sum_of_expectations(small_run):
    tokens = small_run.rounds["tokens"]
    target = expected_tokens(small_run.devices["alpha"], 4).sum()
    half = stats.t.ppf(0.9995, tokens.size - 1) * tokens.std(ddof=1) / np.sqrt(tokens.size)
    assert abs(tokens.mean() - target) < half


def test_fading_is_exponential_over_pathloss(small_run):
    dr, dev = small_run.device_rounds, small_run.devices
    h = dr["gain_ul"] / dev["pathloss_gain"][dr["device"]]
    assert stats.kstest(h, "expon").pvalue > P_MIN
    np.testing.assert_array_equal(dr["gain_ul"], dr["gain_dl"])  # reciprocal by default


def test_independent_uplink_and_downlink_draws():
    r = run({**SMALL, "run.rounds": 500, "channel.reciprocal": False})
    dr, dev = r.device_rounds, r.devices
    h_dl = dr["gain_dl"] / dev["pathloss_gain"][dr["device"]]
    h_ul = dr["gain_ul"] / dev["pathloss_gain"][dr["device"]]
    assert stats.kstest(h_dl, "expon").pvalue > P_MIN
    assert abs(stats.spearmanr(h_ul, h_dl).statistic) < 4 / np.sqrt(h_ul.size)


def test_round_duration_is_draft_plus_verification_plus_comm(small_run):
    rounds, dr, dev = small_run.rounds, small_run.device_rounds, small_run.devices
    sc = small_run.scenario
    k = sc.devices.count
    draft = (dr["draft_len"] * dev["draft_latency_s"][dr["device"]]).reshape(-1, k).max(axis=1)
    verify = (sc.server.verify_fixed_ms + k * sc.server.verify_per_device_ms) * 1e-3
    comm = dr["delay_s"].reshape(-1, k).max(axis=1)
    np.testing.assert_allclose(rounds["draft_s"], draft, rtol=1e-9)
    np.testing.assert_allclose(rounds["verify_s"], verify, rtol=1e-9)
    np.testing.assert_allclose(rounds["comm_s"], comm, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(rounds["duration_s"], draft + verify + comm, rtol=1e-9)
    np.testing.assert_allclose(rounds["start_s"][1:], np.cumsum(rounds["duration_s"])[:-1], rtol=1e-9)
    assert np.all(rounds["n_rejected"] == dr["rejected"].reshape(-1, k).sum(axis=1))
    assert np.all(rounds["n_ul"] + rounds["n_dl"] == rounds["n_rejected"])


def test_comm_time_is_the_exhaustive_optimum_of_the_recorded_gains(small_run):
    rounds, dr, dev = small_run.rounds, small_run.device_rounds, small_run.devices
    k = small_run.scenario.devices.count
    sysm = small_run.population.system
    rejected = dr["rejected"].reshape(-1, k).astype(bool)
    problem = ReactiveProblem(rejected[:400], dr["gain_ul"].reshape(-1, k)[:400],
                              dr["gain_dl"].reshape(-1, k)[:400], dev["ul_power_w"],
                              sysm.p_dl_w, 34_816, 10e6, dbm_to_watt(-174.0))
    best = exhaustive_split(problem).t_comm
    np.testing.assert_allclose(rounds["comm_s"][:400], best, rtol=1e-9, atol=1e-15)
    # UL devices at full power, DL powers spend the whole budget (DL 4 x 10 dBm)
    mode = dr["mode"].reshape(-1, k)
    power = dr["power_w"].reshape(-1, k)
    assert np.all(power[mode == "ul"] == 0.01)
    dl_rounds = (mode == "dl").any(axis=1)
    np.testing.assert_allclose(np.where(mode == "dl", power, 0).sum(axis=1)[dl_rounds], 0.04, rtol=1e-9)
    bw = dr["bandwidth_hz"].reshape(-1, k)
    n_rej = rejected.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(bw[rejected], np.broadcast_to(10e6 / np.maximum(n_rej, 1), bw.shape)[rejected])


def test_goodput_is_the_ratio_of_totals(small_run):
    s, rounds, dev = small_run.summary, small_run.rounds, small_run.devices
    assert s["tokens"] == rounds["tokens"].sum() == dev["tokens"].sum()
    assert s["goodput_tps"] == pytest.approx(rounds["tokens"].sum() / rounds["duration_s"].sum(), rel=1e-12)
    np.testing.assert_allclose(dev["goodput_tps"], dev["tokens"] / s["sim_time_s"], rtol=1e-12)
    lo, hi = s["goodput_ci95"]
    assert lo < s["goodput_tps"] < hi
    assert s["rounds"] == 3000 and s["complete"] is True
    assert s["ul_corrections"] + s["dl_corrections"] == s["rejections"]


@pytest.fixture(scope="module")
def policy_runs():
    base = {"devices.count": 6, "run.rounds": 800, "seed": 5}
    return {mode: run({**base, "policy.mode": mode}) for mode in ("optimal", "all-ul", "all-dl", "random")}


def test_policies_share_devices_fading_and_outcomes(policy_runs):
    ref = policy_runs["optimal"]
    for mode, r in policy_runs.items():
        for col in ("gain_ul", "gain_dl", "accepted", "draft_len"):
            np.testing.assert_array_equal(r.device_rounds[col], ref.device_rounds[col], err_msg=f"{mode} {col}")
        for col in ("alpha", "distance_m", "draft_latency_s"):
            np.testing.assert_array_equal(r.devices[col], ref.devices[col])


def test_optimal_never_has_the_larger_comm_time(policy_runs):
    best = policy_runs["optimal"].rounds["comm_s"]
    for mode in ("all-ul", "all-dl", "random"):
        other = policy_runs[mode].rounds["comm_s"]
        assert np.all(best <= other * (1 + 1e-12)), mode
    ul = policy_runs["all-ul"].device_rounds["mode"]
    assert set(ul) <= {"", "ul"} and set(policy_runs["all-dl"].device_rounds["mode"]) <= {"", "dl"}


def test_same_seed_gives_byte_identical_records(tmp_path):
    a = run({**SMALL, "run.rounds": 300}, out=tmp_path / "a")
    b = run({**SMALL, "run.rounds": 300}, out=tmp_path / "b")
    c = run({**SMALL, "run.rounds": 300, "seed": 12}, out=tmp_path / "c")
    for name in ("rounds.csv", "device_rounds.csv", "devices.csv", "scenario.yaml"):
        assert (a.folder / name).read_bytes() == (b.folder / name).read_bytes(), name
    assert (a.folder / "device_rounds.csv").read_bytes() != (c.folder / "device_rounds.csv").read_bytes()


def test_max_time_stops_the_run():
    r = run({**SMALL, "run.rounds": 100_000, "run.max_time_s": 20.0})
    rounds = r.rounds
    assert r.summary["rounds"] < 100_000
    assert rounds["start_s"][-1] < 20.0 <= rounds["start_s"][-1] + rounds["duration_s"][-1]


def test_goodput_interval_covers_the_analytic_value():
    """With a 2-bit payload communication is negligible: G = sum E[N] / (max gamma t + T_ver).

    Ten independent runs: each 95% batch-means interval should cover the analytic value; fewer
    than 7 of 10 covering has probability < 1e-3 under nominal coverage.
    """
    covered = 0
    for seed in range(10):
        r = run({"devices.count": 4, "run.rounds": 1500, "seed": seed, "payload.effective_vocab": 1,
                 "payload.vocab": 2, "payload.prob_bits": 1})
        sysm = r.population.system
        time = (4 * sysm.draft_latency_s).max() + sysm.verify_fixed_s + 4 * sysm.verify_per_device_s
        # the residual communication time, measured, is far below the interval width
        assert r.summary["comm_s"]["mean"] < 1e-4 * time
        truth = expected_tokens(sysm.alpha, 4).sum() / time
        lo, hi = r.summary["goodput_ci95"]
        covered += lo <= truth <= hi
    assert covered >= 7


def test_fixed_per_device_draft_lengths():
    r = run({"devices.count": 3, "run.rounds": 50, "policy.draft_length": [0, 2, 7],
             "devices.overrides": {1: {"draft_length": 5}}})
    dr = r.device_rounds
    for k, gamma in enumerate((0, 5, 7)):
        assert np.all(dr["draft_len"][dr["device"] == k] == gamma)
    # gamma = 0: plain autoregressive decoding, one token, never rejected
    assert np.all(dr["tokens"][dr["device"] == 0] == 1) and not dr["rejected"][dr["device"] == 0].any()


def test_summary_json_and_run_json(tmp_path):
    r = run({**SMALL, "run.rounds": 100}, out=tmp_path / "x")
    summary = json.loads((r.folder / "summary.json").read_text())
    meta = json.loads((r.folder / "run.json").read_text())
    for key in ("goodput_tps", "tokens", "rounds", "sim_time_s", "device_goodput_tps", "mean_draft_len",
                "rejections", "ul_corrections", "dl_corrections", "goodput_ci95", "wall_time_s", "complete"):
        assert key in summary
    for key in ("mean", "median", "p95"):
        assert key in summary["duration_s"] and key in summary["comm_s"]
    assert meta["seed"] == 11 and "numpy" in meta["packages"] and meta["multispin_sim_version"]
    loaded = ms.load_scenario(r.folder / "scenario.yaml")
    assert loaded == r.scenario


_WRITER_SCRIPT = """
import sys
from pathlib import Path
import multispin_sim as ms
from multispin_sim.engine import simulation
from multispin_sim.outputs.records import WriterProcess

if not WriterProcess.available():
    sys.exit(3)
made = []
real = WriterProcess.__init__
def counted(self, *args, **kwargs):
    made.append(1)
    real(self, *args, **kwargs)
WriterProcess.__init__ = counted
sc = ms.load_scenario(None, overrides={"devices.count": 5, "run.rounds": 2500, "seed": 11})
out = Path(sys.argv[1])
simulation.WRITER_PROCESS_MIN_ROWS = 10**12
ms.simulate(sc, out=out / "inline")
assert not made
simulation.WRITER_PROCESS_MIN_ROWS = 0
ms.simulate(sc, out=out / "writer")
assert made
"""


def test_writer_process_writes_the_same_bytes(tmp_path):
    """Long runs format CSV rows in a forked writer process; the files must not change. In a
    fresh interpreter: fork is used only where no other thread runs, and an earlier test in
    this process (a Dask client's offload thread) may have left one."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _WRITER_SCRIPT, str(tmp_path)],
                          capture_output=True, text=True)
    if proc.returncode == 3:
        pytest.skip("no fork here")
    assert proc.returncode == 0, proc.stderr
    for name in ("rounds.csv", "device_rounds.csv", "devices.csv"):
        inline = next((tmp_path / "inline").rglob(name)).read_bytes()
        writer = next((tmp_path / "writer").rglob(name)).read_bytes()
        assert inline == writer, name
    rounds = next((tmp_path / "writer").rglob("rounds.csv")).read_text().splitlines()
    assert len(rounds) == 2500 + 1


def test_hard_interrupt_mid_round_still_writes_a_valid_summary(tmp_path, monkeypatch):
    """A second Ctrl-C raises KeyboardInterrupt wherever the run is: the records of the whole
    rounds stay valid and the summary says complete: false."""
    from multispin_sim.engine.server import EdgeServer

    calls = {"n": 0}
    real = EdgeServer.outcomes

    def outcomes(self, gamma, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 700:
            raise KeyboardInterrupt
        return real(self, gamma, *args, **kwargs)

    monkeypatch.setattr(EdgeServer, "outcomes", outcomes)
    # a server whose outcomes do more offers no blocks of them (EdgeServer.steady_outcomes)
    monkeypatch.setattr(EdgeServer, "steady_outcomes", lambda self: None)
    r = run({**SMALL, "run.rounds": 5000}, out=tmp_path / "x")
    assert r.summary["complete"] is False and r.summary["rounds"] == 699
    summary = json.loads((r.folder / "summary.json").read_text())
    assert summary["rounds"] == r.rounds["round"].size == 699
    assert r.device_rounds["round"].size == 699 * 5
    assert summary["tokens"] == r.rounds["tokens"].sum()


def test_a_run_without_a_queueing_workload_has_no_requests_table():
    result = ms.simulate(ms.load_scenario(None, {"devices.count": 2, "run.rounds": 3}))
    with pytest.raises(AttributeError, match="no requests table"):
        result.requests
    assert not hasattr(result, "requests") and result.rounds["round"].size == 3


def test_the_random_policys_coins_keep_their_rounds_whatever_else_rejects():
    """Device 1's coin in round r is the same whether or not device 0 drafts (its draft length
    0 makes rounds without a rejection): a round without one draws its K coins too (they were
    drawn only when a device was rejected, so every later coin moved)."""
    base = {"devices.count": 2, "policy.mode": "random", "run.rounds": 300, "seed": 1}
    a = run(base).device_rounds
    b = run({**base, "devices.overrides": {0: {"draft_length": 0}}}).device_rounds
    one_a, one_b = a["device"] == 1, b["device"] == 1
    np.testing.assert_array_equal(a["accepted"][one_a], b["accepted"][one_b])
    corrected = (a["mode"][one_a] != "") & (b["mode"][one_b] != "")
    assert corrected.sum() > 100
    np.testing.assert_array_equal(a["mode"][one_a][corrected], b["mode"][one_b][corrected])
