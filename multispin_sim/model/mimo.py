"""Transmission schemes of a multi-antenna edge server (docs/components/antennas.md).

One scheme per link (``server.dl_scheme``, ``server.ul_scheme``), over the channel vectors
a_k = sqrt(G_k) h_k in C^M of ``model.antennas``. Every rejected device holds the subband
b = B / |R| of the paper; a link's devices pool their subbands, B_D = |D| b and B_U = |U| b.

- DL ``ofdma-mrt``: each DL device keeps its subband b, maximum-ratio transmission gives the
  gain g_k = ||a_k||^2; the server's P_dl is split to equalise delays (the paper's closed form).
- DL ``mu-mimo-zf``: the DL set shares B_D, zero-forcing precoding with unit-norm columns; at
  most M streams at once, so |D| > M devices are served in ceil(|D| / M) groups one after
  another (devices by ||a_k||^2 descending, dealt round-robin into the groups), each group with
  all of P_dl over B_D, delays equalised within a group (``server.zf_groups: best`` also tries
  2, 4, ... times as many groups, down to one stream each, and keeps the one that ends first);
  stream k of group G has the gain
  1 / [(A_G^H A_G)^-1]_kk (A_G: M x |G|, the group's vectors), so it depends on the group.
  A device's delay is the end of its group's turn.
- UL ``ofdma-mrc``: each UL device on its subband b at full power, maximum-ratio combining:
  gain ||a_k||^2 (the paper's UL).
- UL ``mu-mimo-mmse``: the UL set shares B_U at once, every device at full power, linear MMSE
  combining: SINR_k = 1 / [(I + A^H A P / (N0 B_U))^-1]_kk - 1 (P = diag p).

A scheme's "effective gain" gamma_k is the one with SNR (or SINR) = p_k gamma_k / (N0 B_link),
B_link the band the device's stream occupies (b for the orthogonal schemes, B_D or B_U for the
shared ones). With M = 1 the orthogonal schemes are the paper's model; the shared ones are when
their link has at most one device.

``Transmission`` is the component (both links, M); ``ArrayProblem`` is the reactive problem of
one channel state whose assignments it evaluates (``model.reactive`` hands it its problems).
"""
import numpy as np

from .antennas import matched_gain, vectors_of
from .mimo_batch import (mmse_power_descent, mmse_sinr, norms2, shared_band_delays,
                         zf_gains_stack)
from .mimo_problem import ArrayProblem
from .rates import shannon_rate
from .reactive import (DL, UL, ReactiveProblem, dl_common_delay, dl_power_for_delay,
                       ul_full_power_delay)
from .registry import Registry
from .tcomm import PolicyKernel

DL_SCHEMES = Registry("DL transmission scheme")
UL_SCHEMES = Registry("UL transmission scheme")


class DlScheme:
    """``serve(a, p_dl, bits, b, n0) -> (delays, powers, gains)`` for the DL set's vectors a
    (n, M), n >= 1, each device's subband b; ``shared``: the set shares one band.
    ``groups``: how a shared scheme forms its groups (``server.zf_groups``)."""

    shared = False

    def __init__(self, groups="fewest"):
        self.grouping = groups

    def on_air(self, delays):
        """How long each stream of a DL set was sent, given the delays ``serve`` returned: the
        whole delay (every stream from the start)."""
        return np.asarray(delays, dtype=float)


def _sinr(leak, noise):
    """(SINRs, interference-to-noise ratios) from leak[..., k, j] = p_j |<filter of k, a_j>|^2
    (the signal on the diagonal) and each stream's noise power: the interference is the other
    streams' leakage."""
    signal = np.diagonal(leak, axis1=-2, axis2=-1)
    intra = leak.sum(axis=-1) - signal
    return signal / (noise + intra), intra / noise


def zf_precoder(a):
    """Unit-norm zero-forcing columns (M, n) for vectors a (n, M), n <= M: A (A^H A)^-1 with
    A = a^T, so a_k^H w_j = 0 for j != k and |a_k^H w_k|^2 = 1 / [(A^H A)^-1]_kk. Dependent
    vectors (a precoder that follows a block's channel in the line of sight) cannot be zero
    forced: the pseudo-inverse's columns, which leak into each other."""
    try:
        w = a.T @ np.linalg.inv(a.conj() @ a.T)
    except np.linalg.LinAlgError:
        w = np.linalg.pinv(a.conj())
    return w / np.sqrt(norms2(w.T))


@DL_SCHEMES.register("ofdma-mrt")
class OfdmaMrt(DlScheme):
    """Orthogonal subbands, maximum-ratio transmission: the paper's DL with g = ||a||^2."""

    def serve(self, a, p_dl, bits, b, n0):
        g = norms2(a)
        with np.errstate(divide="ignore"):
            tau = float(dl_common_delay(bits, b, p_dl, np.sum(1.0 / g), n0))
        return np.full(len(g), tau), dl_power_for_delay(tau, bits, b, g, n0), g


@DL_SCHEMES.register("mu-mimo-zf")
class MuMimoZf(DlScheme):
    """The DL set on one band B_D = |D| b, zero-forcing, groups of at most M streams in turn."""

    shared = True

    def on_air(self, delays):
        """Its group's turn: a group's streams end together, after the earlier groups' turns."""
        delays = np.asarray(delays, dtype=float)
        ends = np.unique(delays)
        return delays - np.concatenate([[0.0], ends[:-1]])[np.searchsorted(ends, delays)]

    def counts(self, n, m):
        """The numbers of groups tried for n streams: the fewest, ceil(n / M) ('fewest'), or
        also twice, four times, ... as many up to one stream per group ('best': the one whose
        last group ends first; ties keep fewer groups)."""
        fewest = -(-n // m)
        if self.grouping == "fewest":
            return [fewest]
        out, c = [], fewest
        while c < n:
            out.append(c)
            c *= 2
        return out + [n]

    def groups(self, norms, count):
        """Index arrays of ``count`` groups, served in order: the streams by ||a||^2
        (``norms``) descending, dealt round-robin."""
        if count == 1:
            return [np.arange(len(norms))]
        order = np.argsort(-norms, kind="stable")
        return [np.sort(g) if len(g) > 1 else g for g in (order[j::count] for j in range(count))]

    def serve(self, a, p_dl, bits, b, n0):
        norms = norms2(a)
        best = None
        for count in self.counts(*a.shape):
            got = self._serve(a, norms, count, p_dl, bits, b, n0)
            if best is None or got[0].max() < best[0].max():
                best = got
        return best

    def _serve(self, a, norms, count, p_dl, bits, b, n0):
        n = len(a)
        band = b * n
        groups = self.groups(norms, count)
        gains = np.zeros(n)
        by_size = {}
        for group in groups:
            by_size.setdefault(len(group), []).append(group)
        for size, same in by_size.items():
            idx = np.concatenate(same)
            if size == 1:            # one stream: ZF is MRT, 1 / [(a^H a)^-1] = ||a||^2
                gains[idx] = norms[idx]
                continue
            gains[idx] = zf_gains_stack(a[np.stack(same)]).ravel()   # (groups, size, M)
        with np.errstate(divide="ignore"):
            inv_sum = np.array([np.sum(1.0 / gains[group]) for group in groups])
            tau = dl_common_delay(bits, band, p_dl, inv_sum, n0)   # one per group, in turn
        ends = np.cumsum(tau)
        delays, tau_of = np.zeros(n), np.zeros(n)
        for j, group in enumerate(groups):
            delays[group] = ends[j]
            tau_of[group] = tau[j]
        return delays, dl_power_for_delay(tau_of, bits, band, gains, n0), gains

    def realise(self, a, est, planned, powers, bits, b, n0, parts=False):
        """(delays, on-air times, SINRs) of a DL set served as planned on the estimated vectors
        ``est`` ((n, M); ``planned``, ``powers``: what ``serve`` gave for them) over the true
        vectors a: each group (the streams the plan ends together) is precoded to zero-force
        the estimates, so a stream meets its group mates' leakage p_j |a_k^H w_j|^2 as
        interference; groups take their turns in order, each until its slowest stream ends.
        With est = a, the plan; a group planned never to end (its vectors dependent) is never
        served. ``a`` may be a stack (..., n, M) of true channels (samples): the results are
        then (..., n). ``parts``: also each stream's leakage over its noise (a fourth array)."""
        band = b * a.shape[-2]
        delays, on_air, sinr, inr = (np.zeros(a.shape[:-1]) for _ in range(4))
        start = 0.0
        for end in np.unique(planned):
            g = np.flatnonzero(planned == end)
            if end == np.inf:   # a singular group (dependent vectors): never served
                delays[..., g] = on_air[..., g] = np.inf
                continue
            leak = np.abs(a[..., g, :].conj() @ zf_precoder(est[g])) ** 2 * powers[g]
            sinr[..., g], inr[..., g] = _sinr(leak, n0 * band)
            on_air[..., g] = shared_band_delays(bits, band, sinr[..., g])
            delays[..., g] = start + on_air[..., g]
            start = delays[..., g].max(axis=-1, keepdims=True)
        return (delays, on_air, sinr, inr) if parts else (delays, on_air, sinr)


class UlScheme:
    """``serve(a, p, bits, b, n0) -> (delays, gains, powers)`` for the UL set's vectors a
    (n, M) with power budgets p (n,), each device's subband b. ``power``: 'full' (every
    device at its budget) or 'descent' (``server.ul_power``; shared schemes only)."""

    shared = False

    def __init__(self, power="full"):
        self.power = power


@UL_SCHEMES.register("ofdma-mrc")
class OfdmaMrc(UlScheme):
    """Orthogonal subbands, maximum-ratio combining: the paper's UL with g = ||a||^2 (full
    power: without interference a device's delay only falls with its power)."""

    def serve(self, a, p, bits, b, n0):
        g = norms2(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            return ul_full_power_delay(bits, b, p, g, n0), g, np.asarray(p, dtype=float)


@UL_SCHEMES.register("mu-mimo-mmse")
class MuMimoMmse(UlScheme):
    """The UL set on one band B_U = |U| b at once, linear MMSE combining; full power, or
    (``power='descent'``) the powers of ``mmse_power_descent``."""

    shared = True

    def serve(self, a, p, bits, b, n0):
        band = b * len(a)
        noise = n0 * band
        p = np.asarray(p, dtype=float)
        if self.power == "descent":
            sinr, p = mmse_power_descent(a[None], p[None], np.array([noise]), bits,
                                         np.array([band]))
            sinr, p = sinr[0], p[0]
        else:
            sinr = mmse_sinr(a, p, noise)
        with np.errstate(divide="ignore", invalid="ignore"):
            delays = shared_band_delays(bits, band, sinr)
            gains = sinr * noise / p
        return delays, gains, p

    def realise(self, a, est, planned, powers, bits, b, n0, parts=False):
        """(delays, on-air times, SINRs) of a UL set sent at ``powers`` (as planned on the
        estimated vectors ``est``) over the true vectors a, combined by the MMSE filters of the
        estimates, w_k = (I + sum_j p_j est_j est_j^H / noise)^-1 est_k: a stream meets the
        others' leakage p_j |w_k^H a_j|^2 and the noise noise ||w_k||^2. With est = a, the
        MMSE SINRs of ``serve``. ``a`` may be a stack (..., n, M) of true channels: the results
        are then (..., n). ``parts``: also each stream's leakage over its noise."""
        band = b * a.shape[-2]
        noise = n0 * band
        cov = np.eye(a.shape[-1]) + (est.T * (powers / noise)) @ est.conj()
        w = np.linalg.solve(cov, est.T)                       # (M, n): column k is w_k
        leak = np.abs(w.conj().T @ np.swapaxes(a, -1, -2)) ** 2 * powers
        sinr, inr = _sinr(leak, noise * norms2(w.T))
        delays = shared_band_delays(bits, band, sinr)
        return (delays, delays, sinr, inr) if parts else (delays, delays, sinr)


class Transmission:
    """The antenna component: M antennas and one scheme per link. ``multi_user``: some link
    shares its band, so the reactive problem needs the channel vectors (``problem``); otherwise
    the array gains ||a_k||^2 are all the paper's formulas need."""

    def __init__(self, antennas=1, dl_scheme="ofdma-mrt", ul_scheme="ofdma-mrc",
                 zf_groups="fewest", ul_power="full"):
        self.m = int(antennas)
        self.dl = DL_SCHEMES.lookup(dl_scheme)(groups=zf_groups)
        self.ul = UL_SCHEMES.lookup(ul_scheme)(power=ul_power)
        self.multi_user = self.dl.shared or self.ul.shared
        self.compiled_ran = False   # a decision evaluated on the compiled twin (run.json)

    @classmethod
    def from_scenario(cls, scenario):
        s = scenario.server
        return cls(s.antennas, s.dl_scheme, s.ul_scheme, s.zf_groups, s.ul_power)

    def vectors(self, gains):
        """The channel vectors (K, M) of ``gains`` (with M = 1, sqrt(g) is one: phases do not
        change a single-antenna scheme's numbers)."""
        a = vectors_of(gains)
        if a is not None:
            return a
        if self.m == 1:
            return np.sqrt(np.asarray(gains, dtype=float))[:, None].astype(complex)
        raise ValueError("a multi-user scheme with several antennas needs the channel vectors "
                         "(the gains the channel returns carry them: model.antennas.ArrayGains)")

    def problem(self, system, rejected, g_ul, g_dl):
        """The reactive problem of one channel state (``System.reactive_problem``)."""
        if not self.multi_user:
            return ReactiveProblem(rejected, g_ul, g_dl, system.p_ul_w, system.p_dl_w,
                                   system.payload_bits, system.bandwidth_hz, system.n0)
        if np.ndim(g_ul) != 1 or np.ndim(g_dl) != 1:
            raise ValueError("multi-user schemes evaluate one channel state at a time")
        return ArrayProblem(rejected, g_ul, g_dl, system.p_ul_w, system.p_dl_w,
                            system.payload_bits, system.bandwidth_hz, system.n0,
                            a_ul=self.vectors(g_ul), a_dl=self.vectors(g_dl), transmission=self,
                            memo=getattr(g_ul, "memo", None))

    def realise(self, a_ul, a_dl, est_ul, est_dl, mode, planned, powers, bits, b, n0,
                parts=False):
        """(delay, on-air time, SINR), each (K,), of the streams of ``mode`` on a shared link,
        planned on the estimated vectors (``planned``, ``powers``: the decision's) and met by
        the true ones (the schemes' ``realise``); NaN elsewhere (an orthogonal link's stream is
        alone: ``model.antennas.matched_gain``). The true vectors may be stacks (..., K, M) of
        samples: the results are then (3, ..., K). ``parts``: a fourth row, each stream's
        leakage from the streams it shares its band with over its noise."""
        out = np.full((4 if parts else 3,) + a_ul.shape[:-1], np.nan)
        for code, scheme, a, est in ((UL, self.ul, a_ul, est_ul), (DL, self.dl, a_dl, est_dl)):
            idx = np.flatnonzero(mode == code)
            if scheme.shared and idx.size:
                out[..., idx] = scheme.realise(a[..., idx, :], est[idx], planned[idx],
                                               powers[idx], bits, b, n0, parts)
        return out

    def realised_t_comm(self, a_ul, a_dl, est_ul, est_dl, mode, planned, powers, bits, b, n0):
        """T_comm of a decision (``mode``, ``planned`` delays, ``powers``, (K,)) planned on the
        estimated vectors and met by true vectors (..., K, M) (a stack of samples: (...,)): a
        shared link's streams as ``realise`` gives them, an orthogonal link's each alone on its
        subband b through the maximum-ratio beam of its estimate (``matched_gain``)."""
        delays = self.realise(a_ul, a_dl, est_ul, est_dl, mode, planned, powers, bits, b,
                              n0)[0]
        for code, scheme, a, est in ((UL, self.ul, a_ul, est_ul), (DL, self.dl, a_dl, est_dl)):
            idx = np.flatnonzero(mode == code)
            if not scheme.shared and idx.size:
                gain = matched_gain(est[idx], a[..., idx, :])
                rate = shannon_rate(b, powers[idx], gain, n0)
                with np.errstate(divide="ignore"):
                    delays[..., idx] = bits / rate
        return np.max(np.nan_to_num(delays, nan=0.0), axis=-1, initial=0.0)

    def kernel(self, system, g_ul, g_dl, policy, uniforms=None, seed=0, coin=None):
        """The draft objective's T_comm kernel of ``policy`` on this channel state (``coin``:
        fixed UL coins instead of the policy, the random split under exact enumeration)."""
        return SchemeKernel(system, g_ul, g_dl, policy, uniforms, seed, coin=coin)

    def links(self, a_ul, a_dl, ul_idx, dl_idx, p_ul, p_dl, bits, b, n0):
        """(delays, powers, gains, bands) of one assignment, each (K,) (0 where idle)."""
        k = len(a_ul)
        delay, power, gain, band = np.zeros(k), np.zeros(k), np.zeros(k), np.zeros(k)
        if len(dl_idx):
            d, p, g = self.dl.serve(a_dl[dl_idx], p_dl, bits, b, n0)
            delay[dl_idx], power[dl_idx], gain[dl_idx] = d, p, g
            band[dl_idx] = b * len(dl_idx) if self.dl.shared else b
        if len(ul_idx):
            p = np.asarray(p_ul)[ul_idx]
            d, g, p = self.ul.serve(a_ul[ul_idx], p, bits, b, n0)
            delay[ul_idx], power[ul_idx], gain[ul_idx] = d, p, g
            band[ul_idx] = b * len(ul_idx) if self.ul.shared else b
        return delay, power, gain, band


def effective_gains(transmission, g_ul, g_dl, mode, p_ul, p_dl, bits, b, n0, sent=None):
    """(effective gain, SNR or SINR) per device (K,) of the transmissions in ``mode`` (UL/DL per
    device, 0 idle) over the channel state ``g_ul, g_dl``: what the streams of that round saw.

    ``sent``: the powers (K,) the streams went out at. Orthogonal schemes need nothing more: a
    stream's gain is its device's array gain and its SNR p g / (N0 b). Where a link shares its
    band, a stream's gain depends on the other streams, and the sets are solved again."""
    mode = np.asarray(mode)
    if sent is not None and not transmission.multi_user:
        gain = np.where(mode == UL, g_ul, np.where(mode == DL, g_dl, 0.0))
        return gain, np.where(mode > 0, sent * gain / (n0 * b), 0.0)
    a_ul, a_dl = transmission.vectors(g_ul), transmission.vectors(g_dl)
    _, power, gain, band = transmission.links(
        a_ul, a_dl, np.flatnonzero(mode == UL), np.flatnonzero(mode == DL),
        np.broadcast_to(np.asarray(p_ul, dtype=float), (len(mode),)), p_dl, bits, b, n0)
    with np.errstate(divide="ignore", invalid="ignore"):
        snr = np.where(band > 0, power * gain / (n0 * band), 0.0)
    return gain, snr


class SchemeKernel(PolicyKernel):
    """``PolicyKernel`` on one channel state whose gains keep their channel vectors (the draft
    objective sees the schemes the engine uses), or on a stack of channel vectors (samples, K,
    M), one state per sample."""

    def __init__(self, system, g_ul, g_dl, policy, uniforms=None, seed=0, coin=None):
        super().__init__(system, g_ul, g_dl, policy, uniforms, seed, coin=coin)
        if self.states is not None:
            return
        if np.ndim(g_ul) != 1 or np.ndim(g_dl) != 1:
            raise ValueError("multi-user schemes evaluate one channel state (or a stack of "
                             "channel vectors) at a time")
        self.g_ul, self.g_dl = g_ul, g_dl
