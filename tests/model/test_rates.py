"""The ergodic gain (``model.rates.ergodic_gain``): its Shannon rate is the mean rate over
Rayleigh fading, checked by quadrature; its limits; and, the reason for it, a payload sent over
many independent fading blocks takes payload / (that rate) to the law of large numbers."""
import math

import numpy as np
import pytest
from scipy import integrate

from multispin_sim.model.fading import time_to_deliver
from multispin_sim.model.rates import ergodic_gain, shannon_rate

EULER = 0.5772156649015329


@pytest.mark.parametrize("snr", [1e-4, 0.01, 0.3, 1.0, 7.0, 100.0, 1e4, 1e7])
def test_its_rate_is_the_mean_rate_over_rayleigh_fading(snr):
    mean, _ = integrate.quad(lambda h: math.log2(1.0 + snr * h) * math.exp(-h), 0, math.inf,
                             limit=200, epsabs=0, epsrel=1e-12)
    g = ergodic_gain(1.0, snr, 1.0, 1.0)
    assert shannon_rate(1.0, snr, g, 1.0) == pytest.approx(mean, rel=1e-9)


def test_it_lies_between_the_high_and_low_snr_limits():
    g = ergodic_gain(2e-9, 10 ** np.linspace(-10, 10, 41), 1e6, 1e-20)   # P g / (N0 b) 1e-3..1e17
    factor = g / 2e-9
    assert np.all(np.diff(factor) < 0)                       # falls as the SNR grows
    assert factor[0] == pytest.approx(1.0, abs=1e-3)         # low SNR: the log is linear
    assert factor[-1] == pytest.approx(math.exp(-EULER), rel=1e-6)   # high SNR: e^-gamma
    assert ergodic_gain(np.array([0.0]), 1.0, 1e6, 1e-20)[0] == 0.0
    assert ergodic_gain(3.0, 0.0, 1e6, 1e-20) == 3.0         # no power: nothing to average


def test_a_payload_over_many_blocks_takes_the_time_of_the_ergodic_rate():
    """1,000 runs of a payload of about 400 blocks' worth of bits over i.i.d. Rayleigh blocks
    (SNR 10 dB): the mean delivery time is payload / ergodic rate to its sampling error (the
    bound is 5 standard errors); at the mean gain instead it would be 16% shorter, some 200
    standard errors away."""
    rng = np.random.default_rng(11)
    b, p, g, n0, block = 1e6, 1.0, 1e-13, 1e-20, 1e-3     # P g / (N0 b) = 10
    rate = shannon_rate(b, p, ergodic_gain(g, p, b, n0), n0)
    bits = 400 * block * rate
    times = []
    for _ in range(1000):
        rates = shannon_rate(b, p, g * rng.standard_exponential(600), n0)
        times.append(time_to_deliver(bits, rates, np.full(600, block))[0])
    times = np.asarray(times)
    se = times.std(ddof=1) / math.sqrt(times.size)
    assert abs(times.mean() - bits / rate) < 5 * se
    assert bits / shannon_rate(b, p, g, n0) < times.mean() - 20 * se
