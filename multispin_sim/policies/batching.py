"""Batching policies of the asynchronous protocol: how many waiting drafts the free server takes.

A policy is asked ``take(now, waiting, oldest_arrival) -> (n, wake)`` whenever the server is free
and drafts wait: ``n`` > 0 drafts (the oldest first, FIFO) form the next batch now; ``n`` = 0
means wait, until a new draft arrives or until ``wake`` (seconds, absolute), whichever is first.

- ``immediate``: every waiting draft (continuous batching as in vLLM / Orca);
- ``max-batch``: at most ``max_batch`` of them;
- ``window``: wait until ``window_s`` after the oldest waiting draft arrived, or until
  ``max_batch`` drafts wait, then take at most ``max_batch``.
"""
import math

from .registry import Registry

BATCHING_POLICIES = Registry("batching policy")


class BatchingPolicy:
    @classmethod
    def from_scenario(cls, scenario):
        """The policy of ``serving.batching``, with the section's ``window_ms`` and
        ``max_batch``."""
        s = scenario.serving
        return cls(window_s=s.window_ms * 1e-3, max_batch=s.max_batch)

    def __init__(self, window_s=0.0, max_batch=None, **_):
        self.window_s = float(window_s)
        self.max_batch = math.inf if max_batch is None else int(max_batch)

    def take(self, now, waiting, oldest_arrival):
        raise NotImplementedError


@BATCHING_POLICIES.register("immediate")
class Immediate(BatchingPolicy):
    def take(self, now, waiting, oldest_arrival):
        return waiting, None


@BATCHING_POLICIES.register("window")
class Window(BatchingPolicy):
    def take(self, now, waiting, oldest_arrival):
        deadline = oldest_arrival + self.window_s
        if waiting >= self.max_batch or now >= deadline:
            return int(min(waiting, self.max_batch)), None
        return 0, deadline


@BATCHING_POLICIES.register("max-batch")
class MaxBatch(BatchingPolicy):
    def take(self, now, waiting, oldest_arrival):
        return int(min(waiting, self.max_batch)), None


def make_batching_policy(name, **kwargs):
    """The batching policy registered under ``name`` (``serving.batching``)."""
    return BATCHING_POLICIES.make(name, **kwargs)
