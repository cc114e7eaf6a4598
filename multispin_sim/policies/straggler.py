"""Straggler policies (``straggler`` section): 'deadline' defers the slowest corrections to the
next round start, 'robust' picks the prefix split best at a quantile of T_comm under CSI error.
Registered after ``policies.fidelity``, so the names keep the order of the key reference."""
import dataclasses
import warnings

import numpy as np

from ..model import reactive as solver
from ..model.antennas import direct_share, vectors_of
from ..model.mimo_batch import first_min
from .reactive import REACTIVE_POLICIES, ReactivePolicy


@REACTIVE_POLICIES.register("deadline")
class DeadlineSplit(ReactivePolicy):
    """Straggler deferral: the optimal split, then every correction slower than the deadline is
    deferred -- it is sent at the start of the next round, while the others draft, instead of
    holding up this round; the optimal split is solved again for the corrections that remain.

    The deadline is ``deadline_ms`` when given, else ``median_multiple`` x the median planned
    delay of the round's corrections (so with a multiple >= 1 at least half of them stay). The
    planned delays are those the corrections will have: Shannon's, or the link's when a link
    wraps the policy (``plan_with``: ``policies.linkaware``).
    ``deferred`` (M, K) bool is attached to the decision; ``carry(problem)`` decides the
    deferred corrections at the next round start (the optimal split, nothing deferred again).
    The engine gives a deferred device no draft in that round; its pending token is delivered
    when its correction arrives. The draft objective (generic policy kernel) sees this round's
    T_comm after the deferral: carried corrections are taken as hidden under the next drafting.
    """

    defers = True

    def __init__(self, deadline_ms=None, median_multiple=2.0):
        self.deadline_s = None if deadline_ms is None else float(deadline_ms) * 1e-3
        self.median_multiple = float(median_multiple)
        self._plan = None

    def plan_with(self, plan):
        """Compare the deadline with the delays of ``plan(problem, decision)`` (a link's planned
        delays for the split's modes and powers) instead of the split's Shannon delays."""
        self._plan = plan

    def _split(self, problem):
        decision = solver.optimal_split(problem)
        return decision if self._plan is None else self._plan(problem, decision)

    @classmethod
    def from_scenario(cls, scenario):
        st = scenario.straggler
        return cls(st.deadline_ms, st.deadline_median_multiple)

    def deadline(self, decision, rejected):
        if self.deadline_s is not None:
            return np.full(rejected.shape[0], self.deadline_s)
        d = np.where(rejected, decision.delay_s, np.nan)
        with np.errstate(all="ignore"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                med = np.nanmedian(d, axis=1)
        return np.where(np.isnan(med), np.inf, self.median_multiple * med)

    def decide(self, problem, rng=None):
        first = self._split(problem)
        rejected = problem.rejected
        defer = rejected & (first.delay_s > self.deadline(first, rejected)[:, None])
        if not defer.any():
            first.deferred = defer
            return first
        rest = dataclasses.replace(problem, rejected=rejected & ~defer)
        decision = self._split(rest)
        decision.deferred = defer
        return decision

    def carry(self, problem):
        return solver.optimal_split(problem)


_DRAWS_PER_SLICE = 1 << 18   # channel draws of the rejected sets solved together (~30 MB)


@REACTIVE_POLICIES.register("robust")
class RobustSplit(ReactivePolicy):
    """The prefix split that minimises the ``quantile`` of T_comm under the CSI error model,
    instead of T_comm at the point estimate.

    The decision sees estimated gains; the true small-scale gain given the estimate is
    h ~ CN(rho h_hat, 1 - rho^2 + rho^2 s2) (``model.csi``: MMSE error s2, then aging over the
    CSI delay with rho = J0(2 pi f_D tau); CQI quantisation is not modelled here). For each
    prefix split in estimated UL order (UL at full power, DL powers equalised on the estimate),
    ``samples`` draws of the true gains give the realised slowest SNR; every link delay is a
    non-increasing function of the SNR, so the split with the largest (1 - quantile)-quantile
    of the slowest SNR has the smallest quantile of T_comm, on either link. Perfect CSI (rho 1,
    s2 0) gives the optimal split. Draws come from the policy stream. ``pathloss``: the
    large-scale gains (the estimate's scale), the channel's as they change (``use_channel``).
    ``rho``: one correlation, or a callable giving each device's (K,), the channel's where the
    Doppler follows each device's speed (``channel.doppler`` 'speed': rho_k = J0 of the
    distance it walked over the delay, ``LinkChannel.csi_rho``).

    On a shared band (``mu-mimo-zf``, ``mu-mimo-mmse``) a stream's rate depends on the whole
    set, so the draws are of the channel vectors: a = rho a_hat + sqrt(G v) w, w ~ CN(0, I),
    v = 1 - rho^2 + rho^2 s2 (exact for i.i.d. antenna elements), and each prefix split of the
    problem (``ArrayProblem.prefix_candidates``), planned on the estimates, is met by every
    draw (``Transmission.realised_t_comm``): the split with the smallest ``quantile`` of its
    realised T_comm (common draws; ties: the first prefix), each distinct rejected set once.

    In a Rician channel (``channel.rician_k_db``) the direct path d = sqrt(G) a s is known and
    the errors act on the scattered part, of power b^2 (``model.csi``): a = d + rho (a_hat - d)
    + sqrt(G b^2 v) w. Through the beam on the estimate the mean is
    sqrt(g_hat) |rho + (1 - rho) c|, c = a_hat^H d / ||a_hat||^2, read from the channel's last
    estimate (``direct_paths``, ``estimate_now``; sampled gains of the draft objective take the
    c of that estimate's devices).
    """

    def __init__(self, quantile=0.9, samples=64, rho=1.0, error_variance=0.0, seed=0,
                 pathloss=None):
        self.pathloss = pathloss  # (K,) large-scale gains, or a callable returning them
        self.quantile = float(quantile)
        self.samples = int(samples)
        self.rho = rho if callable(rho) else float(rho)
        self.s2 = float(error_variance)
        self.seed = seed
        # a Rician channel's direct paths and the last estimate, from the channel (use_channel)
        self.direct_paths = self.estimate_now = None

    @classmethod
    def from_scenario(cls, scenario):
        from scipy.special import j0

        c, ch, st = scenario.csi, scenario.channel, scenario.straggler
        # under doppler 'speed' each device's rho comes from the channel (engine.link)
        still = (ch.fading == "none" or c.delay_ms == 0 or ch.doppler_hz == 0
                 or ch.doppler == "speed")
        rho = 1.0 if still else float(j0(2 * np.pi * ch.doppler_hz * c.delay_ms * 1e-3))
        return cls(st.robust_quantile, st.robust_samples, rho, c.estimation_error_variance)

    def use_channel(self, channel):
        self.pathloss = lambda: channel.pathloss   # mobility replaces the channel's array
        rho = channel.csi_rho()
        if rho is not None:
            self.rho = rho
        self.direct_paths, self.estimate_now = channel.direct_paths, channel.estimate_now

    def _rician(self):
        """(d (K, M), b^2): the direct paths sqrt(G) a s and the scattered power of a Rician
        channel, or (None, 1.0)."""
        paths = None if self.direct_paths is None else self.direct_paths()
        return (None, 1.0) if paths is None else (paths[0], paths[1] ** 2)

    def decide(self, problem, rng=None):
        rho = self.rho() if callable(self.rho) else self.rho
        if np.all(np.asarray(rho) == 1.0) and self.s2 == 0.0:
            return solver.optimal_split(problem)
        if rng is None:
            rng = np.random.default_rng(self.seed)
        if problem.multi_user:
            return self._decide_shared(problem, rho, rng)
        m, k = problem.shape
        g_ul = np.broadcast_to(problem.g_ul, (m, k))
        g_dl = np.broadcast_to(problem.g_dl, (m, k))
        reciprocal = np.array_equal(problem.g_ul, problem.g_dl)
        pl = self.pathloss() if callable(self.pathloss) else self.pathloss
        pl = np.ones(k) if pl is None else np.asarray(pl, float)
        p_ul = np.broadcast_to(problem.p_ul, (k,))
        direct, b2 = self._rician()
        share = None if direct is None else [direct_share(vectors_of(e), direct)
                                             for e in self.estimate_now()]
        # each row's rejected devices first, in UL order (P g descending, ties by device)
        order = np.argsort(np.where(problem.rejected, -(p_ul * g_ul), np.inf), axis=1,
                           kind="stable")
        size = problem.rejected.sum(axis=1)
        ul_mask = np.zeros((m, k), dtype=bool)
        for r in np.unique(size[size > 0]).tolist():   # the rows of r rejected devices at once,
            same = np.flatnonzero(size == r)            # in slices of bounded memory
            step = max(1, _DRAWS_PER_SLICE // (self.samples * r))
            for rows in np.split(same, range(step, same.size, step)):
                o = order[rows, :r]
                rho_o = rho if np.ndim(rho) == 0 else np.asarray(rho, float)[o][:, None]
                var = (1.0 - rho_o ** 2 + rho_o ** 2 * self.s2) * b2
                mean = (rho_o, rho_o) if share is None else tuple(
                    np.abs(rho_o + (1.0 - rho_o) * c[o][:, None]) for c in share)
                n_ul = self._best_prefix(problem, p_ul[o], g_ul[rows[:, None], o],
                                         g_dl[rows[:, None], o], pl[o], reciprocal, rng, mean,
                                         var)
                ul_mask[rows[:, None], o] = np.arange(r) < n_ul[:, None]
        return solver.evaluate_assignment(problem, ul_mask)

    def _decide_shared(self, problem, rho, rng):
        """The robust prefix split of each outcome on a shared band (class docstring)."""
        masks, exists = problem.prefix_candidates()
        n, k = problem.shape
        pl = self.pathloss() if callable(self.pathloss) else self.pathloss
        pl = np.ones(k) if pl is None else np.asarray(pl, float)
        rho = np.broadcast_to(np.asarray(rho, float), (k,))[:, None]
        direct, b2 = self._rician()
        spread = np.sqrt(pl * (1.0 - rho[:, 0] ** 2 + rho[:, 0] ** 2 * self.s2) * b2)[:, None]
        est_ul, est_dl = problem.a_ul, problem.a_dl
        reciprocal = est_ul is est_dl or np.array_equal(est_ul, est_dl)
        tr, shape = problem.transmission, (self.samples,) + est_ul.shape
        once, again = problem.distinct_outcomes()   # SAA outcomes repeat rejected sets
        chosen = np.zeros((len(once), k), dtype=bool)
        for j, i in enumerate(once.tolist()):
            true_ul = self.true_vectors(est_ul, rho, spread, direct, shape, rng)
            true_dl = true_ul if reciprocal else self.true_vectors(est_dl, rho, spread, direct,
                                                                   shape, rng)
            score = np.full(k + 1, np.inf)
            for c in np.flatnonzero(exists[:, i]).tolist():
                mode, power, delay, _, _ = problem.row(i, masks[c, i])
                t = tr.realised_t_comm(true_ul, true_dl, est_ul, est_dl, mode, delay, power,
                                       problem.payload_bits,
                                       float(problem.bandwidth_per_device[i]), problem.n0)
                score[c] = np.quantile(t, self.quantile)
            chosen[j] = masks[first_min(score), i]
        return problem.evaluate_assignment(chosen[again])

    @staticmethod
    def true_gains(g, pl, mean, var, shape, rng):
        """Samples of the true gains through the beams on the estimates, given the estimated
        gains ``g`` = G ||h_hat||^2 and the path loss G (both (n, 1, r)): G |m |h_hat| + w|^2,
        w ~ CN(0, var); ``mean`` m: rho, or |rho + (1 - rho) c| in a Rician channel (class
        docstring); ``mean`` and ``var`` one number or (n, 1, r)."""
        w = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) * np.sqrt(var / 2)
        return pl * np.abs(mean * np.sqrt(g / pl) + w) ** 2

    @staticmethod
    def true_vectors(est, rho, spread, direct, shape, rng):
        """Samples ``shape`` of the true channel vectors given the estimated ones ``est``
        (K, M): rho a_hat + (1 - rho) d + spread w, w ~ CN(0, I), d the Rician direct paths
        (None: none); ``rho``, ``spread`` (K, 1)."""
        mean = rho * est if direct is None else rho * est + (1.0 - rho) * direct
        return mean + spread * _complex_normal(rng, shape)

    def _best_prefix(self, problem, p_ul, g_ul, g_dl, pl, reciprocal, rng, mean, var):
        """The number of UL devices of the best prefix split of each of n rejected sets of r
        devices, given in UL order: p_ul, g_ul, g_dl, pl are (n, r); ``mean`` (UL, DL) and
        ``var`` of ``true_gains``."""
        n, r = g_ul.shape
        n0b = problem.n0 * problem.bandwidth_hz / r
        shape = (n, self.samples, r)
        true_ul = self.true_gains(g_ul[:, None], pl[:, None], mean[0], var, shape, rng)
        true_dl = (true_ul if reciprocal
                   else self.true_gains(g_dl[:, None], pl[:, None], mean[1], var, shape, rng))
        snr_ul = p_ul[:, None] * true_ul / n0b                           # (n, N, r)
        inv = 1.0 / g_dl
        load = np.concatenate([np.cumsum(inv[:, ::-1], axis=1)[:, ::-1], np.zeros((n, 1))],
                              axis=1)[:, None]        # L_i: the DL set is devices i..r-1
        ratio = true_dl / g_dl[:, None]                                  # realised / planned gain
        suffix_min = np.concatenate(
            [np.minimum.accumulate(ratio[..., ::-1], axis=2)[..., ::-1],
             np.full((n, self.samples, 1), np.inf)], axis=2)
        prefix_min = np.concatenate(
            [np.full((n, self.samples, 1), np.inf), np.minimum.accumulate(snr_ul, axis=2)],
            axis=2)
        with np.errstate(divide="ignore", invalid="ignore"):
            dl_snr = np.where(load > 0, problem.p_dl * suffix_min / (load * n0b), np.inf)
        slowest = np.minimum(prefix_min, dl_snr)                         # (n, N, r + 1)
        score = np.quantile(slowest, 1.0 - self.quantile, axis=1)
        return np.argmax(score, axis=1)


def _complex_normal(rng, shape):
    """CN(0, 1) samples: the real parts, then the imaginary ones."""
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) / np.sqrt(2.0)
