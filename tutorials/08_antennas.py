# %% [markdown]
# # 8. Antennas at the edge server
#
# **Learning goals.**
# - M server antennas: a device's channel becomes a vector h in C^M; a maximum-ratio beam collects
#   the array gain ||h||^2, Gamma(M, 1) under Rayleigh fading: deep fades become rare;
# - the line of sight (no fading): the steering vector of a linear array and its beam pattern;
# - zero-forcing: two devices on one band, separated by their directions, and what that costs;
# - orthogonal subbands against a shared band in the simulator.

# %%
# %matplotlib inline
import math

import numpy as np
import matplotlib.pyplot as plt
import multispin_sim as ms
from multispin_sim import teaching

plt.rcParams["figure.figsize"] = (7, 3.5)
plt.rcParams["figure.constrained_layout.use"] = True

# %% [markdown]
# ## The array gain
#
# With M antennas and maximum-ratio transmission (or combining) a correction meets the gain G ||h||^2: the sum
# of M independent Exp(1) powers under Rayleigh fading, a Gamma(M, 1) variable. Its mean grows as M, its spread
# as sqrt(M), so its spread relative to the mean shrinks as 1 / sqrt(M): the deep fades that made the mean
# delay infinite in notebook 4 disappear.
# The simulator records each round's array gain (`gain_ul`, path loss included).

# %%
fig, ax = plt.subplots()
for m in (1, 2, 4, 8):
    r = teaching.run({"server.antennas": m, "devices.count": 5, "run.rounds": 400, "seed": 1})
    x = r.device_rounds["gain_ul"] / r.devices["pathloss_gain"][r.device_rounds["device"]]
    ax.hist(x, bins=np.linspace(0, 16, 65), density=True, histtype="step", label=f"M = {m}: mean {x.mean():.2f}")
    print(f"M = {m}: goodput {r.summary['goodput_tps']:.1f} tokens/s, median correction "
          f"{1e3 * np.median(r.device_rounds['delay_s'][r.device_rounds['rejected'] > 0]):.1f} ms")
ax.set(xlabel="array gain / path loss, ||h||^2", ylabel="density", title="Gamma(M, 1): fewer deep fades")
ax.legend(); plt.show()

# %% [markdown]
# ## The line of sight
#
# Without fading (`channel.fading: none`) a device's channel is its line of sight. The server is a uniform
# linear array: element i sits i d wavelengths along the array's axis (`server.antenna_spacing` d, 0.5 by
# default), so a device at bearing phi from the broadside (the direction the array faces,
# `server.array_broadside_deg`) is seen through the steering vector
#
#     s_i(phi) = exp(j 2 pi d i sin(phi)),   i = 0 .. M-1.
#
# A beam pointed at phi_0 (the weights s(phi_0) / sqrt(M)) meets a device at phi with the power
# |s(phi_0)^H s(phi)|^2 / M: M at phi_0 and zero at the nulls sin(phi) - sin(phi_0) = k / (M d). A linear array
# cannot tell front from back: phi and 180 - phi have one sine.
#
# Between the two extremes, `channel.rician_k_db` (the Rician K-factor, in dB) mixes them: each element is
# a s + b w with a^2 = K / (K + 1) and b^2 = 1 / (K + 1), the direct path s plus the fading model's scattered
# part w.

# %%
def pattern(phi0_deg, m, d=0.5, n=721):
    phi = np.radians(np.linspace(-90, 90, n))
    s0 = np.exp(2j * np.pi * d * np.arange(m) * math.sin(math.radians(phi0_deg)))
    s = np.exp(2j * np.pi * d * np.outer(np.sin(phi), np.arange(m)))
    return np.degrees(phi), np.abs(s @ s0.conj()) ** 2 / m


def draw_pattern(phi0_deg=0.0, m=4):
    deg, p = pattern(phi0_deg, m)
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot(deg, 10 * np.log10(np.maximum(p / m, 1e-4)))
    ax.set(xlabel="bearing from broadside (degrees)", ylabel="gain / M (dB)", ylim=(-40, 1),
           title=f"beam toward {phi0_deg:g} degrees, M = {m}, d = 0.5")
    plt.show()

teaching.explore(draw_pattern, phi0_deg=(-60.0, 60.0, 5.0, 0.0), m=(2, 16, 1, 4))

# %% [markdown]
# ## Zero-forcing two devices
#
# On a shared band (`server.dl_scheme: mu-mimo-zf`) the server sends both corrections at once and precodes
# them so that neither reaches the other device. The price is power: a stream keeps only the part of its
# channel that is orthogonal to the other's, 1 - |s_1^H s_2|^2 / M^2 of its array gain M G. Here one device
# stays on the broadside at 500 m and the other moves round the array; both always correct on the DL
# (`policy.mode: all-dl`).

# %%
kept, times = [], []
bearings = (2, 5, 10, 15, 20, 30, 45, 60, 90)
for phi in bearings:
    far = [500 * math.cos(math.radians(phi)), 500 * math.sin(math.radians(phi))]
    r = teaching.run({"devices.count": 2, "topology.layout": "coordinates", "topology.server_xy_m": [0, 0],
                      "topology.device_xy_m": [[500.0, 0.0], far], "server.antennas": 4,
                      "channel.fading": "none", "server.dl_scheme": "mu-mimo-zf", "policy.mode": "all-dl",
                      "run.rounds": 60, "seed": 1})
    dr = r.device_rounds
    sent = dr["rejected"] > 0
    pair = np.isin(dr["round"], [k for k in np.unique(dr["round"][sent])
                                 if np.count_nonzero(sent & (dr["round"] == k)) == 2]) & sent
    kept.append(float(np.mean(dr["gain_eff"][pair] / dr["gain_dl"][pair])))
    times.append(1e3 * float(np.mean(dr["delay_s"][pair])))
fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.5))
a1.plot(bearings, kept, "o-"); a1.set(xlabel="second device's bearing (degrees)", ylabel="ZF gain / array gain",
                                      title="what zero-forcing keeps")
a2.semilogy(bearings, times, "o-"); a2.set(xlabel="second device's bearing (degrees)", ylabel="correction (ms)",
                                           title="the pair's correction time")
plt.show()

# %% [markdown]
# ## Orthogonal subbands or one shared band?
#
# The paper gives each rejected device its own subband (`ofdma-mrt` / `ofdma-mrc`, the defaults). A shared band
# gives every stream the whole band but makes the streams of one link interfere (MMSE on the UL) or cost power
# (ZF on the DL). Which wins depends on how well the array tells the devices apart: compare Rayleigh fading,
# where vectors are nearly orthogonal for large M, with the line of sight of devices spread around the server.

# %%
for fading in ("rayleigh", "none"):
    for scheme, (dl, ul) in {"orthogonal": ("ofdma-mrt", "ofdma-mrc"),
                             "shared": ("mu-mimo-zf", "mu-mimo-mmse")}.items():
        r = teaching.run({"server.antennas": 4, "channel.fading": fading, "server.dl_scheme": dl,
                          "server.ul_scheme": ul, "run.rounds": 300, "seed": 1})
        print(f"{fading:>8}, {scheme:>10}: goodput {r.summary['goodput_tps']:6.1f} tokens/s, "
              f"mean correction {1e3 * r.summary['comm_s']['mean']:5.1f} ms")

# %% [markdown]
# ## Exercises

# %% [markdown]
# **Exercise 8.1.** Write `my_steering(phi_deg, m, d)`: the steering vector (a complex numpy array of length m)
# of a uniform linear array of m elements spaced d wavelengths, toward a device at `phi_deg` degrees from the
# broadside.

# %% tags=["exercise-8.1", "starter"]
def my_steering(phi_deg, m, d):
    # TODO
    return None


# %% tags=["exercise-8.1", "solution"]
def my_steering(phi_deg, m, d):
    return np.exp(2j * np.pi * d * np.arange(m) * math.sin(math.radians(phi_deg)))


# %% tags=["check-8.1"]
teaching.check_steering(my_steering)


# %% [markdown]
# **Exercise 8.2.** Write `my_zf_kept(phi1_deg, phi2_deg, m, d)`: the share of its array gain that each of two
# zero-forced line-of-sight streams keeps, 1 - |s_1^H s_2|^2 / M^2. (The check compares it with the zero-forcing
# gain 1 / [(A^H A)^-1]_kk of the matrix A of the two vectors.)

# %% tags=["exercise-8.2", "starter"]
def my_zf_kept(phi1_deg, phi2_deg, m, d):
    # TODO: use my_steering
    return None


# %% tags=["exercise-8.2", "solution"]
def my_zf_kept(phi1_deg, phi2_deg, m, d):
    c = np.vdot(my_steering(phi1_deg, m, d), my_steering(phi2_deg, m, d))
    return 1 - abs(c) ** 2 / m**2

print(f"M = 4, 0 and 10 degrees: ZF keeps {my_zf_kept(0, 10, 4, 0.5):.3f} (the run above: {kept[2]:.3f})")

# %% tags=["check-8.2"]
teaching.check_zf_kept(my_zf_kept)


# %% [markdown]
# **Exercise 8.3.** A device sits on the broadside of a 4-element array (d = 0.5). At what smallest bearing
# (degrees, between 0 and 90) does a second device lose nothing to zero-forcing? Set `first_null_deg`.

# %% tags=["exercise-8.3", "starter"]
first_null_deg = None  # TODO: where the beam pattern toward 0 degrees has its first null

# %% tags=["exercise-8.3", "solution"]
first_null_deg = math.degrees(math.asin(1 / (4 * 0.5)))   # sin(phi) = 1 / (M d): 30 degrees

# %% tags=["check-8.3"]
teaching.check_first_null(first_null_deg)
