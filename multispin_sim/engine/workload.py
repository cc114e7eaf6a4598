"""Workload: which devices have work in a round. The paper's setting is saturated."""
import numpy as np


class Saturated:
    """Every device always has tokens to generate (MODEL.md section 2)."""

    name = "saturated"

    def __init__(self, k):
        self._all = np.ones(k, dtype=bool)

    def active(self, now):
        return self._all

    def remaining(self):
        return None

    def wait_for_work(self, env):
        """SimPy: return when some device has work (at once when saturated)."""
        return
        yield

    def tokens_delivered(self, now, tokens):
        """Account the tokens each device got from the round that ended at ``now``."""
