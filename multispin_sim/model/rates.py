"""Noise and Shannon rate of an OFDMA link, instantaneous and averaged over Rayleigh fading."""
import math

import numpy as np

from .units import dbm_to_watt


def noise_psd_watt_per_hz(noise_psd_dbm_hz=-174.0):
    """Noise power spectral density N0 in W/Hz from dBm/Hz."""
    return float(dbm_to_watt(noise_psd_dbm_hz))


def snr(power_w, gain, bandwidth_hz, n0):
    """Received SNR P g / (N0 b)."""
    return np.asarray(power_w) * np.asarray(gain) / (n0 * np.asarray(bandwidth_hz))


def shannon_rate(bandwidth_hz, power_w, gain, n0):
    """Rate in bit/s: b log2(1 + P g / (N0 b))."""
    b = np.asarray(bandwidth_hz, dtype=float)
    return b * np.log2(1.0 + snr(power_w, gain, b, n0))


def _exp_e1(x):
    """e^x E1(x) for x > 0 (E1 the exponential integral): scipy's E1 where e^x does not
    overflow its tiny values, the asymptotic series sum_n (-1)^n n! / x^(n+1) beyond (six
    terms: relative error below 1e-9 from x = 100)."""
    from scipy.special import exp1

    x = np.asarray(x, dtype=float)
    near = np.minimum(x, 100.0)
    series = sum((-1) ** n * math.factorial(n) / x ** (n + 1) for n in range(6))
    return np.where(x <= 100.0, np.exp(near) * exp1(near), series)


def ergodic_gain(mean_gain, power_w, bandwidth_hz, n0):
    """The gain whose Shannon rate is the mean Shannon rate over Rayleigh fading of mean
    ``mean_gain`` (|h|^2 ~ Exp(1)): E[ln(1 + rho h)] = e^(1/rho) E1(1/rho) with rho = P g /
    (N0 b), so the gain is g (exp(e^(1/rho) E1(1/rho)) - 1) / rho. It lies between g e^-0.5772
    (high SNR: Euler's constant) and g (low SNR, where the log is linear); g where rho is 0."""
    g = np.asarray(mean_gain, dtype=float)
    rho = snr(power_w, g, bandwidth_hz, n0)
    some = rho > 0
    x = np.where(some, 1.0 / np.where(some, rho, 1.0), 1.0)
    factor = np.expm1(_exp_e1(x)) * x   # (exp(E[ln(1 + rho h)]) - 1) / rho
    return np.where(some, g * factor, g)
