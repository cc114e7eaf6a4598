"""Reactive decisions on a non-Shannon link: the policy's split, the link's planned delays.

With a common bandwidth per outcome (the mcs link gives every transmitting device the same
whole number of PRBs) any link whose delay is a non-increasing function D(SNR) of the SNR alone
keeps the structure of the reactive problem (docs/model.md section 6): a UL device at full power has
delay D(P g / (N0 b)); the DL devices' equalising powers are proportional to 1/g (they sum to
P_dl) and give every DL device the same SNR P_dl / (N0 b sum 1/g); and max(D(x), D(y)) =
D(min(x, y)). So the split that maximises the slowest Shannon SNR -- the split the Shannon
policies choose -- also minimises the slowest D-delay: the modes and powers of any registered
policy stay right, only the delays change. ``LinkAwarePolicy`` wraps a policy and replaces its
delays (and T_comm) by the link's planned delays at the decision's SNRs (the CSI the decision
sees). Its ``decide`` is not a registered one, so the draft objective evaluates it through the
generic policy kernel (``draft_search.make_kernel``): the controller optimises the link the
engine uses.
"""
import dataclasses

import numpy as np

from ..model.payload import correction_bits
from ..model.tcomm import PolicyKernel, TcommKernel
from ..model.reactive import DL, UL
from .reactive import ReactivePolicy


class LinkTcommKernel(TcommKernel):
    """The closed-form T_comm kernel with the link's planned delay in place of Shannon's: the
    kernel finds the slowest (or best-split) SNR by comparing loads, which is link-free; only
    the final delay of a row changes: D(z / (N0 n_PRB 12 delta_f)), n_PRB = N_PRB // |R|."""

    shannon = False   # its delays are the link's, not Shannon's: no compiled closed form

    def __init__(self, system, g_ul, g_dl, mode, coin, link, outage_wait_s):
        super().__init__(system, g_ul, g_dl, mode, coin=coin)
        self.link = link
        self.outage_wait_s = outage_wait_s

    def _delay(self, r, z):
        link = self.link
        n_prb = link.n_prb // np.maximum(r, 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            snr = z / (link.n0 * np.maximum(n_prb, 1) * link.prb_hz)
            t = link.planned_delays(self.bits, snr, np.maximum(n_prb, 1), self.outage_wait_s)
        return np.where(r > 0, t, 0.0)


class LinkAwarePolicy:
    """``inner``'s modes and powers with ``link.planned_delays`` as delays.

    ``outage_wait_s``: what an outage (reported SNR below CQI 1) plans for the wait of the next
    fading block.
    """

    def __init__(self, inner, link, outage_wait_s):
        self.inner = inner
        self.name = getattr(inner, "name", "?")
        self.link = link
        self.outage_wait_s = float(outage_wait_s)
        if inner.plan_with is not None:  # a policy comparing delays (deadline) compares the link's
            inner.plan_with(self.replan)

    def __getattr__(self, item):
        if item == "inner":  # not set yet (copy, unpickling): no delegation loop
            raise AttributeError(item)
        found = getattr(self.inner, item)
        # a policy deciding on per-device payload tables: its decisions replanned too
        return self._decide_with if item == "decide_with" and found is not None else found

    def decide(self, problem, rng=None):
        decision = self.inner.decide(problem, rng)
        return self.replan(problem, decision)

    def _decide_with(self, problem, ul_bits, dl_bits, dl_tv, rng=None):
        """The inner policy's ``decide_with`` (per-device payload tables of token-level
        payloads: ``policies.fidelity``), replanned on the link with each device's own bits."""
        decision = self.inner.decide_with(problem, ul_bits, dl_bits, dl_tv, rng)
        choice = decision.dl_choice
        bits = correction_bits(decision.mode != DL, 0 if choice is None else choice, ul_bits,
                               dl_bits)
        return self.replan(dataclasses.replace(problem, payload_bits=bits), decision)

    # one outcome through ``decide`` (the inner policy's scalar split has Shannon delays)
    one_outcome = ReactivePolicy.one_outcome

    def tcomm_kernel(self, system, g_ul, g_dl, coin_uniforms, seed=0, coin=None):
        """The draft objective's T_comm kernel: closed forms on the link when the inner policy
        has one, else this policy called as is. ``coin``: (M, K) fixed UL coins of a coin split
        (the exact estimator's enumeration), else drawn from ``coin_uniforms``."""
        from .draft_search import fast_mode

        mode = fast_mode(self.inner)
        if mode is None:
            return PolicyKernel(system, g_ul, g_dl, self, coin_uniforms, seed, coin=coin)
        if coin is None and coin_uniforms is not None:
            coin = coin_uniforms < 0.5
        return LinkTcommKernel(system, g_ul, g_dl, mode, coin, self.link, self.outage_wait_s)

    def _replan_one(self, problem, decision):
        """``replan`` for one outcome in scalar arithmetic (called by the engine every round)."""
        link = self.link
        mode = decision.mode[0]
        idx = np.flatnonzero(mode).tolist()
        delay = np.zeros(mode.shape[0])
        if not idx:
            decision.delay_s, decision.t_comm = delay[None, :], np.zeros(1)
            decision.bandwidth_hz = np.zeros(1)
            return decision
        n_prb = link.n_prb // len(idx)
        noise = link.n0 * n_prb * link.prb_hz
        g_ul = problem.g_ul[0] if problem.g_ul.ndim == 2 else problem.g_ul
        g_dl = problem.g_dl[0] if problem.g_dl.ndim == 2 else problem.g_dl
        power = decision.power_w[0]
        bits, wait = float(problem.payload_bits), self.outage_wait_s
        modes = mode.tolist()
        for i in idx:
            g = g_dl[i] if modes[i] == DL else g_ul[i]
            delay[i] = link.planned_one(bits, float(power[i] * g) / noise, n_prb, wait)
        decision.delay_s = delay[None, :]
        decision.t_comm = np.array([delay.max()])
        decision.bandwidth_hz = np.array([n_prb * link.prb_hz])
        return decision

    def carry(self, problem):
        return self.replan(problem, self.inner.carry(problem))

    def replan(self, problem, decision):
        if decision.mode.shape[0] == 1 and np.ndim(problem.payload_bits) == 0:
            return self._replan_one(problem, decision)
        link = self.link
        mode = decision.mode
        sending = (mode == UL) | (mode == DL)
        n_prb = link.n_prb // np.maximum(sending.sum(axis=1), 1)
        g = np.where(mode == DL, np.broadcast_to(problem.g_dl, mode.shape),
                     np.broadcast_to(problem.g_ul, mode.shape))
        with np.errstate(divide="ignore", invalid="ignore"):
            snr = decision.power_w * g / (link.n0 * n_prb[:, None] * link.prb_hz)
        planned = link.planned_delays(problem.payload_bits, snr, n_prb[:, None],
                                      self.outage_wait_s)
        delay = np.where(sending, planned, 0.0)
        decision.delay_s = delay
        decision.t_comm = delay.max(axis=1, initial=0.0)
        decision.bandwidth_hz = np.where(sending.any(axis=1),
                                         n_prb * link.prb_hz, 0.0).astype(float)
        return decision
