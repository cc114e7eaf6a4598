"""The registries of the plug-in families the engine implements: ``serving.protocol``,
``workload.arrivals`` and ``payload.model``.

Their classes live in the engine (loops, SimPy arrival processes, servers), and the engine
imports the scenario. Reading the names from an engine module (as ``choices.Registered`` reads
the model's and the policies' families) would make the scenario depend on the engine at run time
-- a cycle -- and would import SimPy and every loop just to validate a file. So the registries
live here, in the scenario (a leaf the engine already imports): each name maps to the
``"module:attribute"`` of the class or factory that implements it, imported only when the engine
looks it up (``model.registry.Registry``, the one registry class, a module of the standard
library alone). A plug-in of one's own registers here, with its class or that class's import
path (``ARRIVAL_MODELS.register("bursty", Bursty)``, or ``@ARRIVAL_MODELS.register("bursty")``
on the class); registered before the scenario is loaded, it is a valid choice.
"""
from ..model.registry import Registry

__all__ = ["ARRIVAL_MODELS", "PAYLOAD_MODELS", "PROTOCOLS"]

# serving.protocol -> loop class (engine/round.py: ProtocolLoop)
PROTOCOLS = Registry("protocol")
PROTOCOLS.register("synchronous", "multispin_sim.engine.round:RoundLoop")
PROTOCOLS.register("asynchronous", "multispin_sim.engine.asynchronous:AsyncLoop")

# workload.arrivals -> workload class (engine/workload.py)
ARRIVAL_MODELS = Registry("arrival model")
ARRIVAL_MODELS.register("saturated", "multispin_sim.engine.workload:Saturated")
ARRIVAL_MODELS.register("poisson", "multispin_sim.engine.workload:PoissonArrivals")
ARRIVAL_MODELS.register("trace", "multispin_sim.engine.workload:TraceArrivals")

# payload.model -> what serves the payloads (engine/tokens.py)
PAYLOAD_MODELS = Registry("payload model")
PAYLOAD_MODELS.register("bits", "multispin_sim.engine.tokens:BitsPayload")
PAYLOAD_MODELS.register("token", "multispin_sim.engine.tokens:TokenPayload")
