"""The gallery of docs/examples runs (each example's ``main`` at smaller sizes) and its output
holds a property the theory or the model's construction guarantees, with tolerances taken from
the statistics; every example is on docs/guide/examples.md. Fixed seeds."""
import importlib.util
import io
import math
import runpy
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from scipy.special import j0

import multispin_sim as ms

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "docs" / "examples"
EXTENDING = {"acceptance_model.py", "reactive_policy.py"}   # tests/docs/test_examples.py


def run(name, **sizes):
    """The example's ``main(**sizes)``; it must print something."""
    module = runpy.run_path(str(FOLDER / name), run_name="example")
    text = io.StringIO()
    with redirect_stdout(text):
        out = module["main"](**sizes)
    assert text.getvalue().strip(), f"{name} printed nothing"
    return out


def test_every_example_is_tested_and_listed():
    tested = {"uplink_or_downlink.py", "draft_length.py", "fading_over_time.py", "queueing.py",
              "many_cells.py", "learning_agent.py", "antennas_over_time.py",
              "estimated_channel.py", "line_of_sight.py"}
    assert {p.name for p in FOLDER.glob("*.py")} == tested | EXTENDING
    page = (ROOT / "docs" / "guide" / "examples.md").read_text(encoding="utf-8")
    for name in tested:
        assert f"examples/{name}" in page
        text = (FOLDER / name).read_text(encoding="utf-8")
        assert 30 <= len(text.splitlines()) <= 80, name
        assert 'if __name__ == "__main__":\n    main()' in text


def test_uplink_or_downlink_optimal_split_is_never_slower():
    results = run("uplink_or_downlink.py", rounds=150, devices=6)
    for ratio in (4, 16):
        best = results[ratio, "optimal"]
        for mode in ("all-ul", "all-dl", "random"):
            other = results[ratio, mode]
            # one seed: every policy sees the same rejections (and so the same tokens) and the
            # same gains each round, and the optimal split minimises the round's correction
            # time over every assignment (docs/model.md, the prefix lemma): round by round,
            # up to the DL power bisection's float tolerance
            np.testing.assert_array_equal(best.rounds["tokens"], other.rounds["tokens"])
            assert np.all(best.rounds["comm_s"] <= other.rounds["comm_s"] * (1 + 1e-9))
            assert best.summary["goodput_tps"] >= other.summary["goodput_tps"] * (1 - 1e-12)
    # all-UL never uses the DL budget: the two ratios give the same rounds
    np.testing.assert_array_equal(results[4, "all-ul"].rounds["duration_s"],
                                  results[16, "all-ul"].rounds["duration_s"])


def test_draft_length_greedy_reaches_the_best_fixed_gamma():
    devices = 4
    out = run("draft_length.py", rounds=120, devices=devices, max_gamma=8)
    fixed = out["fixed"]
    for gamma, s in fixed.items():
        assert s["mean_draft_len"] == gamma
    # gamma = 0: no drafts, no rejections; each device gets the target's one token per round of
    # T_ver0 + K T_ver1 (the scenario's verification keys)
    server = ms.load_scenario(None).server
    verify_s = 1e-3 * (server.verify_fixed_ms + devices * server.verify_per_device_ms)
    assert fixed[0]["goodput_tps"] == pytest.approx(devices / verify_s, rel=1e-12)
    # greedy searches each round over every draft vector, the fixed ones included, on the same
    # draws: at least the best fixed gamma, up to that goodput's sampling error (its 95% CI)
    best = max(fixed.values(), key=lambda s: s["goodput_tps"])
    assert out["greedy"]["goodput_tps"] >= best["goodput_ci95"][0]


def test_fading_autocorrelation_follows_the_theory():
    # 32 devices: a round of about 0.36 s, so 2 pi f_D D is about 1.1 at f_D = 0.5 Hz
    rounds, devices, doppler = 1000, 32, 0.5
    out = run("fading_over_time.py", rounds=rounds, devices=devices, doppler_hz=doppler)
    period = out["jakes"]["period_s"]
    for f in out.values():   # every draft accepted: every round lasts the same time
        durations = f["result"].rounds["duration_s"]
        assert np.ptp(durations) <= 1e-9 * period and f["period_s"] == pytest.approx(period)
    rho = j0(2 * np.pi * doppler * period)
    lag_k = np.arange(1, rounds)
    theory = {"jakes": j0(2 * np.pi * doppler * lag_k * period) ** 2,   # |h|^2: |corr(h)|^2
              "gauss-markov": rho ** (2 * lag_k)}
    lags = sorted(out["jakes"]["acf"])
    # the K devices' processes are independent, so their per-device estimates give a t
    # interval (K - 1 df), at 0.001 over all the lags and both models (Bonferroni); plus the
    # sample autocorrelation's own bias of order (lag + 1 + 2 sum_k |rho_k|) / N (the mean
    # taken out, the sums over N - lag pairs); plus, for Jakes, the 0.52 / M bound of its
    # M = 64 sinusoids on the |h|^2 correlation (docs/components/fading.md)
    q = stats.t.ppf(1 - 0.001 / (2 * 2 * len(lags)), devices - 1)
    tol = {}
    for fading, acf in theory.items():
        bias = (1 + 2 * np.abs(acf).sum()) / rounds
        model = 0.52 / 64 if fading == "jakes" else 0.0
        for lag in lags:
            est = out[fading]["acf"][lag]
            tol[fading, lag] = (q * est.std(ddof=1) / math.sqrt(devices) + bias + lag / rounds
                                + model)
            assert abs(est.mean() - acf[lag - 1]) <= tol[fading, lag], (fading, lag)
    # the test tells the two apart: at some lag their theories differ by more than both
    # tolerances together
    assert any(abs(theory["jakes"][lag - 1] - theory["gauss-markov"][lag - 1])
               > tol["jakes", lag] + tol["gauss-markov", lag] for lag in lags)


def test_queueing_matches_pollaczek_khinchine():
    rows = run("queueing.py", duration_s=300.0, loads=(0.2, 0.5))
    for row in rows:
        req = row["requests"]
        assert req["stable"] and req["completed"] > 40
        lat = req["latency_s"]
        # the run's batch-means interval under-covers at a hundred-odd requests (87% measured,
        # docs/guide/outputs.md: its half-width h is then about 1.5 true standard errors), so
        # 3 h is about 4.5 of them
        half = (lat["ci95"][1] - lat["ci95"][0]) / 2
        assert abs(lat["mean"] - row["pk_s"]) <= 3 * half, row
        # no request has its first token before its first round (tau = 50 ms) ends
        assert req["slo"]["ttft_s"]["p50"] >= 0.05 * (1 - 1e-9)


def test_many_cells_see_interference_a_lone_cell_does_not():
    module = runpy.run_path(str(FOLDER / "many_cells.py"), run_name="example")
    with redirect_stdout(io.StringIO()):
        runs = module["main"](rounds=40)
    for column in ("gain_ul", "gain_dl"):
        # each estimate's standard error is exact for the fading part (Var ln Exp(1) = pi^2/6)
        lone = module["interference_db"](runs["single"], column)
        assert list(lone) == [0]
        assert abs(lone[0][0]) <= 4 * lone[0][1]   # no interference: 0 dB within 4 SE
        cells = module["interference_db"](runs["cells"], column)
        assert sorted(cells) == list(range(7))
        for db, se in cells.values():   # reuse 1 at 500 m: every cell hears its neighbours
            assert db > 4 * se


def test_learning_agent_regret_is_exact_and_the_price_is_fixed_gamma():
    out = run("learning_agent.py", rounds=30, devices=3)
    if importlib.util.find_spec("gymnasium") is None:
        assert out is None
        return
    for name, (goodput, regrets) in out["agents"].items():
        assert len(regrets) == 30 and goodput > 0
        for r in regrets:   # 5^3 vectors: the best is found by exhaustive search, never beaten
            assert r["method"] == "exhaustive"
            assert r["regret"] >= -1e-9 * r["best"]
    # the reference price is the goodput of the scenario's fixed draft lengths on the same
    # seed and rounds (docs/guide/learning-agents.md): the fixed controller's own episode
    assert out["agents"]["fixed gamma=4"][0] == pytest.approx(out["price"], rel=1e-9)


def test_antennas_over_time_see_the_array_gain_and_span_blocks():
    runs = run("antennas_over_time.py", rounds=100, devices=6, antennas=(1, 3))
    for (m, scheme, blocks), r in runs.items():
        # rounds outlast a 5 ms block, so every decision reads a new i.i.d. block: the array
        # gains over the path loss are n independent Gamma(M, 1) draws (mean M, variance M)
        rows = r.device_rounds
        x = rows["gain_ul"] / r.devices["pathloss_gain"][rows["device"]]
        assert abs(x.mean() - m) < 5 * math.sqrt(m / x.size), (m, scheme, blocks)
        spanned = (r.summary.get("delays") or {}).get("over_several_blocks", 0)
        assert (spanned > 0) == (blocks is not None), (m, scheme, blocks)


def test_estimated_channel_decides_on_the_estimates_array_gain():
    runs = run("estimated_channel.py", rounds=150, devices=6)
    for (link, m, s2), r in runs.items():
        # the decisions see ||h_hat||^2 = (1 - s2) Gamma(M, 1) for i.i.d. Rayleigh elements: n
        # draws of mean M (1 - s2) and variance M (1 - s2)^2 (one a device and round)
        rows = r.device_rounds
        x = rows["gain_ul"] / r.devices["pathloss_gain"][rows["device"]]
        assert abs(x.mean() - m * (1 - s2)) < 5 * (1 - s2) * math.sqrt(m / x.size), (link, m, s2)
        assert ("harq_transmissions" in rows) == (link == "mcs")
    # exact CSI on one seed: the same outcomes whatever the link
    np.testing.assert_array_equal(runs["shannon", 4, 0.0].device_rounds["rejected"],
                                  runs["mcs", 4, 0.0].device_rounds["rejected"])


def test_line_of_sight_zf_keeps_what_the_array_pattern_leaves():
    """Two devices at 500 m without fading, both on one ZF DL set: each stream keeps
    1 - |s_1^H s_2|^2 / M^2 of its array gain, the Dirichlet kernel of the sines of their
    bearings (written here, M = 4, d = 0.5), and a stream that keeps more is sent faster."""
    runs = run("line_of_sight.py", rounds=80, bearings=(5, 15, 30))
    times = []
    for phi, r in runs.items():
        rows = r.device_rounds
        sent = rows["rejected"].astype(bool)
        x = math.pi * 0.5 * math.sin(math.radians(phi))
        want = 1 - (math.sin(4 * x) / (4 * math.sin(x))) ** 2
        both = np.isin(rows["round"], [k for k in np.unique(rows["round"][sent])
                                       if np.count_nonzero(sent & (rows["round"] == k)) == 2])
        assert np.count_nonzero(both) >= 4   # pairs: rounds where both were rejected
        np.testing.assert_allclose(rows["gain_eff"][both] / rows["gain_dl"][both], want,
                                   rtol=1e-9)
        times.append(rows["delay_s"][both].max())
    assert times[0] > times[1] > times[2]   # 5, 15, 30 degrees: 0.09, 0.63, 1 kept
