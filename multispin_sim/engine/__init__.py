"""The discrete-event engine: devices, server and OFDMA channel as SimPy processes.

- ``streams``: one random stream per component, from one seed (common random numbers).
- ``population``: the devices of a scenario, drawn once.
- ``topology``: server and device positions as a networkx graph; mobility between rounds.
- ``channel``: the OFDMA channel: fading blocks (i.i.d., Gauss-Markov, coherence-time grid) and
  parallel transmissions that accumulate bits over the blocks they span.
- ``device``: a device's life per round (draft, then correction if rejected).
- ``server``: batched verification and the reactive decision.
- ``round``: the synchronous round, start to end (and the wait for work or the round clock).
- ``workload``: who has work in a round: saturated, or requests arriving (Poisson, trace) into
  FIFO queues per device.
- ``reading``: the input files (acceptance traces, verification tables, token pairs), opened
  here and parsed by the model; ``read_once`` keeps a file read while a sweep's cells are
  checked.
- ``simulation``: ``simulate(scenario) -> Result``.
"""
from .simulation import Result, simulate

__all__ = ["Result", "simulate"]
