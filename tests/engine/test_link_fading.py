"""The NR link over each kind of fading: what a correction meets after its first fading block.

A correction on the NR link (``link.model: mcs``) that outlives its fading block, or waits out an
outage or a dropped transport block, meets new fading: the next block of the grid
(``channel.coherence_time_ms``), a retry draw after ``link.retry_block_ms`` (one block per round:
i.i.d., Gauss-Markov or none) or the Jakes process at the later instant.
"""
import math

import numpy as np
from scipy import special

import multispin_sim as ms
from multispin_sim.engine import simulate
from multispin_sim.engine.link import ProcessBlocks, RetryFading, build_channel
from multispin_sim.engine.population import build_population
from multispin_sim.engine.streams import RandomStreams


def _channel(**overrides):
    sc = ms.load_scenario(None, overrides={"devices.count": 4, "link.model": "mcs", **overrides})
    streams = RandomStreams(sc.seed)
    system = build_population(sc, streams.devices, streams.topology, streams.shadowing).system
    coherence = sc.channel.coherence_time_ms
    return build_channel(sc, system, streams, None if coherence is None else coherence * 1e-3,
                         False)


def test_a_coherence_grid_without_fading_leaves_each_delay_law_unchanged():
    """No fading: every block has the same gain, so a correction cut into 2 ms blocks (each
    block re-reports the same SNR and sends its transport blocks one by one) has the delay law of
    the same correction in one block (transport blocks and HARQ attempts drawn in bulk). The
    decisions are the same; the paired differences of the delays have mean 0 (4 standard
    errors)."""
    base = {"devices": {"count": 8}, "run": {"rounds": 1000}, "seed": 4,
            "link": {"model": "mcs"}, "channel": {"fading": "none"}}
    one = simulate(base)
    grid = simulate({**base, "channel": {"fading": "none", "coherence_time_ms": 2.0}})
    a, b = one.device_rounds, grid.device_rounds
    for col in ("mode", "power_w", "bandwidth_hz", "planned_delay_s"):
        assert np.array_equal(a[col], b[col]), col
    rej = a["rejected"] == 1
    # most corrections span several 2 ms blocks, so the grid's path is the one exercised
    assert np.median(b["delay_s"][rej]) > 5 * 2e-3
    assert grid.summary["link"]["harq_failures"] == grid.summary["link"]["outages"] == 0
    d = (b["delay_s"] - a["delay_s"])[rej]
    assert abs(d.mean()) < 4 * d.std(ddof=1) / math.sqrt(d.size)
    assert d.std() > 0   # different draws, not the same path


def test_gauss_markov_retry_is_one_ar1_step_over_the_retry_wait():
    """One block per round, Gauss-Markov fading: a retry meets h' = rho h + sqrt(1 - rho^2) w,
    rho = J0(2 pi f_D T_retry), so E[g' | g] = rho^2 g + (1 - rho^2) G and
    Var[g' | g] = G^2 ((1 - rho^2)^2 + 2 rho^2 (1 - rho^2) g / G) (a non-central chi-square
    of 2 degrees of freedom). Checked over the first retries of 20,000 corrections (their keyed
    streams: rounds 0..19,999 of device 1) at 5 standard errors."""
    ch = _channel(**{"channel.fading": "gauss-markov", "channel.doppler_hz": 20.0,
                     "link.retry_block_ms": 10.0})
    rho = special.j0(2 * math.pi * 20.0 * 0.01)
    assert math.isclose(ch.retry_rho, rho, rel_tol=1e-12)
    pl = float(ch.pathloss[1])
    g = 2.5 * pl
    draws = np.array([RetryFading(ch, r, 1)(g) for r in range(20_000)])
    r2 = rho * rho
    mean = r2 * g + (1 - r2) * pl
    var = pl * pl * ((1 - r2) ** 2 + 2 * r2 * (1 - r2) * g / pl)
    assert abs(draws.mean() - mean) < 5 * math.sqrt(var / draws.size)
    assert abs(draws.var() / var - 1) < 5 * math.sqrt(8 / draws.size)   # 4th moment bound


def test_iid_and_static_retries():
    """I.i.d. Rayleigh: a retry is a fresh Exp(1) draw times the path loss, whatever the gain
    before: the first retries of 10,000 corrections (rounds 0..9,999 of device 0), then 10,000
    retries of one correction; no fading: the gain stays."""
    iid = _channel(**{"channel.fading": "rayleigh"})
    pl = float(iid.pathloss[0])
    one = RetryFading(iid, 0, 0)
    for draws in ([RetryFading(iid, r, 0)(100 * pl) for r in range(10_000)],
                  [one(100 * pl) for _ in range(10_000)]):
        draws = np.array(draws) / pl
        assert abs(draws.mean() - 1) < 5 / math.sqrt(draws.size)
        assert abs(np.mean(draws > 1) - math.exp(-1)) < 5 * math.sqrt(0.25 / draws.size)
    still = _channel(**{"channel.fading": "none"})
    assert RetryFading(still, 0, 2)(0.123) == 0.123


def test_jakes_retry_meets_the_process_at_the_later_instant():
    """Jakes (a process in continuous time): the round's gain holds until a retry, and each
    retry waits ``block_s`` and reads the process at that instant."""
    seen = []

    def sample(t):
        seen.append(t)
        return 10.0 * t

    blocks = ProcessBlocks(0.5, sample, t0=2.0, block_s=0.01)
    assert blocks.current(0.3) == (0.5, math.inf)
    t = blocks.next(0.004)
    assert math.isclose(t, 0.014) and math.isclose(seen[-1], 2.014)
    assert blocks.current(t) == (10.0 * seen[-1], math.inf)
    ch = _channel(**{"channel.fading": "jakes"})
    assert ch.fading_model.continuous and ch.grid is None


def test_nr_link_runs_over_every_fading_with_and_without_a_grid():
    """Every fading model, with one block per round and on a 5 ms grid: the run completes, the
    HARQ records add up, and every correction takes at least one slot."""
    for fading in ("rayleigh", "none", "gauss-markov", "jakes"):
        for coherence in (None, 5.0):
            r = simulate({"devices": {"count": 6}, "run": {"rounds": 120}, "seed": 3,
                          "link": {"model": "mcs"},
                          "channel": {"fading": fading, "coherence_time_ms": coherence}})
            assert r.summary["complete"], (fading, coherence)
            dr = r.device_rounds
            rej = dr["rejected"] == 1
            link = r.summary["link"]
            assert int(dr["harq_transmissions"].sum()) == link["harq_transmissions"]
            assert link["corrections"] == int(rej.sum())
            assert np.all(dr["delay_s"][rej] >= link["slot_s"] * (1 - 1e-12))
