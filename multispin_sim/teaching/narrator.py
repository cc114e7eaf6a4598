"""The round narrator: the first rounds of a run told as a short story, in words and numbers.

Built only from a run's records (``rounds.csv``, ``device_rounds.csv``, ``devices.csv``), the
system's static parameters and the pure model functions of ``model/reactive.py``: for each round,
every device's draft length, acceptance and tokens, its CSI, then -- for the corrections sent --
the minimum-UL-delay order of the prefix lemma, the value f(n) of every split point n (first n devices on
UL, the rest share the DL power), the split chosen and why, each device's power and delay, and the
round's drafting, verification and communication times.

Every number printed is either a recorded value or recomputed from recorded values, so the story
never claims what the run did not do: throttled drafting uses the row's ``slowdown``, a moving
device's path loss its round's ``distance_m``, the band its recorded ``bandwidth_hz``; a
correction deferred by ``policy.mode: deadline`` (rejected, no mode) and the carried correction
it becomes at the next round start (not rejected, a mode) are told as such.

``explain(result, rounds)`` returns the text; ``multispin-sim run ... --explain N`` and
``multispin_sim.simulate(..., explain=N)`` print it.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..model.mimo import Transmission
from ..model.mobility import clamped_pathloss_gain
from ..model.reactive import (ReactiveProblem, dl_common_delay, evaluate_assignment,
                              prefix_split_delays)

__all__ = ["explain", "explain_round"]

_TIE_RTOL = 1e-6     # two split values this close are the same T_comm (a tie)


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


def _s(n):
    return "" if n == 1 else "s"


def _devices(ks):
    return ", ".join(f"device {k}" for k in ks) or "nobody"


@dataclasses.dataclass
class Context:
    """What a round's story needs besides its records: the run's settings that change how a
    recorded number is to be read (defaults: the paper's system)."""

    mode_name: str = "optimal"
    verify_model: str = "linear"
    link_model: str = "shannon"
    multi_user: bool = False          # an antenna scheme shares the band (model.mimo)
    cells: bool = False               # several cells: gains are interference-adjusted
    asynchronous: bool = False
    pathloss: tuple = None            # (ref_gain_db, exponent) to recompute a moving device's
    shadowing: bool = False           # path loss from distance_m (None: not recomputable)
    components: tuple = ()            # why a planned delay can differ from the realised one

    @classmethod
    def from_result(cls, result, cells=False):
        """The ``Context`` of ``result``'s scenario (``cells``: a cell of a run of several)."""
        sc = result.scenario
        fading = sc.channel.fading
        multi_user = bool(Transmission.from_scenario(sc).multi_user)
        why = []
        if sc.csi.estimation_error_variance > 0:
            why.append("the decision used estimated CSI (csi.estimation_error_variance = "
                       f"{sc.csi.estimation_error_variance:g}), the corrections met the true channel")
        if sc.csi.delay_ms > 0 and fading != "none":
            why.append(f"the CSI was {sc.csi.delay_ms:g} ms old at the decision (csi.delay_ms)")
        if sc.csi.cqi_quantisation:
            why.append("the decision saw a 4-bit CQI, not the exact gain")
        if cells:
            why.append("the interference of the other cells changed after the decision")
        if sc.channel.coherence_time_ms is not None and fading != "none":
            why.append(f"fading blocks of {sc.channel.coherence_time_ms:g} ms "
                       "(channel.coherence_time_ms) change the channel during a correction")
        if sc.link.model != "shannon":
            why.append(f"link.model = {sc.link.model} (whole PRBs, MCS, BLER and HARQ, not the "
                       "Shannon rate)")
        if sc.payload.model == "token":
            why.append("payload.model = token (each correction's own size)")
        if multi_user:
            why.append("the antenna scheme's own delays")
        power_law = sc.cells.pathloss == "power-law"
        return cls(
            mode_name=sc.policy.mode, verify_model=sc.server.verify_model,
            link_model=sc.link.model, multi_user=multi_user, cells=cells,
            asynchronous=sc.serving.protocol != "synchronous",
            pathloss=(sc.channel.ref_gain_db, sc.channel.pathloss_exponent) if power_law else None,
            shadowing=bool(sc.channel.shadowing_db > 0), components=tuple(why))

    def reasons(self):
        if not self.components:
            return ("the run's components differ from this Shannon-rate calculation on the "
                    "recorded CSI")
        return "; ".join(self.components)


def explain(result, rounds=3, _cell=False):
    """The first ``rounds`` rounds of ``result`` (a ``Result``) as plain text; a run of several
    cells is told cell by cell, each from its own records. ``rounds``: an integer >= 1
    (ValueError otherwise)."""
    if type(rounds) is bool or not hasattr(rounds, "__index__") or rounds < 1:
        raise ValueError(f"rounds={rounds!r}: expected a number of rounds >= 1")
    cells = getattr(result, "cells", None)
    if cells:
        return "\n".join(
            f"Cell {block['cell']} (server at ({cell.population.server_position[0]:.0f}, "
            f"{cell.population.server_position[1]:.0f}) m, {block['devices']} devices):\n"
            + explain(cell, rounds, _cell=True)
            for block, cell in zip(result.summary["cells"], cells))
    rt, dr, dev = result.rounds, result.device_rounds, result.devices
    system = result.population.system
    ctx = Context.from_result(result, cells=_cell)
    n = min(int(rounds), len(rt["round"]))
    sc = result.scenario
    draft = sc.policy.draft
    draft_note = "" if draft == "fixed" else f", draft lengths chosen by policy.draft = {draft}"
    first = "The first round" if n == 1 else f"The first {n} rounds"
    head = (f"{first} of this run ({system.k} devices, "
            f"B = {_mhz(system.bandwidth_hz)}, DL budget {_mw(system.p_dl_w)}, "
            f"one distribution = {system.payload_bits:,.0f} bits, policy.mode = {ctx.mode_name}"
            f"{draft_note}).\n"
            "A rejected device needs a correction: by UL the device sends its draft distribution "
            "up at full power; by DL the server sends the target distribution down, sharing its "
            "DL budget so that all DL delays are equal.")
    if sc.payload.model == "token":
        head += ("\npayload.model = token: a correction's bits depend on its distributions "
                 f"(payload.format = {sc.payload.format}); the split tables below use the nominal "
                 "size above, the recorded powers and delays are the real ones.")
    if ctx.asynchronous:
        # rounds.csv lists batches in the order they end; a batch's duration_s is its span
        # (docs/guide/outputs.md), which includes the time it waits for the server and the
        # channel while other batches use them
        head += (f"\nserving.protocol = {sc.serving.protocol}: each 'round' below is one "
                 "batch of the server, told in batch order; batches overlap in time, and a "
                 "batch's length is its span, from its earliest draft start to its last "
                 "correction's end, so it includes the time it waits while the server or the "
                 "channel serves other batches.")
    server = sc.server
    if server.antennas > 1 or ctx.multi_user:
        head += (f"\nThe server has {server.antennas} antenna(s) (DL {server.dl_scheme}, UL "
                 f"{server.ul_scheme}): the gains below are the array gains ||a_k||^2; the "
                 "split table is the paper's orthogonal-band calculation on them, the powers "
                 "and delays are the scheme's (device_rounds.csv: gain_eff, snr_eff; "
                 "docs/components/antennas.md).")
        if ctx.multi_user:
            head += (" A scheme that shares the band makes the policy evaluate the splits "
                     "with the scheme's own delays (docs/model.md section 9), not with this table.")
    if ctx.cells:
        head += ("\nSeveral cells: the gains below are SINR-equivalent gains g N0 / (N0 + psi), "
                 "the interference psi at the decision included (docs/components/cells.md).")
    if "distance_m" in dr:
        head += ("\nThe devices move: a device's path loss is the one at its distance at the "
                 "round start (device_rounds.csv distance_m).")
    parts = [head]
    # the rounds with the smallest numbers, in order (asynchronous batches are recorded in
    # the order they end, which is not their number order)
    for i in np.argsort(np.asarray(rt["round"]), kind="stable")[:n].tolist():
        parts.append(explain_round(rt, dr, dev, system, i, ctx))
    return "\n\n".join(parts) + "\n"


def _mode(dr, j):
    return str(dr["mode"][j]).strip().lower()


def explain_round(rt, dr, dev, system, i, ctx=None):
    """Round at row ``i`` of the rounds table as a paragraph (str); ``ctx``: the run's
    ``Context`` (None: the paper's system)."""
    ctx = ctx or Context()
    r = int(rt["round"][i])
    rows = np.flatnonzero(dr["round"] == r).tolist()
    ids = dev["device"].tolist()
    alpha = dict(zip(ids, dev["alpha"].tolist()))
    t_draft = dict(zip(ids, dev["draft_latency_s"].tolist()))
    static_pl = dict(zip(ids, dev["pathloss_gain"].tolist()))
    p_ul = dict(zip(ids, dev["ul_power_w"].tolist()))
    slowdown = dr.get("slowdown")
    distance = dr.get("distance_m")
    # a deferred correction: rejected, nothing sent (policy.mode deadline); a carried one: the
    # deferred correction sent at this round start by a device that does not draft
    rejected = [j for j in rows if int(dr["rejected"][j])]
    sent = [j for j in rejected if _mode(dr, j) in ("ul", "dl")]
    deferred = [j for j in rejected if not _mode(dr, j)]
    carried = [j for j in rows if not int(dr["rejected"][j]) and _mode(dr, j) in ("ul", "dl")]
    verified = len(rows) - len(carried)
    head = (f"Round {r} starts at t = {rt['start_s'][i]:.4f} s with {verified} device{_s(verified)} "
            "in the batch")
    if carried:
        head += (f", and {_devices(int(dr['device'][j]) for j in carried)} sending the "
                 f"correction{_s(len(carried))} deferred last round")
    lines = [head + "."]
    slowest_draft, slowest_dev = -1.0, None
    for j in rows:
        k = int(dr["device"][j])
        g, a, toks = int(dr["draft_len"][j]), int(dr["accepted"][j]), int(dr["tokens"][j])
        s = float(slowdown[j]) if slowdown is not None else 1.0
        d = g * t_draft[k] * s                  # a throttled device drafts s times slower
        if j not in carried and d > slowest_draft:
            slowest_draft, slowest_dev = d, k
        how = (f"{g} x {_ms(t_draft[k])} = {_ms(d)}" if s == 1.0 else
               f"{g} x {_ms(t_draft[k])} x {s:.2f} (throttled) = {_ms(d)}")
        drafts = f"drafts {g} token{_s(g)} ({how})"
        if j in carried:
            story = (f"skips drafting: it sends the correction deferred last round, "
                     f"{_link(dr, j)}, from the round start while the others draft; that "
                     f"correction is its {toks} token{_s(toks)} this round")
        elif g == 0:
            story = "drafts nothing; the server generates 1 token for it (plain decoding)"
        elif j in deferred:
            story = (f"{drafts}; {a} accepted, draft {a + 1} rejected -> {toks} token{_s(toks)} now: "
                     "its correction is deferred to the next round start, and the correction "
                     "token arrives then")
        elif int(dr["rejected"][j]):
            story = (f"{drafts}; {a} accepted, draft {a + 1} rejected -> {toks} token{_s(toks)} "
                     "(the correction is one of them), needs a correction")
        else:
            story = f"{drafts}; all {g} accepted + the bonus token -> {toks} tokens, no correction"
        lines.append(f"  device {k} (alpha {alpha[k]:.2f}) {story}.")
        lines.append(f"    CSI: {_csi(dr, j, static_pl[k], distance, ctx)}.")
    if not rejected:
        lines.append("  Nobody was rejected: no correction, T_comm = 0.")
    else:
        lines.extend(_corrections(dr, sent, deferred, system, p_ul, ctx))
    lines.append(_time_line(rt, dr, i, sent, carried, slowest_draft, slowest_dev, system, ctx))
    return "\n".join(lines)


def _link(dr, j):
    """'by UL at 10.00 mW -> 4.31 ms' of a transmission's row."""
    p, d = float(dr["power_w"][j]), float(dr["delay_s"][j])
    return f"by {_mode(dr, j).upper()} at {_mw(p)} -> {_ms(d)}"


def _csi(dr, j, static_pl, distance, ctx):
    gu, gd = float(dr["gain_ul"][j]), float(dr["gain_dl"][j])
    label = "path loss"
    pl = static_pl
    if distance is not None:
        dist = float(distance[j])
        if ctx.pathloss is None:      # a 3GPP path loss (LOS draws): not recomputable here
            pl, where = None, f"device at {dist:.1f} m"
        else:
            pl = float(clamped_pathloss_gain(dist, *ctx.pathloss))
            label = f"path loss at {dist:.1f} m"
    elif ctx.shadowing:
        label = "path loss with shadowing"
    # what the gain has on top of the large-scale part: the fade (and, with shadowing that
    # drifts as the device moves, or in cells, more than the fade)
    rest = "fading"
    if distance is not None and ctx.shadowing:
        rest = "shadowing and fading"
    if ctx.cells:
        rest += " and interference"
    gains = "SINR-equivalent UL gain" if ctx.cells else "UL gain"
    csi = f"{gains} {_db(gu)}"
    if pl is None:
        return csi + (" = DL gain" if gu == gd else f", DL gain {_db(gd)}") + f" ({where})"
    fade = gu / pl if pl > 0 else float("nan")
    if gu == gd:
        return csi + f" = DL gain ({label} {_db(pl)}, {rest} {_db(fade)})"
    return csi + f", DL gain {_db(gd)} ({label} {_db(pl)})"


def _share(dr, sent, deferred, b, ctx):
    """The band sentence: from the recorded bandwidth_hz of the corrections sent."""
    n = len(sent)
    who = ""
    if deferred:
        names = _devices(int(dr["device"][j]) for j in deferred)
        who = (f"{names}'s correction is deferred; " if len(deferred) == 1 else
               f"the corrections of {names} are deferred; ")
    if not n:
        return f"  Corrections: {who}none is sent this round."
    bands = [float(dr["bandwidth_hz"][j]) for j in sent]
    same = all(math.isclose(x, bands[0], rel_tol=1e-9) for x in bands)
    if same and math.isclose(bands[0], b, rel_tol=1e-9):
        share = (f"{n} {'rejected devices' if not deferred else 'corrections sent'} share B "
                 f"equally: {_mhz(b)} each" if n != 1 else
                 f"1 {'rejected device' if not deferred else 'correction sent'} gets all of B "
                 f"({_mhz(b)})")
        return f"  Corrections: {who}{share}."
    recorded = ((f"each on {_mhz(bands[0])}" if n > 1 else f"on {_mhz(bands[0])}") if same else
                ", ".join(f"device {int(dr['device'][j])} on {_mhz(x)}" for j, x in zip(sent, bands)))
    why = (f"link.model = {ctx.link_model} gives whole PRBs" if ctx.link_model != "shannon"
           else "as recorded")
    return (f"  Corrections: {who}{n} correction{_s(n)} sent, {recorded} ({why}); the table below "
            f"is the Shannon idealisation on B/|R| = {_mhz(b)}.")


def _corrections(dr, sent, deferred, system, p_ul, ctx):
    """The lines of the round's corrections: the band, the prefix-split table on the recorded
    CSI, the split chosen and why, each sent correction's power and delay, the deferred ones."""
    if not sent:
        return [_share(dr, sent, deferred, 0.0, ctx)] + _deferred_lines(dr, deferred)
    devs = [int(dr["device"][j]) for j in sent]
    # the table is on the corrections sent: 'deadline' solves the split again without the
    # deferred ones, so they take no band
    g_ul = np.array([float(dr["gain_ul"][j]) for j in sent])
    g_dl = np.array([float(dr["gain_dl"][j]) for j in sent])
    pu = np.array([p_ul[k] for k in devs])
    problem = ReactiveProblem(np.ones((1, len(sent)), bool), g_ul, g_dl, pu, system.p_dl_w,
                              system.payload_bits, system.bandwidth_hz, system.n0)
    b = float(problem.bandwidth_per_device[0])
    d_ul = problem.ul_delays()[0]
    f, cols = prefix_split_delays(problem)
    f, cols = f[0], cols[0]
    best = int(np.argmin(f))
    out = [_share(dr, sent, deferred, b, ctx)]
    order = ", ".join(f"device {devs[c]} ({_ms(d_ul[c])})" for c in cols)
    out.append(f"    Minimum-UL-delay order (the sort of the prefix lemma: full-power UL "
               f"delay, shortest first): {order}.")
    out.append("    Prefix split: the first n go UL, the rest DL; f(n) = max(slowest UL, shared DL delay):")
    for m in range(len(sent) + 1):
        ul_part = _ms(float(d_ul[cols[m - 1]])) if m else "-"
        dl_inv = float(np.sum(1.0 / g_dl[cols[m:]])) if m < len(sent) else 0.0
        dl_part = "-" if m == len(sent) else _ms(float(f[m]) if dl_inv == 0 else float(
            dl_common_delay(system.payload_bits, b, system.p_dl_w, dl_inv, system.n0)))
        mark = "  <- smallest" if m == best else ""
        out.append(f"      n = {m}: max(UL {ul_part}, DL {dl_part}) = {_ms(float(f[m]))}{mark}")
    ul = [_mode(dr, j) == "ul" for j in sent]
    chosen_ul = sorted(k for k, u in zip(devs, ul) if u)
    # this table's f of the recorded assignment
    f_rec = float(evaluate_assignment(problem, np.array([ul], dtype=bool)).t_comm[0])
    out.append(_why(devs, cols, best, f, chosen_ul, f_rec, deferred, dr, ctx))
    realised = max(float(dr["delay_s"][j]) for j in sent)
    if not math.isclose(realised, f_rec, rel_tol=1e-6, abs_tol=1e-12):
        why = ctx.reasons()
        out[-1] += (f" The realised T_comm is {_ms(realised)}, not the {_ms(f_rec)} this "
                    "calculation gives on the recorded CSI, "
                    + ("for the same reasons." if why in out[-1] else f"because of: {why}."))
    planned = dr.get("planned_delay_s")
    for j in sent:
        k = int(dr["device"][j])
        p, d = float(dr["power_w"][j]), float(dr["delay_s"][j])
        note = ""
        if planned is not None and not math.isclose(float(planned[j]), d, rel_tol=1e-9):
            note = f" (planned {_ms(float(planned[j]))} on the CSI at the decision)"
        if _mode(dr, j) == "ul":
            out.append(f"      device {k}: UL at {_mw(p)} (its full budget) -> {_ms(d)}{note}")
        else:
            share = p / system.p_dl_w if system.p_dl_w > 0 else float("nan")
            out.append(f"      device {k}: DL at {_mw(p)} ({share:.0%} of the DL budget) -> {_ms(d)}{note}")
    return out + _deferred_lines(dr, deferred)


def _deferred_lines(dr, deferred):
    return [f"      device {int(dr['device'][j])}: deferred: its correction goes out at the start "
            "of the next round, while the others draft" for j in deferred]


def _why(devs, cols, best, f, chosen_ul, f_rec, deferred, dr, ctx):
    """Which split the policy chose and why, claiming only what the records show."""
    prefix_ul = sorted(devs[c] for c in cols[:best])
    who = _devices(devs[c] for c in cols[:best])
    t_best = float(f[best])
    if ctx.multi_user:
        # the policy evaluated the splits with the scheme's delays: the table's argmin is not
        # what it minimised
        dl = sorted(set(devs) - set(chosen_ul))
        return (f"    Chosen by policy '{ctx.mode_name}' with the antenna scheme's delays: UL for "
                f"{_devices(chosen_ul)}, DL for {_devices(dl)} (on this orthogonal-band table that "
                f"assignment gives {_ms(f_rec)}; its smallest f(n) is n = {best}, {_ms(t_best)}).")
    if ctx.mode_name == "deadline" and deferred:
        lead = (f"    Chosen by policy 'deadline': it deferred "
                f"{_devices(int(dr['device'][j]) for j in deferred)} (slower than the round's "
                "deadline) and split the rest optimally")
        if chosen_ul == prefix_ul:
            return f"{lead}: n = {best}, UL for {who}, so T_comm = {_ms(t_best)}."
        return (f"{lead}: UL for {_devices(chosen_ul)} ({_ms(f_rec)} on this table; its smallest "
                f"f(n) is n = {best}, {_ms(t_best)}).")
    if ctx.mode_name == "deadline" and chosen_ul == prefix_ul:
        return (f"    Chosen by policy 'deadline': nothing deferred, so the optimal split: "
                f"n = {best}, UL for {who}, T_comm = {_ms(t_best)}.")
    if ctx.mode_name != "optimal":
        return (f"    Chosen by policy '{ctx.mode_name}': {len(chosen_ul) or 'nobody'} on UL; the "
                f"optimal split would put n = {best} on UL for T_comm = {_ms(t_best)}.")
    why = (f"    Chosen by policy 'optimal': n = {best}, UL for {who} (the split with the "
           f"smallest f(n), so T_comm = {_ms(t_best)}).")
    if chosen_ul == prefix_ul:
        return why
    if math.isclose(f_rec, t_best, rel_tol=_TIE_RTOL, abs_tol=1e-12):
        return why + (f" The records show UL for {chosen_ul or 'nobody'} (a tie: another "
                      f"assignment with the same T_comm, {_ms(f_rec)}).")
    # not the table's argmin and not a tie: the decision saw other delays than this table
    return (f"    Policy 'optimal' chose UL for {_devices(chosen_ul)}, which gives {_ms(f_rec)} on "
            f"this table, not its smallest f(n) (n = {best}, UL for {who}, {_ms(t_best)}): the "
            f"decision used another model of the delays ({ctx.reasons()}).")


def _time_line(rt, dr, i, sent, carried, slowest_draft, slowest_dev, system, ctx):
    ver0, ver1 = system.verify_fixed_s, system.verify_per_device_s
    draft, verify = float(rt["draft_s"][i]), float(rt["verify_s"][i])
    comm, duration = float(rt["comm_s"][i]), float(rt["duration_s"][i])
    slow_tx = ""
    if sent:
        jmax = max(sent, key=lambda j: float(dr["delay_s"][j]))
        slow_tx = f" (slowest correction: device {int(dr['device'][jmax])})"
        # this round's corrections start only when the carried ones have freed the band
        extra = comm - float(dr["delay_s"][jmax])
        if carried and extra > 5e-6:
            slow_tx = (f" (slowest correction: device {int(dr['device'][jmax])}, after "
                       f"{_ms(extra)} waiting for the carried correction to free the band)")
    elif carried and comm > 0:
        slow_tx = f" (waiting for the carried correction{_s(len(carried))} to arrive)"
    # batch_size: the devices verified (a device that only sends a carried correction is not)
    formula = (f"{ver0 * 1e3:.1f} + {int(rt['batch_size'][i])} x {ver1 * 1e3:.1f} ms"
               if ctx.verify_model == "linear" else f"server.verify_model = {ctx.verify_model}")
    slowest = (f" (slowest drafter: device {slowest_dev})"
               if slowest_dev is not None and slowest_draft > 0 else "")
    line = (f"  Time: draft {_ms(draft)}{slowest}"
            + f" + verify {_ms(verify)} ({formula}) + comm {_ms(comm)}{slow_tx}")
    # asynchronous batches wait for the server and the channel: the span is more than the sum
    wait = duration - (draft + verify + comm)
    if wait > 5e-6:
        line += (f" + waiting {_ms(wait)} (the server or the channel busy with other batches)"
                 if ctx.asynchronous else f" + waiting {_ms(wait)}")
    return line + f" = {_ms(duration)}; {int(rt['tokens'][i])} tokens this round."
