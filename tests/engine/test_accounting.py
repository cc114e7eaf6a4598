"""The records add up in non-default settings, and controllers do not bias the outcomes.

tests/engine/test_engine.py checks the timing and goodput identities on the paper's setting;
here the same identities (and the energy and agreement tallies) hold to rounding under every
component that changes how a round is timed or costed: draft control, verification cost, the NR
link, thermal throttling, server antennas, token-level payloads.
"""
import numpy as np
import pytest
from scipy import stats

import multispin_sim as ms
from multispin_sim.model.speculative import accepted_pmf, expected_tokens

CONFIGS = {
    "budget": {"devices.count": 6, "policy.draft": "budget", "policy.saa_samples": 100},
    "tokens-verify": {"devices.count": 6, "policy.draft": "greedy",
                      "server.verify_model": "tokens"},
    "nr-link": {"devices.count": 6, "link.model": "mcs", "channel.coherence_time_ms": 5.0},
    "thermal": {"devices.count": 4, "compute.thermal": True, "compute.throttle_c": 35.0,
                "compute.time_constant_s": 5.0, "run.rounds": 1500},
    "antennas-zf": {"devices.count": 6, "server.antennas": 4, "server.dl_scheme": "mu-mimo-zf",
                    "server.ul_scheme": "mu-mimo-mmse"},
    "token-payload": {"devices.count": 4, "payload.model": "token"},
}


def run(overrides):
    return ms.simulate(ms.load_scenario(None, overrides=overrides))


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_records_add_up(name):
    res = run({"run.rounds": 300, **CONFIGS[name]})
    s, r, d, dev = res.summary, res.rounds, res.device_rounds, res.devices
    n, pos = r["round"].size, d["round"]

    def per_round(x):
        return np.bincount(pos, weights=np.asarray(x, float), minlength=n)

    def per_device(x):
        return np.bincount(d["device"], weights=np.asarray(x, float), minlength=dev["device"].size)

    # time: goodput is a ratio of totals; a round is drafting + verification + the slowest
    # correction; drafting is the slowest device's gamma t_k (slowed down when throttled)
    close(s["goodput_tps"], s["tokens"] / s["sim_time_s"])
    close(s["sim_time_s"], r["duration_s"].sum())
    close(r["duration_s"], r["draft_s"] + r["verify_s"] + r["comm_s"])
    t_k = dev["draft_latency_s"][d["device"]] * d["slowdown"]
    slowest = np.zeros(n)
    np.maximum.at(slowest, pos, d["draft_len"] * t_k)
    close(r["draft_s"], slowest)
    slowest = np.zeros(n)
    np.maximum.at(slowest, pos, np.where(d["rejected"] == 1, d["delay_s"], 0.0))
    close(r["comm_s"], slowest)
    # tokens and corrections
    close(r["tokens"], per_round(d["tokens"]))
    close(r["n_rejected"], per_round(d["rejected"]))
    close(r["n_ul"] + r["n_dl"], r["n_rejected"])
    assert s["ul_corrections"] + s["dl_corrections"] == s["rejections"] == d["rejected"].sum()
    # energy: a device's parts, drafting at its power (divided by the slowdown when throttled:
    # the same energy per token), idle for the rest of the round
    close(d["energy_j"], d["energy_draft_j"] + d["energy_ul_j"] + d["energy_dl_j"]
          + d["energy_idle_j"])
    close(d["energy_draft_j"], dev["draft_power_w"][d["device"]] / d["slowdown"] * d["draft_len"]
          * t_k)
    # ... and transmitting or receiving while on air (the NR link records that time; a wait for
    # a new fading block is idle)
    on_air = d.get("airtime_s", d["delay_s"])
    busy = d["draft_len"] * t_k + np.where(d["rejected"] == 1, on_air, 0.0)
    close(d["energy_idle_j"], res.scenario.energy.idle_power_w * (r["duration_s"][pos] - busy))
    close(r["device_energy_j"], per_round(d["energy_j"]))
    close(r["energy_j"], r["device_energy_j"] + r["server_dl_energy_j"] + r["verify_energy_j"])
    close(s["energy"]["total_j"], r["energy_j"].sum())
    # agreement tallies: A agreements per round, and one disagreement per rejection
    agreed = per_device(d["accepted"])
    close(dev["agreed_positions"], agreed)
    close(dev["verified_positions"], agreed + per_device(d["rejected"]))


def test_outcomes_given_the_chosen_draft_length_are_the_truncated_geometric_law():
    """The budget controller picks gamma from sampled outcomes of the same stream family; the
    rounds' real outcomes, taken per (device, gamma), still follow E[N] = (1 - a^(g+1)) / (1 - a)
    with the truncated geometric variance: a chi-square over the cells."""
    alphas = [0.6, 0.75, 0.9, 0.95]
    res = run({"devices.count": 4, "devices.overrides": {i: {"alpha": a}
                                                        for i, a in enumerate(alphas)},
               "policy.draft": "budget", "policy.saa_samples": 200, "run.rounds": 4000,
               "seed": 5, "server.dl_power_ratio": 16})
    d = res.device_rounds
    chi2, cells = 0.0, 0
    for k, a in enumerate(alphas):
        for g in np.unique(d["draft_len"][d["device"] == k]).tolist():
            m = (d["device"] == k) & (d["draft_len"] == g)
            if g == 0 or m.sum() < 30:
                continue
            pmf = accepted_pmf(a, g)
            j = np.arange(g + 1)
            var = pmf @ j ** 2 - (pmf @ j) ** 2
            chi2 += (d["tokens"][m].mean() - expected_tokens(a, g)) ** 2 / (var / m.sum())
            cells += 1
    assert cells >= 3
    assert stats.chi2.sf(chi2, cells) > 1e-3


def test_a_deadline_round_lasts_its_parts_with_the_carried_correction():
    """``policy.mode: deadline`` carries corrections over to the next round, which ends when
    they arrive: that wait is communication time, so a round is still draft + verify + comm."""
    res = run({"devices.count": 4, "run.rounds": 300, "seed": 7, "policy.mode": "deadline",
               "csi.delay_ms": 20.0})
    r, s = res.rounds, res.summary
    assert s["deferred"]["corrections"] > 0     # the case is exercised
    close(r["duration_s"], r["draft_s"] + r["verify_s"] + r["comm_s"])
    close(s["sim_time_s"], r["duration_s"].sum())
    close(s["comm_s"]["mean"], r["comm_s"].mean())


def test_carried_corrections_neither_overlap_the_rounds_own_nor_join_its_batch():
    """``policy.mode: deadline``: a correction carried to the next round start has the band (and
    the DL power) until it ends, so the round's own corrections start after it; its device sends
    but is not verified (``batch_size``), and its row records the band it had (B / carried)."""
    res = run({"run.rounds": 400, "seed": 1, "policy.mode": "deadline"})
    r, d, sc = res.rounds, res.device_rounds, res.scenario
    b = sc.channel.bandwidth_mhz * 1e6
    carried = (d["rejected"] == 0) & (d["mode"] != "")
    own = (d["rejected"] == 1) & (d["mode"] != "")
    overlapping = 0
    for i in np.unique(d["round"][carried]):
        rows = d["round"] == i
        c, o = carried & rows, own & rows
        close(d["bandwidth_hz"][c], b / c.sum())
        busy = d["delay_s"][c].max() - r["draft_s"][i] - r["verify_s"][i]
        if o.any() and busy > 0:   # the round's corrections wait for the band
            overlapping += 1
            assert r["comm_s"][i] >= busy + d["delay_s"][o].max() - 1e-12
    assert overlapping >= 3   # the case is exercised (13 of 400 rounds at this seed)
    # the verification time is the linear cost of the devices verified (batch_size)
    srv = sc.server
    close(r["verify_s"], (srv.verify_fixed_ms + srv.verify_per_device_ms * r["batch_size"]) / 1e3)


@pytest.mark.parametrize("mode", ["all-ul", "all-dl"])
def test_the_nr_link_charges_the_time_on_air_at_the_powers_it_was_sent_with(mode):
    """``link.model: mcs``: after an outage or a dropped block a correction waits for a new
    fading block, sending nothing, and a DL retry is sent at P_dl x (its PRBs / all PRBs). The
    transmit and receive energies count the slots on air at the power of each; the waits idle."""
    res = run({"run.rounds": 300, "seed": 1, "link.model": "mcs", "devices.count": 4,
               "devices.distance_m": [400, 500], "policy.mode": mode})
    d, r, sc = res.device_rounds, res.rounds, res.scenario
    e = sc.energy
    slot = 1e-3 / (sc.link.subcarrier_spacing_khz / 15.0)
    sent = d["mode"] != ""
    close(d["airtime_s"], d["harq_transmissions"] * slot)
    waited = sent & (d["outages"] + d["harq_failures"] > 0)
    assert waited.sum() >= 20 and (d["airtime_s"][waited] < d["delay_s"][waited] - 1e-9).all()
    plain = sent & ~waited   # one power, on air for the whole delay
    close(d["airtime_s"][plain], d["delay_s"][plain])
    close(d["tx_energy_j"][plain], (d["power_w"] * d["delay_s"])[plain])
    if mode == "all-ul":
        close(d["energy_ul_j"][sent],
              (d["tx_energy_j"] + e.ul_circuit_power_w * d["airtime_s"])[sent])
    else:
        close(d["energy_dl_j"][sent], (e.dl_receive_power_w * d["airtime_s"])[sent])
        p_dl = res.population.system.p_dl_w
        retry_w = p_dl * d["bandwidth_hz"] / (sc.channel.bandwidth_mhz * 1e6)
        late = waited & (d["power_w"] < 0.5 * retry_w)   # retries sent well above the plan
        assert late.any() and (d["tx_energy_j"][late] > (d["power_w"] * d["delay_s"])[late]).all()
        close(np.bincount(d["round"], np.where(sent, d["tx_energy_j"], 0.0), r["round"].size),
              r["server_dl_energy_j"])
    duration = r["duration_s"][d["round"]]
    draft = d["draft_len"] * res.devices["draft_latency_s"][d["device"]] * d["slowdown"]
    close(d["energy_idle_j"], e.idle_power_w * (duration - draft - np.where(sent, d["airtime_s"], 0.0)))
