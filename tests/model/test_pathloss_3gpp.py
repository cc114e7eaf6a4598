"""TR 38.901 UMa and UMi street canyon against the standard's formulas, written out here
independently (Table 7.4.1-1 path loss, Table 7.4.2-1 LOS probability), at a dozen distances;
the draws' LOS fraction and shadowing spread against their distributions."""
import math

import numpy as np
import pytest
from scipy import stats

from multispin_sim.model.pathloss_3gpp import PATHLOSS_MODELS, PowerLaw

C = 299_792_458.0
DISTANCES = [10, 18, 25, 40, 70, 100, 150, 209, 212, 350, 559, 562, 900, 1500, 3000, 5000]


def los_reference(d2d, fc, hbs, hut, a, b, c):
    """(d_3D, PL LOS) of the table's two slopes, with the breakpoint distance d'_BP of the
    effective heights h - 1 m: PL1 = a + b log10 d_3D + 20 log10 fc up to d'_BP, beyond it
    PL2 = a + 40 log10 d_3D + 20 log10 fc - c log10(d'_BP^2 + (h_BS - h_UT)^2)."""
    d3d = math.sqrt(d2d ** 2 + (hbs - hut) ** 2)
    dbp = 4 * (hbs - 1) * (hut - 1) * fc * 1e9 / C
    if d2d <= dbp:
        return d3d, a + b * math.log10(d3d) + 20 * math.log10(fc)
    return d3d, (a + 40 * math.log10(d3d) + 20 * math.log10(fc)
                 - c * math.log10(dbp ** 2 + (hbs - hut) ** 2))


def uma_reference(d2d, fc, hbs=25.0, hut=1.5):
    """(PL LOS, PL NLOS, P_LOS) of UMa from the table (hE = 1 m)."""
    d3d, los = los_reference(d2d, fc, hbs, hut, 28.0, 22, 9)
    nlos = max(los, 13.54 + 39.08 * math.log10(d3d) + 20 * math.log10(fc) - 0.6 * (hut - 1.5))
    if d2d <= 18:
        p = 1.0
    else:
        cprime = 0.0 if hut <= 13 else ((hut - 13) / 10) ** 1.5
        p = ((18 / d2d + math.exp(-d2d / 63) * (1 - 18 / d2d))
             * (1 + cprime * 5 / 4 * (d2d / 100) ** 3 * math.exp(-d2d / 150)))
    return los, nlos, p


def umi_reference(d2d, fc, hbs=10.0, hut=1.5):
    """(PL LOS, PL NLOS, P_LOS) of UMi street canyon from the table."""
    d3d, los = los_reference(d2d, fc, hbs, hut, 32.4, 21, 9.5)
    nlos = max(los, 35.3 * math.log10(d3d) + 22.4 + 21.3 * math.log10(fc) - 0.3 * (hut - 1.5))
    p = 1.0 if d2d <= 18 else 18 / d2d + math.exp(-d2d / 36) * (1 - 18 / d2d)
    return los, nlos, p


CASES = [("uma", uma_reference, 3.5, 1.5), ("uma", uma_reference, 28.0, 1.5),
         ("uma", uma_reference, 2.0, 20.0), ("umi", umi_reference, 3.5, 1.5),
         ("umi", umi_reference, 28.0, 1.5), ("umi", umi_reference, 6.0, 5.0)]


@pytest.mark.parametrize("name,reference,fc,hut", CASES)
def test_path_loss_and_los_probability_equal_the_tables(name, reference, fc, hut):
    model = PATHLOSS_MODELS.lookup(name)(fc_ghz=fc, h_ut_m=hut)
    d = np.array(DISTANCES, dtype=float)
    ref = np.array([reference(x, fc, hut=hut) for x in DISTANCES])
    np.testing.assert_allclose(-model.gain_db(d, True), ref[:, 0], rtol=1e-12)
    np.testing.assert_allclose(-model.gain_db(d, False), ref[:, 1], rtol=1e-12)
    np.testing.assert_allclose(model.los_probability(d), ref[:, 2], rtol=1e-12)


def test_the_breakpoint_switches_the_slope_and_nlos_is_never_better_than_los():
    uma = PATHLOSS_MODELS.lookup("uma")(fc_ghz=3.5)
    assert uma.d_bp == pytest.approx(4 * 24 * 0.5 * 3.5e9 / C)
    d = np.geomspace(10, 5000, 400)
    assert np.all(uma.gain_db(d, False) <= uma.gain_db(d, True))
    # the LOS loss is continuous at the breakpoint (the table's PL2 is built to be)
    eps = 1e-6
    assert uma.gain_db(uma.d_bp - eps, True) == pytest.approx(uma.gain_db(uma.d_bp + eps, True),
                                                              abs=1e-3)
    # below the 10 m minimum the loss is the one at 10 m
    assert uma.gain_db(3.0, True) == uma.gain_db(10.0, True)


@pytest.mark.parametrize("name", ["uma", "umi"])
def test_drawn_los_states_and_shadowing_follow_their_distributions(name):
    model = PATHLOSS_MODELS.lookup(name)(fc_ghz=3.5)
    rng = np.random.default_rng(7)
    d = np.full(40000, 120.0)
    gain, los = model.draw(rng, d)
    p = float(model.los_probability(120.0))
    n = d.size
    assert abs(los.mean() - p) < 4.5 * math.sqrt(p * (1 - p) / n)
    dev = 10 * np.log10(gain) - model.gain_db(d, los)
    for state, sigma in ((True, model.sigma_los_db), (False, model.sigma_nlos_db)):
        x = dev[los == state]
        m = x.size
        lo, hi = (stats.chi2.ppf([1e-4, 1 - 1e-4], m - 1) / (m - 1)) ** 0.5 * sigma
        assert lo < x.std(ddof=1) < hi
        assert abs(x.mean()) < 4.5 * sigma / math.sqrt(m)


def test_the_power_law_is_todays_path_loss():
    from multispin_sim.model.pathloss import pathloss_gain

    d = np.array([1.0, 3.0, 50.0, 400.0])
    np.testing.assert_allclose(PowerLaw(-30.0, 3.5).mean_gain(d, True), pathloss_gain(d, -30.0, 3.5),
                               rtol=1e-12)
