"""Queueing oracles and request lengths (docs/model.md sections 9-10): pure numpy.

- ``round_count_moments``: E[R_L] and E[R_L^2], R_L = rounds one request of L tokens needs when
  each round gives N = A + 1 tokens (A truncated geometric), by a renewal recursion on the
  tokens still needed.
- ``pollaczek_khinchine``: M/G/1 mean waiting time W_q = lambda E[S^2] / (2 (1 - rho)).
- ``draw_lengths``: request lengths (fixed, geometric, lognormal, empirical).
"""
import numpy as np

from .speculative import accepted_pmf

LENGTH_MODELS = ("fixed", "geometric", "lognormal", "empirical", "per-task")


def round_count_moments(alpha, gamma, length, cap_to_remaining=False):
    """(E[R_L], E[R_L^2]) for one device drafting ``gamma`` tokens per round, L = ``length``.

    With ``cap_to_remaining`` the draft length is min(gamma, n - 1) when n tokens are still
    needed (the moments do not change: tokens beyond n do not matter); without it, the last
    round's surplus tokens are discarded. m1[n], m2[n]: moments when n tokens are needed.
    """
    m1 = np.zeros(length + 1)
    m2 = np.zeros(length + 1)
    for n in range(1, length + 1):
        g = min(gamma, n - 1) if cap_to_remaining else gamma
        pmf = accepted_pmf(alpha, g)  # P(A = j), tokens j + 1
        rest = np.maximum(n - (np.arange(g + 1) + 1), 0)
        m1[n] = 1.0 + pmf @ m1[rest]
        m2[n] = 1.0 + pmf @ (2.0 * m1[rest] + m2[rest])
    return float(m1[length]), float(m2[length])


def pollaczek_khinchine(arrival_rate, mean_service, second_moment_service):
    """M/G/1 mean waiting time in queue W_q and sojourn W = W_q + E[S] (inf if rho >= 1)."""
    rho = arrival_rate * mean_service
    if rho >= 1.0:
        return float("inf"), float("inf")
    wq = arrival_rate * second_moment_service / (2.0 * (1.0 - rho))
    return wq, wq + mean_service


def draw_lengths(rng, n, model, mean=64, sigma=1.0, values=()):
    """``n`` request lengths (tokens, >= 1) for ``model`` in fixed, geometric, lognormal, empirical.

    fixed: ``mean`` every time; geometric: support 1, 2, ... with mean ``mean``; lognormal:
    round(exp(mu + sigma Z)) >= 1 with E[exp(mu + sigma Z)] = ``mean``; empirical: uniform draws
    from ``values``. 'per-task' lengths are fixed per device and drawn by the caller.
    """
    if model == "fixed":
        return np.full(n, int(mean), dtype=np.int64)
    if model == "geometric":
        return rng.geometric(1.0 / float(mean), size=n).astype(np.int64)
    if model == "lognormal":
        mu = np.log(float(mean)) - 0.5 * sigma * sigma
        return np.maximum(np.rint(rng.lognormal(mu, sigma, size=n)), 1).astype(np.int64)
    if model == "empirical":
        values = np.asarray(values, dtype=np.int64)
        return values[rng.integers(0, values.size, size=n)]
    raise ValueError(f"unknown length model {model!r}; allowed: {LENGTH_MODELS}")


def md1_wait_cdf(t, arrival_rate, service_s):
    """M/D/1 waiting-time CDF P(W_q <= t) (Erlang 1909; Crommelin 1932):
    (1 - rho) sum_{j=0}^{floor(t/D)} [lambda (j D - t)]^j / j! e^{-lambda (j D - t)}.

    The alternating sum loses precision for t >> D (keep t / D below ~20); 0 for t < 0.
    """
    lam, d = float(arrival_rate), float(service_s)
    rho = lam * d
    if t < 0:
        return 0.0
    if rho >= 1.0:
        return 0.0
    total = 0.0
    fact = 1.0
    for j in range(int(np.floor(t / d)) + 1):
        if j:
            fact *= j
        x = lam * (j * d - t)
        total += x**j / fact * np.exp(-x)
    return float((1.0 - rho) * total)
