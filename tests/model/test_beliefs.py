"""Beliefs of alpha (``model.beliefs``) not covered in test_acceptance.py: the learned belief's
forgetting (``acceptance.belief_half_life``) and the filtered belief built from the scenario."""
import math

import numpy as np

import multispin_sim as ms
from multispin_sim.model import beliefs


class _Model:
    def __init__(self, k, nominal):
        self.k = k
        self.nominal = np.full(k, nominal)


def test_half_life_weighs_each_position_by_half_per_half_life():
    """Positions verified n positions ago weigh 0.5^(n / h): the belief's alpha equals the
    posterior mean computed from that weighting directly, round by round (rtol 1e-12)."""
    rng = np.random.default_rng(3)
    h, w, m0 = 25.0, 10.0, 0.6
    b = beliefs.LearnedBelief(_Model(2, m0), prior_weight=w, half_life=h)
    acc = rng.integers(0, 6, size=(200, 2))
    rej = (rng.random((200, 2)) < 0.7).astype(np.int64)
    for t in range(200):
        b.observe(acc[t], rej[t])
        pos = acc[: t + 1] + rej[: t + 1]
        after = pos[::-1].cumsum(axis=0)[::-1] - pos      # positions verified after each round
        weight = 0.5 ** (after / h)
        agree, disagree = (weight * acc[: t + 1]).sum(0), (weight * rej[: t + 1]).sum(0)
        want = (w * m0 + agree) / (w + agree + disagree)
        np.testing.assert_allclose(b.alpha(), want, rtol=1e-12)


def test_half_life_follows_a_step_in_the_rate_and_plain_learning_lags():
    """One device's rate steps from 0.9 to 0.5. Ten half-lives after the step the weight left on
    the old rate is 2^-10, so the forgetting belief is within its noise of 0.5: an exponentially
    weighted mean of Bernoulli positions has variance alpha (1 - alpha) ln 2 / (2 h); 5 standard
    deviations. The belief without forgetting estimates the mixture of both rates over all
    positions (5 of its standard deviations): it lags."""
    rng = np.random.default_rng(7)
    h, gamma = 200.0, 4
    forget = beliefs.LearnedBelief(_Model(1, 0.7), prior_weight=1.0, half_life=h)
    plain = beliefs.LearnedBelief(_Model(1, 0.7), prior_weight=1.0)
    seen = {}
    for alpha, budget in ((0.9, 20 * h), (0.5, 10 * h)):
        seen[alpha] = 0
        while seen[alpha] < budget:
            runs = int(np.floor(np.log(rng.random()) / np.log(alpha)))  # agreements before a miss
            a, r = min(runs, gamma), int(runs < gamma)
            for b in (forget, plain):
                b.observe(np.array([a]), np.array([r]))
            seen[alpha] += a + r
    sd = math.sqrt(0.5 * 0.5 * math.log(2) / (2 * h))
    assert abs(forget.alpha()[0] - 0.5) < 5 * sd
    n = sum(seen.values())
    mix = (0.9 * seen[0.9] + 0.5 * seen[0.5]) / n
    assert abs(plain.alpha()[0] - mix) < 5 * math.sqrt(mix * (1 - mix) / n)
    assert plain.alpha()[0] - 0.5 > 10 * sd


def test_filtered_belief_takes_its_chain_from_the_scenario():
    """``acceptance.belief: filtered`` in a run: the filter's chain is the scenario's markov
    keys, and its predicted rate starts at the chain's stationary rate."""
    keys = {"acceptance.model": "markov", "acceptance.belief": "filtered",
            "acceptance.easy_rate": 0.95, "acceptance.hard_rate": 0.2,
            "acceptance.easy_to_hard": 0.04, "acceptance.hard_to_easy": 0.12}
    sc = ms.load_scenario(None, overrides={**keys, "devices.count": 3, "run.rounds": 50,
                                           "policy.draft": "greedy", "policy.saa_samples": 100})
    r = ms.simulate(sc)
    got = r.summary["acceptance"]
    assert got["belief"] == "filtered"
    assert got["belief_parameters"] == {"easy_rate": 0.95, "hard_rate": 0.2,
                                        "easy_to_hard": 0.04, "hard_to_easy": 0.12}
    b = beliefs.BELIEFS.lookup("filtered").from_scenario(sc, _Model(3, 0.5))
    pe = 0.12 / (0.04 + 0.12)
    np.testing.assert_allclose(b.alpha(), pe * 0.95 + (1 - pe) * 0.2, rtol=1e-12)
