"""The serving protocols (``serving.protocol``): which loop drives the simulation.

- ``synchronous``: the paper's lock-step rounds (``round.RoundLoop``);
- ``asynchronous``: per-device loops and continuous batching (``asynchronous.AsyncLoop``).

Both take the same actors (population, channel, server, controller, workload, streams,
recorder) and expose ``run(env)``, ``rounds_done`` and ``stop_requested``; a loop may add
``summary(end)`` (a summary block of its own) and ``server_busy_s`` (time the server verified).
The names are registered in ``scenario.engine_registries.PROTOCOLS`` (the one list the schema
also reads; its docstring says why it lives there), pointing to the factories below.
"""
from ..scenario.engine_registries import PROTOCOLS
from .asynchronous import AsyncLoop
from .round import RoundLoop

__all__ = ["PROTOCOLS", "make_loop", "synchronous", "asynchronous"]


def synchronous(*args, serving=None, **kwargs):
    return RoundLoop(*args, **kwargs)


def asynchronous(*args, serving=None, **kwargs):
    return AsyncLoop(*args, serving=serving, **kwargs)


def make_loop(protocol, *args, **kwargs):
    """The loop of ``protocol`` built with the arguments of ``RoundLoop`` (+ ``serving``)."""
    return PROTOCOLS.lookup(protocol)(*args, **kwargs)
