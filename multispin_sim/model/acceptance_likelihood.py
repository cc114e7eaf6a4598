"""Likelihood-based comparison of the fitted acceptance models and standard errors of their
parameters (numpy/scipy).

Every model is scored on the same data: the known positions of each answer as a 0/1 sequence,
unknown (bonus) positions marginalised out as missing observations.

- ``iid``: Bernoulli, alpha^s (1 - alpha)^(n - s) over all known positions.
- ``beta``: per answer B(a + s, b + n - s) / B(a, b), a = m kappa, b = (1 - m) kappa: the
  probability of the answer's sequence (exchangeable within the answer, so no binomial
  coefficient: the three models give probabilities of the same sequences).
- ``markov``: the Gilbert-Elliott hidden Markov model with EM's own parameters (emission rates,
  ``em_*`` switching probabilities and initial state law), a chain restarting at every answer
  (the forward algorithm).

Parameters counted: iid 1, beta 2 (mean, kappa), markov 5 (two rates, two switching
probabilities, the initial state probability, all fitted by EM). AIC = 2k - 2 LL, BIC = k ln(n)
- 2 LL with n the number of known positions (positions within an answer are dependent under
beta and markov, so this n is a convention).

Standard errors come from the observed information: the inverse of the Hessian of the negative
log-likelihood at the fit, by central differences on logit / log coordinates, mapped back by the
delta method (iid: the closed form sqrt(alpha (1 - alpha) / n)). A parameter whose boundary
value (a probability of 0 or 1, kappa of 0 or infinity) is within the 95% likelihood-ratio
interval of the fit has no standard error (None): the quadratic approximation behind it does
not hold there. The other parameters' errors are then conditional on it; a Hessian that is not
positive definite gives None for every parameter of the model.
"""
import numpy as np
from scipy import special, stats

from .acceptance_fit import answer_counts, sorted_padded

PARAMETERS = {"iid": ("alpha",),
              "beta": ("mean", "concentration"),
              "markov": ("easy_rate", "hard_rate", "em_easy_to_hard", "em_hard_to_easy",
                         "em_initial_easy")}
# half the 95% quantile of chi-square(1): a boundary value whose log-likelihood is within this
# of the fit's lies inside the likelihood-ratio interval
LR_HALF = float(stats.chi2.ppf(0.95, 1) / 2)
# relative step of the central differences: a log-likelihood summed over ~1e5 positions carries
# rounding of ~1e-11, so a second difference errs by ~1e-11 / STEP^2 = 1e-5, far below the
# curvatures (tens and more), while the truncation error is ~STEP^2 = 1e-6 relative (steps of
# 1e-4 and 1e-2 give the shipped trace's standard errors to 1e-4)
STEP = 1e-3


def known_positions(answers):
    """The n of BIC: known positions of all answers."""
    return int(answer_counts(answers)[1].sum())


def estimates(model, fit):
    """{parameter: fitted value} of one model (iid's alpha is its fit's ``mean``)."""
    if model == "iid":
        return {"alpha": fit["mean"]}
    return {p: fit[p] for p in PARAMETERS[model]}


# --- log-likelihoods ---------------------------------------------------------------------------

def iid_log_likelihood(answers, alpha):
    """Sum over known positions of log alpha (agreement) or log(1 - alpha); 0 log 0 = 0."""
    s, n = answer_counts(answers)
    return float(special.xlogy(s.sum(), alpha) + special.xlogy(n.sum() - s.sum(), 1 - alpha))


def beta_log_likelihood(answers, mean, concentration):
    """Sum over answers of ln B(a + s, b + n - s) - ln B(a, b), a = m kappa, b = (1 - m) kappa.

    ``mean`` and ``concentration`` may be arrays (broadcast; one log-likelihood each)."""
    s, n = answer_counts(answers)
    return _beta_ll(s, n, mean, concentration)


def _beta_ll(s, n, mean, concentration):
    """``beta_log_likelihood`` of the counts. Limits: kappa = inf, or m = 0 or 1 (every
    answer's alpha is m), is the iid model with alpha = m; kappa = 0 gives an answer
    probability m if all its known positions agree, 1 - m if none does, 0 otherwise."""
    m, kappa = np.broadcast_arrays(np.asarray(mean, dtype=float),
                                   np.asarray(concentration, dtype=float))
    m, kappa = m[..., None], kappa[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        a, b = m * kappa, (1 - m) * kappa
        finite = special.betaln(a + s, b + n - s) - special.betaln(a, b)
        iid = special.xlogy(s, m) + special.xlogy(n - s, 1 - m)
        pure = np.where(s == n, np.log(m), np.where(s == 0, np.log1p(-m), -np.inf))
    degenerate = np.isinf(kappa) | (m <= 0) | (m >= 1)
    out = np.where(degenerate, iid, np.where(kappa == 0, pure, finite)).sum(-1)
    return float(out) if out.ndim == 0 else out


def _markov_ll(obs, live, theta):
    """Forward algorithm for parameter rows ``theta`` (P, 5): easy rate, hard rate,
    easy -> hard, hard -> easy, P(first state easy); state 0 is easy. Returns (P,)."""
    theta = np.asarray(theta, dtype=float)
    rates = theta[:, None, 0:2]                                          # (P, 1, 2)
    e2h, h2e = theta[:, 2], theta[:, 3]
    trans = np.stack([np.stack([1 - e2h, e2h], -1), np.stack([h2e, 1 - h2e], -1)], 1)
    first = np.stack([theta[:, 4], 1 - theta[:, 4]], -1)[:, None, :]    # (P, 1, 2)
    ll = np.zeros(len(theta))
    f = None
    for t, q in enumerate(live):
        x = obs[:q, t][None, :, None]
        # an unknown position is a missing observation: emission probability 1 in both states
        e = np.where(x == 1, rates, np.where(x == 0, 1 - rates, 1.0))
        f = (first if t == 0 else np.einsum("pni,pij->pnj", f[:, :q], trans)) * e
        c = f.sum(2)
        with np.errstate(divide="ignore"):
            ll += np.log(c).sum(1)
        # a path of probability 0 stays at 0 (log-likelihood -inf), never 0 / 0
        f = f / np.where(c > 0, c, 1.0)[..., None]
    return ll


def markov_log_likelihood(answers, easy_rate, hard_rate, easy_to_hard, hard_to_easy,
                          initial_easy):
    """Log-likelihood of the known positions under the hidden Markov model, the chain starting
    afresh at every answer in the easy state with probability ``initial_easy``. Arguments may
    be arrays (broadcast; one log-likelihood each)."""
    args = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (
        easy_rate, hard_rate, easy_to_hard, hard_to_easy, initial_easy)))
    shape = args[0].shape
    theta = np.stack([x.ravel() for x in args], -1)
    obs, _, live = sorted_padded(a.bits for a in answers)
    out = _markov_ll(obs, live, theta).reshape(shape)
    return float(out) if out.ndim == 0 else out


# model -> its log-likelihood, called with the model's ``estimates`` in ``PARAMETERS`` order
LOG_LIKELIHOODS = {"iid": iid_log_likelihood, "beta": beta_log_likelihood,
                   "markov": markov_log_likelihood}


def log_likelihoods(answers, fits):
    """{model: log-likelihood of the known positions} for the fitted models in ``fits``."""
    return {name: ll(answers, *estimates(name, fits[name]).values())
            for name, ll in LOG_LIKELIHOODS.items() if name in fits}


def information_criteria(log_likelihood, parameters, n):
    """(AIC, BIC) = (2k - 2 LL, k ln(n) - 2 LL)."""
    return (2 * parameters - 2 * log_likelihood,
            parameters * np.log(n) - 2 * log_likelihood)


# --- standard errors ---------------------------------------------------------------------------

def central_hessian(f, u, step):
    """Hessian of f at u by central differences; ``f`` maps rows (P, k) to (P,) in one call.

    Not ``scipy.differentiate.hessian``: its adaptive steps took 152 s on the shipped trace's
    markov fit (without converging), against 0.5 s for these 51 points in one forward pass."""
    k = len(u)
    eye = np.diag(step)
    pts = [u]
    for i in range(k):
        pts += [u + eye[i], u - eye[i]]
        for j in range(i):
            pts += [u + eye[i] + eye[j], u + eye[i] - eye[j], u - eye[i] + eye[j],
                    u - eye[i] - eye[j]]
    vals = iter(f(np.array(pts)).tolist())
    f0 = next(vals)
    h = np.zeros((k, k))
    for i in range(k):
        fp, fm = next(vals), next(vals)
        h[i, i] = (fp - 2 * f0 + fm) / step[i] ** 2
        for j in range(i):
            pp, pm, mp, mm = (next(vals) for _ in range(4))
            h[i, j] = h[j, i] = (pp - pm - mp + mm) / (4 * step[i] * step[j])
    return h


# unconstrained coordinate of each kind of parameter: (to u, back, d theta / d u, boundaries)
LOGIT = (special.logit, special.expit, lambda p: p * (1 - p), (0.0, 1.0))
LOG = (np.log, np.exp, lambda x: x, (0.0, np.inf))


def observed_information_se(loglik, theta, kinds):
    """Standard errors (list, None where not available) of the parameters ``theta`` from the
    observed information of ``loglik`` (rows (P, k) of natural parameters -> (P,)).

    ``kinds``: LOGIT or LOG per parameter, the unconstrained coordinate of the Hessian. A
    parameter whose boundary values' log-likelihood (others at the fit) comes within LR_HALF of
    the fit's is held at its value and gets None.
    """
    theta = np.asarray(theta, dtype=float)
    k = len(theta)
    probes = [theta]
    for j, kind in enumerate(kinds):
        for edge in kind[3]:
            p = theta.copy()
            p[j] = edge
            probes.append(p)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ll = loglik(np.array(probes))
    if not np.isfinite(ll[0]):
        return [None] * k
    edges = ll[1:].reshape(k, 2)
    free = [j for j in range(k) if not np.any(edges[j] > ll[0] - LR_HALF)]
    se = [None] * k
    if not free:
        return se
    u = np.array([kinds[j][0](theta[j]) for j in free])

    def nll(rows):
        full = np.repeat(theta[None, :], len(rows), 0)
        for c, j in enumerate(free):
            full[:, j] = kinds[j][1](rows[:, c])
        return -loglik(full)

    hess = central_hessian(nll, u, STEP * np.maximum(1.0, np.abs(u)))
    try:
        np.linalg.cholesky(hess)    # positive definite, else no standard error at all
    except np.linalg.LinAlgError:
        return se
    var_u = np.diag(np.linalg.inv(hess))
    for c, j in enumerate(free):
        se[j] = float(kinds[j][2](theta[j]) * np.sqrt(var_u[c]))
    return se


def iid_standard_errors(answers, fit):
    """{alpha: sqrt(alpha (1 - alpha) / n)} (the inverse observed information, exactly); None
    at alpha = 0 or 1."""
    a, n = fit["mean"], known_positions(answers)
    return {"alpha": float(np.sqrt(a * (1 - a) / n)) if 0 < a < 1 and n else None}


def beta_standard_errors(answers, fit):
    """{mean, concentration}: observed information on (logit m, log kappa)."""
    s, n = answer_counts(answers)
    se = observed_information_se(lambda rows: _beta_ll(s, n, rows[:, 0], rows[:, 1]),
                                 [fit["mean"], fit["concentration"]], (LOGIT, LOG))
    return dict(zip(PARAMETERS["beta"], se))


def markov_standard_errors(answers, fit):
    """{easy_rate, hard_rate, em_easy_to_hard, em_hard_to_easy, em_initial_easy}: observed
    information on the logits of the five probabilities."""
    obs, _, live = sorted_padded(a.bits for a in answers)
    se = observed_information_se(lambda rows: _markov_ll(obs, live, rows),
                                 [fit[k] for k in PARAMETERS["markov"]], (LOGIT,) * 5)
    return dict(zip(PARAMETERS["markov"], se))


STANDARD_ERRORS = {"iid": iid_standard_errors, "beta": beta_standard_errors,
                   "markov": markov_standard_errors}


def model_statistics(answers, fits):
    """Per model: log-likelihood, parameters counted, AIC, BIC, estimates and standard errors;
    and the models AIC and BIC prefer. {"n": known positions, "models": {...}, "aic": model,
    "bic": model}."""
    n = known_positions(answers)
    lls = log_likelihoods(answers, fits)
    models = {}
    for name, ll in lls.items():
        k = len(PARAMETERS[name])
        aic, bic = information_criteria(ll, k, n)
        models[name] = {"log_likelihood": ll, "parameters": k, "aic": float(aic),
                        "bic": float(bic), "estimates": estimates(name, fits[name]),
                        "se": STANDARD_ERRORS[name](answers, fits[name])}
    return {"n": n, "models": models,
            "aic": min(models, key=lambda m: models[m]["aic"]) if models else None,
            "bic": min(models, key=lambda m: models[m]["bic"]) if models else None}


__all__ = ["iid_log_likelihood", "beta_log_likelihood", "markov_log_likelihood",
           "log_likelihoods", "information_criteria", "observed_information_se",
           "iid_standard_errors", "beta_standard_errors", "markov_standard_errors",
           "model_statistics", "known_positions", "estimates", "PARAMETERS", "central_hessian",
           "LOGIT", "LOG"]
