"""A cell's corrections when a link shares its band (several cells with ``server.dl_scheme:
mu-mimo-zf`` or ``server.ul_scheme: mu-mimo-mmse``; docs/components/cells.md).

The decision's corrections sit in the cell's band side by side, the UL link's subbands first
(|U| b), then the DL link's (|D| b); a shared link's streams all occupy its part, an orthogonal
link's each its own b in it (by device). A shared stream's rate is

    B_link log2(1 + S / (N0 B_link + F + I)),

S its signal and F the leakage of the streams it shares the band with, both after its unit-norm
filter (the ZF precoder's column; the MMSE combiner normalised), from the set's filters built on
the decision's view of the channel (``model.mimo``, ``realise(..., parts=True)``; that view is
the estimate scaled by the interference it saw, so an MMSE combiner treats the interference
seen as white noise), and I the other cells' interference after the same filter: a unit-norm
filter independent of the interfering link's vector leaves it one Exp(1) draw per interfering
pair, as for an orthogonal stream (``engine.interference``). A ZF group starts when the
previous group's last stream is delivered. On a grid of fading blocks S and F follow each
block's filters, built on its true vectors (on the decision's view in a group's first block),
every stream of the set counted until the set's last ends, as on one cell
(``engine.antennas``).
"""
import numpy as np

from ..model.antennas import ArrayGains, vectors_of
from ..model.reactive import DL, UL


def seen_through(gains, factor):
    """The gains g f of a decision that sees interference as noise, N0 -> N0 / f, with their
    channel vectors scaled by sqrt(f) (f: one number or (K,)), what a shared band plans on."""
    g = np.asarray(gains, dtype=float)
    f = np.broadcast_to(np.asarray(factor, dtype=float), g.shape)
    return ArrayGains.of(vectors_of(gains) * np.sqrt(f)[:, None], g * f)


class SharedBandPlan:
    """Where each stream of one decision sits and how the field rates it. ``band`` (K, 2)
    [f0, f1); ``shared`` (K,) whether its link shares the band; ``turn`` (K,) its ZF group's
    place in the order (0 elsewhere); ``never``: a singular ZF group's streams (never served);
    ``left``, ``turn_ends``: the streams of each DL group still in flight, the SimPy events
    of the groups' ends (made at the first stream, ``events``). A shared stream's signal gain
    S / p, leakage F (W) and SINR S / (N0 B_link + F) come from ``parts``: its set's filters
    met by the true vectors of a fading block."""

    def __init__(self, transmission, seen, mode, planned, power, bandwidth, bits, n0):
        self.transmission, self.seen = transmission, seen
        self.mode = mode = np.asarray(mode)
        self.planned = planned = np.asarray(planned, dtype=float)
        self.power = np.asarray(power, dtype=float)
        self.bandwidth, self.bits, self.n0 = bandwidth, bits, n0
        k = len(mode)
        self.band = np.zeros((k, 2))
        self.shared = np.zeros(k, dtype=bool)
        self.turn = np.zeros(k, dtype=np.int64)
        self.never = np.zeros(k, dtype=bool)
        lo = 0.0
        for code, scheme in ((UL, transmission.ul), (DL, transmission.dl)):
            idx = np.flatnonzero(mode == code)
            width = bandwidth * len(idx)
            if scheme.shared:
                self.band[idx] = lo, lo + width
                self.shared[idx] = True
                _, self.turn[idx] = np.unique(planned[idx], return_inverse=True)
                self.never[idx] = np.isinf(planned[idx])
            else:
                self.band[idx, 0] = lo + bandwidth * np.arange(len(idx))
                self.band[idx, 1] = self.band[idx, 0] + bandwidth
            lo += width
        dl = mode == DL
        self.left = np.bincount(self.turn[dl], minlength=1) if dl.any() else np.zeros(1, int)
        self.turn_ends = None
        self._parts = {}

    def parts(self, code, key, truth, filters):
        """(gain S / p, leakage F, SINR), each (K,), of the streams of link ``code`` with the
        filters built on ``filters`` (K, M) met by ``truth`` (K, M); worked out once per
        ``key`` (the fading block, or the decision's)."""
        got = self._parts.get((code, key))
        if got is None:
            idx = np.flatnonzero(self.mode == code)
            scheme = self.transmission.dl if code == DL else self.transmission.ul
            sinr, inr = scheme.realise(truth[idx], filters[idx], self.planned[idx],
                                       self.power[idx], self.bits, self.bandwidth, self.n0,
                                       parts=True)[2:]
            noise = self.n0 * self.bandwidth * len(idx)
            got = (np.full(len(self.mode), np.nan), np.zeros(len(self.mode)),
                   np.full(len(self.mode), np.nan))
            got[1][idx] = inr * noise
            with np.errstate(invalid="ignore"):
                got[0][idx] = sinr * (noise + got[1][idx]) / self.power[idx]
            got[2][idx] = sinr
            self._parts[(code, key)] = got
        return got

    def events(self, env):
        """The events of the DL groups' ends (made once, at the first stream)."""
        if self.turn_ends is None:
            self.turn_ends = [env.event() for _ in range(len(self.left))]
        return self.turn_ends

    def delivered(self, env, device, mode):
        """A stream was delivered: its ZF group ends with its last stream."""
        if mode != DL:
            return
        j = int(self.turn[device])
        self.left[j] -= 1
        if self.left[j] == 0:
            self.events(env)[j].succeed()
