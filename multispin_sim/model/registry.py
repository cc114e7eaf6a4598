"""A name -> class registry shared by every plug-in family (the model's components, the
policies, and the families the engine implements): a setting as written in the scenario file
-> its class.

A registry is the one list of a family's names: the scenario schema reads its choices from it
(``scenario.choices``), the key reference and the docs test list them from it, and the engine
builds a component by ``REGISTRY.lookup(name).from_scenario(scenario, ...)``. Names keep their
order of registration (the order the key reference and error messages show)."""
import functools
import importlib
import inspect


class Registry(dict):
    """Maps a name (as written in the scenario file) to its class; ``make`` builds one."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def register(self, name, factory=None):
        """Register ``factory`` under ``name``: a class or function, or the
        ``"module:attribute"`` naming it, imported at the first ``lookup`` (so a registry can
        list what a module above it implements without importing it). Without ``factory``,
        a decorator registering its class."""
        if factory is not None:
            self[name] = factory
            return factory

        def deco(cls):
            cls.name = name
            self[name] = cls
            return cls
        return deco

    def lookup(self, name):
        """The class registered under ``name`` (ValueError naming the allowed ones if none)."""
        try:
            factory = self[name]
        except KeyError:
            allowed = ", ".join(sorted(self))
            raise ValueError(f"unknown {self.kind} {name!r}; allowed: {allowed}") from None
        if isinstance(factory, str):
            module, _, attribute = factory.partition(":")
            factory = self[name] = getattr(importlib.import_module(module), attribute)
        return factory

    def make(self, name, *args, **kwargs):
        return self.lookup(name)(*args, **kwargs)


@functools.cache
def constructor_keywords(cls):
    """The names ``cls(...)`` takes by keyword (its ``__init__``'s named parameters)."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return tuple(p.name for p in inspect.signature(cls.__init__).parameters.values()
                 if p.kind in kinds)[1:]   # without self


def section_keywords(cls, section, context=None):
    """The keyword arguments a ``from_scenario`` default passes to ``cls``: each constructor
    keyword named in ``context`` (what the engine supplies: streams, block sizes, ...) takes
    that value, else each one that is a key of the scenario ``section`` takes the key's value."""
    context = context or {}
    out = {}
    for name in constructor_keywords(cls):
        if name in context:
            out[name] = context[name]
        elif hasattr(section, name):
            out[name] = getattr(section, name)
    return out
