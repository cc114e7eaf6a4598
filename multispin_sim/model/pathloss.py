"""Large-scale path loss: G(d) = G_0 (d / 1 m)^(-eta)."""
import numpy as np

from .units import db_to_linear


def pathloss_gain(distance_m, ref_gain_db=-30.0, exponent=3.5):
    """Linear large-scale power gain at distance ``distance_m`` (metres, > 0); ``ref_gain_db``
    is G_0 (dB), the gain at the 1 m reference distance."""
    d = np.asarray(distance_m, dtype=float)
    return db_to_linear(ref_gain_db) * np.power(d, -float(exponent))
