"""Random streams: one independent numpy Generator per random component, all from one seed.

``numpy.random.SeedSequence(seed).spawn`` gives one child per name in ``STREAMS`` (the order is
fixed; new components are appended, never inserted, so existing streams keep their draws). Two
runs with the same seed and different policies therefore see the same devices, the same fading
and the same acceptance draws round by round (common random numbers).
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
    "link",        # link layer: HARQ/BLER draws and retry fading blocks (link.model: mcs)
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

    def __getitem__(self, name):
        return getattr(self, name)
