"""Time-correlated fading, fading blocks shorter than a round, and shadowing.

- Gauss-Markov fading keeps |h|^2 ~ Exp(1) (KS) and the lag correlation of |h|^2 equals
  J0(2 pi f_D dt)^2: in the model, on the coherence-time grid, and in the engine across rounds.
- A correction longer than the coherence time delivers exactly its payload: the sum over its
  blocks of rate x time in the block equals the bits (recomputed from an independent copy of
  the block process); its first block is the decision's CSI.
- Log-normal shadowing has the configured spread; the default path is unchanged.
"""
import math

import numpy as np
import pytest
import simpy
from scipy import stats
from scipy.special import j0

import multispin_sim as ms
from multispin_sim.engine.channel import OFDMAChannel
from multispin_sim.model.fading import GridFading
from multispin_sim.engine.streams import RandomStreams
from multispin_sim.model.fading import (complex_gaussian, gauss_markov_series, gauss_markov_step,
                                        jakes_correlation, power, small_scale_powers,
                                        time_to_deliver)
from multispin_sim.model.rates import shannon_rate
from multispin_sim.model.reactive import DL, UL

P_MIN = 1e-3


def run(overrides, **kw):
    return ms.simulate(ms.load_scenario(None, overrides=overrides), **kw)


def lag_corr(x, lag=1):
    """Correlation of x[n] and x[n + lag] along axis 0, pooled over the other axes."""
    a, b = x[:-lag].ravel(), x[lag:].ravel()
    return float(np.corrcoef(a, b)[0, 1])


def corr_tolerance(n, r):
    """~4.5 standard errors of a sample correlation of |h|^2 (Exp marginals are skewed, so the
    normal-theory SE (1 - r^2)/sqrt(n) is widened by 2)."""
    return 4.5 * 2 * (1 - r * r) / math.sqrt(n) + 1e-3


# ------------------------------------------------------------------------------- model

def test_jakes_correlation_is_j0():
    assert jakes_correlation(10.0, 0.0) == 1.0
    assert jakes_correlation(10.0, 0.01) == pytest.approx(j0(2 * np.pi * 0.1), rel=1e-15)
    # first zero of J0 at 2.404826: f_D dt = 0.382740
    assert abs(jakes_correlation(1.0, 2.404825557695773 / (2 * np.pi))) < 1e-12


@pytest.mark.parametrize("rho", [0.95, 0.5, -0.3])
def test_gauss_markov_series_marginal_and_lag_correlation(rho):
    rng = np.random.default_rng(1)
    n, k = 20000, 4
    h0 = complex_gaussian(rng, k)
    w = complex_gaussian(rng, (n, k))
    h = gauss_markov_series(h0, rho, w)
    # the series is the step recursion
    step = gauss_markov_step(gauss_markov_step(h0, rho, w[0]), rho, w[1])
    np.testing.assert_allclose(h[1], step, rtol=1e-12)
    p = power(h)
    assert stats.kstest(p[::25, 0], "expon").pvalue > P_MIN  # thinned: ~independent samples
    for lag in (1, 2):
        target = rho ** (2 * lag)
        assert abs(lag_corr(p, lag) - target) < corr_tolerance(p.size, rho**lag)


def test_gauss_markov_grid_blocks():
    f_d, block = 5.0, 0.02  # rho = J0(2 pi 0.1) = 0.9037
    rho = j0(2 * np.pi * f_d * block)
    grid = GridFading(7, 3, "gauss-markov", False, f_d, block, chunk=512)
    ul, dl = grid.powers(0, 6000)
    assert stats.kstest(ul[::40].ravel(), "expon").pvalue > P_MIN
    assert stats.kstest(dl[::40].ravel(), "expon").pvalue > P_MIN
    assert abs(lag_corr(ul) - rho**2) < corr_tolerance(ul.size, rho)
    assert abs(lag_corr(ul, 3) - rho**6) < corr_tolerance(ul.size, rho**3)
    assert abs(np.corrcoef(ul.ravel(), dl.ravel())[0, 1]) < 4 / math.sqrt(ul.size) * 2
    # a block's value depends on its index only: another instance read in another order agrees
    other = GridFading(7, 3, "gauss-markov", False, f_d, block, chunk=512)
    np.testing.assert_array_equal(other.at(4000), (ul[4000], dl[4000]))
    a, b = other.powers(5990, 6000)
    np.testing.assert_array_equal(a, ul[5990:6000])
    # reciprocal draws the same UL sequence
    rec = GridFading(7, 3, "gauss-markov", True, f_d, block, chunk=512)
    r_ul, r_dl = rec.powers(0, 1500)
    np.testing.assert_array_equal(r_ul, ul[:1500])
    assert r_dl is r_ul or np.array_equal(r_dl, r_ul)


def test_iid_grid_blocks_are_exponential_and_independent():
    grid = GridFading(3, 4, "rayleigh", True, 0.0, 0.01, chunk=256)
    ul, _ = grid.powers(0, 5000)
    assert stats.kstest(ul.ravel()[::3], "expon").pvalue > P_MIN
    assert abs(lag_corr(ul)) < 4.5 / math.sqrt(ul.size)
    skip = GridFading(3, 4, "rayleigh", True, 0.0, 0.01, chunk=256)
    np.testing.assert_array_equal(skip.at(4321), (ul[4321], ul[4321]))  # chunks computed alone


def test_large_gaps_are_bridged_in_distribution():
    grid = GridFading(11, 2000, "gauss-markov", True, 1.0, 0.001, chunk=64, max_gap=4)
    first, _ = grid.powers(0, 1)
    later, _ = grid.powers(64 * 50, 64 * 50 + 1)  # 50 chunks ahead: one AR(1) jump
    rho = j0(2 * np.pi * 1.0 * 0.001) ** (64 * 50)
    assert abs(np.corrcoef(first[0], later[0])[0, 1] - rho**2) < 4.5 * 2 / math.sqrt(2000)
    assert stats.kstest(later[0], "expon").pvalue > P_MIN


def test_time_to_deliver():
    # 1000 bits: 300 in the first (partial) block, 400 in the second, 300 of 800 in the third
    rates, durations = [3000.0, 4000.0, 8000.0, 1.0], [0.1, 0.1, 0.1, 0.1]
    t, used, _ = time_to_deliver(1000.0, rates, durations)
    assert used == 3 and t == pytest.approx(0.2 + 300 / 8000.0, rel=1e-14)
    assert time_to_deliver(10.0, [1.0, 1.0], [1.0, 1.0])[:2] == (math.inf, 2)
    assert time_to_deliver(1.0, [2.0], [1.0])[:2] == (0.5, 1)
    # read in chunks (a block, then the rest): the same time and blocks, to the last bit
    t1, used1, carried = time_to_deliver(1000.0, rates[:1], durations)
    assert (t1, used1, carried) == (math.inf, 1, 300.0)
    assert time_to_deliver(1000.0, rates[1:], durations, 1, carried)[:2] == (t, used)


# ------------------------------------------------------------------------------- engine

def test_engine_gauss_markov_across_rounds():
    """Rounds of a fixed 50 ms (2-bit payload at 10 m): the round blocks' |h|^2 are Exp(1) with
    lag correlation J0(2 pi f_D 50 ms)^2."""
    f_d = 3.5
    r = run({"devices.count": 5, "devices.distance_m": 10.0, "devices.draft_latency_ms": 5.0,
             "devices.draft_latency_spread": [1, 1], "server.verify_fixed_ms": 30.0,
             "payload.effective_vocab": 1, "payload.vocab": 2, "payload.prob_bits": 1,
             "channel.fading": "gauss-markov", "channel.doppler_hz": f_d, "run.rounds": 4000,
             "seed": 21, "server.verify_per_device_ms": 0.0})
    dt = np.diff(r.rounds["start_s"])
    np.testing.assert_allclose(dt, 0.05, rtol=1e-5)
    dr, dev = r.device_rounds, r.devices
    h = (dr["gain_ul"] / dev["pathloss_gain"][dr["device"]]).reshape(-1, 5)
    rho = j0(2 * np.pi * f_d * 0.05)
    assert stats.kstest(h[::30].ravel(), "expon").pvalue > P_MIN
    assert abs(lag_corr(h) - rho**2) < corr_tolerance(h.size, rho)
    assert abs(lag_corr(h, 2) - rho**4) < corr_tolerance(h.size, rho**2)


@pytest.fixture(scope="module")
def block_run():
    """Pedestrian-like: 20 ms blocks, rounds of ~0.2 s: corrections often outlast their block."""
    return run({"devices.count": 6, "channel.fading": "gauss-markov", "channel.doppler_hz": 10.0,
                "channel.coherence_time_ms": 20.0, "channel.reciprocal": False,
                "run.rounds": 400, "seed": 5, "policy.mode": "random"})


def test_long_transmissions_deliver_the_sum_over_their_blocks(block_run):
    r = block_run
    rounds, dr, dev = r.rounds, r.device_rounds, r.devices
    sysm = r.population.system
    block = 0.02
    entropy = RandomStreams(r.scenario.seed).fading.integers(2**63)
    grid = GridFading(entropy, 6, "gauss-markov", False, 10.0, block)
    t0 = (rounds["start_s"] + rounds["draft_s"] + rounds["verify_s"])[dr["round"]]
    rej = dr["rejected"].astype(bool)
    long = 0
    for i in np.flatnonzero(rej):
        k, start, delay = dr["device"][i], t0[i], dr["delay_s"][i]
        n0 = math.floor(start / block)
        n1 = math.floor((start + delay) / block) + 1
        ul, dl = grid.powers(n0, n1)
        h = (ul if dr["mode"][i] == "ul" else dl)[:, k]
        # the first block is the decision's CSI (the recorded gains)
        g_rec = dr["gain_ul"][i] if dr["mode"][i] == "ul" else dr["gain_dl"][i]
        assert dev["pathloss_gain"][k] * h[0] == pytest.approx(g_rec, rel=1e-12)
        rate = shannon_rate(dr["bandwidth_hz"][i], dr["power_w"][i], dev["pathloss_gain"][k] * h, sysm.n0)
        edges = np.arange(n0, n1 + 1) * block
        overlap = np.clip(np.minimum(edges[1:], start + delay) - np.maximum(edges[:-1], start), 0, None)
        assert float(rate @ overlap) == pytest.approx(sysm.payload_bits, rel=1e-9)
        long += n1 - n0 > 1
        if n1 - n0 == 1:
            assert delay == dr["planned_delay_s"][i]
    assert long > 100
    # realised and planned differ for multi-block corrections; the summary says how much
    d = r.summary["delays"]
    assert d["corrections"] == rej.sum() == d["transmissions"]
    assert d["over_several_blocks"] == long
    ratio = dr["delay_s"][rej] / dr["planned_delay_s"][rej]
    assert d["longer_than_planned"] == pytest.approx((ratio > 1).mean(), abs=1e-12)
    assert d["realised_over_planned"]["median"] == pytest.approx(np.median(ratio), rel=1e-5)
    # the round waits for its slowest correction as realised
    k = r.scenario.devices.count
    comm = np.zeros(rounds["round"].size)
    np.maximum.at(comm, dr["round"], dr["delay_s"])
    np.testing.assert_allclose(rounds["comm_s"], comm, rtol=1e-12)
    np.testing.assert_allclose(rounds["duration_s"], rounds["draft_s"] + rounds["verify_s"] + comm, rtol=1e-9)
    assert k == 6


def test_channel_transmit_accumulates_over_blocks():
    """The SimPy side alone: a transmission from mid-block, compared with the blocks' sum."""
    sc = ms.load_scenario(None, overrides={"devices.count": 2, "channel.coherence_time_ms": 1.0})
    from multispin_sim.engine.population import build_population

    streams = RandomStreams(3)
    pop = build_population(sc, streams.devices)
    ch = OFDMAChannel(pop.system, streams.fading, "rayleigh", True, coherence_s=1e-3)
    env = simpy.Environment()
    out = {}

    def proc(mode):
        yield env.timeout(0.0123)
        g_ul, g_dl = ch.csi(env.now)
        out[mode] = yield from ch.transmit(env, 1, mode, 0.01, 1e5, 1e9)  # planned: very long

    env.process(proc(UL))
    env.run()
    delay = out[UL]
    n0, n1 = 12, math.floor((0.0123 + delay) / 1e-3) + 1
    ul, _ = ch.grid.powers(n0, n1)
    rate = shannon_rate(1e5, 0.01, pop.system.pathloss[1] * ul[:, 1], pop.system.n0)
    edges = np.arange(n0, n1 + 1) * 1e-3
    overlap = np.clip(np.minimum(edges[1:], 0.0123 + delay) - np.maximum(edges[:-1], 0.0123), 0, None)
    assert float(rate @ overlap) == pytest.approx(pop.system.payload_bits, rel=1e-9)
    assert n1 - n0 > 3 and ch.multi_block == 1 and DL != UL


def test_long_coherence_time_realises_the_plan():
    r = run({"devices.count": 5, "channel.coherence_time_ms": 1e9, "run.rounds": 200})
    dr = r.device_rounds
    np.testing.assert_array_equal(dr["delay_s"], dr["planned_delay_s"])
    d = r.summary["delays"]
    assert d["over_several_blocks"] == 0 and d["longer_than_planned"] == 0
    # one block for the whole run: every round sees the same gains
    g = dr["gain_ul"].reshape(-1, 5)
    assert np.all(g == g[0])


def test_iid_fading_in_blocks_is_exponential():
    r = run({"devices.count": 4, "channel.coherence_time_ms": 5.0, "run.rounds": 1500, "seed": 8})
    dr, dev = r.device_rounds, r.devices
    h = dr["gain_ul"] / dev["pathloss_gain"][dr["device"]]
    assert stats.kstest(h, "expon").pvalue > P_MIN


def test_shadowing_spread():
    r = run({"devices.count": 400, "channel.shadowing_db": 6.0, "run.rounds": 2})
    dev = r.devices
    sc = r.scenario
    plain = 10 ** (sc.channel.ref_gain_db / 10) * dev["distance_m"] ** -sc.channel.pathloss_exponent
    x_db = 10 * np.log10(dev["pathloss_gain"] / plain)
    assert stats.kstest(x_db / 6.0, "norm").pvalue > P_MIN
    # the devices stream is untouched: distances as without shadowing
    r0 = run({"devices.count": 400, "run.rounds": 2})
    np.testing.assert_array_equal(r0.devices["distance_m"], dev["distance_m"])


def test_default_rayleigh_path_unchanged():
    """The i.i.d. per-round channel still takes 2K exponentials per round from the fading stream."""
    r = run({"devices.count": 3, "run.rounds": 50, "seed": 4})
    streams = RandomStreams(4)
    h_ul, _ = small_scale_powers(streams.fading, (1024, 3))
    dr, dev = r.device_rounds, r.devices
    np.testing.assert_array_equal(dr["gain_ul"].reshape(-1, 3), dev["pathloss_gain"] * h_ul[:50])
    assert "delays" not in r.summary and "planned_delay_s" not in dr
