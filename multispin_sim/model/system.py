"""The static parameters of one simulated system, as numpy arrays (no scenario, no SimPy)."""
from dataclasses import dataclass

import numpy as np

from .reactive import ReactiveProblem
from .verification import LinearVerification


@dataclass(frozen=True)
class System:
    """Per-device arrays (K,) and shared scalars, SI units throughout.

    alpha: per-token acceptance rates; draft_latency_s: t_k; p_ul_w: UL power budgets;
    pathloss: large-scale gains G_k; p_dl_w: the server's total DL budget; payload_bits: S;
    bandwidth_hz: B; n0: noise PSD in W/Hz; verify_fixed_s / verify_per_device_s: T_ver0, T_ver1;
    verify_cost: the verification cost component (``model.verification``; None = linear);
    draft_slowdown: (K,) thermal throttling of this round (``model.compute``: latencies are
    already multiplied by it, drafting powers are divided by it; None: none).
    """

    alpha: np.ndarray
    draft_latency_s: np.ndarray
    p_ul_w: np.ndarray
    pathloss: np.ndarray
    p_dl_w: float
    payload_bits: float
    bandwidth_hz: float
    n0: float
    verify_fixed_s: float
    verify_per_device_s: float
    verify_cost: object = None  # model.verification component; None: linear from the two above
    # model.mimo.Transmission when a link shares its band (None: the paper's orthogonal links)
    transmission: object = None
    draft_slowdown: object = None

    @property
    def k(self):
        return int(self.alpha.shape[0])

    def reactive_problem(self, rejected, g_ul, g_dl, present=None):
        """The reactive problem(s) for rejected mask(s) (K,) or (M, K) under gains g_ul, g_dl
        (``present``: the devices in the round, ``ReactiveProblem.present``)."""
        if self.transmission is not None:
            return self.transmission.problem(self, rejected, g_ul, g_dl)
        return ReactiveProblem(rejected, g_ul, g_dl, self.p_ul_w, self.p_dl_w,
                               self.payload_bits, self.bandwidth_hz, self.n0, present)

    def verification_cost(self):
        """The verification cost component (``model.verification``)."""
        if self.verify_cost is not None:
            return self.verify_cost
        return LinearVerification(self.verify_fixed_s, self.verify_per_device_s)

    def verification_s(self, batch_size):
        """Batched verification T_ver = T_ver0 + K_b T_ver1 of one batch of ``batch_size`` = K_b
        devices (no batch takes no time), in scalar arithmetic (called every round)."""
        if batch_size <= 0:
            return 0.0
        return self.verify_fixed_s + batch_size * self.verify_per_device_s
