"""The edge server: batched verification, the verification outcomes and the reactive decision."""
import dataclasses

import numpy as np

from ..model.acceptance import IIDAcceptance
from ..model.beliefs import AgreementTally, OracleBelief
from ..model.reactive import ReactiveDecision


class EdgeServer:
    """Verifies all drafts in one batched pass and asks the reactive policy for modes and powers.

    Outcomes come from the acceptance component (``model.acceptance``, on the ``acceptance``
    stream; default the paper's i.i.d. model: one uniform per device and round, run length
    floor(ln U / ln alpha_k) truncated at gamma_k, drawn in blocks of rounds). ``belief``
    is what the draft controllers are told about alpha (``controller_system``); ``tally``
    counts the realised agreements per device as they are drawn (the outputs count those of the
    recorded rounds: ``RunStatistics.agreements``).
    """

    def __init__(self, system, reactive_policy, policy_rng, acceptance_rng, acceptance=None,
                 belief=None, per_request=False):
        self.system = system
        self.policy = reactive_policy
        self.policy_rng = policy_rng
        self.acceptance_rng = acceptance_rng
        if acceptance is None:
            acceptance = IIDAcceptance(system.alpha, acceptance_rng)
        self.acceptance = acceptance
        self.belief = OracleBelief(acceptance) if belief is None else belief
        self.tally = AgreementTally(system.k)
        self.per_request = per_request
        cost = system.verify_cost  # model.verification; None or linear: the inline formula below
        self.verify_cost = cost if cost is not None and cost.depends_on_draft else None
        self._one = self._one_for = None  # one_outcome's function and the system it is for
        self._steady_row = None  # (outcome block's rejected sets, row) of this steady round

    def verify(self, env, batch_size, gamma=None, active=None):
        """SimPy: the batched forward pass: T_ver0 + K_b T_ver1, or the scenario's verification
        cost component (``server.verify_model``) on the draft lengths of the batch."""
        system = self.system
        if self.verify_cost is not None:
            duration = self.verify_cost.batch_s(gamma[active])
        else:
            # System.verification_s in Python floats (the same IEEE operations, without numpy's
            # per-call cost): T_ver0 + K_b T_ver1, 0 for an empty batch
            duration = (system.verify_fixed_s + float(batch_size) * system.verify_per_device_s
                        if batch_size > 0 else 0.0)
        yield env.timeout(duration)
        return duration

    def outcomes(self, gamma, active=None, remaining=None, per_draft=False):
        """(accepted, tokens, rejected) per device for this round's draft lengths ``gamma``
        (``active``: the devices in the batch; the others have gamma 0 and do not move;
        ``remaining``: tokens each request still needs, for acceptance sessions per request;
        ``per_draft``: each device's draws keyed by its own draft number, not by the call, for
        batches formed by timing: ``AcceptanceModel.accepted_per_draft``)."""
        acceptance = self.acceptance
        accepted = (acceptance.accepted_per_draft(gamma, active) if per_draft
                    else acceptance.accepted(gamma, active))
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

    def steady_outcomes(self):
        """``outcomes_for(gamma, active) -> (accepted, tokens, rejected, rejected devices as a
        list)``, the same as ``outcomes(gamma, active)`` for every device active and the same
        read-only ``gamma`` round after round (a fixed draft plan), from blocks of rounds the
        acceptance model caps at once (its ``steady_blocks()``); None when the model offers
        none. A server whose ``outcomes`` does more overrides this too. The arrays returned are
        rows of those blocks: never modify them."""
        capped_block = self.acceptance.steady_blocks()
        if capped_block is None:
            return None
        tally = self.tally
        observe = self.belief.observe if self.belief.learns else None
        cache = [None] * 5  # block, rejected, tokens, rejected devices (flat), row offsets

        def outcomes_for(gamma, active):
            block, i = capped_block(gamma)
            if cache[0] is not block:
                rejected = block < gamma
                cols = np.nonzero(rejected)[1]
                offsets = np.zeros(len(block) + 1, dtype=np.int64)
                np.cumsum(np.count_nonzero(rejected, axis=1), out=offsets[1:])
                cache[:] = block, rejected, block + 1, cols.tolist(), offsets.tolist()
            _, rejected, tokens, cols, offsets = cache
            self._steady_row = rejected, i   # this round's row, for steady_decisions
            accepted, rejected = block[i], rejected[i]
            tally.add(accepted, rejected)
            if observe is not None:
                observe(accepted, rejected, active)
            return accepted, tokens[i], rejected, cols[offsets[i]:offsets[i + 1]]
        return outcomes_for

    def steady_decisions(self, channel):
        """``decisions_for() -> (mode, power, delay, mode list, delay list, bandwidth)`` of this
        round (read-only rows of K, the modes and delays again as lists, and the bandwidth of
        each rejected device), for rounds whose outcomes come from
        ``steady_outcomes``: the policy decides the rows of the outcome block and of the
        channel's gains drawn ahead (``channel.gains_ahead``) in one ``decide`` call, and
        each round reads its row. decisions_for returns None where the gains of a round are not
        known ahead. None when the policy's decisions cannot be made ahead
        (``ReactivePolicy.stateless``) or need the channel vectors (a shared band).

        ``decide`` on many rows is numpy's vectorised form of the decision ``one_outcome``
        makes on Python floats: the same modes, the numbers within rtol 1e-12
        (tests/engine/test_shortcuts.py)."""
        gains_ahead = channel.gains_ahead
        if not self.policy.stateless or self.policy.defers \
                or self.system.transmission is not None:
            return None
        system, policy, rng = self.system, self.policy, self.policy_rng
        # the rows decided: gains rows lo..hi-1 with outcome rows lo - offset..; a run's first
        # segments are short (a short run decides few rows it never reads)
        seg = {"gains": None, "outcomes": None, "lo": 0, "hi": 0, "offset": 0, "size": 16}

        def decisions_for():
            ahead = gains_ahead()
            if ahead is None:
                return None
            g_ul, g_dl, j = ahead
            rejected, i = self._steady_row
            if not (seg["gains"] is g_ul and seg["outcomes"] is rejected
                    and seg["lo"] <= j < seg["hi"] and seg["offset"] == j - i):
                n = min(len(g_ul) - j, len(rejected) - i, seg["size"])
                seg["size"] = min(2 * seg["size"], 1024)
                d = policy.decide(system.reactive_problem(rejected[i:i + n], g_ul[j:j + n],
                                                          g_dl[j:j + n]), rng)
                for a in (d.mode, d.power_w, d.delay_s):
                    a.flags.writeable = False
                seg.update(gains=g_ul, outcomes=rejected, lo=j, hi=j + n, offset=j - i,
                           rows=(d.mode, d.power_w, d.delay_s, d.mode.tolist(),
                                 d.delay_s.tolist(), d.bandwidth_hz.tolist()))
            r = j - seg["lo"]
            mode, power, delay, modes, delays, bandwidth = seg["rows"]
            return mode[r], power[r], delay[r], modes[r], delays[r], bandwidth[r]
        return decisions_for

    def controller_system(self, system):
        """``system`` with alpha replaced by the belief (the same object when there is none)."""
        alpha = self.belief.alpha()
        return system if alpha is None else dataclasses.replace(system, alpha=alpha)

    def decide(self, rejected, g_ul, g_dl, present=None):
        """The reactive policy's decision for this outcome and this round's channel state
        (``present``: the devices in the round, when the policy counts them)."""
        one = self.one_outcome()
        if one is not None and np.ndim(rejected) == 1 and np.ndim(g_ul) == 1 \
                and np.ndim(g_dl) == 1:
            mode, power, delay, b, t_comm = one(
                np.flatnonzero(rejected).tolist(), np.asarray(g_ul, dtype=float).tolist(),
                np.asarray(g_dl, dtype=float).tolist())
            return ReactiveDecision(np.array([mode], dtype=np.int8), np.array([power]),
                                    np.array([delay]), np.array([b]), np.array([t_comm]))
        problem = self.system.reactive_problem(rejected, g_ul, g_dl, present)
        return self.policy.decide(problem, self.policy_rng)

    def no_rejection(self):
        """A round without a rejection: the policy draws what a decision would draw."""
        self.policy.no_rejection(self.system.k, self.policy_rng)

    def one_outcome(self):
        """The policy's decision of one outcome on this system (``ReactivePolicy.one_outcome``:
        ``decide_one(idx, g_ul, g_dl) -> (mode, power, delay, bandwidth, t_comm)``, worked out
        once per system), or None when decisions must be read whole (a policy that defers
        corrections). A server that decides its own way overrides this too."""
        system = self.system
        if self._one_for is not system:
            # a shared band (``system.transmission``): decisions need the channel vectors
            self._one = (None if self.policy.defers or self.policy.counts_present
                         or system.transmission is not None
                         else self.policy.one_outcome(system, self.policy_rng))
            self._one_for = system
        return self._one

    def counters(self):
        """(object, attribute names) of the totals this server updates before a round is
        recorded (``engine.guards.RecordedTotals``): none here, its tally is of the recorded
        rounds already."""
        return []

    def summary_blocks(self, tokens):
        """summary.json sections of this server's own, given the run's delivered ``tokens``:
        none here."""
        return {}

    def close(self):
        """Nothing to close: a server that writes a file of its own closes it here."""

    def decide_carry(self, deferred, g_ul, g_dl):
        """Modes and powers of the corrections a deferring policy carried to this round start."""
        problem = self.system.reactive_problem(deferred, g_ul, g_dl)
        return self.policy.carry(problem)

