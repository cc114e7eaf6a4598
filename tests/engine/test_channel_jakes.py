"""The channel under Jakes fading: CSI aging reads the same process earlier; common random
numbers; the block grid only sets the sampling."""
import numpy as np
import pytest
from scipy.special import j0

import multispin_sim as ms
from multispin_sim.engine.link import build_channel
from multispin_sim.engine.population import build_population
from multispin_sim.engine.streams import RandomStreams
from multispin_sim.model.fading import FADING_MODELS


def _channel(overrides, seed=4):
    sc = ms.load_scenario(None, overrides={"channel.fading": "jakes", "devices.count": 5,
                                           **overrides})
    streams = RandomStreams(seed)
    pop = build_population(sc, streams.devices)
    coh = sc.channel.coherence_time_ms
    return build_channel(sc, pop.system, streams, None if coh is None else coh * 1e-3, False), sc


@pytest.mark.parametrize("coherence", [None, 2.0])
def test_delayed_csi_is_the_process_earlier(coherence):
    ch, sc = _channel({"csi.delay_ms": 7.0, "channel.doppler_hz": 50.0,
                       "channel.coherence_time_ms": coherence})
    assert ch.csi_model.rho == 1.0  # the model adds no aging draw of its own
    est_ul, _ = ch.new_block(1.25)
    true_ul = ch.g_ul
    want, _ = ch.fading_source.powers_at(1.25 - 0.007)
    np.testing.assert_allclose(est_ul, ch.pathloss * want, rtol=1e-12)
    np.testing.assert_allclose(true_ul, ch.pathloss * ch.fading_source.powers_at(1.25)[0],
                               rtol=1e-12)


def test_same_channel_for_every_policy():
    a, _ = _channel({"policy.mode": "all-dl"})
    b, _ = _channel({"policy.mode": "optimal"})
    for t in (0.0, 0.37, 2.5):
        np.testing.assert_array_equal(a.new_block(t)[0], b.new_block(t)[0])


def test_aged_csi_correlation_is_j0():
    """Over many devices: corr(|h(t - tau)|^2, |h(t)|^2) = J0(2 pi f_D tau)^2."""
    k, f_d, tau = 6000, 30.0, 0.01
    src = FADING_MODELS.lookup("jakes").rounds(np.random.default_rng(8), k, True, f_d)
    old, now = src.powers_at(3.0 - tau)[0], src.powers_at(3.0)[0]
    want = j0(2 * np.pi * f_d * tau) ** 2
    assert abs(np.corrcoef(old, now)[0, 1] - want) < 4.5 * 2 * (1 - want ** 2) / np.sqrt(k) + 0.01
