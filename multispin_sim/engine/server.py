"""The edge server: batched verification and the reactive decision of each round."""
import numpy as np

from ..model.speculative import draft_outcome


class EdgeServer:
    """Verifies all drafts in one batched pass and asks the reactive policy for modes and powers."""

    def __init__(self, system, reactive_policy, policy_rng):
        self.system = system
        self.policy = reactive_policy
        self.policy_rng = policy_rng

    def verify(self, env, batch_size):
        """SimPy: the batched forward pass, T_ver0 + K_b T_ver1."""
        duration = self.system.verification_s(batch_size)
        yield env.timeout(duration)
        return duration

    def outcomes(self, uniforms, gamma):
        """(accepted, tokens, rejected) per device from this round's acceptance uniforms."""
        return draft_outcome(uniforms, self.system.alpha, gamma)

    def decide(self, rejected, g_ul, g_dl):
        """The reactive policy's decision for this outcome and this round's channel state."""
        problem = self.system.reactive_problem(rejected[None, :], g_ul, g_dl)
        return self.policy.decide(problem, self.policy_rng)


def no_correction(k):
    """The decision fields of a round with nobody rejected."""
    zeros = np.zeros(k)
    return np.zeros(k, dtype=np.int8), zeros, zeros, 0.0
