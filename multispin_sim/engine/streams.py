"""Random streams: one independent numpy Generator per random component, all from one seed.

``numpy.random.SeedSequence(seed).spawn`` gives one child per name in ``STREAMS`` (the order is
fixed; new components are appended, never inserted, so existing streams keep their draws). Two
runs with the same seed and different policies therefore see the same devices, the same fading
and the same acceptance draws round by round (common random numbers).

A component whose draws per round depend on the policy (how many corrections, HARQ attempts,
retries) takes them from ``KeyedStreams`` instead: a stream addressed by (round, device), not
by its order of use, so a device's draws do not depend on what the others drew before it.
"""
import numpy as np

STREAMS = (
    "devices",     # per-device draws made once: task, drafting speed, distance
    "fading",      # small-scale fading, one block per round
    "acceptance",  # one uniform per device and round: the verification outcome
    "arrivals",    # request arrivals and lengths (workload)
    "policy",      # randomised reactive policies (random split)
    "controller",  # sample average approximation in draft-length search
    "mobility",    # device movement
    "topology",    # device bearings of the annulus layout
    "shadowing",   # log-normal shadowing: initial values
    "tokens",      # token-level payload model: draft tokens, acceptance tests, corrections
    "link",        # link layer: the key of its per-correction streams (KeyedStreams)
    "csi",         # CSI estimation errors at decision time (csi.*)
    "shadowing_path",  # shadowing along moving devices' paths, one stream per device
)


class RandomStreams:
    """``streams.fading`` etc.: one Generator per component of ``STREAMS``."""

    def __init__(self, seed):
        self.seed = seed
        children = np.random.SeedSequence(seed).spawn(len(STREAMS))
        for name, child in zip(STREAMS, children):
            setattr(self, name, np.random.Generator(np.random.PCG64(child)))


class KeyedStreams:
    """Counter-based streams addressed by position, not by order of use, for ``k`` devices.

    ``at(index, device, part)`` is a Generator on numpy's Philox with one 128-bit key (drawn
    once from ``rng``) started at the counter (0, part, device, index); draws advance the
    counter's lowest word only, so the streams of distinct (index, device, part) never overlap
    and the draws of one correction (``index``: its round, or batch) are the same whatever was
    drawn for others before it. Building one costs a Philox and a Generator (about 10 us), so
    ``row(index, device)`` first hands out ``width`` uniforms of (index, device) from a block
    of ``chunk`` indices x ``k`` devices drawn at once (from ``at(c, 0, ROWS)``, c the block's
    number): a few hundred ns per correction.
    """

    ROWS = 2   # the part of the blocks of rows (parts 0 and 1 are the callers')

    def __init__(self, rng, k, width=8, chunk=64):
        self.key = rng.integers(0, 2**64, size=2, dtype=np.uint64)
        self.k = int(k)
        self.width = int(width)
        self.chunk = int(chunk)
        self._c = None      # the number of the block held
        self._block = None

    def at(self, index, device, part=0):
        bits = np.random.Philox(key=self.key, counter=(0, int(part), int(device), int(index)))
        return np.random.Generator(bits)

    def row(self, index, device):
        """The ``width`` uniforms of (``index``, ``device``), a list."""
        c, i = divmod(int(index), self.chunk)
        if c != self._c:
            self._block = self.at(c, 0, self.ROWS).random((self.chunk, self.k, self.width))
            self._c = c
        return self._block[i, device].tolist()
