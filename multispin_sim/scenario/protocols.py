"""The serving protocols' names (``serving.protocol``): one registry for the scenario and the engine.

The loops that implement the protocols live in the engine, and the engine imports the scenario.
Reading the names from an engine module (as ``choices.Registered`` reads the plug-in families)
would make the scenario depend on the engine at run time -- a cycle -- and would import SimPy
and every loop just to validate a file. So the registry lives here, in the scenario (a leaf the
engine already imports): each name maps to the ``"module:attribute"`` of the factory that
builds its loop, imported only when the engine looks it up. A protocol of one's own registers
here, with its factory or that factory's import path.
"""
import importlib

__all__ = ["PROTOCOLS", "ProtocolRegistry"]


class ProtocolRegistry(dict):
    """Name -> loop factory (a callable, or the ``"module:attribute"`` naming it)."""

    kind = "protocol"

    def register(self, name, factory):
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


PROTOCOLS = ProtocolRegistry()
PROTOCOLS.register("synchronous", "multispin_sim.engine.protocols:synchronous")
PROTOCOLS.register("asynchronous", "multispin_sim.engine.protocols:asynchronous")
