"""Beliefs (``acceptance.belief``): what the draft controllers are told about alpha (no SimPy).

``oracle`` (the model's true current rate: alpha_k for iid, the session's alpha for beta, the
current state's rate for markov, the current answer's agreement rate for trace), ``nominal``
(the model's long-run mean rate, never updated: what a controller knows without feedback),
``learned`` (a per-device Beta posterior of the agreements verified so far, see
:class:`LearnedBelief`) or ``filtered`` (Markov-aware: the forward filter of an easy/hard chain,
:class:`FilteredBelief`). :class:`AgreementTally` counts the agreements realised per device.
"""
import numpy as np

from .markov import MARKOV_KEYS, markov_stationary
from .registry import Registry

BELIEFS = Registry("acceptance belief")


class Belief:
    """Interface: ``alpha()`` -> (K,) rates for the draft controllers, or None (use the system's
    own alpha); ``observe(accepted, rejected)`` after each round.

    ``learns``: ``observe`` changes the belief (False: the engine may skip calling it)."""

    name = "?"
    learns = True

    @classmethod
    def from_scenario(cls, scenario, model):
        """The belief of a scenario's ``acceptance.belief`` about the acceptance ``model``."""
        return cls(model)

    def __init__(self, model, **_):
        self.model = model

    def alpha(self):
        return None

    def observe(self, accepted, rejected, active=None):
        pass

    def parameters(self):
        return {}


@BELIEFS.register("oracle")
class OracleBelief(Belief):
    """The acceptance model's true current rate (None for i.i.d.: the system's alpha itself)."""

    learns = False

    def alpha(self):
        rate = self.model.true_rate()
        return None if rate is self.model.alpha else rate


@BELIEFS.register("nominal")
class NominalBelief(Belief):
    """The model's long-run mean rate per device (the System's alpha), never updated."""

    learns = False


@BELIEFS.register("learned")
class LearnedBelief(Belief):
    """Per-device Beta posterior of the agreement rate from the verified positions.

    Prior Beta(w m0, w (1 - m0)): mean m0 (``prior_mean``, default the devices' declared alpha)
    worth w = ``prior_weight`` positions. A round with A accepted drafts and a rejection adds A
    agreements and 1 disagreement (A agreements only when the whole draft was accepted: the
    bonus position is not tested). With ``half_life`` (positions) past evidence is discounted by
    0.5^(n / half_life) for every n newly verified positions (an exponentially weighted
    estimate that follows drifting acceptance); the estimate is the posterior mean.
    """

    @classmethod
    def from_scenario(cls, scenario, model):
        a = scenario.acceptance
        return cls(model, a.belief_prior_mean, a.belief_prior_weight, a.belief_half_life)

    def __init__(self, model, prior_mean=None, prior_weight=10.0, half_life=None, **_):
        super().__init__(model)
        m0 = model.nominal if prior_mean is None else np.full(model.k, float(prior_mean))
        self.prior_mean = np.asarray(m0, dtype=float)
        self.prior_weight = float(prior_weight)
        self.half_life = None if half_life is None else float(half_life)
        self.agree = np.zeros(model.k)
        self.disagree = np.zeros(model.k)

    def observe(self, accepted, rejected, active=None):
        if self.half_life is not None:
            decay = 0.5 ** ((accepted + rejected) / self.half_life)
            self.agree *= decay
            self.disagree *= decay
        self.agree += accepted
        self.disagree += rejected

    def alpha(self):
        w = self.prior_weight
        return (w * self.prior_mean + self.agree) / (w + self.agree + self.disagree)

    def parameters(self):
        return {"prior_mean": self.prior_mean.tolist(), "prior_weight": self.prior_weight,
                "half_life": self.half_life}


@BELIEFS.register("filtered")
class FilteredBelief(Belief):
    """Markov-aware: the forward filter of a Gilbert-Elliott chain on each device's verified
    positions; alpha = the predicted agreement probability of its next drafted position.

    ``markov`` = (easy_rate, hard_rate, easy_to_hard, hard_to_easy): the chain assumed (the
    ``acceptance`` markov keys, whatever the acceptance model). A round of a device moves its
    filter over accepted + 1 positions: the accepted agreements, then a disagreement if a draft
    was rejected, else an unobserved position (bonus token, or the target's token at gamma = 0).
    It starts in the stationary law.
    """

    @classmethod
    def from_scenario(cls, scenario, model):
        a = scenario.acceptance
        return cls(model, (a.easy_rate, a.hard_rate, a.easy_to_hard, a.hard_to_easy),
                   scenario.policy.max_draft)

    def __init__(self, model, markov=(0.9, 0.3, 0.05, 0.1), max_draft=64, **_):
        super().__init__(model)
        e, h, p, q = (float(x) for x in markov)
        self.rates = np.array([e, h])
        self.trans = np.array([[1 - p, p], [q, 1 - q]])
        agree = self.trans * self.rates            # state before -> (state, agreement)
        pw = [np.eye(2)]
        for _ in range(max_draft + 1):
            pw.append(pw[-1] @ agree)
        self._agree_pow = np.array(pw)
        self._last = np.array([self.trans, self.trans * (1 - self.rates)])  # unobserved, 0
        pe = markov_stationary(p, q) if p + q > 0 else 0.5
        self.f = np.tile([pe, 1 - pe], (model.k, 1))   # state law at the last position

    def observe(self, accepted, rejected, active=None):
        f = np.einsum("ki,kij->kj", self.f, self._agree_pow[accepted])
        f = np.einsum("ki,kij->kj", f, self._last[rejected.astype(np.int64)])
        f /= f.sum(axis=1, keepdims=True)
        if active is None:
            self.f = f
        else:
            self.f = np.where(active[:, None], f, self.f)

    def alpha(self):
        return (self.f @ self.trans) @ self.rates

    def parameters(self):
        switch = (self.trans[0, 1], self.trans[1, 0])
        return dict(zip(MARKOV_KEYS, map(float, (*self.rates, *switch))))


class AgreementTally:
    """Realised agreements per device: agreed and verified (tested) positions."""

    def __init__(self, k):
        self.agreed = np.zeros(k, dtype=np.int64)
        self.verified = np.zeros(k, dtype=np.int64)

    def add(self, accepted, rejected):
        self.agreed += accepted
        self.verified += accepted
        self.verified += rejected

    def rate(self):
        """Agreed / verified positions per device (nan before any was verified)."""
        return np.where(self.verified > 0, self.agreed / np.maximum(self.verified, 1), np.nan)
