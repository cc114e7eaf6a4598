"""Queueing oracles and request lengths (docs/model.md sections 9-10): pure numpy.

- ``round_count_moments``: E[R_L] and E[R_L^2], R_L = rounds one request of L tokens needs when
  each round gives N = A + 1 tokens (A truncated geometric), by a renewal recursion on the
  tokens still needed.
- ``pollaczek_khinchine``: M/G/1 mean waiting time W_q = lambda E[S^2] / (2 (1 - rho)).
- ``LENGTH_MODELS``: the request length models (``workload.length``), each a class whose
  instances give one device's lengths (``next()``) and whose ``draw`` draws a block of them.
"""
import numpy as np

from .registry import Registry
from .speculative import accepted_pmf

# workload.length -> class: the one list of the length models' names (the schema reads it)
LENGTH_MODELS = Registry("length model")


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


MAX_LENGTH = 10_000_000   # tokens of one request (scenario.names.MAX_REQUEST_TOKENS)


class Lengths:
    """Request lengths of one device, drawn from its own generator ``rng`` in blocks of
    ``block`` (``draw``); ``workload``: the ``workload`` section (length_tokens, length_sigma,
    length_values, length_per_task), ``task``: the device's task. A draw of an unbounded law
    beyond ``MAX_LENGTH`` is cut to it."""

    def __init__(self, workload, rng, task, block=256):
        self.mean = workload.length_tokens
        self.sigma = workload.length_sigma
        self.values = workload.length_values
        self.rng = rng
        self.block = block
        self._buf = []

    @staticmethod
    def draw(rng, n, mean, sigma, values):
        """``n`` lengths (tokens, >= 1) as an int64 array."""
        raise NotImplementedError

    def next(self):
        if not self._buf:
            self._buf = self.draw(self.rng, self.block, self.mean, self.sigma,
                                  self.values).tolist()[::-1]
        return self._buf.pop()


@LENGTH_MODELS.register("fixed")
class FixedLengths(Lengths):
    """``length_tokens`` for every request of the device (no draws)."""

    def __init__(self, workload, rng, task, block=256):
        self.fixed = self.length(workload, task)

    @staticmethod
    def length(workload, task):
        return int(workload.length_tokens)

    @staticmethod
    def draw(rng, n, mean, sigma, values):
        return np.full(n, int(mean), dtype=np.int64)

    def next(self):
        return self.fixed


@LENGTH_MODELS.register("geometric")
class GeometricLengths(Lengths):
    """Support 1, 2, ... with mean ``length_tokens``."""

    @staticmethod
    def draw(rng, n, mean, sigma, values):
        return np.minimum(rng.geometric(1.0 / float(mean), size=n), MAX_LENGTH).astype(np.int64)


@LENGTH_MODELS.register("lognormal")
class LognormalLengths(Lengths):
    """round(exp(mu + sigma Z)) >= 1 with E[exp(mu + sigma Z)] = ``length_tokens``,
    sigma = ``length_sigma``."""

    @staticmethod
    def draw(rng, n, mean, sigma, values):
        mu = np.log(float(mean)) - 0.5 * sigma * sigma
        return np.clip(np.rint(rng.lognormal(mu, sigma, size=n)), 1, MAX_LENGTH).astype(np.int64)


@LENGTH_MODELS.register("empirical")
class EmpiricalLengths(Lengths):
    """Uniform draws from ``length_values``."""

    @staticmethod
    def draw(rng, n, mean, sigma, values):
        values = np.asarray(values, dtype=np.int64)
        return values[rng.integers(0, values.size, size=n)]


@LENGTH_MODELS.register("per-task")
class PerTaskLengths(FixedLengths):
    """``length_per_task`` of the device's task (else ``length_tokens``) for every request."""

    @staticmethod
    def length(workload, task):
        return int(workload.length_per_task.get(task, workload.length_tokens))

    @staticmethod
    def draw(rng, n, mean, sigma, values):
        raise ValueError("per-task lengths are fixed per device (by its task): nothing to draw")


def md1_wait_cdf(t, arrival_rate, service_s):
    """M/D/1 waiting-time CDF P(W_q <= t) (Erlang 1909; Crommelin 1932):
    (1 - rho) sum_{j=0}^{floor(t/D)} [lambda (j D - t)]^j / j! e^{-lambda (j D - t)}.

    The alternating sum loses precision for t >> D (keep t / D below ~20); 0 for t < 0.
    """
    lam, d = float(arrival_rate), float(service_s)
    rho = lam * d
    if t < 0 or rho >= 1.0:
        return 0.0
    total = 0.0
    fact = 1.0
    for j in range(int(np.floor(t / d)) + 1):
        if j:
            fact *= j
        x = lam * (j * d - t)
        total += x**j / fact * np.exp(-x)
    return float((1.0 - rho) * total)
