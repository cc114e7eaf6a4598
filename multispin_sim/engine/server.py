"""The edge server: batched verification, the verification outcomes and the reactive decision."""
import numpy as np

from ..model.speculative import acceptance_uniforms, run_length


class EdgeServer:
    """Verifies all drafts in one batched pass and asks the reactive policy for modes and powers.

    Outcomes come from the ``acceptance`` stream: one uniform per device and round, turned into
    an acceptance run length floor(ln U / ln alpha_k); the accepted count is that run truncated
    at gamma_k (``model.speculative``). Uniforms are drawn ``block`` rounds at a time, which gives
    the same numbers as drawing them round by round.
    """

    def __init__(self, system, reactive_policy, policy_rng, acceptance_rng, block=1024):
        self.system = system
        self.policy = reactive_policy
        self.policy_rng = policy_rng
        self.acceptance_rng = acceptance_rng
        self.block = block
        self._runs = np.empty((0, system.k))
        self._next = 0
        cost = system.verify_cost  # model.verification; None or linear: the inline formula below
        self.verify_cost = cost if cost is not None and cost.depends_on_draft else None

    def verify(self, env, batch_size, gamma=None, active=None):
        """SimPy: the batched forward pass: T_ver0 + K_b T_ver1, or the scenario's verification
        cost component (``server.verify_model``) on the draft lengths of the batch."""
        system = self.system
        if self.verify_cost is not None:
            duration = self.verify_cost.batch_s(gamma[active])
            yield env.timeout(duration)
            return duration
        # System.verification_s in Python floats (the same IEEE operations, without numpy's
        # per-call cost): T_ver0 + K_b T_ver1, 0 for an empty batch
        duration = (system.verify_fixed_s + float(batch_size) * system.verify_per_device_s
                    if batch_size > 0 else 0.0)
        yield env.timeout(duration)
        return duration

    def _run_lengths(self):
        if self._next == len(self._runs):
            u = acceptance_uniforms(self.acceptance_rng, (self.block, self.system.k))
            self._runs = run_length(u, self.system.alpha)
            self._next = 0
        row = self._runs[self._next]
        self._next += 1
        return row

    def outcomes(self, gamma):
        """(accepted, tokens, rejected) per device for this round's draft lengths ``gamma``."""
        accepted = np.minimum(self._run_lengths(), gamma).astype(np.int64)
        return accepted, accepted + 1, accepted < gamma

    def decide(self, rejected, g_ul, g_dl):
        """The reactive policy's decision for this outcome and this round's channel state."""
        problem = self.system.reactive_problem(rejected, g_ul, g_dl)
        return self.policy.decide(problem, self.policy_rng)
