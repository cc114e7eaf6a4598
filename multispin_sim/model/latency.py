"""Computation latency: drafting on the devices and batched verification on the server."""
import numpy as np


def drafting_latency(gamma, draft_latency_s):
    """Per-device drafting time gamma_k t_k (seconds)."""
    return np.asarray(gamma, dtype=float) * np.asarray(draft_latency_s, dtype=float)


def verification_latency(batch_size, fixed_s, per_device_s):
    """Batched verification T_ver = T_ver0 + K_b T_ver1; no batch (K_b = 0) takes no time."""
    batch_size = np.asarray(batch_size, dtype=float)
    return np.where(batch_size > 0, fixed_s + batch_size * per_device_s, 0.0)
