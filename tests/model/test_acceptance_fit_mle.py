"""The beta and markov fits are maximum-likelihood fits (``model.acceptance_fit``): the beta's
mean is the joint maximum-likelihood one, unbiased on trace-like data, with a calibrated
standard error; the markov fit reaches its maximum (at least the i.i.d. likelihood, which it
contains), counts each answer's transitions exactly, and says when it did not converge."""
import itertools
import math

import numpy as np
import pytest

from multispin_sim.acceptance_fit import parameters_line
from multispin_sim.model import acceptance_fit as fit
from multispin_sim.model import acceptance_likelihood as lik
from multispin_sim.engine.reading import read_trace, shipped_trace_path
from multispin_sim.model.acceptance_trace import UNKNOWN, Answer, select_answers
from test_acceptance_fit_stats import path_weights

Z = 4.0  # half-width of the intervals in standard errors (fixed seeds; about 1 in 16,000)


def answers_of(seqs):
    return [Answer(bits=np.asarray(b, dtype=np.int8)) for b in seqs]


# --- beta: the joint maximum-likelihood mean ---------------------------------------------------

def test_beta_mean_is_unbiased_and_covered_on_trace_like_data():
    """Beta data (m 0.75, kappa 4; 1,000 answers of 100 positions) observed as Spec-Bench
    records it (``hf_observe``: the higher an answer's rate, the larger the share of its
    positions that are known), 150 seeds. The fitted mean's average is within Z standard errors
    of the truth (Z x its standard deviation / sqrt(150) = 0.0019; measured: -0.0008); its
    z-scores (fit - truth) / SE, SE from the observed information of the joint fit, have
    standard deviation 1 +- Z / sqrt(2 x 149) (0.93), and |z| <= 1.96 holds in 95% +- Z
    binomial standard errors of the seeds (142 of 150). The pooled rate, the old ``mean``, is
    0.0050 above the truth on average here, 2.7 times the tolerance; its z-scores' mean (0.82)
    is checked to stay outside the tolerance of a mean of z-scores, so that the case keeps
    telling the two apart."""
    m, kappa, seeds = 0.75, 4.0, 150
    est, z, pooled = [], [], []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        rates = rng.beta(m * kappa, (1 - m) * kappa, 1000)
        bits = (rng.random((1000, 100)) < rates[:, None]).astype(np.int8)
        answers = answers_of([fit.hf_observe(b) for b in bits])
        b = fit.fit_beta(answers)
        se = lik.beta_standard_errors(answers, b)["mean"]
        est.append(b["mean"])
        z.append((b["mean"] - m) / se)
        pooled.append((fit.fit_iid(answers)["mean"] - m) / se)
    est, z = np.array(est), np.array(z)
    assert abs(est.mean() - m) < Z * est.std(ddof=1) / math.sqrt(seeds)
    assert abs(z.std(ddof=1) - 1) < Z / math.sqrt(2 * (seeds - 1))
    covered = int(np.sum(np.abs(z) <= 1.96))
    assert abs(covered - 0.95 * seeds) < Z * math.sqrt(seeds * 0.95 * 0.05)
    # the pooled rate is biased here: its z-scores' mean is far outside the same tolerance
    assert np.mean(pooled) > Z / math.sqrt(seeds)


def test_beta_fit_is_the_maximum_of_its_likelihood():
    """The fitted (m, kappa) beats every neighbour on a grid in (logit m, log kappa) and the
    pooled rate with its best kappa; on the shipped vicuna answers the mean differs from the
    pooled rate (short translation answers agree far less often than long ones)."""
    answers = select_answers(read_trace(shipped_trace_path()), benchmark="spec_bench")
    b = fit.fit_beta(answers)
    best = lik.beta_log_likelihood(answers, b["mean"], b["concentration"])
    u, v = math.log(b["mean"] / (1 - b["mean"])), math.log(b["concentration"])
    for du, dv in itertools.product((-1e-3, 0, 1e-3), repeat=2):
        if du or dv:
            mm = 1 / (1 + math.exp(-(u + du)))
            assert lik.beta_log_likelihood(answers, mm, math.exp(v + dv)) < best
    pooled = fit.fit_iid(answers)["mean"]
    kappas = np.exp(np.linspace(0, 6, 601))
    assert lik.beta_log_likelihood(answers, pooled, kappas).max() < best - 10
    assert abs(b["mean"] - pooled) > 0.03


# --- markov: the maximum, exact transition counts, convergence reported -----------------------

def brute_force_em_update(seqs, theta):
    """One EM update of (rate 0, rate 1, P(0 -> 1), P(1 -> 0), P(start 0)) by enumerating every
    hidden state path of every answer."""
    r, trans = theta[:2], ((1 - theta[2], theta[2]), (theta[3], 1 - theta[3]))
    start = (theta[4], 1 - theta[4])
    xi, agree, seen, first = np.zeros((2, 2)), np.zeros(2), np.zeros(2), np.zeros(2)
    for bits in seqs:
        paths, weights = path_weights(bits, r, trans, start)
        weights = np.array(weights) / math.fsum(weights)
        for path, w in zip(paths, weights):
            first[path[0]] += w
            for t in range(1, len(bits)):
                xi[path[t - 1], path[t]] += w
            for t, x in enumerate(bits.tolist()):
                if x != UNKNOWN:
                    seen[path[t]] += w
                    agree[path[t]] += w * (x == 1)
    a = xi / xi.sum(1, keepdims=True)
    return np.array([agree[0] / seen[0], agree[1] / seen[1], a[0, 1], a[1, 0],
                     first[0] / len(seqs)])


def test_one_em_update_counts_each_answers_transitions_exactly():
    """Answers of 1 to 8 positions (some unknown): one EM update equals the update computed by
    enumerating the hidden paths. An answer of n positions has n - 1 transitions; counting a
    transition out of its last position as well (answers of length >= t live at position t)
    pulled the switching probabilities towards their previous values."""
    rng = np.random.default_rng(3)
    seqs = []
    for n in [8, 7, 5, 5, 3, 2, 1, 6, 4, 8, 2]:
        bits = (rng.random(n) < 0.6).astype(np.int8)
        bits[rng.random(n) < 0.2] = UNKNOWN
        seqs.append(bits)
    start = (0.85, 0.3, 0.2, 0.3)
    want = brute_force_em_update(seqs, np.array([*start, 0.5]))
    got = fit.fit_markov(answers_of(seqs), iterations=1, start=start, polish=False)
    assert want[0] > want[1]   # state 0 stays the easy one
    assert [got["easy_rate"], got["hard_rate"], got["em_easy_to_hard"], got["em_hard_to_easy"],
            got["em_initial_easy"]] == pytest.approx(want.tolist(), rel=1e-10)


def test_markov_likelihood_is_at_least_iids_on_near_iid_data():
    """The audit's case: i.i.d. data (alpha 0.6425, the shipped vicuna answer lengths, observed
    as Spec-Bench records it, seed 501). markov contains iid (two equal rates), so its maximum
    likelihood is at least iid's; EM stopped at 100 iterations was 0.29 below it (3,000
    iterations: 0.24 above; the fit, EM then L-BFGS-B: 0.32 above, at the boundary where the
    hard state absorbs). The fit reports the log-likelihood of its parameters."""
    lengths = [len(a.bits) for a in select_answers(read_trace(shipped_trace_path()),
                                                   benchmark="spec_bench")]
    rng = np.random.default_rng(501)
    answers = answers_of(fit.hf_observe(b) for b in fit.synthetic("iid", {"mean": 0.6425},
                                                                  lengths, rng))
    fits = {"iid": fit.fit_iid(answers), "markov": fit.fit_markov(answers)}
    ll = lik.log_likelihoods(answers, fits)
    assert ll["markov"] >= ll["iid"]
    assert fits["markov"]["converged"]
    assert fits["markov"]["log_likelihood"] == pytest.approx(ll["markov"], rel=1e-12)


def test_a_fit_that_did_not_converge_says_so():
    truth = {"easy_rate": 0.9, "hard_rate": 0.35, "easy_to_hard": 0.04, "hard_to_easy": 0.08}
    answers = answers_of(fit.synthetic("markov", truth, [150] * 30, np.random.default_rng(4)))
    done = fit.fit_markov(answers)
    assert done["converged"] and "WARNING" not in parameters_line(_fits(answers, done))
    for capped in (fit.fit_markov(answers, iterations=2, polish=False),
                   fit.fit_markov(answers, iterations=2, max_polish=1)):
        assert not capped["converged"]
        assert capped["log_likelihood"] < done["log_likelihood"]
        line = parameters_line(_fits(answers, capped))
        assert "WARNING: the markov fit did not converge" in line
    assert "cap of 2 iterations" in fit.fit_markov(answers, iterations=2, polish=False)["message"]


def _fits(answers, markov):
    return {"iid": fit.fit_iid(answers), "beta": fit.fit_beta(answers), "markov": markov}
