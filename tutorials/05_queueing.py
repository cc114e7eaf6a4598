# %% [markdown]
# # 5. Queueing
#
# **Learning goals.**
# - requests arriving as a Poisson process, each needing L tokens; a device serves its queue in rounds;
# - utilisation rho = lambda E[S] and stability;
# - the Pollaczek-Khinchine formula for the M/G/1 queue, checked against the simulator;
# - Little's law: mean number in system = arrival rate x mean time in system.

# %%
# %matplotlib inline
import numpy as np
import matplotlib.pyplot as plt
import multispin_sim as ms
from multispin_sim import teaching

plt.rcParams["figure.figsize"] = (7, 3.5)
plt.rcParams["figure.constrained_layout.use"] = True

# %% [markdown]
# ## One device, a fixed round time
#
# To get an M/G/1 queue, one device drafts 4 tokens (alpha = 0.8) in rounds of exactly tau = 50 ms (no fading,
# a tiny payload so corrections take nanoseconds). A request of L = 16 tokens needs R_L rounds, a random
# number: its service time is S = tau R_L, with moments from a renewal recursion.

# %%
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
        "workload.cap_draft_to_remaining": False, "run.rounds": 10_000_000, "run.max_time_s": seconds})


# %%
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
ax.legend(); plt.show()

# %% [markdown]
# ## Little's law
#
# Over a run, the time-average number of requests in the system equals the arrival rate times the mean time
# in system -- an identity on every sample path. The summary reports both sides.

# %%
# r: the last run above (rho = 0.7)
little = r.summary["requests"]["little"]
print({k: round(v, 4) if isinstance(v, float) else v for k, v in little.items()})


# %%
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

teaching.explore(queue_at, rate_per_s=(0.005, 0.15, 0.005, 0.03), devices=(1, 20, 1, 10))


# %% [markdown]
# ## Exercises

# %% [markdown]
# **Exercise 5.1.** Write `my_pk_wait(arrival_rate, mean_service, second_moment_service)`: the M/G/1 mean
# waiting time in queue W_q, and `float("inf")` when the queue is unstable.

# %% tags=["exercise-5.1", "starter"]
def my_pk_wait(arrival_rate, mean_service, second_moment_service):
    # TODO
    return None


# %% tags=["exercise-5.1", "solution"]
def my_pk_wait(arrival_rate, mean_service, second_moment_service):
    rho = arrival_rate * mean_service
    if rho >= 1:
        return float("inf")
    return arrival_rate * second_moment_service / (2 * (1 - rho))


# %% tags=["check-5.1"]
teaching.check_pk_wait(my_pk_wait)


# %% [markdown]
# **Exercise 5.2.** Write `my_mean_sojourn(requests)`: the mean time in system of the **completed** requests of
# a `requests.csv` table (a dict of numpy arrays, like `r.requests`). Try it on `r.requests`.

# %% tags=["exercise-5.2", "starter"]
def my_mean_sojourn(requests):
    # TODO: completion_s - arrival_s, skipping unfinished requests (completion_s is nan)
    return None


# %% tags=["exercise-5.2", "solution"]
def my_mean_sojourn(requests):
    done = np.isfinite(requests["completion_s"])
    return float(np.mean(requests["completion_s"][done] - requests["arrival_s"][done]))

print(f"{my_mean_sojourn(r.requests):.3f} s in this run")

# %% tags=["check-5.2"]
teaching.check_mean_sojourn(my_mean_sojourn)
