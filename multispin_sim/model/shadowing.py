"""Log-normal shadowing of the large-scale gain, and its correlation as devices move."""
import numpy as np

from .units import db_to_linear


def shadowing_gain(shadowing_db):
    """Linear gain of log-normal shadowing values given in dB (10^(X/10))."""
    return db_to_linear(shadowing_db)


def shadowing_step(shadowing_db, moved_m, sigma_db, decorrelation_m, z):
    """Gudmundson's model: shadowing after moving ``moved_m`` metres.

    X' = a X + sqrt(1 - a^2) sigma z, a = exp(-moved / d_corr), z ~ N(0, 1): the marginal stays
    N(0, sigma^2) and the correlation decays exponentially with the distance moved.
    """
    a = np.exp(-np.asarray(moved_m, dtype=float) / float(decorrelation_m))
    return a * shadowing_db + np.sqrt(1.0 - a * a) * float(sigma_db) * z
