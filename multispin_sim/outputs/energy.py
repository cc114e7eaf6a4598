"""Energy columns of the records and their totals (the accounting itself is ``model.energy``).

device_rounds.csv gains ``slowdown`` (the drafting-latency multiplier of thermal throttling,
1 when not throttled), ``energy_draft_j``, ``energy_ul_j``, ``energy_dl_j``, ``energy_idle_j``
and ``energy_j`` (their sum), with thermal throttling also ``temperature_c`` (at the round's
end); rounds.csv gains ``device_energy_j`` (sum over the round's
devices), ``server_dl_energy_j``, ``verify_energy_j`` and ``energy_j`` (device + server).
devices.csv gains ``energy_j`` and ``tokens_per_j``; summary.json an ``energy`` block.
"""
import numpy as np

from ..model.energy import device_round_energy, server_round_energy, tokens_per_joule

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

    def round(self, sel, draft_s, mode, power, delay, duration, verify, slowdown):
        """Columns for the device rows ``sel`` (a slice or mask) and the round row's values."""
        p = self.powers
        draft_w = p.draft_w if isinstance(sel, slice) else p.draft_w[sel]
        sub = type(p)(draft_w, p.idle_w, p.ul_circuit_w, p.dl_receive_w, p.server_w)
        e_draft, e_ul, e_dl, e_idle, e = device_round_energy(
            sub, draft_s[sel], mode, power, delay, duration)
        e_tx, e_ver = server_round_energy(p, mode, power, delay, verify)
        self.device_j[sel] += e
        self.phase_j += (e_draft.sum(), e_ul.sum(), e_dl.sum(), e_idle.sum())
        self.server_dl_j += e_tx
        self.verify_j += e_ver
        dev_total = float(e.sum())
        slow = self._ones if slowdown is None else slowdown
        columns = {"slowdown": slow[sel], "energy_draft_j": e_draft, "energy_ul_j": e_ul,
                   "energy_dl_j": e_dl, "energy_idle_j": e_idle, "energy_j": e}
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
