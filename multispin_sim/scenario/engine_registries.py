"""The registries of the plug-in families the engine implements: ``serving.protocol``,
``workload.arrivals`` and ``payload.model``, one registry each for the scenario and the engine.

Their classes live in the engine (loops, SimPy arrival processes, servers), and the engine
imports the scenario. Reading the names from an engine module (as ``choices.Registered`` reads
the model's and the policies' families) would make the scenario depend on the engine at run time
-- a cycle -- and would import SimPy and every loop just to validate a file. So the registries
live here, in the scenario (a leaf the engine already imports): each name maps to the
``"module:attribute"`` of the class or factory that implements it, imported only when the engine
looks it up. A plug-in of one's own registers here, with its class or that class's import path
(``ARRIVAL_MODELS.register("bursty", Bursty)``, or ``@ARRIVAL_MODELS.register("bursty")`` on the
class); registered before the scenario is loaded, it is a valid choice.
"""
import importlib

__all__ = ["ARRIVAL_MODELS", "EngineRegistry", "PAYLOAD_MODELS", "PROTOCOLS"]


class EngineRegistry(dict):
    """Name -> class or factory (the object, or the ``"module:attribute"`` naming it)."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def register(self, name, factory=None):
        """Register ``factory`` under ``name``; without it, a decorator registering its class."""
        if factory is None:
            def deco(cls):
                cls.name = name
                self[name] = cls
                return cls
            return deco
        self[name] = factory
        return factory

    def lookup(self, name):
        """The factory of ``name``, imported on first use (ValueError naming the allowed ones)."""
        try:
            factory = self[name]
        except KeyError:
            allowed = ", ".join(sorted(self))
            raise ValueError(f"unknown {self.kind} {name!r}; allowed: {allowed}") from None
        if isinstance(factory, str):
            module, _, attribute = factory.partition(":")
            factory = self[name] = getattr(importlib.import_module(module), attribute)
        return factory


# serving.protocol -> loop class (engine/round.py: ProtocolLoop)
PROTOCOLS = EngineRegistry("protocol")
PROTOCOLS.register("synchronous", "multispin_sim.engine.round:RoundLoop")
PROTOCOLS.register("asynchronous", "multispin_sim.engine.asynchronous:AsyncLoop")

# workload.arrivals -> workload class (engine/workload.py)
ARRIVAL_MODELS = EngineRegistry("arrival model")
ARRIVAL_MODELS.register("saturated", "multispin_sim.engine.workload:Saturated")
ARRIVAL_MODELS.register("poisson", "multispin_sim.engine.workload:PoissonArrivals")
ARRIVAL_MODELS.register("trace", "multispin_sim.engine.workload:TraceArrivals")

# payload.model -> what serves the payloads (engine/tokens.py)
PAYLOAD_MODELS = EngineRegistry("payload model")
PAYLOAD_MODELS.register("bits", "multispin_sim.engine.tokens:BitsPayload")
PAYLOAD_MODELS.register("token", "multispin_sim.engine.tokens:TokenPayload")
