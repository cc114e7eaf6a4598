"""Common random numbers of the asynchronous protocol: acceptance keyed by (device, draft).

Two asynchronous runs that differ only in ``policy.mode`` form different batches (correction
times differ, so drafts arrive at the server at other times); every device's n-th draft must
still get the same acceptance outcome: with draft lengths g_A, g_B and accepted counts a_A,
a_B, min(a_A, g_B) == min(a_B, g_A) (one run length R capped at each draft length), for the
i.i.d., Markov, beta and trace acceptance models and the token-level payload. The i.i.d.
outcomes still follow the truncated geometric law of ``model.speculative``.
"""
import math

import numpy as np
import pytest

import multispin_sim as ms
from multispin_sim.model.speculative import accepted_pmf, expected_tokens


def run(overrides):
    return ms.simulate(ms.load_scenario(None, overrides=overrides))


def drafts_in_order(d, device):
    """Indices of a device's rows in draft order (rows are written when a batch ends, not in
    batch order; a device's drafts are in successive batches)."""
    idx = np.flatnonzero(d["device"] == device)
    return idx[np.argsort(d["round"][idx], kind="stable")]


@pytest.mark.parametrize("extra", [[], ["payload.model=token"], ["acceptance.model=markov"],
                                   ["acceptance.model=beta"], ["acceptance.model=trace"]])
def test_nth_drafts_are_coupled_across_policies(extra):
    """One uniform per (device, draft) (iid, token): greedy draft lengths, which differ between
    the runs (CSI at other times), coupled through min(a_A, g_B) == min(a_B, g_A). Walks along
    a device's agreement sequence (markov, beta, trace) advance by the outcome, so they are
    coupled draft by draft under equal draft lengths: fixed gamma, equal outcomes."""
    walk = bool(extra) and extra[0].startswith("acceptance.")
    base = ["serving.protocol=asynchronous", "devices.count=8", "run.rounds=150",
            "policy.draft=" + ("fixed" if walk else "greedy")] + extra
    a, b = run(base), run(base + ["policy.mode=all-ul"])
    # the batches differ (else the test would not exercise anything)
    assert a.rounds["batch_size"].tolist() != b.rounds["batch_size"].tolist()
    da, db = a.device_rounds, b.device_rounds
    drafts = differing_lengths = 0
    for k in range(8):
        ia, ib = drafts_in_order(da, k), drafts_in_order(db, k)
        n = min(len(ia), len(ib))
        ia, ib = ia[:n], ib[:n]
        ga, gb = da["draft_len"][ia], db["draft_len"][ib]
        xa, xb = da["accepted"][ia], db["accepted"][ib]
        assert np.array_equal(np.minimum(xa, gb), np.minimum(xb, ga)), k
        drafts += n
        differing_lengths += int(np.count_nonzero(ga != gb))
    assert drafts > 300
    assert (differing_lengths == 0) if walk else (differing_lengths > 20)


def test_async_accepted_counts_follow_the_truncated_geometric_law():
    """Default scenario (fixed gamma = 4), asynchronous, 400 batches: the sum over drafts of
    A - mu_k, mu_k = E[N] - 1 = alpha_k (1 - alpha_k^4) / (1 - alpha_k), has variance
    sum n_k var_k (var_k from the truncated geometric pmf): |z| < 4 fails by chance with
    probability 6e-5."""
    r = run(["serving.protocol=asynchronous", "run.rounds=400"])
    d = r.device_rounds
    alpha = r.population.system.alpha
    gamma = 4
    assert set(d["draft_len"].tolist()) == {gamma}
    dev = var = 0.0
    j = np.arange(gamma + 1)
    for k in range(len(alpha)):
        x = d["accepted"][d["device"] == k].astype(float)
        mu = float(expected_tokens(alpha[k], gamma)) - 1.0
        dev += float((x - mu).sum())
        var += len(x) * float(np.dot((j - mu) ** 2, accepted_pmf(alpha[k], gamma)))
    assert len(d["accepted"]) > 1500
    assert abs(dev / math.sqrt(var)) < 4
