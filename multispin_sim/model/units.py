"""Decibel conversions, and the speed of light."""
import numpy as np

SPEED_OF_LIGHT = 299_792_458.0  # m/s


def db_to_linear(db):
    """10^(dB/10); works on scalars and arrays."""
    return np.power(10.0, np.asarray(db, dtype=float) / 10.0)


def linear_to_db(x):
    """10 log10(x)."""
    with np.errstate(divide="ignore"):
        return 10.0 * np.log10(np.asarray(x, dtype=float))


def dbm_to_watt(dbm):
    """Power in dBm to watts."""
    return db_to_linear(dbm) * 1e-3
