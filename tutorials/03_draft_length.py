# %% [markdown]
# # 3. How long should a device draft?
#
# **Learning goals.**
# - the goodput objective G(gamma) = sum_k E[N_k] / (max_k gamma_k t_k + T_ver + E[T_comm]);
# - why the drafting time is shared (the batch waits for the slowest draft) and corrections cost time;
# - the paper's greedy search, the case where it stops at gamma = 0, and the project's `budget` controller;
# - heterogeneous devices get different draft lengths.

# %%
# %matplotlib inline
import numpy as np
import matplotlib.pyplot as plt
import multispin_sim as ms
from multispin_sim import teaching

plt.rcParams["figure.figsize"] = (7, 3.5)
plt.rcParams["figure.constrained_layout.use"] = True

# %% [markdown]
# ## The objective for a common draft length
#
# Without communication (computation only), long drafts pay off until E[N] saturates. With corrections, every
# extra draft raises the chance 1 - alpha^gamma that a correction is needed. `make_objective` builds G with
# the exact expectation over all 2^K outcomes (K = 8 here).

# %%
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
plt.show()

# %% [markdown]
# ## Greedy stops at gamma = 0
#
# Device 0 (alpha = 0.6, 17.5 dB below the others) makes the first step of the paper's greedy (+1 for
# everyone) worse than staying at 0: its correction is slow. The greedy stops. A search over a common length
# (`uniform`) or the project's `budget` controller (scan the shared drafting time, leave devices out) finds
# far more.

# %%
results = {"greedy": greedy_search(full), "uniform": uniform_search(full), "budget": budget_search(full)}
for name, res in results.items():
    print(f"{name:8s} G = {res.value:7.2f} tokens/s   gamma = {res.gamma.tolist()}")
fig, ax = plt.subplots()
ax.bar(list(results), [r.value for r in results.values()], color=["C3", "C0", "C2"])
ax.set(ylabel="G (tokens/s)", title="same instance, three controllers"); plt.show()

# %% [markdown]
# ## In the simulator: heterogeneous devices
#
# Ten devices whose drafting speeds differ by a factor of three (`devices.draft_latency_spread: [0.6, 1.8]`).
# The drafting phase lasts as long as the slowest draft, so a slow device drafting as much as a fast one holds
# the whole batch: both searching controllers give fast devices longer drafts. `budget` does it by design:
# it shares a drafting-time budget D and lets each device draft about D / t_k.

# %%
fig, ax = plt.subplots()
for name, marker in (("greedy", "o"), ("budget", "s")):
    r = teaching.run({"devices.count": 10, "run.rounds": 40, "policy.draft": name, "policy.saa_samples": 200,
                      "devices.draft_latency_spread": [0.6, 1.8], "server.dl_power_ratio": 16})
    dr, dev = r.device_rounds, r.devices
    mean_gamma = [dr["draft_len"][dr["device"] == k].mean() for k in dev["device"]]
    ax.plot(dev["draft_latency_s"] * 1e3, mean_gamma, marker, ms=8,
            label=f"{name}: goodput {r.summary['goodput_tps']:.0f} tokens/s")
ax.set(xlabel="drafting latency t_k (ms/token)", ylabel="mean draft length over 40 rounds",
       title="fast devices draft more"); ax.legend(); plt.show()


# %%
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

teaching.explore(compare, draft_length=(0, 12, 1, 4), dl_power_ratio=(1.0, 32.0, 1.0, 4.0))


# %% [markdown]
# ## Exercises

# %% [markdown]
# **Exercise 3.1.** Write `my_goodput(gamma, alpha, t, verify_fixed_s, verify_per_device_s, t_comm_s)`: G of
# draft lengths `gamma` (arrays, one entry per device in the batch) for a given T_comm.

# %% tags=["exercise-3.1", "starter"]
def my_goodput(gamma, alpha, t, verify_fixed_s, verify_per_device_s, t_comm_s):
    # TODO: sum_k E[N_k] / (round length)
    return None


# %% tags=["exercise-3.1", "solution"]
from multispin_sim.model.speculative import expected_tokens

def my_goodput(gamma, alpha, t, verify_fixed_s, verify_per_device_s, t_comm_s):
    tokens = expected_tokens(alpha, gamma).sum()
    length = np.max(gamma * t) + verify_fixed_s + len(gamma) * verify_per_device_s + t_comm_s
    return tokens / length


# %% tags=["check-3.1"]
teaching.check_goodput(my_goodput)

# %% [markdown]
# **Exercise 3.2.** Devices with alpha = (0.93, 0.86, 0.83, 0.91), t = (15.2, 16.0, 17.0, 15.5) ms, the qwen2.5
# verification times and a fixed T_comm of 30 ms: which common gamma in 0..20 maximises G?

# %% tags=["exercise-3.2", "starter"]
alpha = np.array([0.93, 0.86, 0.83, 0.91]); t = np.array([15.2, 16.0, 17.0, 15.5]) * 1e-3
# TODO: best_gamma = the common draft length with the largest G
best_gamma = None

# %% tags=["exercise-3.2", "solution"]
alpha = np.array([0.93, 0.86, 0.83, 0.91]); t = np.array([15.2, 16.0, 17.0, 15.5]) * 1e-3
values = [my_goodput(np.full(4, c), alpha, t, 42.8e-3, 7.6e-3, 0.030) for c in range(21)]
best_gamma = int(np.argmax(values))

# %% tags=["check-3.2"]
teaching.check_best_uniform_gamma(best_gamma, alpha, t, 42.8e-3, 7.6e-3, 0.030)
