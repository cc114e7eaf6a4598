"""The edge server: batched verification, the verification outcomes and the reactive decision."""
import dataclasses

from ..model.acceptance import AgreementTally, IIDAcceptance, OracleBelief


class EdgeServer:
    """Verifies all drafts in one batched pass and asks the reactive policy for modes and powers.

    Outcomes come from the acceptance component (``model.acceptance``, on the ``acceptance``
    stream; default the paper's i.i.d. model: one uniform per device and round, run length
    floor(ln U / ln alpha_k) truncated at gamma_k, drawn ``block`` rounds at a time). ``belief``
    is what the draft controllers are told about alpha (``controller_system``); ``tally``
    counts the realised agreements per device.
    """

    def __init__(self, system, reactive_policy, policy_rng, acceptance_rng, block=1024,
                 acceptance=None, belief=None, per_request=False):
        self.system = system
        self.policy = reactive_policy
        self.policy_rng = policy_rng
        self.acceptance_rng = acceptance_rng
        self.block = block
        if acceptance is None:
            acceptance = IIDAcceptance(system.alpha, acceptance_rng, block)
        self.acceptance = acceptance
        self.belief = OracleBelief(acceptance) if belief is None else belief
        self.tally = AgreementTally(system.k)
        self.per_request = per_request
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

    def outcomes(self, gamma, active=None, remaining=None):
        """(accepted, tokens, rejected) per device for this round's draft lengths ``gamma``
        (``active``: the devices in the batch; the others have gamma 0 and do not move;
        ``remaining``: tokens each request still needs, for acceptance sessions per request)."""
        accepted = self.acceptance.accepted(gamma, active)
        if remaining is not None and self.per_request:
            done = accepted + 1 >= remaining
            if active is not None:
                done &= active
            if done.any():
                self.acceptance.new_request(done)
        rejected = accepted < gamma
        self.tally.add(accepted, rejected)
        self.belief.observe(accepted, rejected, active)
        return accepted, accepted + 1, rejected

    def controller_system(self, system):
        """``system`` with alpha replaced by the belief (the same object when there is none)."""
        alpha = self.belief.alpha()
        return system if alpha is None else dataclasses.replace(system, alpha=alpha)

    def decide(self, rejected, g_ul, g_dl):
        """The reactive policy's decision for this outcome and this round's channel state."""
        problem = self.system.reactive_problem(rejected, g_ul, g_dl)
        return self.policy.decide(problem, self.policy_rng)

    def decide_carry(self, deferred, g_ul, g_dl):
        """Modes and powers of the corrections a deferring policy carried to this round start."""
        problem = self.system.reactive_problem(deferred, g_ul, g_dl)
        return self.policy.carry(problem)
