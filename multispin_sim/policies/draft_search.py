"""Searches over draft-length vectors gamma for the objective G of ``model.goodput``.

Every search works on a ``DraftObjective`` (whatever its T_comm estimator) and returns a
``SearchResult`` (gamma, its G on that objective, evaluations used):

- ``greedy_search``: the paper's Algorithm 1 (docs/model.md section 7). Phase 1 from gamma = 0 adds
  1 to every device while G improves; phase 2 adds 1 to the single device with the largest
  improvement until none improves or every device is at its cap.
- ``uniform_search``: the best common gamma (capped per device) over 0..max.
- ``budget_search`` (ours): the drafting time max_k gamma_k t_k is shared by the whole batch, so
  the search runs over that budget D: under D each device drafts as much as fits,
  floor(D / t_k), except the devices left out of drafting (gamma = 0: their corrections cost more
  than their tokens bring). A scan over every budget level, a greedy choice of the devices to
  leave out (re-scanning the budget after each), then a local search (+1, -1, to 0, to the
  budget's fill, per device) from the best point found, which also includes the greedy and
  uniform answers: never worse than either on the same objective.
- ``exhaustive_search``: every gamma vector (the reference for small K).

``make_objective`` builds the objective of one decision from the system, this round's gains (or
sampled fading), the active devices and the reactive policy, with common random numbers drawn
from the controller's stream. Where it applies (the SAA estimator, a closed-form kernel, the
goodput ratio with T_ver a function of the total draft length, at most 64 devices) and numba is
importable, the objective carries a compiled implementation (``search_numba``): the greedy, the
uniform and the budget search (``budget_numba``) run there whole, each one call; everything else
evaluates the objective in numpy. ``MULTISPIN_NUMBA=0`` keeps everything in numpy. Both compare
candidates by the one tie rule of ``model.ties``.
"""
import functools
from dataclasses import dataclass, field
from itertools import product

import numpy as np

from ..model.compiled import numba_allowed
from ..model.energy import EnergyKernel, TokensPerJoule
from ..model.ergodic import GainLaw
from ..model.estimators import RUN_CAP, ExactTcomm, SAATcomm, ZeroTcomm, acceptance_runs
from ..model.goodput import DraftObjective
from ..model.speculative import acceptance_uniforms
from ..model.tcomm import FAST_MODES, PolicyKernel, TcommKernel
from ..model.ties import best_index, improves
from ..model.verification import objective_verification
from .reactive import make_reactive_policy


@dataclass
class SearchResult:
    gamma: np.ndarray
    value: float
    evaluations: int = 0
    info: dict = field(default_factory=dict)


def _screen(obj, keep=3):
    """Screening for the long moves (a device to 0 or to its fill, which change many samples):
    rank them on a quarter of the SAA samples, evaluate the best ``keep`` on all."""
    m = getattr(obj.tcomm, "m", None)
    return None if m is None else (max(256, m // 4), keep)


# ---------------------------------------------------------------------------- the objective


def fast_mode(policy):
    """The name of the policy's closed-form T_comm kernel (its ``tcomm_kernel`` when that is a
    name of ``model.tcomm.FAST_MODES``), else None (the objective calls the policy itself)."""
    kernel = getattr(policy, "tcomm_kernel", None)
    return kernel if isinstance(kernel, str) and kernel in FAST_MODES else None


def make_kernel(system, g_ul, g_dl, policy, coin_uniforms, seed=0, energy=None, n_active=0,
                energy_scope="devices", coin=None):
    """T_comm kernel for ``policy``: closed forms when known, else the policy itself (a policy
    may bring its own kernel: ``tcomm_kernel``, e.g. ``linkaware.LinkAwarePolicy``).
    With ``energy`` (``model.energy.Powers``): the correction-phase device energy Z instead
    (``model.energy.EnergyKernel``, the tokens-per-joule objective). ``coin``: (M, K) fixed UL
    coins of a coin split (the exact estimator's enumeration), else drawn from
    ``coin_uniforms``."""
    if energy is not None:
        return EnergyKernel(system, g_ul, g_dl, policy, energy, n_active, coin_uniforms, seed,
                            coin=coin, scope=energy_scope)
    if system.transmission is not None:   # a shared band: the scheme evaluates the policy
        return system.transmission.kernel(system, g_ul, g_dl, policy, coin_uniforms, seed,
                                          coin=coin)
    own = getattr(policy, "tcomm_kernel", None)
    if callable(own):
        return own(system, g_ul, g_dl, coin_uniforms, seed, coin=coin)
    mode = fast_mode(policy)
    if mode is not None:
        if coin is None and coin_uniforms is not None and mode == "random":
            coin = coin_uniforms < 0.5
        return TcommKernel(system, g_ul, g_dl, mode, coin=coin)
    return PolicyKernel(system, g_ul, g_dl, policy, coin_uniforms, seed, coin=coin)


def make_objective(system, g_ul, g_dl, active, caps, policy=None, rng=None, samples=1000,
                   estimator="saa", sampled_fading=False, ignore_comm=False, reciprocal=None,
                   energy=None, energy_scope="devices", gain_law=None):
    """The objective G of one draft-length decision.

    system: the ``System``; g_ul, g_dl: this round's gains (K,) (ignored with
    ``sampled_fading``); active: (K,) bool; caps: (K,) int; policy: the reactive policy object
    (or its name; default 'optimal'); rng: the controller's Generator; samples: N_SAA;
    estimator: 'saa' or 'exact'; sampled_fading: draw the small-scale gains per sample, from
    ``gain_law`` (``model.ergodic.GainLaw``; None: one Rayleigh element; a shared band: the
    channel vectors' ``model.antennas.VectorLaw``), times the system's
    path loss (reciprocal as ``reciprocal`` says, or when g_ul == g_dl if it is None) instead
    of using the given gains (SAA only);
    ignore_comm: T_comm left out (computation-only); energy: ``model.energy.Powers`` to
    maximise tokens per joule instead of goodput (``model.energy.TokensPerJoule``), of the
    devices' energy or, with ``energy_scope='total'``, of devices and server.

    Draws (SAA): M x K acceptance uniforms, M x K coin uniforms, one seed, then (sampled fading)
    2 x M x K exponentials (times the law's antenna elements; vectors: 2 x M x K x M_ant complex
    normals), always in this order and these amounts.
    """
    k = system.k
    active = np.asarray(active, dtype=bool)
    # T_ver from the scenario's verification cost component (a number for 'linear', else a
    # function of the candidate draft lengths): the objective uses the engine's cost model
    verify = objective_verification(system.verification_cost(), active)
    if policy is None or isinstance(policy, str):
        policy = make_reactive_policy(policy or "optimal")
    n_active = int(np.count_nonzero(active))
    fast = False   # the compiled implementation: for the SAA estimator only
    if ignore_comm:
        tcomm = ZeroTcomm()
    elif estimator == "exact":
        if getattr(policy, "coin_split", False):   # every coin enumerated, with its kernel
            def kernel_for(coin):
                return make_kernel(system, g_ul, g_dl, policy, None, energy=energy,
                                   n_active=n_active, energy_scope=energy_scope, coin=coin)
            tcomm = ExactTcomm(system.alpha, active, random_split=True, make_kernel=kernel_for)
        else:
            kernel = make_kernel(system, g_ul, g_dl, policy, None,
                                 seed=0 if rng is None else int(rng.integers(2**63)),
                                 energy=energy, n_active=n_active, energy_scope=energy_scope)
            tcomm = ExactTcomm(system.alpha, active, kernel)
    elif estimator == "saa":
        if rng is None:
            raise ValueError("the SAA estimator needs a random stream")
        m = int(samples)
        uniforms = acceptance_uniforms(rng, (m, k))
        coin_u = rng.random((m, k))   # drawn for every policy: the stream does not depend on it
        seed = int(rng.integers(2**63))
        if sampled_fading:
            if reciprocal is None:
                reciprocal = np.array_equal(np.asarray(g_ul), np.asarray(g_dl))
            law = GainLaw() if gain_law is None else gain_law
            h = law.sample(rng, (2, m, k))
            g_ul = law.channel(system.pathloss, h[0])
            g_dl = g_ul if reciprocal else law.channel(system.pathloss, h[1])
        kernel = make_kernel(system, g_ul, g_dl, policy, coin_u, seed, energy=energy,
                             n_active=n_active, energy_scope=energy_scope)
        fast = compiled_enabled()   # numba is imported here, only for this estimator
        tcomm = SAATcomm(_runs(uniforms, system.alpha, fast), kernel)
    else:
        raise ValueError(f"unknown estimator {estimator!r}; allowed: saa, exact")
    score = None if energy is None else TokensPerJoule(energy, system.draft_latency_s, active,
                                                       energy_scope, system.draft_slowdown)
    obj = DraftObjective(system.alpha, system.draft_latency_s, verify, caps, active, tcomm,
                         score=score)
    if fast:
        from .search_numba import CompiledSearch

        obj.compiled = CompiledSearch.for_objective(obj)
    return obj


def _runs(uniforms, alpha, compiled):
    """``acceptance_runs``; compiled after numpy's logarithms where numba runs (the same runs)."""
    if not compiled:
        return acceptance_runs(uniforms, alpha)
    from .search_numba import runs_from_logs

    with np.errstate(divide="ignore"):
        return runs_from_logs(np.log(uniforms), np.log(alpha), RUN_CAP)


def compiled_enabled():
    """numba importable and not switched off (``MULTISPIN_NUMBA=0``)."""
    return numba_allowed() and _numba_importable()


@functools.cache
def _numba_importable():
    try:
        from .search_numba import CompiledSearch  # noqa: F401  (imports numba)
    except ImportError:
        return False
    return True


# ---------------------------------------------------------------------------- searches


def uniform_path(caps):
    """(top + 1, K): row c is min(c, caps) -- phase 1 of the greedy and the uniform scan."""
    caps = np.asarray(caps, dtype=np.int64)
    top = int(caps.max(initial=0))
    return np.minimum(np.arange(top + 1)[:, None], caps[None, :])


def _phase1_stop(values):
    c = 0
    while c + 1 < len(values) and improves(values[c + 1], values[c]):
        c += 1
    return c


def greedy_search(obj, path_values=None, compiled=True):
    """The paper's greedy (Algorithm 1). ``path_values``: G along ``uniform_path`` if known.

    ``compiled``: run the objective's compiled greedy when it has one (``obj.compiled``).
    """
    if compiled and obj.compiled is not None:
        return SearchResult(*obj.compiled.greedy())
    ev0 = obj.evaluations
    path = uniform_path(obj.caps)
    if path_values is None:
        path_values = _lazy_phase1(obj, path)
    c = _phase1_stop(path_values)
    obj.reset(path[c])
    steps = 0
    while True:
        g = obj.plus_one_values()
        j = best_index(g)
        if j < 0 or not improves(g[j], obj.value):
            break
        obj.apply_move(j, obj.gamma[j] + 1)
        steps += 1
    return SearchResult(obj.gamma.copy(), obj.value, obj.evaluations - ev0,
                        {"phase1": int(c), "phase2_steps": steps})


def _lazy_phase1(obj, path, chunk=12):
    """G along the uniform path, evaluated in chunks until it stops improving (each chunk
    starts where the last one ended: its per-sample T_comm is known)."""
    vals = list(obj.path_values(path[:chunk + 1]))
    while len(vals) < len(path) and all(improves(vals[i + 1], vals[i])
                                        for i in range(len(vals) - 1)):
        seg = path[len(vals) - 1:len(vals) + chunk // 2 + 1]
        vals.extend(obj.path_values(seg)[1:])
    return np.array(vals)


def uniform_search(obj, path_values=None, compiled=True):
    """The best common draft length (capped per device); ties go to the shortest.

    ``compiled``: run the objective's compiled scan when it has one (``obj.compiled``)."""
    if compiled and obj.compiled is not None and path_values is None:
        from .budget_numba import uniform_search_compiled

        return SearchResult(*uniform_search_compiled(obj))
    ev0 = obj.evaluations
    path = uniform_path(obj.caps)
    if path_values is None:
        path_values = obj.path_values(path)
    c = best_index(np.asarray(path_values))
    return SearchResult(path[c].copy(), float(path_values[c]), obj.evaluations - ev0, {"c": c})


def budget_order(caps, draft_s, include):
    """The device of each step of the budget path: every level g t_k (g = 1..cap_k) of the
    included devices in order of g t_k (ties by device). Leaving devices out keeps the order
    of the others (a subsequence)."""
    caps = np.asarray(caps, dtype=np.int64)
    dev = np.flatnonzero(include & (caps > 0))
    if dev.size == 0:
        return np.zeros(0, dtype=np.int64)
    reps = caps[dev]
    who = np.repeat(dev, reps)
    level = np.concatenate([np.arange(1, c + 1) for c in reps])
    return who[np.lexsort((who, level * draft_s[who]))]


def budget_path(caps, draft_s, include):
    """Nondecreasing path over the drafting budget D: every level g t_k (g = 1..cap_k) in order.

    Row 0 is all zeros; row s has gamma_k = #{g <= cap_k : g t_k <= D_s} for included devices.
    """
    k = np.asarray(caps).size
    who = budget_order(caps, draft_s, include)
    path = np.zeros((who.size + 1, k), dtype=np.int64)
    if who.size:
        inc = np.zeros((who.size, k), dtype=np.int64)
        inc[np.arange(who.size), who] = 1
        path[1:] = np.cumsum(inc, axis=0)
    return path


def _moves(obj, kinds):
    """Candidate single-device moves (devices, new lengths) of the given kinds."""
    g, caps, k = obj.gamma, obj.caps, obj.k
    act = np.flatnonzero(caps > 0)
    out_dev, out_new = [], []
    for kind in kinds:
        if kind == "+1":
            new, ok = g + 1, g < caps
        elif kind == "-1":
            new, ok = g - 1, g > 0
        elif kind == "zero":
            new, ok = np.zeros(k, np.int64), g > 1
        elif kind == "fill":
            d = float((g * obj.draft_s).max(initial=0.0))
            new = np.minimum(caps, np.floor(d / obj.draft_s * (1 + 1e-12)).astype(np.int64))
            ok = new > g + 1
        else:
            raise ValueError(kind)
        sel = act[ok[act]]
        out_dev.append(sel)
        out_new.append(new[sel])
    return np.concatenate(out_dev), np.concatenate(out_new)


def local_search(obj, gamma, max_steps=None):
    """Best-improvement local search from ``gamma``.

    Cheap moves first (+1 or -1 on one device: they change a few samples each); at a local
    optimum of those, the long moves (one device to 0, or up to the fill of the current drafting
    budget, floor(D / t_k)); stop when no move improves G.
    """
    ev0 = obj.evaluations
    obj.reset(gamma)
    max_steps = 8 * obj.k * max(1, int(obj.caps.max(initial=0))) if max_steps is None else max_steps
    steps = 0
    kinds = ("+1", "-1")
    while steps < max_steps:
        dev, new = _moves(obj, kinds)
        if dev.size:
            vals = obj.move_values(dev, new, None if kinds == ("+1", "-1") else _screen(obj))
            i = best_index(vals)
        if dev.size and i >= 0 and improves(vals[i], obj.value):
            obj.apply_move(dev[i], new[i])
            steps += 1
            kinds = ("+1", "-1")
        elif kinds == ("+1", "-1"):
            kinds = ("zero", "fill")
        else:
            break
    return SearchResult(obj.gamma.copy(), obj.value, obj.evaluations - ev0, {"steps": steps})


def _free_budget(obj, path):
    """The drafting time of the best communication-free point of the uniform ``path``."""
    g_free = obj.tokens(path) / (obj.drafting(path) + obj.t_ver(path))
    return float(obj.drafting(path[best_index(g_free)]))


def budget_search(obj, compiled=True):
    """Our controller: budget scan with exclusions, then local search; never worse than the
    greedy and uniform answers on the same objective (both are computed and kept as
    candidates). ``compiled``: run it whole in the objective's compiled implementation when
    it has one (``obj.compiled``; ``budget_numba``)."""
    ev0 = obj.evaluations
    caps = obj.caps
    if compiled and obj.compiled is not None:
        from .budget_numba import budget_search_compiled

        order = budget_order(caps, obj.draft_s, caps > 0)
        return SearchResult(*budget_search_compiled(obj, order, _screen(obj)))
    path = uniform_path(caps)
    pv = obj.path_values(path)
    uni = uniform_search(obj, pv)
    gre = greedy_search(obj, pv, compiled=compiled)
    cands = {"uniform": uni, "greedy": gre}

    # the budget a communication-free round would use: where exclusions are judged
    d_free = _free_budget(obj, path)
    include = caps > 0
    best_scan = None
    excluded = []
    stale = 0
    for _ in range(int(include.sum()) + 1):
        bpath = budget_path(caps, obj.draft_s, include)
        bv = obj.path_values(bpath)
        s = best_index(bv)
        if best_scan is None or improves(bv[s], best_scan.value):
            best_scan = SearchResult(bpath[s].copy(), float(bv[s]))
            stale = 0
        else:
            stale += 1
            if stale >= 2:
                break
        # judge leaving each drafting device out at the larger of this scan's best budget and
        # the communication-free budget (a device whose corrections are too costly shows it
        # there, even when the best budget so far is short because of that very device)
        d = obj.drafting(bpath)
        ref = int(np.searchsorted(d, max(d[s], d_free), side="right")) - 1
        obj.reset(bpath[ref])
        dev = np.flatnonzero(obj.gamma > 0)
        if dev.size == 0:
            break
        xv = obj.move_values(dev, 0, _screen(obj))
        i = best_index(xv)
        if i < 0 or not improves(xv[i], obj.value):
            break
        include[dev[i]] = False
        excluded.append(int(dev[i]))
    cands["budget-scan"] = best_scan

    names = list(cands)
    start_name = names[best_index(np.array([cands[n].value for n in names]))]
    loc = local_search(obj, cands[start_name].gamma)
    cands["local"] = loc
    names = ["local", "greedy", "uniform"]
    name = names[best_index(np.array([cands[n].value for n in names]))]
    best = cands[name]
    info = {"from": start_name, "chosen": name, "excluded": excluded,
            "values": {n: c.value for n, c in cands.items()},
            "greedy": gre.gamma, "uniform": uni.gamma}
    return SearchResult(best.gamma.copy(), best.value, obj.evaluations - ev0, info)


def exhaustive_search(obj, chunk=4096):
    """Every gamma vector with 0 <= gamma_k <= cap_k (the reference; prod(cap + 1) vectors)."""
    ev0 = obj.evaluations
    caps = obj.caps
    dev = np.flatnonzero(caps > 0)
    best_v, best_g = -np.inf, np.zeros(obj.k, dtype=np.int64)
    grid = product(*(range(int(c) + 1) for c in caps[dev]))
    while True:
        block = np.array([x for _, x in zip(range(chunk), grid)], dtype=np.int64)
        if len(block) == 0:   # (no device can draft: one vector, all zeros, shape (1, 0))
            break
        full = np.zeros((block.shape[0], obj.k), dtype=np.int64)
        full[:, dev] = block.reshape(block.shape[0], dev.size)
        vals = obj.values(full)
        i = best_index(vals)
        if i >= 0 and (best_v == -np.inf or improves(vals[i], best_v)):
            best_v, best_g = float(vals[i]), full[i].copy()
    return SearchResult(best_g, best_v, obj.evaluations - ev0)
