"""Choice lists read from the plug-in registries: one source of names.

A key chosen by name (``acceptance.model``, ``policy.mode``, ...) allows exactly the names
registered in its family's ``Registry`` (``model.registry``). The scenario package must stay a
leaf that the model, the policies and the engine may all read, so it imports none of them
(the registry class aside, a module of the standard library alone): a
``Registered`` choice list names the module holding the registry and reads it the first time
it is used (at validation, in an error message, in the key reference), never at import. The
dependency is one way (scenario -> plug-in modules, at run time only; no plug-in module imports
the scenario: a ``from_scenario`` receives a scenario object), and a plug-in registered by a
user before the scenario is loaded is a valid choice.
"""
import importlib
from collections.abc import Sequence


class Registered(Sequence):
    """The names of the registry ``attribute`` of ``module``, in order of registration."""

    def __init__(self, module, attribute):
        self.module = module
        self.attribute = attribute

    def _names(self):
        return tuple(getattr(importlib.import_module(self.module), self.attribute))

    def __getitem__(self, i):
        return self._names()[i]

    def lookup(self, name):
        """What is registered under ``name`` (a cross-check asks a component about itself)."""
        return getattr(importlib.import_module(self.module), self.attribute).lookup(name)

    def __len__(self):
        return len(self._names())

    def __contains__(self, name):
        return name in self._names()

    def __iter__(self):
        return iter(self._names())

    def __eq__(self, other):
        return tuple(self) == tuple(other)

    def __hash__(self):
        return hash((self.module, self.attribute))

    def __repr__(self):
        return f"Registered({self.module}.{self.attribute}: {', '.join(self._names())})"
