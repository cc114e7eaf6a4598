"""A channel over time: the fading power |h|^2 that devices' recorded gains follow round by
round, under Jakes fading and under Gauss-Markov fading at the same Doppler, and its sample
autocorrelation at a few lags against the theory.

``device_rounds.csv`` records each round's gains ``gain_ul`` = G_k |h_k|^2 (path loss G_k in
``devices.csv`` as ``pathloss_gain``); with one fading block per round (the default) they are
the fading at the round start, ``start_s`` of ``rounds.csv``. Every draft is accepted here
(alpha = 1), so no correction stretches a round: the rounds, and the samples, come every D
seconds. For circular Gaussian h the correlation of |h|^2 is the square of that of h: Jakes
gives J0(2 pi f_D n D)^2 at lag n (it oscillates), Gauss-Markov rho^(2n) with
rho = J0(2 pi f_D D) per round (it decays geometrically: the same first lag, then faster).
The columns average the K devices' own sample autocorrelations (independent processes).

Run it: ``python docs/examples/fading_over_time.py`` (2 runs of 1,000 rounds, a second).
"""
import numpy as np
from scipy.special import j0

import multispin_sim as ms

LAGS = (1, 2, 3, 4, 6, 8)


def autocorrelation(x, lag):
    """Sample autocorrelation of each column of ``x`` (rounds x devices) at ``lag``."""
    x = x - x.mean(axis=0)
    return (x[:-lag] * x[lag:]).sum(axis=0) / (x * x).sum(axis=0)


def main(rounds=1000, devices=8, doppler_hz=1.0, seed=3):
    """Return {fading: {"result", "period_s", "acf": {lag: per-device autocorrelations}}}."""
    always_accept = {task: 1.0 for task in ("humaneval", "gsm8k", "ifeval", "mt-bench")}
    out = {}
    for fading in ("jakes", "gauss-markov"):
        result = ms.simulate(ms.load_scenario(None, overrides={
            "channel.fading": fading, "channel.doppler_hz": doppler_hz,
            "devices.acceptance": always_accept, "devices.count": devices,
            "run.rounds": rounds, "seed": seed}))
        rows = result.device_rounds
        power = np.empty((rounds, devices))   # |h|^2, one row per round
        power[rows["round"], rows["device"]] = (
            rows["gain_ul"] / result.devices["pathloss_gain"][rows["device"]])
        period = float(np.diff(result.rounds["start_s"]).mean())
        out[fading] = {"result": result, "period_s": period,
                       "acf": {lag: autocorrelation(power, lag) for lag in LAGS}}

    period = out["jakes"]["period_s"]
    rho = j0(2 * np.pi * doppler_hz * period)
    print(f"f_D = {doppler_hz} Hz, round period D = {1e3 * period:.1f} ms, K = {devices}, "
          f"{rounds} rounds; autocorrelation of |h|^2")
    print(f"{'lag':>3} {'tau (s)':>8} {'Jakes':>7} {'J0^2':>7}   {'G-M':>7} {'rho^2n':>7}")
    for lag in LAGS:
        jakes, gm = (out[f]["acf"][lag].mean() for f in ("jakes", "gauss-markov"))
        print(f"{lag:>3} {lag * period:8.3f} {jakes:7.3f} "
              f"{j0(2 * np.pi * doppler_hz * lag * period) ** 2:7.3f}   "
              f"{gm:7.3f} {rho ** (2 * lag):7.3f}")
    return out


if __name__ == "__main__":
    main()
