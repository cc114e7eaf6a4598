"""Fitting the acceptance models to an agreement trace, and validating the fits (numpy/scipy).

``fit_all(answers)`` fits:

- ``iid``: alpha = agreements / known positions (the maximum-likelihood estimate; unknown bonus
  positions are left out as missing).
- ``beta``: mean m = the pooled rate (as ``iid``, so all fits share one mean rate) and the
  beta-binomial maximum-likelihood concentration kappa of the per-answer counts (agreements out
  of known positions), one alpha per answer; the session length is the mean answer length.
- ``markov``: a two-state hidden Markov model with Bernoulli emissions (Gilbert-Elliott) by
  Baum-Welch (EM) over all answers at once, unknown positions as missing observations; the
  state with the higher agreement rate is "easy". The trace's chains restart at every answer,
  the simulator's never: the switching probabilities keep EM's total switching rate (at least
  one switch per answer length) split so that the stationary law is the trace's posterior
  state occupancy (EM's own values are reported as ``em_*``, with ``em_initial_easy`` the
  fitted probability that an answer starts in the easy state; ``log_likelihood`` is that of the
  parameters before the last EM update, ``model.acceptance_likelihood`` evaluates the final ones).

``validate(answers, fits)`` compares the trace with synthetic traces of each fitted model of the
same answer lengths, observed as the trace was (decoded with HF's adaptive draft length, bonus
positions hidden: ``hf_observe``, when the trace hides positions; every position known when
it knows them all), on: mean tokens per step E[A + 1] at gamma = 4 and 8
(replayed exactly as the engine does), P(A = 0) at gamma = 4, the lag-1 autocorrelation of the
agreement sequence (pairs of known positions within an answer), the variance of per-answer
agreement rates, and the Kolmogorov-Smirnov distance between the run-length distributions
(agreements before each disagreement) of the model and the trace.

The hidden (bonus) positions are not drawn: E[A + 1] and P(A = 0) are the expected tokens over
the expected steps (and expected empty steps over expected steps) with every hidden position an
agreement with probability the known positions' rate, independently (``expected_steps``, exact).
The model rows are means over ``draws`` synthetic traces with their Monte-Carlo standard
errors; each selection (all answers, each category) and each model draws from its own stream,
a child of the seed's SeedSequence keyed by the selection's name (``selection_seed``).
"""
from __future__ import annotations

import zlib

import numpy as np
from scipy import optimize, stats

from .acceptance_trace import UNKNOWN, mean_agreement
from .markov import markov_chain, markov_stationary

GAMMAS = (4, 8)
MODELS = ("iid", "beta", "markov")
DRAWS = 20   # synthetic traces per model and selection


def answer_counts(answers):
    """(agreements, known positions) per answer."""
    s = np.array([a.agreements for a in answers], dtype=float)
    n = np.array([a.known for a in answers], dtype=float)
    return s, n


def fit_iid(answers):
    return {"mean": mean_agreement(answers)}


def fit_beta(answers):
    """Beta-binomial fit of the per-answer counts: the mean is the pooled agreement rate (the
    i.i.d. MLE, so that every fitted model has the same mean rate), the concentration kappa its
    maximum-likelihood estimate given that mean."""
    s, n = answer_counts(answers)
    keep = n > 0
    s, n = s[keep], n[keep]
    m = float(s.sum() / n.sum())

    def nll(log_kappa):
        kappa = np.exp(log_kappa)
        return -stats.betabinom.logpmf(s, n, m * kappa, (1 - m) * kappa).sum()

    res = optimize.minimize_scalar(nll, bounds=(np.log(1e-2), np.log(1e5)), method="bounded",
                                   options={"xatol": 1e-6})
    return {"mean": m, "concentration": float(np.exp(res.x)),
            "session_tokens": int(round(float(np.mean([len(a.bits) for a in answers]))))}


def _padded(answers):
    n = max(len(a.bits) for a in answers)
    obs = np.full((len(answers), n), UNKNOWN, dtype=np.int8)
    lengths = np.array([len(a.bits) for a in answers])
    for i, a in enumerate(answers):
        obs[i, :len(a.bits)] = a.bits
    return obs, lengths


def fit_markov(answers, iterations=100, tol=1e-7, start=None):
    """Baum-Welch for the Gilbert-Elliott model; returns the scenario keys and the fit's
    log-likelihood and iterations."""
    answers = sorted(answers, key=lambda a: -len(a.bits))   # active sequences first at each t
    obs, lengths = _padded(answers)
    n_seq, t_max = obs.shape
    m = mean_agreement(answers)
    if start is None:
        start = (min(0.95, m + 0.25), max(0.05, m - 0.35), 0.1, 0.1)
    r = np.array(start[:2], dtype=float)
    a = np.array([[1 - start[2], start[2]], [start[3], 1 - start[3]]])
    pi = np.array([0.5, 0.5])
    # number of sequences longer than t (they come first)
    live = [int(np.searchsorted(-lengths, -t, side="right")) for t in range(t_max)]
    known = obs >= 0
    ones = obs == 1
    prev_ll = -np.inf
    it = 0
    for it in range(1, iterations + 1):
        # emissions (N, T, 2); unknown / padding: 1
        e = np.where(known[..., None], np.where(ones[..., None], r, 1 - r), 1.0)
        fwd = np.full((n_seq, t_max, 2), 0.5)
        scale = np.ones((n_seq, t_max))
        f = pi * e[:, 0]
        c = f.sum(1)
        fwd[:, 0] = f / c[:, None]
        scale[:, 0] = c
        for t in range(1, t_max):
            q = live[t]
            f = (fwd[:q, t - 1] @ a) * e[:q, t]
            c = f.sum(1)
            fwd[:q, t] = f / c[:, None]
            scale[:q, t] = c
        ll = float(np.log(scale).sum())
        bwd = np.ones((n_seq, t_max, 2))
        xi = np.zeros((2, 2))
        for t in range(t_max - 2, -1, -1):
            q = live[t + 1]
            nb = e[:q, t + 1] * bwd[:q, t + 1] / scale[:q, t + 1, None]
            bwd[:q, t] = nb @ a.T
            xi += a * np.einsum("ni,nj->ij", fwd[:q, t], nb)
        post = fwd * bwd
        post /= post.sum(2, keepdims=True)
        inside = np.arange(t_max)[None, :] < lengths[:, None]
        w = post * (known & inside)[..., None]
        r = np.clip((w * ones[..., None]).sum((0, 1)) / np.maximum(w.sum((0, 1)), 1e-300),
                    1e-9, 1 - 1e-9)
        a = xi / xi.sum(1, keepdims=True)
        pi = post[:, 0].mean(0)
        if ll - prev_ll < tol * abs(ll):
            break   # the log-likelihood is non-decreasing in EM; stop when it stalls
        prev_ll = ll
    easy = int(np.argmax(r))
    hard = 1 - easy
    # the simulator's chain never restarts, the trace's restarts at every answer: keep EM's
    # switching rate (at least one switch per answer) and split it so that the stationary
    # law is the posterior state occupancy of the trace
    occupancy = (post * inside[..., None]).sum((0, 1)) / inside.sum()
    pe = float(occupancy[easy])
    s = max(float(a[easy, hard] + a[hard, easy]), 1.0 / float(np.mean(lengths)))
    return {"easy_rate": float(r[easy]), "hard_rate": float(r[hard]),
            "easy_to_hard": s * (1 - pe), "hard_to_easy": s * pe,
            "em_easy_to_hard": float(a[easy, hard]), "em_hard_to_easy": float(a[hard, easy]),
            "em_initial_easy": float(pi[easy]), "log_likelihood": ll, "iterations": it}


def fit_all(answers):
    return {"iid": fit_iid(answers), "beta": fit_beta(answers), "markov": fit_markov(answers)}


# --- synthetic traces and validation metrics ---------------------------------------------------

def synthetic(model, params, lengths, rng):
    """Agreement sequences (list of int8 arrays) of a fitted model with the given lengths."""
    out = []
    for n in lengths:
        if model == "iid":
            bits = rng.random(n) < params["mean"]
        elif model == "beta":
            mu, kappa = params["mean"], params["concentration"]
            bits = rng.random(n) < rng.beta(mu * kappa, (1 - mu) * kappa)
        elif model == "markov":
            bits, _, _ = markov_chain(rng, n, (params["easy_rate"], params["hard_rate"]),
                                      (params["easy_to_hard"], params["hard_to_easy"]))
        else:
            raise ValueError(model)
        out.append(np.asarray(bits, dtype=np.int8))
    return out


def _stops(bits):
    """The positions where a step of a walk along an agreement sequence ends: every
    disagreement (or unknown) and the answer's last position."""
    cont = bits == 1
    if len(bits):
        cont[-1] = False
    return np.flatnonzero(~cont)


def hf_observe(bits, initial=5):
    """What a Spec-Bench-like trace records of a full agreement sequence: decode it with HF's
    adaptive draft length (``initial``, +2 after a fully accepted draft, else -1, at least 1) and
    hide the agreement of every bonus position (UNKNOWN), as in the shipped trace."""
    bits = np.array(bits, dtype=np.int8)
    n = len(bits)
    stops = _stops(bits)
    out = bits.copy()
    pos, d = 0, initial
    while pos < n:
        run = int(stops[np.searchsorted(stops, pos)] - pos)
        if run >= d:
            out[pos + d] = UNKNOWN
            pos += d + 1
            d += 2
        else:
            pos += run + 1
            d = max(1, d - 1)
    return out


def replay(bits, gamma):
    """Accepted counts of the steps that walk one answer's agreement sequence (0/1, no
    UNKNOWN) with draft length ``gamma`` (None: unlimited); the answer's last position ends a
    step. The tokens of the steps (accepted + 1) add up to the answer's length."""
    bits = np.asarray(bits)
    n = len(bits)
    stops = _stops(bits)
    out = []
    pos = 0
    g = np.inf if gamma is None else gamma
    while pos < n:
        run = int(stops[np.searchsorted(stops, pos)] - pos)
        acc = int(min(run, g))
        out.append(acc)
        pos += acc + 1
    return np.array(out, dtype=np.int64)


def _lag1(seqs):
    x, y = [], []
    for b in seqs:
        b = np.asarray(b)
        ok = (b[:-1] >= 0) & (b[1:] >= 0)
        x.append(b[:-1][ok])
        y.append(b[1:][ok])
    x, y = np.concatenate(x).astype(float), np.concatenate(y).astype(float)
    return float(np.corrcoef(x, y)[0, 1]) if x.std() > 0 and y.std() > 0 else 0.0


def run_lengths(seqs):
    """Number of agreements before each known disagreement (runs through UNKNOWN are dropped)."""
    out = []
    for b in seqs:
        b = np.asarray(b)
        run, clean = 0, True
        for x in b.tolist():
            if x == 1:
                run += 1
            elif x == 0:
                if clean:
                    out.append(run)
                run, clean = 0, True
            else:
                run, clean = 0, False
    return np.array(out, dtype=np.int64)


def expected_steps(seqs, rate, gamma):
    """Expected (steps, empty steps) of walking the sequences with draft length ``gamma`` (as
    ``replay``) when every UNKNOWN position is an agreement with probability ``rate``,
    independently. The accepted count of the step under way is a Markov chain over positions;
    its forward law gives the probability that a step ends at each position, so both
    expectations are exact sums over positions."""
    seqs = sorted((np.asarray(b) for b in seqs), key=len, reverse=True)
    lengths = np.array([len(b) for b in seqs], dtype=np.int64)
    if not len(seqs) or lengths[0] == 0:
        return 0.0, 0.0
    g = int(gamma)
    agree = np.zeros((len(seqs), int(lengths[0])))
    for i, b in enumerate(seqs):
        agree[i, :len(b)] = np.where(b == UNKNOWN, rate, b == 1)
        agree[i, len(b) - 1] = 0.0   # the answer's last position ends a step
    # sequences still under way at position t (the longest come first)
    live = np.searchsorted(-lengths, -np.arange(int(lengths[0])), side="left").tolist()
    law = np.zeros((len(seqs), g + 1))   # law[:, k]: k positions accepted in the step under way
    law[:, 0] = 1.0
    steps = empty = 0.0
    for t, q in enumerate(live):
        p = agree[:q, t, None]
        now = law[:q]
        stop = now[:, :g] * (1.0 - p)            # a disagreement (or the answer's end) after k
        ends = stop.sum(1) + now[:, g]           # ... or a full draft: the bonus position
        steps += float(ends.sum())
        empty += float(stop[:, 0].sum()) if g else float(now[:, 0].sum())
        law[:q, 1:] = now[:, :g] * p
        law[:q, 0] = ends
    return steps, empty


def metrics(seqs, reference_runs=None, unknown_rate=None):
    """The validation metrics of agreement sequences ``seqs`` (see the module docstring); the
    UNKNOWN positions agree with probability ``unknown_rate`` (None: the known positions')."""
    rate = unknown_rate if unknown_rate is not None else mean_agreement_bits(seqs)
    tokens = sum(len(b) for b in seqs)
    row = {}
    for g in GAMMAS:
        steps, empty = expected_steps(seqs, rate, g)
        row[f"tokens_g{g}"] = tokens / steps
        if g == GAMMAS[0]:
            row[f"p_none_g{g}"] = empty / steps
    row["lag1"] = _lag1(seqs)
    rates = [np.mean(b[b >= 0]) for b in map(np.asarray, seqs) if np.any(b >= 0)]
    row["var_rate"] = float(np.var(rates))
    runs = run_lengths(seqs)
    row["mean_run"] = float(runs.mean()) if len(runs) else float("nan")
    row["ks_runs"] = (float(stats.ks_2samp(runs, reference_runs).statistic)
                      if reference_runs is not None and len(runs) and len(reference_runs)
                      else 0.0)
    return row


def mean_agreement_bits(seqs):
    known = sum(int(np.count_nonzero(np.asarray(b) >= 0)) for b in seqs)
    ones = sum(int(np.count_nonzero(np.asarray(b) == 1)) for b in seqs)
    return ones / known if known else float("nan")


def selection_seed(seed, name):
    """The SeedSequence of one selection (``"all"``, or a category's name): the child of
    ``SeedSequence(seed)`` numbered by a checksum of the name, so a selection's draws depend
    neither on the other selections' data nor on which of them are fitted."""
    return np.random.SeedSequence(int(seed), spawn_key=(zlib.crc32(str(name).encode()),))


def validate(answers, fits, seed=0, name="all", draws=DRAWS):
    """Rows {'trace': metrics, 'iid': ..., 'beta': ..., 'markov': ...} (see module docstring).

    The trace row is exact; a model's row is the mean over ``draws`` synthetic traces, with the
    standard error of each mean under ``row["se"]``. Model ``i`` of ``MODELS`` draws from child
    ``i`` of ``selection_seed(seed, name)``, and each synthetic trace from its own child of that.
    """
    seqs = [a.bits for a in answers]
    lengths = [len(b) for b in seqs]
    ref_runs = run_lengths(seqs)
    # observed as the trace was: HF's bonus positions hidden when the trace hides positions
    # (a decoded Spec-Bench trace), every position known when it knows them all (a 0/1 CSV)
    observe = hf_observe if any((np.asarray(b) == UNKNOWN).any() for b in seqs) else np.asarray
    rows = {"trace": metrics(seqs, ref_runs, mean_agreement(answers))}
    children = selection_seed(seed, name).spawn(len(MODELS))
    for model, params in fits.items():
        streams = children[MODELS.index(model)].spawn(int(draws))
        per_draw = []
        for child in streams:
            rng = np.random.default_rng(child)
            seen = [observe(b) for b in synthetic(model, params, lengths, rng)]
            per_draw.append(metrics(seen, ref_runs))
        row = {k: float(np.mean([r[k] for r in per_draw])) for k in per_draw[0]}
        row["se"] = {k: (float(np.std([r[k] for r in per_draw], ddof=1) / np.sqrt(len(per_draw)))
                         if len(per_draw) > 1 else float("nan")) for k in per_draw[0]}
        rows[model] = row
    return rows


def scenario_snippet(fits, trace=None):
    """The ``acceptance`` keys of each fitted model (a dict per model, for YAML)."""
    mk = fits["markov"]
    out = {
        "iid": {"acceptance": {"model": "iid", "mean": round(fits["iid"]["mean"], 6)}},
        "beta": {"acceptance": {"model": "beta", "mean": round(fits["beta"]["mean"], 6),
                                "concentration": round(fits["beta"]["concentration"], 4),
                                "session_tokens": fits["beta"]["session_tokens"]}},
        "markov": {"acceptance": {"model": "markov", **{k: round(mk[k], 6) for k in (
            "easy_rate", "hard_rate", "easy_to_hard", "hard_to_easy")}}},
    }
    if trace is not None:
        out["trace"] = {"acceptance": {"model": "trace", **trace}}
    return out


__all__ = ["fit_iid", "fit_beta", "fit_markov", "fit_all", "validate", "replay", "run_lengths",
           "synthetic", "metrics", "expected_steps", "selection_seed", "scenario_snippet",
           "markov_stationary"]
