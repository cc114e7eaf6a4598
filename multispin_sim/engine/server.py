"""The edge server: batched verification, the verification outcomes and the reactive decision."""
import dataclasses
import math

import numpy as np

from ..model.acceptance import AgreementTally, Belief, IIDAcceptance, OracleBelief
from ..model.reactive import (ReactiveDecision, assign_one, evaluate_assignment, split_one,
                              split_rows)


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
        self._split = self._split_for = None  # scalar_split's function and the system it is for
        self._steady_at = None  # steady_outcomes' last outcome (rejected block, row): steady_splits

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

    def linear_verify_s(self):
        """``seconds(batch_size)``, the duration ``verify`` waits, when it depends on the batch
        size alone (the linear cost, ``verify`` this class's own); else None."""
        if self.verify_cost is not None or type(self).verify is not _VERIFY:
            return None
        system = self.system
        fixed, per_device = system.verify_fixed_s, system.verify_per_device_s

        def seconds(batch_size):
            return fixed + float(batch_size) * per_device if batch_size > 0 else 0.0
        return seconds

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

    def steady_outcomes(self):
        """``outcomes_for(gamma, active) -> (accepted, tokens, rejected, rejected devices as a
        list)``, the same as ``outcomes(gamma, active)`` for every device active and the same
        read-only ``gamma`` round after round (a fixed draft plan), from blocks of rounds
        worked out at once; None unless the acceptance is the i.i.d. model and ``outcomes``
        this class's own. The arrays returned are rows of those blocks: never modify them."""
        if type(self).outcomes is not _OUTCOMES or type(self.acceptance) is not IIDAcceptance:
            return None
        acceptance, tally = self.acceptance, self.tally
        # beliefs that learn nothing are not called
        observe = None if type(self.belief).observe is Belief.observe else self.belief.observe
        cache = [None] * 5  # block, rejected, tokens, rejected devices (flat), row offsets
        self._steady_at = at = [None, 0]

        def outcomes_for(gamma, active):
            block, i = acceptance.capped_block(gamma)
            if cache[0] is not block:
                rejected = block < gamma
                cols = np.nonzero(rejected)[1]
                offsets = np.zeros(len(block) + 1, dtype=np.int64)
                np.cumsum(np.count_nonzero(rejected, axis=1), out=offsets[1:])
                cache[:] = block, rejected, block + 1, cols.tolist(), offsets.tolist()
            _, rejected, tokens, cols, offsets = cache
            at[0], at[1] = rejected, i
            tally.add_row(block, rejected, i)
            accepted, rejected = block[i], rejected[i]
            if observe is not None:
                observe(accepted, rejected, active)
            return accepted, tokens[i], rejected, cols[offsets[i]:offsets[i + 1]]
        return outcomes_for

    def steady_splits(self, gains_at):
        """``splits_for() -> (mode, power, delay, bandwidth, mode list, delay list)``: the optimal
        split of this round's outcome, bit for bit what ``scalar_split`` gives (None on a round
        where ``scalar_split`` raises: the caller calls it to fail there), worked out for
        blocks of rounds at once (``model.reactive.split_rows``). For the rounds whose outcome is
        the last one ``steady_outcomes``' function gave (called first, every round) and whose
        gains are row ``j`` of blocks drawn ahead: ``gains_at() -> (g_ul rows, g_dl rows, j)``
        (``OFDMAChannel.gains_at``). The arrays returned are rows of blocks: never modify them.
        None unless ``scalar_split`` is the optimal split (the others draw coins, or take
        numpy's logarithms) and ``steady_outcomes`` was set up."""
        from ..policies.reactive import OptimalSplit  # engine -> policies -> model: no cycle

        if type(self.policy) is not OptimalSplit or self.scalar_split() is None \
                or self._steady_at is None:
            return None
        system, at = self.system, self._steady_at
        k = system.k
        p_ul = np.broadcast_to(np.asarray(system.p_ul_w, dtype=float), (k,))
        constants = (float(system.payload_bits), float(system.n0), float(system.p_dl_w),
                     float(system.bandwidth_hz))
        # the rows worked out: gains block, rejected block, the offset between their rows,
        # the first and the end row (of the gains block), the results, the next block's size
        seg = {"g": None, "rejected": None, "offset": 0, "lo": 0, "hi": 0, "out": None,
               "size": 64}

        def splits_for():
            g_ul, g_dl, j = gains_at()
            rejected, i = at
            if not (seg["g"] is g_ul and seg["rejected"] is rejected and seg["lo"] <= j < seg["hi"]
                    and seg["offset"] == j - i):
                n = min(len(g_ul) - j, len(rejected) - i, seg["size"])
                seg["size"] = min(2 * seg["size"], 1024)   # short runs work out few rows
                mode, power, delay, b = split_rows(rejected[i:i + n], g_ul[j:j + n],
                                                   g_dl[j:j + n], p_ul, *constants)
                seg.update(g=g_ul, rejected=rejected, offset=j - i, lo=j, hi=j + n,
                           out=(mode, power, delay, b.tolist(), mode.tolist(), delay.tolist()))
            r = j - seg["lo"]
            mode, power, delay, b, mode_lists, delay_lists = seg["out"]
            if b[r] != b[r]:   # NaN: scalar_split fails on this round (see split_rows)
                return None
            return mode[r], power[r], delay[r], b[r], mode_lists[r], delay_lists[r]
        return splits_for

    def controller_system(self, system):
        """``system`` with alpha replaced by the belief (the same object when there is none)."""
        alpha = self.belief.alpha()
        return system if alpha is None else dataclasses.replace(system, alpha=alpha)

    def decide(self, rejected, g_ul, g_dl):
        """The reactive policy's decision for this outcome and this round's channel state."""
        split = self.scalar_split()
        if split is not None and np.ndim(rejected) == 1 and np.ndim(g_ul) == 1 \
                and np.ndim(g_dl) == 1:
            # one outcome under a plain policy: the same numbers without the problem
            k = self.system.k
            idx = np.flatnonzero(rejected).tolist()
            if not idx and split.draws:   # the random split draws its coins all the same
                return self.policy.decide(self.system.reactive_problem(rejected, g_ul, g_dl),
                                          self.policy_rng)
            if not idx:
                zeros = np.zeros((1, k))
                return ReactiveDecision(np.zeros((1, k), dtype=np.int8), zeros, zeros.copy(),
                                        np.zeros(1), np.zeros(1))
            mode, power, delay, b, t_comm = split(idx, np.asarray(g_ul, dtype=float).tolist(),
                                                  np.asarray(g_dl, dtype=float).tolist())
            return ReactiveDecision(np.array([mode], dtype=np.int8), np.array([power]),
                                    np.array([delay]), np.array([b]), np.array([t_comm]))
        problem = self.system.reactive_problem(rejected, g_ul, g_dl)
        return self.policy.decide(problem, self.policy_rng)

    def scalar_split(self):
        """``split(idx, g_ul, g_dl) -> (mode, power, delay, bandwidth, t_comm)`` (lists of K and
        floats) for one outcome -- ``idx`` the rejected devices ascending, non-empty; the gains
        lists of K floats -- giving bit for bit what ``decide`` gives (``model.reactive.split_one``
        for the optimal split, ``model.reactive.assign_one`` for all-UL, all-DL and the random
        split, on this system's constants, worked out once; ``split.draws``: it draws from the
        policy stream); None unless the policy is one of those four exactly and ``decide`` is
        this class's own (a payload server decides its own way)."""
        system = self.system
        if self._split_for is system:
            return self._split
        # engine -> policies -> model: no cycle
        from ..policies.reactive import AllDownlink, AllUplink, OptimalSplit, RandomSplit

        split = None
        kind = type(self.policy)
        if kind in (OptimalSplit, AllUplink, AllDownlink, RandomSplit) \
                and type(self).decide is _DECIDE:
            k = system.k
            p_ul = np.broadcast_to(np.asarray(system.p_ul_w, dtype=float), (k,)).tolist()
            s_bits, n0 = float(system.payload_bits), float(system.n0)
            p_dl, bandwidth = float(system.p_dl_w), float(system.bandwidth_hz)

            if kind is OptimalSplit:
                def split(idx, g_ul, g_dl):
                    # B / |R|: one IEEE division, as ReactiveProblem.bandwidth_per_device's
                    # float64 / int64
                    b = bandwidth / len(idx)
                    mode, power, delay, t_comm = split_one(idx, k, p_ul, g_ul, g_dl, s_bits,
                                                           n0, p_dl, b)
                    return mode, power, delay, b, t_comm
                split.draws = False
            else:
                split = self._assignment_split(kind is RandomSplit, kind is AllUplink, k, p_ul,
                                               s_bits, n0, p_dl, bandwidth)
        self._split, self._split_for = split, system
        return split

    def _assignment_split(self, coin, all_ul, k, p_ul, s_bits, n0, p_dl, bandwidth):
        """``scalar_split`` of the baseline modes: all-UL, all-DL, or (``coin``) the random
        split, whose K coins come from the policy stream as ``model.reactive.random_split``
        draws them (one uniform per device, UL below 1/2). Gains that are not finite and
        positive go through numpy's ``evaluate_assignment`` with the same modes."""
        rng, inf = self.policy_rng, math.inf

        def split(idx, g_ul, g_dl):
            if coin:
                u = rng.random(k).tolist()
                ul = [u[i] < 0.5 for i in idx]
            else:
                ul = [all_ul] * len(idx)
            if not all(0.0 < g_ul[i] < inf and 0.0 < g_dl[i] < inf for i in idx):
                rejected = np.zeros(k, dtype=bool)
                rejected[idx] = True
                mask = np.zeros((1, k), dtype=bool)
                mask[0, idx] = ul
                d = evaluate_assignment(self.system.reactive_problem(
                    rejected, np.array(g_ul), np.array(g_dl)), mask)
                return (d.mode[0].tolist(), d.power_w[0].tolist(), d.delay_s[0].tolist(),
                        float(d.bandwidth_hz[0]), float(d.t_comm[0]))
            b = bandwidth / len(idx)
            mode, power, delay, t_comm = assign_one(idx, ul, k, p_ul, g_ul, g_dl, s_bits, n0,
                                                    p_dl, b)
            return mode, power, delay, b, t_comm
        split.draws = coin
        return split

    def decide_carry(self, deferred, g_ul, g_dl):
        """Modes and powers of the corrections a deferring policy carried to this round start."""
        problem = self.system.reactive_problem(deferred, g_ul, g_dl)
        return self.policy.carry(problem)


# the methods as defined here: a subclass or a replacement (a test's stand-in) opts out of the
# engine's shortcuts around them
_VERIFY, _OUTCOMES, _DECIDE = EdgeServer.verify, EdgeServer.outcomes, EdgeServer.decide
