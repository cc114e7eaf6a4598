"""The discrete-event engine: devices, server and OFDMA channel as SimPy processes.

- ``streams``: one random stream per component, from one seed (common random numbers).
- ``population``: the devices of a scenario, drawn once.
- ``channel``: the OFDMA channel: fading blocks and parallel transmissions.
- ``device``: a device's life per round (draft, then correction if rejected).
- ``server``: batched verification and the reactive decision.
- ``round``: the synchronous round, start to end.
- ``workload``: who has work in a round.
- ``simulation``: ``simulate(scenario) -> Result``.
"""
from .simulation import Result, simulate

__all__ = ["Result", "simulate"]
