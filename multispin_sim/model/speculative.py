"""Speculative-decoding outcomes under the i.i.d. acceptance model (docs/model.md section 3).

P(A >= j) = alpha^j for j <= gamma: A is a geometric count of successes truncated at gamma.
Outcomes are drawn by inversion from one uniform U per device and round,
A = min(floor(ln U / ln alpha), gamma), so the same U gives monotone, coupled outcomes for every
draft length (common random numbers across draft-length candidates and policies).
"""
import numpy as np


def expected_tokens(alpha, gamma):
    """E[N] = (1 - alpha^(gamma+1)) / (1 - alpha); gamma + 1 when alpha == 1. Vectorised."""
    alpha = np.asarray(alpha, dtype=float)
    gamma = np.asarray(gamma, dtype=float)
    one = alpha >= 1.0
    safe = np.where(one, 0.5, alpha)
    value = (1.0 - safe ** (gamma + 1.0)) / (1.0 - safe)
    return np.where(one, gamma + 1.0, value)


def rejection_probability(alpha, gamma):
    """P(some draft is rejected) = 1 - alpha^gamma (0 for gamma = 0)."""
    return 1.0 - np.asarray(alpha, dtype=float) ** np.asarray(gamma, dtype=float)


def accepted_pmf(alpha, gamma):
    """P(A = j), j = 0..gamma, for scalar alpha and gamma (truncated geometric)."""
    j = np.arange(gamma + 1)
    pmf = alpha**j * (1.0 - alpha)
    pmf[gamma] = alpha**gamma
    return pmf


def run_length(u, alpha):
    """Untruncated acceptance run floor(ln U / ln alpha) for U in (0, 1]; inf when alpha == 1."""
    u = np.asarray(u, dtype=float)
    alpha = np.asarray(alpha, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(alpha >= 1.0, np.inf, np.floor(np.log(u) / np.log(alpha)))


def accepted_from_uniform(u, alpha, gamma):
    """Accepted drafts A = min(floor(ln U / ln alpha), gamma), broadcasting over all inputs."""
    run = run_length(u, alpha)
    return np.minimum(run, np.asarray(gamma, dtype=float)).astype(np.int64)


def draft_outcome(u, alpha, gamma):
    """(accepted, tokens, rejected) for uniforms ``u``: tokens = A + 1, rejected = A < gamma."""
    accepted = accepted_from_uniform(u, alpha, gamma)
    rejected = accepted < np.asarray(gamma)
    return accepted, accepted + 1, rejected


def acceptance_uniforms(rng, size):
    """An array of shape ``size`` of uniforms on (0, 1] for ``accepted_from_uniform``
    (1 - U[0, 1) avoids log 0)."""
    u = rng.random(size)
    np.subtract(1.0, u, out=u)   # 1 - U in place: the same values, one array less
    return u
