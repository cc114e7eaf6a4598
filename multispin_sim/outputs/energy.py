"""Energy columns of the records and their totals (the accounting itself is ``model.energy``).

device_rounds.csv gains ``slowdown`` (the drafting-latency multiplier of thermal throttling,
1 when not throttled), ``energy_draft_j``, ``energy_ul_j``, ``energy_dl_j``, ``energy_idle_j``
and ``energy_j`` (their sum), with thermal throttling also ``temperature_c`` (at the round's
end); rounds.csv gains ``device_energy_j`` (sum over the round's
devices), ``server_dl_energy_j``, ``verify_energy_j`` and ``energy_j`` (device + server).
devices.csv gains ``energy_j`` and ``tokens_per_j``; summary.json an ``energy`` block.
"""
from functools import reduce
from operator import add

import numpy as np

from ..model.energy import AIRTIME, RADIATED, tokens_per_joule

DEVICE_ENERGY_COLUMNS = {"slowdown": float, "energy_draft_j": float, "energy_ul_j": float,
                         "energy_dl_j": float, "energy_idle_j": float, "energy_j": float}
ROUND_ENERGY_COLUMNS = {"device_energy_j": float, "server_dl_energy_j": float,
                        "verify_energy_j": float, "energy_j": float}


class EnergyAccount:
    """Per-round energy columns and run totals for ``Recorder`` (``powers``:
    ``model.energy.Powers``)."""

    def __init__(self, powers, k, thermal=None):
        self.powers = powers
        self.k = k
        self.thermal = thermal  # model.compute.ThermalState: adds temperature_c (round end)
        self.device_columns_spec = dict(DEVICE_ENERGY_COLUMNS) | (
            {"temperature_c": float} if thermal is not None else {})
        self.device_j = np.zeros(k)
        self.phase_j = np.zeros(4)       # draft, ul, dl, idle (devices)
        self.server_dl_j = 0.0
        self.verify_j = 0.0
        self._draft_w = np.asarray(powers.draft_w, dtype=float)

    def rounds(self, active, full, draft_s, mode, power, delay, duration, verify, link=None,
               slowdown=None):
        """Energy of a block of rounds; the totals are updated.

        ``active``, ``draft_s``, ``mode``, ``power``, ``delay``: (n, K) over all devices (only
        the active entries count); ``full``: (n,) every device active; ``duration``: (n,), or
        (n, K) where each device's time in the row differs; ``verify``: (n,); ``link``: the link's columns of the rounds, name -> (n, K) (its ``AIRTIME`` and
        ``RADIATED``, when it records them, replace the delay and power x delay). Returns the
        per-device columns as (n, K) arrays (select the active entries) and the round columns
        (device_energy_j, server_dl_energy_j, verify_energy_j, energy_j) as (n,) arrays. The same
        arithmetic as ``model.energy.device_round_energy`` and ``server_round_energy`` (tests
        check the identities), element by element; each round's sums are taken over its active
        devices in device order, as one round's array, and the totals add the rounds in turn.
        """
        p = self.powers
        ul = mode == 1
        dl = mode == 2
        # a throttled device drafts at its power / slowdown (model.energy.draft_power)
        e_draft = (self._draft_w if slowdown is None else self._draft_w / slowdown) * draft_s
        if link is not None and AIRTIME in link:   # on air for part of the delay
            delay, radiated = link[AIRTIME], link[RADIATED]
            e_ul = np.where(ul, radiated + p.ul_circuit_w * delay, 0.0)
        else:
            radiated = power * delay
            e_ul = np.where(ul, (power + p.ul_circuit_w) * delay, 0.0)
        e_dl = np.where(dl, p.dl_receive_w * delay, 0.0)
        span = duration[:, None] if np.ndim(duration) == 1 else duration
        wait = span - draft_s - np.where(ul | dl, delay, 0.0)
        e_idle = p.idle_w * np.maximum(wait, 0.0, out=wait)
        e = e_draft + e_ul + e_dl + e_idle
        e_tx = np.where(dl, radiated, 0.0)
        parts = (e_draft, e_ul, e_dl, e_idle, e_tx, e)
        # a row's sum is the sum of that round's array (the same pairwise summation); where
        # devices were inactive, the sum of the active entries alone (zeros would regroup it),
        # taken for all the rounds with the same number of active devices at once: one row
        # each, the same sum as the round's own array
        sums = [x.sum(axis=1) for x in parts]
        partial = np.flatnonzero(~full)
        counts = np.count_nonzero(active[partial], axis=1)
        for n in np.unique(counts).tolist():
            rows = partial[counts == n]
            sel = active[rows]
            for total, x in zip(sums, parts):
                total[rows] = x[rows][sel].reshape(rows.size, n).sum(axis=1)
        s_draft, s_ul, s_dl, s_idle, s_tx, dev_total = sums
        e_ver = p.server_w * verify
        # running totals: round after round (accumulate adds in sequence)
        self.device_j[:] = np.add.accumulate(
            np.concatenate([self.device_j[None], np.where(active, e, 0.0)]), axis=0)[-1]
        self.phase_j[:] = np.add.accumulate(
            np.concatenate([self.phase_j[None], np.stack([s_draft, s_ul, s_dl, s_idle], axis=1)]),
            axis=0)[-1]
        self.server_dl_j = _running(self.server_dl_j, s_tx)
        self.verify_j = _running(self.verify_j, e_ver)
        columns = {"energy_draft_j": e_draft, "energy_ul_j": e_ul, "energy_dl_j": e_dl,
                   "energy_idle_j": e_idle, "energy_j": e}
        return columns, [dev_total, s_tx, e_ver, dev_total + s_tx + e_ver]

    def summary(self, tokens):
        device = float(self.device_j.sum())
        server = self.server_dl_j + self.verify_j
        return {
            "device_j": device,
            "draft_j": float(self.phase_j[0]), "ul_j": float(self.phase_j[1]),
            "dl_j": float(self.phase_j[2]), "idle_j": float(self.phase_j[3]),
            "server_dl_j": self.server_dl_j, "verify_j": self.verify_j,
            "server_j": server, "total_j": device + server,
            "tokens_per_j_device": float(tokens_per_joule(tokens, device)),
            "tokens_per_j_total": float(tokens_per_joule(tokens, device + server)),
        }

    def device_columns(self, device_tokens):
        return {"energy_j": self.device_j,
                "tokens_per_j": tokens_per_joule(device_tokens, self.device_j)}


def _running(total, values):
    """``total`` plus each of ``values`` in turn (a Python float; the loop in C)."""
    return reduce(add, values.tolist(), total)


def summed_energy(blocks, tokens):
    """The ``energy`` block of several cells' summaries: every energy (J) summed over the cells,
    tokens per joule of the sums (``tokens``: the network's tokens)."""
    out = {key: float(sum(b[key] for b in blocks)) for key in blocks[0] if key.endswith("_j")}
    out["tokens_per_j_device"] = float(tokens_per_joule(tokens, out["device_j"]))
    out["tokens_per_j_total"] = float(tokens_per_joule(tokens, out["total_j"]))
    return out
