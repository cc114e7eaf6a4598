"""The energy component: pure accounting of joules per phase, per device and per round.

Per device-round (device k active in the round, all in joules = W x s):

- drafting:   E_draft = P_draft,k x gamma_k t_k'       (t_k' the throttled latency)
- UL:         E_ul    = (p_k + P_circuit) x d_k         (UL correction, p_k its transmit power)
- DL:         E_dl    = P_rx x d_k                      (DL correction, receiving)
- idle:       E_idle  = P_idle x (T_round - gamma_k t_k' - d_k)   (waiting in the round)
- total:      E_k     = E_draft + E_ul + E_dl + E_idle

(d_k is the realised correction delay, 0 when not rejected; the token uploads and bonus tokens
are negligible payloads, docs/model.md section 2.) A device without work in a round sleeps (0 W):
it has no device-round row and no energy.

Per round, at the server: E_dl_tx = sum over DL corrections of p_k d_k (the DL power the
server allotted to each), E_ver = P_server x T_ver.

Tokens per joule = tokens / joules (device energy unless said otherwise).

``TokensPerJoule`` is the draft controllers' energy-aware objective: expected tokens over the
expected device energy of the round, E[N] / E[E], with (the accounting above, summed over the
K_a active devices, D = max_k gamma_k t_k, T = D + T_ver + T_comm)

    E[E] = sum_k (P_draft,k - P_idle) gamma_k t_k + K_a P_idle (D + T_ver) + E[Z],
    Z    = K_a P_idle T_comm + sum over UL corrections (p_k + P_circuit - P_idle) d_k
                             + sum over DL corrections (P_rx - P_idle) d_k,

Z being the device energy of the correction phase of one outcome. With ``scope='total'`` the
server's energy is added: P_server T_ver, and in Z the DL transmit energy sum_DL p_k d_k.
``EnergyKernel`` computes Z per outcome from the reactive policy's decision, so the T_comm
estimators of ``goodput`` (exact enumeration, sample average) give E[Z] unchanged: the
objective and the accounting are the same model (with planned = realised delays, i.e. without
fading blocks shorter than rounds).
"""
from dataclasses import dataclass

import numpy as np

from .reactive import DL, UL
from .tcomm import PolicyKernel

# Per-device columns a link records when a correction is not on air for its whole delay (the
# NR link waits for a new fading block after an outage or a dropped block): the time on air,
# charged at the transmit and receive powers (the rest of the delay is idle), and the energy the
# transmitter radiated (a retry may use another power). Without them: the delay, power x delay.
AIRTIME, RADIATED = "airtime_s", "tx_energy_j"


@dataclass(frozen=True)
class Powers:
    """draft_w: (K,) drafting power per device; the rest shared scalars (W)."""

    draft_w: np.ndarray
    idle_w: float = 0.5
    ul_circuit_w: float = 0.1
    dl_receive_w: float = 0.2
    server_w: float = 300.0


def device_round_energy(powers, draft_s, mode, power_w, delay_s, duration_s, link=None,
                        slowdown=None):
    """Per-device energies of one round (arrays over the given devices).

    draft_s: drafting times; mode: 0/1(UL)/2(DL); power_w: transmit power (device for UL);
    delay_s: realised correction delays; duration_s: the round's duration, or each device's
    time in it (an asynchronous batch's devices: their own cycles); ``link``: the
    link's columns of the round, with ``AIRTIME`` and ``RADIATED`` when it records them;
    ``slowdown``: thermal throttling (drafting power divided by it; None: 1).
    Returns (draft, ul, dl, idle, total) joules.
    """
    draft_s = np.asarray(draft_s, dtype=float)
    mode = np.asarray(mode)
    delay = np.asarray(delay_s, dtype=float)
    ul = mode == UL
    dl = mode == DL
    e_draft = draft_power(powers.draft_w, slowdown) * draft_s
    if link is not None and AIRTIME in link:
        delay = np.asarray(link[AIRTIME], dtype=float)
        e_ul = np.where(ul, np.asarray(link[RADIATED], float) + powers.ul_circuit_w * delay, 0.0)
    else:
        e_ul = np.where(ul, (np.asarray(power_w, dtype=float) + powers.ul_circuit_w) * delay, 0.0)
    e_dl = np.where(dl, powers.dl_receive_w * delay, 0.0)
    wait = np.maximum(duration_s - draft_s - np.where(ul | dl, delay, 0.0), 0.0)
    e_idle = powers.idle_w * wait
    return e_draft, e_ul, e_dl, e_idle, e_draft + e_ul + e_dl + e_idle


def draft_power(draft_w, slowdown=None):
    """Drafting power of each device: a throttled device (``slowdown`` > 1, ``model.compute``)
    runs its clock that many times slower at that many times less power."""
    draft_w = np.asarray(draft_w, dtype=float)
    return draft_w if slowdown is None else draft_w / np.asarray(slowdown, dtype=float)


def server_round_energy(powers, mode, power_w, delay_s, verify_s, link=None):
    """(DL transmit, verification) joules of one round at the server (``link``: as in
    ``device_round_energy``)."""
    dl = np.asarray(mode) == DL
    radiated = (np.asarray(link[RADIATED], float) if link is not None and RADIATED in link
                else np.asarray(power_w, float) * np.asarray(delay_s, float))
    e_tx = float(np.where(dl, radiated, 0.0).sum())
    return e_tx, powers.server_w * float(verify_s)


def tokens_per_joule(tokens, joules):
    """tokens / joules (0 where no energy was spent)."""
    tokens = np.asarray(tokens, dtype=float)
    joules = np.asarray(joules, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(joules > 0, tokens / joules, 0.0)


class TokensPerJoule:
    """Score for ``goodput.DraftObjective``: E[tokens] / E[device energy] of the round.

    powers: ``Powers``; draft_s: (K,) per-token drafting latencies; active: (K,) bool;
    slowdown: (K,) thermal throttling of the round (``draft_power``; None: none).
    Called as score(tokens, gammas (n, K), drafting D (n,), t_ver, z) -> (n,), z = E[Z] in
    joules from an ``EnergyKernel``.
    """

    def __init__(self, powers, draft_s, active, scope="devices", slowdown=None):
        active = np.asarray(active, dtype=bool)
        self.idle = float(powers.idle_w)
        self.server_w = float(powers.server_w) if scope == "total" else 0.0
        self.n_active = float(active.sum())
        # per-token excess of drafting over idle, per device (0 for inactive devices)
        self.excess = np.where(active, (draft_power(powers.draft_w, slowdown) - self.idle)
                               * np.asarray(draft_s, float), 0.0)

    def energy(self, gammas, drafting, t_ver, z):
        gammas = np.atleast_2d(gammas)
        span = np.asarray(drafting, float) + t_ver
        server = self.server_w * np.asarray(t_ver, float)
        return (gammas @ self.excess + self.n_active * self.idle * span + np.asarray(z, float)
                + server)

    def __call__(self, tokens, gammas, drafting, t_ver, z):
        return tokens_per_joule(tokens, self.energy(gammas, drafting, t_ver, z))


def correction_energy(decision, powers, n_active, scope="devices"):
    """Z of each outcome (M,): device energy of the correction phase (see the module
    docstring); ``scope='total'`` adds the server's DL transmit energy."""
    mode, p = decision.mode, decision.power_w
    d = decision.delay_s if decision.airtime_s is None else decision.airtime_s
    ul = mode == UL
    dl = mode == DL
    rx = powers.dl_receive_w - powers.idle_w + (p if scope == "total" else 0.0)
    extra = (np.where(ul, (p + powers.ul_circuit_w - powers.idle_w) * d, 0.0)
             + np.where(dl, rx * d, 0.0)).sum(axis=1)
    return n_active * powers.idle_w * np.asarray(decision.t_comm, float) + extra


class EnergyKernel(PolicyKernel):
    """Kernel for the T_comm estimators returning Z (joules) per outcome row instead of T_comm:
    a ``model.tcomm.PolicyKernel`` (the same decisions, the same arguments) whose rows are
    scored by ``correction_energy``."""

    def __init__(self, system, g_ul, g_dl, policy, powers, n_active, uniforms=None, seed=0,
                 coin=None, scope="devices"):
        super().__init__(system, g_ul, g_dl, policy, uniforms, seed, coin, present=n_active)
        self.powers = powers
        self.n_active = float(n_active)
        self.scope = scope

    def score(self, decision):
        return correction_energy(decision, self.powers, self.n_active, self.scope)
