"""The OFDMA channel: fading drawn each round (block fading), transmissions run in parallel.

``new_block`` draws this round's small-scale fading for every device (the server knows it:
CSI at the server). ``transmit`` is the SimPy side of one correction: it holds the device's
subband for the transmission's duration. Later dynamics (fading that changes while a
transmission runs) change ``transmit`` only.
"""
import numpy as np

from ..model.fading import small_scale_powers


class OFDMAChannel:
    """Block-fading OFDMA channel shared by the K devices of one cell.

    Fading is drawn ``block`` rounds at a time (the same numbers as round by round: each round
    takes 2K exponentials from the ``fading`` stream, UL then DL).
    """

    def __init__(self, system, rng, fading="rayleigh", reciprocal=True, block=1024):
        self.system = system
        self.rng = rng
        self.fading = fading
        self.reciprocal = reciprocal
        self.block = block
        self._ul = self._dl = np.empty((0, system.k))
        self._next = 0
        self.g_ul = None
        self.g_dl = None

    def new_block(self, now=0.0):
        """Draw the fading of a new block; returns (g_ul, g_dl), path loss included, shape (K,)."""
        if self._next == len(self._ul):
            h_ul, h_dl = small_scale_powers(self.rng, (self.block, self.system.k), self.fading,
                                            self.reciprocal)
            self._ul = self.system.pathloss * h_ul
            self._dl = self._ul if self.reciprocal else self.system.pathloss * h_dl
            self._next = 0
        self.g_ul, self.g_dl = self._ul[self._next], self._dl[self._next]
        self._next += 1
        return self.g_ul, self.g_dl

    def transmit(self, env, device, delay_s):
        """One correction transmission of ``device``: it occupies its subband for ``delay_s``."""
        yield env.timeout(delay_s)
        return delay_s
