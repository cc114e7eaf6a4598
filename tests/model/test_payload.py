"""Payload formats and the token-level speculative sampler, against independent oracles.

Oracles: hand-computed bit counts; chi-square goodness of fit of sampled output tokens against
p (exact sampling) or against the biased distribution o enumerated by brute force over the
(draft, accept) events; binomial confidence intervals for acceptance rates; exhaustive search
over every (direction, menu entry) assignment for the 'fidelity' policy.
"""
import itertools
import json
import math

import numpy as np
import pytest
from scipy import stats

from multispin_sim.cli import main
from multispin_sim.engine.tokens import TokenServer
from multispin_sim.model import payload as pf
from multispin_sim.model.reactive import DL, UL, ReactiveProblem, dl_delay_equalising
from multispin_sim.model.system import System
from multispin_sim.model.tokens import PayloadModel, ZipfPairs, dl_output_tv, residual
from multispin_sim.policies import make_reactive_policy
from multispin_sim.policies.fidelity import FidelitySplit

V_SMALL = 12
P_MIN = 1e-3  # chi-square tests: fail only below this p-value (fixed seeds: deterministic)


def small_pair(seed=3, v=V_SMALL):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(v, 0.7))
    q = 0.6 * p[rng.permutation(v)] + 0.4 * rng.dirichlet(np.ones(v))
    return p, q / q.sum()


def sample_index(cdf, u):
    """Inverse-CDF draws: the first index with cdf > u * total (zero-mass entries never)."""
    return np.minimum(np.searchsorted(cdf, u * cdf[-1], side="right"), cdf.shape[-1] - 1)


def speculative_step(rng, p, q_d, p_tilde=None, n=1):
    """``n`` independent positions of real speculative sampling on one pair (vectors of V):
    (the output token of each, whether its draft was accepted), the reference the simulator's
    tables are checked against."""
    p, q_d = np.asarray(p, float), np.asarray(q_d, float)
    x = sample_index(np.cumsum(q_d), rng.random(n))
    accepted = rng.random(n) * q_d[x] < p[x]
    corr = sample_index(np.cumsum(residual(p if p_tilde is None else p_tilde, q_d)), rng.random(n))
    return np.where(accepted, x, corr), accepted


def brute_output(p, q_d, p_res):
    """Output distribution of one position, by enumerating (draft x, accept or not)."""
    v = len(p)
    o = np.zeros(v)
    reject_mass = 0.0
    for x in range(v):
        if q_d[x] == 0:
            continue
        a = min(1.0, p[x] / q_d[x])
        o[x] += q_d[x] * a
        reject_mass += q_d[x] * (1 - a)
    d = np.array([max(p_res[y] - q_d[y], 0.0) for y in range(v)])
    return o + reject_mass * d / d.sum()


def chi2_pvalue(tokens, expected):
    counts = np.bincount(tokens, minlength=len(expected))
    keep = expected > 0
    assert counts[~keep].sum() == 0  # never a token of probability 0
    return stats.chisquare(counts[keep], expected[keep] * len(tokens)).pvalue


# ---------------------------------------------------------------------------- bits


def test_bits_of_each_format_hand_computed():
    v = 151_665  # 18 index bits
    assert pf.make_format("dense", vocab=v).bits() == 151_665 * 16
    assert pf.make_format("topk", vocab=v, effective_vocab=1024).bits() == 1024 * 34 == 34_816
    assert pf.make_format("topk", vocab=1000, effective_vocab=64).bits() == 64 * (10 + 16)
    assert pf.make_format("quantized", vocab=10, effective_vocab="dense", quant_bits=4).bits() == 72
    assert pf.make_format("quantized", vocab=10, effective_vocab=3, quant_bits=4).bits() == 56
    x = np.array([0.5, 0.3, 0.1, 0.05, 0.05, 0, 0, 0, 0, 0])
    # top-p 0.85 keeps 3 entries: 4-bit count (ceil log2 11) + 3 (4 + 16)
    assert pf.make_format("topp", vocab=10, top_p=0.85).bits(x) == 64
    assert pf.make_format("topp", vocab=10, top_p=0.8).bits(x) == 4 + 2 * 20
    assert pf.make_format("topp", vocab=10, top_p=1.0).bits(x) == 4 + 5 * 20
    # today's formula is the default
    assert pf.payload_bits() == pf.make_format("topk").bits() == 34_816


def test_reconstructions_hand_computed():
    x = np.array([0.5, 0.3, 0.1, 0.05, 0.05])
    np.testing.assert_allclose(pf.make_format("topk", vocab=5, effective_vocab=2).compress(x),
                               [0.625, 0.375, 0, 0, 0])
    np.testing.assert_allclose(pf.make_format("topp", vocab=5, top_p=0.85).compress(x),
                               [5 / 9, 3 / 9, 1 / 9, 0, 0])
    # 2 bits: levels round(x / 0.5 * 3) = 3, 2, 1, 0, 0 -> values 0.5, 1/3, 1/6, 0, 0
    np.testing.assert_allclose(
        pf.make_format("quantized", vocab=5, effective_vocab="dense", quant_bits=2).compress(x),
        np.array([0.5, 1 / 3, 1 / 6, 0, 0]) / 1.0)
    np.testing.assert_allclose(pf.make_format("dense", vocab=5).compress(x), x)


def test_default_population_bits_unchanged():
    from multispin_sim.engine.population import build_population
    from multispin_sim.scenario import load_scenario

    sc = load_scenario({})
    pop = build_population(sc, np.random.default_rng(0))
    assert pop.system.payload_bits == 1024 * (18 + 16)
    sc = load_scenario({"payload": {"effective_vocab": "dense"}})
    assert build_population(sc, np.random.default_rng(0)).system.payload_bits == 151_665 * 16


# ---------------------------------------------------------------------------- sampler (model)


@pytest.mark.parametrize("direction", ["ul", "dl"])
def test_dense_payload_output_matches_p(direction):
    p, q = small_pair()
    rng = np.random.default_rng(11)
    dense = pf.make_format("dense", vocab=V_SMALL)
    # UL: the device drafts from q (dense) and the server corrects with p; DL: the device
    # corrects with the received (dense, exact) p
    p_res = None if direction == "ul" else dense.compress(p)
    tokens, _ = speculative_step(rng, p, dense.compress(q), p_res, n=40_000)
    assert chi2_pvalue(tokens, p) > P_MIN


def test_ul_topk_exact_and_acceptance_drops_to_sum_min_p_qtilde():
    p, q = small_pair()
    q_t = pf.make_format("topk", vocab=V_SMALL, effective_vocab=3).compress(q)
    beta = sum(min(a, b) for a, b in zip(p, q_t))
    assert beta < sum(min(a, b) for a, b in zip(p, q))  # this pair loses acceptance
    n = 40_000
    tokens, accepted = speculative_step(np.random.default_rng(12), p, q_t, None, n=n)
    assert chi2_pvalue(tokens, p) > P_MIN
    half = 4 * math.sqrt(beta * (1 - beta) / n)
    assert abs(accepted.mean() - beta) < half


def test_dl_topk_output_is_the_analytic_biased_distribution():
    p, q = small_pair()
    p_t = pf.make_format("topk", vocab=V_SMALL, effective_vocab=3).compress(p)
    o = brute_output(p, q, p_t)
    tv = 0.5 * np.abs(o - p).sum()
    assert tv > 0.01
    assert dl_output_tv(p, q, p_t) == pytest.approx(tv, abs=1e-12)
    tokens, _ = speculative_step(np.random.default_rng(13), p, q, p_t, n=40_000)
    assert chi2_pvalue(tokens, o) > P_MIN
    assert chi2_pvalue(tokens, p) < 1e-6  # and the bias is visible


# ---------------------------------------------------------------------------- generator


@pytest.mark.parametrize("alpha", [0.82, 0.9, 0.95])
def test_generator_calibrated_to_alpha_at_full_vocabulary(alpha):
    gen = ZipfPairs(151_665, 1.5)
    p, q = gen.pair(alpha)
    assert p.shape == (151_665,) and abs(p.sum() - 1) < 1e-12 and abs(q.sum() - 1) < 1e-12
    assert np.minimum(p, q).sum() == pytest.approx(alpha, abs=1e-9)


# ---------------------------------------------------------------------------- engine (server)


def make_system(alpha, k, bits=1000.0):
    return System(alpha=np.asarray(alpha, float), draft_latency_s=np.full(k, 0.01),
                  p_ul_w=np.full(k, 0.01), pathloss=np.full(k, 1e-9), p_dl_w=0.04,
                  payload_bits=bits, bandwidth_hz=1e7, n0=4e-21, verify_fixed_s=0.04,
                  verify_per_device_s=0.007)


def run_server(model, policy, rounds, gamma, seed=5):
    k = len(model.row0)
    system = make_system(model.alpha_effective, k)
    server = TokenServer(system, make_reactive_policy(policy), np.random.default_rng(1),
                         np.random.default_rng(2), model, np.random.default_rng(seed), gamma)
    firsts, rejected_at_first = [], []
    g = np.full(k, gamma)
    gains = np.full(k, 1e-9)
    for _ in range(rounds):
        acc, tok, rej = server.outcomes(g)
        if rej.any():
            server.decide(rej, gains, gains)
        firsts.append(server.first_tokens.copy())
        rejected_at_first.append(acc == 0)
    return server, np.concatenate(firsts), np.concatenate(rejected_at_first)


@pytest.mark.parametrize("policy", ["all-ul", "all-dl"])
def test_engine_dense_outputs_match_p(policy):
    p, q = small_pair()
    dense = pf.make_format("dense", vocab=V_SMALL)
    model = PayloadModel.from_pairs(p, q, 8, dense, [dense])
    server, firsts, _ = run_server(model, policy, 3000, 2)
    assert chi2_pvalue(firsts, p) > P_MIN
    s = server.summary()
    assert s["exact"] and s["dl_tv_mean"] == 0.0


def test_engine_topk_ul_exact_dl_biased_and_acceptance():
    p, q = small_pair()
    top = pf.make_format("topk", vocab=V_SMALL, effective_vocab=3)
    q_t = top.compress(q)
    beta = np.minimum(p, q_t).sum()
    model = PayloadModel.from_pairs(p, q, 8, top, [top])
    server, firsts, _ = run_server(model, "all-ul", 3000, 3)
    assert chi2_pvalue(firsts, p) > P_MIN
    s = server.summary()
    n = s["positions"]
    assert abs(s["acceptance_rate"] - beta) < 4 * math.sqrt(beta * (1 - beta) / n)
    assert s["exact"]
    server, firsts, _ = run_server(model, "all-dl", 3000, 3)
    o = brute_output(p, q_t, top.compress(p))
    assert chi2_pvalue(firsts, o) > P_MIN
    s = server.summary()
    assert not s["exact"]
    assert s["dl_tv_mean"] == pytest.approx(0.5 * np.abs(o - p).sum(), abs=1e-12)


def test_engine_realised_acceptance_equals_calibrated_alpha():
    alpha = np.array([0.82, 0.9, 0.95, 0.9])
    dense = pf.make_format("dense", vocab=151_665)
    model = PayloadModel.synthetic(alpha, dense, [dense], 151_665, 1.5)
    np.testing.assert_allclose(model.alpha_effective, alpha, atol=1e-9)
    server, _, _ = run_server(model, "optimal", 1500, 6)
    s = server.summary()
    a = s["acceptance_expected"]
    assert abs(s["acceptance_rate"] - a) < 4 * math.sqrt(a * (1 - a) / s["positions"])


# ---------------------------------------------------------------------------- fidelity policy


def exhaustive_fidelity(rej, g, ul_bits, dl_bits, dl_tv, budget, p_ul, p_dl, bw, n0):
    """min over every (UL, or DL with menu entry j with TV <= budget) per rejected device."""
    idx = np.flatnonzero(rej)
    b = bw / idx.size
    best = math.inf
    for choice in itertools.product(range(-1, dl_bits.shape[1]), repeat=idx.size):
        if any(c >= 0 and dl_tv[i, c] > budget for i, c in zip(idx, choice)):
            continue
        ul = [i for i, c in zip(idx, choice) if c < 0]
        dl = [(i, c) for i, c in zip(idx, choice) if c >= 0]
        t_ul = max((ul_bits[i] / (b * math.log2(1 + p_ul * g[i] / (n0 * b))) for i in ul),
                   default=0.0)
        t_dl = 0.0
        if dl:
            t_dl, _ = dl_delay_equalising(np.array([dl_bits[i, c] for i, c in dl]), b,
                                          np.array([g[i] for i, _ in dl]), p_dl, n0)
        best = min(best, max(t_ul, t_dl))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_fidelity_policy_equals_exhaustive_search(seed):
    rng = np.random.default_rng(seed)
    k = 5
    g = 1e-11 * rng.exponential(size=k)
    ul_bits = rng.choice([2000.0, 8000.0, 34816.0], size=k)
    dl_bits = np.tile([1000.0, 5000.0, 40000.0], (k, 1))
    dl_tv = np.sort(rng.uniform(0, 0.05, size=(k, 3)), axis=1)[:, ::-1].copy()
    dl_tv[:, 2] = 0.0
    budget = [0.0, 0.01, 0.03, 1.0][seed % 4]
    rej = np.ones(k, bool)
    rej[rng.integers(k)] = seed % 2 == 0
    problem = ReactiveProblem(rej, g, g, 0.01, 0.04, 1.0, 1e7, 4e-21)
    policy = FidelitySplit(tv_budget=budget)
    d = policy.decide_with(problem, ul_bits, dl_bits, dl_tv)
    ref = exhaustive_fidelity(rej, g, ul_bits, dl_bits, dl_tv, budget, 0.01, 0.04, 1e7, 4e-21)
    assert d.t_comm[0] == pytest.approx(ref, rel=1e-9)
    chosen = d.dl_choice[0][d.mode[0] == DL]
    assert np.all(dl_tv[d.mode[0] == DL, chosen] <= budget + 1e-15)
    # the DL powers spend the budget (delay equalising) and delays are as planned
    if (d.mode[0] == DL).any():
        assert d.power_w[0][d.mode[0] == DL].sum() == pytest.approx(0.04, rel=1e-6)
    assert np.all(d.delay_s[0][d.mode[0] == UL] <= d.t_comm[0] * (1 + 1e-12))


# ---------------------------------------------------------------------------- end to end, bad input


def test_token_run_end_to_end(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "tok"
    assert main(["run", "--set", "payload.model=token", "--set", "policy.mode=fidelity",
                 "--set", "payload.tv_budget=0", "--set", "devices.count=4",
                 "--rounds", "60", "--out", str(out), "--quiet"]) == 0
    s = json.loads((out / "summary.json").read_text())["payload"]
    assert s["exact"] and s["dl_tv_mean"] == 0.0  # budget 0: DL only dense
    rows = (out / "corrections.csv").read_text().splitlines()
    assert rows[0] == "round,device,mode,format,bits,accept_prob,dl_tv,residual_tv"
    assert len(rows) - 1 == s["corrections"] > 0
    for line in rows[1:]:
        mode, fmt, bits = line.split(",")[2:5]
        assert (mode, fmt, bits) in {("ul", "top-1024", "34816"), ("dl", "dense", "2426640")}


def _write_npz(path, **arrays):
    np.savez(path, **arrays)
    return str(path)


@pytest.mark.parametrize("case", ["k", "p0", "p15", "bits0", "menu", "shape", "norm", "topp-bits"])
def test_bad_input_one_line_exit_2_nothing_written(tmp_path, monkeypatch, capsys, case):
    monkeypatch.chdir(tmp_path)
    p, q = small_pair()
    settings = {
        "k": ["payload.effective_vocab=200000"],
        "p0": ["payload.top_p=0"],
        "p15": ["payload.top_p=1.5"],
        "bits0": ["payload.quant_bits=0"],
        "menu": ["payload.model=token", "policy.mode=fidelity", "payload.menu=[64,200000]"],
        "shape": ["payload.model=token", "payload.vocab=12", "payload.pairs_file="
                  + _write_npz(tmp_path / "a.npz", p=p[None, :6], q=q[None, :6])],
        "norm": ["payload.model=token", "payload.vocab=12", "payload.pairs_file="
                 + _write_npz(tmp_path / "b.npz", p=2 * p[None], q=q[None])],
        "topp-bits": ["payload.format=topp"],
    }[case]
    args = ["run", "--rounds", "3", "--quiet", "--out", str(tmp_path / "out")]
    for s in settings:
        args += ["--set", s]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: payload."), err
    assert not (tmp_path / "out").exists() and not (tmp_path / "results").exists()


def test_fidelity_with_one_lossless_entry_is_the_optimal_split():
    from multispin_sim.model.reactive import optimal_split

    rng = np.random.default_rng(7)
    k = 8
    for _ in range(20):
        g = 1e-11 * rng.exponential(size=k)
        rej = rng.random(k) < 0.6
        problem = ReactiveProblem(rej, g, g, 0.01, 0.04, 34_816.0, 1e7, 4e-21)
        d = FidelitySplit(tv_budget=0.0).decide_with(
            problem, np.full(k, 34_816.0), np.full((k, 1), 34_816.0), np.zeros((k, 1)))
        assert d.t_comm[0] == pytest.approx(optimal_split(problem).t_comm[0], rel=1e-12)


def test_pairs_file_rows_logits_and_acceptance(tmp_path):
    from multispin_sim.engine.reading import load_pairs

    rng = np.random.default_rng(8)
    lp, lq = 2 * rng.normal(size=(6, V_SMALL)), 2 * rng.normal(size=(6, V_SMALL))
    np.savez(tmp_path / "l.npz", p_logits=lp, q_logits=lq)
    p, q = load_pairs(tmp_path / "l.npz", V_SMALL)
    np.testing.assert_allclose(p, np.exp(lp) / np.exp(lp).sum(axis=1, keepdims=True))
    dense = pf.make_format("dense", vocab=V_SMALL)
    model = PayloadModel.from_pairs(p, q, 8, dense, [dense])
    beta = np.minimum(p, q).sum(axis=1).mean()  # every position draws its row uniformly
    server, _, _ = run_server(model, "optimal", 1500, 3)
    s = server.summary()
    assert abs(s["acceptance_rate"] - beta) < 4 * math.sqrt(beta * (1 - beta) / s["positions"])


def test_draft_objective_sees_the_ul_acceptance_cost(tmp_path):
    """Token mode: the system's alpha is sum min(p, topk(q)) of the calibrated pair."""
    from multispin_sim.engine.simulation import simulate
    from multispin_sim.engine.streams import RandomStreams
    from multispin_sim.scenario import load_scenario

    sc = load_scenario({"payload": {"model": "token", "effective_vocab": 64},
                        "devices": {"count": 3}, "run": {"rounds": 5}})
    res = simulate(sc, out=tmp_path / "run")
    configured = np.array([sc.devices.acceptance[t] for t in res.population.tasks])
    gen = ZipfPairs(151_665, 1.5, RandomStreams(sc.seed).tokens)
    top = pf.make_format("topk", vocab=151_665, effective_vocab=64)
    for a, got in zip(configured, res.population.system.alpha):
        p, q = gen.pair(a)
        assert got == pytest.approx(np.minimum(p, top.compress(q)).sum(), abs=1e-12)
        assert got < a  # top-64 drafting costs acceptance with this generator
    assert np.allclose(res.devices["alpha"], res.population.system.alpha)


def test_token_model_refuses_a_non_iid_acceptance_model():
    """The token model's distributions decide every acceptance: another acceptance model would
    be silently ignored, so the combination is refused up front, naming the key."""
    from multispin_sim.scenario import ScenarioError, load_scenario

    with pytest.raises(ScenarioError, match=r"^acceptance\.model"):
        load_scenario(None, overrides={"payload.model": "token", "acceptance.model": "markov"})


def test_token_runs_count_agreements_and_feed_the_belief():
    """A token-level run tallies its verified positions like any run (devices.csv and the
    summary's acceptance block agree with device_rounds.csv and the payload's own rate), and
    the scenario's belief is the one the controllers are told: a pessimistic learned prior
    (mean 0.3) shortens the drafts against the nominal belief."""
    import multispin_sim as ms

    base = {"devices.count": 4, "payload.model": "token", "run.rounds": 150, "seed": 3}
    res = ms.simulate(ms.load_scenario(None, overrides=base))
    d, dev = res.device_rounds, res.devices
    agreed = np.bincount(d["device"], weights=d["accepted"], minlength=4)
    verified = agreed + np.bincount(d["device"], weights=d["rejected"], minlength=4)
    assert agreed.sum() > 0
    np.testing.assert_array_equal(dev["agreed_positions"], agreed)
    np.testing.assert_array_equal(dev["verified_positions"], verified)
    acc = res.summary["acceptance"]
    assert acc["verified_positions"] == verified.sum()
    assert acc["realised_agreement_rate"] == pytest.approx(agreed.sum() / verified.sum(),
                                                           rel=1e-12)
    assert res.summary["payload"]["acceptance_rate"] == pytest.approx(
        acc["realised_agreement_rate"], rel=1e-12)

    def mean_draft(belief):
        o = {**base, "policy.draft": "greedy", "policy.saa_samples": 100, "run.rounds": 60,
             "acceptance.belief": belief, "acceptance.belief_prior_mean": 0.3}
        return ms.simulate(ms.load_scenario(None, overrides=o)).device_rounds["draft_len"].mean()

    assert mean_draft("learned") < 0.5 * mean_draft("nominal")


def test_pairs_file_too_large_refused_before_reading(tmp_path):
    """A file whose arrays would not fit limits.max_memory_mb is refused from the archive's
    directory (the sizes), before numpy reads an array."""
    from multispin_sim.engine.reading import load_pairs
    from multispin_sim.model.tokens import PairsFileError

    p = np.full((100, V_SMALL), 1.0 / V_SMALL)
    np.savez_compressed(tmp_path / "p.npz", p=p, q=p)  # compresses to a few hundred bytes
    assert load_pairs(tmp_path / "p.npz", V_SMALL, max_bytes=2 * p.nbytes + 4096)[0].shape == p.shape
    with pytest.raises(PairsFileError, match="more than limits.max_memory_mb") as info:
        load_pairs(tmp_path / "p.npz", V_SMALL, max_bytes=p.nbytes)
    assert "raise limits.max_memory_mb" in info.value.todo


def test_a_top_p_uplink_is_charged_for_every_entry_it_sends():
    """UL top-p: the device sends q_d, the nucleus of q (every entry up to mass top_p): its
    bits are the count plus one (index, probability) per nonzero of q_d, not the nucleus of the
    renormalised q_d (a quarter of them)."""
    p, q = small_pair()
    fmt = pf.make_format("topp", vocab=V_SMALL, top_p=0.8)
    model = PayloadModel.from_pairs(p, q, 2, fmt, [fmt])
    q_d = fmt.compress(np.atleast_2d(q))[0]
    count_bits, per_entry = math.ceil(math.log2(V_SMALL + 1)), math.ceil(math.log2(V_SMALL)) + 16
    assert model.ul_bits[0] == fmt.bits(q) == count_bits + np.count_nonzero(q_d) * per_entry


def test_tv_per_token_is_the_mean_tv_of_the_delivered_tokens_laws():
    """All-DL top-k: each DL-corrected token is drawn from the compressed residual r~ instead of
    r (TV(r~, r) off), every other token exactly: tv_per_token = corrections x TV(r~, r) /
    tokens; the position's TV(o, p) = (1 - beta) TV(r~, r) is dl_tv_mean."""
    p, q = small_pair()
    top = pf.make_format("topk", vocab=V_SMALL, effective_vocab=3)
    model = PayloadModel.from_pairs(p, q, 8, top, [top])
    server, _, _ = run_server(model, "all-dl", 2000, 5)
    s = server.summary()
    beta = np.minimum(p, top.compress(q)).sum()
    residual_tv = model.table.dl_residual_tv[0][0]
    assert s["dl_tv_mean"] == pytest.approx((1 - beta) * residual_tv, rel=1e-12)
    assert s["tv_per_token"] == pytest.approx(s["corrections"] * residual_tv
                                              / server.tokens_total, rel=1e-12)


def test_token_runs_report_the_effective_acceptance_rate():
    """The acceptance block of a token-level run (and the beliefs built from it) has the rate
    the outcomes have, alpha_eff = sum min(p, q_d), not the alpha before the UL format."""
    import multispin_sim as ms

    res = ms.simulate(ms.load_scenario(None, overrides={
        "devices.count": 4, "payload.model": "token", "payload.vocab": 4096, "run.rounds": 50}))
    s = res.summary
    assert s["acceptance"]["nominal_rate"] == pytest.approx(
        s["payload"]["alpha_effective_mean"], rel=1e-12)
    assert s["payload"]["acceptance_loss"] > 0   # the UL format costs acceptance: they differ
