"""Fitting the acceptance models to an agreement trace, and validating the fits (numpy/scipy).

``fit_all(answers)`` fits:

- ``iid``: alpha = agreements / known positions (the maximum-likelihood estimate; unknown bonus
  positions are left out as missing).
- ``beta``: mean m and concentration kappa by joint beta-binomial maximum likelihood on the
  per-answer counts (agreements out of known positions), one alpha per answer; the session
  length is the mean answer length. Its mean is not the pooled rate of ``iid`` (``fit_beta``
  says why).
- ``markov``: a two-state hidden Markov model with Bernoulli emissions (Gilbert-Elliott) by
  maximum likelihood over all answers at once, unknown positions as missing observations:
  Baum-Welch (EM) until it stalls, then L-BFGS-B with the exact gradient to the maximum (EM
  alone crawls where the states are close); the state with the higher agreement rate is
  "easy". The trace's chains restart at every answer, the simulator's never: the switching
  probabilities keep the fit's total switching rate (at least one switch per answer length)
  split so that the stationary law is the trace's posterior state occupancy (the fit's own
  values are reported as ``em_*``, with ``em_initial_easy`` the fitted probability that an
  answer starts in the easy state; ``log_likelihood`` is that of these parameters,
  ``converged`` whether the optimiser's convergence test was met).

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
import zlib

import numpy as np
from scipy import optimize, special, stats

from .acceptance_trace import UNKNOWN, mean_agreement
from .markov import MARKOV_KEYS, markov_chain, markov_stationary

GAMMAS = (4, 8)
MODELS = ("iid", "beta", "markov")
DRAWS = 20   # synthetic traces per model and selection


def answer_counts(answers):
    """(agreements, known positions) per answer, answers without known positions left out."""
    s = np.array([a.agreements for a in answers], dtype=float)
    n = np.array([a.known for a in answers], dtype=float)
    return s[n > 0], n[n > 0]


def fit_iid(answers):
    """{"mean": the pooled agreement rate of the known positions} (the i.i.d. MLE)."""
    return {"mean": mean_agreement(answers)}


def fit_beta(answers):
    """Beta-binomial fit of the per-answer counts (agreements out of known positions): the mean
    m and the concentration kappa by joint maximum likelihood (``beta_mle``); the session
    length is the mean answer length.

    The mean is not the pooled agreement rate (``fit_iid``), which weighs each answer by its
    known positions: that is the beta's mean only when the number of known positions does not
    go with the answer's rate. In a Spec-Bench-like trace it does: HF's draft length grows with
    the rate, so a smaller share of a high-rate answer's positions are (hidden) bonus positions
    (``hf_observe``: 86% of the positions known at alpha 0.6, 94% at 0.9), and the pooled rate
    of beta data with the shipped answer lengths is 0.003 (8 standard errors over 400 traces)
    above the truth; when answers' lengths go with their rates, as in the shipped trace, the two
    differ by far more.
    """
    m, kappa = beta_mle(*answer_counts(answers))
    return {"mean": m, "concentration": kappa,
            "session_tokens": int(round(float(np.mean([len(a.bits) for a in answers]))))}


KAPPA_BOUNDS = (1e-2, 1e5)   # kappa is searched in this range (1e5: i.i.d. for any answer)


def _beta_nll_grad(u, s, n):
    """Negative beta-binomial log-likelihood of the counts at u = (logit m, log kappa), and its
    gradient (digamma differences)."""
    m, kappa = special.expit(u[0]), np.exp(u[1])
    a, b = m * kappa, (1 - m) * kappa
    ll = (special.betaln(a + s, b + n - s) - special.betaln(a, b)).sum()
    common = special.digamma(kappa) - special.digamma(kappa + n)
    da = (special.digamma(a + s) - special.digamma(a) + common).sum()
    db = (special.digamma(b + n - s) - special.digamma(b) + common).sum()
    grad = np.array([(da - db) * kappa * m * (1 - m), (da * m + db * (1 - m)) * kappa])
    return -float(ll), -grad


def beta_mle(s, n):
    """Joint maximum-likelihood (m, kappa) of the beta-binomial counts ``s`` out of ``n`` (every
    n > 0), kappa within ``KAPPA_BOUNDS``: from the pooled rate and the likelihood's best kappa
    there, L-BFGS-B on (logit m, log kappa) with the exact gradient. At kappa's upper bound the
    counts are i.i.d. as far as the beta can tell, and m is (about) the pooled rate."""
    s, n = np.asarray(s, dtype=float), np.asarray(n, dtype=float)
    pooled = float(s.sum() / n.sum())
    if pooled <= 0 or pooled >= 1:
        return pooled, KAPPA_BOUNDS[1]
    lo, hi = np.log(KAPPA_BOUNDS[0]), np.log(KAPPA_BOUNDS[1])
    u0 = special.logit(pooled)
    start = optimize.minimize_scalar(lambda v: _beta_nll_grad((u0, v), s, n)[0],
                                     bounds=(lo, hi), method="bounded",
                                     options={"xatol": 1e-6})
    res = optimize.minimize(_beta_nll_grad, [u0, float(start.x)], args=(s, n), jac=True,
                            method="L-BFGS-B", bounds=[(-30.0, 30.0), (lo, hi)],
                            options={"ftol": 1e-15, "gtol": 1e-8, "maxiter": 1000})
    u = res.x if res.fun <= start.fun else np.array([u0, float(start.x)])
    return float(special.expit(u[0])), float(np.exp(u[1]))


def sorted_padded(seqs):
    """Agreement sequences as observations (N, T) int8 padded with UNKNOWN, the longest first
    (equal lengths in their order), their lengths (N,), and the list live: the sequences still
    under way at position t (longer than t: an empty one never) are the first live[t]."""
    seqs = sorted((np.asarray(b) for b in seqs), key=len, reverse=True)
    lengths = np.array([len(b) for b in seqs], dtype=np.int64)
    obs = np.full((len(seqs), int(lengths[0]) if len(seqs) else 0), UNKNOWN, dtype=np.int8)
    for i, b in enumerate(seqs):
        obs[i, :len(b)] = b
    live = np.searchsorted(-lengths, -np.arange(obs.shape[1]), side="left").tolist()
    return obs, lengths, live


class _Chains:
    """The answers as padded observations for the forward-backward passes of ``fit_markov``
    (``sorted_padded``)."""

    def __init__(self, answers):
        self.obs, self.lengths, self.live = sorted_padded(a.bits for a in answers)
        t_max = self.obs.shape[1]
        self.known = self.obs >= 0
        self.ones = self.obs == 1
        self.inside = np.arange(t_max)[None, :] < self.lengths[:, None]

    def expectations(self, theta):
        """Forward-backward at theta = (rate 0, rate 1, P(0 -> 1), P(1 -> 0), P(start in 0)):
        the log-likelihood of the known positions (unknown ones missing) and the expected
        sufficient statistics: transitions xi (2, 2), agreements and disagreements at known
        positions per state (2,) each, initial state law summed over answers (2,), and the
        posterior state law (N, T, 2)."""
        obs, known, ones, live = self.obs, self.known, self.ones, self.live
        n_seq, t_max = obs.shape
        r = np.asarray(theta[:2], dtype=float)
        a = np.array([[1 - theta[2], theta[2]], [theta[3], 1 - theta[3]]])
        pi = np.array([theta[4], 1 - theta[4]])
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
            q = live[t + 1]     # the transitions t -> t + 1 of the answers still under way
            nb = e[:q, t + 1] * bwd[:q, t + 1] / scale[:q, t + 1, None]
            bwd[:q, t] = nb @ a.T
            xi += a * np.einsum("ni,nj->ij", fwd[:q, t], nb)
        post = fwd * bwd
        post /= post.sum(2, keepdims=True)
        w = post * (known & self.inside)[..., None]
        agree = (w * ones[..., None]).sum((0, 1))
        disagree = w.sum((0, 1)) - agree
        return ll, xi, agree, disagree, post[:, 0].sum(0), post


THETA_BOUND = 23.0   # |logit| of the probabilities in the direct optimisation (1e-10 from 0, 1)


def _em_update(stats, n_seq):
    """EM's M-step: the parameters maximising the expected complete-data log-likelihood."""
    _, xi, agree, disagree, first, _ = stats
    r = np.clip(agree / np.maximum(agree + disagree, 1e-300), 1e-9, 1 - 1e-9)
    a = xi / np.maximum(xi.sum(1, keepdims=True), 1e-300)
    return np.array([r[0], r[1], a[0, 1], a[1, 0], first[0] / n_seq])


def _score(theta, stats, n_seq):
    """Gradient of the log-likelihood in the logits of theta (Fisher's identity: that of the
    expected complete-data log-likelihood at theta)."""
    _, xi, agree, disagree, first, _ = stats
    return np.array([agree[0] - theta[0] * (agree[0] + disagree[0]),
                     agree[1] - theta[1] * (agree[1] + disagree[1]),
                     xi[0, 1] - theta[2] * xi[0].sum(), xi[1, 0] - theta[3] * xi[1].sum(),
                     first[0] - theta[4] * n_seq])


def fit_markov(answers, iterations=500, tol=1e-6, start=None, polish=True, max_polish=1000):
    """Maximum likelihood for the Gilbert-Elliott model: Baum-Welch (EM) from ``start`` (easy
    rate, hard rate, easy -> hard, hard -> easy; None: around the pooled rate) until an
    iteration gains less than ``tol`` x |log-likelihood| or after ``iterations``, then (with
    ``polish``) L-BFGS-B on the logits of the five probabilities from EM's point, with the exact
    gradient from the same forward-backward pass. EM alone can crawl for thousands of
    iterations where the two states are close (near-i.i.d. data), far from its maximum.

    Returns the scenario keys, EM's own parameters (``em_*``), the log-likelihood of those final
    parameters, ``iterations`` (EM's), ``polish_iterations`` and ``converged``: the
    optimiser's convergence test met (or, without ``polish``, EM's); False is reported by the
    command, never silently."""
    chains = _Chains(answers)
    n_seq = len(chains.lengths)
    m = mean_agreement(answers)
    if start is None:
        start = (min(0.95, m + 0.25), max(0.05, m - 0.35), 0.1, 0.1)
    theta = np.array([*start[:4], 0.5], dtype=float)
    prev_ll = -np.inf
    it, converged = 0, False
    for it in range(1, iterations + 1):
        stats = chains.expectations(theta)
        ll = stats[0]
        if ll - prev_ll < tol * abs(ll):
            converged = True   # EM never lowers the log-likelihood: it has stalled
            break
        theta, prev_ll = _em_update(stats, n_seq), ll
    polished, message = 0, ("EM converged" if converged else
                            f"EM stopped at its cap of {iterations} iterations")
    if polish:
        theta = np.clip(theta, special.expit(-THETA_BOUND), special.expit(THETA_BOUND))

        def nll(u):
            th = special.expit(u)
            st = chains.expectations(th)
            return -st[0], -_score(th, st, n_seq)

        res = optimize.minimize(nll, special.logit(theta), jac=True, method="L-BFGS-B",
                                bounds=[(-THETA_BOUND, THETA_BOUND)] * 5,
                                options={"maxiter": int(max_polish), "ftol": 1e-15,
                                         "gtol": 1e-5})
        theta, polished, converged = special.expit(res.x), int(res.nit), bool(res.success)
        message = f"L-BFGS-B: {res.message}"
    ll, _, _, _, _, post = chains.expectations(theta)
    easy = int(np.argmax(theta[:2]))
    hard = 1 - easy
    leave = theta[2:4]       # P(0 -> 1), P(1 -> 0): the probability of leaving each state
    # the simulator's chain never restarts, the trace's restarts at every answer: keep the
    # switching rate (at least one switch per answer) and split it so that the stationary
    # law is the posterior state occupancy of the trace
    inside = chains.inside
    pe = float((post * inside[..., None]).sum((0, 1))[easy] / inside.sum())
    s = max(float(leave[easy] + leave[hard]), 1.0 / float(np.mean(chains.lengths)))
    return {"easy_rate": float(theta[easy]), "hard_rate": float(theta[hard]),
            "easy_to_hard": s * (1 - pe), "hard_to_easy": s * pe,
            "em_easy_to_hard": float(leave[easy]), "em_hard_to_easy": float(leave[hard]),
            "em_initial_easy": float(theta[4] if easy == 0 else 1 - theta[4]),
            "log_likelihood": ll, "iterations": it, "polish_iterations": polished,
            "converged": converged, "message": message}


def fit_all(answers):
    """{model: its fit} for ``MODELS`` (``fit_iid``, ``fit_beta``, ``fit_markov``)."""
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
    out = [np.zeros(0, dtype=np.int64)]
    for b in seqs:
        b = np.asarray(b)
        ends = np.flatnonzero(b != 1)                 # where each run of agreements stops
        before = np.concatenate(([-1], ends[:-1]))    # the stop before (-1: the start)
        clean = b[ends] == 0
        clean[1:] &= b[ends[:-1]] == 0                # a run after an UNKNOWN is not counted
        out.append((ends - before - 1)[clean])
    return np.concatenate(out).astype(np.int64)


def expected_steps(seqs, rate, gamma):
    """Expected (steps, empty steps) of walking the sequences with draft length ``gamma`` (as
    ``replay``) when every UNKNOWN position is an agreement with probability ``rate``,
    independently. The accepted count of the step under way is a Markov chain over positions;
    its forward law gives the probability that a step ends at each position, so both
    expectations are exact sums over positions."""
    obs, lengths, live = sorted_padded(seqs)
    if not len(lengths) or lengths[0] == 0:
        return 0.0, 0.0
    g = int(gamma)
    agree = np.where(obs == UNKNOWN, rate, obs == 1)   # read only where a sequence is live
    agree[np.arange(len(lengths)), lengths - 1] = 0.0   # the answer's last position ends a step
    law = np.zeros((len(lengths), g + 1))   # law[:, k]: k positions accepted in the step under way
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
    """Agreement rate of the known positions of agreement sequences (nan: none known)."""
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
        "markov": {"acceptance": {"model": "markov",
                                  **{k: round(mk[k], 6) for k in MARKOV_KEYS}}},
    }
    if trace is not None:
        out["trace"] = {"acceptance": {"model": "trace", **trace}}
    return out


__all__ = ["fit_iid", "fit_beta", "fit_markov", "fit_all", "validate", "replay", "run_lengths",
           "synthetic", "metrics", "expected_steps", "selection_seed", "scenario_snippet",
           "markov_stationary"]
