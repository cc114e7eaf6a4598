"""The estimated channel (engine/csi.py) with a multi-antenna server, on a grid of fading blocks
and on the NR link: the decisions see the estimate h_hat of each channel vector; a correction's
first block is met through the beam (or the ZF precoder, the MMSE combiner) built on it, its
later blocks through the beam of each block's own channel.

The estimates and true vectors are read from a second channel built from the same seed and
asked for its CSI at the run's round starts and decisions (the same draws in the same order);
gains, SINRs and rates are written here from their textbook formulas with numpy. (A shared
band's sets over fading blocks with an estimated channel: test_antennas_fading_blocks.py.)
"""
import math

import numpy as np
import pytest

import multispin_sim as ms
from multispin_sim.engine.link import LinkChannel
from multispin_sim.model.antennas import matched_gain, squared_norms
from multispin_sim.model.csi import ImperfectCsi
from multispin_sim.model.link import McsLink
from multispin_sim.model.rates import shannon_rate

from test_antennas_fading_blocks import _replayed, assert_set_delivers


def run(overrides):
    return ms.simulate(ms.load_scenario(None, overrides=overrides))


def _matched(est, a):
    """|a_hat^H a|^2 / ||a_hat||^2: the gain of a maximum-ratio beam on a_hat over channel a."""
    return abs(np.vdot(est, a)) ** 2 / np.vdot(est, est).real


def test_orthogonal_corrections_meet_the_estimates_beam_then_each_blocks_own():
    k, m, block = 6, 4, 0.02
    r = run({"devices.count": k, "server.antennas": m, "server.antenna_correlation": 0.5,
             "channel.fading": "gauss-markov", "channel.doppler_hz": 10.0,
             "channel.reciprocal": False, "channel.coherence_time_ms": block * 1e3,
             "csi.estimation_error_variance": 0.2, "policy.mode": "random",
             "run.rounds": 300, "seed": 5})
    rounds, dr, dev = r.rounds, r.device_rounds, r.devices
    ch, seen = _replayed(r)
    n0_w = r.population.system.n0
    t0 = (rounds["start_s"] + rounds["draft_s"] + rounds["verify_s"])[dr["round"]]
    long = lost = 0
    for i in np.flatnonzero(dr["rejected"].astype(bool)):
        d, start, delay, dl = dr["device"][i], t0[i], dr["delay_s"][i], dr["mode"][i] == "dl"
        est = seen[dr["round"][i]][1 if dl else 0]
        # the decision saw the estimate's array gain
        assert est[d] == pytest.approx(dr["gain_dl" if dl else "gain_ul"][i], rel=1e-12)
        n0 = math.floor(start / block)
        n1 = math.floor((start + delay) / block) + 1
        ul_v, dl_v = ch.grid.powers(n0, n1)
        a = (dl_v if dl else ul_v)[:, d] * math.sqrt(dev["pathloss_gain"][d])
        gain = np.linalg.norm(a, axis=-1) ** 2
        beam = _matched(est.vectors[d], a[0])
        assert beam <= gain[0] * (1 + 1e-12)     # Cauchy-Schwarz
        lost += beam < gain[0] * 0.99
        gain[0] = beam
        rate = shannon_rate(dr["bandwidth_hz"][i], dr["power_w"][i], gain, n0_w)
        assert_set_delivers(rate[:, None], np.arange(n0, n1 + 1) * block, start,
                            [start + delay], r.population.system.payload_bits)
        long += n1 - n0 > 1
    assert long > 30 and lost > 100, (long, lost)


@pytest.mark.parametrize("grid_ms", [None, 3.0])
def test_nr_link_reports_the_estimate_and_starts_through_its_beam(monkeypatch, grid_ms):
    """The NR link with several antennas and an estimated channel: each correction's link
    adaptation reads the SNR of the estimate's array gain p ||a_hat||^2 / N, and its first
    block is met through the estimate's beam (a grid block other than the decision's: that
    block's true vector)."""
    seen, sent = [], []
    deliver, mcs_delay = McsLink.deliver, LinkChannel.mcs_delay

    def spy_delay(self, device, mode, power_w, bandwidth_hz, t0, index):
        dl = int(mode == 2)
        est = self.estimate_now()[dl].vectors[device]
        if self.grid is None:
            a = (self.g_dl if dl else self.g_ul).vectors[device]
        else:
            a = self.grid.blocks(t0, 1)[dl][0, device] * math.sqrt(self.pathloss[device])
        seen.append((est, a, power_w))
        return mcs_delay(self, device, mode, power_w, bandwidth_hz, t0, index)

    def spy_deliver(self, bits, n_prb, power_w, snr_reported, blocks, *args, **kwargs):
        sent.append((snr_reported, blocks.current(0.0)[0], self.noise_w(n_prb)))
        return deliver(self, bits, n_prb, power_w, snr_reported, blocks, *args, **kwargs)

    monkeypatch.setattr(LinkChannel, "mcs_delay", spy_delay)
    monkeypatch.setattr(McsLink, "deliver", spy_deliver)
    over = {"devices.count": 8, "server.antennas": 4, "link.model": "mcs",
            "channel.fading": "gauss-markov", "channel.doppler_hz": 20.0,
            "csi.estimation_error_variance": 0.2, "run.rounds": 150, "seed": 3}
    if grid_ms is not None:
        over["channel.coherence_time_ms"] = grid_ms
    r = run(over)
    assert len(seen) == len(sent) == int(r.device_rounds["rejected"].sum()) > 100
    lost = 0
    for (est, a, power), (reported, first, noise) in zip(seen, sent):
        assert reported == pytest.approx(power * np.vdot(est, est).real / noise, rel=1e-12)
        assert first == pytest.approx(_matched(est, a), rel=1e-12)
        lost += first < np.vdot(a, a).real * 0.99
    assert lost > len(sent) // 2


def test_a_quantised_report_of_an_array_gain_is_its_bins_edge_as_one_antennas():
    """With CQI quantisation alone the estimate points along the true vector (its beam loses
    nothing) and its array gain is the reported bin's lower edge exactly, one antenna's report
    of the same power (pl (q / pl): devices on one CQI see one gain to an ulp)."""
    rng = np.random.default_rng(4)
    n, m = 500, 4
    link = McsLink(10e6, 1e-3 * 10 ** (-17.4))
    csi = ImperfectCsi(quantise=True, switch_db=link.switch_db, ref_snr=np.full(n, 1e8))
    h = (rng.standard_normal((n, m)) + 1j * rng.standard_normal((n, m))) / math.sqrt(2)
    pl = np.geomspace(1e-10, 1e-7, n)
    est, _ = csi.estimate_vectors(h, h, True, rng, pl)
    one, _ = csi.estimate(squared_norms(h), squared_norms(h), True, rng, pl)
    np.testing.assert_array_equal(np.asarray(est), pl * one)
    a = np.sqrt(pl)[:, None] * h
    np.testing.assert_allclose(matched_gain(est.vectors, a), squared_norms(a), rtol=1e-12)
    np.testing.assert_allclose(squared_norms(est.vectors), est, rtol=1e-12)
    assert csi.keeps_direction and not ImperfectCsi(error_variance=0.1).keeps_direction
    r = run({"server.antennas": 4, "csi.cqi_quantisation": True, "run.rounds": 50})
    assert len(np.unique(np.round(np.log10(r.device_rounds["gain_ul"]), 14))) <= 17


def test_one_antenna_on_a_shared_band_decides_on_the_estimate_and_meets_the_truth():
    """One antenna: a ZF group is one stream, an MMSE combiner one scalar, so an estimate
    changes the decisions only: each DL stream's SINR is p g / (N0 B_link) on its true gain,
    each UL stream's p_k g_k / (N0 B_link + sum_{j != k} p_j g_j) over the round's UL set, at
    the decided powers (B_link: the link's pooled band)."""
    k = 6
    r = run({"devices.count": k, "server.dl_scheme": "mu-mimo-zf",
             "server.ul_scheme": "mu-mimo-mmse", "csi.estimation_error_variance": 0.3,
             "policy.mode": "random", "run.rounds": 250, "seed": 9})
    dr, n0 = r.device_rounds, r.population.system.n0
    truth = []
    _, seen = _replayed(r, truth)
    sent = dr["rejected"].astype(bool)
    checked = missed = 0
    for rnd in np.unique(dr["round"][sent]):
        for mode in ("ul", "dl"):
            on = np.flatnonzero(sent & (dr["round"] == rnd) & (dr["mode"] == mode))
            if not on.size:
                continue
            dev = dr["device"][on]
            g = truth[rnd][1 if mode == "dl" else 0][dev]
            est = np.asarray(seen[rnd][1 if mode == "dl" else 0])[dev]
            np.testing.assert_allclose(dr["gain_dl" if mode == "dl" else "gain_ul"][on], est,
                                       rtol=1e-12)
            missed += int(np.sum(np.abs(est / g - 1) > 0.01))
            p, noise = dr["power_w"][on], n0 * dr["bandwidth_hz"][on][0] * on.size
            if mode == "dl":
                sinr = p * g / noise
            else:
                sinr = p * g / (noise + np.sum(p * g) - p * g)
            np.testing.assert_allclose(dr["snr_eff"][on], sinr, rtol=1e-9)
            checked += on.size
    assert checked > 300 and missed > checked // 2, (checked, missed)


def test_a_correction_that_waits_meets_its_start_blocks_channel_through_the_estimate():
    """Corrections deferred past a deadline are carried to the next round start, and that
    round's own corrections wait for them: one starting in a later fading block than its
    decision saw meets that block's true vector through the beam of the decision's estimate,
    then each block's own (docs/components/antennas.md); each delivers its payload."""
    block = 0.002
    r = run({"devices.count": 6, "server.antennas": 4, "channel.fading": "gauss-markov",
             "channel.doppler_hz": 20.0, "channel.coherence_time_ms": block * 1e3,
             "csi.estimation_error_variance": 0.2, "policy.mode": "deadline",
             "straggler.deadline_ms": 60.0, "devices.distance_m": [800.0, 1200.0],
             "run.rounds": 400, "seed": 4})
    rounds, dr, dev = r.rounds, r.device_rounds, r.devices
    ch, seen = _replayed(r)
    decided = rounds["start_s"] + rounds["draft_s"] + rounds["verify_s"]
    own = (dr["rejected"] == 1) & (dr["mode"] != "")
    longest = np.zeros(len(rounds["round"]))
    np.maximum.at(longest, dr["round"][own], dr["delay_s"][own])
    wait = rounds["comm_s"] - longest      # the wait for the carried corrections
    later = 0
    for i in np.flatnonzero(own):
        rnd, d, dl = dr["round"][i], dr["device"][i], dr["mode"][i] == "dl"
        start, delay = decided[rnd] + wait[rnd], dr["delay_s"][i]
        n0, n1 = math.floor(start / block), math.floor((start + delay) / block) + 1
        later += n0 > math.floor(decided[rnd] / block)
        ul_v, dl_v = ch.grid.powers(n0, n1)
        a = (dl_v if dl else ul_v)[:, d] * math.sqrt(dev["pathloss_gain"][d])
        gain = np.linalg.norm(a, axis=-1) ** 2
        gain[0] = _matched(seen[rnd][1 if dl else 0].vectors[d], a[0])
        rate = shannon_rate(dr["bandwidth_hz"][i], dr["power_w"][i], gain,
                            r.population.system.n0)
        assert_set_delivers(rate[:, None], np.arange(n0, n1 + 1) * block, start,
                            [start + delay], r.population.system.payload_bits)
    assert later > 15, later
