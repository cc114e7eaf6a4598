"""Link layer (issue 12): NR tables, BLER and link adaptation, HARQ laws, Shannon limit, tails.

Oracles: the standards' printed values (TS 38.214 tables, TBS worked by hand from section
5.1.3.2, TS 38.101 PRB counts), the logistic curve's definition, the geometric law of HARQ
attempts (chi-square) and the closed-form mean delay, the Shannon bound.
"""
import math

import numpy as np
import pytest
from scipy import stats

from multispin_sim.model import nr_tables as nr
from multispin_sim.model.link import BlockLimit, Blocks, IidBlocks, McsLink, PermanentOutage

N0 = 1e-3 * 10 ** (-17.4)  # -174 dBm/Hz in W/Hz
S = 34816.0


class Static(Blocks):
    """Blocks of a channel that never changes (every retry meets the same gain)."""

    static = True

    def __init__(self, gain, block_s=0.01):
        self.gain, self.block_s = gain, block_s

    def current(self, t):
        return self.gain, math.inf

    def next(self, t):
        return t + self.block_s


# ---------------------------------------------------------------------------- tables


@pytest.mark.parametrize("table, cqi, qm, r1024, eff", [
    ("64qam", 1, 2, 78, 0.1523), ("64qam", 6, 2, 602, 1.1758), ("64qam", 7, 4, 378, 1.4766),
    ("64qam", 10, 6, 466, 2.7305), ("64qam", 15, 6, 948, 5.5547),
    ("256qam", 2, 2, 193, 0.3770), ("256qam", 12, 8, 711, 5.5547),
    ("256qam", 15, 8, 948, 7.4063),
    ("64qam-low-se", 1, 2, 30, 0.0586), ("64qam-low-se", 15, 6, 772, 4.5234),
])
def test_cqi_tables_equal_ts38214(table, cqi, qm, r1024, eff):
    q, r, e = nr.cqi_table(table)
    assert q[cqi - 1] == qm and r[cqi - 1] * 1024 == r1024
    assert round(e[cqi - 1], 4) == pytest.approx(eff, abs=1e-4)


@pytest.mark.parametrize("n_prb, table, cqi, tbs", [
    (1, "64qam", 1, 24),      # N_info 23.77 -> N'_info 24 -> 24
    (4, "64qam", 7, 928),     # N_info 921.375 -> n 3 -> 920 -> table 928
    (50, "64qam", 2, 1864),   # N_info 1828.125 -> n 4 -> 1824 -> table 1864
    (24, "64qam", 15, 21000),  # N_info 20796.75 -> n 9 -> 20992 -> C 3 -> 21000
    (273, "64qam", 3, 16136),  # R <= 1/4: N_info 16053.68 -> n 8 -> 16128 -> C 5 -> 16136
])
def test_tbs_equals_hand_worked_38214(n_prb, table, cqi, tbs):
    q, r, _ = nr.cqi_table(table)
    assert nr.transport_block_size(n_prb, q[cqi - 1], r[cqi - 1]) == tbs


def test_prbs_and_slots():
    assert nr.usable_prbs(10e6, 30) == 24 and nr.usable_prbs(10e6, 15) == 52
    assert nr.usable_prbs(100e6, 30) == 273 and nr.usable_prbs(400e6, 120, "FR2") == 264
    assert nr.usable_prbs(12e6, 30) == math.floor(0.9 * 12e6 / 360e3)  # the stated 10% rule
    assert nr.slot_seconds(15) == 1e-3 and nr.slot_seconds(120) == 1.25e-4
    with pytest.raises(ValueError, match="subcarrier spacing"):
        nr.usable_prbs(10e6, 45)


# ---------------------------------------------------------------------------- BLER and LA


def test_bler_curve_and_link_adaptation():
    link = McsLink(10e6, N0, gap_db=1.5, waterfall_db=1.2, bler_target=0.1)
    thr = 10 * np.log10(10 ** 0.15 * (2 ** link.eff - 1))
    assert np.allclose(link.thr_db, thr)
    assert np.allclose(link.curve.bler(thr, 10 ** (thr / 10)), 0.1)
    assert np.allclose(link.curve.bler(thr, 10 ** ((thr - 1.2) / 10)), 0.9)
    rng = np.random.default_rng(3)
    for target in (0.01, 0.1, 0.3):
        link = McsLink(10e6, N0, bler_target=target)
        snr_db = rng.uniform(-12, 30, 400)
        c = link.cqi(10 ** (snr_db / 10))
        ok = c > 0
        # the chosen MCS meets the target, the next one does not
        chosen = link.curve.bler(link.thr_db[c[ok] - 1], 10 ** (snr_db[ok] / 10))
        assert np.all(chosen <= target + 1e-12)
        nxt = ok & (c < 15)
        assert np.all(link.curve.bler(link.thr_db[c[nxt]], 10 ** (snr_db[nxt] / 10)) > target)
        assert np.all(link.curve.bler(link.thr_db[0], 10 ** (snr_db[~ok] / 10)) > target)


def test_bad_link_arguments():
    for kwargs, msg in [({"table": "qam9"}, "CQI table"), ({"bler_target": 1.0}, "BLER target"),
                        ({"harq_max": 0}, "HARQ"), ({"scs_khz": 45}, "subcarrier spacing")]:
        with pytest.raises(ValueError, match=msg):
            McsLink(10e6, N0, **kwargs)


class Recovers(Blocks):
    """Blocks in outage (gain ``low``) for the first ``n`` blocks, then ``high`` for good."""

    static = False

    def __init__(self, low, high, n, block_s=0.01):
        self.low, self.high, self.n, self.block_s = low, high, n, block_s

    def current(self, t):
        return (self.low if t < self.n * self.block_s - 1e-12 else self.high), math.inf

    def next(self, t):
        return (math.floor(t / self.block_s + 1e-9) + 1) * self.block_s


def test_outage_waits_blocks_up_to_the_limit_then_stops_with_the_right_reason():
    """A fading channel below CQI 1 for n blocks: delivered after exactly n waits when
    max_blocks >= n, a ``BlockLimit`` (not "does not change") when max_blocks < n; a channel
    that never changes is a ``PermanentOutage`` after a few blocks."""
    link = McsLink(10e6, N0)
    n_prb = link.n_prb
    low, high = 1e-3 * link.noise_w(n_prb), 1e2 * link.noise_w(n_prb)   # -30 dB, 20 dB SNR
    rng = np.random.default_rng(1)
    out = link.deliver(S, n_prb, 1.0, None, Recovers(low, high, 50), rng, max_blocks=50)
    assert out.outages == 50 and out.delay_s >= 50 * 0.01
    with pytest.raises(BlockLimit, match="more than 49 fading blocks"):
        link.deliver(S, n_prb, 1.0, None, Recovers(low, high, 50), rng, max_blocks=49)
    with pytest.raises(PermanentOutage, match="does not change"):
        link.deliver(S, n_prb, 1.0, None, Static(low), rng)


# ---------------------------------------------------------------------------- Shannon limit


def continuous_delay_bounds(bits, n_prb, scs_khz, snr, gap_db):
    """S / (rho b log2(1 + snr / Gamma)) and that plus one slot, rho = 156 / 180: the 156 data
    REs of a PRB and slot (14 x 12 less one DM-RS symbol) over its bandwidth x slot product
    12 x 15 kHz x 2^mu x 1 ms / 2^mu = 180 (the link module's docstring)."""
    b = n_prb * 12 * scs_khz * 1e3
    low = bits / (156.0 / 180.0 * b * math.log2(1.0 + snr / 10.0 ** (gap_db / 10.0)))
    return low, low + 1e-3 / (scs_khz // 15)   # one slot, 1 ms / 2^mu


@pytest.mark.parametrize("gap_db", [0.0, 2.0])
def test_continuous_grid_without_errors_is_shannon_within_the_gap(gap_db):
    link = McsLink(10e6, N0, table="continuous", bler=False, gap_db=gap_db)
    for n_prb in (1, 3, 24):
        b = n_prb * link.prb_hz
        for snr_db in (-5.0, 3.0, 17.0, 30.0):
            snr = 10 ** (snr_db / 10)
            out = link.deliver(S, n_prb, 1.0, snr, Static(snr * link.noise_w(n_prb)), None)
            low, high = continuous_delay_bounds(S, n_prb, 30, snr, gap_db)
            assert low * (1 - 1e-12) <= out.delay_s <= high
            shannon = S / (b * math.log2(1 + snr))
            assert out.delay_s >= shannon  # never better than the bound
            # the gap: the Shannon delay at SNR / gap over the RE efficiency 156/180, + a slot
            at_gap = S / (b * math.log2(1 + snr / 10 ** (gap_db / 10)))
            assert out.delay_s <= at_gap * 180 / 156 + link.slot_s
            assert out.failures == out.outages == 0



@pytest.mark.parametrize("table", ["continuous", "64qam"])
@pytest.mark.parametrize("bler", [False, True])
def test_the_plan_is_the_error_free_delivery(table, bler):
    """The reactive policy plans a correction by ``planned_delays`` (vectorised) or
    ``planned_one`` (one correction): both equal each other, and without BLER they equal what
    ``deliver`` takes on a channel that does not change (ceil(bits / TBS) slots)."""
    link = McsLink(10e6, N0, table=table, bler=bler)
    snrs = 10 ** (np.array([-3.0, 2.0, 9.5, 17.0, 28.0]) / 10)
    for n_prb in (1, 5, 24):
        planned = link.planned_delays(S, snrs, n_prb, outage_wait_s=0.01)
        for snr, plan in zip(snrs, planned):
            assert plan == pytest.approx(link.planned_one(S, snr, n_prb, 0.01), rel=1e-12)
            if not bler and link.choose(snr, n_prb) is not None:
                out = link.deliver(S, n_prb, 1.0, snr, Static(snr * link.noise_w(n_prb)), None)
                assert out.delay_s == pytest.approx(plan, rel=1e-12)

# ---------------------------------------------------------------------------- HARQ laws


def _one_mcs_setting(combining, harq_max):
    """A static link whose true (and reported) SNR sits on CQI 5's switching point for a BLER
    target of 0.5: every adaptation picks CQI 5, whose first attempt fails with probability
    0.5 (a single MCS)."""
    link = McsLink(10e6, N0, harq_max=harq_max, combining=combining, bler_target=0.5)
    snr = 10 ** (link.switch_db[4] / 10) * (1 + 1e-9)
    rep = snr
    assert link.cqi(snr) == 5
    n_prb = 24
    assert link.tbs[4, n_prb] >= 1000
    return link, snr, rep, n_prb, link.thr_db[4]


def test_harq_repetition_attempts_are_geometric_and_mean_delay_closed_form():
    link, snr, rep, n_prb, thr = _one_mcs_setting("repetition", harq_max=3)
    q = float(link.curve.bler(thr, snr))
    assert q == pytest.approx(0.5)
    rng = np.random.default_rng(11)
    block_s, n = 0.004, 4000
    gain = snr * link.noise_w(n_prb)
    outs = [link.deliver(1000, n_prb, 1.0, rep, Static(gain, block_s), rng) for _ in range(n)]
    tx = np.array([o.transmissions for o in outs])
    delay = np.array([o.delay_s for o in outs])
    # every attempt (restarts included) is an independent try: T ~ Geometric(1 - q)
    cats = np.minimum(tx, 8)
    observed = np.bincount(cats, minlength=9)[1:]
    pmf = (1 - q) * q ** np.arange(7)
    expected = n * np.append(pmf, q ** 7)
    chi2 = ((observed - expected) ** 2 / expected).sum()
    assert chi2 < stats.chi2.ppf(0.999, df=7)
    # E[delay] = slot / (1 - q) + block wait x E[floor((T - 1) / M)] = ... q^M / (1 - q^M)
    m = link.harq_max
    mean = link.slot_s / (1 - q) + block_s * q ** m / (1 - q ** m)
    se = delay.std(ddof=1) / math.sqrt(n)
    assert abs(delay.mean() - mean) < 4 * se


def test_harq_chase_attempts_follow_the_combining_law():
    link, snr, rep, n_prb, thr = _one_mcs_setting("chase", harq_max=4)
    rng = np.random.default_rng(5)
    n = 4000
    gain = snr * link.noise_w(n_prb)
    outs = [link.deliver(1000, n_prb, 1.0, rep, Static(gain), rng) for _ in range(n)]
    # first HARQ round: m attempts with prob prod_{j<m} BLER(j snr) (1 - BLER(m snr))
    fail = link.curve.bler(thr, np.arange(1, 5) * snr)
    survive = np.concatenate([[1.0], np.cumprod(fail)])
    pmf = np.append(survive[:-1] - survive[1:], survive[-1])
    first = np.array([o.transmissions if o.failures == 0 else 5 for o in outs])
    observed = np.bincount(first, minlength=6)[1:]
    keep = pmf * n >= 5
    expected = pmf * n
    lumped_o = np.append(observed[keep], observed[~keep].sum())
    lumped_e = np.append(expected[keep], expected[~keep].sum())
    if lumped_e[-1] < 5:
        lumped_o, lumped_e = lumped_o[:-1], lumped_e[:-1]
        lumped_e = lumped_e * lumped_o.sum() / lumped_e.sum()
    chi2 = ((lumped_o - lumped_e) ** 2 / lumped_e).sum()
    assert chi2 < stats.chi2.ppf(0.999, df=len(lumped_o) - 1)


def test_several_transport_blocks_take_ceil_bits_over_tbs_slots_when_error_free():
    link = McsLink(10e6, N0, bler=False)
    snr = 10 ** 1.2
    out = link.deliver(S, 3, 1.0, snr, Static(snr * link.noise_w(3)), None)
    c = int(link.cqi(snr))
    assert out.blocks == math.ceil(S / link.tbs[c - 1, 3])
    assert out.delay_s == pytest.approx(out.blocks * link.slot_s)


# ---------------------------------------------------------------------------- heavy tail


def _delays(seed, n=10000, mean_snr_db=5.0):
    link = McsLink(10e6, N0, harq_max=4)
    n_prb, rng = 2, np.random.default_rng(seed)
    mean_snr = 10 ** (mean_snr_db / 10)
    g = mean_snr * link.noise_w(n_prb)
    h = rng.standard_exponential(n)
    shannon = S / (n_prb * link.prb_hz * np.log2(1 + mean_snr * h))
    mcs = np.array([link.deliver(S, n_prb, 1.0, mean_snr * x,
                                 IidBlocks(g * x, lambda _: g * rng.standard_exponential(), 0.01),
                                 rng).delay_s for x in h])
    return shannon, mcs


def _batch_means_agree(x, batches=10, z=3.29):
    """Every batch's CI (z = 3.29, two-sided 0.1%) contains the grand mean."""
    b = x.reshape(batches, -1)
    half = z * b.std(axis=1, ddof=1) / math.sqrt(b.shape[1])
    return bool(np.all(np.abs(b.mean(axis=1) - x.mean()) <= half))


def test_mcs_mean_delay_converges_shannon_does_not():
    shannon, mcs = _delays(seed=1)
    assert _batch_means_agree(mcs)
    # Rayleigh + Shannon: P(T > t) ~ c / t, an infinite mean: one batch holds a delay that
    # dwarfs the others and the batch means disagree (documents the heavy tail)
    assert not _batch_means_agree(shannon)
    assert shannon.max() > 50 * np.median(shannon)
    assert mcs.max() < 50 * np.median(mcs)
