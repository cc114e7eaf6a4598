"""E[T_comm] over the verification outcomes: the estimators of the draft objective
(``model.goodput``; docs/model.md section 7).

The expectation of T_comm over the outcomes o (which devices are rejected) is estimated in one
of three ways:

- ``ExactTcomm``: enumeration of all 2^K rejected sets (3^K (rejected set, coin) pairs for the
  random split), each weighted by its probability. The reference, for K up to about 14 (about
  10 for the random split).
- ``SAATcomm``: sample average approximation over M sampled outcomes with common random numbers:
  the M x K acceptance uniforms are drawn once per decision, and device k of sample m is rejected
  under any gamma iff its untruncated acceptance run floor(ln U / ln alpha) is < gamma_k
  (monotone coupling, ``speculative.run_length``). Every candidate gamma is judged on the same
  samples, and a +1 on device j changes only the samples whose run equals gamma_j.
- ``ZeroTcomm``: T_comm left out (the computation-only baseline).

T_comm of a rejected set comes from a kernel (``model.tcomm``). Pure numpy, vectorised over
samples and candidates: the reference of the compiled search (``policies.search_numba``).
"""
from functools import cached_property
from itertools import product

import numpy as np

from .speculative import run_length

RUN_CAP = 30_000  # acceptance runs are clipped here (any gamma is far below)
_CHUNK_CELLS = 2_000_000  # rows x K per kernel call when evaluating big batches


def acceptance_runs(uniforms, alpha):
    """Untruncated acceptance runs floor(ln U / ln alpha) (M, K), clipped to ``RUN_CAP``.

    Device k of a sample is rejected under gamma_k iff its run is < gamma_k.
    """
    # fmin: inf (alpha = 1, never rejected) and NaN both become the cap
    return np.fmin(run_length(uniforms, alpha), RUN_CAP).astype(np.int32)


def _run_bound(gamma):
    """Draft lengths to compare with acceptance runs, in the runs' int32 (an int64 operand would
    convert every run): the runs lie in 0..RUN_CAP, so clipping to -1..RUN_CAP + 1 keeps every
    comparison's outcome."""
    return np.minimum(np.maximum(gamma, -1), RUN_CAP + 1).astype(np.int32)   # np.clip: 4x slower


def nonzero_2d(mask):
    """``np.nonzero`` of a 2-D mask: the same (row, column) indices, from ``flatnonzero``
    (a fraction of the time: 15 against 68 us for a 20 x 1,000 mask)."""
    return np.divmod(np.flatnonzero(mask), mask.shape[1])


def moved(gamma, dev, new):
    """Candidate draft lengths (n, K): row i is ``gamma`` with device dev[i] moved to new[i]."""
    cand = np.repeat(gamma[None, :], dev.size, axis=0)
    cand[np.arange(dev.size), dev] = new
    return cand


def _chunked(kernel, rejected, rows):
    """Call ``kernel`` on a big batch in chunks of bounded size."""
    n, k = rejected.shape
    step = max(1, _CHUNK_CELLS // max(k, 1))
    if n <= step:
        return kernel(rejected, rows)
    return np.concatenate([kernel(rejected[i:i + step], rows[i:i + step])
                           for i in range(0, n, step)])


# ---------------------------------------------------------------------------- estimators


class _StatelessTcomm:
    """Stateful search interface (reset / moves) built on ``mean`` alone."""

    def mean(self, gammas):
        raise NotImplementedError

    def path_mean(self, gammas):
        return self.mean(gammas)

    def reset(self, gamma):
        self.gamma = np.array(gamma, dtype=np.int64)
        self.value = float(self.mean(self.gamma[None, :])[0])
        return self.value

    def apply_move(self, j, new):
        gamma = self.gamma.copy()
        gamma[j] = new
        return self.reset(gamma)

    def move_means(self, dev, new, samples=None):
        dev = np.asarray(dev, dtype=np.int64)
        return self.mean(moved(self.gamma, dev, new)) if dev.size else np.zeros(0)

    def plus_one_means(self, dev):
        return self.move_means(dev, self.gamma[dev] + 1)


class ZeroTcomm(_StatelessTcomm):
    """T_comm left out of the objective (computation-only)."""

    def mean(self, gammas):
        return np.zeros(np.atleast_2d(gammas).shape[0])


class ExactTcomm(_StatelessTcomm):
    """E[T_comm] by enumeration of every outcome of the active devices (the reference).

    ``kernel``: a ``TcommKernel``-like callable for outcome rows; for mode 'random' pass
    ``random_split=True`` with ``make_kernel(coin)`` instead: the 3^K (rejected set, coin) pairs
    are enumerated, each coin of a rejected device with probability 1/2.
    """

    def __init__(self, alpha, active, kernel=None, random_split=False, make_kernel=None):
        self.alpha = np.asarray(alpha, dtype=float)
        self.active = np.asarray(active, dtype=bool)
        idx = np.flatnonzero(self.active)
        k = self.alpha.size
        states = (0, 1, 2) if random_split else (0, 1)
        # one row per outcome; no active device: the one outcome where nobody is rejected
        combos = np.array(list(product(states, repeat=idx.size)), dtype=np.int8).reshape(
            len(states) ** idx.size, idx.size)
        masks = np.zeros((combos.shape[0], k), dtype=bool)
        masks[:, idx] = combos > 0
        self.masks = masks
        rows = np.arange(masks.shape[0])
        if random_split:
            coin = np.zeros_like(masks)
            coin[:, idx] = combos == 1
            kernel = make_kernel(coin)
            self.weight = 0.5 ** masks.sum(axis=1)
        else:
            self.weight = np.ones(masks.shape[0])
        self.t = _chunked(kernel, masks, rows)

    def mean(self, gammas):
        gammas = np.atleast_2d(np.asarray(gammas))
        idx = np.flatnonzero(self.active)
        q = 1.0 - self.alpha[idx] ** gammas[:, idx]   # rejection probability (n, Ka)
        m = self.masks[:, idx]
        out = np.empty(gammas.shape[0])
        step = max(1, _CHUNK_CELLS // max(m.size, 1))
        for i in range(0, gammas.shape[0], step):
            qi = q[i:i + step, None, :]
            p = np.where(m[None], qi, 1.0 - qi).prod(axis=2) * self.weight
            out[i:i + step] = p @ self.t
        return out


class SAATcomm:
    """E[T_comm] by sample average approximation over M fixed outcomes (common random numbers).

    ``runs``: (M, K) acceptance runs (``acceptance_runs``): device k of sample m is rejected under
    gamma iff runs[m, k] < gamma_k. ``kernel``: T_comm of rejected rows (``TcommKernel``).

    Besides ``mean`` (any batch of gammas) and ``path_mean`` (a sequence; one kernel call when it
    is nondecreasing), the estimator keeps a current gamma with its per-sample T_comm, so that
    single-device moves are evaluated on the changed samples only (``move_means``), and the +1
    moves of all devices are kept up to date across accepted +1 steps (``plus_one_means``).
    """

    def __init__(self, runs, kernel):
        self.runs = np.asarray(runs, dtype=np.int32)
        self.m, self.k = self.runs.shape
        self.kernel = kernel
        self.gamma = None
        self._plus = None
        self._path = None
        self.rej = None

    @cached_property
    def runs_t(self):
        """The runs transposed, (K, M): one device's runs contiguous (made when first needed:
        a compiled search never reads it)."""
        return np.ascontiguousarray(self.runs.T)

    # -- stateless -------------------------------------------------------------------------
    def per_sample(self, gamma):
        """T_comm of every sample under ``gamma`` (M,)."""
        rej = self.runs < np.asarray(gamma)[None, :]
        return self.kernel(rej, np.arange(self.m))

    def mean(self, gammas):
        gammas = np.atleast_2d(np.asarray(gammas, dtype=np.int64))
        n = gammas.shape[0]
        out = np.empty(n)
        per = max(1, _CHUNK_CELLS // (self.m * max(self.k, 1)))
        for i in range(0, n, per):
            out[i:i + per] = self._grid(gammas[i:i + per]).mean(axis=1)
        return out

    def _grid(self, gammas):
        """T_comm of every sample under every row of ``gammas`` (n, M): the rejected sets of
        every (row, sample) pair in one kernel call."""
        n = gammas.shape[0]
        rej = (self.runs[None, :, :] < _run_bound(gammas)[:, None, :]).reshape(-1, self.k)
        return self.kernel(rej, np.tile(np.arange(self.m), n)).reshape(n, self.m)

    def path_mean(self, gammas):
        """Mean T_comm along a sequence of gammas; one kernel call if it is nondecreasing.

        On a nondecreasing path, device k of sample m flips to rejected at the first step
        whose gamma_k exceeds its run, once; each sample is evaluated at its own flip steps
        only (the budget path: one device rises a step, and most steps change no sample).
        Where most steps raise most devices (the uniform path), nearly every (step, sample)
        pair is such an event, and the grid of them all costs less than the bookkeeping
        (1.4 against 2.7 ms for the 21 steps of K = 20, M = 1,000).
        """
        gammas = np.atleast_2d(np.asarray(gammas, dtype=np.int64))
        n = gammas.shape[0]
        rises = np.diff(gammas, axis=0)
        if n > 1 and np.any(rises < 0):
            return self.mean(gammas)
        if 2 * np.count_nonzero(rises) >= rises.size and n * self.m * self.k <= _CHUNK_CELLS:
            t = np.zeros((n, self.m))
            lead = n - np.count_nonzero(gammas.any(axis=1))   # gamma = 0: nobody rejected
            t[lead:] = self._grid(gammas[lead:])
            self._path = (gammas, None, t)
            return t.mean(axis=1)
        # first step whose gamma_k exceeds the run = number of steps with gamma_k <= run: a
        # table over run values 0..max gamma (larger runs never flip)
        top = int(gammas.max(initial=0))
        table = (gammas[:, :, None] <= np.arange(top + 1)[None, None, :]).sum(axis=0)
        table = np.concatenate([table, np.full((self.k, 1), n)], axis=1)     # (K, top + 2)
        # steps in the narrowest integer type that holds them: the gathers below move less
        table = table.astype(np.int16 if n < 2**15 else np.int64)
        flip = table[np.arange(self.k)[None, :], np.minimum(self.runs, top + 1)]
        # each sample's events: step 0 and every later step at which it flips, by sample and step
        ext = np.concatenate([np.zeros((self.m, 1), flip.dtype), np.sort(flip, axis=1)], axis=1)
        keep = np.ones(ext.shape, dtype=bool)
        keep[:, 1:] = (ext[:, 1:] != ext[:, :-1]) & (ext[:, 1:] < n)
        m_idx, c_idx = nonzero_2d(keep)
        step = ext[m_idx, c_idx].astype(np.int64)
        rej = flip[m_idx] <= step[:, None]
        some = ext[m_idx, 1] <= step             # somebody rejected (else T_comm = 0)
        t = np.zeros(m_idx.size)
        if some.any():
            t[some] = _chunked(self.kernel, rej[some], m_idx[some])
        prev = np.concatenate([[0.0], t[:-1]])
        prev[c_idx == 0] = 0.0                    # first event of a sample: from nothing
        total = np.cumsum(np.bincount(step, weights=t - prev, minlength=n))
        # keep the events: ``reset`` to a point of this path needs no kernel call
        self._path = (gammas, m_idx * (n + 1) + step, t)
        return total / self.m

    def _from_path(self, gamma):
        """Per-sample T_comm at ``gamma`` if it is a point of the last nondecreasing path."""
        if self._path is None:
            return None
        gammas, key, t = self._path
        hit = np.flatnonzero((gammas == gamma[None, :]).all(axis=1))
        if hit.size == 0:
            return None
        if key is None:                           # a short path's (step, sample) grid
            return t[hit[0]].copy()
        n = gammas.shape[0]
        last = np.searchsorted(key, np.arange(self.m) * (n + 1) + hit[0], side="right") - 1
        return t[last]

    # -- stateful --------------------------------------------------------------------------
    def reset(self, gamma):
        """Move to ``gamma`` (its per-sample T_comm from the last path when it is a point of it)."""
        self.gamma = np.array(gamma, dtype=np.int64)
        t = self._from_path(self.gamma)
        self.rej = self.runs < _run_bound(self.gamma)[None, :]
        self.t = self.kernel(self.rej, np.arange(self.m)) if t is None else t
        self._plus = None
        return self._mean_now()

    def _mean_now(self):
        """``value``: the mean T_comm of the current point (t.mean(), fewer calls)."""
        self.value = float(self.t.sum()) / self.m
        return self.value

    def _move_rows(self, dev, new, samples=None):
        """(move index, sample) pairs whose rejection of the moved device changes (among the
        first ``samples`` samples when given)."""
        old = self.gamma[dev]
        lo, hi = np.minimum(old, new), np.maximum(old, new)
        lo, hi = _run_bound(lo)[:, None], _run_bound(hi)[:, None]
        col = self.runs_t[dev, :samples]                         # (n, M)
        return nonzero_2d((col >= lo) & (col < hi))

    def _evaluate_moves(self, dev, new, mv, rows):
        rej = self.rej[rows]
        rej[np.arange(rows.size), dev[mv]] = (new > self.gamma[dev])[mv]
        return self.kernel(rej, rows) - self.t[rows]

    def move_means(self, dev, new, samples=None):
        """Mean T_comm after each single-device move: ``dev``, ``new`` int64 arrays of one
        shape, not empty (as ``DraftObjective.move_values`` passes them). ``samples``: estimate
        it on the first ``samples`` samples only (a cheaper screening estimate)."""
        if samples is not None and samples >= self.m:
            samples = None
        if samples is None:
            base, m = self.value, self.m
        else:
            base, m = float(self.t[:samples].mean()), samples
        if not np.isfinite(base):   # a sample's T_comm is infinite: increments give inf - inf
            return self._grid(moved(self.gamma, dev, new))[:, :m].mean(axis=1)
        mv, rows = self._move_rows(dev, new, samples)
        delta = self._evaluate_moves(dev, new, mv, rows) if rows.size else np.zeros(0)
        return base + np.bincount(mv, weights=delta, minlength=dev.size) / m

    def apply_move(self, j, new):
        """Move device j to ``new``; keeps the +1 cache when the move is a +1."""
        if self._plus is not None and new == self.gamma[j] + 1:
            return self._apply_plus(j)
        _, rows = self._move_rows(np.array([j]), np.array([new]))
        if rows.size:
            self.rej[rows, j] = new > self.gamma[j]
            self.t[rows] = self.kernel(self.rej[rows], rows)
        self.gamma[j] = new
        self._plus = None
        return self._mean_now()

    # -- the +1 cache (greedy phase 2) -----------------------------------------------------
    def plus_one_means(self, dev):
        """Mean T_comm after +1 on each device of ``dev`` (from the current gamma).

        Cache: contrib[m, j] = T(rejected_m + j) - T(rejected_m) for the samples whose run of
        device j equals gamma_j (the only ones a +1 changes), 0 elsewhere, with its column
        sums (kept up to date by the changes of a step, as the compiled greedy keeps them).
        """
        dev = np.asarray(dev, dtype=np.int64)
        if not np.isfinite(self.value):   # no increments from an infinite T_comm
            return self.move_means(dev, self.gamma[dev] + 1)
        if self._plus is None:
            contrib = np.zeros((self.m, self.k))
            all_dev = np.arange(self.k)
            mv, rows = self._move_rows(all_dev, self.gamma + 1)
            if rows.size:
                contrib[rows, mv] = self._evaluate_moves(all_dev, self.gamma + 1, mv, rows)
            self._plus = contrib
            self._plus_sums = contrib.sum(axis=0)
        return self.value + self._plus_sums[dev] / self.m

    def _apply_plus(self, j):
        contrib = self._plus
        g = self.gamma
        col = self.runs_t[j]
        gj = int(g[j])   # a Python int: the runs are compared in their own int32
        changed = np.flatnonzero(col == gj)      # these samples now reject j
        self.t[changed] += contrib[changed, j]
        self.rej[changed, j] = True
        sums = self._plus_sums
        sums[j] -= contrib[changed, j].sum()
        contrib[changed, j] = 0.0
        g[j] += 1
        # (a) samples whose run of j equals the new gamma_j: the new +1 candidates of j
        rows_a = np.flatnonzero(col == gj + 1)
        # (b) changed samples whose +1 candidate of another device i is pending (run == gamma_i)
        sub = self.runs[changed] == g[None, :]
        sub[:, j] = False
        rb, ib = nonzero_2d(sub)
        rows = np.concatenate([rows_a, changed[rb]])
        devs = np.concatenate([np.full(rows_a.size, j), ib])
        if rows.size:
            rej = self.rej[rows]
            rej[np.arange(rows.size), devs] = True
            new = self.kernel(rej, rows) - self.t[rows]
            sums += np.bincount(devs, weights=new - contrib[rows, devs], minlength=self.k)
            contrib[rows, devs] = new
        return self._mean_now()
