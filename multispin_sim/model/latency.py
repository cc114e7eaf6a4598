"""Computation latency: drafting on the devices (batched verification: ``model.verification``)."""
import numpy as np


def drafting_latency(gamma, draft_latency_s):
    """Per-device drafting time gamma_k t_k (seconds)."""
    return np.asarray(gamma, dtype=float) * np.asarray(draft_latency_s, dtype=float)
