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
from dataclasses import dataclass
import math
from itertools import product

import numpy as np

from .antennas import vectors_of
from .reactive import (DL, UL, ReactiveDecision, ReactiveProblem, dl_common_delay,
                       dl_power_for_delay, ul_full_power_delay)
from .registry import Registry
from .tcomm import PolicyKernel

DL_SCHEMES = Registry("DL transmission scheme")
UL_SCHEMES = Registry("UL transmission scheme")

_LN2 = math.log(2.0)


def _norms2(a):
    return np.einsum("km,km->k", a, a.conj()).real


def zf_gains(a):
    """ZF stream gains 1 / [(A^H A)^-1]_kk of vectors a (n, M), n <= M (0 for a singular set)."""
    gram = a.conj() @ a.T
    try:
        inv = np.linalg.inv(gram)
    except np.linalg.LinAlgError:
        return np.zeros(len(a))
    d = np.real(np.diagonal(inv))
    with np.errstate(divide="ignore"):
        return np.where(d > 0, 1.0 / d, 0.0)


def mmse_sinr(a, p, noise_w):
    """Linear MMSE SINR of n simultaneous streams from vectors a (n, M) at powers p (n,), noise
    power ``noise_w`` per antenna: 1 / [(I + P^1/2 A^H A P^1/2 / noise)^-1]_kk - 1."""
    n = len(a)
    s = np.sqrt(np.asarray(p, dtype=float) / noise_w)
    q = (a.conj() @ a.T) * (s[:, None] * s[None, :])
    inv = np.linalg.inv(np.eye(n) + q)
    return np.maximum(1.0 / np.real(np.diagonal(inv)) - 1.0, 0.0)


class DlScheme:
    """``serve(a, p_dl, bits, b, n0) -> (delays, powers, gains)`` for the DL set's vectors a
    (n, M), n >= 1, each device's subband b; ``shared``: the set shares one band.
    ``groups``: how a shared scheme forms its groups (``server.zf_groups``)."""

    shared = False

    def __init__(self, groups="fewest"):
        self.grouping = groups


@DL_SCHEMES.register("ofdma-mrt")
class OfdmaMrt(DlScheme):
    """Orthogonal subbands, maximum-ratio transmission: the paper's DL with g = ||a||^2."""

    def serve(self, a, p_dl, bits, b, n0):
        g = _norms2(a)
        with np.errstate(divide="ignore"):
            tau = float(dl_common_delay(bits, b, p_dl, np.sum(1.0 / g), n0))
        return np.full(len(g), tau), dl_power_for_delay(tau, bits, b, g, n0), g


@DL_SCHEMES.register("mu-mimo-zf")
class MuMimoZf(DlScheme):
    """The DL set on one band B_D = |D| b, zero-forcing, groups of at most M streams in turn."""

    shared = True

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

    def groups(self, a, norms=None, count=None):
        """Index arrays of the groups, served in order: ||a||^2 descending, dealt round-robin."""
        n, m = a.shape
        count = -(-n // m) if count is None else count
        if count == 1:
            return [np.arange(n)]
        order = np.argsort(-(_norms2(a) if norms is None else norms), kind="stable")
        return [np.sort(g) if len(g) > 1 else g for g in (order[j::count] for j in range(count))]

    def serve(self, a, p_dl, bits, b, n0):
        norms = _norms2(a)
        best = None
        for count in self.counts(*a.shape):
            got = self._serve(a, norms, count, p_dl, bits, b, n0)
            if best is None or got[0].max() < best[0].max():
                best = got
        return best

    def _serve(self, a, norms, count, p_dl, bits, b, n0):
        n = len(a)
        band = b * n
        groups = self.groups(a, norms, count)
        gains = np.zeros(n)
        by_size = {}
        for group in groups:
            by_size.setdefault(len(group), []).append(group)
        for size, same in by_size.items():
            idx = np.concatenate(same)
            if size == 1:            # one stream: ZF is MRT, 1 / [(a^H a)^-1] = ||a||^2
                gains[idx] = norms[idx]
                continue
            stack = a[np.stack(same)]                      # (groups, size, M)
            try:
                inv = np.linalg.inv(stack.conj() @ stack.transpose(0, 2, 1))
                d = np.real(np.diagonal(inv, axis1=1, axis2=2)).ravel()
                with np.errstate(divide="ignore"):
                    gains[idx] = np.where(d > 0, 1.0 / d, 0.0)
            except np.linalg.LinAlgError:   # some group singular: one at a time
                for group in same:
                    gains[group] = zf_gains(a[group])
        with np.errstate(divide="ignore"):
            inv_sum = np.array([np.sum(1.0 / gains[group]) for group in groups])
            tau = dl_common_delay(bits, band, p_dl, inv_sum, n0)   # one per group, in turn
        ends = np.cumsum(tau)
        delays, tau_of = np.zeros(n), np.zeros(n)
        for j, group in enumerate(groups):
            delays[group] = ends[j]
            tau_of[group] = tau[j]
        return delays, dl_power_for_delay(tau_of, bits, band, gains, n0), gains


class UlScheme:
    """``serve(a, p, bits, b, n0) -> (delays, gains)`` for the UL set's vectors a (n, M) at
    full powers p (n,), each device's subband b."""

    shared = False


@UL_SCHEMES.register("ofdma-mrc")
class OfdmaMrc(UlScheme):
    """Orthogonal subbands, maximum-ratio combining: the paper's UL with g = ||a||^2."""

    def serve(self, a, p, bits, b, n0):
        g = _norms2(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            return ul_full_power_delay(bits, b, p, g, n0), g


@UL_SCHEMES.register("mu-mimo-mmse")
class MuMimoMmse(UlScheme):
    """The UL set on one band B_U = |U| b at once, full power, linear MMSE combining."""

    shared = True

    def serve(self, a, p, bits, b, n0):
        band = b * len(a)
        noise = n0 * band
        sinr = mmse_sinr(a, p, noise)
        with np.errstate(divide="ignore"):
            delays = bits / (band * (np.log1p(sinr) / _LN2))
            gains = sinr * noise / np.asarray(p, dtype=float)
        return delays, gains


class Transmission:
    """The antenna component: M antennas and one scheme per link.

    ``multi_user``: some link shares its band (the reactive problem then needs the channel
    vectors: ``problem``); otherwise the array gains ||a_k||^2 are all the paper's formulas
    need, and the reactive problem is the paper's.
    """

    def __init__(self, antennas=1, dl_scheme="ofdma-mrt", ul_scheme="ofdma-mrc",
                 zf_groups="fewest"):
        self.m = int(antennas)
        self.dl = DL_SCHEMES.lookup(dl_scheme)(groups=zf_groups)
        self.ul = UL_SCHEMES.lookup(ul_scheme)()
        self.multi_user = self.dl.shared or self.ul.shared

    @classmethod
    def from_scenario(cls, scenario):
        s = scenario.server
        return cls(s.antennas, s.dl_scheme, s.ul_scheme, s.zf_groups)

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

    def kernel(self, system, g_ul, g_dl, policy, uniforms=None, seed=0):
        """The draft objective's T_comm kernel of ``policy`` on this channel state."""
        return SchemeKernel(system, g_ul, g_dl, policy, uniforms, seed)

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
            d, g = self.ul.serve(a_ul[ul_idx], p, bits, b, n0)
            delay[ul_idx], power[ul_idx], gain[ul_idx] = d, p, g
            band[ul_idx] = b * len(ul_idx) if self.ul.shared else b
        return delay, power, gain, band


@dataclass(frozen=True)
class ArrayProblem(ReactiveProblem):
    """The reactive problem(s) of one channel state under a multi-user scheme: ``a_ul``,
    ``a_dl`` the channel vectors (K, M); ``g_ul``, ``g_dl`` their array gains ||a||^2."""

    a_ul: np.ndarray = None
    a_dl: np.ndarray = None
    transmission: Transmission = None
    memo: dict = None   # assignment -> evaluation, on this channel state (ArrayGains.memo)

    multi_user = True

    def row(self, i, ul):
        """(modes, powers, delays, effective gains, t_comm) of outcome i with UL set ``ul``
        (bool (K,), restricted to the rejected devices), the others rejected on DL."""
        rej = self.rejected[i]
        ul = ul & rej
        dl = rej & ~ul
        memo = self.memo
        if memo is not None:
            key = (ul.tobytes(), dl.tobytes(), id(self.a_dl), self.p_ul.tobytes(), self.p_dl,
                   self.payload_bits, self.bandwidth_hz, self.n0)
            got = memo.get(key)
            if got is not None:
                return got
        b = float(self.bandwidth_per_device[i])
        delay, power, gain, _ = self.transmission.links(
            self.a_ul, self.a_dl, np.flatnonzero(ul), np.flatnonzero(dl), self.p_ul, self.p_dl,
            self.payload_bits, b, self.n0)
        mode = np.zeros(len(rej), dtype=np.int8)
        mode[ul], mode[dl] = UL, DL
        out = mode, power, delay, gain, float(delay.max(initial=0.0))
        if memo is not None:
            for x in out[:4]:
                x.flags.writeable = False   # shared by every decision on this state
            memo[key] = out
        return out

    def t_comm(self, i, ul):
        return self.row(i, ul)[4]

    def _decision(self, masks):
        rows = [self.row(i, masks[i]) for i in range(self.shape[0])]
        mode, power, delay, gain, t = (np.array(x) for x in zip(*rows))
        bandwidth = np.where(self.rejected.any(axis=1), self.bandwidth_per_device, 0.0)
        d = ReactiveDecision(mode.astype(np.int8), power, delay, bandwidth, t)
        d.gain = gain  # the effective gain of every transmitting device's stream
        return d

    def evaluate_assignment(self, ul_mask):
        masks = np.broadcast_to(np.asarray(ul_mask, dtype=bool), self.shape)
        return self._decision(masks)

    def ul_order(self, i):
        """The rejected devices of outcome i in the paper's UL order (P_k ||a_k||^2 desc)."""
        idx = np.flatnonzero(self.rejected[i])
        key = (self.p_ul * self.g_ul)[idx]
        return idx[np.argsort(-key, kind="stable")]

    def prefix_mask(self, i):
        """The best prefix split of outcome i (UL prefix in the paper's order), each prefix
        evaluated under the scheme; the first minimiser."""
        order = self.ul_order(i)
        k = self.shape[1]
        best, best_t = np.zeros(k, dtype=bool), math.inf
        for n in range(len(order) + 1):
            ul = np.zeros(k, dtype=bool)
            ul[order[:n]] = True
            t = self.t_comm(i, ul)
            if t < best_t:
                best, best_t = ul, t
        return best, best_t

    def prefix_split(self):
        """The paper's prefix split applied as is (policy 'optimal' under these schemes)."""
        return self._decision([self.prefix_mask(i)[0] for i in range(self.shape[0])])

    def exhaustive_split(self):
        """All 2^|R| assignments; ties keep the first (binary order, fewest UL first)."""
        masks = []
        k = self.shape[1]
        for i in range(self.shape[0]):
            idx = np.flatnonzero(self.rejected[i])
            best, best_t = np.zeros(k, dtype=bool), math.inf
            for bits in product((False, True), repeat=idx.size):
                ul = np.zeros(k, dtype=bool)
                ul[idx] = bits
                t = self.t_comm(i, ul)
                if t < best_t:
                    best, best_t = ul, t
            masks.append(best)
        return self._decision(masks)

    def local_search(self, max_passes=None):
        """From the best prefix split: the best single-device mode change, else the best
        exchange of one UL and one DL device, while T_comm drops (at most ``max_passes``
        improvements, default |R|)."""
        masks = []
        for i in range(self.shape[0]):
            ul, t = self.prefix_mask(i)
            idx = np.flatnonzero(self.rejected[i])
            for _ in range(len(idx) if max_passes is None else max_passes):
                t_new, trial = self._best_move(i, ul, idx, swaps=False)
                if not t_new < t * (1.0 - 1e-12):
                    t_new, trial = self._best_move(i, ul, idx, swaps=True)
                    if not t_new < t * (1.0 - 1e-12):
                        break
                ul, t = trial, t_new
            masks.append(ul)
        return self._decision(masks)

    def _best_move(self, i, ul, idx, swaps):
        """(T_comm, UL mask) of the best single change (or, with ``swaps``, UL/DL exchange)."""
        best = (math.inf, None)
        if swaps:
            on, off = idx[ul[idx]], idx[~ul[idx]]
            moves = [(u, d) for u in on for d in off]
        else:
            moves = [(j,) for j in idx]
        for move in moves:
            trial = ul.copy()
            trial[list(move)] = ~trial[list(move)]
            t = self.t_comm(i, trial)
            if t < best[0]:
                best = (t, trial)
        return best


def effective_gains(transmission, g_ul, g_dl, mode, p_ul, p_dl, bits, b, n0):
    """(effective gain, SNR or SINR) per device (K,) of the transmissions in ``mode`` (UL/DL per
    device, 0 idle) over the channel state ``g_ul, g_dl``: what the streams of that round saw."""
    mode = np.asarray(mode)
    a_ul, a_dl = transmission.vectors(g_ul), transmission.vectors(g_dl)
    _, power, gain, band = transmission.links(
        a_ul, a_dl, np.flatnonzero(mode == UL), np.flatnonzero(mode == DL),
        np.broadcast_to(np.asarray(p_ul, dtype=float), (len(mode),)), p_dl, bits, b, n0)
    with np.errstate(divide="ignore", invalid="ignore"):
        snr = np.where(band > 0, power * gain / (n0 * band), 0.0)
    return gain, snr


class SchemeKernel(PolicyKernel):
    """``PolicyKernel`` on one channel state whose gains keep their channel vectors (the draft
    objective sees the schemes the engine uses)."""

    def __init__(self, system, g_ul, g_dl, policy, uniforms=None, seed=0):
        super().__init__(system, g_ul, g_dl, policy, uniforms, seed)
        if np.ndim(g_ul) != 1 or np.ndim(g_dl) != 1:
            raise ValueError("multi-user schemes evaluate one channel state at a time")
        self.g_ul, self.g_dl = g_ul, g_dl
