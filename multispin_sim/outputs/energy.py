"""Energy columns of the records and their totals (the accounting itself is ``model.energy``).

device_rounds.csv gains ``slowdown`` (the drafting-latency multiplier of thermal throttling,
1 when not throttled), ``energy_draft_j``, ``energy_ul_j``, ``energy_dl_j``, ``energy_idle_j``
and ``energy_j`` (their sum), with thermal throttling also ``temperature_c`` (at the round's
end); rounds.csv gains ``device_energy_j`` (sum over the round's
devices), ``server_dl_energy_j``, ``verify_energy_j`` and ``energy_j`` (device + server).
devices.csv gains ``energy_j`` and ``tokens_per_j``; summary.json an ``energy`` block.
"""
import numpy as np

from ..model.energy import tokens_per_joule

DEVICE_ENERGY_COLUMNS = {"slowdown": float, "energy_draft_j": float, "energy_ul_j": float,
                         "energy_dl_j": float, "energy_idle_j": float, "energy_j": float}
ROUND_ENERGY_COLUMNS = {"device_energy_j": float, "server_dl_energy_j": float,
                        "verify_energy_j": float, "energy_j": float}


class EnergyAccount:
    """Per-round energy columns and run totals for ``Recorder`` (``powers``: ``model.energy.Powers``)."""

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
        self._ones = np.ones(k)
        self._draft_w = np.asarray(powers.draft_w, dtype=float)

    def round(self, sel, draft_s, mode, power, delay, duration, verify, slowdown):
        """Columns for the device rows ``sel`` (a slice or mask) and the round row's values.

        The same arithmetic as ``model.energy.device_round_energy`` and
        ``server_round_energy`` (tests check the identities), written for one small round.
        """
        p = self.powers
        full = isinstance(sel, slice)
        draft = draft_s if full else draft_s[sel]
        draft_w = self._draft_w if full else self._draft_w[sel]
        ul = mode == 1
        dl = mode == 2
        e_draft = draft_w * draft
        e_ul = np.where(ul, (power + p.ul_circuit_w) * delay, 0.0)
        e_dl = np.where(dl, p.dl_receive_w * delay, 0.0)
        wait = duration - draft - np.where(ul | dl, delay, 0.0)
        e_idle = p.idle_w * np.maximum(wait, 0.0, out=wait)
        e = e_draft + e_ul + e_dl + e_idle
        if full:
            self.device_j += e
        else:
            self.device_j[sel] += e
        phases = self.phase_j
        s_draft, s_ul, s_dl, s_idle = float(e_draft.sum()), float(e_ul.sum()), float(e_dl.sum()), \
            float(e_idle.sum())
        phases[0] += s_draft
        phases[1] += s_ul
        phases[2] += s_dl
        phases[3] += s_idle
        e_tx = float(np.where(dl, power * delay, 0.0).sum()) if s_dl or dl.any() else 0.0
        e_ver = p.server_w * verify
        self.server_dl_j += e_tx
        self.verify_j += e_ver
        dev_total = float(e.sum())
        slow = self._ones if slowdown is None else slowdown
        columns = {"slowdown": slow if full else slow[sel], "energy_draft_j": e_draft,
                   "energy_ul_j": e_ul, "energy_dl_j": e_dl, "energy_idle_j": e_idle,
                   "energy_j": e}
        if self.thermal is not None:
            columns["temperature_c"] = self.thermal.temperature[sel]
        return columns, (dev_total, e_tx, e_ver, dev_total + e_tx + e_ver)

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
