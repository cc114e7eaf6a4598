"""Noise and Shannon rate of an OFDMA link."""
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


def transmission_delay(bits, bandwidth_hz, power_w, gain, n0):
    """Seconds to send ``bits`` at the Shannon rate (inf when the rate is 0)."""
    with np.errstate(divide="ignore"):
        return np.asarray(bits, dtype=float) / shannon_rate(bandwidth_hz, power_w, gain, n0)
