"""Checks for the tutorial exercises: each prints PASS or FAIL (with a hint) and returns a bool.

A check never raises on a wrong answer (the notebook keeps running): an unanswered exercise
(``None``, or a function that returns ``None``), an exception inside the student's function, a
wrong shape or a wrong value all print ``FAIL`` with a hint. The reference values are computed
here from independent forms where one exists (a sum instead of the closed form, a root finder
instead of the closed form, an exhaustive search instead of the prefix lemma, the run's own
summary for the environment's returns).
"""
from __future__ import annotations

import math
from itertools import product

import numpy as np

__all__ = [
    "check_expected_tokens", "check_round_time", "check_full_acceptance",
    "check_ul_delay", "check_dl_delay", "check_best_split",
    "check_goodput", "check_best_uniform_gamma",
    "check_median_delay", "check_power_correlation",
    "check_pk_wait", "check_mean_sojourn",
    "check_goodput_and_return", "check_threshold_policy",
    "check_steering", "check_zf_kept", "check_first_null",
    "EXERCISES",
]

# Each tutorial's exercises, in order: exercise "n.i" is the i-th of the notebook numbered n.
_TITLES = {
    "01_one_round": ("E[N] as a sum of P(A >= j)", "the length of one round",
                     "how often the bonus token is sent"),
    "02_uplink_or_downlink": ("full-power UL delay", "the shared DL delay",
                              "the best split by the prefix lemma"),
    "03_draft_length": ("the goodput objective G(gamma)", "the best common draft length"),
    "04_fading": ("the median delay under Rayleigh fading", "the correlation of |h|^2 over time"),
    "05_queueing": ("the Pollaczek-Khinchine waiting time", "mean sojourn time from requests.csv"),
    "07_learning_agents": ("an episode's goodput and return", "a hand-made draft policy"),
    "08_antennas": ("the steering vector of a linear array",
                    "what zero-forcing keeps of two streams", "the first null of the beam pattern"),
    "09_many_cells": ("the interference over the overlap of two subbands",
                      "the delivery time under changing interference", "what reuse 3 gives"),
}
#: exercise id -> (notebook, title); the tests walk this list.
EXERCISES = {f"{int(notebook[:2])}.{i}": (notebook, title)
             for notebook, titles in _TITLES.items() for i, title in enumerate(titles, 1)}


def _report(ex, ok, message, hint=""):
    """Print exercise ``ex``'s PASS or FAIL line (a FAIL with its hint); returns ``bool(ok)``."""
    line = f"{'PASS' if ok else 'FAIL'}  exercise {ex} ({EXERCISES[ex][1]}): {message}"
    print(line + (f"\n      hint: {hint}" if hint and not ok else ""))
    return bool(ok)


def _call(ex, func, args, hint):
    """(ok, value): call the student's function, turning None and exceptions into a FAIL."""
    if func is None or not callable(func):
        return False, _report(ex, False, "no function given yet (the TODO is still there)", hint)
    try:
        value = func(*args)
    except Exception as exc:  # the student's code failed: say how, do not stop the notebook
        return False, _report(ex, False, f"your function raised {type(exc).__name__}: {exc}", hint)
    if value is None:
        return False, _report(ex, False, "your function returned None (the TODO is still there)", hint)
    return True, value


def _close(a, b, rtol=1e-6, atol=0.0):
    """Whether ``a`` has the shape of ``b`` (one number where one is expected) and is close."""
    try:
        a, b = np.asarray(a, float), np.asarray(b, float)
    except (TypeError, ValueError):
        return False
    return a.shape == b.shape and bool(np.all(np.isclose(a, b, rtol=rtol, atol=atol)))


def _cases(ex, func, hint, cases, reference, wrong, passed, rtol=1e-9, atol=0.0):
    """Exercise ``ex`` passes with the message ``passed`` when ``func(*args)`` is close to
    ``reference(*args)`` for every ``args`` in ``cases``; else it fails on the first wrong case
    with the message ``wrong(value, want, *args)``."""
    for args in cases:
        ok, value = _call(ex, func, args, hint)
        if not ok:
            return value
        want = reference(*args)
        if not _close(value, want, rtol=rtol, atol=atol):
            return _report(ex, False, wrong(value, want, *args), hint)
    return _report(ex, True, passed)


def _expected_tokens(alpha, gamma):
    """E[N] = sum_{j=0..gamma} alpha^j, written as the sum (the closed form is the exercise)."""
    return sum(alpha**j for j in range(int(gamma) + 1))


def _round_time(gamma, t, v0, v1, t_comm):
    """max_k gamma_k t_k + T_ver0 + K T_ver1 + T_comm (every device in the batch)."""
    return max(int(g) * float(x) for g, x in zip(gamma, t)) + v0 + len(gamma) * v1 + t_comm


# ---------------------------------------------------------------------------- notebook 1


def check_expected_tokens(func):
    """Exercise 1.1: ``func(alpha, gamma)`` returns E[N], the tokens one round gives a device."""
    hint = ("N = A + 1 and P(A >= j) = alpha^j for j = 1..gamma, so E[N] = 1 + sum_j alpha^j; "
            "mind alpha = 1 and gamma = 0")
    cases = [(0.8, 4), (0.6, 3), (0.9, 7), (0.95, 0), (1.0, 5), (0.5, 20)]
    return _cases("1.1", func, hint, cases, _expected_tokens,
                  lambda value, want, alpha, gamma: f"E[N] at alpha={alpha}, gamma={gamma}: you "
                  f"give {value!r}, expected {want:.6f}",
                  f"E[N] right on {len(cases)} cases, e.g. alpha=0.8, gamma=4 -> 3.3616")


def check_round_time(func):
    """Exercise 1.2: ``func(gamma, t_draft_s, verify_fixed_s, verify_per_device_s, t_comm_s)``
    returns the round length in seconds (every device is in the batch)."""
    hint = ("the batch waits for the slowest draft: max_k gamma_k t_k; then one verification "
            "T_ver0 + K T_ver1 for the K devices; then the slowest correction T_comm")
    cases = [
        (np.array([4, 4, 2]), np.array([0.0152, 0.0160, 0.0170]), 0.0428, 0.0076, 0.010),
        (np.array([0, 0]), np.array([0.0152, 0.0152]), 0.0428, 0.0076, 0.0),
        (np.array([1, 9, 3, 3]), np.array([0.02, 0.0152, 0.03, 0.0152]), 0.0693, 0.0091, 0.123),
    ]
    return _cases("1.2", func, hint, cases, _round_time,
                  lambda value, want, gamma, *_: f"gamma={gamma.tolist()}: you give {value!r} s, "
                  f"expected {want:.6f} s", "round lengths right on 3 cases")


def check_full_acceptance(value):
    """Exercise 1.3: the share of device-rounds of the prepared run (alpha = 0.9, gamma = 5)
    in which every draft was accepted, and its theoretical value, as (simulated, theory)."""
    hint = ("P(A = gamma) = alpha^gamma; in device_rounds, compare 'accepted' with 'draft_len' "
            "(numpy: (dr['accepted'] == dr['draft_len']).mean())")
    if value is None:
        return _report("1.3", False, "no answer yet (the TODO is still there)", hint)
    try:
        simulated, theory = (float(v) for v in value)
    except (TypeError, ValueError):
        return _report("1.3", False, f"expected a pair (simulated, theory), got {value!r}", hint)
    want = 0.9**5
    if not _close(theory, want, rtol=1e-9):
        return _report("1.3", False, f"theory {theory!r}, expected alpha^gamma = {want:.5f}", hint)
    # 4,000 device-rounds: a binomial 5-sigma band around the theory
    sigma = math.sqrt(want * (1 - want) / 4000)
    if not abs(simulated - want) < 5 * sigma:
        return _report("1.3", False, f"simulated share {simulated:.4f} is far from {want:.4f} "
                       f"(more than 5 standard errors, {5 * sigma:.4f})", hint)
    return _report("1.3", True, f"simulated {simulated:.4f} vs alpha^gamma = {want:.5f}")


# ---------------------------------------------------------------------------- notebook 2

N0_W_PER_HZ = 10 ** (-174 / 10) * 1e-3   # thermal noise, -174 dBm/Hz, in W/Hz


def check_ul_delay(func):
    """Exercise 2.1: ``func(bits, bandwidth_hz, power_w, gain, n0)`` returns S / rate in s."""
    hint = "rate = b log2(1 + P g / (N0 b)) bit/s; the delay is S / rate"
    n0 = N0_W_PER_HZ
    cases = [(34816, 5e5, 0.01, 1e-12, n0), (34816, 1e7, 0.01, 3e-11, n0), (2433024, 2e6, 0.04, 1e-13, n0)]
    return _cases("2.1", func, hint, cases,
                  lambda bits, b, p, g, n: bits / (b * math.log2(1 + p * g / (n * b))),
                  lambda value, want, bits, b, p, g, n: f"b={b:g} Hz, g={g:g}: you give {value!r} "
                  f"s, expected {want:.6g} s", "UL delays right on 3 cases")


def check_dl_delay(func):
    """Exercise 2.2: ``func(bits, bandwidth_hz, p_dl_w, gains, n0)``: the common delay of the DL
    set ``gains`` when the server shares p_dl so that every DL delay is equal."""
    from scipy.optimize import brentq

    hint = ("equal delays tau need p_k = (N0 b / g_k)(2^(S/(b tau)) - 1); sum_k p_k = P_dl gives "
            "tau = S / (b log2(1 + P_dl / (N0 b sum_k 1/g_k)))")
    n0 = N0_W_PER_HZ
    rng = np.random.default_rng(2)
    cases = [(34816, 2.5e6, 0.04, np.array([1e-12, 3e-12, 5e-13, 2e-11]), n0),
             (34816, 1e7, 0.0398, np.array([7e-12]), n0),
             (34816, 1e6, 1.0, 10 ** rng.uniform(-13, -10, 10), n0)]

    def reference(bits, b, p, g, n):
        def excess(tau):  # total power needed for delay tau minus the budget (a root finder's view)
            return float(np.sum(n * b / g * (2.0 ** (bits / (b * tau)) - 1.0))) - p

        lo = bits / (b * math.log2(1 + p * g.max() / (n * b))) * 0.999
        hi = bits / (b * math.log2(1 + p / len(g) * g.min() / (n * b))) * 1.001
        return brentq(excess, lo, hi, rtol=1e-13)

    return _cases("2.2", func, hint, cases, reference,
                  lambda value, want, bits, b, p, g, n: f"{len(g)} DL devices: you give {value!r} "
                  f"s, expected {want:.6g} s (the delay at which their powers add up to P_dl)",
                  "the DL delays match a root finder on 3 cases", rtol=1e-7)


def check_best_split(func):
    """Exercise 2.3: ``func(d_ul, g_dl, bits, bandwidth_hz, p_dl_w, n0)`` returns T_comm of the
    best UL/DL assignment of the rejected devices (arrays d_ul: full-power UL delays, g_dl: DL
    gains, same order), using the prefix lemma."""
    hint = ("sort the devices by d_ul; for n = 0..|R| put the first n on UL and the rest on DL, "
            "f(n) = max(largest UL delay among the first n, the shared DL delay of the rest); "
            "T_comm = min_n f(n)")
    n0 = N0_W_PER_HZ
    rng = np.random.default_rng(7)
    bits = 34816
    for trial in range(6):
        r = int(rng.integers(1, 8))
        b = 1e7 / r
        g_ul = 10 ** rng.uniform(-13, -10, r)
        g_dl = g_ul if trial % 2 == 0 else 10 ** rng.uniform(-13, -10, r)
        p_dl = float(10 ** rng.uniform(-2, 0))
        d_ul = bits / (b * np.log2(1 + 0.01 * g_ul / (n0 * b)))
        ok, value = _call("2.3", func, (d_ul, g_dl, bits, b, p_dl, n0), hint)
        if not ok:
            return value
        best = math.inf  # exhaustive over all 2^|R| assignments
        for mask in product((False, True), repeat=r):
            ul = np.array(mask)
            t_ul = d_ul[ul].max() if ul.any() else 0.0
            inv = np.sum(1.0 / g_dl[~ul])
            t_dl = bits / (b * math.log2(1 + p_dl / (n0 * b * inv))) if inv > 0 else 0.0
            best = min(best, max(t_ul, t_dl))
        if not _close(value, best, rtol=1e-9):
            return _report("2.3", False, f"|R| = {r}: you give T_comm = {value!r} s, the best of "
                           f"all 2^{r} assignments is {best:.6g} s", hint)
    return _report("2.3", True, "your split equals the exhaustive optimum on 6 random outcomes")


# ---------------------------------------------------------------------------- notebook 3


def _goodput_reference(gamma, alpha, t, v0, v1, t_comm):
    tokens = sum(_expected_tokens(a, g) for a, g in zip(alpha, gamma))
    return tokens / _round_time(gamma, t, v0, v1, t_comm)


def check_goodput(func):
    """Exercise 3.1: ``func(gamma, alpha, t_draft_s, verify_fixed_s, verify_per_device_s,
    t_comm_s)`` returns G = sum_k E[N_k] / (max_k gamma_k t_k + T_ver + T_comm), tokens/s."""
    hint = "numerator: sum of (1 - alpha^(gamma+1)) / (1 - alpha); denominator: the round length"
    cases = [(np.array([4, 4, 4]), np.array([0.93, 0.86, 0.83]), np.array([0.0152, 0.016, 0.017]),
              0.0428, 0.0076, 0.02),
             (np.array([0, 0]), np.array([0.9, 0.9]), np.array([0.0152, 0.0152]), 0.0428, 0.0076, 0.0),
             (np.array([9, 2, 0, 12]), np.array([0.91, 0.83, 0.86, 0.93]),
              np.array([0.0152, 0.0175, 0.016, 0.0155]), 0.0693, 0.0091, 0.051)]
    return _cases("3.1", func, hint, cases, _goodput_reference,
                  lambda value, want, gamma, *_: f"gamma={gamma.tolist()}: you give {value!r}, "
                  f"expected {want:.4f} tokens/s", "G(gamma) right on 3 cases")


def check_best_uniform_gamma(value, alpha, t_draft_s, verify_fixed_s, verify_per_device_s,
                             t_comm_s, max_draft=20):
    """Exercise 3.2: the common gamma in 0..max_draft that maximises G with a fixed T_comm."""
    hint = "evaluate G(gamma, ..., gamma) for every gamma in 0..20 and keep the argmax"
    if value is None:
        return _report("3.2", False, "no answer yet (the TODO is still there)", hint)
    k = len(alpha)
    g = [_goodput_reference([c] * k, alpha, t_draft_s, verify_fixed_s, verify_per_device_s,
                            t_comm_s) for c in range(max_draft + 1)]
    best = int(np.argmax(g))
    try:
        whole = not isinstance(value, str) and float(value).is_integer()
    except (TypeError, ValueError):
        whole = False
    if not whole:   # 7.9 is no draft length, nor inf
        return _report("3.2", False, f"expected an integer, got {value!r}", hint)
    value = int(value)
    if not 0 <= value <= max_draft or not g[value] >= g[best] * (1 - 1e-12):
        shown = f"{g[value]:.2f}" if 0 <= value <= max_draft else "out of range"
        return _report("3.2", False, f"gamma = {value} gives G = {shown}; gamma = {best} gives "
                       f"{g[best]:.2f} tokens/s", hint)
    return _report("3.2", True, f"gamma = {value} (G = {g[value]:.2f} tokens/s)")


# ---------------------------------------------------------------------------- notebook 4


def check_median_delay(func):
    """Exercise 4.1: ``func(bits, bandwidth_hz, mean_snr)``: the median of the delay
    S / (b log2(1 + snr |h|^2)) when |h|^2 ~ Exp(1) (Rayleigh)."""
    from scipy.optimize import brentq

    hint = ("the delay is a decreasing function of |h|^2, so its median is the delay at the "
            "median of |h|^2, which is ln 2 for Exp(1)")

    def reference(bits, b, snr):
        # P(T <= t) = exp(-(2^(S/(b t)) - 1) / snr): solve CDF = 1/2 numerically
        cdf = lambda t: math.exp(-(2.0 ** (bits / (b * t)) - 1.0) / snr) - 0.5  # noqa: E731
        return brentq(cdf, bits / (b * math.log2(1 + 100 * snr)),
                      bits / (b * math.log2(1 + 1e-6 * snr)), rtol=1e-13)

    return _cases("4.1", func, hint, [(34816, 5e5, 100.0), (34816, 1e7, 3.0), (2433024, 1e6, 1000.0)],
                  reference, lambda value, want, bits, b, snr: f"snr={snr:g}: you give {value!r} s, "
                  f"expected {want:.6g} s", "medians match the Rayleigh delay CDF on 3 cases",
                  rtol=1e-7)


def check_power_correlation(func):
    """Exercise 4.2: ``func(doppler_hz, dt_s)``: the correlation coefficient of |h|^2 at lag dt
    under the Jakes / Clarke model (``channel.fading: jakes``), where h is correlated by
    J0(2 pi f_D dt) at every lag. (Under ``gauss-markov`` the correlation after n blocks is
    rho^n, which depends on the block length: not this exercise.)"""
    from scipy.special import jv

    hint = ("h is correlated by J0(2 pi f_D dt) (scipy.special.j0); for a complex Gaussian pair "
            "the correlation of the powers |h|^2 is the square of that")
    return _cases("4.2", func, hint,
                  [(10.0, 0.0), (10.0, 0.01), (10.0, 0.0423), (200.0, 0.001), (50.0, 0.05)],
                  lambda fd, dt: float(jv(0, 2 * math.pi * fd * dt)) ** 2,
                  lambda value, want, fd, dt: f"f_D={fd:g} Hz, dt={dt:g} s: you give {value!r}, "
                  f"expected {want:.6f}", "the |h|^2 correlation is right on 5 lags", atol=1e-12)


# ---------------------------------------------------------------------------- notebook 5


def check_pk_wait(func):
    """Exercise 5.1: ``func(arrival_rate, mean_service, second_moment_service)``: the M/G/1 mean
    waiting time in queue (Pollaczek-Khinchine); inf when the queue is unstable."""
    hint = "rho = lambda E[S]; W_q = lambda E[S^2] / (2 (1 - rho)); unstable (inf) when rho >= 1"
    tau = 0.05
    es, es2 = tau * 19.503530, tau * tau * 384.845743  # docs/model.md section 10: alpha 0.8, gamma 4, L 64
    lam = 0.5 / es
    cases = [((lam, es, es2), 0.4933027), ((1.0, 0.5, 0.5), 0.5), ((2.0, 0.5, 0.3), math.inf),
             ((3.0, 0.5, 0.3), math.inf)]
    for args, want in cases:
        ok, value = _call("5.1", func, args, hint)
        if not ok:
            return value
        good = (math.isinf(want) and value == math.inf) or (
            not math.isinf(want) and _close(value, want, rtol=1e-6))
        if not good:
            return _report("5.1", False, f"lambda={args[0]:g}, E[S]={args[1]:g}, E[S^2]={args[2]:g}: "
                           f"you give {value!r}, expected {want}", hint)
    return _report("5.1", True, "W_q right, including the docs/model.md example 0.4933 s and rho >= 1")


def check_mean_sojourn(func):
    """Exercise 5.2: ``func(requests)``: the mean time in system (completion - arrival) of the
    requests that completed; ``requests`` is a dict of numpy arrays like ``result.requests``."""
    hint = ("the time in system runs from arrival_s to completion_s (start_s is when the first "
            "round served it: completion_s - start_s is the service time, without the wait in "
            "queue); unfinished requests have completion_s = nan: keep only "
            "np.isfinite(completion_s) before averaging completion_s - arrival_s")
    # every time column differs, so that averaging from start_s (the service time) or from
    # first_token_s fails: confusing the sojourn W with E[S] is what notebook 5 is about
    nan = np.nan
    arrival = np.array([0.0, 1.0, 2.5, 3.0, 7.0])
    start = np.array([0.0, 1.6, 3.2, 6.0, nan])        # request 3 started, 4 never did
    first_token = np.array([0.3, 1.9, 3.5, 6.4, nan])
    completion = np.array([1.6, 3.2, 6.0, nan, nan])
    table = {"request": np.arange(5), "device": np.zeros(5, int), "arrival_s": arrival,
             "start_s": start, "first_token_s": first_token, "completion_s": completion,
             "tokens": np.full(5, 64), "rounds": np.full(5, 10)}
    ok, value = _call("5.2", func, ({k: v.copy() for k, v in table.items()},), hint)
    if not ok:
        return value
    want = (1.6 + 2.2 + 3.5) / 3
    if not _close(value, want, rtol=1e-12):
        return _report("5.2", False, f"on a 5-request table (2 unfinished) you give {value!r}, "
                       f"expected {want:.4f} s", hint)
    return _report("5.2", True, "the mean sojourn time skips unfinished requests")


# ---------------------------------------------------------------------------- notebook 7


def check_goodput_and_return(func):
    """Exercise 7.1: ``func(infos, price)`` returns (N / T, N - price T) of one episode from its
    ``info`` dicts (tokens, elapsed_s): the goodput in tokens/s and the return at that price."""
    hint = ("N = sum of info['tokens'], T = sum of info['elapsed_s'] (the time each step took, idle "
            "waits included; info['duration_s'] is the round alone)")
    synthetic = [{"tokens": 12, "elapsed_s": 0.5, "duration_s": 0.5},
                 {"tokens": 0, "elapsed_s": 2.0, "duration_s": 0.25},
                 {"tokens": 30, "elapsed_s": 1.5, "duration_s": 1.5}]
    ok, value = _call("7.1", func, (synthetic, 10.0), hint)
    if not ok:
        return value
    want = (42 / 4.0, 42 - 10.0 * 4.0)
    if not _close(_pair(value), want, rtol=1e-12):
        return _report("7.1", False, f"on 3 rounds of 12, 0, 30 tokens taking 0.5, 2.0, 1.5 s at "
                       f"price 10 you give {value!r}, expected {want}", hint)
    # the simulator's own records as the reference
    infos, rewards, summary = _episode(lambda obs: np.full(4, 5), 3, rounds=15, price=150.0,
                                       overrides={"devices.count": 4})
    ok, value = _call("7.1", func, (infos, 150.0), hint)
    if not ok:
        return value
    want = (summary["goodput_tps"], sum(rewards))
    if not _close(_pair(value), want, rtol=1e-9):
        return _report("7.1", False, f"on a 15-round episode you give {value!r}; the run's goodput "
                       f"is {want[0]:.4f} tokens/s and the sum of the rewards {want[1]:.4f}", hint)
    return _report("7.1", True, f"goodput {want[0]:.1f} tokens/s = the run's summary; return "
                   f"{want[1]:.1f} = the sum of the rewards")


def _episode(policy, seed, **kwargs):
    """(infos, rewards, summary) of one episode of ``gym.MultiSpinEnv(None, "draft",
    **kwargs)`` from ``reset(seed=seed)``, ``policy(obs)`` choosing each step's draft lengths."""
    import multispin_sim.gym as msgym

    env = msgym.MultiSpinEnv(None, "draft", **kwargs)
    obs, _ = env.reset(seed=seed)
    infos, rewards = [], []
    try:
        while True:
            obs, reward, terminated, truncated, info = env.step(policy(obs))
            infos.append(info)
            rewards.append(reward)
            if terminated or truncated:
                return infos, rewards, env.result.summary
    finally:
        env.close()


def _pair(value):
    try:
        a, b = value
        return float(a), float(b)
    except (TypeError, ValueError):
        return (math.nan, math.nan)


def check_threshold_policy(func, seed=2, rounds=150, factor=1.4):
    """Exercise 7.2: ``func(obs) -> 20 draft lengths`` on the default scenario earns at least
    ``factor`` times the goodput of the fixed draft length 4, on the same seed (same devices, fading and
    acceptance draws)."""
    hint = ("a device in a deep fade (g_ul_db below about -130 dB) should not draft: it cannot be "
            "rejected then, and the batch does not wait for its slow correction; the others can "
            "draft about 10 tokens")
    import multispin_sim.gym as msgym

    def goodput(policy):
        infos, _, _ = _episode(policy, seed, rounds=rounds, price=0.0)
        return sum(i["tokens"] for i in infos) / sum(i["elapsed_s"] for i in infos)

    if func is None or not callable(func):
        return _report("7.2", False, "no function given yet (the TODO is still there)", hint)
    try:
        probe_env = msgym.MultiSpinEnv(None, "draft", rounds=2, price=0.0)
        try:
            probe = func(probe_env.reset(seed=seed)[0])
        finally:
            probe_env.close()
        if probe is None:
            return _report("7.2", False, "your function returned None (the TODO is still there)",
                           hint)
        mine = goodput(func)
    except Exception as exc:  # an invalid action (the environment's ValueError) or a crash
        return _report("7.2", False, f"{type(exc).__name__}: {exc}", hint)
    fixed = goodput(lambda obs: np.full(20, 4))
    if not mine >= factor * fixed:
        return _report("7.2", False, f"your policy: {mine:.1f} tokens/s, fixed gamma = 4: "
                       f"{fixed:.1f} (wanted at least {factor:g}x, {factor * fixed:.1f})", hint)
    return _report("7.2", True, f"your policy: {mine:.1f} tokens/s against {fixed:.1f} for fixed "
                   f"gamma = 4 ({mine / fixed:.2f}x)")


# ---------------------------------------------------------------------------- notebook 8


def _steering(phi_deg, m, d):
    """The reference steering vector, element by element (the exercise writes it vectorised)."""
    x = 2 * math.pi * d * math.sin(math.radians(phi_deg))
    return np.array([complex(math.cos(i * x), math.sin(i * x)) for i in range(int(m))])


def check_steering(func):
    """Exercise 8.1: ``func(phi_deg, m, d)``: the steering vector (m,) of a uniform linear array
    of m elements spaced d wavelengths toward a device at ``phi_deg`` from the broadside."""
    hint = ("element i sits i d wavelengths along the axis: its phase is 2 pi d i sin(phi), "
            "s_i = exp(j 2 pi d i sin(phi)) for i = 0 .. m-1 (phi in radians: math.radians)")
    for args in [(0.0, 4, 0.5), (30.0, 4, 0.5), (-45.0, 8, 0.5), (10.0, 3, 1.0)]:
        ok, value = _call("8.1", func, args, hint)
        if not ok:
            return value
        want = _steering(*args)
        try:
            value = np.asarray(value, dtype=complex)
        except (TypeError, ValueError):
            return _report("8.1", False, f"you give {value!r}: an array of {args[1]} complex "
                           "numbers is needed", hint)
        if value.shape != want.shape or not _close(value.real, want.real, atol=1e-9) \
                or not _close(value.imag, want.imag, atol=1e-9):
            return _report("8.1", False, f"phi={args[0]:g}, m={args[1]}, d={args[2]:g}: you give "
                           f"{np.round(value, 4)}, expected {np.round(want, 4)}", hint)
    return _report("8.1", True, "the steering vector is right on 4 arrays and bearings")


def check_zf_kept(func):
    """Exercise 8.2: ``func(phi1_deg, phi2_deg, m, d)``: the share of its array gain each of two
    zero-forced line-of-sight streams keeps; the reference is the ZF gain
    1 / [(A^H A)^-1]_kk of the two vectors' matrix A, over ||a_k||^2 = m."""
    hint = ("c = s_1^H s_2 (np.vdot); two ZF streams keep 1 - |c|^2 / m^2 of their array gain "
            "m (with d = 0.5 and m = 4, about 0.32 at 0 and 10 degrees)")

    def reference(phi1, phi2, m, d):
        a = np.stack([_steering(phi1, m, d), _steering(phi2, m, d)], axis=1)
        return 1.0 / np.linalg.inv(a.conj().T @ a)[0, 0].real / m

    return _cases("8.2", func, hint, [(0.0, 10.0, 4, 0.5), (0.0, 30.0, 4, 0.5),
                                      (20.0, -35.0, 8, 0.5), (5.0, 8.0, 16, 0.5)],
                  reference, lambda value, want, p1, p2, m, d: f"phi={p1:g} and {p2:g}, m={m}: "
                  f"you give {value!r}, expected {want:.6f}",
                  "two streams' ZF share is right on 4 pairs", rtol=1e-7)


def check_first_null(value, m=4, d=0.5):
    """Exercise 8.3: the smallest bearing (degrees, in (0, 90]) at which a device loses nothing
    when zero-forced with a device on the broadside (m = 4, d = 0.5). The reference is the
    first sign change of the real array factor sum_i cos((i - (m - 1) / 2) x), x = 2 pi d
    sin(phi) (s(0)^H s(phi) up to a phase), found on a grid and refined by a root finder."""
    from scipy.optimize import brentq

    hint = ("ZF keeps everything where s(0)^H s(phi) = 0: the first null of the beam toward "
            "0 degrees, sin(phi) = 1 / (M d)")
    if value is None:
        return _report("8.3", False, "no value given yet (the TODO is still there)", hint)

    def factor(phi):
        x = 2 * math.pi * d * math.sin(math.radians(phi))
        return sum(math.cos((i - (m - 1) / 2) * x) for i in range(m))

    grid = np.linspace(0.0, 90.0, 901)
    k = next(j for j in range(1, grid.size) if factor(grid[j]) <= 0)
    want = brentq(factor, grid[k - 1], grid[k], xtol=1e-12)
    try:
        got = float(value)
    except (TypeError, ValueError):
        got = math.nan
    if not math.isfinite(got):
        return _report("8.3", False, f"you give {value!r}: a number of degrees is needed", hint)
    if abs(got - want) > 1e-3:
        kept = 1 - factor(got) ** 2 / m**2 if 0 <= got <= 90 else float("nan")
        return _report("8.3", False, f"you give {got:g} degrees; ZF there keeps {kept:.3f} of "
                       "the gain", hint)
    return _report("8.3", True, f"{want:.2f} degrees: the two vectors are orthogonal there")
