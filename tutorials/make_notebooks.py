"""Writes the tutorial notebooks (tutorials/*.ipynb) and their solutions (tutorials/solutions/).

The notebooks are generated from the cell lists below so that a notebook and its solution never
drift apart: an exercise is one ``Exercise`` entry with a starter cell (a TODO) and a solution
cell; everything else is shared. Notebooks are stored WITHOUT outputs (a test checks it): run
``python tutorials/make_notebooks.py`` after editing this file and commit the .ipynb files;
``--check`` exits 1 if the committed notebooks differ from what this file generates.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent


@dataclass
class Exercise:
    ex: str          # "1.1"
    text: str        # markdown: the task
    starter: str     # code with a TODO
    solution: str    # the same code, solved
    check: str       # the check call


SETUP = """\
%matplotlib inline
import numpy as np
import matplotlib.pyplot as plt
import multispin_sim as ms
from multispin_sim import teaching

plt.rcParams["figure.figsize"] = (7, 3.5)
plt.rcParams["figure.constrained_layout.use"] = True"""


def md(text):
    return ("md", text)


def code(text):
    return ("code", text)


# ============================================================================ notebook 1
NB1 = [
    md("""\
# 1. One round by hand

**Learning goals.** After this notebook you can
- say what one Multi-SPIN round is made of: drafting on the devices, one batched verification on the
  server, and corrections for the rejected drafts;
- compute the expected tokens of a round, E[N], from the acceptance rate alpha and the draft length gamma,
  and check it against the simulator;
- read a round's time budget (draft, verify, comm) on the timeline chart.

Run the cells from top to bottom (Shift-Enter). Exercises are at the end; each has a check that prints
PASS or FAIL with a hint."""),
    code(SETUP),
    md("""\
## One round, told by the simulator

Three devices, the paper's default parameters otherwise. `teaching.explain` tells the first rounds as a
story (the same text as `multispin-sim run --explain N`)."""),
    code("""\
result = teaching.run({"devices.count": 3, "run.rounds": 200, "seed": 3})
print(teaching.explain(result, rounds=1))"""),
    md("""\
## Acceptance and the bonus token

Device k drafts gamma tokens with its small model. The server's large model accepts each draft with
probability alpha (i.i.d. model), and stops at the first rejection. With A accepted drafts:
- if A < gamma the (A+1)-th draft was rejected: the server and the device must agree on a **correction**
  token, drawn from the residual distribution -- this needs a whole distribution over the link;
- if A = gamma every draft was accepted: the server adds a **bonus** token for free.

Either way the round gives N = A + 1 tokens. P(A >= j) = alpha^j, so
E[N] = 1 + alpha + ... + alpha^gamma = (1 - alpha^(gamma+1)) / (1 - alpha)."""),
    code("""\
from multispin_sim.model.speculative import expected_tokens, draft_outcome

rng = np.random.default_rng(1)
gammas = np.arange(0, 21)
fig, ax = plt.subplots()
for alpha in (0.7, 0.83, 0.93):
    ax.plot(gammas, expected_tokens(alpha, gammas), label=f"closed form, alpha={alpha}")
    u = 1.0 - rng.random((20_000, 1))                       # one uniform per round
    _, tokens, _ = draft_outcome(u, alpha, gammas[None, :])  # coupled draws for every gamma
    ax.plot(gammas, tokens.mean(axis=0), "o", ms=3, color=ax.lines[-1].get_color())
ax.axhline(1 / (1 - 0.93), ls=":", color="grey")
ax.set(xlabel="draft length gamma", ylabel="E[N] tokens per round",
       title="E[N]: closed form (lines) vs 20,000 sampled rounds (dots)")
ax.legend(fontsize=8); plt.show()"""),
    md("""\
E[N] saturates at 1 / (1 - alpha) (dotted line for alpha = 0.93): long drafts stop paying off, while
drafting time grows linearly in gamma. Move the sliders to see the distribution of N (with a static
figure when widgets are not available)."""),
    code("""\
from multispin_sim.model.speculative import accepted_pmf

def show_pmf(alpha=0.85, gamma=6):
    pmf = accepted_pmf(alpha, gamma)
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.bar(np.arange(gamma + 1) + 1, pmf, color=["C0"] * gamma + ["C2"])
    ax.set(xlabel="tokens N = A + 1 (green: all accepted, bonus token)", ylabel="P(N)",
           title=f"alpha={alpha:.2f}, gamma={gamma}: E[N]={expected_tokens(alpha, gamma):.3f}, "
                 f"P(correction)={1 - alpha**gamma:.3f}")
    plt.show()

teaching.explore(show_pmf, alpha=(0.5, 0.99, 0.01, 0.85), gamma=(1, 20, 1, 6))"""),
    md("""\
## Simulated E[N] against the closed form

In the simulator every device-round is one row of `device_rounds.csv` (`result.device_rounds`). Four
devices with alpha = 0.9 and gamma = 5:"""),
    code("""\
run = teaching.run({"devices.count": 4, "run.rounds": 1000, "policy.draft_length": 5,
                    "devices.acceptance": {t: 0.9 for t in ("humaneval", "gsm8k", "ifeval", "mt-bench")}})
dr = run.device_rounds
mean = dr["tokens"].mean()
half = 1.96 * dr["tokens"].std(ddof=1) / np.sqrt(dr["tokens"].size)
print(f"simulated E[N] = {mean:.3f} +- {half:.3f} (95%), closed form {expected_tokens(0.9, 5):.4f}")"""),
    md("""\
## The round's time budget

A round lasts `max_k gamma_k t_k` (the batch waits for the slowest draft) + `T_ver0 + K_b T_ver1` (one
batched verification) + `T_comm` (the slowest correction). The timeline chart shows three rounds of the
3-device run: drafting (blue), waiting (grey), UL (orange) or DL (green) corrections, and the server's
verification."""),
    code("""\
from IPython.display import Image, display
from multispin_sim.plots.timeline import plot_timeline

png, _ = plot_timeline(result.folder, rounds=3, out=result.folder / "timeline.png")
display(Image(filename=str(png)))
rt = result.rounds
shares = {name: rt[name].sum() / rt["duration_s"].sum() for name in ("draft_s", "verify_s", "comm_s")}
print({k: f"{v:.0%}" for k, v in shares.items()}, f"median comm {np.median(rt['comm_s']) * 1e3:.1f} ms")"""),
    md("## Exercises"),
    Exercise("1.1", """\
**Exercise 1.1.** Write `my_expected_tokens(alpha, gamma)` as the **sum** 1 + alpha + ... + alpha^gamma
(not the closed form), valid for alpha = 1 and gamma = 0.""",
             """\
def my_expected_tokens(alpha, gamma):
    # TODO: return E[N] = sum_{j=0}^{gamma} alpha^j
    return None""",
             """\
def my_expected_tokens(alpha, gamma):
    return sum(alpha**j for j in range(gamma + 1))""",
             "teaching.check_expected_tokens(my_expected_tokens)"),
    Exercise("1.2", """\
**Exercise 1.2.** Write `my_round_time(gamma, t, verify_fixed_s, verify_per_device_s, t_comm_s)`: the
length in seconds of one round in which every device (arrays `gamma`, `t`) is in the batch.""",
             """\
def my_round_time(gamma, t, verify_fixed_s, verify_per_device_s, t_comm_s):
    # TODO: drafting (the slowest device) + verification + communication
    return None""",
             """\
def my_round_time(gamma, t, verify_fixed_s, verify_per_device_s, t_comm_s):
    drafting = np.max(np.asarray(gamma) * np.asarray(t))
    return drafting + verify_fixed_s + len(gamma) * verify_per_device_s + t_comm_s""",
             "teaching.check_round_time(my_round_time)"),
    Exercise("1.3", """\
**Exercise 1.3.** In the 4-device run above (`dr = run.device_rounds`, alpha = 0.9, gamma = 5), what share
of device-rounds accepted every draft (bonus token), and what does theory say? Give `(simulated, theory)`.""",
             """\
# TODO: answer = (share of device-rounds with accepted == draft_len, its theoretical value)
answer = None""",
             """\
answer = ((dr["accepted"] == dr["draft_len"]).mean(), 0.9**5)""",
             "teaching.check_full_acceptance(answer)"),
]

# ============================================================================ notebook 2
NB2 = [
    md("""\
# 2. Uplink or downlink?

**Learning goals.**
- the two ways to correct a rejected draft: UL (the device uploads its draft distribution, at its own
  power) or DL (the server sends the target distribution, sharing one DL power budget among all DL
  corrections);
- why the UL delay depends on each device alone, while the DL delay of a set depends on the whole set;
- the prefix structure of the optimal split: sort by UL delay, put a prefix on UL;
- how corrections move from UL to DL as the DL power grows."""),
    code(SETUP),
    md("""\
## One outcome, eight rejected devices

All eight share B = 10 MHz equally (b = B / 8). A device's full-power UL delay is
S / (b log2(1 + P_ul g / (N0 b))). The DL devices get delay-equalising powers: with a DL set D, the common
delay is tau(D) = S / (b log2(1 + P_dl / (N0 b sum_{k in D} 1/g_k))) -- every extra DL device makes it slower.
The sliders set the DL power budget and move device 0 nearer or further."""),
    code("""\
from multispin_sim.model.reactive import ReactiveProblem, optimal_split, prefix_split_delays
from multispin_sim.model.pathloss import pathloss_gain
from multispin_sim.model.rates import noise_psd_watt_per_hz
from multispin_sim.model.units import dbm_to_watt

rng = np.random.default_rng(4)
K = 8
distance = rng.uniform(100, 500, K)
fading = rng.exponential(size=K)                               # |h|^2 of this round
n0 = noise_psd_watt_per_hz(-174.0)
S, B, P_UL = 34_816, 10e6, 0.01

def problem(p_dl_dbm, distance_0_m=None):
    d = distance.copy()
    if distance_0_m is not None:
        d[0] = distance_0_m                                    # move device 0
    gain = pathloss_gain(d) * fading                           # reciprocal: UL gain = DL gain
    return ReactiveProblem(np.ones((1, K), bool), gain, gain, P_UL, float(dbm_to_watt(p_dl_dbm)), S, B, n0)

def show_split(p_dl_dbm=16.0, distance_0_m=float(round(distance[0]))):
    pb = problem(p_dl_dbm, distance_0_m)
    f, cols = prefix_split_delays(pb)
    f, cols = f[0], cols[0]
    d_ul = pb.ul_delays()[0][cols]
    best = int(np.argmin(f))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.5))
    a1.bar(range(K), d_ul * 1e3, color=["C1" if i < best else "C2" for i in range(K)])
    a1.set(yscale="log", xlabel="devices sorted by full-power UL delay", ylabel="UL delay (ms)",
           title=f"orange: UL, green: DL (split n = {best})")
    a1.set_xticks(range(K), [str(c) for c in cols])
    a2.plot(range(K + 1), f * 1e3, "o-")
    a2.axvline(best, color="k", ls="--")
    a2.set(yscale="log", xlabel="n devices on UL (the first n)", ylabel="f(n) = T_comm (ms)",
           title=f"P_dl = {p_dl_dbm:.0f} dBm: T_comm = {f[best] * 1e3:.2f} ms")
    plt.show()

teaching.explore(show_split, p_dl_dbm=(0.0, 40.0, 1.0, 16.0),
                 distance_0_m=(50.0, 800.0, 10.0, float(round(distance[0]))))"""),
    md("""\
f(n) is the larger of two sequences: the slowest UL delay among the first n (non-decreasing in n) and the
shared DL delay of the rest (non-increasing). Their crossing gives the optimum. Checking the lemma against
all 2^8 assignments:"""),
    code("""\
from multispin_sim.model.reactive import exhaustive_split
for p in (10, 20, 30):
    print(f"P_dl = {p} dBm: prefix {optimal_split(problem(p)).t_comm[0] * 1e3:.4f} ms, "
          f"exhaustive {exhaustive_split(problem(p)).t_comm[0] * 1e3:.4f} ms")"""),
    md("""\
## Sweep the DL power: corrections move from UL to DL

Ten devices, 300 rounds per DL power. `n_ul` and `n_dl` in `rounds.csv` count the corrections of each
round."""),
    code("""\
powers = [5, 15, 25, 35, 45]
ul, dl, goodput = [], [], []
for p in powers:
    r = teaching.run({"devices.count": 10, "run.rounds": 300, "server.dl_power_dbm": p})
    rt = r.rounds
    ul.append(rt["n_ul"].sum() / rt["n_rejected"].sum())
    dl.append(rt["n_dl"].sum() / rt["n_rejected"].sum())
    goodput.append(r.summary["goodput_tps"])
fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.5))
a1.plot(powers, ul, "o-", label="UL"); a1.plot(powers, dl, "s-", label="DL")
a1.set(xlabel="DL power budget (dBm)", ylabel="share of corrections", title="who corrects?"); a1.legend()
a2.plot(powers, goodput, "o-"); a2.set(xlabel="DL power budget (dBm)", ylabel="goodput (tokens/s)",
                                        title="goodput rises, then saturates")
plt.show()"""),
    md("## Exercises"),
    Exercise("2.1", """\
**Exercise 2.1.** Write `my_ul_delay(bits, bandwidth_hz, power_w, gain, n0)`: seconds to send `bits` at
the Shannon rate.""",
             """\
def my_ul_delay(bits, bandwidth_hz, power_w, gain, n0):
    # TODO
    return None""",
             """\
def my_ul_delay(bits, bandwidth_hz, power_w, gain, n0):
    return bits / (bandwidth_hz * np.log2(1 + power_w * gain / (n0 * bandwidth_hz)))""",
             "teaching.check_ul_delay(my_ul_delay)"),
    Exercise("2.2", """\
**Exercise 2.2.** Write `my_dl_delay(bits, bandwidth_hz, p_dl_w, gains, n0)`: the common delay of the DL
devices with gains `gains` (an array) when the server shares `p_dl_w` so that their delays are equal.""",
             """\
def my_dl_delay(bits, bandwidth_hz, p_dl_w, gains, n0):
    # TODO: the closed form tau(D)
    return None""",
             """\
def my_dl_delay(bits, bandwidth_hz, p_dl_w, gains, n0):
    inv = np.sum(1.0 / np.asarray(gains))
    return bits / (bandwidth_hz * np.log2(1 + p_dl_w / (n0 * bandwidth_hz * inv)))""",
             "teaching.check_dl_delay(my_dl_delay)"),
    Exercise("2.3", """\
**Exercise 2.3.** Write `my_best_t_comm(d_ul, g_dl, bits, bandwidth_hz, p_dl_w, n0)`: T_comm of the best
assignment, by the prefix lemma (sort by `d_ul`, try every split n). You may use `my_dl_delay`.""",
             """\
def my_best_t_comm(d_ul, g_dl, bits, bandwidth_hz, p_dl_w, n0):
    # TODO: f(n) for n = 0..len(d_ul), return the smallest
    return None""",
             """\
def my_best_t_comm(d_ul, g_dl, bits, bandwidth_hz, p_dl_w, n0):
    order = np.argsort(d_ul)
    d, g = np.asarray(d_ul)[order], np.asarray(g_dl)[order]
    best = np.inf
    for n in range(len(d) + 1):
        t_ul = d[n - 1] if n else 0.0
        t_dl = my_dl_delay(bits, bandwidth_hz, p_dl_w, g[n:], n0) if n < len(d) else 0.0
        best = min(best, max(t_ul, t_dl))
    return best""",
             "teaching.check_best_split(my_best_t_comm)"),
]

# ============================================================================ notebook 3
NB3 = [
    md("""\
# 3. How long should a device draft?

**Learning goals.**
- the goodput objective G(gamma) = sum_k E[N_k] / (max_k gamma_k t_k + T_ver + E[T_comm]);
- why the drafting time is shared (the batch waits for the slowest draft) and corrections cost time;
- the paper's greedy search, the case where it stops at gamma = 0, and the project's `budget` controller;
- heterogeneous devices get different draft lengths."""),
    code(SETUP),
    md("""\
## The objective for a common draft length

Without communication (computation only), long drafts pay off until E[N] saturates. With corrections, every
extra draft raises the chance 1 - alpha^gamma that a correction is needed. `make_objective` builds G with
the exact expectation over all 2^K outcomes (K = 8 here)."""),
    code("""\
from multispin_sim.model.system import System
from multispin_sim.model.pathloss import pathloss_gain
from multispin_sim.model.rates import noise_psd_watt_per_hz
from multispin_sim.policies.draft_search import make_objective, greedy_search, uniform_search, budget_search

K = 8
rng = np.random.default_rng(0)
def instance(alpha0=0.6, below_db=17.5, p_dl_w=0.01):
    s = System(alpha=np.r_[alpha0, np.full(K - 1, 0.93)], draft_latency_s=15.2e-3 * rng.uniform(1, 1.15, K),
               p_ul_w=np.full(K, 0.01), pathloss=np.full(K, pathloss_gain(300.0)), p_dl_w=p_dl_w,
               payload_bits=34_816.0, bandwidth_hz=10e6, n0=noise_psd_watt_per_hz(-174.0),
               verify_fixed_s=42.8e-3, verify_per_device_s=7.6e-3)
    g = s.pathloss.copy()
    g[0] *= 10 ** (-below_db / 10)          # device 0 sits in a deep fade
    return s, g

system, g = instance()
full = make_objective(system, g, g, np.ones(K, bool), np.full(K, 20), "optimal", estimator="exact")
comp = make_objective(system, g, g, np.ones(K, bool), np.full(K, 20), "optimal", estimator="exact",
                      ignore_comm=True)
common = np.arange(21)
fig, ax = plt.subplots()
ax.plot(common, [comp.value_of(np.full(K, c)) for c in common], "o-", label="computation only (T_comm = 0)")
ax.plot(common, [full.value_of(np.full(K, c)) for c in common], "s-", label="with corrections (exact E[T_comm])")
ax.set(xlabel="common draft length gamma", ylabel="G (tokens/s)", title="goodput objective, K = 8"); ax.legend()
plt.show()"""),
    md("""\
## Greedy stops at gamma = 0

Device 0 (alpha = 0.6, 17.5 dB below the others) makes the first step of the paper's greedy (+1 for
everyone) worse than staying at 0: its correction is slow. The greedy stops. A search over a common length
(`uniform`) or the project's `budget` controller (scan the shared drafting time, leave devices out) finds
far more."""),
    code("""\
results = {"greedy": greedy_search(full), "uniform": uniform_search(full), "budget": budget_search(full)}
for name, res in results.items():
    print(f"{name:8s} G = {res.value:7.2f} tokens/s   gamma = {res.gamma.tolist()}")
fig, ax = plt.subplots()
ax.bar(list(results), [r.value for r in results.values()], color=["C3", "C0", "C2"])
ax.set(ylabel="G (tokens/s)", title="same instance, three controllers"); plt.show()"""),
    md("""\
## In the simulator: heterogeneous devices

Twelve devices from 100 to 500 m. With `policy.draft: greedy` the server re-optimises gamma every round for
that round's fading; near devices with high alpha draft longer."""),
    code("""\
r = teaching.run({"devices.count": 12, "run.rounds": 60, "policy.draft": "greedy", "policy.saa_samples": 200,
                  "server.dl_power_ratio": 16})
dr, dev = r.device_rounds, r.devices
mean_gamma = np.array([dr["draft_len"][dr["device"] == k].mean() for k in dev["device"]])
fig, ax = plt.subplots()
sc = ax.scatter(dev["distance_m"], mean_gamma, c=dev["alpha"], cmap="viridis", s=60)
fig.colorbar(sc, label="alpha"); ax.set(xlabel="distance (m)", ylabel="mean greedy gamma",
                                        title=f"greedy: goodput {r.summary['goodput_tps']:.0f} tokens/s")
plt.show()"""),
    code("""\
def compare(draft_length=4, dl_power_ratio=4.0):
    out = {}
    for name in ("fixed", "greedy", "budget"):
        rr = teaching.run({"devices.count": 8, "run.rounds": 40, "policy.draft": name,
                           "policy.draft_length": draft_length, "policy.saa_samples": 200,
                           "server.dl_power_ratio": dl_power_ratio})
        out[name] = rr.summary["goodput_tps"]
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.bar(list(out), list(out.values()))
    ax.set(ylabel="goodput (tokens/s)", title=f"8 devices, fixed gamma = {draft_length}, ratio {dl_power_ratio:g}")
    plt.show()

teaching.explore(compare, draft_length=(0, 12, 1, 4), dl_power_ratio=(1.0, 32.0, 1.0, 4.0))"""),
    md("## Exercises"),
    Exercise("3.1", """\
**Exercise 3.1.** Write `my_goodput(gamma, alpha, t, verify_fixed_s, verify_per_device_s, t_comm_s)`: G of
draft lengths `gamma` (arrays, one entry per device in the batch) for a given T_comm.""",
             """\
def my_goodput(gamma, alpha, t, verify_fixed_s, verify_per_device_s, t_comm_s):
    # TODO: sum_k E[N_k] / (round length)
    return None""",
             """\
from multispin_sim.model.speculative import expected_tokens

def my_goodput(gamma, alpha, t, verify_fixed_s, verify_per_device_s, t_comm_s):
    tokens = expected_tokens(alpha, gamma).sum()
    length = np.max(gamma * t) + verify_fixed_s + len(gamma) * verify_per_device_s + t_comm_s
    return tokens / length""",
             "teaching.check_goodput(my_goodput)"),
    Exercise("3.2", """\
**Exercise 3.2.** Devices with alpha = (0.93, 0.86, 0.83, 0.91), t = (15.2, 16.0, 17.0, 15.5) ms, the qwen2.5
verification times and a fixed T_comm of 30 ms: which common gamma in 0..20 maximises G?""",
             """\
alpha = np.array([0.93, 0.86, 0.83, 0.91]); t = np.array([15.2, 16.0, 17.0, 15.5]) * 1e-3
# TODO: best_gamma = the common draft length with the largest G
best_gamma = None""",
             """\
alpha = np.array([0.93, 0.86, 0.83, 0.91]); t = np.array([15.2, 16.0, 17.0, 15.5]) * 1e-3
values = [my_goodput(np.full(4, c), alpha, t, 42.8e-3, 7.6e-3, 0.030) for c in range(21)]
best_gamma = int(np.argmax(values))""",
             "teaching.check_best_uniform_gamma(best_gamma, alpha, t, 42.8e-3, 7.6e-3, 0.030)"),
]

# ============================================================================ notebook 4
NB4 = [
    md("""\
# 4. Fading over time

**Learning goals.**
- Rayleigh block fading: |h|^2 ~ Exp(1), redrawn every round;
- why the mean correction delay is infinite and the median is not (read medians!);
- Gauss-Markov fading, the Jakes correlation J0(2 pi f_D dt) and the coherence time;
- how a coherence time bounds the delays in the simulator."""),
    code(SETUP),
    md("""\
## The delay of one transmission

At mean SNR rho, the delay is T = S / (b log2(1 + rho |h|^2)). A deep fade (|h|^2 near 0) makes it
arbitrarily long: P(T > t) ~ c / t, so E[T] is infinite. The running mean never settles; the running median
does."""),
    code("""\
rng = np.random.default_rng(0)
S, b, rho = 34_816, 1e6, 100.0
h2 = rng.standard_exponential(50_000)
T = S / (b * np.log2(1 + rho * h2))
n = np.arange(1, T.size + 1)
fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.5))
a1.plot(n, np.cumsum(T) / n * 1e3, label="running mean")
marks = np.unique(np.logspace(0, np.log10(T.size), 40).astype(int))
a1.plot(marks, [np.median(T[:m]) * 1e3 for m in marks], label="running median")
a1.set(xscale="log", xlabel="samples", ylabel="delay (ms)", title="mean drifts, median settles"); a1.legend()
t = np.logspace(np.log10(np.median(T)), np.log10(T.max()), 50)
a2.loglog(t, [(T > x).mean() for x in t], ".", label="sampled P(T > t)")
a2.loglog(t, 1 - np.exp(-(2 ** (S / (b * t)) - 1) / rho), "-", label="exact 1 - CDF")
a2.set(xlabel="t (s)", ylabel="P(T > t)", title="a 1/t tail"); a2.legend()
plt.show()"""),
    md("""\
## Gauss-Markov fading and the coherence time

The complex gain evolves as h(t + dt) = rho h(t) + sqrt(1 - rho^2) w with rho = J0(2 pi f_D dt). The
correlation of h falls with the lag; the rule of thumb T_c = 0.423 / f_D is where it has dropped to about
one half. Drag the Doppler slider (walking at 3.5 GHz is about 10 Hz, a car about 200 Hz)."""),
    code("""\
from scipy.special import j0
from multispin_sim.model.fading import complex_gaussian, gauss_markov_series, power, jakes_correlation

def show_doppler(doppler_hz=10.0):
    dt = 1e-3
    rho = float(jakes_correlation(doppler_hz, dt))
    rng = np.random.default_rng(1)
    h = gauss_markov_series(complex_gaussian(rng, 1), rho, complex_gaussian(rng, (2000, 1)))[:, 0]
    lags = np.arange(0, 200)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.2))
    a1.plot(np.arange(2000) * dt, 10 * np.log10(power(h)))
    a1.set(xlabel="time (s)", ylabel="|h|^2 (dB)", title=f"f_D = {doppler_hz:.0f} Hz")
    a2.plot(lags * dt * 1e3, j0(2 * np.pi * doppler_hz * lags * dt), label="J0(2 pi f_D dt)")
    a2.axvline(0.423 / doppler_hz * 1e3, color="k", ls="--", label="T_c = 0.423 / f_D")
    a2.set(xlabel="lag (ms)", ylabel="correlation of h", ylim=(-0.5, 1.05)); a2.legend(fontsize=8)
    plt.show()

teaching.explore(show_doppler, doppler_hz=(2.0, 200.0, 2.0, 10.0))"""),
    md("""\
## In the simulator

With the paper's one fading block per round, a correction in a deep fade holds the whole round. With a
coherence time (here 10 ms), a long correction continues over new fading blocks and its delay is bounded."""),
    code("""\
base = {"devices.count": 10, "run.rounds": 500, "channel.fading": "gauss-markov", "channel.doppler_hz": 40.0}
runs = {"one block per round": teaching.run(base),
        "T_c = 10 ms": teaching.run({**base, "channel.coherence_time_ms": 10.0})}
fig, ax = plt.subplots()
for name, r in runs.items():
    c = np.sort(r.rounds["comm_s"]) * 1e3
    ax.loglog(c, 1 - np.arange(c.size) / c.size, label=f"{name}: median {np.median(c):.1f} ms, max {c.max():.0f} ms")
ax.set(xlabel="comm time per round (ms)", ylabel="P(comm > x)", title="tail of the correction phase")
ax.legend(fontsize=8); plt.show()"""),
    md("## Exercises"),
    Exercise("4.1", """\
**Exercise 4.1.** Write `my_median_delay(bits, bandwidth_hz, mean_snr)`: the median of
S / (b log2(1 + mean_snr |h|^2)) under Rayleigh fading (a closed form, no sampling).""",
             """\
def my_median_delay(bits, bandwidth_hz, mean_snr):
    # TODO
    return None""",
             """\
def my_median_delay(bits, bandwidth_hz, mean_snr):
    return bits / (bandwidth_hz * np.log2(1 + mean_snr * np.log(2)))""",
             "teaching.check_median_delay(my_median_delay)"),
    Exercise("4.2", """\
**Exercise 4.2.** Write `my_power_correlation(doppler_hz, dt_s)`: the correlation coefficient of |h|^2 at lag
dt under Jakes' model.""",
             """\
def my_power_correlation(doppler_hz, dt_s):
    # TODO
    return None""",
             """\
def my_power_correlation(doppler_hz, dt_s):
    return j0(2 * np.pi * doppler_hz * dt_s) ** 2""",
             "teaching.check_power_correlation(my_power_correlation)"),
]

# ============================================================================ notebook 5
NB5 = [
    md("""\
# 5. Queueing

**Learning goals.**
- requests arriving as a Poisson process, each needing L tokens; a device serves its queue in rounds;
- utilisation rho = lambda E[S] and stability;
- the Pollaczek-Khinchine formula for the M/G/1 queue, checked against the simulator;
- Little's law: mean number in system = arrival rate x mean time in system."""),
    code(SETUP),
    md("""\
## One device, a fixed round time

To get an M/G/1 queue, one device drafts 4 tokens (alpha = 0.8) in rounds of exactly tau = 50 ms (no fading,
a tiny payload so corrections take nanoseconds). A request of L = 16 tokens needs R_L rounds, a random
number: its service time is S = tau R_L, with moments from a renewal recursion."""),
    code("""\
from multispin_sim.model.queueing import round_count_moments, pollaczek_khinchine

ALPHA, GAMMA, L, TAU = 0.8, 4, 16, 0.05
r1, r2 = round_count_moments(ALPHA, GAMMA, L)
ES, ES2 = TAU * r1, TAU**2 * r2
print(f"E[R_L] = {r1:.4f} rounds, E[S] = {ES:.3f} s, E[S^2] = {ES2:.3f} s^2")

def one_device(rate, seconds=800, seed=1):
    return teaching.run({
        "seed": seed, "devices.count": 1, "devices.draft_latency_ms": 5.0, "devices.draft_latency_spread": [1, 1],
        "devices.overrides": {0: {"alpha": ALPHA}}, "policy.draft_length": GAMMA,
        "server.verify_fixed_ms": 22.4, "server.verify_per_device_ms": 7.6,
        "payload.effective_vocab": 1, "payload.vocab": 2, "payload.prob_bits": 1,
        "devices.distance_m": 10.0, "channel.fading": "none",
        "workload.arrivals": "poisson", "workload.rate_per_s": rate, "workload.length_tokens": L,
        "workload.cap_draft_to_remaining": False, "run.rounds": 10_000_000, "run.max_time_s": seconds})"""),
    code("""\
from scipy import stats

rhos = [0.3, 0.5, 0.7]
sim, half, theory = [], [], []
for rho in rhos:
    r = one_device(rho / ES)
    req = r.requests
    done = np.isfinite(req["completion_s"])
    sojourn = req["completion_s"][done] - req["arrival_s"][done]
    batches = np.array([b.mean() for b in np.array_split(sojourn, 10)])  # batch means: successive
    sim.append(sojourn.mean())                                             # sojourns are correlated
    half.append(stats.t.ppf(0.975, 9) * batches.std(ddof=1) / np.sqrt(10))
    theory.append(pollaczek_khinchine(rho / ES, ES, ES2)[1])
fig, ax = plt.subplots()
grid = np.linspace(0.05, 0.8, 50)
ax.plot(grid, [pollaczek_khinchine(g / ES, ES, ES2)[1] for g in grid], "-", label="Pollaczek-Khinchine W = W_q + E[S]")
ax.errorbar(rhos, sim, yerr=half, fmt="o", capsize=4, label="simulator, 800 s each (95% CI, batch means)")
ax.set(xlabel="utilisation rho = lambda E[S]", ylabel="mean time in system (s)", title="M/G/1: theory vs simulation")
ax.legend(); plt.show()"""),
    md("""\
## Little's law

Over a run, the time-average number of requests in the system equals the arrival rate times the mean time
in system -- an identity on every sample path. The summary reports both sides."""),
    code("""\
# r: the last run above (rho = 0.7)
little = r.summary["requests"]["little"]
print({k: round(v, 4) if isinstance(v, float) else v for k, v in little.items()})"""),
    code("""\
def queue_at(rate_per_s=0.03, devices=10):
    rr = teaching.run({"devices.count": devices, "workload.arrivals": "poisson", "workload.rate_per_s": rate_per_s,
                       "channel.coherence_time_ms": 42.3, "run.rounds": 100_000, "run.max_time_s": 300.0})
    q = rr.summary["requests"]
    lat = rr.requests["completion_s"] - rr.requests["arrival_s"]
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.hist(lat[np.isfinite(lat)], bins=40)
    ax.set(xlabel="request latency (s)", ylabel="requests",
           title=f"{devices} devices at {rate_per_s} req/s each: utilisation {q['server_utilisation']:.2f}")
    plt.show()

teaching.explore(queue_at, rate_per_s=(0.005, 0.15, 0.005, 0.03), devices=(1, 20, 1, 10))"""),
    md("## Exercises"),
    Exercise("5.1", """\
**Exercise 5.1.** Write `my_pk_wait(arrival_rate, mean_service, second_moment_service)`: the M/G/1 mean
waiting time in queue W_q, and `float("inf")` when the queue is unstable.""",
             """\
def my_pk_wait(arrival_rate, mean_service, second_moment_service):
    # TODO
    return None""",
             """\
def my_pk_wait(arrival_rate, mean_service, second_moment_service):
    rho = arrival_rate * mean_service
    if rho >= 1:
        return float("inf")
    return arrival_rate * second_moment_service / (2 * (1 - rho))""",
             "teaching.check_pk_wait(my_pk_wait)"),
    Exercise("5.2", """\
**Exercise 5.2.** Write `my_mean_sojourn(requests)`: the mean time in system of the **completed** requests of
a `requests.csv` table (a dict of numpy arrays, like `r.requests`). Try it on `r.requests`.""",
             """\
def my_mean_sojourn(requests):
    # TODO: completion_s - arrival_s, skipping unfinished requests (completion_s is nan)
    return None""",
             """\
def my_mean_sojourn(requests):
    done = np.isfinite(requests["completion_s"])
    return float(np.mean(requests["completion_s"][done] - requests["arrival_s"][done]))

print(f"{my_mean_sojourn(r.requests):.3f} s in this run")""",
             "teaching.check_mean_sojourn(my_mean_sojourn)"),
]

# ============================================================================ notebook 6
NB6 = [
    md("""\
# 6. Beyond the paper

The paper's model is one setting of each of several **components** (acceptance, link, CSI, payload,
verification cost, device compute, energy, protocol; see `ARCHITECTURE` in the project notes). Every realism
extension is another setting of one component, chosen by a scenario key whose default is the paper's.
This notebook gets **one section per extension**, each with the same shape:

1. *What changes* -- the paper's assumption and the more realistic one, in two sentences;
2. *Switch it on* -- the scenario keys, one run against the paper's setting (same seed: common random
   numbers make the comparison row by row);
3. *What to look at* -- one figure and the number that moved.

Sections are added as the extensions land. This version has the dimensions the simulator has today
beyond the paper: topology and mobility (below), plus queueing (notebook 5) and time-correlated
fading (notebook 4). Acceptance traces, the link layer, energy and asynchronous serving will get their
sections here when they are part of the simulator."""),
    code(SETUP),
    md("""\
## Topology and mobility

**What changes.** The paper drops devices at fixed distances. Here devices walk (random waypoint, 1.4 m/s
by default, faster below), so their path loss changes between rounds.

**Switch it on.** `mobility.model: random-waypoint`, `mobility.speed_mps`, `mobility.region_m`; the
positions are a networkx graph (`topology.graphml` in the run folder)."""),
    code("""\
base = {"devices.count": 6, "run.rounds": 500, "seed": 5}
still = teaching.run(base)
moving = teaching.run({**base, "mobility.model": "random-waypoint", "mobility.speed_mps": 15.0})
dr = moving.device_rounds
fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.5))
for k in range(6):
    sel = dr["device"] == k
    a1.plot(dr["round"][sel], dr["distance_m"][sel], label=f"device {k}")
a1.set(xlabel="round", ylabel="distance to the server (m)", title="random waypoint, 15 m/s"); a1.legend(fontsize=7)
values = [still.summary["goodput_tps"], moving.summary["goodput_tps"]]
ci = np.array([still.summary["goodput_ci95"], moving.summary["goodput_ci95"]]).T
a2.bar(["fixed", "moving"], values, yerr=np.abs(ci - values), capsize=6)
a2.set(ylabel="goodput (tokens/s), 95% CI", title="same seed, same fading stream"); plt.show()"""),
    md("""\
**What to look at.** The distance traces, and whether goodput moved: with the optimal split and devices
spread over the same annulus, mobility mostly reshuffles who is far, so goodput changes little.

<!-- Template for a new section (copy, fill in, keep it under a few seconds of compute):

## <Extension name>

**What changes.** ...

**Switch it on.** `<section>.<key>: <value>` ...

```python
base = {...}
paper = teaching.run(base)
ext = teaching.run({**base, "<section>.<key>": ...})
# one figure, one number
```
-->"""),
]

NOTEBOOKS = {
    "01_one_round": NB1,
    "02_uplink_or_downlink": NB2,
    "03_draft_length": NB3,
    "04_fading": NB4,
    "05_queueing": NB5,
    "06_beyond_the_paper": NB6,
}


def build(cells, solution):
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    out = []
    for cell in cells:
        if isinstance(cell, Exercise):
            out.append(new_markdown_cell(cell.text))
            out.append(new_code_cell(cell.solution if solution else cell.starter,
                                     metadata={"tags": [f"exercise-{cell.ex}",
                                                        "solution" if solution else "starter"]}))
            out.append(new_code_cell(cell.check, metadata={"tags": [f"check-{cell.ex}"]}))
        elif cell[0] == "md":
            out.append(new_markdown_cell(cell[1]))
        else:
            out.append(new_code_cell(cell[1]))
    for i, c in enumerate(out):  # stable ids: diffs stay small
        c["id"] = f"c{i:02d}"
    nb.cells = out
    return nb


def targets():
    """{path: notebook} of every notebook and solution this file generates."""
    files = {}
    for name, cells in NOTEBOOKS.items():
        files[HERE / f"{name}.ipynb"] = build(cells, solution=False)
        if any(isinstance(c, Exercise) for c in cells):
            files[HERE / "solutions" / f"{name}.ipynb"] = build(cells, solution=True)
    return files


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    stale = []
    for path, nb in targets().items():
        text = nbformat.writes(nb) + "\n"
        if "--check" in argv:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(path)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(path.relative_to(HERE.parent))
    if stale:
        print("out of date (run python tutorials/make_notebooks.py):",
              ", ".join(str(p.relative_to(HERE.parent)) for p in stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
