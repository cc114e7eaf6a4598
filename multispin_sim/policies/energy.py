"""Energy-aware reactive policy: the optimal UL/DL split with ties broken by device energy.

``EnergyAwareSplit`` evaluates every prefix split n (docs/model.md section 6) of each outcome, keeps
those whose T_comm is within ``tolerance`` (relative) of the optimum, and among them takes the
one with the least device energy of the correction phase (``model.energy`` powers: UL devices
(p + P_circuit) d, DL devices P_rx tau, and P_idle for a rejected device while it waits for
the slowest; first such split on exact ties). With ``tolerance`` 0 its T_comm is the optimal
split's (so the draft objective may use the optimal split's closed-form kernel:
``tcomm_kernel = 'optimal'``); with a tolerance > 0 it trades up to that fraction of T_comm for
energy, and the draft objective calls the policy itself.
"""
import numpy as np

from ..model import reactive as solver
from .reactive import ReactivePolicy


def energy_aware_split(problem, powers, tolerance=0.0, scope="devices"):
    """The split choice described in the module docstring, vectorised over the M outcomes;
    ``scope='total'`` adds the server's DL transmit energy (P_dl tau for a non-empty DL set)."""
    f, cols = solver.prefix_split_delays(problem)           # (M, K + 1), (M, K)
    m, k = problem.shape
    rej = np.take_along_axis(problem.rejected, cols, axis=1)  # rejected first, in UL order
    r = rej.sum(axis=1)
    d = np.where(rej, np.take_along_axis(problem.ul_delays(), cols, axis=1), 0.0)
    p = np.take_along_axis(np.broadcast_to(problem.p_ul, (m, k)), cols, axis=1)
    zero = np.zeros((m, 1))
    with np.errstate(invalid="ignore"):
        e_ul = np.concatenate([zero, np.cumsum((p + powers.ul_circuit_w) * d, axis=1)], axis=1)
        t_ul = np.concatenate([zero, np.cumsum(d, axis=1)], axis=1)
        g_dl = np.broadcast_to(problem.g_dl, (m, k))
        inv = np.where(rej, 1.0 / np.take_along_axis(g_dl, cols, axis=1), 0.0)
        suffix = np.zeros((m, k + 1))
        suffix[:, :k] = np.cumsum(inv[:, ::-1], axis=1)[:, ::-1]
        tau = solver.dl_common_delay(problem.payload_bits, problem.bandwidth_per_device[:, None],
                                     problem.p_dl, suffix, problem.n0)
        n = np.arange(k + 1)[None, :]
        n_dl = np.maximum(r[:, None] - n, 0)
        energy = (e_ul + powers.dl_receive_w * tau * n_dl
                  + powers.idle_w * (r[:, None] * f - t_ul - tau * n_dl))
        if scope == "total":
            energy = energy + np.where(n_dl > 0, problem.p_dl * tau, 0.0)
    best = f.min(axis=1, keepdims=True)
    ok = (n <= r[:, None]) & (f <= best * (1.0 + tolerance))
    energy = np.where(ok & np.isfinite(energy), energy, np.inf)
    n_ul = np.where(np.isfinite(energy).any(axis=1), np.argmin(energy, axis=1), np.argmin(f, axis=1))
    rank = np.empty_like(cols)
    np.put_along_axis(rank, cols, np.broadcast_to(np.arange(k), (m, k)).copy(), axis=1)
    return solver.evaluate_assignment(problem, problem.rejected & (rank < n_ul[:, None]))


class EnergyAwareSplit(ReactivePolicy):
    """``policy.mode: optimal`` under ``policy.objective: tokens-per-joule``."""

    name = "optimal-energy"

    def __init__(self, powers, tolerance=0.0, scope="devices"):
        self.powers = powers
        self.scope = scope
        self.tolerance = float(tolerance)
        self.tcomm_kernel = "optimal" if self.tolerance == 0 else None

    def decide(self, problem, rng=None):
        return energy_aware_split(problem, self.powers, self.tolerance, self.scope)
