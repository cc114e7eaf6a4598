"""A multi-antenna server with imperfect CSI: the decisions see the array gains of the
estimated vectors, and each stream meets the true channel through the maximum-ratio beam of its
estimate (``engine.antennas.ArrayChannel``, ``model.antennas.matched_gain``).

Law (i.i.d. Rayleigh elements; the CSI aged by rho = J0(2 pi f_D tau), then the MMSE error s2):
given the estimate h_hat, h ~ CN(rho h_hat, v I) with v = 1 - rho^2 + rho^2 s2, so the realised
gain |h_hat^H h|^2 / ||h_hat||^2 = |rho ||h_hat|| + sqrt(v) w|^2 with w ~ CN(0, 1). Its excess
over rho^2 ||h_hat||^2 has mean v and variance 2 rho^2 v ||h_hat||^2 + v^2, whichever streams
the policy chose (it chose on h_hat alone); streams of different devices are independent given
their estimates. Tolerances: NSIG standard errors.
"""
import math

import numpy as np
import pytest
from scipy.special import j0

import multispin_sim as ms
from multispin_sim.model.antennas import matched_gain

NSIG = 5


def run(**overrides):
    return ms.simulate(ms.load_scenario(None, overrides={"seed": 11, **overrides}))


def _corrections(res):
    d = res.device_rounds
    m = d["rejected"] == 1
    return {name: np.asarray(d[name])[m] for name in
            ("device", "gain_ul", "gain_eff", "snr_eff", "delay_s", "planned_delay_s",
             "bandwidth_hz",
             "power_w", "airtime_s", "tx_energy_j")}


def test_realised_gain_given_the_estimate_follows_the_matched_beam_law():
    m, s2, doppler, tau = 4, 0.1, 50.0, 2e-3
    res = run(**{"server.antennas": m, "channel.doppler_hz": doppler, "csi.delay_ms": tau * 1e3,
                 "csi.estimation_error_variance": s2, "run.rounds": 800})
    c = _corrections(res)
    pl = np.asarray(res.devices["pathloss_gain"])[c["device"]]
    est, real = c["gain_ul"] / pl, c["gain_eff"] / pl   # reciprocal: one estimate a device
    rho2 = float(j0(2 * math.pi * doppler * tau)) ** 2
    v = 1 - rho2 + rho2 * s2
    n = est.size
    assert n > 5000
    # the estimate's array gain: (1 - s2) Gamma(M, 1) (aging keeps the law, the MMSE shrinks it)
    assert abs(est.mean() / (1 - s2) - m) < NSIG * math.sqrt(m / n)
    excess = real - rho2 * est
    se = math.sqrt(np.mean(2 * rho2 * v * est + v * v) / n)
    assert abs(excess.mean() - v) < NSIG * se, (excess.mean(), v, se)


def test_streams_are_delivered_at_their_realised_gain_and_planned_at_the_estimate():
    """delay * log2(1 + SNR) is the payload per hertz, realised and planned alike: each correction's
    realised delay is the Shannon delay at its recorded SNR, its planned one at the estimate's;
    it is on air for its realised delay at the power it was sent at."""
    res = run(**{"server.antennas": 2, "csi.estimation_error_variance": 0.3,
                 "run.rounds": 200})
    c = _corrections(res)
    est_snr = c["snr_eff"] * c["gain_ul"] / c["gain_eff"]
    realised = c["delay_s"] * np.log2(1 + c["snr_eff"])
    planned = c["planned_delay_s"] * np.log2(1 + est_snr)
    bits_per_hz = res.population.system.payload_bits / c["bandwidth_hz"]
    np.testing.assert_allclose(realised, bits_per_hz, rtol=1e-9)
    np.testing.assert_allclose(planned, bits_per_hz, rtol=1e-9)
    assert not np.allclose(c["delay_s"], c["planned_delay_s"], rtol=1e-3)
    np.testing.assert_array_equal(c["airtime_s"], c["delay_s"])
    np.testing.assert_allclose(c["tx_energy_j"], c["power_w"] * c["delay_s"], rtol=1e-12)


def test_a_delay_the_channel_cannot_change_over_is_perfect_csi():
    base = {"server.antennas": 4, "channel.doppler_hz": 0.0, "run.rounds": 100}
    a, b = run(**base), run(**base, **{"csi.delay_ms": 5.0})
    for name in ("mode", "power_w", "delay_s", "gain_ul", "gain_eff"):
        np.testing.assert_array_equal(a.device_rounds[name], b.device_rounds[name])
    assert "planned_delay_s" not in b.device_rounds


def test_cqi_reports_the_estimated_array_gain_on_the_4_bit_grid():
    res = run(**{"server.antennas": 4, "csi.cqi_quantisation": True, "run.rounds": 100})
    g = np.asarray(res.device_rounds["gain_ul"])
    assert g.size == 2000
    # 16 CQIs and the bin below CQI 1 (common to every device: the reference SNR includes G)
    assert len(np.unique(np.round(np.log10(g), 9))) <= 17


def test_matched_gain_is_the_array_gain_for_an_exact_estimate_and_never_more():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((500, 4)) + 1j * rng.standard_normal((500, 4))
    e = a + 0.7 * (rng.standard_normal((500, 4)) + 1j * rng.standard_normal((500, 4)))
    norm = np.sum(np.abs(a) ** 2, axis=1)
    np.testing.assert_allclose(matched_gain(a, a), norm, rtol=1e-12)
    np.testing.assert_allclose(matched_gain(3j * a, a), norm, rtol=1e-12)   # scale, phase
    assert np.all(matched_gain(e, a) <= norm * (1 + 1e-12))
    assert matched_gain(np.zeros((1, 4), complex), a[:1])[0] == 0.0


def test_under_jakes_the_estimate_is_the_vector_process_read_delay_earlier():
    """csi.delay_ms alone under 'jakes': the decision's vectors are the array's own process at
    t - tau (no aging draw), so over many devices the realised gain's excess over
    rho^2 ||h_hat||^2 has mean 1 - rho^2, rho = J0(2 pi f_D tau) (the sum of sinusoids'
    correlation: J0 to about 0.01)."""
    from multispin_sim.engine.link import build_channel
    from multispin_sim.engine.population import build_population
    from multispin_sim.engine.streams import RandomStreams

    k, m, f_d, tau, t = 3000, 4, 40.0, 4e-3, 2.5
    sc = ms.load_scenario(None, overrides={
        "channel.fading": "jakes", "channel.doppler_hz": f_d, "csi.delay_ms": tau * 1e3,
        "server.antennas": m, "devices.count": k})
    streams = RandomStreams(6)
    ch = build_channel(sc, build_population(sc, streams.devices).system, streams, None, False)
    assert ch.csi_model.rho == 1.0   # the process ages the CSI, not a draw
    est, _ = ch.new_block(t)
    want, _ = ch.array.gains(ch.pathloss, *ch.fading_source.round_powers(t - tau), True)
    np.testing.assert_array_equal(est.vectors, want.vectors)
    pl = ch.pathloss
    e, real = est / pl, matched_gain(est.vectors, ch.g_ul.vectors) / pl
    rho2 = float(j0(2 * math.pi * f_d * tau)) ** 2
    v = 1 - rho2
    se = math.sqrt(np.mean(2 * rho2 * v * e + v * v) / k)
    assert abs(np.mean(real - rho2 * e) - v) < NSIG * se + 0.01


SHARED = {"server.antennas": 4, "server.dl_scheme": "mu-mimo-zf",
          "server.ul_scheme": "mu-mimo-mmse", "devices.count": 10}


@pytest.mark.parametrize("dl, ul", [("mu-mimo-zf", "mu-mimo-mmse"), ("mu-mimo-zf", "ofdma-mrc"),
                                    ("ofdma-mrt", "mu-mimo-mmse")])
def test_a_shared_band_with_a_vanishing_estimation_error_realises_its_plan(dl, ul):
    """s2 = 1e-12: the estimates are the channel within about 1e-6, so every stream's
    realised delay is its planned one within 1e-4 (ZF leakage and MMSE mismatch are second
    order in the error; an orthogonal link beside a shared one: the matched beam)."""
    res = run(**{**SHARED, "csi.estimation_error_variance": 1e-12, "run.rounds": 100,
                 "server.dl_scheme": dl, "server.ul_scheme": ul})
    c = _corrections(res)
    assert c["delay_s"].size > 400
    np.testing.assert_allclose(c["delay_s"], c["planned_delay_s"], rtol=1e-4)


def test_a_shared_band_with_imperfect_csi_delivers_each_stream_at_its_sinr_in_turns(
        shared_band_streams):
    """s2 = 0.2, ten devices, four antennas (ZF groups in turn when more than four are on
    the DL): every stream carries the payload at b |set| log2(1 + SINR) for its time on air;
    a UL stream is on air from the start, a DL stream from the end of the previous group's
    slowest stream (groups in the order the plan ends them); energy is power x airtime."""
    res = run(**SHARED, **{"csi.estimation_error_variance": 0.2, "run.rounds": 150})
    d = res.device_rounds
    bits = res.population.system.payload_bits
    assert shared_band_streams(d, bits, "planned_delay_s") > 10
    c = {name: np.asarray(d[name]) for name in ("delay_s", "planned_delay_s")}
    done = np.asarray(d["rejected"]) == 1
    assert not np.allclose(c["delay_s"][done], c["planned_delay_s"][done], rtol=1e-3)


def test_robust_on_a_shared_band_with_an_estimate_changes_splits_not_outcomes():
    """'robust' on a shared band with imperfect CSI runs in the engine: the same outcomes and
    channels as 'optimal' (its draws come from the policy stream), other splits in some rounds,
    and every correction delivered."""
    base = {"server.antennas": 4, "server.dl_scheme": "mu-mimo-zf",
            "server.ul_scheme": "mu-mimo-mmse", "csi.estimation_error_variance": 0.3,
            "run.rounds": 150}
    a, b = run(**base), run(**base, **{"policy.mode": "robust"})
    da, db = a.device_rounds, b.device_rounds
    np.testing.assert_array_equal(da["rejected"], db["rejected"])
    np.testing.assert_array_equal(da["gain_ul"], db["gain_ul"])
    sent = db["rejected"] == 1
    assert np.any(da["mode"][sent] != db["mode"][sent])
    assert np.all(np.isfinite(db["delay_s"][sent])) and np.all(db["delay_s"][sent] > 0)
