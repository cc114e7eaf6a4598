"""Fading blocks on a time grid with a multi-antenna server (exact channel vectors).

- Orthogonal schemes: a correction that outlasts its block delivers exactly its payload: the
  sum over its blocks of rate x time in the block equals the bits, each block's rate Shannon's
  at the array gain G ||h||^2 of that block's vectors (read from a second channel built from
  the same seed, the norms taken here); its first block is the decision's CSI.
- A shared band: each ZF and MMSE stream delivers its payload at each block's SINR (the
  formulas written here), its set's streams counted until the set ends, ZF groups in turn.
- The array gains the decisions see follow the array gain's law, Gamma(M, 1) for i.i.d.
  elements, one value per block.
- Blocks longer than the run realise every plan and hold one channel throughout.
"""
import math

import numpy as np
import pytest
from scipy import stats

import multispin_sim as ms
from multispin_sim.engine.link import build_channel
from multispin_sim.engine.population import build_population
from multispin_sim.engine.streams import RandomStreams
from multispin_sim.model.rates import shannon_rate

P_MIN = 1e-3


def run(overrides):
    return ms.simulate(ms.load_scenario(None, overrides=overrides))


def _same_channel(result):
    """A second channel built as the run built its own: the same vectors (and estimates)."""
    sc = result.scenario
    streams = RandomStreams(sc.seed)
    system = build_population(sc, streams.devices, streams.topology, streams.shadowing).system
    block_ms = sc.channel.coherence_time_ms
    return build_channel(sc, system, streams, None if block_ms is None else block_ms * 1e-3,
                         False)


def _replayed(result, truth=None):
    """(a fresh channel for the blocks' vectors, per round the (UL, DL) estimated gains with
    their vectors): another channel asked for the CSI of every round start and decision (the
    synchronous protocol's); ``truth``: a list to receive the true (UL, DL) gains each
    decision saw estimated."""
    ch, rounds = _same_channel(result), result.rounds
    seen = []
    for start, decided in zip(rounds["start_s"],
                              rounds["start_s"] + rounds["draft_s"] + rounds["verify_s"]):
        ch.new_block(float(start))
        seen.append(ch.csi(float(decided)))
        if truth is not None:
            truth.append((np.array(ch.g_ul), np.array(ch.g_dl)))
    return _same_channel(result), seen


@pytest.mark.parametrize("fading", ["gauss-markov", "jakes"])
def test_corrections_deliver_their_bits_over_the_blocks_array_gains(fading):
    k, m, block = 6, 4, 0.02
    r = run({"devices.count": k, "server.antennas": m, "server.antenna_correlation": 0.5,
             "channel.fading": fading, "channel.doppler_hz": 10.0, "channel.reciprocal": False,
             "channel.coherence_time_ms": block * 1e3, "policy.mode": "random",
             "run.rounds": 300, "seed": 5})
    rounds, dr, dev = r.rounds, r.device_rounds, r.devices
    grid = _same_channel(r).grid
    n0_w = r.population.system.n0
    t0 = (rounds["start_s"] + rounds["draft_s"] + rounds["verify_s"])[dr["round"]]
    long = 0
    for i in np.flatnonzero(dr["rejected"].astype(bool)):
        d, start, delay, dl = dr["device"][i], t0[i], dr["delay_s"][i], dr["mode"][i] == "dl"
        n0 = math.floor(start / block)
        n1 = math.floor((start + delay) / block) + 1
        if fading == "jakes":     # the process at the start, then at each block boundary
            times = np.concatenate(([start], np.arange(n0 + 1, n1) * block))
            h = np.array([grid.powers_at(t)[1 if dl else 0][d] for t in times])
        else:
            ul_v, dl_v = grid.powers(n0, n1)
            h = (dl_v if dl else ul_v)[:, d]
        gain = dev["pathloss_gain"][d] * np.linalg.norm(h, axis=-1) ** 2
        assert gain[0] == pytest.approx(dr["gain_dl" if dl else "gain_ul"][i], rel=1e-12)
        rate = shannon_rate(dr["bandwidth_hz"][i], dr["power_w"][i], gain, n0_w)
        assert_set_delivers(rate[:, None], np.arange(n0, n1 + 1) * block, start,
                            [start + delay], r.population.system.payload_bits)
        long += n1 - n0 > 1
        if n1 - n0 == 1 and fading != "jakes":
            assert delay == dr["planned_delay_s"][i]
    assert long > 50
    d = r.summary["delays"]
    assert d["over_several_blocks"] == long and d["transmissions"] == d["corrections"]
    # the array's records: each stream on air for its whole delay
    rej = dr["rejected"].astype(bool)
    np.testing.assert_allclose(dr["airtime_s"][rej], dr["delay_s"][rej], rtol=1e-12)


def test_the_decisions_gains_have_the_array_gains_law():
    m, k = 4, 4
    r = run({"devices.count": k, "server.antennas": m, "channel.coherence_time_ms": 5.0,
             "run.rounds": 800, "seed": 8})
    dr, dev = r.device_rounds, r.devices
    h = np.unique(dr["gain_ul"] / dev["pathloss_gain"][dr["device"]])   # one value per block
    assert h.size > 0.9 * dr["gain_ul"].size
    assert stats.kstest(h, stats.gamma(m).cdf).pvalue > P_MIN


def test_blocks_longer_than_the_run_realise_every_plan():
    r = run({"devices.count": 5, "server.antennas": 4, "channel.coherence_time_ms": 1e9,
             "run.rounds": 200})
    dr = r.device_rounds
    np.testing.assert_array_equal(dr["delay_s"], dr["planned_delay_s"])
    assert r.summary["delays"]["over_several_blocks"] == 0
    g = dr["gain_ul"].reshape(-1, 5)
    assert np.all(g == g[0])
    # a shared band: each set worked out again over its one block, as planned (rtol 1e-9)
    r = run({"devices.count": 6, "server.antennas": 2, "server.dl_scheme": "mu-mimo-zf",
             "server.ul_scheme": "mu-mimo-mmse", "channel.coherence_time_ms": 1e9,
             "run.rounds": 100})
    dr = r.device_rounds
    np.testing.assert_allclose(dr["delay_s"], dr["planned_delay_s"], rtol=1e-9, atol=0)
    assert r.summary["delays"]["over_several_blocks"] == 0


def _zf_sinr(a, est, p, noise):
    """Zero-forcing on the estimates est (n, M) (est = a: the group's own vectors): unit-norm
    columns of E^T (E^* E^T)^-1, each stream meeting its group mates' leakage through the true
    vectors a; with est = a, p_k / (noise [(A^H A)^-1]_kk)."""
    if est is a:
        return p / (noise * np.real(np.diag(np.linalg.inv(a.conj() @ a.T))))
    w = est.T @ np.linalg.inv(est.conj() @ est.T)
    w = w / np.linalg.norm(w, axis=0)
    leak = np.abs(a.conj() @ w) ** 2 * p[None, :]
    signal = np.diag(leak)
    return signal / (noise + leak.sum(axis=1) - signal)


def _mmse_sinr(a, est, p, noise):
    """The MMSE combiner of the estimates (est = a: the true vectors),
    w_k = (noise I + sum_j p_j e_j e_j^H)^-1 e_k, over the true vectors:
    p_k |w_k^H a_k|^2 / (sum_{j != k} p_j |w_k^H a_j|^2 + noise ||w_k||^2); with est = a,
    p_k a_k^H (noise I + sum_{j != k} p_j a_j a_j^H)^-1 a_k."""
    out = []
    for k in range(len(a)):
        if est is a:
            c = noise * np.eye(a.shape[1], dtype=complex)
            for j in range(len(a)):
                if j != k:
                    c += p[j] * np.outer(a[j], a[j].conj())
            out.append(p[k] * np.real(a[k].conj() @ np.linalg.solve(c, a[k])))
            continue
        c = noise * np.eye(a.shape[1], dtype=complex) + (est.T * p) @ est.conj()
        w = np.linalg.solve(c, est[k])
        leak = np.abs(w.conj() @ a.T) ** 2 * p
        out.append(leak[k] / (leak.sum() - leak[k] + noise * np.vdot(w, w).real))
    return np.array(out)


@pytest.mark.parametrize("fading, m, protocol, k, s2", [
    ("rayleigh", 2, "synchronous", 8, 0.0), ("gauss-markov", 2, "synchronous", 8, 0.0),
    ("rayleigh", 1, "synchronous", 8, 0.0), ("gauss-markov", 2, "asynchronous", 12, 0.0),
    ("gauss-markov", 2, "synchronous", 8, 0.1)])
def test_shared_band_sets_deliver_their_bits_at_each_blocks_sinr(fading, m, protocol, k, s2):
    """ZF groups (DL) and the MMSE set (UL) of each round (or batch): each block's precoder and
    combiner follow that block's vectors (formulas written here; with an estimated channel, in
    a set's first block the decision's estimates, read from a second channel asked the run's
    CSI), the powers stay the decided ones, every stream of a set counted until its set ends;
    each stream delivers its payload over its time on air, and ZF groups take their turns."""
    block = 0.004
    r = run({"devices.count": k, "server.antennas": m, "server.dl_scheme": "mu-mimo-zf",
             "server.ul_scheme": "mu-mimo-mmse", "channel.fading": fading,
             "channel.doppler_hz": 30.0, "channel.coherence_time_ms": block * 1e3,
             "csi.estimation_error_variance": s2,
             "policy.mode": "random", "run.rounds": 100 if k == 8 else 200, "seed": 2,
             "serving.protocol": protocol})
    rounds, dr, dev = r.rounds, r.device_rounds, r.devices
    grid = _same_channel(r).grid
    seen = _replayed(r)[1] if s2 else None
    system = r.population.system
    # when each round's (batch's) corrections start: after its verification
    t0 = np.empty(rounds["round"].max() + 1)
    t0[rounds["round"]] = rounds["start_s"] + rounds["duration_s"] - rounds["comm_s"]
    sent = dr["rejected"].astype(bool)
    long = checked = turns = 0
    for rnd in np.unique(dr["round"][sent]):
        rows = np.flatnonzero(sent & (dr["round"] == rnd))
        starts = t0[rnd] + dr["delay_s"][rows] - dr["airtime_s"][rows]
        for mode in ("ul", "dl"):
            on = rows[dr["mode"][rows] == mode]
            own = starts[dr["mode"][rows] == mode]
            keys = np.round(own, 12)   # the streams of a set (or a ZF group) start together
            # the UL set starts with the round's corrections; ZF groups take turns, each from
            # the end of the one before
            turn = t0[rnd]
            turns += max(len(np.unique(keys)) - 1, 0)
            for s in np.unique(keys):
                assert s == pytest.approx(turn, abs=1e-9)
                turn = float(np.max(t0[rnd] + dr["delay_s"][on[keys == s]]))
            for s in np.unique(keys):          # a set (UL) or a ZF group (DL): one start
                g = on[keys == s]
                devs = dr["device"][g]
                start = float(own[keys == s].min())   # not the key: 1e-12 s moves 1e-9 of bits
                end = float(np.max(t0[rnd] + dr["delay_s"][g]))
                n0, n1 = math.floor(start / block), math.floor(end / block * (1 - 1e-12)) + 1
                ul_v, dl_v = grid.powers(n0, n1)   # one antenna: powers, so sqrt(|h|^2)
                h = (dl_v if mode == "dl" else ul_v)[:, devs]
                h = np.sqrt(h)[..., None] if m == 1 else h
                a = h * np.sqrt(dev["pathloss_gain"][devs])[None, :, None]
                b = dr["bandwidth_hz"][g][0] * len(on)   # the link's whole set pools its band
                noise = system.n0 * b
                est = None if seen is None else seen[rnd][1 if mode == "dl" else 0].vectors[devs]
                sinr = np.array([(_zf_sinr if mode == "dl" else _mmse_sinr)(
                    x, x if j or est is None else est, dr["power_w"][g], noise)
                    for j, x in enumerate(a)])
                rate = b * np.log2(1 + sinr)                    # (blocks, streams)
                assert_set_delivers(rate, np.arange(n0, n1 + 1) * block, start,
                                    t0[rnd] + dr["delay_s"][g], system.payload_bits)
                checked += len(g)
                long += n1 - n0 > 1
    assert checked > 80 and long > 20 and turns > 5, (checked, long, turns)


def assert_set_delivers(rate, edges, start, stops, bits):
    """Each stream i of a set started at ``start`` and ended at stops[i], at rate[j, i] in the
    block between edges[j] and edges[j + 1], delivered ``bits`` (rtol 1e-9)."""
    for i, stop in enumerate(stops):
        overlap = np.clip(np.minimum(edges[1:], stop) - np.maximum(edges[:-1], start), 0, None)
        assert float(rate[:, i] @ overlap) == pytest.approx(bits, rel=1e-9)
