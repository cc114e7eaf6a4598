# %% [markdown]
# # 4. Fading over time
#
# **Learning goals.**
# - Rayleigh block fading: |h|^2 ~ Exp(1), redrawn every round;
# - why the mean correction delay is infinite and the median is not (read medians!);
# - the Jakes correlation J0(2 pi f_D tau), Gauss-Markov fading (rho^n) and the coherence time;
# - how a coherence time bounds the delays in the simulator.

# %%
# %matplotlib inline
import numpy as np
import matplotlib.pyplot as plt
import multispin_sim as ms
from multispin_sim import teaching

plt.rcParams["figure.figsize"] = (7, 3.5)
plt.rcParams["figure.constrained_layout.use"] = True

# %% [markdown]
# ## The delay of one transmission
#
# At mean SNR rho, the delay is T = S / (b log2(1 + rho |h|^2)). A deep fade (|h|^2 near 0) makes it
# arbitrarily long: P(T > t) ~ c / t, so E[T] is infinite. The running mean never settles; the running median
# does.

# %%
rng = np.random.default_rng(0)
S, b, rho = 34_816, 1e6, 10.0                                  # mean SNR 10 dB
h2 = rng.standard_exponential((5, 50_000))                     # 5 independent sample paths
paths = S / (b * np.log2(1 + rho * h2))
T = paths[0]
n = np.arange(1, T.size + 1)
fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.5))
for i, path in enumerate(paths):
    a1.plot(n, np.cumsum(path) / n * 1e3, color="C0", lw=1, label="running mean (5 paths)" if i == 0 else None)
marks = np.unique(np.logspace(0, np.log10(T.size), 40).astype(int))
for i, path in enumerate(paths):
    a1.plot(marks, [np.median(path[:m]) * 1e3 for m in marks], color="C1", lw=1,
            label="running median (5 paths)" if i == 0 else None)
a1.set(xscale="log", yscale="log", xlabel="samples", ylabel="delay (ms)", title="means jump and drift, medians settle"); a1.legend()
t = np.logspace(np.log10(np.median(T)), np.log10(T.max()), 50)
a2.loglog(t, [(T > x).mean() for x in t], ".", label="sampled P(T > t)")
a2.loglog(t, 1 - np.exp(-(2 ** (S / (b * t)) - 1) / rho), "-", label="exact 1 - CDF")
a2.set(xlabel="t (s)", ylabel="P(T > t)", title="a 1/t tail"); a2.legend()
plt.show()

# %% [markdown]
# ## Gauss-Markov fading and the coherence time
#
# Under Jakes' (Clarke's) model of a moving receiver, the complex gain h is correlated over a lag tau by
# J0(2 pi f_D tau): it halves at tau = 0.24 / f_D, crosses zero at 0.38 / f_D and then oscillates. The rule of
# thumb T_c = 0.423 / f_D sits just past that zero (J0 = -0.12 there): after T_c the channel is roughly a new
# draw. (It is a rule of thumb, not a "half" point; Rappaport's stricter T_c = 9 / (16 pi f_D) = 0.18 / f_D is
# where the correlation is still 0.7.)
#
# The simulator has two models of fading over time (`channel.fading`):
# - `jakes`: a sum-of-sinusoids process with correlation J0(2 pi f_D tau) at every lag (left, blue);
# - `gauss-markov`: one AR(1) step per fading block of length dt, h(t + dt) = rho h(t) + sqrt(1 - rho^2) w
#   with rho = J0(2 pi f_D dt). Only the first step has Jakes' correlation; after n steps it is rho^n, which
#   depends on the block length (left, orange: steps of 1 ms, so rho^n decays far more slowly than J0).
#
# Each series is drawn beside its own correlation. Drag the Doppler slider (walking at 3.5 GHz is about 10 Hz, a
# car about 200 Hz).

# %%
from scipy.special import j0
from multispin_sim.model.fading import complex_gaussian, gauss_markov_series, power, jakes_correlation
from multispin_sim.model.jakes import SumOfSinusoids

def show_doppler(doppler_hz=10.0):
    dt = 1e-3                                                     # 1 ms: the Gauss-Markov block
    rho = float(jakes_correlation(doppler_hz, dt))
    rng = np.random.default_rng(1)
    t = np.arange(2000) * dt
    h_jakes = SumOfSinusoids(rng, (1,), doppler_hz).gains(t)[:, 0]
    h_gm = gauss_markov_series(complex_gaussian(rng, 1), rho, complex_gaussian(rng, (2000, 1)))[:, 0]
    lags = np.arange(0, 200)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.2))
    a1.plot(t, 10 * np.log10(power(h_jakes)), color="C0", lw=1, label="jakes")
    a1.plot(t, 10 * np.log10(power(h_gm)), color="C1", lw=1, label="gauss-markov, 1 ms blocks")
    a1.set(xlabel="time (s)", ylabel="|h|^2 (dB)", title=f"f_D = {doppler_hz:.0f} Hz"); a1.legend(fontsize=8)
    a2.plot(lags * dt * 1e3, j0(2 * np.pi * doppler_hz * lags * dt), color="C0", label="jakes: J0(2 pi f_D tau)")
    a2.plot(lags * dt * 1e3, rho ** lags, color="C1", label="gauss-markov: rho^(tau / 1 ms)")
    a2.axhline(0.5, color="0.6", lw=0.8)
    a2.axvline(0.242 / doppler_hz * 1e3, color="C0", ls=":", label="J0 = 1/2 at 0.24 / f_D")
    a2.axvline(0.423 / doppler_hz * 1e3, color="k", ls="--", label="rule of thumb T_c = 0.423 / f_D")
    a2.set(xlabel="lag tau (ms)", ylabel="correlation of h", ylim=(-0.5, 1.05)); a2.legend(fontsize=7)
    plt.show()

teaching.explore(show_doppler, doppler_hz=(2.0, 200.0, 2.0, 10.0))

# %% [markdown]
# ## In the simulator
#
# With the paper's one fading block per round, a correction in a deep fade holds the whole round. With a
# coherence time (here 10 ms), a long correction continues over new fading blocks and its delay is bounded.

# %%
base = {"devices.count": 10, "run.rounds": 500, "channel.fading": "gauss-markov", "channel.doppler_hz": 40.0}
runs = {"one block per round": teaching.run(base),
        "T_c = 10 ms": teaching.run({**base, "channel.coherence_time_ms": 10.0})}
fig, ax = plt.subplots()
for name, r in runs.items():
    c = np.sort(r.rounds["comm_s"]) * 1e3
    ax.loglog(c, 1 - np.arange(c.size) / c.size, label=f"{name}: median {np.median(c):.1f} ms, max {c.max():.0f} ms")
ax.set(xlabel="comm time per round (ms)", ylabel="P(comm > x)", title="tail of the correction phase")
ax.legend(fontsize=8); plt.show()


# %% [markdown]
# ## Exercises

# %% [markdown]
# **Exercise 4.1.** Write `my_median_delay(bits, bandwidth_hz, mean_snr)`: the median of
# S / (b log2(1 + mean_snr |h|^2)) under Rayleigh fading (a closed form, no sampling).

# %% tags=["exercise-4.1", "starter"]
def my_median_delay(bits, bandwidth_hz, mean_snr):
    # TODO
    return None


# %% tags=["exercise-4.1", "solution"]
def my_median_delay(bits, bandwidth_hz, mean_snr):
    return bits / (bandwidth_hz * np.log2(1 + mean_snr * np.log(2)))


# %% tags=["check-4.1"]
teaching.check_median_delay(my_median_delay)


# %% [markdown]
# **Exercise 4.2.** Write `my_power_correlation(doppler_hz, dt_s)`: the correlation coefficient of |h|^2 at lag
# dt under Jakes' (Clarke's) model, `channel.fading: jakes`.

# %% tags=["exercise-4.2", "starter"]
def my_power_correlation(doppler_hz, dt_s):
    # TODO
    return None


# %% tags=["exercise-4.2", "solution"]
def my_power_correlation(doppler_hz, dt_s):
    return j0(2 * np.pi * doppler_hz * dt_s) ** 2


# %% tags=["check-4.2"]
teaching.check_power_correlation(my_power_correlation)
