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


@pytest.mark.parametrize("fading", ["jakes", "gauss-markov"])
def test_grid_delivery_read_in_chunks_is_the_delivery_over_all_blocks(fading):
    """A correction read 16, 128, 1024, then 4,096 blocks at a time takes the time (and the
    blocks) of the same blocks read at once: thousands of 0.1 ms blocks at 200-2,000 m."""
    from multispin_sim.model.fading import time_to_deliver
    from multispin_sim.model.rates import shannon_rate
    from multispin_sim.model.reactive import DL, UL

    ch, _ = _channel({"channel.fading": fading, "channel.doppler_hz": 20.0,
                      "channel.coherence_time_ms": 0.1, "devices.distance_m": [200, 2000],
                      "channel.reciprocal": False})
    ch.new_block(0.0)
    bandwidth, power = 2e6, 0.01
    used_many = 0
    for device in range(5):
        for dl, t0 in ((False, 0.00037), (True, 0.01)):
            before = ch.blocks_used
            delay = ch.delivery_time(device, DL if dl else UL, power, bandwidth, t0)
            used = ch.blocks_used - before
            h = ch.grid.segments(device, dl, t0, used + 8)
            n0 = ch.block_index(t0)
            durations = np.full(used + 8, ch.coherence_s)
            durations[0] = (n0 + 1) * ch.coherence_s - t0
            rates = shannon_rate(bandwidth, power, ch.pathloss[device] * h, ch.n0)
            want, want_used, _ = time_to_deliver(ch.bits, rates, durations)
            assert used == want_used and delay == pytest.approx(want, rel=1e-12)
            used_many += used > 1024 + 4096
    assert used_many   # some corrections went past the third chunk


@pytest.mark.parametrize("link", ["plain", "shannon-link"])
def test_a_correction_that_starts_in_a_later_block_is_delivered_on_that_blocks_gains(
        monkeypatch, link):
    """Under 'deadline' a round's corrections wait for a carried one, and may start in a later
    fading block than the one they were decided on: every realised delay is the delivery time
    over the blocks the correction really occupies (the plan's delay only when it starts and
    ends in the decision's block). 'shannon-link': the imperfect-CSI channel (engine.link)."""
    from multispin_sim.engine.channel import OFDMAChannel

    real = OFDMAChannel.grid_delay
    seen = []

    def grid_delay(self, device, mode, power_w, bandwidth_hz, t0, one_block_s):
        delay = real(self, device, mode, power_w, bandwidth_hz, t0, one_block_s)
        truth = self.delivery_time(device, mode, power_w, bandwidth_hz, t0)
        seen.append((delay, truth, self.block_index(t0) != self.block_index(self._decided_t)))
        return delay

    monkeypatch.setattr(OFDMAChannel, "grid_delay", grid_delay)
    overrides = {"policy.mode": "deadline", "straggler.deadline_ms": 20,
                 "channel.coherence_time_ms": 50, "run.rounds": 400, "policy.draft": "fixed",
                 "policy.draft_length": 2, "devices.distance_m": [100, 1200], "seed": 1}
    if link == "shannon-link":
        overrides["csi.delay_ms"] = 1.0
    ms.simulate(ms.load_scenario(None, overrides=overrides))
    delay, truth, later = map(np.array, zip(*seen))
    assert later.sum() >= 20          # the case occurs
    np.testing.assert_allclose(delay, truth, rtol=1e-9)
