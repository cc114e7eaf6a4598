"""The round narrator: the first rounds of a run told as a short story, in words and numbers.

Built only from a run's records (``rounds.csv``, ``device_rounds.csv``, ``devices.csv``), the
system's static parameters and the pure model functions of ``model/reactive.py``: for each round,
every device's draft length, acceptance and tokens, its CSI, then -- for the rejected devices --
the minimum-UL-delay order of the prefix lemma, the value f(n) of every split point n (first n devices on
UL, the rest share the DL power), the split chosen and why, each device's power and delay, and the
round's drafting, verification and communication times.

``explain(result, rounds)`` returns the text; ``multispin-sim run ... --explain N`` and
``multispin_sim.simulate(..., explain=N)`` print it.
"""
from __future__ import annotations

import math

import numpy as np

from ..model.mimo import Transmission
from ..model.reactive import ReactiveProblem, prefix_split_delays

__all__ = ["explain", "explain_round"]


def _ms(seconds):
    if not math.isfinite(seconds):
        return "inf ms"
    return f"{seconds * 1e3:.2f} ms"


def _db(x):
    return f"{10 * math.log10(x):.1f} dB" if x > 0 else "-inf dB"


def _mw(watts):
    return f"{watts * 1e3:.2f} mW"


def _mhz(hz):
    return f"{hz / 1e6:.3g} MHz"


def _tables(result):
    return result.rounds, result.device_rounds, result.devices


def explain(result, rounds=3):
    """The first ``rounds`` rounds of ``result`` (a ``Result``) as plain text; a run of several
    cells is told cell by cell, each from its own records."""
    cells = getattr(result, "cells", None)
    if cells:
        return "\n".join(
            f"Cell {block['cell']} (server at ({cell.population.server_position[0]:.0f}, "
            f"{cell.population.server_position[1]:.0f}) m, {block['devices']} devices):\n"
            + explain(cell, rounds)
            for block, cell in zip(result.summary["cells"], cells))
    rt, dr, dev = _tables(result)
    system = result.population.system
    mode_name = getattr(getattr(result.scenario, "policy", None), "mode", "optimal")
    n = min(int(rounds), len(rt["round"]))
    draft = getattr(getattr(result.scenario, "policy", None), "draft", "fixed")
    draft_note = "" if draft == "fixed" else f", draft lengths chosen by policy.draft = {draft}"
    first = "The first round" if n == 1 else f"The first {n} rounds"
    head = (f"{first} of this run ({system.k} devices, "
            f"B = {_mhz(system.bandwidth_hz)}, DL budget {_mw(system.p_dl_w)}, "
            f"one distribution = {system.payload_bits:,.0f} bits, policy.mode = {mode_name}"
            f"{draft_note}).\n"
            "A rejected device needs a correction: by UL the device sends its draft distribution "
            "up at full power; by DL the server sends the target distribution down, sharing its "
            "DL budget so that all DL delays are equal.")
    payload = getattr(result.scenario, "payload", None)
    if getattr(payload, "model", "bits") == "token":
        head += ("\npayload.model = token: a correction's bits depend on its distributions "
                 f"(payload.format = {payload.format}); the split tables below use the nominal "
                 "size above, the recorded powers and delays are the real ones.")
    protocol = getattr(getattr(result.scenario, "serving", None), "protocol", "synchronous")
    if protocol != "synchronous":
        head += (f"\nserving.protocol = {protocol}: each 'round' below is one batch of the server; "
                 "batches overlap in time, and a batch's length is counted from the previous "
                 "batch's end.")
    server = getattr(result.scenario, "server", None)
    if server is not None and (server.antennas > 1
                               or Transmission.from_scenario(result.scenario).multi_user):
        head += (f"\nThe server has {server.antennas} antenna(s) (DL {server.dl_scheme}, UL "
                 f"{server.ul_scheme}): the gains below are the array gains ||a_k||^2; the "
                 "split table is the paper's orthogonal-band calculation on them, the powers "
                 "and delays are the scheme's (device_rounds.csv: gain_eff, snr_eff; "
                 "docs/components/antennas.md).")
    parts = [head]
    verify_model = getattr(server, "verify_model", "linear")
    for i in range(n):
        parts.append(explain_round(rt, dr, dev, system, i, mode_name, verify_model))
    return "\n\n".join(parts) + "\n"


def explain_round(rt, dr, dev, system, i, mode_name="optimal", verify_model="linear"):
    """Round at row ``i`` of the rounds table as a paragraph."""
    r = int(rt["round"][i])
    rows = np.flatnonzero(dr["round"] == r)
    alpha = dict(zip(dev["device"].tolist(), dev["alpha"].tolist()))
    t_draft = dict(zip(dev["device"].tolist(), dev["draft_latency_s"].tolist()))
    pathloss = dict(zip(dev["device"].tolist(), dev["pathloss_gain"].tolist()))
    p_ul = dict(zip(dev["device"].tolist(), dev["ul_power_w"].tolist()))
    modes = [str(m).strip().lower() for m in dr["mode"][rows]]
    n_rej = int(rt["n_rejected"][i])
    lines = [f"Round {r} starts at t = {rt['start_s'][i]:.4f} s with {len(rows)} device"
             f"{'s' if len(rows) != 1 else ''} in the batch."]
    slowest_draft, slowest_dev = -1.0, None
    for j in rows:
        k = int(dr["device"][j])
        g, a, toks = int(dr["draft_len"][j]), int(dr["accepted"][j]), int(dr["tokens"][j])
        d = g * t_draft[k]
        if d > slowest_draft:
            slowest_draft, slowest_dev = d, k
        if g == 0:
            story = "drafts nothing; the server generates 1 token for it (plain decoding)"
        elif int(dr["rejected"][j]):
            story = (f"drafts {g} token{'s' if g != 1 else ''} ({g} x {_ms(t_draft[k])} = {_ms(d)}); "
                     f"{a} accepted, draft {a + 1} rejected -> {toks} token{'s' if toks != 1 else ''} "
                     "(the correction is one of them), needs a correction")
        else:
            story = (f"drafts {g} token{'s' if g != 1 else ''} ({g} x {_ms(t_draft[k])} = {_ms(d)}); "
                     f"all {g} accepted + the bonus token -> {toks} tokens, no correction")
        gu, gd = float(dr["gain_ul"][j]), float(dr["gain_dl"][j])
        fade = gu / pathloss[k] if pathloss[k] > 0 else float("nan")
        csi = f"UL gain {_db(gu)}"
        csi += (f" = DL gain (path loss {_db(pathloss[k])}, fading {_db(fade)})" if gu == gd
                else f", DL gain {_db(gd)} (path loss {_db(pathloss[k])})")
        lines.append(f"  device {k} (alpha {alpha[k]:.2f}) {story}.")
        lines.append(f"    CSI: {csi}.")
    rej = [j for j in rows if int(dr["rejected"][j])]
    if not rej:
        lines.append("  Nobody was rejected: no correction, T_comm = 0.")
    else:
        lines.extend(_corrections(dr, rej, modes, rows, system, p_ul, mode_name, n_rej))
    ver0, ver1 = system.verify_fixed_s, system.verify_per_device_s
    comm = float(rt["comm_s"][i])
    slow_tx = ""
    if rej:
        jmax = max(rej, key=lambda j: float(dr["delay_s"][j]))
        slow_tx = f" (slowest correction: device {int(dr['device'][jmax])})"
    lines.append(
        f"  Time: draft {_ms(float(rt['draft_s'][i]))}"
        + (f" (slowest drafter: device {slowest_dev})" if slowest_dev is not None and slowest_draft > 0 else "")
        + f" + verify {_ms(float(rt['verify_s'][i]))} ("
        + (f"{ver0 * 1e3:.1f} + {int(rt['batch_size'][i])} x {ver1 * 1e3:.1f} ms"
           if verify_model == "linear" else f"server.verify_model = {verify_model}")
        + f") + comm {_ms(comm)}{slow_tx} = {_ms(float(rt['duration_s'][i]))}; "
        f"{int(rt['tokens'][i])} tokens this round.")
    return "\n".join(lines)


def _corrections(dr, rej, modes, rows, system, p_ul, mode_name, n_rej):
    devs = [int(dr["device"][j]) for j in rej]
    g_ul = np.array([float(dr["gain_ul"][j]) for j in rej])
    g_dl = np.array([float(dr["gain_dl"][j]) for j in rej])
    pu = np.array([p_ul[k] for k in devs])
    problem = ReactiveProblem(np.ones((1, len(rej)), bool), g_ul, g_dl, pu, system.p_dl_w,
                              system.payload_bits, system.bandwidth_hz, system.n0)
    b = float(problem.bandwidth_per_device[0])
    d_ul = problem.ul_delays()[0]
    f, cols = prefix_split_delays(problem)
    f, cols = f[0], cols[0]
    best = int(np.argmin(f))
    share = (f"{n_rej} rejected devices share B equally: {_mhz(b)} each" if n_rej != 1
             else f"1 rejected device gets all of B ({_mhz(b)})")
    out = [f"  Corrections: {share}."]
    order = ", ".join(f"device {devs[c]} ({_ms(d_ul[c])})" for c in cols)
    out.append(f"    Minimum-UL-delay order (the sort of the prefix lemma: full-power UL "
               f"delay, shortest first): {order}.")
    out.append("    Prefix split: the first n go UL, the rest DL; f(n) = max(slowest UL, shared DL delay):")
    for m in range(len(rej) + 1):
        ul_part = _ms(float(d_ul[cols[m - 1]])) if m else "-"
        dl_inv = float(np.sum(1.0 / g_dl[cols[m:]])) if m < len(rej) else 0.0
        dl_part = "-" if m == len(rej) else _ms(float(f[m]) if dl_inv == 0 else
                                                 float(_dl_tau(system, b, dl_inv)))
        mark = "  <- smallest" if m == best else ""
        out.append(f"      n = {m}: max(UL {ul_part}, DL {dl_part}) = {_ms(float(f[m]))}{mark}")
    chosen_ul = [devs[c] for c in range(len(rej)) if modes[list(rows).index(rej[c])] == "ul"]
    prefix_ul = sorted(devs[c] for c in cols[:best])
    if mode_name == "optimal":
        who = ", ".join(f"device {devs[c]}" for c in cols[:best]) or "nobody"
        why = (f"    Chosen by policy 'optimal': n = {best}, UL for {who} (the split with the "
               f"smallest f(n), so T_comm = {_ms(float(f[best]))}).")
        if sorted(chosen_ul) != prefix_ul:
            why += (f" The records show UL for {sorted(chosen_ul) or 'nobody'} (a tie: another "
                    "assignment with the same T_comm).")
    else:
        why = (f"    Chosen by policy '{mode_name}': {len(chosen_ul) or 'nobody'} on UL; the optimal split would "
               f"put n = {best} on UL for T_comm = {_ms(float(f[best]))}.")
    realised = max(float(dr["delay_s"][j]) for j in rej)
    if mode_name == "optimal" and not math.isclose(realised, float(f[best]), rel_tol=1e-6, abs_tol=1e-12):
        why += (f" The realised T_comm is {_ms(realised)}: the run's components (fading blocks "
                "shorter than the correction, a link model, ...) differ from this Shannon-rate "
                "calculation on the recorded CSI.")
    out.append(why)
    planned = dr.get("planned_delay_s")
    for j in rej:
        k = int(dr["device"][j])
        m = modes[list(rows).index(j)]
        p, d = float(dr["power_w"][j]), float(dr["delay_s"][j])
        note = ""
        if planned is not None and not math.isclose(float(planned[j]), d, rel_tol=1e-9):
            note = f" (planned {_ms(float(planned[j]))} on the CSI at the decision)"
        if m == "ul":
            out.append(f"      device {k}: UL at {_mw(p)} (its full budget) -> {_ms(d)}{note}")
        elif m == "dl":
            share = p / system.p_dl_w if system.p_dl_w > 0 else float("nan")
            out.append(f"      device {k}: DL at {_mw(p)} ({share:.0%} of the DL budget) -> {_ms(d)}{note}")
        elif not m:   # policy.mode deadline: no correction this round
            out.append(f"      device {k}: deferred: its correction goes out at the start of "
                       "the next round, while the others draft")
        else:
            out.append(f"      device {k}: mode {m} -> {_ms(d)}{note}")
    return out


def _dl_tau(system, b, inv_gain_sum):
    from ..model.reactive import dl_common_delay

    return dl_common_delay(system.payload_bits, b, system.p_dl_w, inv_gain_sum, system.n0)
