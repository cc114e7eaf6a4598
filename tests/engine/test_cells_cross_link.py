"""Cross-link interference (``cells.cross_link``): another cell's DL at this server's UL
receptions, another cell's UL at this cell's DL receivers. The interference of every logged
interval is rebuilt from the log alone (the fading of each interfering pair set to 1), the
cross links' gains follow the path-loss model at the wrapped distances, and the key is
refused where its gains would go stale."""

from types import SimpleNamespace

import numpy as np
import pytest

import multispin_sim as ms
from multispin_sim.engine.cells import Links
from multispin_sim.engine.interference import InterferenceField, Tx
from multispin_sim.model.cells import HexGrid, link_distances
from multispin_sim.model.pathloss_3gpp import PowerLaw, UMa
from multispin_sim.model.reactive import DL, UL
from multispin_sim.model.sinr import cochannel

from cells_checks import assert_interference_is_what_was_in_flight, unit_fading_run

DENSE = {"run.rounds": 30, "cells.layout": "hex", "cells.count": 7, "cells.isd_m": 150.0,
         "devices.count": 6}


def run(**overrides):
    return ms.simulate(ms.load_scenario(None, overrides=overrides))


@pytest.fixture(scope="module", params=[False, True], ids=["same-direction", "cross-link"])
def unit_run(request):
    return request.param, unit_fading_run({**DENSE, "cells.cross_link": request.param})


def test_every_intervals_interference_is_the_sum_over_what_was_in_flight(unit_run):
    cross, result = unit_run
    checked, _, crossed = assert_interference_is_what_was_in_flight(result.field, cross)
    assert checked > 200
    assert (crossed > 0) == cross


def test_cross_links_meet_the_other_directions_power_at_each_receiver():
    gain = np.array([[1e-9, 2e-11], [3e-12, 4e-10]])      # 2 devices x 2 servers
    ss = np.array([[0.0, 5e-8], [5e-8, 0.0]])
    dd = np.array([[0.0, 7e-13], [7e-13, 0.0]])
    field = InterferenceField(SimpleNamespace(gain=gain), cochannel(2, 1), 4e-21,
                              np.array([1e6, 1e6]), np.random.default_rng(0))
    field.cross_link(ss, dd)
    for mode, power in ((UL, 0.01), (DL, 0.04)):
        tx = Tx()
        tx.cell, tx.glob, tx.mode, tx.power = 1, 1, mode, power
        field.active[mode].append(tx)
    # at server 0: device 1's UL over its link, and server 1's DL over the server-server link
    np.testing.assert_allclose(field.ul_psd(0), (0.01 * 3e-12 + 0.04 * 5e-8) / 1e6)
    # at device 0: server 1's DL, and device 1's UL over the device-device link
    np.testing.assert_allclose(field.dl_psd(0, np.array([0])), (0.04 * 2e-11 + 0.01 * 7e-13) / 1e6)
    assert field.dl_psd(1, np.array([1]))[0] == 0.0   # nor across directions in its own cell


@pytest.mark.parametrize("model", [PowerLaw(-30.0, 3.5, 0.0), UMa(3.5, None, 1.5)],
                         ids=["power-law", "uma"])
def test_cross_link_gains_follow_the_model_at_the_wrapped_distances(model):
    layout = HexGrid(7, 200.0)
    links = Links(layout, model, None)
    rng = np.random.default_rng(3)
    links.positions = layout.sites[rng.integers(7, size=30)] + rng.uniform(-60, 60, (30, 2))
    ss, dd = links.cross_gains(np.random.default_rng(5))
    for g, points in ((ss, layout.sites), (dd, links.positions)):
        assert np.array_equal(g, g.T) and np.all(np.diag(g) == 0.0)
        off = ~np.eye(len(points), dtype=bool)
        assert np.all(g[off] > 0)
    d_ss = link_distances(layout.sites, layout.sites, layout.lattice)
    d_dd = link_distances(links.positions, links.positions, layout.lattice)
    ss_model, dd_model = model.cross_models()
    if isinstance(model, PowerLaw):   # no shadowing: the mean gain itself
        off = ~np.eye(7, dtype=bool)
        np.testing.assert_allclose(ss[off], 10 ** (model.gain_db(d_ss[off]) / 10), rtol=1e-12)
    else:   # between the LOS and NLOS means, spread by at most 5 shadowing sigmas
        assert ss_model.h_bs == ss_model.h_ut == 25.0 and dd_model.h_bs == dd_model.h_ut == 1.5
        upper = np.triu_indices(30, 1)
        lo = np.minimum(dd_model.gain_db(d_dd[upper], True), dd_model.gain_db(d_dd[upper], False))
        hi = np.maximum(dd_model.gain_db(d_dd[upper], True), dd_model.gain_db(d_dd[upper], False))
        db = 10 * np.log10(dd[upper])
        assert np.all(db >= lo - 5 * 6.0) and np.all(db <= hi + 5 * 6.0)


def test_cross_link_off_draws_nothing_and_is_the_same_run(monkeypatch):
    calls = []
    monkeypatch.setattr(Links, "cross_gains", lambda self, rng: calls.append(1))
    base = run(**DENSE)
    assert calls == [] and base.field.ss is None
    assert base.summary["interference"]["cross_link"] is False


def test_cross_link_is_refused_where_the_gains_would_go_stale():
    with pytest.raises(ms.ScenarioError, match=r"^cells.cross_link: true is not supported with "
                       "devices that move"):
        ms.load_scenario(None, overrides={**DENSE, "cells.cross_link": True,
                                          "mobility.model": "random-waypoint"})
    with pytest.raises(ms.ScenarioError, match=r"^cells.cross_link: .*cells.reassociate true"):
        ms.load_scenario(None, overrides={**DENSE, "cells.cross_link": True,
                                          "cells.reassociate": True})


def test_the_memory_estimate_counts_every_pair_of_devices():
    from multispin_sim.scenario.limits import PER_CROSS_PAIR_BYTES, memory_terms

    on = memory_terms(ms.load_scenario(None, overrides={**DENSE, "cells.cross_link": True}))
    assert on["cells.cross_link"] == PER_CROSS_PAIR_BYTES * (7 * 6) ** 2
    assert "cells.cross_link" not in memory_terms(ms.load_scenario(None, overrides=DENSE))
    with pytest.raises(ms.ScenarioError, match=r"^cells.cross_link: "):
        ms.load_scenario(None, overrides={"cells.layout": "hex", "cells.count": 37,
                                          "devices.count": 1000, "cells.cross_link": True})



def test_the_mean_interference_counts_both_directions():
    r = run(**{**DENSE, "run.rounds": 20, "cells.cross_link": True,
               "cells.interference_csi": "mean"})
    field = r.field
    end = max(tx.intervals[-1][1] for tx in field.log)
    gain, co, band = field.links.gain, field.co, field.bandwidth

    def average(cell, power_gain):
        return sum(tx.power * power_gain(tx) * co[tx.cell, cell] / band[cell]
                   * (tx.intervals[-1][1] - tx.start) for tx in field.log) / end

    for cell in (0, 4):
        ul = average(cell, lambda tx: gain[tx.glob, cell] if tx.mode == UL
                     else field.ss[tx.cell, cell])
        assert field.mean_psd(cell, UL, np.array([0]), end)[0] == pytest.approx(ul, rel=1e-9)
        dev = int(np.flatnonzero(field.links.cell_of == cell)[0])
        dl = average(cell, lambda tx: gain[dev, tx.cell] if tx.mode == DL
                     else field.dd[tx.glob, dev])
        assert field.mean_psd(cell, DL, np.array([dev]), end)[0] == pytest.approx(dl, rel=1e-9)


@pytest.mark.parametrize("mode", ["all-ul", "all-dl"])
def test_one_direction_everywhere_never_meets_the_other(mode):
    """Every cell sending in one direction only: no correction meets the other direction, so
    the run with cross links is the run without, value for value (their gains are drawn from
    a stream of their own), except the CSI of the unused direction, which sees them."""
    off = run(**DENSE, **{"policy.mode": mode})
    on = run(**DENSE, **{"policy.mode": mode, "cells.cross_link": True})
    unused = "gain_dl" if mode == "all-ul" else "gain_ul"
    for c in range(7):
        for name in ("rounds", "device_rounds"):
            a, b = off.cells[c].table(name), on.cells[c].table(name)
            for col in a:
                if col == unused:   # lower: the other direction's interference is in it
                    assert np.all(b[col] <= a[col]) and np.any(b[col] < a[col])
                else:
                    assert np.array_equal(a[col], b[col]), (c, name, col)
