"""The draft-length objective (docs/model.md section 7): goodput G(gamma).

    G(gamma) = sum_k E[N_k] / (max_k gamma_k t_k + T_ver + E_o[T_comm(o)])

over the active devices (an inactive device has gamma_k = 0 and yields no token). E[N_k] has a
closed form (docs/model.md section 3); E_o[T_comm] comes from an estimator of
``model.estimators`` (exact enumeration, sample average approximation, or none).

Everything here is pure numpy: the reference. A compiled implementation of the closed forms and
of the searches (``policies.search_numba``) agrees with it within rtol 1e-12; candidates are
compared by one tie rule (``model.ties``).
"""
import numpy as np

from .estimators import SAATcomm, moved
from .speculative import expected_tokens

_EN_TABLES = {}


# ---------------------------------------------------------------------------- the ratio


def goodput(tokens, drafting_s, verify_s, t_comm):
    """G = tokens / (drafting + verification + communication); 0 when nothing takes time."""
    den = np.asarray(drafting_s, float) + verify_s + np.asarray(t_comm, float)
    if den.ndim and (den > 0).all():   # the usual case: the same quotients, no error state
        return np.asarray(tokens, float) / den
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, np.asarray(tokens, float) / den, 0.0)


# ---------------------------------------------------------------------------- the objective


def en_table(alpha, top):
    """E[N] of every device at every draft length 0..top, (top + 1, K), read-only: row g is
    ``expected_tokens(alpha, g)``, computed by one call on a (top + 1, K) grid of lengths (the
    same elementwise operations on the same contiguous rows as the (K,) and (n, K) calls of
    ``DraftObjective``: the same values bit for bit, which tests/model/test_goodput.py
    checks). Cached: rounds with the same acceptance rates share it."""
    key = (alpha.tobytes(), top)
    tab = _EN_TABLES.get(key)
    if tab is None:
        k = alpha.size
        grid = np.repeat(np.arange(top + 1, dtype=np.int64), k).reshape(top + 1, k)
        tab = np.ascontiguousarray(expected_tokens(alpha, grid), dtype=float)
        tab.flags.writeable = False
        if len(_EN_TABLES) > 64:
            _EN_TABLES.clear()
        _EN_TABLES[key] = tab
    return tab


class DraftObjective:
    """G(gamma) for one decision: closed-form tokens and drafting time, estimated E[T_comm].

    alpha, draft_s: (K,) acceptance rates and per-token drafting latencies; verify_s: T_ver of
    the batch; caps: (K,) largest allowed gamma per device (0 for inactive devices); active: (K,)
    bool (inactive devices count no token); tcomm: an estimator (``SAATcomm``, ``ExactTcomm``,
    ``ZeroTcomm``). verify_s may also be a function of the draft lengths (n, K) -> (n,) from
    the verification cost component (``model.verification``); score: None (goodput) or another
    ratio objective (``model.energy.TokensPerJoule``).

    Stateless: ``values(gammas)``, ``path_values(gammas)``. Stateful (for local search):
    ``reset(gamma)``, ``move_values(dev, new)``, ``plus_one_values()``,
    ``apply_move(j, new)``; the current point is ``gamma`` with goodput ``value``.
    """

    def __init__(self, alpha, draft_s, verify_s, caps, active, tcomm, score=None):
        self.alpha = np.asarray(alpha, dtype=float)
        self.draft_s = np.asarray(draft_s, dtype=float)
        # T_ver: a number, or the verification cost component's function of the draft lengths
        # gammas (n, K) -> (n,) (``verification.objective_verification``); see ``t_ver``
        self.verify_fn = verify_s if callable(verify_s) else None
        self.verify_s = 0.0 if callable(verify_s) else float(verify_s)
        # score(tokens, gammas, drafting, t_ver, t_comm) -> values: None = goodput; else e.g.
        # tokens per joule (``model.energy.TokensPerJoule``)
        self.score = score
        # a constant T_ver and the goodput ratio: the same devices get the same answer
        self.precomputable = self.verify_fn is None and score is None
        self.active = np.asarray(active, dtype=bool)
        self.caps = np.where(self.active, np.asarray(caps, dtype=np.int64), 0)
        self.k = self.alpha.size
        self.tcomm = tcomm
        self._w = self.active.astype(float)
        self.gamma = None
        self.value = None
        self.evaluations = 0
        self.top = int(self.caps.max(initial=0))   # the largest cap
        # E[N] of every device at every length 0..top, (top + 1, K) (``en_table``)
        self.en_table = en_table(self.alpha, self.top)
        self._cols = np.arange(self.k)   # every device, as an index
        self.compiled = None   # a compiled implementation (``policies.search_numba``), if any

    # -- closed forms ----------------------------------------------------------------------
    def _expected(self, gammas, dev=None):
        """``expected_tokens(alpha[dev], gammas)`` (dev None: every device, gammas (..., K)):
        from the E[N] table (``en_table``, the same values) for integer lengths 0..top."""
        if gammas.dtype.kind in "iu" and gammas.size and 0 <= gammas.min() \
                and gammas.max() <= self.top:
            if dev is None:
                dev = self._cols
            return self.en_table[gammas, dev]
        return expected_tokens(self.alpha if dev is None else self.alpha[dev], gammas)

    def verify_table(self):
        """T_ver at every total draft length 0..sum(caps), (sum(caps) + 1,), what a compiled
        search reads; None when T_ver is not a function of that total."""
        top = int(self.caps.sum())
        if self.verify_fn is None:
            return np.full(top + 1, self.verify_s)
        by_total = getattr(self.verify_fn, "by_total", None)   # a plain function has none
        return None if by_total is None else by_total(top)

    def tokens(self, gammas):
        return self._expected(np.asarray(gammas)) @ self._w

    def drafting(self, gammas):
        return (np.asarray(gammas) * self.draft_s).max(axis=-1, initial=0.0)

    def t_ver(self, gammas):
        """T_ver of candidate draft lengths (n, K) -> (n,), or the constant T_ver."""
        if self.verify_fn is None:
            return self.verify_s
        return self.verify_fn(np.atleast_2d(gammas))

    def _score(self, tokens, gammas, drafting, t_comm):
        if self.score is None:
            return goodput(tokens, drafting, self.t_ver(gammas), t_comm)
        return self.score(tokens, np.atleast_2d(gammas), drafting, self.t_ver(gammas), t_comm)

    def _g(self, gammas, t_comm):
        gammas = np.atleast_2d(np.asarray(gammas))
        self.evaluations += gammas.shape[0]
        return self._score(self.tokens(gammas), gammas, self.drafting(gammas), t_comm)

    # -- stateless -------------------------------------------------------------------------
    def values(self, gammas):
        """G of every row of ``gammas`` (n, K)."""
        gammas = np.atleast_2d(np.asarray(gammas, dtype=np.int64))
        return self._g(gammas, self.tcomm.mean(gammas))

    def path_values(self, gammas):
        """G along a sequence (fast when nondecreasing)."""
        gammas = np.atleast_2d(np.asarray(gammas, dtype=np.int64))
        return self._g(gammas, self.tcomm.path_mean(gammas))

    def value_of(self, gamma):
        return float(self.values(np.asarray(gamma)[None, :])[0])

    # -- stateful --------------------------------------------------------------------------
    def _set(self, t_comm):
        g = self.gamma
        self._en = self._expected(g) * self._w
        self._tok = float(self._en.sum())
        d = g * self.draft_s
        self._i1 = int(np.argmax(d)) if d.size else 0
        self._d1 = float(d.max(initial=0.0))
        rest = d.copy()
        if rest.size:
            rest[self._i1] = 0.0
        self._d2 = float(rest.max(initial=0.0))
        if self.verify_fn is None and self.score is None:
            # ``goodput`` of scalars: (drafting + T_ver) + T_comm, the same IEEE operations
            den = (self._d1 + self.verify_s) + float(t_comm)
            self.value = self._tok / den if den > 0 else 0.0
        else:
            self.value = float(self._score(self._tok, g[None, :], self._d1, t_comm)[0])
        return self.value

    def reset(self, gamma):
        """Move to ``gamma``."""
        self.gamma = np.array(gamma, dtype=np.int64)
        return self._set(self.tcomm.reset(self.gamma))

    def apply_move(self, j, new):
        t = self.tcomm.apply_move(int(j), int(new))
        self.gamma = self.tcomm.gamma.copy()
        return self._set(t)

    def _move_g(self, dev, new, t_comm):
        self.evaluations += dev.size
        tok = self._tok - self._en[dev] + self._expected(new, dev) * self._w[dev]
        base = np.where(dev == self._i1, self._d2, self._d1)
        draft = np.maximum(base, new * self.draft_s[dev])
        if self.verify_fn is None and self.score is None:
            return goodput(tok, draft, self.verify_s, t_comm)
        return self._score(tok, moved(self.gamma, dev, new), draft, t_comm)

    def move_values(self, dev, new, screen=None):
        """G after moving device dev[i] to new[i] alone, for every i (from the current point).

        ``screen=(samples, keep)``: rank the moves on the first ``samples`` samples (SAA only),
        then evaluate only the best ``keep`` on all of them; the others get -inf.
        """
        dev = np.asarray(dev, dtype=np.int64)
        new = np.asarray(new, dtype=np.int64)
        if new.shape != dev.shape:   # one length for all (np.full: cheaper than a broadcast)
            new = np.full(dev.shape, new) if new.ndim == 0 else np.broadcast_to(new, dev.shape)
        if dev.size == 0:
            return np.zeros(0)
        if screen is not None and isinstance(self.tcomm, SAATcomm) and dev.size > screen[1] \
                and screen[0] < self.tcomm.m:
            rough = self._move_g(dev, new, self.tcomm.move_means(dev, new, screen[0]))
            best = np.sort(np.argsort(-rough, kind="stable")[:screen[1]])
            out = np.full(dev.size, -np.inf)
            out[best] = self._move_g(dev[best], new[best], self.tcomm.move_means(dev[best], new[best]))
            return out
        return self._move_g(dev, new, self.tcomm.move_means(dev, new))

    def plus_one_values(self):
        """(K,) G after +1 on each device alone; -inf where the device is at its cap."""
        g = self.gamma
        shut = g >= self.caps
        if shut.all():
            return np.full(self.k, -np.inf)
        # every device in one ``_move_g`` (fewer calls than picking the open ones first): one
        # at its cap is scored where it stands, then dropped
        cols = self._cols
        out = self._move_g(cols, np.where(shut, g, g + 1), self.tcomm.plus_one_means(cols))
        self.evaluations -= int(np.count_nonzero(shut))
        out[shut] = -np.inf
        return out
