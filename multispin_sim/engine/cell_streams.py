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
previous group's last stream is delivered.
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
    """Where each stream of one decision sits and how the field rates it: ``band`` (K, 2)
    [f0, f1); ``gain`` (K,) its S / p (NaN for an orthogonal link's stream, which meets its
    channel's gain), ``floor`` (K,) F in W, ``sinr`` (K,) S / (N0 B_link + F) (NaN where
    orthogonal), ``turn`` (K,) its ZF group's place in the order (0 elsewhere); ``turn_ends``:
    the SimPy events of the groups' ends, made at the first stream (``events``)."""

    def __init__(self, transmission, truth, seen, mode, planned, power, bandwidth, bits, n0):
        mode = np.asarray(mode)
        planned = np.asarray(planned, dtype=float)
        power = np.asarray(power, dtype=float)
        k = len(mode)
        got = transmission.realise(truth[0], truth[1], vectors_of(seen[0]), vectors_of(seen[1]),
                                   mode, planned, power, bits, bandwidth, n0, parts=True)
        self.band = np.zeros((k, 2))
        self.gain = np.full(k, np.nan)
        self.floor = np.zeros(k)
        self.sinr = got[2]
        self.turn = np.zeros(k, dtype=np.int64)
        self.never = np.zeros(k, dtype=bool)   # a singular ZF group: never served
        lo = 0.0
        for code, scheme in ((UL, transmission.ul), (DL, transmission.dl)):
            idx = np.flatnonzero(mode == code)
            width = bandwidth * len(idx)
            if scheme.shared:
                self.band[idx] = lo, lo + width
                noise = n0 * width
                sinr, inr = got[2, idx], got[3, idx]
                self.floor[idx] = inr * noise
                with np.errstate(invalid="ignore"):
                    self.gain[idx] = sinr * (noise + self.floor[idx]) / power[idx]
                ends, self.turn[idx] = np.unique(planned[idx], return_inverse=True)
                self.never[idx] = np.isinf(planned[idx])
            else:
                self.band[idx, 0] = lo + bandwidth * np.arange(len(idx))
                self.band[idx, 1] = self.band[idx, 0] + bandwidth
            lo += width
        self.left = np.bincount(self.turn[mode == DL], minlength=1) if (mode == DL).any() \
            else np.zeros(1, dtype=np.int64)
        self.turn_ends = None

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
