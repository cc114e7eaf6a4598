"""The round narrator against the records of runs with the components it once told wrongly
(docs/teaching.md, "The round narrator"): every number it prints is compared with the CSV value
it comes from, and every sum it prints is checked to add up. Each scenario is small (a few
devices, tens of rounds)."""
import math
import re

import numpy as np
import pytest

import multispin_sim as ms
from multispin_sim.model.mobility import clamped_pathloss_gain
from multispin_sim.teaching import explain
from multispin_sim.teaching.narrator import explain_round

MS = 1e-3
TOL_MS = 0.0051 * MS          # the narrator prints milliseconds with 2 decimals


def run(**overrides):
    return ms.simulate(ms.load_scenario(None, overrides=overrides))


def paragraphs(text):
    """{round number: paragraph} of a narrated run (its header dropped)."""
    out = {}
    for p in text.rstrip("\n").split("\n\n")[1:]:
        out[int(re.match(r"Round (\d+) starts", p).group(1))] = p
    return out


def device_lines(paragraph):
    """{device: (story line, CSI line)} of a paragraph."""
    lines = paragraph.split("\n")
    out = {}
    for a, b in zip(lines, lines[1:]):
        m = re.match(r"  device (\d+) \(alpha", a)
        if m:
            out[int(m.group(1))] = (a, b)
    return out


def rows_of(result, r):
    dr = result.device_rounds
    return {int(dr["device"][j]): j for j in np.flatnonzero(dr["round"] == r)}


def time_terms(paragraph):
    """The terms of the 'Time:' line (name -> seconds) and its total."""
    line = next(s for s in paragraph.split("\n") if s.startswith("  Time:"))
    body, total = line.rsplit(" = ", 1)
    total = float(re.match(r"([\d.]+) ms", total).group(1)) * MS
    terms = {m.group(1): float(m.group(2)) * MS
             for m in re.finditer(r"(draft|verify|comm|waiting) ([\d.]+) ms", body)}
    return line, terms, total


def verify_formula(paragraph):
    m = re.search(r"verify ([\d.]+) ms \(([\d.]+) \+ (\d+) x ([\d.]+) ms\)", paragraph)
    return float(m.group(1)), float(m.group(2)), int(m.group(3)), float(m.group(4))


# ---------------------------------------------------------------------------- deadline (F2)


@pytest.fixture(scope="module")
def deadline():
    r = run(**{"devices.count": 6, "seed": 7, "run.rounds": 8, "policy.mode": "deadline",
               "straggler.deadline_median_multiple": 1.0})
    return r, paragraphs(explain(r, 8))


def test_deferred_and_carried_corrections_are_told_as_what_they_are(deadline):
    r, paras = deadline
    dr = r.device_rounds
    seen = {"deferred": 0, "carried": 0}
    for rnd, p in paras.items():
        lines = device_lines(p)
        for k, j in rows_of(r, rnd).items():
            story = lines[k][0]
            toks = int(dr["tokens"][j])
            mode = str(dr["mode"][j])
            if dr["rejected"][j] == 1 and mode == "":
                seen["deferred"] += 1
                assert "deferred to the next round start" in story, story
                assert "the correction is one of them" not in story, story
                assert f"-> {toks} token{'s' if toks != 1 else ''} now" in story, story
            elif dr["rejected"][j] == 0 and mode in ("ul", "dl"):
                seen["carried"] += 1
                assert "plain decoding" not in story, story
                assert (f"sends the correction deferred last round, by {mode.upper()} at "
                        f"{dr['power_w'][j] * 1e3:.2f} mW -> {dr['delay_s'][j] * 1e3:.2f} ms") in story
                assert f"its {toks} token" in story
    assert seen["deferred"] > 0 and seen["carried"] > 0, seen


def test_deadline_band_share_and_verification_come_from_the_records(deadline):
    r, paras = deadline
    dr, rt = r.device_rounds, r.rounds
    for rnd, p in paras.items():
        rows = rows_of(r, rnd)
        i = int(np.flatnonzero(rt["round"] == rnd)[0])
        sent = [j for j in rows.values() if dr["rejected"][j] == 1 and dr["mode"][j] in ("ul", "dl")]
        carried = [j for j in rows.values() if dr["rejected"][j] == 0 and dr["mode"][j] in ("ul", "dl")]
        if sent:
            line = next(s for s in p.split("\n") if s.startswith("  Corrections:"))
            printed = [float(x) * 1e6 for x in re.findall(r"([\d.]+) MHz", line)]
            for j in sent:   # the band is what the corrections sent were given
                assert any(math.isclose(x, dr["bandwidth_hz"][j], rel_tol=2e-3) for x in printed), line
        # the verification arithmetic adds up, and counts the devices verified
        verify, v0, n, v1 = verify_formula(p)
        assert math.isclose(verify * MS, rt["verify_s"][i], abs_tol=TOL_MS)
        assert math.isclose(v0 + n * v1, verify, abs_tol=0.06), p
        assert n == len(rows) - len(carried) == int(rt["batch_size"][i])
        assert f"with {n} device{'s' if n != 1 else ''} in the batch" in p.split("\n")[0]


# ---------------------------------------------------------------------------- asynchronous (F3)


def test_asynchronous_batches_are_in_order_and_their_time_line_adds_up():
    r = run(**{"devices.count": 4, "serving.protocol": "asynchronous", "run.rounds": 30})
    text = explain(r, 8)
    assert "counted from the previous batch's end" not in text
    paras = paragraphs(text)
    rt = r.rounds
    assert list(paras) == sorted(rt["round"].tolist())[:8]
    waited = 0
    for rnd, p in paras.items():
        i = int(np.flatnonzero(rt["round"] == rnd)[0])
        line, terms, total = time_terms(p)
        assert math.isclose(total, rt["duration_s"][i], abs_tol=TOL_MS), line
        for name in ("draft", "verify", "comm"):
            assert math.isclose(terms[name], rt[f"{name}_s"][i], abs_tol=TOL_MS), line
        assert math.isclose(sum(terms.values()), total, abs_tol=4 * TOL_MS), line
        waited += "waiting" in terms
    assert waited > 0, "a batch of this run waits for the server or the channel"


# ---------------------------------------------------------------------------- antennas (F4)


def test_multi_user_schemes_claim_no_split_or_tie_the_records_do_not_show():
    r = run(**{"devices.count": 8, "server.antennas": 4, "server.dl_scheme": "mu-mimo-zf",
               "server.ul_scheme": "mu-mimo-mmse", "run.rounds": 12})
    text = explain(r, 12)
    assert "a tie" not in text
    assert "the smallest f(n), so T_comm" not in text   # the orthogonal argmin is not the choice
    dr = r.device_rounds
    for rnd, p in paragraphs(text).items():
        rows = rows_of(r, rnd)
        ul = sorted(k for k, j in rows.items() if dr["mode"][j] == "ul")
        if any(dr["rejected"][j] for j in rows.values()):
            m = re.search(r"with the antenna scheme's delays: UL for (.*?), DL for", p)
            assert m, p
            assert m.group(1) == (", ".join(f"device {k}" for k in ul) or "nobody")


DIST = (100.0, 250.0, 450.0)
STILL = {"devices.count": 3, "seed": 4, "channel.fading": "none",
         "devices.draft_latency_spread": [1, 1], "policy.draft_length": 4, "run.rounds": 1,
         "devices.overrides": {k: {"distance_m": d, "alpha": 0.3} for k, d in enumerate(DIST)}}


def test_a_tie_is_claimed_only_when_the_recorded_split_has_the_same_t_comm():
    """Records whose assignment is not the table's smallest f(n) (here: the UL device moved to
    DL) are not 'a tie' unless their T_comm equals it."""
    r = run(**STILL)
    rt, dr, dev = r.rounds, dict(r.device_rounds), r.devices
    system = r.population.system
    original = explain_round(rt, dr, dev, system, 0)
    assert "a tie" not in original and "Chosen by policy 'optimal': n = " in original
    dr["mode"] = np.array(["dl"] * len(dr["mode"]), dtype=object)   # nobody on UL
    text = explain_round(rt, dr, dev, system, 0)
    assert "a tie" not in text
    assert "Policy 'optimal' chose UL for nobody" in text and "not its smallest f(n)" in text


# ---------------------------------------------------------------------------- throttling (F5)


def test_throttled_drafting_times_match_the_rounds():
    r = run(**{"devices.count": 4, "compute.thermal": True, "compute.throttle_c": 30,
               "compute.time_constant_s": 0.5, "run.rounds": 12})
    dr, rt = r.device_rounds, r.rounds
    t = dict(zip(r.devices["device"].tolist(), r.devices["draft_latency_s"].tolist()))
    throttled = 0
    for rnd, p in paragraphs(explain(r, 12)).items():
        i = int(np.flatnonzero(rt["round"] == rnd)[0])
        times = {}
        for k, (story, _) in device_lines(p).items():
            j = rows_of(r, rnd)[k]
            m = re.search(r"= ([\d.]+) ms\)", story)
            times[k] = float(m.group(1)) * MS
            want = dr["draft_len"][j] * t[k] * dr["slowdown"][j]
            assert math.isclose(times[k], want, abs_tol=TOL_MS), story
            throttled += dr["slowdown"][j] > 1
        _, terms, _ = time_terms(p)
        assert math.isclose(max(times.values()), terms["draft"], abs_tol=TOL_MS), p
        slowest = int(re.search(r"slowest drafter: device (\d+)", p).group(1))
        assert math.isclose(times[slowest], rt["draft_s"][i], abs_tol=TOL_MS)
    assert throttled > 0


# ---------------------------------------------------------------------------- mobility (F6)


def test_a_moving_device_path_loss_is_the_one_at_its_round_distance():
    r = run(**{"devices.count": 3, "mobility.model": "random-waypoint",
               "mobility.speed_mps": 15.0, "run.rounds": 60})
    ch = r.scenario.channel
    dr = r.device_rounds
    moved = 0
    for rnd, p in paragraphs(explain(r, 60)).items():
        for k, (_, csi) in device_lines(p).items():
            j = rows_of(r, rnd)[k]
            m = re.search(r"UL gain (-?[\d.]+) dB = DL gain \(path loss at ([\d.]+) m (-?[\d.]+) dB, "
                          r"fading (-?[\d.]+) dB\)", csi)
            assert m, csi
            gain, dist, pl, fade = map(float, m.groups())
            want = 10 * math.log10(clamped_pathloss_gain(dr["distance_m"][j], ch.ref_gain_db,
                                                         ch.pathloss_exponent))
            assert abs(dist - dr["distance_m"][j]) <= 0.051 and abs(pl - want) <= 0.051, csi
            assert abs(gain - 10 * math.log10(dr["gain_ul"][j])) <= 0.051
            assert abs(gain - pl - fade) <= 0.11, csi
            moved += abs(dr["distance_m"][j] - r.devices["distance_m"][k]) > 10
    assert moved > 0


# ---------------------------------------------------------------------------- NR link (F8)


def test_the_nr_link_band_is_the_recorded_one():
    r = run(**{"devices.count": 3, "link.model": "mcs", "run.rounds": 6})
    dr = r.device_rounds
    checked = 0
    for rnd, p in paragraphs(explain(r, 6)).items():
        sent = [j for j in rows_of(r, rnd).values() if dr["mode"][j] in ("ul", "dl")]
        if not sent:
            continue
        line = next(s for s in p.split("\n") if s.startswith("  Corrections:"))
        band = re.search(r"(?:each )?on ([\d.]+) MHz", line)
        assert band, line
        for j in sent:
            assert math.isclose(float(band.group(1)) * 1e6, dr["bandwidth_hz"][j], rel_tol=2e-3)
        assert "Shannon idealisation" in line
        checked += 1
    assert checked > 0


# ---------------------------------------------------------------------------- reasons (F9)


def test_mismatch_reasons_name_the_active_components():
    r = run(**{"devices.count": 4, "csi.estimation_error_variance": 0.3, "run.rounds": 4})
    text = explain(r, 4)
    assert "The realised T_comm is" in text
    assert "csi.estimation_error_variance = 0.3" in text
    assert "fading blocks" not in text and "a link model" not in text
    r = run(**{"devices.count": 3, "cells.layout": "hex", "cells.count": 7, "run.rounds": 2})
    text = explain(r, 1)
    assert "interference of the other cells" in text
    assert "fading blocks" not in text
    assert text.count("SINR-equivalent gains g N0 / (N0 + psi)") == 7
    for line in text.split("\n"):
        if line.startswith("    CSI:"):
            assert line.startswith("    CSI: SINR-equivalent UL gain"), line


def test_a_round_waiting_for_a_carried_correction_says_so_and_adds_up():
    """Far devices and a 2 ms deadline: corrections carried to round 1 outlast its drafting and
    verification, and the round's communication time is that wait."""
    r = run(**{"devices.count": 6, "seed": 0, "run.rounds": 3, "policy.mode": "deadline",
               "straggler.deadline_ms": 2.0, "devices.distance_m": [300, 900]})
    rt = r.rounds
    waits = 0
    for rnd, p in paragraphs(explain(r, 3)).items():
        i = int(np.flatnonzero(rt["round"] == rnd)[0])
        line, terms, total = time_terms(p)
        assert math.isclose(terms["comm"], rt["comm_s"][i], abs_tol=TOL_MS), line
        assert math.isclose(sum(terms.values()), total, abs_tol=4 * TOL_MS), line
        waits += "waiting for the carried correction" in line
    assert waits > 0
