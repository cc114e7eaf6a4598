"""Observation and action spaces of the environment, the observation of a round start, and the
checks of an action.

Observation (``gymnasium.spaces.Dict``; float32 boxes, one entry per device unless said):

| key | unit | what |
|---|---|---|
| ``g_ul_db``, ``g_dl_db`` | dB | UL / DL channel power gains as the draft controller sees them at the round start (the scenario's CSI model: exact, delayed, quantised or noisy), 10 log10 g, floored at -400 dB |
| ``draft_latency_s`` | s/token | drafting latency per token (throttled devices: the slowed latency) |
| ``alpha`` | 1 | acceptance belief: the per-token acceptance rate the controllers are told (the model's mean, or the learned belief) |
| ``last_accepted`` | tokens | draft tokens accepted in the previous round, 0..max_draft (0 before the first) |
| ``last_rejected`` | 0/1 | the previous round rejected a draft token of this device (MultiBinary) |
| ``active`` | 0/1 | the device has work this round (MultiBinary) |
| ``backlog`` | requests | requests at the device, queued or in service (queueing workloads only) |
| ``remaining`` | tokens | tokens the request in service still needs (queueing workloads only) |
| ``slowdown`` | 1 | thermal slowdown factor of drafting (``compute.thermal`` only) |
| ``load`` | devices | devices in a draft-verify-correct cycle when the draft is decided, the deciding one included (shape (1,); the asynchronous protocol only, where ``active`` marks the deciding device) |
| ``p_dl_w`` | W | the server's DL power budget (shape (1,)) |
| ``time_s`` | s | simulated time at the round start (shape (1,)) |

Actions: ``draft``: MultiDiscrete, one draft length 0..max_draft per device; ``mode``:
Discrete(K + 1), the number n of UL devices in the prefix order, or (``mode_action=
'per-device'``) MultiDiscrete of 2 per device (0 UL, 1 DL); ``both``: a Dict of the two.
"""
import numpy as np
from gymnasium import spaces

GAIN_FLOOR_DB = -400.0
BIG = np.float32(1e30)
MODE_ACTIONS = ("prefix", "per-device")
GLOBAL_KEYS = ("p_dl_w", "time_s", "load")   # shape (1,): of the system, not of a device


def observation_space(k, max_draft, queueing=False, thermal=False, load=False):
    """The Dict space of one observation for k devices drafting at most ``max_draft`` tokens
    (``policy.max_draft``); ``load``: the asynchronous protocol's key."""
    def box(lo, hi, shape=(k,)):
        return spaces.Box(np.float32(lo), np.float32(hi), shape=shape, dtype=np.float32)
    entries = {
        "g_ul_db": box(GAIN_FLOOR_DB, 400.0),
        "g_dl_db": box(GAIN_FLOOR_DB, 400.0),
        "draft_latency_s": box(0.0, BIG),
        "alpha": box(0.0, 1.0),
        "last_accepted": box(0.0, max_draft),   # accepted <= drafted <= max_draft
        "last_rejected": spaces.MultiBinary(k),
        "active": spaces.MultiBinary(k),
        "p_dl_w": box(0.0, BIG, (1,)),
        "time_s": box(0.0, BIG, (1,)),
    }
    if queueing:
        entries["backlog"] = box(0.0, BIG)
        entries["remaining"] = box(0.0, BIG)
    if thermal:
        entries["slowdown"] = box(0.0, BIG)
    if load:
        entries["load"] = box(0.0, k, (1,))
    return spaces.Dict(entries)


def mode_space(k, kind):
    if kind == "prefix":
        return spaces.Discrete(k + 1)
    if kind == "per-device":
        return spaces.MultiDiscrete(np.full(k, 2, dtype=np.int64))
    raise ValueError(f"mode_action is {kind!r}; allowed: {', '.join(MODE_ACTIONS)}")


def action_space(k, max_draft, control, mode_action="prefix"):
    draft = spaces.MultiDiscrete(np.full(k, max_draft + 1, dtype=np.int64))
    if control == "draft":
        return draft
    if control == "mode":
        return mode_space(k, mode_action)
    if control == "both":
        return spaces.Dict({"draft": draft, "mode": mode_space(k, mode_action)})
    raise ValueError(f"control is {control!r}; allowed: draft, mode, both")


def gains_db(g):
    """10 log10 g, at least GAIN_FLOOR_DB (a zero gain, -inf dB, and NaN included: fmax passes
    over NaN)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.fmax(10.0 * np.log10(np.asarray(g, dtype=float)), GAIN_FLOOR_DB)


def _integers(action, what, k, hi):
    """``action`` as (k,) int64 when every entry is an integer in 0..hi, else one ValueError
    naming the first bad device and the allowed range."""
    a = np.asarray(action)
    if a.shape != (k,):
        raise ValueError(f"{what} action has shape {a.shape}; expected ({k},): one integer "
                         f"0..{hi} per device")
    if a.dtype.kind in "iu":
        if k and (a.min() >= 0 and a.max() <= hi):
            return a.astype(np.int64, copy=False)
    elif a.dtype.kind not in "fb":
        raise ValueError(f"{what} action has dtype {a.dtype}; expected integers 0..{hi}")
    ok = (a >= 0) & (a <= hi) & (a == np.floor(a)) if a.dtype.kind != "b" else np.ones(k, bool)
    if ok.all():
        return a.astype(np.int64)
    i = int(np.flatnonzero(~ok)[0])
    raise ValueError(f"{what} action for device {i} is {a[i]!r}; allowed: integers 0..{hi}")


def scalar_int(action, hi):
    """``action`` as an int when it is one number (a scalar or a size-1 array, integer or float)
    of an integer value in 0..hi, else None."""
    a = np.asarray(action)
    if a.size != 1 or a.dtype.kind not in "iuf":
        return None
    x = a.reshape(-1)[0]
    if not np.isfinite(x) or x != np.floor(x) or not 0 <= x <= hi:
        return None
    return int(x)


def check_draft(action, k, max_draft):
    return _integers(action, "draft", k, max_draft)


def check_mode(action, k, kind):
    if kind == "per-device":
        return _integers(action, "mode", k, 1)
    n = scalar_int(action, k)
    if n is None:
        raise ValueError(f"mode action is {action!r}; allowed: one integer 0..{k} (the number "
                         "of rejected devices correcting by UL, in the prefix order)")
    return n


def check_action(action, control, k, max_draft, mode_action):
    """(draft (K,) ints or None, mode action or None) of a valid action, else ValueError."""
    if control == "draft":
        return check_draft(action, k, max_draft), None
    if control == "mode":
        return None, check_mode(action, k, mode_action)
    if not isinstance(action, dict) or set(action) != {"draft", "mode"}:
        raise ValueError(f"action must be a dict with keys 'draft' and 'mode' (control='both'); "
                         f"got {type(action).__name__}")
    return (check_draft(action["draft"], k, max_draft),
            check_mode(action["mode"], k, mode_action))


class SameSpaces:
    """PettingZoo's per-agent spaces where every agent has the same ones: ``_obs_space`` and
    ``_act_space``, the same objects on every call (as PettingZoo asks)."""

    def observation_space(self, agent):
        return self._obs_space

    def action_space(self, agent):
        return self._act_space


class Observer:
    """Builds observations from a round start's ``DraftContext`` and the last round's record."""

    def __init__(self, k, space, p_dl_w, base_latency_s):
        self.k = k
        self.keys = tuple(space.spaces)
        self.p_dl = float(p_dl_w)
        self.base_latency = np.asarray(base_latency_s, dtype=float)
        self.last_accepted = np.zeros(k, dtype=np.float32)
        self.last_rejected = np.zeros(k, dtype=np.int8)

    def outcome(self, record):
        self.last_accepted = np.asarray(record.accepted, dtype=np.float32)
        self.last_rejected = np.asarray(record.rejected, dtype=np.int8)

    def verified(self, gamma, accepted, active):
        """A batch's outcomes (the asynchronous protocol): its devices' entries only."""
        self.last_accepted[active] = accepted[active]
        self.last_rejected[active] = accepted[active] < gamma[active]

    def __call__(self, ctx, now, backlog=None, remaining=None):
        """``backlog``, ``remaining``: (K,) requests at each device and tokens its request in
        service still needs (queueing workloads; None: zeros)."""
        system = ctx.system
        g_ul = gains_db(ctx.g_ul).astype(np.float32)
        g_dl = g_ul.copy() if ctx.g_dl is ctx.g_ul else gains_db(ctx.g_dl).astype(np.float32)
        obs = {
            "g_ul_db": g_ul,
            "g_dl_db": g_dl,
            "draft_latency_s": np.asarray(system.draft_latency_s, dtype=np.float32),
            "alpha": np.asarray(system.alpha, dtype=np.float32),
            "last_accepted": self.last_accepted.copy(),
            "last_rejected": self.last_rejected.copy(),
            "active": np.asarray(ctx.active, dtype=np.int8),
            "p_dl_w": np.array([self.p_dl], dtype=np.float32),
            "time_s": np.array([now], dtype=np.float32),
        }
        if "backlog" in self.keys:
            obs["backlog"] = np.asarray(backlog, dtype=np.float32)
            obs["remaining"] = np.asarray(remaining if remaining is not None
                                          else np.zeros(self.k), dtype=np.float32)
        if "slowdown" in self.keys:
            obs["slowdown"] = (np.asarray(system.draft_latency_s, dtype=float)
                               / self.base_latency).astype(np.float32)
        if "load" in self.keys:
            obs["load"] = np.array([ctx.load or 0], dtype=np.float32)
        return {key: obs[key] for key in self.keys}
