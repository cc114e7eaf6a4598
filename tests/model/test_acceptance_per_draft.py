"""Acceptance draws keyed by (device, draft number): ``AcceptanceModel.accepted_per_draft``.

- iid: device k's n-th draft reads row n, column k of the acceptance stream's rows, whichever
  devices are verified with it: any batching gives each device the same sequence, the one a
  round-by-round run (every device drafting every round) gives.
- The outcomes keep the i.i.d. model's law: the mean accepted count is
  E[N] - 1 = alpha (1 - alpha^gamma) / (1 - alpha) (``model.speculative``).
- ``DraftRows`` holds generator states, not rows, for a device behind the others.
"""
import math

import numpy as np

from multispin_sim.model import acceptance as acc
from multispin_sim.model.per_draft import DraftRows
from multispin_sim.model.speculative import accepted_pmf, expected_tokens

K = 5
ALPHA = np.array([0.3, 0.6, 0.8, 0.9, 0.97])
BIG = np.full(K, 10**9)   # a draft length no run reaches: accepted = the run length itself


def per_device(model, masks, gamma=BIG):
    """Each device's accepted counts in draft order, the drafts of ``masks`` (one call each)."""
    seqs = [[] for _ in range(K)]
    for m in masks:
        a = model.accepted_per_draft(gamma, m)
        assert np.all(a[~m] == 0)           # a device not in the batch has no outcome
        for i in np.flatnonzero(m):
            seqs[i].append(int(a[i]))
    return seqs


def random_batches(seed, n):
    """``n`` batches of random make-up (each device in with probability 0.4, never empty)."""
    rng = np.random.default_rng(seed)
    masks = []
    while len(masks) < n:
        m = rng.random(K) < 0.4
        if m.any():
            masks.append(m)
    return masks


def test_iid_per_draft_outcomes_do_not_depend_on_the_batching():
    # a small block: many blocks are drawn, devices read rows of different blocks in one call
    make = lambda: acc.IIDAcceptance(ALPHA, np.random.default_rng(4), block=16)  # noqa: E731
    a = per_device(make(), random_batches(1, 400))
    b = per_device(make(), random_batches(2, 400))
    rounds = make()
    c = np.array([rounds.accepted(BIG) for _ in range(200)])   # round by round, all drafting
    for i in range(K):
        n = min(len(a[i]), len(b[i]))
        assert n > 100
        assert a[i][:n] == b[i][:n]
        assert a[i][:n] == c[:n, i].tolist()     # row n of the rounds' stream


def test_iid_per_draft_mean_accepted_matches_the_formula():
    """Drafts of gamma = 4 in random batches: per device the mean accepted count against
    alpha (1 - alpha^gamma) / (1 - alpha). The sum of (A - mu_k) over all drafts has variance
    sum_k n_k var_k (var_k from the truncated geometric pmf), so |z| < 4 fails by chance with
    probability 6e-5."""
    gamma = 4
    model = acc.IIDAcceptance(ALPHA, np.random.default_rng(11), block=64)
    seqs = per_device(model, random_batches(3, 6000), np.full(K, gamma))
    dev, var = 0.0, 0.0
    for i in range(K):
        x = np.array(seqs[i], dtype=float)
        pmf = accepted_pmf(ALPHA[i], gamma)
        j = np.arange(gamma + 1)
        mu = float(expected_tokens(ALPHA[i], gamma)) - 1.0
        assert math.isclose(mu, np.dot(j, pmf), rel_tol=1e-12)   # the two formulas agree
        dev += float((x - mu).sum())
        var += len(x) * float(np.dot((j - mu) ** 2, pmf))
        # per device, 5 standard errors (5 devices: chance failure 3e-6)
        assert abs(x.mean() - mu) < 5 * math.sqrt(np.dot((j - mu) ** 2, pmf) / len(x))
    assert abs(dev / math.sqrt(var)) < 4


def test_draft_rows_hold_states_not_rows_for_a_device_behind():
    """A device that never drafts holds one generator state per block (until it passes the
    block), not the rows: device 0 reads 10,000 rows of blocks of 10 while device 1 reads none,
    so 1,000 states are held and no part of a row; device 1 then reads the same numbers the
    stream gave (each old block drawn again from its state), and the states it passes go."""
    def draw(g):   # a block of 10 rows of two devices
        u = g.random((10, 2))
        return [u[:, 0], u[:, 1]]

    reference = np.random.default_rng(9).random((1000 * 10, 2))
    rows = DraftRows(2, draw, np.random.default_rng(9))
    assert [rows.next(0) for _ in range(10_000)] == reference[:, 0].tolist()
    assert len(rows._states) == 1000 and rows._held[1] is None
    assert [rows.next(1) for _ in range(5_005)] == reference[:5_005, 1].tolist()
    assert len(rows._states) == 500 and rows._states[0][0] == 5_000
