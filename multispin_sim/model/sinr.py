"""Signal to interference plus noise, and rates that follow it in time (pure numpy).

A transmission's SINR on its subband is P g / (N0 b + I), with I the sum, over the co-channel
transmissions of other cells overlapping that subband in time, of their power times their gain
to this receiver. I changes whenever such a transmission starts or ends, so a rate is piecewise
constant and a correction's remaining bits carry over from one interval to the next
(``deliver_piecewise``). Frequency reuse: with reuse 1 every cell shares the band; with reuse 3
cell c uses sub-band c mod 3 (``cochannel``), so only cells of the same colour interfere.
"""
import numpy as np


def sinr(power_w, gain, bandwidth_hz, n0, interference_w=0.0):
    """P g / (N0 b + I) (I = 0: the SNR of ``model.rates``)."""
    return (np.asarray(power_w, dtype=float) * np.asarray(gain, dtype=float)
            / (n0 * np.asarray(bandwidth_hz, dtype=float) + np.asarray(interference_w, dtype=float)))


def sir_of_serving(received_w, serving):
    """SIR (P,) of each point's serving link: received power (P, S) at the serving index over
    the sum of the others (every other server transmitting: reuse 1, full load)."""
    received_w = np.asarray(received_w, dtype=float)
    signal = np.take_along_axis(received_w, np.asarray(serving)[:, None], axis=1)[:, 0]
    return signal / (received_w.sum(axis=1) - signal)


def rate(bandwidth_hz, sinr_value):
    """Shannon rate b log2(1 + SINR) in bit/s."""
    return np.asarray(bandwidth_hz, dtype=float) * np.log2(1.0 + np.asarray(sinr_value, dtype=float))


def cochannel(cells, reuse):
    """(S, S) True where cells i and j share a sub-band (reuse 1: all; 3: i = j mod 3), with
    the diagonal False (a cell's own devices are orthogonal in OFDMA)."""
    colour = np.arange(cells) % int(reuse)
    same = colour[:, None] == colour[None, :]
    np.fill_diagonal(same, False)
    return same


def deliver_piecewise(bits, rates_bps, durations_s):
    """Bits delivered in each interval of a piecewise-constant rate and the time spent, until
    ``bits`` are delivered: (delivered per interval, seconds per interval, done). The last
    interval is cut where the remaining bits run out; intervals after it get 0."""
    rates_bps = np.asarray(rates_bps, dtype=float)
    durations_s = np.asarray(durations_s, dtype=float)
    capacity = rates_bps * durations_s
    before = np.concatenate([[0.0], np.cumsum(capacity)[:-1]])
    delivered = np.clip(bits - before, 0.0, capacity)
    with np.errstate(divide="ignore", invalid="ignore"):
        spent = np.where(delivered >= capacity, durations_s,
                         np.where(delivered > 0, delivered / rates_bps, 0.0))
    return delivered, spent, bool(before[-1] + capacity[-1] >= bits) if len(capacity) else bits <= 0
