"""Acceptance models (issue 11): trace replay, closed forms of beta and markov, the i.i.d. draws,
common random numbers, the learned belief, the fits, and bad input."""
import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

import multispin_sim as ms
from multispin_sim.cli import main
from multispin_sim.model import acceptance as acc
from multispin_sim.model import acceptance_fit as fit
from multispin_sim.model.beliefs import FilteredBelief, LearnedBelief, OracleBelief
from multispin_sim.model.markov import markov_moments
from multispin_sim.engine.reading import read_trace, shipped_trace_path
from multispin_sim.model.acceptance_trace import (UNKNOWN, Answer, reconstruct_draft_lengths,
                                                  select_answers, steps_to_bits)

Z = 4.0  # half-width of the intervals in standard errors (fixed seeds; about 1 in 16,000)


def shipped_rows():
    with gzip.open(shipped_trace_path(), "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def walk(model, gammas, active=None):
    """Accepted counts of device 0 of a one-device model for a sequence of draft lengths."""
    out = []
    for g in gammas:
        out.append(int(model.accepted(np.array([g]), active)[0]))
    return out


# --- trace replay is exact -----------------------------------------------------------------------

def test_shipped_trace_is_package_data_and_drafts_reconstruct_consistently():
    rows = shipped_rows()
    assert len(rows) == 579 and sum(len(r["accept_lengths"]) for r in rows) == 44495
    assert all(reconstruct_draft_lengths(r["accept_lengths"])[1] for r in rows)


def test_replay_with_the_trace_draft_lengths_reproduces_its_steps():
    """Replaying each answer with the draft lengths it was decoded with gives back the file's
    accept lengths, step for step, whatever the unknown bonus positions are drawn as."""
    rows = [r for r in shipped_rows() if r["accept_lengths"]][:40]
    for seed, r in enumerate(rows):
        steps = r["accept_lengths"]
        drafts, _ = reconstruct_draft_lengths(steps)
        ans = Answer(bits=steps_to_bits(steps, drafts))
        model = acc.TraceAcceptance(np.array([0.5]), np.random.default_rng(seed), answers=[ans],
                                    next="repeat")
        got = walk(model, drafts)
        assert [a + 1 for a in got] == steps


def test_replay_with_unlimited_draft_gives_the_runs_and_fixed_gamma_the_answer_length():
    rng = np.random.default_rng(3)
    for _ in range(30):
        bits = (rng.random(rng.integers(1, 300)) < 0.7).astype(np.int8)
        bits[-1] = 0
        # gamma = infinity: one step per disagreement, of length (ones before it) + 1
        zeros = np.flatnonzero(bits == 0)
        want = np.diff(np.concatenate([[-1], zeros])) - 1
        assert fit.replay(bits, None).tolist() == want.tolist()
        for g in (1, 3, 8):
            assert int((fit.replay(bits, g) + 1).sum()) == len(bits)
            model = acc.TraceAcceptance(np.array([0.5]), np.random.default_rng(1),
                                        answers=[Answer(bits=bits)], next="repeat")
            steps = fit.replay(bits, g)
            assert walk(model, [g] * len(steps)) == steps.tolist()
            assert int(model.positions_walked[0]) == len(bits)   # ends exactly at the answer end


def test_a_csv_trace_with_a_byte_order_mark_reads_as_the_plain_file(tmp_path):
    text = "answer,agree\na,1\na,0\nb,1\n"
    (tmp_path / "plain.csv").write_text(text, encoding="utf-8")
    (tmp_path / "marked.csv").write_text(text, encoding="utf-8-sig")   # a spreadsheet's export
    plain, marked = read_trace(tmp_path / "plain.csv"), read_trace(tmp_path / "marked.csv")
    assert [a.bits.tolist() for a in marked] == [a.bits.tolist() for a in plain] == [[1, 0], [1]]


def test_hand_made_sequence(tmp_path):
    path = tmp_path / "hand.csv"
    path.write_text("answer,agree\na,1\na,1\na,0\na,1\na,1\na,1\na,1\na,0\nb,0\nb,1\nb,1\n")
    answers = read_trace(path)
    assert [len(a.bits) for a in answers] == [8, 3]
    model = acc.TraceAcceptance(np.array([0.5]), np.random.default_rng(0), answers=answers[:1],
                                next="repeat")
    # gamma 3: positions 0-2 -> 2 accepted (rejected at 2); 3-6 -> 3 accepted (full, bonus at 6);
    # position 7 -> 0 (rejected); then the answer again
    assert walk(model, [3, 3, 3, 3]) == [2, 3, 0, 2]
    model = acc.TraceAcceptance(np.array([0.5]), np.random.default_rng(0), answers=answers[1:],
                                next="repeat")
    # answer b = 0 1 1: gamma 5 -> 0 (rejected), then 1 (the answer's end stops the run)
    assert walk(model, [5, 5, 5]) == [0, 1, 0]
    # an inactive device does not move
    model = acc.TraceAcceptance(np.array([0.5]), np.random.default_rng(0), answers=answers[1:],
                                next="repeat")
    assert walk(model, [5], active=np.array([False])) == [0]
    assert walk(model, [5]) == [0]


# --- closed forms ---------------------------------------------------------------------------------

def _batches(x, n):
    return np.array_split(np.asarray(x, dtype=float), n)


def test_markov_stationary_rate_and_lag1_autocorrelation():
    e, h, p, q = 0.9, 0.3, 0.05, 0.1
    model = acc.MarkovAcceptance(np.array([0.5]), np.random.default_rng(11), easy_rate=e,
                                 hard_rate=h, easy_to_hard=p, hard_to_easy=q)
    x = np.concatenate([model.segment(0, model.device_rngs[0])[0] for _ in range(200)])
    x = x.astype(float)
    pi = q / (p + q)
    mean = pi * e + (1 - pi) * h
    lam = 1 - p - q
    rho = pi * (1 - pi) * (e - h) ** 2 * lam / (mean * (1 - mean))
    m, rho_hat = markov_moments(e, h, p, q)
    assert m == pytest.approx(mean) and rho_hat == pytest.approx(rho)
    # batch means give the standard errors of a correlated sequence
    bm = [b.mean() for b in _batches(x, 100)]
    assert abs(np.mean(bm) - mean) < Z * np.std(bm, ddof=1) / 10
    r1 = [np.corrcoef(b[:-1], b[1:])[0, 1] for b in _batches(x, 100)]
    assert abs(np.mean(r1) - rho) < Z * np.std(r1, ddof=1) / 10 + 0.005  # + batch-edge bias


def markov_expected_tokens(easy, hard, easy_to_hard, hard_to_easy, gamma):
    """E[N] per round of a device drafting gamma under the Gilbert-Elliott chain, in the long
    run. A round spans A + 1 positions, each followed by one step of the chain: j agreements
    and a disagreement ((DP)^j (I - D) P), or gamma agreements and the bonus position
    ((DP)^gamma P); the state at a round's start has the stationary law of that round-to-round
    chain."""
    d = np.diag([easy, hard])
    p = np.array([[1 - easy_to_hard, easy_to_hard], [hard_to_easy, 1 - hard_to_easy]])
    eye = np.eye(2)
    powers = [np.linalg.matrix_power(d @ p, j) for j in range(gamma + 1)]
    rounds = sum(powers[j] @ (eye - d) @ p for j in range(gamma)) + powers[gamma] @ p
    w, v = np.linalg.eig(rounds.T)
    start = np.real(v[:, np.argmin(abs(w - 1))])
    start /= start.sum()
    pmf = [start @ powers[j] @ (eye - d) @ np.ones(2) for j in range(gamma)]
    pmf.append(start @ powers[gamma] @ np.ones(2))
    return float(np.dot(pmf, np.arange(gamma + 1) + 1))


def test_markov_tokens_per_round_in_the_engine():
    """Fixed draft lengths 2 and 6 under Markov acceptance: the engine's tokens per round match
    the chain's exact E[N] (batch means over rounds: the rounds of a device are correlated)."""
    chain = (0.92, 0.35, 0.04, 0.08)
    gammas = [2, 6]
    res = ms.simulate(ms.load_scenario(None, overrides={
        "devices.count": 2, "acceptance.model": "markov", "acceptance.easy_rate": chain[0],
        "acceptance.hard_rate": chain[1], "acceptance.easy_to_hard": chain[2],
        "acceptance.hard_to_easy": chain[3], "run.rounds": 60000, "seed": 3,
        "devices.overrides": {i: {"draft_length": g} for i, g in enumerate(gammas)}}))
    d = res.device_rounds
    for k, g in enumerate(gammas):
        n = d["tokens"][d["device"] == k].astype(float)
        batches = n[:n.size // 40 * 40].reshape(40, -1).mean(axis=1)
        half = Z * batches.std(ddof=1) / math.sqrt(40)
        assert abs(n.mean() - markov_expected_tokens(*chain, g)) < half
        # a chain that stays in its easy state would give more tokens: the test can tell
        assert abs(n.mean() - markov_expected_tokens(0.92, 0.92, 0.04, 0.08, g)) > half


@pytest.mark.parametrize("protocol, cap", [("synchronous", True), ("synchronous", False),
                                           ("asynchronous", True)])
def test_beta_request_sessions_finish_in_one_round_with_the_beta_moment(protocol, cap):
    """session: request, requests of gamma + 1 tokens: a request ends in its first round iff all
    gamma drafts are accepted, on a fresh alpha ~ Beta(m kappa, (1 - m) kappa) per request, so
    P(one round) = E[p^gamma] = prod_i (a + i) / (a + b + i); an i.i.d. alpha = m would give
    m^gamma (the test tells them apart). Whatever the protocol, and whether or not drafts are
    capped to what the request still needs."""
    m, kappa, g = 0.7, 4.0, 4
    res = ms.simulate(ms.load_scenario(None, overrides={
        "serving.protocol": protocol, "workload.cap_draft_to_remaining": cap,
        "devices.count": 4, "acceptance.model": "beta", "acceptance.mean": m,
        "acceptance.concentration": kappa, "acceptance.session": "request",
        "workload.arrivals": "poisson", "workload.rate_per_s": 2.0, "workload.length": "fixed",
        "workload.length_tokens": g + 1, "policy.draft_length": g, "run.max_time_s": 700,
        "run.rounds": 10**7, "seed": 5}))
    q = res.requests
    one = (q["rounds"][np.isfinite(q["completion_s"])] == 1).astype(float)
    a, b = m * kappa, (1 - m) * kappa
    p_full = math.prod((a + i) / (a + b + i) for i in range(g))
    half = Z * math.sqrt(p_full * (1 - p_full) / one.size)
    assert abs(one.mean() - p_full) < half
    assert abs(one.mean() - m**g) > half


def test_beta_mean_and_overdispersion_of_session_rates():
    m, kappa, n = 0.8, 5.0, 40
    model = acc.BetaAcceptance(np.array([m]), np.random.default_rng(5), concentration=kappa,
                               session_tokens=n)
    blocks = [model.segment(0, model.device_rngs[0])[0] for _ in range(60)]
    rates = np.concatenate([b.reshape(-1, n).mean(1) for b in blocks])[:6000]
    var = m * (1 - m) * (1 / (kappa + 1) + kappa / ((kappa + 1) * n))
    assert abs(rates.mean() - m) < Z * math.sqrt(var / len(rates))
    bv = [b.var(ddof=1) for b in _batches(rates, 60)]
    assert abs(np.mean(bv) - var) < Z * np.std(bv, ddof=1) / math.sqrt(60)
    assert var > 2 * m * (1 - m) / n   # overdispersed against the binomial


# --- iid is the paper's draws; common random numbers -------------------------------------------

def test_iid_component_gives_the_inversion_draws():
    alpha = np.array([0.5, 0.8, 0.93, 1.0])
    model = acc.IIDAcceptance(alpha, np.random.default_rng(9), block=16)
    u = 1.0 - np.random.default_rng(9).random((48, 4))
    with np.errstate(divide="ignore"):
        runs = np.where(alpha >= 1, np.inf, np.floor(np.log(u) / np.log(alpha)))
    gamma = np.array([4, 2, 7, 3])
    got = np.array([model.accepted(gamma) for _ in range(48)])
    assert np.array_equal(got, np.minimum(runs, gamma).astype(np.int64))


def _observed(model, gammas, k):
    """{(device, position): agreement} seen by a model under a sequence of draft lengths."""
    seen = {}
    for g in gammas:
        pos = model.positions_walked.copy()
        a = model.accepted(g)
        for i in range(k):
            for j in range(a[i]):
                seen[(i, pos[i] + j)] = 1
            if a[i] < g[i]:
                seen[(i, pos[i] + a[i])] = 0
    return seen


@pytest.mark.parametrize("name", ["beta", "markov", "trace"])
def test_two_policies_see_the_same_agreements(name):
    k = 4
    kwargs = {"answers": select_answers(read_trace(shipped_trace_path()),
                                        benchmark="spec_bench")} if name == "trace" else {}
    rng = np.random.default_rng(0)
    g1 = [rng.integers(0, 9, k) for _ in range(300)]
    g2 = [rng.integers(0, 9, k) for _ in range(300)]
    s1 = _observed(acc.make_acceptance_model(name, np.full(k, 0.7), np.random.default_rng(1),
                                             **kwargs), g1, k)
    s2 = _observed(acc.make_acceptance_model(name, np.full(k, 0.7), np.random.default_rng(1),
                                             **kwargs), g2, k)
    common = set(s1) & set(s2)
    assert len(common) > 300
    assert all(s1[p] == s2[p] for p in common)


@pytest.mark.parametrize("name", ["beta", "markov", "trace"])
def test_a_devices_agreements_do_not_depend_on_the_number_of_devices(name):
    """Device 0 of K = 2 and of K = 5 devices (same seed, same draft lengths for device 0):
    the same accepted counts and true rates round after round, the trace's hidden (bonus)
    positions included (they were drawn from child K + i of the acceptance stream, so device
    0's changed with K)."""
    kwargs = {"answers": select_answers(read_trace(shipped_trace_path()),
                                        benchmark="spec_bench")} if name == "trace" else {}
    gammas = np.random.default_rng(6).integers(0, 13, 3000)
    seen = {}
    for k in (2, 5):
        model = acc.make_acceptance_model(name, np.full(k, 0.7), np.random.default_rng(3),
                                          **kwargs)
        rows = []
        for g in gammas:
            rate = float(model.true_rate()[0])
            rows.append((int(model.accepted(np.full(k, g))[0]), rate))
        seen[k] = rows, int(model.positions_walked[0])
    assert seen[2] == seen[5]
    # thousands of positions (the trace's: about 1,000 of them hidden bonus positions)
    assert seen[2][1] > 5000


@pytest.mark.parametrize("name", ["beta", "markov", "trace"])
def test_the_window_refills_are_seamless(name):
    """A device's sequence is held in a window of positions refilled as it is walked (16,384
    per device: a run reaches the first refill after thousands of rounds). With a window of
    256 the refills come every few dozen rounds (ten at least); every round's accepted counts and true rates,
    new requests included, are those of the default window."""
    k = 3
    kwargs = {"answers": select_answers(read_trace(shipped_trace_path()),
                                        benchmark="spec_bench")} if name == "trace" else {}
    big = acc.make_acceptance_model(name, np.full(k, 0.7), np.random.default_rng(4), **kwargs)
    cls = type(big)
    small = type("SmallWindow", (cls,), {"window": 256})(np.full(k, 0.7),
                                                          np.random.default_rng(4), **kwargs)
    assert small.window == 256 and big.window == 16384
    rng = np.random.default_rng(5)
    for _ in range(1500):
        gamma = rng.integers(0, 13, k)
        active = rng.random(k) < 0.9
        gamma[~active] = 0
        np.testing.assert_array_equal(small.true_rate(), big.true_rate())
        np.testing.assert_array_equal(small.accepted(gamma, active), big.accepted(gamma, active))
        done = rng.random(k) < 0.05
        if done.any():
            small.new_request(done)
            big.new_request(done)
    np.testing.assert_array_equal(small.positions_walked, big.positions_walked)
    assert small.positions_walked.min() > 10 * 256   # ten refills at least

def test_request_sessions_under_markov_acceptance_run(tmp_path):
    """``acceptance.session: request`` with the markov model (which has no sessions) on a
    queueing workload: each finished request used to send the walk looking for a segment start
    that never comes (the run hung). Run in a child process with a time limit, so that a
    regression fails instead of hanging the suite."""
    import subprocess
    import sys

    code = ("import multispin_sim as ms; r = ms.simulate(ms.load_scenario(None, overrides={"
            "'acceptance.model': 'markov', 'acceptance.session': 'request', "
            "'workload.arrivals': 'poisson', 'workload.rate_per_s': 0.5, "
            "'workload.length_tokens': 20, 'devices.count': 3, 'run.rounds': 300}));"
            "print(r.summary['rounds'], r.summary['requests']['completed'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    assert int(out[0]) == 300 and int(out[1]) > 10

def test_crn_in_the_engine_trace_outcomes_do_not_depend_on_the_mode(tmp_path):
    runs = {}
    for mode in ("optimal", "all-dl"):
        sc = ms.load_scenario("scenarios/default.yaml", overrides={
            "run.rounds": 60, "policy.mode": mode, "acceptance.model": "trace",
            "acceptance.trace_benchmark": "spec_bench"})
        runs[mode] = ms.simulate(sc, out=tmp_path / mode).device_rounds
    assert np.array_equal(runs["optimal"]["accepted"], runs["all-dl"]["accepted"])


def test_the_summary_names_the_shipped_trace_by_its_place_in_the_package(tmp_path):
    """Two installs of the package write the same summary: the shipped trace is named by its
    place in the package, not by where this copy lives; a user's file as the scenario gives it."""
    sc = ms.load_scenario("scenarios/default.yaml", overrides={
        "run.rounds": 5, "acceptance.model": "trace"})
    source = ms.simulate(sc, out=tmp_path / "a").summary["acceptance"]["parameters"]["source"]
    assert source == "multispin_sim/data/specbench-sps.jsonl.gz"
    assert str(Path(ms.__file__).parent) not in source


# --- outputs, learned belief ------------------------------------------------------------------

def test_outputs_realised_agreement_and_summary(tmp_path):
    sc = ms.load_scenario("scenarios/default.yaml", overrides={
        "run.rounds": 400, "acceptance.mean": 0.7})
    res = ms.simulate(sc, out=tmp_path / "o")
    d = res.devices
    assert np.all(d["alpha"] == 0.7)
    s = res.summary["acceptance"]
    assert s["model"] == "iid" and s["belief"] == "oracle"
    # i.i.d.: each tested position agrees with probability alpha (the run of A + rejection is
    # the MLE's sufficient statistic); interval from its Fisher information
    n = s["verified_positions"]
    assert abs(s["realised_agreement_rate"] - 0.7) < Z * math.sqrt(0.7 * 0.3 / n)
    assert np.allclose(d["agreement_rate"], d["agreed_positions"] / d["verified_positions"])


def test_learned_belief_converges_for_an_iid_device():
    alpha = np.array([0.8, 0.6])
    model = acc.IIDAcceptance(alpha, np.random.default_rng(21))
    belief = LearnedBelief(model, prior_mean=0.3, prior_weight=10)
    gamma = np.array([4, 4])
    for _ in range(3000):
        a = model.accepted(gamma)
        belief.observe(a, a < gamma)
    n = belief.agree + belief.disagree
    # the agreement rate per tested position has variance alpha (1 - alpha) / n (Fisher
    # information of the truncated geometric); the prior adds a bias of at most 10 / n
    half = Z * np.sqrt(alpha * (1 - alpha) / n) + 10 / n
    assert np.all(np.abs(belief.alpha() - alpha) < half)


def test_controller_with_learned_belief_reaches_oracle_goodput(tmp_path):
    base = {"devices.count": 6, "policy.draft": "uniform", "policy.saa_samples": 100,
            "run.rounds": 300, "seed": 4}
    out = {}
    for belief in ("oracle", "learned"):
        sc = ms.load_scenario("scenarios/default.yaml", overrides=dict(
            base, **{"acceptance.belief": belief, "acceptance.belief_prior_mean": 0.5}))
        out[belief] = ms.simulate(sc, out=tmp_path / belief)
    warm = 50
    goodput = {}
    for name, res in out.items():
        r = res.rounds
        sel = r["round"] >= warm
        goodput[name] = r["tokens"][sel].sum() / r["duration_s"][sel].sum()
    # same seed: the same i.i.d. uniforms and fading (common random numbers)
    assert goodput["learned"] == pytest.approx(goodput["oracle"], rel=0.03)


# --- fits recover known parameters --------------------------------------------------------------

def test_fits_recover_generating_parameters():
    rng = np.random.default_rng(8)
    truth = {"easy_rate": 0.9, "hard_rate": 0.35, "easy_to_hard": 0.04, "hard_to_easy": 0.08}
    seqs = fit.synthetic("markov", truth, [400] * 120, rng)
    answers = [Answer(bits=b) for b in seqs]
    got = fit.fit_markov(answers)
    assert got["easy_rate"] == pytest.approx(0.9, abs=0.03)
    assert got["hard_rate"] == pytest.approx(0.35, abs=0.05)
    assert got["easy_to_hard"] == pytest.approx(0.04, rel=0.35)
    assert got["hard_to_easy"] == pytest.approx(0.08, rel=0.35)
    seqs = fit.synthetic("beta", {"mean": 0.7, "concentration": 8.0}, [200] * 400, rng)
    b = fit.fit_beta([Answer(bits=s) for s in seqs])
    assert b["mean"] == pytest.approx(0.7, abs=0.02)
    assert b["concentration"] == pytest.approx(8.0, rel=0.25)


@pytest.mark.parametrize("hidden", [False, True])
def test_validation_observes_the_models_as_the_trace_was_observed(hidden):
    """An i.i.d. trace, every position known (a 0/1 CSV) or decoded as Spec-Bench records it
    (bonus positions hidden): the synthetic traces of the fitted iid model are observed the same
    way, so its run lengths match the trace's (KS distance at sampling noise: about
    1.36 sqrt(2 / 7,000 runs) = 0.02 for one draw; the mean run within the trace's error).
    Observed the other way, KS is 0.25."""
    seqs = fit.synthetic("iid", {"mean": 0.65}, [200] * 100, np.random.default_rng(1))
    if hidden:
        seqs = [fit.hf_observe(b) for b in seqs]
    answers = [Answer(bits=np.asarray(b)) for b in seqs]
    rows = fit.validate(answers, {"iid": fit.fit_iid(answers)}, draws=4)
    assert rows["iid"]["ks_runs"] < 0.05
    runs = fit.run_lengths(seqs)   # the trace's mean run is known to runs.std() / sqrt(n)
    assert abs(rows["iid"]["mean_run"] - rows["trace"]["mean_run"]) < Z * runs.std() / math.sqrt(
        runs.size)


def test_acceptance_fit_reports_to_the_standard_output_of_each_call(tmp_path):
    """The report goes to whatever sys.stdout is when the command runs (two calls in one
    process, each under its own redirection)."""
    import contextlib
    import io

    path = tmp_path / "t.csv"
    seqs = fit.synthetic("iid", {"mean": 0.65}, [50] * 10, np.random.default_rng(1))
    path.write_text("answer,agree\n" + "".join(f"a{i},{int(x)}\n" for i, b in enumerate(seqs)
                                               for x in b))
    for _ in range(2):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main(["acceptance", "fit", str(path), "--draws", "2"]) == 0
        assert "| iid |" in buf.getvalue()


def test_hf_observe_hides_exactly_the_bonus_positions():
    bits = np.array([1, 1, 1, 1, 1, 1, 0, 1, 1, 0], dtype=np.int8)
    # d = 5: positions 0-4 agree (full), bonus at 5 hidden; d = 7: run from 6 is 0 -> rejected
    # at 6; d = 6: run 7-8 then the answer's end
    seen = fit.hf_observe(bits)
    assert seen.tolist() == [1, 1, 1, 1, 1, UNKNOWN, 0, 1, 1, 0]


# --- bad input ----------------------------------------------------------------------------

def _run(tmp_path, capsys, *sets):
    out = tmp_path / "out"
    args = ["run", "scenarios/default.yaml", "--rounds", "5", "--quiet", "--out", str(out)]
    for s in sets:
        args += ["--set", s]
    code = main(args)
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1
    assert not out.exists()
    return err


def test_bad_trace_files(tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"accept_lengths": [1, 2]}\n{"accept_lengths": [1, 0]}\n')
    csv = tmp_path / "bad.csv"
    csv.write_text("agree\n1\n0\nx\n")
    unknown = tmp_path / "unknown.csv"
    unknown.write_text("agree\n?\n?\n")
    t = "acceptance.model=trace"
    err = _run(tmp_path, capsys, t, f"acceptance.trace_file={tmp_path / 'missing.jsonl'}")
    assert "acceptance.trace_file" in err
    err = _run(tmp_path, capsys, t, f"acceptance.trace_file={empty}")
    assert "empty" in err
    err = _run(tmp_path, capsys, t, f"acceptance.trace_file={bad}")
    assert "bad.jsonl:2" in err
    err = _run(tmp_path, capsys, t, f"acceptance.trace_file={csv}")
    assert "bad.csv:4" in err
    err = _run(tmp_path, capsys, t, f"acceptance.trace_file={unknown}")
    assert "no usable steps" in err
    err = _run(tmp_path, capsys, t, "acceptance.trace_categories=[poetry]")
    assert "unknown category 'poetry'" in err
    err = _run(tmp_path, capsys, t, "acceptance.trace_categories=[translation]",
               "acceptance.trace_assign=task")
    assert "acceptance.trace_assign" in err and "gsm8k" in err
    err = _run(tmp_path, capsys, "acceptance.model=beta", "acceptance.concentration=0")
    assert "acceptance.concentration" in err
    err = _run(tmp_path, capsys, "acceptance.model=markov", "acceptance.hard_to_easy=1.2")
    assert "acceptance.hard_to_easy" in err
    yaml_out = tmp_path / "fit.yaml"
    assert main(["acceptance", "fit", str(bad), "--out", str(yaml_out)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not yaml_out.exists()
    assert main(["acceptance", "fit", str(tmp_path), "--out", str(yaml_out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "a folder, not a file" in err
    assert not yaml_out.exists()


def test_trace_assignment_by_task_and_oracle_rates():
    answers = select_answers(read_trace(shipped_trace_path()), benchmark="spec_bench")
    tasks = ("humaneval", "gsm8k", "mt-bench")
    model = acc.TraceAcceptance(np.full(3, 0.5), np.random.default_rng(2), answers=answers,
                                tasks=tasks, assign="task")
    for i, task in enumerate(tasks):
        cats = {answers[j].category for j in model.pools[i]}
        assert cats == set(acc.TASK_CATEGORIES[task]) & {a.category for a in answers}
        # the nominal rate is the pooled agreement rate of the pool's answers
        pool = [answers[j] for j in model.pools[i]]
        assert model.nominal[i] == pytest.approx(sum(a.agreements for a in pool)
                                                 / sum(a.known for a in pool))
    # the oracle reports the current answer's own agreement rate
    belief = OracleBelief(model)
    rates = {a.agreements / a.known for a in answers}
    for _ in range(50):
        assert all(any(abs(r - x) < 1e-12 for x in rates) for r in belief.alpha())
        model.accepted(np.full(3, 4))


def test_filtered_belief_is_calibrated_under_its_markov_chain():
    """The forward filter's prediction is the conditional probability that the next drafted
    position agrees: within bins of the prediction, the observed first-position agreement
    matches the mean prediction (outcome - prediction is a martingale difference)."""
    k, chain = 40, (0.9, 0.3, 0.05, 0.1)
    model = acc.MarkovAcceptance(np.full(k, 0.5), np.random.default_rng(31), easy_rate=chain[0],
                                 hard_rate=chain[1], easy_to_hard=chain[2],
                                 hard_to_easy=chain[3])
    belief = FilteredBelief(model, markov=chain, max_draft=8)
    gamma = np.full(k, 4)
    pred, seen = [], []
    for _ in range(1500):
        b = belief.alpha()
        a = model.accepted(gamma)
        rejected = a < gamma
        pred.append(b)
        seen.append(a >= 1)
        belief.observe(a, rejected)
    pred, seen = np.concatenate(pred), np.concatenate(seen).astype(float)
    assert pred.std() > 0.1          # it does tell the states apart
    edges = np.quantile(pred, np.linspace(0, 1, 6))
    for lo, hi in zip(edges[:-1], edges[1:]):
        sel = (pred >= lo) & (pred <= hi)
        half = Z * math.sqrt(np.sum(pred[sel] * (1 - pred[sel]))) / sel.sum()
        assert abs(seen[sel].mean() - pred[sel].mean()) < half


def test_a_new_request_moves_the_device_to_its_next_segment(tmp_path):
    a = Answer(bits=np.array([1, 1, 0, 1, 1, 1, 1, 0], dtype=np.int8))
    b = Answer(bits=np.array([0, 1, 1], dtype=np.int8))
    model = acc.TraceAcceptance(np.array([0.5]), np.random.default_rng(0), answers=[a, b],
                                next="cycle")
    first = walk(model, [1])[0]               # starts in a or b (random start of the cycle)
    pos0 = int(model.positions_walked[0])
    model.new_request(np.array([True]))
    jumped = int(model.positions_walked[0]) - pos0
    # a: after 2 positions (1 accepted + bonus) 6 are left; b: after 1 position 2 are left
    assert (first, jumped) in {(1, 6), (0, 2)}
    # at a segment start already: no move
    pos1 = int(model.positions_walked[0])
    model.new_request(np.array([True]))
    assert int(model.positions_walked[0]) == pos1
    # beta sessions: a new request starts a new session (its position is a multiple of T)
    beta = acc.BetaAcceptance(np.array([0.7]), np.random.default_rng(1), session_tokens=16)
    walk(beta, [3, 3])
    beta.new_request(np.array([True]))
    assert int(beta.positions_walked[0]) % 16 == 0
    # in the engine: a queueing run with per-request sessions runs and keeps its totals
    sc = ms.load_scenario("scenarios/light-load.yaml", overrides={
        "run.max_time_s": 100, "acceptance.model": "beta", "acceptance.session": "request",
        "acceptance.mean": 0.7})
    res = ms.simulate(sc, out=tmp_path / "q")
    assert res.summary["acceptance"]["verified_positions"] > 0
