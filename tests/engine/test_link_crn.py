"""Common random numbers on the NR link: a correction's HARQ errors and retry fading are keyed by
its round (or batch) and device, not drawn in transmission order from one stream.

Two runs that differ only in the policy send different sets of corrections; a correction whose
situation is the same in both (round, device, mode, PRBs, power, gain) must then meet the same
errors, the same retry fading and so the same delay. The keyed draws must keep the link's laws:
the attempts of a transport block follow the BLER curve, and draws of different keys are
independent.
"""
import math

import numpy as np
import pytest

from multispin_sim.engine import simulate
from multispin_sim.engine.link import CorrectionUniforms
from multispin_sim.engine.streams import KeyedStreams
from multispin_sim.model.link import IidBlocks, McsLink

_SAME_SITUATION = ("mode", "bandwidth_hz", "power_w", "gain_ul", "gain_dl")
_OUTCOME = ("harq_transmissions", "harq_failures", "outages", "delay_s")


def _paired(a, b):
    """Row pairs (i in a, j in b) of the same (round, device) with a correction sent in the same
    situation in both runs."""
    at = {(r, d): i for i, (r, d) in enumerate(zip(a["round"], a["device"]))}
    pairs = []
    for j, key in enumerate(zip(b["round"], b["device"])):
        i = at.get(key)
        if i is None or a["mode"][i] == "":
            continue
        if all(a[c][i] == b[c][j] for c in _SAME_SITUATION):
            pairs.append((i, j))
    return pairs


@pytest.mark.parametrize("protocol, k, rounds, fading, fewest", [
    ("synchronous", 20, 300, "rayleigh", 1000),
    ("asynchronous", 8, 1000, "rayleigh", 60),
])
def test_a_correction_in_the_same_situation_meets_the_same_link_whatever_the_policy(
        protocol, k, rounds, fading, fewest):
    """All-UL with draft length 4 against 5 (the draft length changes who is rejected, so the
    number of corrections and HARQ draws before a given one): every correction sent in the same
    situation in both runs has the same HARQ transmissions, failures, outages and delay. On one
    stream in transmission order many differed (the audit: 492 of 1,295 synchronous rounds)."""
    base = {"seed": 1, "model_pair": "qwen2.5", "devices": {"count": k},
            "server": {"dl_power_ratio": 4}, "run": {"rounds": rounds},
            "channel": {"fading": fading}, "link": {"model": "mcs"},
            "serving": {"protocol": protocol}}
    a = simulate({**base, "policy": {"mode": "all-ul", "draft_length": 4}}).device_rounds
    b = simulate({**base, "policy": {"mode": "all-ul", "draft_length": 5}}).device_rounds
    pairs = _paired(a, b)
    assert len(pairs) >= fewest
    i, j = map(list, zip(*pairs))
    for col in _OUTCOME:
        assert np.array_equal(a[col][i], b[col][j]), col
    # the paired corrections include HARQ retransmissions (and, with fading, waits for a new
    # block after an outage)
    assert np.any(a["harq_transmissions"][i] > np.round(a["planned_delay_s"][i] / 5e-4))
    if fading != "none":
        assert np.any(a["outages"][i] > 0)


def test_keyed_harq_attempts_follow_the_bler_curve_and_keys_are_independent():
    """One transport block per correction, adapted on a report just above CQI 7's switching
    point and sent at a true SNR 0.5 dB below that MCS's 10%-BLER threshold thr, over 4,000 keys
    (200 rounds x 20 devices). Chase combining: attempt m fails with
    BLER(m snr) = 1 / (1 + 9 exp(a (10 log10(m snr) - thr))), a = ln 81 / 1 dB, given the earlier
    failures, so P(exactly m attempts) = prod_{j<m} BLER(j snr) (1 - BLER(m snr)) and P(more than
    4) the product of all four. Each frequency is binomial: within 5 standard errors
    sqrt(p (1 - p) / n) (+ 1e-3 for a near-empty cell). Neighbouring keys (devices d and d + 1 of
    a round; round r and r + 1 of a device) are independent: the correlation of their
    first-attempt failures is within 5 / sqrt(n) of 0 (its standard error under independence)."""
    link = McsLink(10e6, 10 ** (-174 / 10) * 1e-3, harq_max=4, combining="chase")
    n_prb, cqi = 4, 7
    thr = float(link.thr_db[cqi - 1])
    reported = 10 ** ((float(link.switch_db[cqi - 1]) + 0.01) / 10)
    tbs = int(link.tbs[cqi - 1, n_prb])
    snr = 10 ** ((thr - 0.5) / 10)
    gain = snr * link.noise_w(n_prb)
    streams = KeyedStreams(np.random.default_rng(11), 20)
    rounds, k = 200, 20
    used = np.zeros((rounds, k), dtype=np.int64)
    for r in range(rounds):
        for d in range(k):
            out = link.deliver(tbs, n_prb, 1.0, reported, IidBlocks(gain, lambda g: g, 0.01),
                               CorrectionUniforms(streams, r, d))
            used[r, d] = out.transmissions
    a = math.log(81.0)
    fail = [1.0 / (1.0 + 9.0 * math.exp(a * (10 * math.log10(m * snr) - thr)))
            for m in range(1, 5)]
    assert math.isclose(fail[0], 0.5)   # thr - 0.5 dB: half the first attempts fail
    n = used.size
    survive = 1.0
    for m in range(1, 5):
        p = survive * (1.0 - fail[m - 1])
        got = np.mean(used == m)
        assert abs(got - p) < 5 * math.sqrt(p * (1 - p) / n) + 1e-3, (m, got, p)
        survive *= fail[m - 1]
    got = np.mean(used > 4)
    assert abs(got - survive) < 5 * math.sqrt(survive * (1 - survive) / n) + 1e-3
    first = (used > 1).astype(float)
    for x, y in ((first[:, :-1], first[:, 1:]), (first[:-1], first[1:])):
        r = np.corrcoef(x.ravel(), y.ravel())[0, 1]
        assert abs(r) < 5 / math.sqrt(x.size)


def test_keyed_draws_depend_on_the_key_only():
    """A key's uniforms (its row, then its own stream past the row) are the same whatever was
    drawn before, for any other key or block of rounds; different keys give different draws."""
    def draws(streams, index, device, n=20):
        u = CorrectionUniforms(streams, index, device)
        return [u.random() for _ in range(n)]

    fresh = KeyedStreams(np.random.default_rng(5), 6)
    want = draws(fresh, 130, 4)
    used = KeyedStreams(np.random.default_rng(5), 6)
    for index, device in ((0, 4), (129, 3), (700, 0), (131, 4)):
        draws(used, index, device)
    assert draws(used, 130, 4) == want
    assert draws(used, 130, 3) != want and draws(used, 66, 4) != want
    assert len(set(want)) == len(want)
    other = KeyedStreams(np.random.default_rng(6), 6)
    assert draws(other, 130, 4) != want
