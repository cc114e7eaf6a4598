"""Signal to interference plus noise, and rates that follow it in time (pure numpy).

A transmission's SINR on its subband is P g / (N0 b + I), with I the sum, over the co-channel
transmissions of other cells overlapping that subband in time, of their power times their gain
to this receiver. I changes whenever such a transmission starts or ends, so a rate is piecewise
constant and a correction's remaining bits carry over from one interval to the next (the
engine's ``InterferenceField``). Frequency reuse: with reuse 1 every cell shares the band;
with reuse 3 each cell uses the sub-band of its colour (``cochannel``: on a hexagonal grid
(q - r) mod 3 of its axial coordinates, so no neighbours share one; ``model.cells``), and only
cells of the same colour interfere.
"""
import numpy as np


def cochannel(cells, reuse):
    """(S, S) True where cells i and j share a sub-band, with the diagonal False (a cell's own
    devices are orthogonal in OFDMA). ``cells``: the layout (``CellLayout``, its ``colours``:
    the geometric plan of a hexagonal grid), or a count of cells without geometry (colour
    c mod reuse)."""
    if hasattr(cells, "colours"):
        colour = np.asarray(cells.colours(reuse))
    else:
        colour = np.arange(int(cells)) % int(reuse)
    same = colour[:, None] == colour[None, :]
    np.fill_diagonal(same, False)
    return same
