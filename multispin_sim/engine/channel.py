"""The OFDMA channel: fading drawn each round (block fading), transmissions run in parallel.

``new_block`` draws this round's small-scale fading for every device (the server knows it:
CSI at the server). ``transmit`` is the SimPy side of one correction: it holds the device's
subband for the transmission's duration. Later dynamics (fading that changes while a
transmission runs) change ``transmit`` only.
"""
from ..model.fading import channel_gains


class OFDMAChannel:
    """Block-fading OFDMA channel shared by the K devices of one cell."""

    def __init__(self, system, rng, fading="rayleigh", reciprocal=True):
        self.system = system
        self.rng = rng
        self.fading = fading
        self.reciprocal = reciprocal
        self.g_ul = None
        self.g_dl = None

    def new_block(self, now=0.0):
        """Draw the fading of a new block; returns (g_ul, g_dl), path loss included, shape (K,)."""
        self.g_ul, self.g_dl = channel_gains(self.rng, self.system.pathloss, self.fading, self.reciprocal)
        return self.g_ul, self.g_dl

    def transmit(self, env, device, delay_s):
        """One correction transmission of ``device``: it occupies its subband for ``delay_s``."""
        yield env.timeout(delay_s)
        return delay_s
