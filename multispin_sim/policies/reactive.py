"""Reactive policies: mode (UL or DL) and power for every rejected device, given the outcome.

Every policy maps a ``ReactiveProblem`` (M outcomes at once) to a ``ReactiveDecision``
(``decide``), and answers one outcome on its own (``one_outcome``: the engine asks it once per
round). Powers are always optimised for the chosen split (UL at full power, DL
delay-equalising). The straggler policies ('deadline', 'robust') live in ``policies.straggler``.
"""
import dataclasses
import math

import numpy as np

from ..model import ties
from ..model import reactive as solver
from ..model.energy import correction_energy
from .registry import Registry

REACTIVE_POLICIES = Registry("reactive policy")


class ReactivePolicy:
    """Interface: ``decide(problem, rng) -> ReactiveDecision``. ``rng`` is the policy's own stream.

    ``tcomm_kernel``: how the draft objective evaluates this policy's T_comm on many outcomes:
    the name of a closed form of ``model.tcomm.TcommKernel`` ('optimal', 'all-ul', 'all-dl',
    'random'), a callable ``(system, g_ul, g_dl, coin_uniforms, seed) -> kernel``, or None
    (the objective calls ``decide`` on batches of outcomes).

    ``defers``: its decisions carry ``deferred`` corrections, sent at the next round start
    (``carry``); the engine then reads every decision whole instead of ``one_outcome``.

    ``stateless``: a decision depends on its outcome and channel state alone (no random draw,
    nothing kept from one call to the next), so the engine may ask for many rounds' decisions
    in one ``decide`` call, ahead of time (``EdgeServer.steady_decisions``).

    ``counts_present``: its decisions depend on how many devices are in the round
    (``ReactiveProblem.present``), so the engine asks ``decide`` with that count, not
    ``one_outcome``.

    ``coin_split``: its split is a fair coin per rejected device, so the exact estimator
    enumerates the coins (a callable ``tcomm_kernel`` then takes them as ``coin=``).

    ``no_rejection(k, rng)``: called in a round where no device was rejected, so that a policy
    that draws from its stream draws what a decision would: its draws then keep their places,
    round by round, whatever other settings make some rounds free of rejections.
    """

    name = "?"
    tcomm_kernel = None
    defers = False
    stateless = False
    counts_present = False
    coin_split = False

    def __init_subclass__(cls, **kwargs):
        # a subclass with decisions of its own no longer has its parent's closed form or
        # scalar decision unless it says so again
        super().__init_subclass__(**kwargs)
        if "decide" in cls.__dict__:
            if "tcomm_kernel" not in cls.__dict__:
                cls.tcomm_kernel = None
            if "one_outcome" not in cls.__dict__:
                cls.one_outcome = ReactivePolicy.one_outcome
            if "stateless" not in cls.__dict__:
                cls.stateless = False
            if "coin_split" not in cls.__dict__:
                cls.coin_split = False

    @classmethod
    def from_scenario(cls, scenario):
        """The policy of a scenario's ``policy.mode``; policies with settings read their keys."""
        return cls()

    # chooses among the payload's DL formats (``payload.menu``) rather than using its one format
    dl_menu = False
    # decide_with(problem, ul_bits, dl_bits, dl_tv, rng): decisions on each device's own payload
    # tables (token-level payloads); None: ``decide`` on the problem's bits
    decide_with = None
    # plan_with(replan): a policy that compares delays is handed the link's planner; None: it
    # compares none
    plan_with = None

    def no_rejection(self, k, rng):
        """Nothing to draw (the policy draws nothing, or draws per rejected device)."""

    @classmethod
    def for_run(cls, scenario, powers):
        """The policy a run of ``scenario`` uses: ``for_energy`` when the draft objective
        counts energy (``policy.objective`` 'tokens-per-joule'), else ``from_scenario``."""
        if scenario.policy.objective == "tokens-per-joule":
            return cls.for_energy(scenario, powers)
        return cls.from_scenario(scenario)

    @classmethod
    def for_energy(cls, scenario, powers):
        """The policy when the draft objective is tokens per joule (``policy.objective``):
        the same policy, unless it breaks its ties by energy (``model.energy.Powers``)."""
        return cls.from_scenario(scenario)

    def bind_payload(self, model):
        """Called with the token-level payload model (``payload.model: token``): a policy that
        chooses among its DL formats keeps it (none here)."""

    def use_channel(self, channel):
        """Called once the run's channel is built: a policy that needs more of it than each
        decision's gains keeps what it needs (none here)."""

    def decide(self, problem, rng=None):
        raise NotImplementedError

    def one_outcome(self, system, rng=None):
        """``decide_one(idx, g_ul, g_dl) -> (mode, power, delay, bandwidth, t_comm)``: the
        decision for one outcome on ``system``'s constants (``idx``: the rejected devices
        ascending; gains: lists of K floats; mode, power, delay: lists of K). This default asks
        ``decide`` on a one-row problem; a policy with a cheaper scalar form overrides it."""
        def decide_one(idx, g_ul, g_dl):
            return _one_row(system, idx, g_ul, g_dl, lambda problem: self.decide(problem, rng))
        return decide_one


def _one_row(system, idx, g_ul, g_dl, decide):
    """``decide(problem)`` on the one-outcome problem of the rejected devices ``idx`` and the
    gain lists, as ``one_outcome`` answers: (mode, power, delay lists, bandwidth, t_comm)."""
    rejected = np.zeros(system.k, dtype=bool)
    rejected[idx] = True
    d = decide(system.reactive_problem(rejected, np.array(g_ul, dtype=float),
                                       np.array(g_dl, dtype=float)))
    return (d.mode[0].tolist(), d.power_w[0].tolist(), d.delay_s[0].tolist(),
            float(d.bandwidth_hz[0]), float(d.t_comm[0]))


def _constants(system):
    """(K, P_ul list, S, N0, P_dl, B) of ``system`` as Python numbers."""
    k = system.k
    p_ul = np.broadcast_to(np.asarray(system.p_ul_w, dtype=float), (k,)).tolist()
    return (k, p_ul, float(system.payload_bits), float(system.n0), float(system.p_dl_w),
            float(system.bandwidth_hz))


def _nothing(k):
    return [0] * k, [0.0] * k, [0.0] * k, 0.0, 0.0


def _assignment_one(system, rng, coin, all_ul):
    """``one_outcome`` of the baseline modes: all-UL, all-DL, or (``coin``) the random split,
    whose K coins come from the policy stream as ``model.reactive.random_split`` draws them
    (one uniform per device, UL below 1/2, drawn whatever the outcome). Gains that are not
    finite and positive go through ``evaluate_assignment`` with the same modes."""
    k, p_ul, s_bits, n0, p_dl, bandwidth = _constants(system)
    inf = math.inf

    def decide_one(idx, g_ul, g_dl):
        if coin:
            u = rng.random(k).tolist()
            ul = [u[i] < 0.5 for i in idx]
        else:
            ul = [all_ul] * len(idx)
        if not idx:
            return _nothing(k)
        if not all(0.0 < g_ul[i] < inf and 0.0 < g_dl[i] < inf for i in idx):
            mask = np.zeros((1, k), dtype=bool)
            mask[0, idx] = ul
            return _one_row(system, idx, g_ul, g_dl,
                            lambda problem: solver.evaluate_assignment(problem, mask))
        b = bandwidth / len(idx)
        mode, power, delay, t_comm = solver.assign_one(idx, ul, k, p_ul, g_ul, g_dl, s_bits, n0,
                                                       p_dl, b)
        return mode, power, delay, b, t_comm
    return decide_one


@REACTIVE_POLICIES.register("optimal")
class OptimalSplit(ReactivePolicy):
    """The paper's optimum: UL prefix in UL-delay order, the split n chosen by min max delay."""

    tcomm_kernel = "optimal"
    stateless = True

    @classmethod
    def for_energy(cls, scenario, powers):
        p = scenario.policy
        return EnergyAwareSplit(powers, p.energy_tie_tolerance, p.energy_scope)

    def decide(self, problem, rng=None):
        return solver.optimal_split(problem)

    def one_outcome(self, system, rng=None):
        """``model.reactive.split_one`` on the rejected devices, in Python floats."""
        k, p_ul, s_bits, n0, p_dl, bandwidth = _constants(system)

        def decide_one(idx, g_ul, g_dl):
            if not idx:
                return _nothing(k)
            b = bandwidth / len(idx)
            mode, power, delay, t_comm = solver.split_one(idx, k, p_ul, g_ul, g_dl, s_bits, n0,
                                                          p_dl, b)
            return mode, power, delay, b, t_comm
        return decide_one


class _OneDirection(ReactivePolicy):
    """Every correction in one direction: uplink (``all_ul``) or downlink."""

    all_ul: bool
    stateless = True

    def decide(self, problem, rng=None):
        return solver.all_ul(problem) if self.all_ul else solver.all_dl(problem)

    def one_outcome(self, system, rng=None):
        return _assignment_one(system, rng, coin=False, all_ul=self.all_ul)


@REACTIVE_POLICIES.register("all-ul")
class AllUplink(_OneDirection):
    """Every correction uplink at full device power (the classic server-side correction)."""

    tcomm_kernel = "all-ul"
    all_ul = True


@REACTIVE_POLICIES.register("all-dl")
class AllDownlink(_OneDirection):
    """Every correction downlink, the DL budget shared to equalise delays."""

    tcomm_kernel = "all-dl"
    all_ul = False


@REACTIVE_POLICIES.register("random")
class RandomSplit(ReactivePolicy):
    """A fair coin per rejected device; powers optimised for the resulting split."""

    tcomm_kernel = "random"
    coin_split = True

    def decide(self, problem, rng=None):
        if rng is None:
            raise TypeError("the random policy needs its random stream: decide(problem, rng)")
        return solver.random_split(problem, rng)

    def one_outcome(self, system, rng=None):
        if rng is None:
            raise TypeError("the random policy needs its random stream: one_outcome(system, rng)")
        return _assignment_one(system, rng, coin=True, all_ul=False)

    def no_rejection(self, k, rng):
        """The K coins of a round, drawn and unused: device k's coin in round r is the same
        whatever rounds before it had rejections."""
        rng.random(k)


@REACTIVE_POLICIES.register("exhaustive")
class ExhaustiveSplit(ReactivePolicy):
    """All 2^|R| assignments: the reference for small |R|."""

    tcomm_kernel = "optimal"
    stateless = True

    def decide(self, problem, rng=None):
        return solver.exhaustive_split(problem)


# ---------------------------------------------------------------------------- ties broken by energy

def energy_aware_split(problem, powers, tolerance=0.0, scope="devices"):
    """The split choice of ``EnergyAwareSplit`` (its docstring), vectorised over the M outcomes;
    ``scope='total'`` adds the server's DL transmit energy (P_dl tau for a non-empty DL set).
    Every device in the round (``problem.present``, all K if None) idles through T_comm
    but while it transmits or receives, as ``model.energy.correction_energy`` charges it.
    Splits whose T_comm is within the larger of ``tolerance`` and the tie rule's ``ties.REL``
    (relative) of the best tie: a UL and a DL delay equal in exact arithmetic (reciprocal gains,
    equal powers) differ in their last bits. A shared band (``problem.multi_user``): with
    ``tolerance`` 0 the optimal split (its sets' T_comm do not tie: different schemes), else
    ``_shared_band_energy_split``."""
    if problem.multi_user:
        if tolerance:
            return _shared_band_energy_split(problem, powers, tolerance, scope)
        return solver.optimal_split(problem)
    table = solver.prefix_table(problem)
    f, cols, rej, tau = table.f, table.cols, table.rejected, table.tau
    m, k = problem.shape
    r = rej.sum(axis=1)
    present = k if problem.present is None else problem.present
    d = np.where(rej, table.d_ul, 0.0)
    p = np.take_along_axis(np.broadcast_to(problem.p_ul, (m, k)), cols, axis=1)
    zero = np.zeros((m, 1))
    with np.errstate(invalid="ignore"):
        e_ul = np.concatenate([zero, np.cumsum((p + powers.ul_circuit_w) * d, axis=1)], axis=1)
        t_ul = np.concatenate([zero, np.cumsum(d, axis=1)], axis=1)
        n = np.arange(k + 1)[None, :]
        n_dl = np.maximum(r[:, None] - n, 0)
        energy = (e_ul + powers.dl_receive_w * tau * n_dl
                  + powers.idle_w * (present * f - t_ul - tau * n_dl))
        if scope == "total":
            energy = energy + np.where(n_dl > 0, problem.p_dl * tau, 0.0)
    best = f.min(axis=1, keepdims=True)
    ok = (n <= r[:, None]) & (f <= best * (1.0 + max(tolerance, ties.REL)))
    energy = np.where(ok & np.isfinite(energy), energy, np.inf)
    n_ul = np.where(np.isfinite(energy).any(axis=1), np.argmin(energy, axis=1), np.argmin(f, axis=1))
    rank = np.empty_like(cols)
    np.put_along_axis(rank, cols, np.broadcast_to(np.arange(k), (m, k)).copy(), axis=1)
    return solver.evaluate_assignment(problem, problem.rejected & (rank < n_ul[:, None]))


def _shared_band_energy_split(problem, powers, tolerance, scope):
    """``energy_aware_split`` on a shared band: every prefix split of each outcome evaluated
    under the schemes (``ArrayProblem.prefix_candidates``), its energy as the accounting
    charges it (``model.energy.correction_energy``: a ZF stream over its group's turn); among
    those within ``tolerance`` of the best T_comm the least energy (the first on ties). Each
    distinct rejected set (SAA outcomes repeat them) is solved once."""
    once, again = problem.distinct_outcomes()
    sets = dataclasses.replace(problem, rejected=problem.rejected[once])
    masks, exists = sets.prefix_candidates()
    present = problem.shape[1] if problem.present is None else problem.present
    t, e = np.full(exists.shape, np.inf), np.full(exists.shape, np.inf)
    for c in np.flatnonzero(exists.any(axis=1)):
        d = solver.evaluate_assignment(sets, masks[c])
        t[c] = np.where(exists[c], d.t_comm, np.inf)
        e[c] = np.where(exists[c], correction_energy(d, powers, present, scope), np.inf)
    ok = t <= t.min(axis=0) * (1.0 + max(tolerance, ties.REL))
    e = np.where(ok & np.isfinite(e), e, np.inf)
    pick = np.where(np.isfinite(e).any(axis=0), np.argmin(e, axis=0), np.argmin(t, axis=0))
    chosen = masks[pick, np.arange(len(once))][again]
    return solver.evaluate_assignment(problem, chosen)


class EnergyAwareSplit(ReactivePolicy):
    """``policy.mode: optimal`` under ``policy.objective: tokens-per-joule``: the optimal
    UL/DL split with ties broken by device energy.

    ``EnergyAwareSplit`` evaluates every prefix split n (docs/model.md section 6) of each outcome, keeps
    those whose T_comm is within ``tolerance`` (relative) of the optimum, and among them takes the
    one with the least device energy of the correction phase (``model.energy`` powers: UL devices
    (p + P_circuit) d, DL devices P_rx tau, and P_idle for every device in the round,
    rejected or not, while it waits for the slowest; first such split on exact ties). With
    ``tolerance`` 0 its T_comm is the optimal split's within the tie rule (``model.ties.REL``:
    so the draft objective may use the optimal split's closed-form kernel:
    ``tcomm_kernel = 'optimal'``); with a tolerance > 0 it trades up to that fraction of T_comm for
    energy, and the draft objective calls the policy itself.
    """

    name = "optimal-energy"
    stateless = True
    counts_present = True

    def __init__(self, powers, tolerance=0.0, scope="devices"):
        self.powers = powers
        self.scope = scope
        self.tolerance = float(tolerance)
        self.tcomm_kernel = "optimal" if self.tolerance == 0 else None

    def decide(self, problem, rng=None):
        return energy_aware_split(problem, self.powers, self.tolerance, self.scope)


def make_reactive_policy(name, scenario=None):
    """The reactive policy registered under ``name`` (``policy.mode`` in the scenario); with a
    ``scenario``, built from it (``from_scenario``: policies with settings read their keys)."""
    cls = REACTIVE_POLICIES.lookup(name)
    return cls() if scenario is None else cls.from_scenario(scenario)
