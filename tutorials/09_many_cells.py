# %% [markdown]
# # 9. Many cells: interference in time
#
# **Learning goals.**
# - cells reuse the band: a correction meets the corrections of the other cells that are in the air at the
#   same time on the same frequencies, and its rate follows its SINR, which changes whenever one of them starts
#   or ends;
# - the distance between servers (ISD) moves a network from noise-limited to interference-limited;
# - frequency reuse: less interference for a smaller share of the band;
# - the paper's question, uplink or downlink, asked again under interference.
# - requests that follow moving devices from cell to cell, and Little's law across the network; lock-step rounds
#   against continuous batching for them.

# %%
# %matplotlib inline
import math

import numpy as np
import matplotlib.pyplot as plt
import multispin_sim as ms
from multispin_sim import teaching

plt.rcParams["figure.figsize"] = (7, 3.5)
plt.rcParams["figure.constrained_layout.use"] = True

CELLS = {"cells.layout": "hex", "cells.count": 7, "devices.count": 10, "seed": 1}

# %% [markdown]
# ## One correction, many SINRs
#
# Seven cells on a hexagonal grid (with wrap-around: every cell has six neighbours), ten devices each, every cell
# on the whole band (reuse 1). Each cell runs its own rounds; the run keeps, for each correction, the intervals in
# which its interference was constant (`result.field.log`: start, end, rate, interference power, own gain). The
# interference of an interval is the sum, over the other cells' corrections in flight then, of their power times
# the path gain to this receiver (and one Rayleigh draw per pair), over the part of their subband that overlaps
# this one's. The rate is Shannon's at that interval's SINR, so the bits add up interval by interval.

# %%
r = teaching.run({**CELLS, "cells.isd_m": 200.0, "run.rounds": 40})
field = r.field
tx = max(field.log, key=lambda t: len(t.intervals))   # the correction cut most often
t0, t1, rate, interference, gain = np.array(tx.intervals).T
b = tx.f1 - tx.f0
sinr = tx.power * gain / (field.n0 * b + interference)
fig, ax = plt.subplots()
ax.step(1e3 * (t0 - tx.start), 10 * np.log10(sinr), where="post")
ax.set(xlabel="time since the correction started (ms)", ylabel="SINR (dB)",
       title=f"cell {tx.cell}, device {tx.device}: {len(t0)} intervals")
plt.show()
print(f"bits delivered: {np.sum(rate * (t1 - t0)):.1f} of {tx.bits:.0f}")

# %% [markdown]
# ## Noise-limited or interference-limited
#
# With the path gain G(d) = G0 d^-alpha, the SINR of a device at distance r from its server, with one interferer
# at distance D, is P G0 r^-alpha / (N0 b + P G0 D^-alpha). Shrinking the whole network by a factor c multiplies
# both received powers by c^-alpha: far apart the noise dominates and the SINR grows as the cells shrink; close
# together only the ratio (D / r)^alpha is left. The slider moves the ISD: watch the median SINR and the goodput
# per cell.

# %%
def by_isd(isd_m=500.0):
    res = teaching.run({**CELLS, "cells.isd_m": isd_m, "run.rounds": 30})
    snr, sinr = [], []
    for x in res.field.log:
        t0, t1, _, i, g = np.array(x.intervals).T
        b = x.f1 - x.f0
        snr.append(10 * np.log10(x.power * g[0] / (res.field.n0 * b)))
        sinr.append(10 * np.log10(x.power * g[0] / (res.field.n0 * b + i[0])))
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.hist(snr, bins=40, histtype="step", label=f"SNR, median {np.median(snr):.1f} dB")
    ax.hist(sinr, bins=40, histtype="step", label=f"SINR at the start, median {np.median(sinr):.1f} dB")
    ax.set(xlabel="dB", ylabel="corrections", title=f"ISD {isd_m:g} m: "
           f"{res.summary['goodput_tps'] / 7:.1f} tokens/s per cell")
    ax.legend(); plt.show()

teaching.explore(by_isd, isd_m=(100.0, 2000.0, 100.0, 500.0))

# %% [markdown]
# ## Frequency reuse
#
# With `cells.reuse: 3` neighbouring cells use different thirds of the band (the grid is cut, without
# wrap-around, so that the reuse pattern fits): a correction meets almost no interference, but every cell has a
# third of the bandwidth. Shannon's rate b log2(1 + SINR) is linear in b and only logarithmic in the SINR, so reuse
# pays only where the interference is strong.

# %%
for isd in (150.0, 1000.0):
    for reuse in (1, 3):
        res = teaching.run({**CELLS, "cells.isd_m": isd, "cells.reuse": reuse, "cells.wrap_around": False,
                            "run.rounds": 60})
        print(f"ISD {isd:6.0f} m, reuse {reuse}: goodput {res.summary['goodput_tps']:7.1f} tokens/s, "
              f"mean correction {1e3 * res.summary['comm_s']['mean']:6.1f} ms")

# %% [markdown]
# ## Uplink or downlink, under interference
#
# The paper's reactive policy splits the rejected devices between UL (each at its own power) and DL (the server's
# power shared). Under interference each decision sees its gains scaled by N0 / (N0 + psi), psi the interference
# measured at the decision (`cells.interference_csi: last`); the UL is interfered by the other cells' devices at
# this server, the DL by the other servers at each device. How does the UL share move as the cells close in?

# %%
isds = (100.0, 200.0, 500.0, 2000.0)
shares = []
for isd in isds:
    res = teaching.run({**CELLS, "cells.isd_m": isd, "run.rounds": 60})
    shares.append(res.summary["ul_share"])
fig, ax = plt.subplots()
ax.semilogx(isds, shares, "o-")
ax.set(xlabel="ISD (m)", ylabel="share of corrections on the UL", title="the optimal split under interference")
plt.show()

# %% [markdown]
# ## Requests that follow their devices
#
# So far every device always had work. With Poisson requests and devices that move, each request queues at its
# device and follows it: the device joins a round of the cell it is attached to when it has a request, hands over
# (A3, `handovers.csv`) and goes on being served by the next cell. The network keeps one request log
# (`requests.csv` in the run's folder). Below: where each request of a few devices was served.

# %%
moving = teaching.run({**CELLS, "devices.count": 4, "cells.isd_m": 200.0, "run.rounds": 150,
                       "mobility.model": "random-waypoint", "mobility.speed_mps": 25.0,
                       "workload.arrivals": "poisson", "workload.rate_per_s": 0.3})
req, dev = moving.requests, moving.device_rounds
q = moving.summary["requests"]
served_in = {k: sorted(set(dev["cell"][dev["device"] == k].tolist())) for k in range(4)}
print(f"{q['completed']} of {q['arrivals']} requests completed; {moving.summary['handover']['handovers']} handovers")
print("cells that served devices 0..3:", served_in)

# %% [markdown]
# Little's law holds on the sample path whichever cells served the requests: the time-average number of requests
# in the network is their total time in it (to the end of the run for those still there) over the run's length.

# %%
left = np.where(np.isnan(req["completion_s"]), q["time_s"], req["completion_s"])
print(f"from requests.csv {np.sum(left - req['arrival_s']) / q['time_s']:.4f}, "
      f"the network's queue_length_mean {q['queue_length_mean']:.4f}")

# %% [markdown]
# The same network under continuous batching (`serving.protocol: asynchronous`): each server verifies whatever
# drafts are waiting when it is free, so a request's first draft need not wait for a round to end. With the same
# seed both protocols see the same walks and the same requests (common random numbers); over the same simulated
# minute, compare the time to first token at a light load (0.1 requests/s per device). At 0.3 requests/s the
# queues build up and the order flips at this seed (1.6 s against 1.8 s): try it.

# %%
minute = {"run.rounds": 10**6, "run.max_time_s": 60.0}
for protocol in ("synchronous", "asynchronous"):
    r = teaching.run({**CELLS, "devices.count": 4, "cells.isd_m": 200.0, "mobility.model": "random-waypoint",
                      "mobility.speed_mps": 25.0, "workload.arrivals": "poisson", "workload.rate_per_s": 0.1,
                      "serving.protocol": protocol, **minute})
    rq = r.summary["requests"]
    print(f"{protocol:>12}: {rq['arrivals']} requests, {r.summary['handover']['handovers']} handovers, "
          f"time to first token median {rq['time_to_first_token_s']['median'] * 1e3:.0f} ms, "
          f"latency median {rq['latency_s']['median']:.2f} s")

# %% [markdown]
# ## Exercises

# %% [markdown]
# **Exercise 9.1.** Write `my_interference(power_w, gain, x_band, y_band)`: the interference (W) that a correction
# sent at `power_w` over the subband `x_band = (f0, f1)` (Hz) causes at a receiver listening on `y_band`, with the
# path gain `gain` (one fading draw included): its power spreads evenly over its own subband and only the overlap
# counts.

# %% tags=["exercise-9.1", "starter"]
def my_interference(power_w, gain, x_band, y_band):
    # TODO
    return None


# %% tags=["exercise-9.1", "solution"]
def my_interference(power_w, gain, x_band, y_band):
    overlap = max(0.0, min(x_band[1], y_band[1]) - max(x_band[0], y_band[0]))
    return power_w * gain * overlap / (x_band[1] - x_band[0])


# %% tags=["check-9.1"]
teaching.check_interference(my_interference)


# %% [markdown]
# **Exercise 9.2.** Write `my_delivery_time(bits, b, n0, signal_w, intervals)`: when a correction of `bits` bits on a
# subband of `b` Hz (noise PSD `n0`, received signal power `signal_w`) is delivered, if the interference it meets is
# given as a list of `(t_start, interference_w)` pairs from its start (the first at 0, each holding until the next,
# the last forever). The rate is b log2(1 + signal / (n0 b + I)).

# %% tags=["exercise-9.2", "starter"]
def my_delivery_time(bits, b, n0, signal_w, intervals):
    # TODO: add the bits interval by interval
    return None


# %% tags=["exercise-9.2", "solution"]
def my_delivery_time(bits, b, n0, signal_w, intervals):
    left = bits
    for j, (start, i_w) in enumerate(intervals):
        rate = b * math.log2(1 + signal_w / (n0 * b + i_w))
        end = intervals[j + 1][0] if j + 1 < len(intervals) else math.inf
        if rate * (end - start) >= left:
            return start + left / rate
        left -= rate * (end - start)
    return math.inf

print(f"the correction of the first figure: {1e3 * my_delivery_time(tx.bits, b, field.n0, tx.power * gain[0], list(zip(t0 - tx.start, interference))):.3f} ms "
      f"(the simulator: {1e3 * (t1[-1] - tx.start):.3f} ms)")

# %% tags=["check-9.2"]
teaching.check_delivery_time(my_delivery_time)


# %% [markdown]
# **Exercise 9.3.** With reuse 1 a correction sees an SINR `sinr1_db` on a subband b; with reuse 3 it gets b / 3 and
# an SINR `sinr3_db` (less interference). Write `my_reuse_gain(sinr1_db, sinr3_db)`: the rate with reuse 3 over
# the rate with reuse 1.

# %% tags=["exercise-9.3", "starter"]
def my_reuse_gain(sinr1_db, sinr3_db):
    # TODO
    return None


# %% tags=["exercise-9.3", "solution"]
def my_reuse_gain(sinr1_db, sinr3_db):
    return math.log2(1 + 10 ** (sinr3_db / 10)) / (3 * math.log2(1 + 10 ** (sinr1_db / 10)))

print(f"-5 dB -> 10 dB: reuse 3 gives {my_reuse_gain(-5, 10):.2f}x; 10 dB -> 20 dB: {my_reuse_gain(10, 20):.2f}x")

# %% tags=["check-9.3"]
teaching.check_reuse_gain(my_reuse_gain)
