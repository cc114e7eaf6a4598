"""The NR link (``link.model: mcs``) with a multi-antenna server (orthogonal schemes).

- Without fading every element's gain is 1, so the array gain is M G: the run equals the
  one-antenna run at M times the powers (the link reads SNR = p g / N only) decision by
  decision, HARQ attempt by HARQ attempt, delay by delay (rtol 1e-9).
- A retry on a new fading block (one block per round) meets a new vector: i.i.d. draws have the
  array covariance R and ||h||^2 ~ Gamma(M, 1) (rho = 0); Gauss-Markov steps keep that law and
  correlate each element with the last block's by rho = J0(2 pi f_D T_retry).
- The HARQ records add up to the link's totals with retries and outages, on a grid of fading
  blocks too.
"""
import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import j0

import multispin_sim as ms
from multispin_sim.engine.link import build_channel
from multispin_sim.engine.population import build_population
from multispin_sim.engine.streams import RandomStreams
from multispin_sim.model.antennas import exponential_correlation

P_MIN = 1e-3


def run(overrides):
    return ms.simulate(ms.load_scenario(None, overrides=overrides))


def _channel(**overrides):
    sc = ms.load_scenario(None, overrides={"devices.count": 4, "link.model": "mcs", **overrides})
    streams = RandomStreams(sc.seed)
    system = build_population(sc, streams.devices, streams.topology, streams.shadowing).system
    return build_channel(sc, system, streams, None, False)


def test_m_antennas_without_fading_are_one_antenna_at_m_times_the_power():
    m = 4
    base = {"devices.count": 6, "link.model": "mcs", "channel.fading": "none",
            "devices.distance_m": [300, 900], "run.rounds": 200, "seed": 4}
    array = run({**base, "server.antennas": m})
    one = run({**base, "devices.ul_power_dbm": 10 + 10 * math.log10(m)})   # P_dl = 4 P_ul both
    a, b = array.device_rounds, one.device_rounds
    np.testing.assert_allclose(a["gain_ul"], m * b["gain_ul"], rtol=1e-12)
    assert (a["mode"] == b["mode"]).all() and (a["draft_len"] == b["draft_len"]).all()
    np.testing.assert_array_equal(a["harq_transmissions"], b["harq_transmissions"])
    np.testing.assert_allclose(a["delay_s"], b["delay_s"], rtol=1e-9, atol=0)
    assert (a["delay_s"] > 0).sum() > 300 and a["harq_transmissions"].sum() > 1000


@pytest.mark.parametrize("rho", [0.0, 0.6])
def test_iid_retries_draw_vectors_of_the_array_law(rho):
    m, n = 4, 4000
    ch = _channel(**{"server.antennas": m, "server.antenna_correlation": rho})
    rng = np.random.default_rng(1)
    g0 = float(ch.pathloss[2])
    draws = [ch.retry_vector(rng, 2, None) for _ in range(n)]
    h = np.array([d[1] for d in draws])
    cov = h.T @ h.conj() / n
    assert np.abs(cov - exponential_correlation(m, rho)).max() < 5 / math.sqrt(n)
    x = np.array([d[0] for d in draws]) / g0
    np.testing.assert_allclose(x, np.linalg.norm(h, axis=1) ** 2, rtol=1e-12)
    if rho == 0:
        assert stats.kstest(x, stats.gamma(m).cdf).pvalue > P_MIN


def test_gauss_markov_retries_step_every_element():
    m, n, f_d = 4, 6000, 10.0
    ch = _channel(**{"server.antennas": m, "server.antenna_correlation": 0.5,
                     "channel.fading": "gauss-markov", "channel.doppler_hz": f_d})
    rho = j0(2 * np.pi * f_d * ch.retry_block_s)
    assert ch.retry_rho == pytest.approx(rho, rel=1e-12) and 0.5 < rho < 0.99
    rng = np.random.default_rng(2)
    h = [ch.retry_vector(rng, 0, np.zeros(m, dtype=complex))[1]]   # from 0: one innovation
    for _ in range(n):
        h.append(ch.retry_vector(rng, 0, h[-1])[1])
    h = np.array(h)
    cov = h.T @ h.conj() / len(h)
    # an AR(1) series of n terms: its lag-1 correlation has sd about sqrt((1 - rho^2) / n),
    # its variance sd about sqrt((1 + rho^2) / (1 - rho^2) / n); m elements pooled (correlated
    # across the array: counted as one)
    lag = np.mean(h[1:] * h[:-1].conj()).real
    assert abs(lag - rho) < 5 * math.sqrt((1 - rho ** 2) / n) + 5 * math.sqrt(
        (1 + rho ** 2) / (1 - rho ** 2) / n) * rho
    assert np.abs(cov - exponential_correlation(m, 0.5)).max() < 5 * math.sqrt(
        (1 + rho ** 2) / (1 - rho ** 2) / n)


@pytest.mark.parametrize("extra", [{}, {"channel.coherence_time_ms": 4.0,
                                        "csi.cqi_quantisation": True}])
def test_harq_records_add_up_with_retries_and_outages(extra):
    r = run({"devices.count": 5, "server.antennas": 2, "link.model": "mcs",
             "devices.distance_m": [700, 1100], "run.rounds": 150, "seed": 3, **extra})
    d, link = r.device_rounds, r.summary["link"]
    assert r.summary["complete"]
    assert int(d["harq_transmissions"].sum()) == link["harq_transmissions"]
    assert int(d["outages"].sum()) == link["outages"]
    assert int(d["harq_failures"].sum()) == link["harq_failures"]
    sent = d["mode"] != ""
    assert (d["harq_transmissions"][sent] >= 1).all()
    assert link["outages"] + link["harq_failures"] > 0   # retries on new blocks happened
