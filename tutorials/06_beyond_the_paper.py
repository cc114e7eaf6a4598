# %% [markdown]
# # 6. Beyond the paper
#
# The paper's model is one setting of each of several **components** (acceptance, link, CSI, payload,
# verification cost, device compute, energy, protocol). Every realism extension is another setting of one
# component, chosen by a scenario key whose default is the paper's. This notebook has **one section per
# extension**, each with the same shape:
#
# 1. *What changes* -- the paper's assumption and the more realistic one, in two sentences;
# 2. *Switch it on* -- the scenario keys, one run against the paper's setting (same seed: common random
#    numbers make the comparison row by row);
# 3. *What to look at* -- one figure and the number that moved.
#
# A new extension gets its section here (`tutorials/06_beyond_the_paper.py`, see the end of this notebook).
# Queueing and time-correlated fading are in notebooks 5 and 4.
# Sections in this version:
# - Topology and mobility
# - Acceptance beyond i.i.d.
# - The link layer: 3GPP NR
# - Energy
# - Asynchronous serving

# %%
# %matplotlib inline
import numpy as np
import matplotlib.pyplot as plt
import multispin_sim as ms
from multispin_sim import teaching

plt.rcParams["figure.figsize"] = (7, 3.5)
plt.rcParams["figure.constrained_layout.use"] = True

# %% [markdown]
# ## Topology and mobility
#
# **What changes.** The paper drops devices at fixed distances. Here devices walk (random waypoint, 1.4 m/s
# by default, faster below), so their path loss changes between rounds.
#
# **Switch it on.** `mobility.model: random-waypoint`, `mobility.speed_mps`, `mobility.region_m`; the
# positions are a networkx graph (`topology.graphml` in the run folder).

# %%
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
a2.set(ylabel="goodput (tokens/s), 95% CI", title="same seed, same fading stream"); plt.show()

# %% [markdown]
# **What to look at.** The distance traces, and whether goodput moved: with the optimal split and devices
# spread over the same annulus, mobility mostly reshuffles who is far, so goodput changes little.

# %% [markdown]
# ## Acceptance beyond i.i.d.
#
# **What changes.** The paper accepts every drafted token independently with probability alpha. Real drafts
# agree with the target in bursts: easy stretches, then hard ones. `acceptance.model` replays agreement
# sequences measured on real models (`trace`, a Spec-Bench trace shipped with the package), or draws them
# from a two-state Markov (`markov`, easy/hard) or a per-session Beta (`beta`) model.
#
# **Switch it on.** `acceptance.model: trace` (or `markov`, `beta`); same seed, same devices and fading.

# %%
base = {"devices.count": 8, "run.rounds": 300, "seed": 2, "policy.draft_length": 6}
fig, ax = plt.subplots()
for model in ("iid", "markov", "trace"):
    r = teaching.run({**base, "acceptance.model": model})
    acc = r.device_rounds["accepted"]
    ax.plot(np.arange(7), [np.mean(acc == j) for j in range(7)], "o-",
            label=f"{model}: goodput {r.summary['goodput_tps']:.0f} tokens/s")
ax.set(xlabel="accepted drafts A (gamma = 6)", ylabel="share of device-rounds",
       title="how many drafts are accepted"); ax.legend(); plt.show()

# %% [markdown]
# **What to look at.** The measured trace and the Markov model give many more rounds with nothing accepted
# (hard stretches) than the i.i.d. model; their mean agreement rates are also lower than the assumed
# 0.83-0.93 table of the i.i.d. default, and the goodput follows.

# %% [markdown]
# ## The link layer: 3GPP NR
#
# **What changes.** The paper sends at the Shannon rate on a continuous share of the band. A base station
# allocates whole PRBs, picks an MCS from a CQI table at the reported SNR and retransmits failed transport
# blocks (HARQ).
#
# **Switch it on.** `link.model: mcs` (`link.cqi_table`, `link.bler_target`, `link.harq_max_transmissions`).

# %%
base = {"devices.count": 8, "run.rounds": 300, "seed": 2}
fig, ax = plt.subplots()
for name, extra in (("Shannon (the paper)", {}), ("NR: PRBs, MCS, HARQ", {"link.model": "mcs"})):
    r = teaching.run({**base, **extra})
    c = np.sort(r.rounds["comm_s"][r.rounds["comm_s"] > 0]) * 1e3
    ax.loglog(c, 1 - np.arange(c.size) / c.size,
              label=f"{name}: median {np.median(c):.1f} ms, goodput {r.summary['goodput_tps']:.0f} tokens/s")
ax.set(xlabel="comm time per round (ms)", ylabel="P(comm > x)", title="correction phase, Shannon vs NR")
ax.legend(fontsize=8); plt.show()

# %% [markdown]
# **What to look at.** The NR curve sits to the right of Shannon (discrete MCS, an implementation gap,
# retransmissions), and its tail is cut: a failed block waits for the next fading block instead of
# trickling at a tiny rate.

# %% [markdown]
# ## Energy
#
# **What changes.** The paper counts time only. Each device spends energy drafting, transmitting UL
# corrections, receiving DL corrections and idling while it waits.
#
# **Switch it on.** Energy is accounted in every run (the `energy.*` keys set the powers, `compute.*` adds
# power modes and thermal throttling): `device_rounds.csv` has `energy_draft_j`, `energy_ul_j`,
# `energy_dl_j`, `energy_idle_j` and `energy_j`.

# %%
r = teaching.run({"devices.count": 8, "run.rounds": 300, "seed": 2})
dr = r.device_rounds
parts = ("energy_draft_j", "energy_ul_j", "energy_dl_j", "energy_idle_j")
devices = np.unique(dr["device"])
fig, ax = plt.subplots()
bottom = np.zeros(devices.size)
for part in parts:
    v = np.array([dr[part][dr["device"] == k].sum() for k in devices])
    ax.bar(devices, v, bottom=bottom, label=part.replace("energy_", "").replace("_j", ""))
    bottom += v
per_token = bottom / np.array([dr["tokens"][dr["device"] == k].sum() for k in devices])
ax.set(xlabel="device", ylabel="energy over the run (J)",
       title=f"energy per token: {per_token.min() * 1e3:.0f} to {per_token.max() * 1e3:.0f} mJ")
ax.legend(fontsize=8); plt.show()

# %% [markdown]
# **What to look at.** Which phase dominates each device's energy (with the default powers: drafting, then
# idling while the batch waits; the radio's share is small) and the energy per token; change the `energy.*`
# powers to see when the radio matters.

# %% [markdown]
# ## Asynchronous serving
#
# **What changes.** In the paper's synchronous rounds every device waits for the slowest draft and the
# slowest correction. Asynchronously, each device drafts, waits for its own verification and correction
# and goes on; the server batches whatever drafts are waiting (continuous batching).
#
# **Switch it on.** `serving.protocol: asynchronous` (`serving.batching`, `serving.max_batch`).

# %%
load = {"devices.count": 8, "seed": 2, "workload.arrivals": "poisson", "workload.rate_per_s": 0.1,
        "channel.coherence_time_ms": 42.3, "run.rounds": 100_000, "run.max_time_s": 200.0}
fig, ax = plt.subplots()
for name in ("synchronous", "asynchronous"):
    r = teaching.run({**load, "serving.protocol": name})
    lat = r.requests["completion_s"] - r.requests["arrival_s"]
    lat = np.sort(lat[np.isfinite(lat)])
    ax.plot(lat, np.arange(1, lat.size + 1) / lat.size, label=f"{name}: median {np.median(lat):.2f} s")
ax.set(xlabel="request latency (s)", ylabel="share of requests", title="latency of 64-token requests, 8 devices")
ax.legend(); plt.show()

# %% [markdown]
# **What to look at.** Whether removing the lock-step (nobody waits for the slowest device) shortens the
# latency distribution. At this light load the two protocols are close; raise `workload.rate_per_s` or make
# the devices unequal to see them part.

# %% [markdown]
# ## Adding a section
#
# Add three cells of this shape before this one in `tutorials/06_beyond_the_paper.py` (keep them to a few
# seconds of compute), then run `python tutorials/make_notebooks.py`:
#
# ```python
# # %% [markdown]
# # ## <Extension name>
# #
# # **What changes.** ...
# #
# # **Switch it on.** `<section>.<key>: <value>`
#
# # %%
# base = {...}
# paper = teaching.run(base)
# ext = teaching.run({**base, "<section>.<key>": ...})
# # one figure
#
# # %% [markdown]
# # **What to look at.** ...
# ```
