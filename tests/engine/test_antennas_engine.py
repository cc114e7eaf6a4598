"""The engine with a multi-antenna server: recorded effective gains against their laws, M = 1
against the paper's run, common random numbers across policies, the draft objective's scheme.

Laws (i.i.d. Rayleigh, equal powers): the MRC gain / beta ~ Gamma(M, 1); the ZF stream gain /
beta ~ Gamma(M - |D| + 1, 1); the MMSE SINR's mean against a Monte-Carlo reference written
here with numpy's linear algebra. One device's rows per test (the streams of one round depend
on each other), KS p-values and z-scores as the tolerances.
"""
import math

import numpy as np
import pytest
from scipy import stats

import multispin_sim as ms

P_MIN = 1e-3


def run(overrides):
    return ms.simulate(ms.load_scenario(None, overrides=overrides))


def _all_rejected(k):
    return {f"devices.overrides.{i}.alpha": 0.02 for i in range(k)}


def _rows(res, device, n_link):
    """Device ``device``'s rows of the rounds where ``n_link`` devices corrected on its link."""
    dr = res.device_rounds
    mode = np.asarray(dr["mode"])
    rnd = np.asarray(dr["round"])
    sel = np.asarray(dr["device"]) == device
    rows = []
    for r, m, g, s in zip(rnd[sel], mode[sel], np.asarray(dr["gain_eff"])[sel],
                          np.asarray(dr["snr_eff"])[sel]):
        same = np.count_nonzero((rnd == r) & (mode == m))
        if m in ("ul", "dl") and same == n_link:
            rows.append((g, s))
    return np.array(rows)


def test_mrc_gain_is_gamma_m():
    m, k = 4, 3
    res = run({"devices.count": k, "server.antennas": m, "policy.mode": "all-ul",
               "run.rounds": 1500, "seed": 3, **_all_rejected(k)})
    beta = res.devices["pathloss_gain"][0]
    rows = _rows(res, 0, k)
    assert len(rows) > 1000
    assert stats.kstest(rows[:, 0] / beta, stats.gamma(m).cdf).pvalue > P_MIN


def test_zf_stream_gain_is_gamma_m_minus_d_plus_1():
    m, k = 8, 4
    res = run({"devices.count": k, "server.antennas": m, "server.dl_scheme": "mu-mimo-zf",
               "policy.mode": "all-dl", "run.rounds": 1500, "seed": 4, **_all_rejected(k)})
    beta = res.devices["pathloss_gain"][0]
    rows = _rows(res, 0, k)
    assert len(rows) > 1000
    assert stats.kstest(rows[:, 0] / beta, stats.gamma(m - k + 1).cdf).pvalue > P_MIN


def test_mmse_sinr_mean_against_monte_carlo():
    m, k = 4, 3
    res = run({"devices.count": k, "server.antennas": m, "server.ul_scheme": "mu-mimo-mmse",
               "policy.mode": "all-ul", "run.rounds": 1500, "seed": 5, **_all_rejected(k)})
    sc = res.scenario
    beta = np.asarray(res.devices["pathloss_gain"])
    p = np.asarray(res.devices["ul_power_w"])
    noise = 10 ** ((sc.channel.noise_psd_dbm_hz - 30) / 10) * sc.channel.bandwidth_mhz * 1e6
    rows = _rows(res, 0, k)[:, 1]   # all k on UL: the pooled band is the whole band
    rng = np.random.default_rng(99)
    ref = []
    for _ in range(20000):
        h = (rng.standard_normal((k, m)) + 1j * rng.standard_normal((k, m))) / math.sqrt(2)
        a = np.sqrt(beta)[:, None] * h
        c = noise * np.eye(m) + sum(p[j] * np.outer(a[j], a[j].conj()) for j in range(1, k))
        ref.append(p[0] * np.real(a[0].conj() @ np.linalg.solve(c, a[0])))
    ref = np.array(ref)
    z = (rows.mean() - ref.mean()) / math.sqrt(rows.var() / len(rows) + ref.var() / len(ref))
    assert abs(z) < 4


@pytest.mark.parametrize("schemes", [("mu-mimo-zf", "mu-mimo-mmse")])
def test_one_antenna_with_one_device_equals_the_paper(schemes):
    base = {"devices.count": 1, "run.rounds": 400, "seed": 7}
    ref = run(base)
    got = run({**base, "server.dl_scheme": schemes[0], "server.ul_scheme": schemes[1]})
    for col in ("comm_s", "duration_s", "start_s"):
        np.testing.assert_allclose(got.rounds[col], ref.rounds[col], rtol=1e-12)
    for col in ("delay_s", "power_w", "gain_ul"):
        np.testing.assert_allclose(got.device_rounds[col], ref.device_rounds[col], rtol=1e-12)


def test_same_channels_for_every_policy():
    base = {"devices.count": 6, "server.antennas": 4, "server.dl_scheme": "mu-mimo-zf",
            "server.ul_scheme": "mu-mimo-mmse", "run.rounds": 60, "seed": 8}
    a = run({**base, "policy.mode": "optimal"})
    b = run({**base, "policy.mode": "all-ul"})
    np.testing.assert_array_equal(a.device_rounds["gain_ul"], b.device_rounds["gain_ul"])
    assert not np.array_equal(a.device_rounds["mode"], b.device_rounds["mode"])


def test_exhaustive_is_never_slower_than_the_prefix_split():
    base = {"devices.count": 6, "server.antennas": 2, "server.dl_scheme": "mu-mimo-zf",
            "server.ul_scheme": "mu-mimo-mmse", "run.rounds": 80, "seed": 9}
    ex = run({**base, "policy.mode": "exhaustive"}).rounds["comm_s"]
    pre = run({**base, "policy.mode": "optimal"}).rounds["comm_s"]
    loc = run({**base, "policy.mode": "local-search"}).rounds["comm_s"]
    assert np.all(ex <= loc * (1 + 1e-12)) and np.all(loc <= pre * (1 + 1e-12))


def test_draft_objective_evaluates_the_scheme():
    from multispin_sim.model.antennas import ArrayGains
    from multispin_sim.model.mimo import Transmission
    from multispin_sim.model.reactive import optimal_split
    from multispin_sim.policies import make_reactive_policy
    from multispin_sim.policies.draft_search import make_kernel
    from multispin_sim.engine.population import build_population
    from multispin_sim.engine.streams import RandomStreams

    sc = ms.load_scenario(None, overrides={"devices.count": 5, "server.antennas": 4,
                                           "server.dl_scheme": "mu-mimo-zf"})
    st = RandomStreams(1)
    system = build_population(sc, st.devices, st.topology, st.shadowing).system
    assert isinstance(system.transmission, Transmission)
    rng = np.random.default_rng(0)
    a = np.sqrt(system.pathloss)[:, None] * (rng.standard_normal((5, 4)) + 1j * rng.standard_normal((5, 4)))
    g = ArrayGains.of(a)
    kernel = make_kernel(system, g, g, make_reactive_policy("optimal"), None)
    rejected = rng.random((7, 5)) < 0.6
    want = [optimal_split(system.reactive_problem(r, g, g)).t_comm[0] for r in rejected]
    np.testing.assert_allclose(kernel(rejected), want, rtol=1e-12)
    # plain gains without their vectors are refused, not silently read as one antenna
    with pytest.raises(ValueError, match="channel vectors"):
        system.reactive_problem(rejected[0], np.asarray(g), np.asarray(g))



def test_exact_random_split_objective_evaluates_the_scheme():
    """Under exact enumeration the random split's objective takes each (rejected set, coin)
    outcome's T_comm from the shared band's schemes, as the engine does, not from the
    orthogonal closed forms on the array gains."""
    from itertools import product

    from multispin_sim.engine.population import build_population
    from multispin_sim.engine.streams import RandomStreams
    from multispin_sim.model.antennas import ArrayGains
    from multispin_sim.model.reactive import evaluate_assignment
    from multispin_sim.policies.draft_search import make_objective

    k = 4
    sc = ms.load_scenario(None, overrides={"devices.count": k, "server.antennas": 2,
                                           "server.dl_scheme": "mu-mimo-zf",
                                           "server.ul_scheme": "mu-mimo-mmse"})
    st = RandomStreams(3)
    system = build_population(sc, st.devices, st.topology, st.shadowing).system
    rng = np.random.default_rng(4)
    a = np.sqrt(system.pathloss)[:, None] * (rng.standard_normal((k, 2))
                                             + 1j * rng.standard_normal((k, 2)))
    g = ArrayGains.of(a)
    obj = make_objective(system, g, g, np.ones(k, bool), np.full(k, 6), "random",
                         estimator="exact")
    gamma = np.array([1, 3, 2, 5])
    q = 1.0 - system.alpha ** gamma            # rejection probabilities
    want = 0.0
    for states in product((0, 1, 2), repeat=k):   # 0 accepted, 1 rejected UL, 2 rejected DL
        s = np.array(states)
        rej = s > 0
        p = np.prod(np.where(rej, q, 1 - q)) * 0.5 ** rej.sum()
        if rej.any():
            problem = system.reactive_problem(rej, g, g)
            want += p * evaluate_assignment(problem, (s == 1)[None, :]).t_comm[0]
    assert obj.tcomm.mean(gamma[None])[0] == pytest.approx(want, rel=1e-12)

@pytest.mark.parametrize("fading,extra", [("rayleigh", {"server.antenna_correlation": 0.8}),
                                          ("gauss-markov", {}), ("jakes", {})])
def test_every_fading_model_runs_per_antenna(fading, extra):
    """E ||h||^2 = M under each fading model (and any correlation: the trace of R is M)."""
    m, k = 4, 8
    res = run({"devices.count": k, "server.antennas": m, "channel.fading": fading,
               "run.rounds": 400, "seed": 12, **extra})
    dr = res.device_rounds
    beta = np.asarray(res.devices["pathloss_gain"])[np.asarray(dr["device"])]
    x = np.asarray(dr["gain_ul"]) / beta
    if fading == "rayleigh":   # i.i.d. rounds: var ||h||^2 = tr(R^2) for h ~ CN(0, R)
        from multispin_sim.model.antennas import exponential_correlation
        r = exponential_correlation(m, extra["server.antenna_correlation"])
        assert abs(x.mean() - m) < 5 * math.sqrt(np.trace(r @ r) / x.size)
    else:
        # rounds correlated in time and (Jakes) one realisation's time average carrying its
        # angles: about k m = 32 independent processes, sd of the mean <= sqrt(m / 32) m / m
        assert abs(x.mean() - m) < 5 * math.sqrt(m / k)
    assert np.all(np.isfinite(dr["gain_eff"]))


@pytest.mark.parametrize("fading", ["rayleigh", "gauss-markov", "jakes"])
def test_one_antenna_array_channel_draws_the_paper_channel(fading):
    from multispin_sim.engine.antennas import ArrayChannel
    from multispin_sim.engine.channel import OFDMAChannel
    from multispin_sim.engine.population import build_population
    from multispin_sim.engine.streams import RandomStreams
    from multispin_sim.model.antennas import ServerArray, vectors_of

    sc = ms.load_scenario(None, overrides={"devices.count": 6})
    st = RandomStreams(1)
    system = build_population(sc, st.devices, st.topology, st.shadowing).system
    plain = OFDMAChannel(system, np.random.default_rng(5), fading, False, doppler_hz=20.0)
    array = ArrayChannel(system, np.random.default_rng(5), fading, False, doppler_hz=20.0,
                         array=ServerArray(1))
    for r in range(50):
        g0, h0 = plain.new_block(0.1 * r)
        g1, h1 = array.new_block(0.1 * r)
        np.testing.assert_array_equal(np.asarray(g1), g0)
        np.testing.assert_array_equal(np.asarray(h1), h0)
        np.testing.assert_allclose(np.abs(vectors_of(g1)[:, 0]) ** 2, g0, rtol=1e-12)


def test_ul_power_descent_is_recorded_and_never_slower_than_full_power():
    k = 4
    base = {"devices.count": k, "server.antennas": 2, "server.ul_scheme": "mu-mimo-mmse",
            "policy.mode": "all-ul", "run.rounds": 60, "seed": 6, **_all_rejected(k)}
    full, low = run(base), run({**base, "server.ul_power": "descent"})
    # the same channels and outcomes (common random numbers); every UL set is served at least
    # as fast, and some devices send below their budget
    t_full, t_low = np.asarray(full.rounds["comm_s"]), np.asarray(low.rounds["comm_s"])
    assert np.all(t_low <= t_full * (1 + 1e-12)) and np.any(t_low < t_full * 0.99)
    dr = low.device_rounds
    ul = np.asarray(dr["mode"]) == "ul"
    p, budget = np.asarray(dr["power_w"])[ul], low.devices["ul_power_w"][0]
    assert np.all(p <= budget * (1 + 1e-15)) and np.any(p < budget * 0.9)


def test_zf_groups_are_charged_their_own_turns_of_the_band():
    """DL zero-forcing with more DL devices than antennas serves groups one after another,
    each with all of P_dl: the server radiates P_dl for the whole DL phase (the sum of the
    turns), and a device receives only during its group's turn (a wait for the earlier groups
    is idle). Maximum-ratio transmission sends every stream from the start."""
    res = run({"run.rounds": 200, "seed": 1, "devices.count": 8, "server.antennas": 2,
               "server.dl_scheme": "mu-mimo-zf", "policy.mode": "all-dl"})
    d, r = res.device_rounds, res.rounds
    p_dl, e = res.population.system.p_dl_w, res.scenario.energy
    dl = d["mode"] == "dl"
    grouped = 0
    for i in np.unique(d["round"][dl]):
        rows = dl & (d["round"] == i)
        ends = np.unique(d["delay_s"][rows])
        turns = np.diff(np.concatenate([[0.0], ends]))
        for end, turn in zip(ends, turns):
            group = rows & (d["delay_s"] == end)
            np.testing.assert_allclose(d["airtime_s"][group], turn, rtol=1e-12)
            np.testing.assert_allclose(d["power_w"][group].sum(), p_dl, rtol=1e-12)
        np.testing.assert_allclose(r["server_dl_energy_j"][i], p_dl * ends[-1], rtol=1e-9)
        grouped += len(ends) > 1
    assert grouped > 100
    np.testing.assert_allclose(d["energy_dl_j"][dl], e.dl_receive_power_w * d["airtime_s"][dl],
                               rtol=1e-12)
    res = run({"run.rounds": 50, "seed": 1, "devices.count": 8, "server.antennas": 2,
               "policy.mode": "all-dl"})   # ofdma-mrt
    d = res.device_rounds
    np.testing.assert_array_equal(d["airtime_s"], np.where(d["mode"] != "", d["delay_s"], 0.0))


def test_carried_zf_corrections_are_a_dl_set_of_their_own():
    """``policy.mode: deadline`` under ZF: the corrections carried to a round start are grouped
    among themselves and the round's own DL set after its verification; each set's turns are
    counted from its own start."""
    res = run({"run.rounds": 200, "seed": 1, "devices.count": 8, "server.antennas": 2,
               "server.dl_scheme": "mu-mimo-zf", "policy.mode": "deadline"})
    d = res.device_rounds
    dl = d["mode"] == "dl"
    both = 0
    for i in np.unique(d["round"][dl]):
        for rows in (dl & (d["round"] == i) & (d["rejected"] == 0),
                     dl & (d["round"] == i) & (d["rejected"] == 1)):
            if rows.any():
                ends = np.unique(d["delay_s"][rows])
                turn = dict(zip(ends, np.diff(np.concatenate([[0.0], ends]))))
                np.testing.assert_allclose(d["airtime_s"][rows],
                                           [turn[x] for x in d["delay_s"][rows]], rtol=1e-12)
        both += ((d["round"] == i) & dl & (d["rejected"] == 0)).any() and \
            ((d["round"] == i) & dl & (d["rejected"] == 1)).any()
    assert both >= 3


def test_orthogonal_streams_record_their_link_gain_and_the_snr_they_went_out_at():
    """MRT / MRC: a stream's effective gain is its device's array gain and its SNR is
    p g / (N0 b) at the power it was sent at; solving each round's sets again from the recorded
    gains (the way the shared schemes are recorded) gives the same gains, powers and SNRs."""
    from multispin_sim.engine.population import build_population
    from multispin_sim.engine.streams import RandomStreams
    from multispin_sim.model.mimo import Transmission, effective_gains
    from multispin_sim.model.reactive import DL, UL

    sc = ms.load_scenario(None, overrides={"devices.count": 6, "server.antennas": 4,
                                           "run.rounds": 200, "seed": 5})
    dr = {c: np.asarray(v) for c, v in ms.simulate(sc).device_rounds.items()}
    system = build_population(sc, RandomStreams(sc.seed).devices).system
    sent = dr["mode"] != ""
    assert (dr["mode"] == "ul").sum() > 50 and (dr["mode"] == "dl").sum() > 50
    gain = np.where(dr["mode"] == "ul", dr["gain_ul"], dr["gain_dl"])
    assert (dr["gain_eff"][sent] == gain[sent]).all()
    assert (dr["gain_eff"][~sent] == 0).all() and (dr["snr_eff"][~sent] == 0).all()
    np.testing.assert_allclose(
        dr["snr_eff"][sent],
        dr["power_w"][sent] * gain[sent] / (system.n0 * dr["bandwidth_hz"][sent]), rtol=1e-12)
    for r in np.unique(dr["round"][sent]):
        row = dr["round"] == r
        mode = np.select([dr["mode"][row] == "ul", dr["mode"][row] == "dl"], [UL, DL], 0)
        b = dr["bandwidth_hz"][row & sent][0]
        g, snr = effective_gains(Transmission(), dr["gain_ul"][row], dr["gain_dl"][row], mode,
                                 system.p_ul_w, system.p_dl_w, system.payload_bits, b, system.n0)
        np.testing.assert_allclose(g, dr["gain_eff"][row], rtol=1e-12)
        np.testing.assert_allclose(snr, dr["snr_eff"][row], rtol=1e-12)


def test_token_payloads_on_an_orthogonal_array_are_delivered_at_their_own_sizes():
    """payload.model 'token' (format 'topp': every correction its own size) with four antennas:
    each correction's delay delivers exactly its bits of corrections.csv at the Shannon rate of
    its array gain, b log2(1 + p g / (N0 b)) x delay (several sizes, one law)."""
    res = run({"server.antennas": 4, "payload.model": "token", "payload.format": "topp",
               "policy.mode": "fidelity", "run.rounds": 60, "seed": 11})
    d, c = res.device_rounds, res.table("corrections")
    mode = np.asarray(d["mode"]).astype(str)
    sent = (mode == "ul") | (mode == "dl")
    key = list(zip(np.asarray(d["round"])[sent].tolist(), np.asarray(d["device"])[sent].tolist()))
    bits = dict(zip(zip(c["round"].tolist(), c["device"].tolist()), c["bits"].tolist()))
    want = np.array([bits[k] for k in key], dtype=float)
    g = np.where(mode[sent] == "ul", d["gain_ul"][sent], d["gain_dl"][sent])
    p, b, t = d["power_w"][sent], d["bandwidth_hz"][sent], d["delay_s"][sent]
    delivered = t * b * np.log2(1 + p * g / (res.population.system.n0 * b))
    assert len(np.unique(want)) > 3
    np.testing.assert_allclose(delivered, want, rtol=1e-9)


def test_tokens_per_joule_runs_on_a_shared_band():
    """End to end: greedy control for tokens per joule with ZF / MMSE. With idle power near
    the drafting power, drafting is nearly free and the controller drafts; the recorded
    device energy is the sum of its parts."""
    res = ms.simulate(ms.load_scenario(None, overrides={
        "server.antennas": 4, "server.dl_scheme": "mu-mimo-zf", "server.ul_scheme": "mu-mimo-mmse",
        "devices.count": 6, "policy.objective": "tokens-per-joule", "policy.draft": "greedy",
        "policy.saa_samples": 100, "energy.idle_power_w": 3.8, "run.rounds": 8, "seed": 4}))
    d = res.device_rounds
    assert res.complete and np.mean(d["draft_len"]) > 1
    parts = sum(np.asarray(d[c]) for c in ("energy_draft_j", "energy_ul_j", "energy_dl_j",
                                           "energy_idle_j"))
    np.testing.assert_allclose(parts, d["energy_j"], rtol=1e-12)


@pytest.mark.parametrize("dl,ul", [("mu-mimo-zf", "mu-mimo-mmse"), ("ofdma-mrt", "ofdma-mrc")])
def test_each_streams_record_explains_its_time_on_air(dl, ul):
    """With carried corrections (``deadline``) a round sends two sets, the carried one and its
    own, on different subbands: each stream's recorded SINR is its own set's, so its time on
    air is the payload over Shannon's rate on its band at that SINR (a shared link's band is
    its set's pooled band)."""
    res = run({"run.rounds": 80, "server.antennas": 4, "server.dl_scheme": dl,
               "server.ul_scheme": ul, "devices.count": 10, "policy.mode": "deadline"})
    t = res.table("device_rounds")
    mode = np.asarray(t["mode"])
    on = mode != ""
    rejected = np.asarray(t["rejected"])
    assert np.count_nonzero(on & (rejected == 0)) > 5   # carried corrections
    sets = np.stack([np.asarray(t["round"]), mode == "dl", rejected], axis=1)[on]
    n = np.array([np.count_nonzero(np.all(sets == row, axis=1)) for row in sets])
    if dl == "ofdma-mrt":
        n = np.ones_like(n)
    band = np.asarray(t["bandwidth_hz"])[on] * n
    rate = band * np.log2(1 + np.asarray(t["snr_eff"])[on])
    np.testing.assert_allclose(np.asarray(t["airtime_s"])[on],
                               res.population.system.payload_bits / rate, rtol=1e-9)
