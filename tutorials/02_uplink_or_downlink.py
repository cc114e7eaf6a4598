# %% [markdown]
# # 2. Uplink or downlink?
#
# **Learning goals.**
# - the two ways to correct a rejected draft: UL (the device uploads its draft distribution, at its own
#   power) or DL (the server sends the target distribution, sharing one DL power budget among all DL
#   corrections);
# - why the UL delay depends on each device alone, while the DL delay of a set depends on the whole set;
# - the prefix structure of the optimal split: sort by UL delay, put a prefix on UL;
# - how corrections move from UL to DL as the DL power grows.

# %%
# %matplotlib inline
import numpy as np
import matplotlib.pyplot as plt
import multispin_sim as ms
from multispin_sim import teaching

plt.rcParams["figure.figsize"] = (7, 3.5)
plt.rcParams["figure.constrained_layout.use"] = True

# %% [markdown]
# ## One outcome, eight rejected devices
#
# All eight share B = 10 MHz equally (b = B / 8). A device's full-power UL delay is
# S / (b log2(1 + P_ul g / (N0 b))). The DL devices get delay-equalising powers: with a DL set D, the common
# delay is tau(D) = S / (b log2(1 + P_dl / (N0 b sum_{k in D} 1/g_k))) -- every extra DL device makes it slower.
# The sliders set the DL power budget and move device 0 nearer or further.

# %%
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
                 distance_0_m=(50.0, 800.0, 10.0, float(round(distance[0]))))

# %% [markdown]
# f(n) is the larger of two sequences: the slowest UL delay among the first n (non-decreasing in n) and the
# shared DL delay of the rest (non-increasing). Their crossing gives the optimum. Checking the lemma against
# all 2^8 assignments:

# %%
from multispin_sim.model.reactive import exhaustive_split
for p in (10, 20, 30):
    print(f"P_dl = {p} dBm: prefix {optimal_split(problem(p)).t_comm[0] * 1e3:.4f} ms, "
          f"exhaustive {exhaustive_split(problem(p)).t_comm[0] * 1e3:.4f} ms")

# %% [markdown]
# ## Sweep the DL power: corrections move from UL to DL
#
# Ten devices, 300 rounds per DL power. `n_ul` and `n_dl` in `rounds.csv` count the corrections of each
# round.

# %%
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
plt.show()


# %% [markdown]
# ## Exercises

# %% [markdown]
# **Exercise 2.1.** Write `my_ul_delay(bits, bandwidth_hz, power_w, gain, n0)`: seconds to send `bits` at
# the Shannon rate.

# %% tags=["exercise-2.1", "starter"]
def my_ul_delay(bits, bandwidth_hz, power_w, gain, n0):
    # TODO
    return None


# %% tags=["exercise-2.1", "solution"]
def my_ul_delay(bits, bandwidth_hz, power_w, gain, n0):
    return bits / (bandwidth_hz * np.log2(1 + power_w * gain / (n0 * bandwidth_hz)))


# %% tags=["check-2.1"]
teaching.check_ul_delay(my_ul_delay)


# %% [markdown]
# **Exercise 2.2.** Write `my_dl_delay(bits, bandwidth_hz, p_dl_w, gains, n0)`: the common delay of the DL
# devices with gains `gains` (an array) when the server shares `p_dl_w` so that their delays are equal.

# %% tags=["exercise-2.2", "starter"]
def my_dl_delay(bits, bandwidth_hz, p_dl_w, gains, n0):
    # TODO: the closed form tau(D)
    return None


# %% tags=["exercise-2.2", "solution"]
def my_dl_delay(bits, bandwidth_hz, p_dl_w, gains, n0):
    inv = np.sum(1.0 / np.asarray(gains))
    return bits / (bandwidth_hz * np.log2(1 + p_dl_w / (n0 * bandwidth_hz * inv)))


# %% tags=["check-2.2"]
teaching.check_dl_delay(my_dl_delay)


# %% [markdown]
# **Exercise 2.3.** Write `my_best_t_comm(d_ul, g_dl, bits, bandwidth_hz, p_dl_w, n0)`: T_comm of the best
# assignment, by the prefix lemma (sort by `d_ul`, try every split n). You may use `my_dl_delay`.

# %% tags=["exercise-2.3", "starter"]
def my_best_t_comm(d_ul, g_dl, bits, bandwidth_hz, p_dl_w, n0):
    # TODO: f(n) for n = 0..len(d_ul), return the smallest
    return None


# %% tags=["exercise-2.3", "solution"]
def my_best_t_comm(d_ul, g_dl, bits, bandwidth_hz, p_dl_w, n0):
    order = np.argsort(d_ul)
    d, g = np.asarray(d_ul)[order], np.asarray(g_dl)[order]
    best = np.inf
    for n in range(len(d) + 1):
        t_ul = d[n - 1] if n else 0.0
        t_dl = my_dl_delay(bits, bandwidth_hz, p_dl_w, g[n:], n0) if n < len(d) else 0.0
        best = min(best, max(t_ul, t_dl))
    return best


# %% tags=["check-2.3"]
teaching.check_best_split(my_best_t_comm)
