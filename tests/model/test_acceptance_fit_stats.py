"""Likelihood comparison of the fitted acceptance models and standard errors of their parameters
(``model.acceptance_likelihood``): the likelihoods against brute force, the standard errors
against their sampling distribution, AIC's choice, and the lines ``acceptance fit`` prints."""
import io
import itertools
import math

import numpy as np
import pytest
import yaml
from scipy import integrate, stats

from multispin_sim.acceptance_fit import run
from multispin_sim.model import acceptance_fit as fit
from multispin_sim.model import acceptance_likelihood as lik
from multispin_sim.model.acceptance_trace import UNKNOWN, Answer

Z = 4.0  # half-width of the intervals in standard errors (fixed seeds; about 1 in 16,000)


def answers_of(seqs):
    return [Answer(bits=np.asarray(b, dtype=np.int8)) for b in seqs]


def tiny_answers(rng, count=12):
    """Answers of 1-8 positions, about a fifth of them unknown; one of them wholly unknown."""
    out = []
    for n in rng.integers(1, 9, count):
        bits = (rng.random(n) < 0.6).astype(np.int8)
        bits[rng.random(n) < 0.2] = UNKNOWN
        out.append(bits)
    out.append(np.full(3, UNKNOWN, dtype=np.int8))
    return out


def path_weights(bits, rates, trans, start):
    """Every hidden state path of one answer (state 0 easy) and its P(path) times the emission
    probabilities of the known positions."""
    paths = list(itertools.product((0, 1), repeat=len(bits)))
    weights = []
    for path in paths:
        w = start[path[0]]
        for t in range(1, len(bits)):
            w *= trans[path[t - 1]][path[t]]
        for t, x in enumerate(bits.tolist()):
            if x != UNKNOWN:
                w *= rates[path[t]] if x == 1 else 1 - rates[path[t]]
        weights.append(w)
    return paths, weights


def brute_force_markov(seqs, rates, e2h, h2e, initial):
    """Sum over answers of the log of the sum over every hidden state path of its weight."""
    trans = ((1 - e2h, e2h), (h2e, 1 - h2e))
    start = (initial, 1 - initial)
    return sum(math.log(math.fsum(path_weights(bits, rates, trans, start)[1])) for bits in seqs)


# --- (a) the likelihoods are the probabilities of the known positions --------------------------

@pytest.mark.parametrize("theta", [(0.9, 0.3, 0.05, 0.1, 0.5), (0.7, 0.65, 0.4, 0.01, 0.93),
                                   (1.0, 0.2, 0.2, 0.3, 0.0), (0.55, 0.05, 0.9, 0.8, 0.2)])
def test_markov_log_likelihood_is_the_sum_over_hidden_state_paths(theta):
    seqs = tiny_answers(np.random.default_rng(int(theta[0] * 100 + theta[4] * 10)))
    want = brute_force_markov(seqs, theta[:2], *theta[2:])
    assert lik.markov_log_likelihood(answers_of(seqs), *theta) == pytest.approx(want, rel=1e-12)
    # a batch of parameter sets gives each set's log-likelihood
    batch = lik.markov_log_likelihood(answers_of(seqs), *(np.array([x, x]) for x in theta))
    assert batch.tolist() == pytest.approx([want, want], rel=1e-12)


def test_markov_log_likelihood_of_the_fit_is_at_least_ems():
    """The fit reports the log-likelihood of its final parameters (the ones stored), and they
    score at least as well as EM's point (the direct optimiser starts there)."""
    truth = {"easy_rate": 0.9, "hard_rate": 0.35, "easy_to_hard": 0.04, "hard_to_easy": 0.08}
    seqs = [fit.hf_observe(b) for b in fit.synthetic("markov", truth, [150] * 30,
                                                     np.random.default_rng(4))]
    answers = answers_of(seqs)
    m = fit.fit_markov(answers)
    assert 0 <= m["em_initial_easy"] <= 1
    ll = lik.log_likelihoods(answers, {"markov": m})["markov"]
    assert ll == pytest.approx(m["log_likelihood"], rel=1e-12)
    em = fit.fit_markov(answers, polish=False)
    assert em["converged"] and ll >= em["log_likelihood"]


@pytest.mark.parametrize("m,kappa", [(0.7, 8.0), (0.3, 40.0), (0.5, 2.5), (0.8, 150.0)])
def test_beta_sequence_likelihood_is_the_integral_over_alpha(m, kappa):
    rng = np.random.default_rng(int(kappa))
    seqs = tiny_answers(rng) + [(rng.random(40) < 0.7).astype(np.int8)]
    total = 0.0
    for bits in seqs:
        s, n = int(np.sum(bits == 1)), int(np.sum(bits >= 0))
        integral, _ = integrate.quad(
            lambda x: x ** s * (1 - x) ** (n - s) * stats.beta.pdf(x, m * kappa, (1 - m) * kappa),
            0, 1, epsabs=0, epsrel=1e-13, limit=200)
        got = lik.beta_log_likelihood(answers_of([bits]), m, kappa)
        assert math.exp(got) == pytest.approx(integral, rel=1e-8)
        total += got
    assert lik.beta_log_likelihood(answers_of(seqs), m, kappa) == pytest.approx(total, rel=1e-12)


def test_beta_limits_and_iid_likelihood():
    seqs = [np.array([1, 1, UNKNOWN, 0, 1], dtype=np.int8), np.array([1, 1], dtype=np.int8),
            np.array([0, UNKNOWN], dtype=np.int8)]
    answers = answers_of(seqs)
    iid = lik.iid_log_likelihood(answers, 0.6)
    assert iid == pytest.approx(5 * math.log(0.6) + 2 * math.log(0.4), rel=1e-14)
    assert lik.beta_log_likelihood(answers, 0.6, np.inf) == pytest.approx(iid, rel=1e-14)
    assert lik.beta_log_likelihood(answers, 0.6, 1e9) == pytest.approx(iid, rel=1e-6)
    # kappa -> 0: each answer's positions all agree or all disagree; the first one mixes
    assert lik.beta_log_likelihood(answers, 0.6, 0.0) == -np.inf
    assert lik.beta_log_likelihood(answers[1:], 0.6, 0.0) == pytest.approx(
        math.log(0.6) + math.log(0.4))
    assert lik.iid_log_likelihood(answers[1:2], 1.0) == 0.0


# --- (b) standard errors against their sampling distribution -----------------------------------

def test_iid_standard_error_is_the_binomial_one_and_its_z_scores_are_standard_normal():
    """200 answers x 100 positions, alpha = 0.65: SE = sqrt(a (1 - a) / n) (and the numerical
    observed information agrees with it). Over 200 seeds the z-scores (fit - truth) / SE have
    mean 0 +- Z / sqrt(200) and standard deviation 1 +- Z / sqrt(2 x 199)."""
    alpha, seeds = 0.65, 200
    z = []
    for seed in range(seeds):
        bits = np.random.default_rng(seed).random((200, 100)) < alpha
        answers = answers_of(bits.astype(np.int8))
        a = fit.fit_iid(answers)["mean"]
        se = lik.iid_standard_errors(answers, {"mean": a})["alpha"]
        assert se == pytest.approx(math.sqrt(a * (1 - a) / 20_000), rel=1e-12)
        z.append((a - alpha) / se)
    numeric = lik.observed_information_se(
        lambda rows: np.array([lik.iid_log_likelihood(answers, x) for x in rows[:, 0]]), [a],
        (lik.LOGIT,))[0]
    assert numeric == pytest.approx(se, rel=1e-5)
    z = np.array(z)
    assert abs(z.mean()) < Z / math.sqrt(seeds)
    assert abs(z.std(ddof=1) - 1) < Z / math.sqrt(2 * (seeds - 1))


def test_beta_concentration_standard_error_covers_on_the_log_scale():
    """200 answers x 50 positions of a beta model (m 0.7, kappa 8), 300 seeds: the z-scores of
    log kappa, (ln fit - ln truth) / (SE / fit), have mean 0 +- Z / sqrt(300) and standard
    deviation 1 +- Z / sqrt(2 x 299). (Their finite-sample mean, measured over 1,500 seeds, is
    0.08 +- 0.03: the skew of the estimator, well inside the tolerance.)"""
    m, kappa, seeds = 0.7, 8.0, 300
    z = []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        rates = rng.beta(m * kappa, (1 - m) * kappa, 200)
        answers = answers_of((rng.random((200, 50)) < rates[:, None]).astype(np.int8))
        b = fit.fit_beta(answers)
        se = lik.beta_standard_errors(answers, b)
        assert se["mean"] is not None and se["concentration"] is not None
        z.append((math.log(b["concentration"]) - math.log(kappa))
                 / (se["concentration"] / b["concentration"]))
    z = np.array(z)
    assert abs(z.mean()) < Z / math.sqrt(seeds)
    assert abs(z.std(ddof=1) - 1) < Z / math.sqrt(2 * (seeds - 1))


def test_a_parameter_at_its_boundary_has_no_standard_error():
    """The easy state always agrees (its rate's MLE is 1): no standard error for that rate, the
    other parameters' errors conditional on it; i.i.d. data: the beta's kappa MLE is at (or
    statistically indistinguishable from) infinity."""
    rng = np.random.default_rng(5)
    truth = {"easy_rate": 1.0, "hard_rate": 0.4, "easy_to_hard": 0.03, "hard_to_easy": 0.03}
    answers = answers_of(fit.synthetic("markov", truth, [200] * 40, rng))
    se = lik.markov_standard_errors(answers, fit.fit_markov(answers))
    assert se["easy_rate"] is None
    assert all(se[k] is not None and se[k] > 0 for k in ("hard_rate", "em_easy_to_hard",
                                                         "em_hard_to_easy"))
    answers = answers_of((rng.random((50, 100)) < 0.6).astype(np.int8))
    b = fit.fit_beta(answers)
    assert b["concentration"] > 1e3
    se = lik.beta_standard_errors(answers, b)
    assert se["concentration"] is None
    assert se["mean"] == pytest.approx(lik.iid_standard_errors(answers, b)["alpha"], rel=1e-3)


# --- (c) what AIC and BIC prefer ------------------------------------------------------------

def test_aic_prefers_markov_on_bursty_data_by_a_wide_margin():
    """50 answers x 200 positions of a chain switching between agreement rates 0.9 and 0.3
    every 50 positions on average: markov's AIC is below the others' by 2,215 +- 176 (mean and
    standard deviation over 20 seeds); the test asks for 1,000, 6 standard deviations below."""
    truth = {"easy_rate": 0.9, "hard_rate": 0.3, "easy_to_hard": 0.02, "hard_to_easy": 0.02}
    answers = answers_of(fit.synthetic("markov", truth, [200] * 50, np.random.default_rng(0)))
    st = lik.model_statistics(answers, fit.fit_all(answers))
    aic = {m: row["aic"] for m, row in st["models"].items()}
    assert st["aic"] == st["bic"] == "markov"
    assert min(aic["iid"], aic["beta"]) - aic["markov"] > 1000
    assert st["models"]["markov"]["parameters"] == 5 and st["n"] == 10_000


def test_aic_and_bic_prefer_iid_on_iid_data():
    """100 answers x 100 positions, alpha 0.65. beta nests iid at kappa = inf, so twice its gain
    in log-likelihood is asymptotically 0 or chi-square(1) with probability 1/2 each, and AIC
    prefers beta when that exceeds 2: probability P(chi2(1) > 2) / 2 = 0.079 at any size (AIC
    is not consistent), checked over 200 seeds (binomial tolerance). BIC's penalty,
    ln(10,000) = 9.2 per parameter, makes its choice overwhelming (P = 0.001 for beta), and
    markov's 4 extra parameters never paid for themselves in 100 seeds (AIC margin at least 1.3)."""
    p = stats.chi2.sf(2, 1) / 2
    seeds, wins = 200, 0
    for seed in range(seeds):
        answers = answers_of(fit.synthetic("iid", {"mean": 0.65}, [100] * 100,
                                           np.random.default_rng(seed)))
        fits = {"iid": fit.fit_iid(answers), "beta": fit.fit_beta(answers)}
        ll = lik.log_likelihoods(answers, fits)
        wins += 2 * (ll["beta"] - ll["iid"]) > 2
    assert abs(wins - seeds * p) < Z * math.sqrt(seeds * p * (1 - p))
    answers = answers_of(fit.synthetic("iid", {"mean": 0.65}, [100] * 100,
                                       np.random.default_rng(0)))
    st = lik.model_statistics(answers, fit.fit_all(answers))
    assert st["aic"] == st["bic"] == "iid"


# --- (d) the report --------------------------------------------------------------------------

def _sections(text):
    """{section: [lines]} of the report."""
    out, section = {}, None
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:].split(":")[0]
            out[section] = []
        elif section:
            out[section].append(line)
    return out


def _model_line(lines, model):
    return next(x for x in lines if x.startswith(f"  {model}: "))


def test_fit_prints_the_likelihood_lines_on_the_shipped_trace():
    """Roleplay answers of the shipped trace: one line per model with estimates +- errors,
    log-likelihood, AIC, BIC, and the preferred models. The markov fit of this category has its
    easy state always agreeing (a boundary fit): n/a there, never nan."""
    buf = io.StringIO()
    run(None, benchmark="spec_bench", categories=("roleplay",), draws=2, out=buf)
    text = buf.getvalue()
    lines = _sections(text)["all selected answers"]
    assert any(x.startswith("Likelihood of the 4,081 known positions") for x in lines)
    for model, k in (("iid", 1), ("beta", 2), ("markov", 5)):
        line = _model_line(lines, model)
        assert " +- " in line and "log-likelihood -" in line and "AIC " in line
        assert "BIC " in line and f"({k} parameter" in line
    assert _model_line(lines, "iid").startswith("  iid: alpha 0.6719 +- 0.0073;")
    assert "easy 1.0000 +- n/a" in _model_line(lines, "markov")
    assert any(x.startswith("  AIC prefers markov") and "BIC prefers markov" in x for x in lines)
    assert "nan" not in text.lower()


def test_by_category_prints_the_lines_per_category_and_the_yaml_keeps_its_keys(tmp_path):
    """A CSV with an i.i.d. category (beta's kappa runs to infinity) and one whose answers
    either always agree or agree half the time (markov's easy rate at 1): n/a where the fit is
    at a boundary, and the YAML holds the scenario fragments only."""
    rng = np.random.default_rng(11)
    cats = {"flat": [(rng.random(60) < 0.6).astype(int) for _ in range(20)],
            "split": [np.ones(60, dtype=int) if i % 2 else (rng.random(60) < 0.5).astype(int)
                      for i in range(20)]}
    lines = ["agree,answer,category"]
    for cat, seqs in cats.items():
        lines += [f"{x},{cat}-{i},{cat}" for i, b in enumerate(seqs) for x in b]
    path = tmp_path / "t.csv"
    path.write_text("\n".join(lines) + "\n")
    out_yaml = tmp_path / "fit.yaml"
    buf = io.StringIO()
    doc = run(str(path), by="category", draws=2, out_yaml=str(out_yaml), out=buf)
    text = buf.getvalue()
    sections = _sections(text)
    assert set(sections) == {"all selected answers", "category flat", "category split"}
    for lines in sections.values():
        assert sum(x.startswith("  AIC prefers ") for x in lines) == 1
    assert "kappa" in _model_line(sections["category flat"], "beta")
    assert _model_line(sections["category flat"], "beta").split("kappa ")[1].split(";")[0] \
        .endswith("+- n/a")
    assert "easy 1.0000 +- n/a" in _model_line(sections["category split"], "markov")
    assert "nan" not in text.lower()
    written = yaml.safe_load(out_yaml.read_text())
    assert written == doc
    assert set(written) == {"all", "by_category"}
    for snippet in [written["all"], *written["by_category"].values()]:
        assert set(snippet) == {"iid", "beta", "markov", "trace"}
        assert all(set(v) == {"acceptance"} for v in snippet.values())
