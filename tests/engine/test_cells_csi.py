"""Several cells with imperfect CSI: a cell's decisions see its channel's CSI estimate (scaled by
the interference it sees), its corrections meet the true channel (one antenna), or the true
channel through the estimate's maximum-ratio beam (several), under the other cells'
interference. One cell through the cells machinery is the single-cell run with the same CSI;
the multi-antenna law is that of ``test_antennas_csi``."""
import math

import numpy as np
import pytest
from scipy.special import j0

import multispin_sim as ms

NSIG = 5


def run(**overrides):
    return ms.simulate(ms.load_scenario(None, overrides=overrides))


@pytest.mark.parametrize("csi", [
    {"csi.estimation_error_variance": 0.3},
    {"channel.fading": "jakes", "channel.doppler_hz": 60.0, "csi.delay_ms": 4.0},
    {"csi.cqi_quantisation": True, "server.antennas": 2},
], ids=["mmse", "jakes-delay", "cqi-two-antennas"])
def test_one_hex_cell_with_imperfect_csi_is_the_single_cell_run(csi):
    base = {"run.rounds": 120, "devices.count": 8, **csi}
    one = run(**base)
    cell = run(**base, **{"cells.layout": "hex", "cells.count": 1})
    a, b = one.device_rounds, cell.device_rounds
    assert "planned_delay_s" in a
    for col in ("mode", "power_w", "gain_ul", "gain_dl", "planned_delay_s"):
        va, vb = np.asarray(a[col]), np.asarray(b[col])
        if va.dtype.kind == "f":
            np.testing.assert_allclose(vb, va, rtol=1e-12, atol=1e-300, err_msg=col)
        else:
            assert va.tolist() == vb.tolist(), col
    # the field delivers at absolute times (a delay is end - start), so a realised delay
    # carries the clock's rounding, a few eps x the time simulated
    clock = 4 * np.finfo(float).eps * one.summary["sim_time_s"]
    np.testing.assert_allclose(b["delay_s"], a["delay_s"], rtol=1e-12, atol=clock)
    assert not np.allclose(a["delay_s"], a["planned_delay_s"])   # the CSI was imperfect


def test_array_streams_under_interference_meet_the_matched_beam_gain():
    """7 cells, M = 2, MMSE error s2 and aged CSI, the decisions blind to the interference (so
    the recorded gain is the estimate): each stream's recorded gain has the matched beam's
    law given the estimate, mean excess v = 1 - rho^2 + rho^2 s2 over rho^2 ||h_hat||^2.
    (Seed 3: at the default seed one stream, blind to a close interferer, takes 2,000 s and
    the other cells run 20 times the rounds until the network's horizon.)"""
    s2, doppler, tau = 0.2, 50.0, 2e-3
    res = run(**{"run.rounds": 150, "seed": 3, "cells.layout": "hex", "cells.count": 7,
                 "server.antennas": 2, "cells.interference_csi": "none",
                 "csi.estimation_error_variance": s2, "channel.doppler_hz": doppler,
                 "csi.delay_ms": tau * 1e3})
    est, real = [], []
    for c in res.cells:
        d = c.device_rounds
        m = np.asarray(d["rejected"]) == 1
        pl = np.asarray(c.devices["pathloss_gain"])[np.asarray(d["device"])[m]]
        est.append(np.asarray(d["gain_ul"])[m] / pl)
        real.append(np.asarray(d["gain_eff"])[m] / pl)
        # on air for the delay the interference gave it
        np.testing.assert_array_equal(np.asarray(d["airtime_s"])[m], np.asarray(d["delay_s"])[m])
    # the field delivered each stream at that gain (the first transmissions, as logged)
    recorded = {(c, int(k), float(g)) for c, cell in enumerate(res.cells)
                for k, g in zip(cell.device_rounds["device"], cell.device_rounds["gain_eff"])}
    assert all((tx.cell, tx.device, tx.gain) in recorded for tx in res.field.log)
    assert len(res.field.log) > 100
    est, real = np.concatenate(est), np.concatenate(real)
    rho2 = float(j0(2 * math.pi * doppler * tau)) ** 2
    v = 1 - rho2 + rho2 * s2
    se = math.sqrt(np.mean(2 * rho2 * v * est + v * v) / est.size)
    assert est.size > 3000
    assert abs(np.mean(real - rho2 * est) - v) < NSIG * se
