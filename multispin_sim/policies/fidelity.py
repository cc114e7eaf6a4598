"""The ``fidelity`` reactive policy: direction and DL payload size per rejected device.

Each rejected device k can correct

- uplink: it sends its drafting distribution q_d (the UL format of ``payload.format``, fixed
  before drafting: see ``model.tokens``) -- exact, S_k^ul bits, at full device power;
- downlink with one entry j of ``payload.menu`` (top-k sizes or dense): S_kj^dl bits, and the
  output token's distribution is off p by TV_kj (closed form, ``model.tokens.dl_output_tv``).

The policy minimises T_comm = max_k delay_k subject to TV_kj <= ``payload.tv_budget`` for every
DL correction. Solution (exact):

1. fewer DL bits never hurt (a DL device's power need falls with its bits, which leaves more of
   the shared budget to the others), so each device's DL option is the smallest allowed entry
   (TV <= budget); a device with none (budget 0 and no dense entry) must correct uplink;
2. for a target delay tau, a device can go UL iff d_k^ul <= tau, and putting it there only frees
   DL power, so an optimal assignment puts on UL the forced devices plus the n fastest-UL others
   (in UL-delay order): f(n) = max(UL delays, tau_dl(the rest)), tau_dl by delay-equalising power
   with unequal bits (``model.reactive.dl_delay_equalising``; closed form for equal bits);
   f is the max of a non-decreasing and a non-increasing sequence: every n is evaluated
   (|R| + 1 root findings at most).

The UL acceptance cost is not decided here: the UL size is chosen before drafting (the device
drafts from it), and the draft objective sees it through alpha_eff (``PayloadModel``).
``decide(problem)`` uses the per-device tables of the bound payload model (expected values);
the token server calls ``decide_with`` with the tables of this round's rejected positions.
"""
import math

import numpy as np

from ..model import reactive as solver
from ..model.reactive import DL, UL, ReactiveDecision
from .reactive import REACTIVE_POLICIES, ReactivePolicy

_LN2 = math.log(2.0)


def _dl_tau(bits, g, b, p_dl, n0):
    """Equalised DL delay of a set (lists of bits and gains) sharing p_dl."""
    if not bits:
        return 0.0
    if min(bits) == max(bits):
        inv = sum(1.0 / x for x in g)
        snr = p_dl / (n0 * b * inv)
        return bits[0] / (b * math.log1p(snr) / _LN2) if snr > 0 else math.inf
    tau, _ = solver.dl_delay_equalising(np.array(bits), b, np.array(g), p_dl, n0)
    return float(tau)


def choose_dl_option(dl_bits, dl_tv, budget):
    """Per device (rows): index of the fewest-bits menu entry with TV <= budget (ties: the
    smaller TV, then the first), -1 if no entry is allowed."""
    bits, tv = np.atleast_2d(dl_bits), np.atleast_2d(dl_tv)
    out = np.full(bits.shape[0], -1, dtype=np.int64)
    for i in range(bits.shape[0]):
        ok = [j for j in range(bits.shape[1]) if tv[i, j] <= budget * (1 + 1e-12) + 1e-15]
        if ok:
            out[i] = min(ok, key=lambda j: (bits[i, j], tv[i, j], j))
    return out


def fidelity_split_one(rejected, g_ul, g_dl, p_ul, p_dl, bandwidth_hz, n0, ul_bits, dl_bits,
                       forced_ul):
    """One outcome: (mode, power, delay, b, t_comm) lists over K devices (see module doc)."""
    k = len(rejected)
    idx = [i for i in range(k) if rejected[i]]
    mode, power, delay = [0] * k, [0.0] * k, [0.0] * k
    if not idx:
        return mode, power, delay, 0.0, 0.0
    b = bandwidth_hz / len(idx)
    nb = n0 * b

    def ul_delay(i):
        snr = p_ul[i] * g_ul[i] / nb
        return ul_bits[i] / (b * math.log1p(snr) / _LN2) if snr > 0 else math.inf

    d = {i: ul_delay(i) for i in idx}
    forced = [i for i in idx if forced_ul[i]]
    free = sorted((i for i in idx if not forced_ul[i]), key=d.__getitem__)
    base = max((d[i] for i in forced), default=0.0)
    best = None
    for n in range(len(free) + 1):
        rest = free[n:]
        ul_max = max(base, d[free[n - 1]] if n else 0.0)
        if best is not None and ul_max >= best[0]:
            break  # the UL part only grows with n
        tau = _dl_tau([dl_bits[i] for i in rest], [g_dl[i] for i in rest], b, p_dl, n0)
        f = max(ul_max, tau)
        if best is None or f < best[0]:
            best = (f, n, tau)
    f, n, tau = best
    for i in forced + free[:n]:
        mode[i], power[i], delay[i] = UL, p_ul[i], d[i]
    for i in free[n:]:
        mode[i], delay[i] = DL, tau
        power[i] = nb / g_dl[i] * math.expm1(dl_bits[i] / (b * tau) * _LN2) if 0 < tau < math.inf else 0.0
    return mode, power, delay, b, f


@REACTIVE_POLICIES.register("fidelity")
class FidelitySplit(ReactivePolicy):
    """Direction and DL payload size per rejected device: min T_comm s.t. DL TV <= budget."""

    dl_menu = True

    def __init__(self, tv_budget=None):
        self.tv_budget = tv_budget
        self.model = None

    def bind_payload(self, model):
        """The token-level payload model (per-device bits and TV of every menu entry)."""
        self.model = model
        if self.tv_budget is None:
            self.tv_budget = getattr(model, "tv_budget", 0.0)

    def decide(self, problem, rng=None):
        if self.model is None:
            raise ValueError("policy 'fidelity' needs the token payload model (payload.model: "
                             "token)")
        m = self.model
        return self.decide_with(problem, m.ul_bits, m.dl_bits, m.dl_tv, rng)

    def decide_with(self, problem, ul_bits, dl_bits, dl_tv, rng=None):
        """``decide`` with per-device tables: ul_bits (K,), dl_bits and dl_tv (K, F)."""
        budget = float(self.tv_budget or 0.0)
        choice = choose_dl_option(np.asarray(dl_bits, float), np.asarray(dl_tv, float), budget)
        forced = (choice < 0).tolist()
        safe = np.maximum(choice, 0)
        s_dl = np.asarray(dl_bits, float)[np.arange(len(choice)), safe].tolist()
        s_ul = np.asarray(ul_bits, float).tolist()
        rej = problem.rejected
        mm, k = rej.shape
        g_ul = np.broadcast_to(problem.g_ul, (mm, k))
        g_dl = np.broadcast_to(problem.g_dl, (mm, k))
        p_ul = problem.p_ul.tolist()
        modes, powers, delays = np.zeros((mm, k), np.int8), np.zeros((mm, k)), np.zeros((mm, k))
        bw, t = np.zeros(mm), np.zeros(mm)
        for r in range(mm):
            mode, power, delay, b, f = fidelity_split_one(
                rej[r].tolist(), g_ul[r].tolist(), g_dl[r].tolist(), p_ul, float(problem.p_dl),
                float(problem.bandwidth_hz), float(problem.n0), s_ul, s_dl, forced)
            modes[r], powers[r], delays[r], bw[r], t[r] = mode, power, delay, b, f
        decision = ReactiveDecision(modes, powers, delays, bw, t)
        decision.dl_choice = np.broadcast_to(safe, (mm, k))
        decision.bits = np.where(modes == UL, np.asarray(s_ul)[None, :],
                                 np.where(modes == DL, np.asarray(s_dl)[None, :], 0.0))
        return decision
