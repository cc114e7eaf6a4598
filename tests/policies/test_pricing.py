"""Which gains price the corrections (``policy.plan_gains``) outside the one-antenna Rayleigh
case, and in the controller that does not search: goodput-argmax prices them as the searching
controllers do; without fading the ergodic gain is the gain itself; with an antenna array it is
the mean rate of the array gain (Gamma(M, 1) for i.i.d. elements); a shared band refuses
'ergodic' up front."""
import math

import numpy as np
import pytest
from scipy import integrate

from multispin_sim.engine.population import build_population
from multispin_sim.engine.simulation import simulate
from multispin_sim.engine.streams import RandomStreams
from multispin_sim.model.antennas import exponential_correlation
from multispin_sim.model.ergodic import mean_log1p
from multispin_sim.model.rates import ergodic_gain, shannon_rate
from multispin_sim.policies import DRAFT_CONTROLLERS, DraftContext, make_draft_controller
from multispin_sim.policies import draft
from multispin_sim.policies.reactive import make_reactive_policy
from multispin_sim.scenario import ScenarioError, load_scenario


def system_of(seed, **overrides):
    sc = load_scenario(None, overrides={"seed": seed, **overrides})
    return build_population(sc, RandomStreams(sc.seed).devices).system


def argmax_context(system, g_ul, g_dl, hold=True):
    k = system.k
    return DraftContext(0, system, g_ul, g_dl, np.ones(k, bool), None,
                        make_reactive_policy("optimal"), np.random.default_rng(2),
                        gains_hold=hold)


def test_goodput_argmax_prices_corrections_at_the_ergodic_gains_where_planned():
    """Under 'ergodic' (and 'auto' when the round start's gains do not hold) goodput-argmax
    decides as it does on a channel whose CSI is each device's ergodic gain alone on the band
    (its c_k is the correction of a device alone: the whole band and DL budget); the round
    start's CSI (deeply faded here) gives other lengths."""
    s = system_of(3, **{"devices.count": 6})
    faded = s.pathloss * 1e-3
    alone = (ergodic_gain(s.pathloss, s.p_ul_w, s.bandwidth_hz, s.n0),
             ergodic_gain(s.pathloss, s.p_dl_w, s.bandwidth_hz, s.n0))

    def lengths(plan, g_ul, g_dl, hold=True):
        ctl = make_draft_controller("goodput-argmax", plan_gains=plan, max_draft=20)
        return ctl.lengths(argmax_context(s, g_ul, g_dl, hold)).tolist()

    want = lengths("instantaneous", *alone)
    assert lengths("ergodic", faded, faded) == want
    assert lengths("auto", faded, faded, hold=False) == want
    assert lengths("auto", faded, faded, hold=True) == lengths("instantaneous", faded, faded)
    assert lengths("instantaneous", faded, faded) != want


@pytest.mark.parametrize("overrides, plan", [
    ({}, "instantaneous"),
    ({"channel.coherence_time_ms": 5.0}, "auto"),
    ({"policy.plan_gains": "ergodic"}, "ergodic"),
])
def test_goodput_argmax_reads_plan_gains_from_the_scenario(overrides, plan):
    sc = load_scenario(None, overrides={"policy.draft": "goodput-argmax", **overrides})
    assert DRAFT_CONTROLLERS.lookup("goodput-argmax").from_scenario(sc, 4).plan_gains == plan


def test_without_fading_ergodic_pricing_is_the_instantaneous_one():
    """With channel.fading 'none' the CSI is the path loss and every block has the same rate:
    pricing at 'ergodic' must decide exactly as at the CSI (Rayleigh's ergodic gain, about
    half the path loss at these SNRs, would shorten the drafts)."""
    def run(plan):
        sc = load_scenario(None, overrides={
            "devices.count": 6, "run.rounds": 15, "policy.draft": "greedy",
            "policy.saa_samples": 100, "channel.fading": "none", "policy.plan_gains": plan,
            "channel.ref_gain_db": -40.0})
        return simulate(sc).device_rounds["draft_len"].tolist()

    assert run("ergodic") == run("instantaneous")


def gamma_mean_log1p(rho, m):
    """E[ln(1 + rho X)], X ~ Gamma(M, 1), by adaptive quadrature (relative 1e-13 asked)."""
    def integrand(x):
        return math.log1p(rho * x) * math.exp((m - 1) * math.log(x) - x - math.lgamma(m))
    return integrate.quad(integrand, 0, math.inf, limit=400, epsabs=0, epsrel=1e-13)[0]


def priced_gains(overrides, monkeypatch):
    """(system, g_ul, g_dl, active) of the first decision of a short greedy run."""
    seen = []
    real = draft.make_objective
    monkeypatch.setattr(draft, "make_objective", lambda system, g_ul, g_dl, active, *a, **kw:
                        seen.append((system, g_ul, g_dl, active))
                        or real(system, g_ul, g_dl, active, *a, **kw))
    simulate(load_scenario(None, overrides={
        "devices.count": 3, "run.rounds": 2, "policy.draft": "greedy", "policy.saa_samples": 50,
        "policy.plan_gains": "ergodic", **overrides}))
    return seen[0]


def test_an_iid_array_prices_at_the_mean_rate_of_its_gamma_array_gain(monkeypatch):
    """M = 4 i.i.d. elements with MRT / MRC: the array gain is G X, X ~ Gamma(4, 1), and the
    gains the objective gets have Shannon rates equal to the mean rates over X (quadrature:
    1e-9), on the band and DL budget shared by the 3 devices."""
    system, g_ul, g_dl, active = priced_gains({"server.antennas": 4}, monkeypatch)
    n = int(np.count_nonzero(active))
    b = system.bandwidth_hz / n
    for g, p in ((g_ul, system.p_ul_w), (g_dl, system.p_dl_w / n)):
        p = np.broadcast_to(p, system.pathloss.shape)
        rho = p * system.pathloss / (system.n0 * b)
        want = [b * gamma_mean_log1p(r, 4) / math.log(2) for r in rho]
        np.testing.assert_allclose(shannon_rate(b, p, g, system.n0), want, rtol=1e-9)


def test_a_correlated_array_prices_at_the_eigenvalues_of_its_correlation(monkeypatch):
    system, g_ul, _, active = priced_gains({"server.antennas": 4,
                                            "server.antenna_correlation": 0.7}, monkeypatch)
    b = system.bandwidth_hz / int(np.count_nonzero(active))
    rho = system.p_ul_w * system.pathloss / (system.n0 * b)
    lam = np.linalg.eigvalsh(exponential_correlation(4, 0.7))
    np.testing.assert_allclose(shannon_rate(b, system.p_ul_w, g_ul, system.n0),
                               b * mean_log1p(rho, lam) / math.log(2), rtol=1e-12)


@pytest.mark.parametrize("overrides", [
    {"server.antennas": 4, "server.dl_scheme": "mu-mimo-zf"},
    {"server.antennas": 4, "server.ul_scheme": "mu-mimo-mmse"},
    {"server.dl_scheme": "mu-mimo-zf"},
])
def test_a_shared_band_refuses_ergodic_pricing_and_auto_keeps_the_csi(overrides):
    with pytest.raises(ScenarioError, match=r"^policy\.plan_gains: 'ergodic' is not supported "
                                            r"with server\.dl_scheme / ul_scheme = .*; expected "
                                            r"'auto' or 'instantaneous'"):
        load_scenario(None, overrides={**overrides, "policy.plan_gains": "ergodic"})
    sc = load_scenario(None, overrides={**overrides, "policy.draft": "greedy"})
    assert draft.planned_gains(sc) == "instantaneous"
