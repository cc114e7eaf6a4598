"""Several cells in one run: one cell through the cells machinery is today's run; cells far
apart are independent single-cell runs; a correction's bits are conserved across the
interference changes that cut it into intervals; association places region drops."""

import json

import numpy as np
import pytest

import multispin_sim as ms
from multispin_sim.engine.cell_plan import cell_seed
from multispin_sim.model.cells import HexGrid
from multispin_sim.model.reactive import UL


def run(**overrides):
    return ms.simulate(ms.load_scenario(None, overrides=overrides))


def assert_tables_equal(a, b, rtol=1e-12):
    for name in ("rounds", "device_rounds", "devices"):
        ta, tb = a.table(name), b.table(name)
        for col, va in ta.items():
            if col == "cell" or col not in tb:
                continue
            vb = tb[col]
            if va.dtype.kind in "fi":
                np.testing.assert_allclose(vb, va, rtol=rtol, atol=1e-300, err_msg=f"{name}.{col}")
            else:
                assert va.tolist() == vb.tolist(), f"{name}.{col}"


def assert_first_batches_equal(a, b, n, rtol=1e-12):
    """The records of rounds (batches) 0..n-1 of two runs agree (numbers within ``rtol``)."""
    for name in ("rounds", "device_rounds"):
        ta, tb = a.table(name), b.table(name)
        ma, mb = np.asarray(ta["round"]) < n, np.asarray(tb["round"]) < n
        assert ma.sum() == mb.sum() > 0, name
        for col, va in ta.items():
            if col == "cell" or col not in tb:
                continue
            va, vb = np.asarray(va)[ma], np.asarray(tb[col])[mb]
            if va.dtype.kind in "fi":
                np.testing.assert_allclose(vb, va, rtol=rtol, atol=1e-300, err_msg=f"{name}.{col}")
            else:
                assert va.tolist() == vb.tolist(), f"{name}.{col}"


def test_one_hex_cell_is_todays_run():
    base = {"run.rounds": 150}
    assert_tables_equal(run(**base), run(**base, **{"cells.layout": "hex", "cells.count": 1}))
    # asynchronous: the single-cell run's batches (the horizon may find one more in flight)
    base["serving.protocol"] = "asynchronous"
    cell = run(**base, **{"cells.layout": "hex", "cells.count": 1})
    assert cell.summary["rounds"] >= 150
    assert_first_batches_equal(run(**base), cell, 150)


@pytest.mark.parametrize("protocol", ["synchronous", "asynchronous"])
def test_cells_1000_km_apart_are_independent_single_cell_runs(protocol):
    # at 1,000 km the other cells' interference is ~1e-11 of the noise (G0 d^-3.5 at 10 mW
    # against N0 b), so each cell equals its own run to ~1e-11; rtol 1e-9. Every cell serves
    # until each has done its 60 rounds: a cell's run alone of as many rounds is the same
    # (asynchronous: its batches but the last two, which the horizon may find in flight)
    isd = 1e6
    proto = {"serving.protocol": protocol}
    multi = run(**{"run.rounds": 60, "cells.layout": "hex", "cells.count": 7, "cells.isd_m": isd,
                   **proto})
    sites = HexGrid(7, isd).sites
    for c in (0, 3, 6):
        rounds = multi.cells[c].summary["rounds"]
        assert rounds >= 60
        alone = run(**{"run.rounds": rounds, "seed": cell_seed(1, c), **proto,
                       "topology.server_xy_m": [float(sites[c][0]), float(sites[c][1])]})
        if protocol == "asynchronous":
            assert_first_batches_equal(alone, multi.cells[c], rounds - 2, rtol=1e-9)
            continue
        assert_tables_equal(alone, multi.cells[c], rtol=1e-9)
        assert multi.summary["cells"][c]["goodput_tps"] == pytest.approx(
            alone.summary["goodput_tps"], rel=1e-9)


DENSE = {"run.rounds": 40, "cells.layout": "hex", "cells.count": 7, "cells.isd_m": 150.0,
         "devices.count": 8}


def assert_intervals_deliver(tx, n0):
    """``tx``'s intervals in the field's log are contiguous from its start, deliver its bits
    (the integral of the rate) and each has the Shannon rate at its SINR with its own gain."""
    t0, t1, rate, interference, gain = np.array(tx.intervals).T
    assert t0[0] == tx.start
    np.testing.assert_array_equal(t0[1:], t1[:-1])
    # to the rounding of the clock: each time stamp is exact to an ulp of the run's time, so
    # each interval's bits to rate x 2 ulp(t); plus the 1e-12 the delivery may stop short
    rounding = np.sum(rate) * 4 * np.spacing(t1.max()) + 1e-12 * tx.bits
    assert abs(np.sum(rate * (t1 - t0)) - tx.bits) <= rounding
    b = tx.f1 - tx.f0
    shannon = b * np.log2(1 + tx.power * gain / (n0 * b + interference))
    np.testing.assert_allclose(rate, shannon, rtol=1e-12)


@pytest.fixture(scope="module", params=[1, 4], ids=["one-antenna", "four-antennas"])
def dense(request):
    """Seven close cells; with four server antennas the streams are MRC / MRT (array gains)."""
    return run(**DENSE, **{"server.antennas": request.param})


def test_bits_are_conserved_across_interference_changes(dense):
    field = dense.field
    n0 = field.n0
    log = field.log
    assert len(log) > 100
    edges = {}
    for tx in log:
        edges.setdefault((tx.mode, tx.cell), []).append((tx.start, tx.intervals[-1][1]))
    cut = 0
    for tx in log:
        iv = np.array(tx.intervals)
        t0, t1, rate, interference, gain = iv.T
        assert np.all(gain == tx.gain)   # one fading block per round
        assert_intervals_deliver(tx, n0)
        # a cut inside a transmission is a start or an end of a co-channel transmission of
        # another cell
        if len(iv) > 1:
            cut += 1
            others = [t for (mode, cell), spans in edges.items()
                      if mode == tx.mode and cell != tx.cell and field.co[cell, tx.cell]
                      for span in spans for t in span]
            for t in t1[:-1]:
                assert min(abs(t - o) for o in others) == 0.0
    assert cut > 10   # the interference did change mid-transmission


def test_antenna_array_gains_in_several_cells_are_gamma_m():
    """With M uncorrelated Rayleigh antennas a stream's array gain over the device's path loss
    is Gamma(M, 1) (||h||^2 of M unit-power elements); the field carries it as the signal gain
    of every correction, in every cell (KS test on all the run's corrections)."""
    from scipy import stats

    m = 4
    r = run(**DENSE, **{"server.antennas": m})
    pathloss = [cell.population.system.pathloss for cell in r.cells]
    x = np.array([tx.gain / pathloss[tx.cell][tx.device] for tx in r.field.log])
    assert x.size > 500
    assert stats.kstest(x, stats.gamma(m).cdf).pvalue > 1e-3
    # each cell records its streams' effective gains, MRC / MRT: the array gain, at least the
    # gain the decision saw (the SINR-scaled CSI g N0 / (N0 + psi)), equal to it in the first
    # round (nothing in flight yet)
    table = r.cells[0].table("device_rounds")
    sent = table["rejected"].astype(bool)
    seen = np.where(table["mode"] == "ul", table["gain_ul"], table["gain_dl"])[sent]
    eff = table["gain_eff"][sent]
    assert np.all(eff >= seen * (1 - 1e-12)) and np.any(eff > seen * 1.01)
    first = table["round"][sent] == table["round"].min()
    np.testing.assert_allclose(eff[first], seen[first], rtol=1e-12)


def test_antenna_streams_in_several_cells_record_their_airtime_energy_and_snr():
    """A cell's array records each stream as it went: on air for its realised delay, the energy
    radiated p x airtime, the device's UL or DL energy from that airtime, and the
    interference-free SNR p g / (N0 b) at the power it was sent at (they were all 0 while the
    interference channel told its array only the mode and band)."""
    r = run(**DENSE, **{"server.antennas": 2})
    n0 = r.cells[0].population.system.n0
    table = r.cells[0].table("device_rounds")
    sent = table["mode"] != ""
    ul, dl = table["mode"] == "ul", table["mode"] == "dl"
    assert ul.sum() > 20 and dl.sum() > 20
    airtime, power = table["airtime_s"], table["power_w"]
    assert (airtime[sent] == table["delay_s"][sent]).all() and (airtime[sent] > 0).all()
    assert (airtime[~sent] == 0).all()
    np.testing.assert_allclose(table["tx_energy_j"], power * airtime, rtol=1e-12)
    assert (table["energy_ul_j"][ul] > 0).all() and (table["energy_dl_j"][dl] > 0).all()
    np.testing.assert_allclose(
        table["snr_eff"][sent],
        power[sent] * table["gain_eff"][sent] / (n0 * table["bandwidth_hz"][sent]), rtol=1e-12)


def test_server_antennas_raise_goodput_under_interference():
    """Array gain: corrections get faster at the same interference (per-cell drops fixed)."""
    g = [run(**{**DENSE, "run.rounds": 60, "server.antennas": m}).summary["goodput_tps"]
         for m in (1, 8)]
    assert g[1] > g[0]


def test_reuse_3_only_same_colour_cells_interfere():
    r = run(**{"run.rounds": 30, "cells.layout": "hex", "cells.count": 7, "cells.isd_m": 150.0,
               "devices.count": 6, "cells.reuse": 3, "cells.wrap_around": False})
    co = r.field.co
    # colours (q - r) mod 3: the centre 0, its ring alternating 1, 2 (no neighbours co-channel)
    assert co[1, 3] and co[2, 4] and not co[0].any() and not co[1, 2] and not co[0, 0]
    # each cell uses a third of the band
    assert max(tx.f1 for tx in r.field.log) <= 10e6 / 3 * (1 + 1e-12)


def test_interference_lowers_goodput_as_cells_come_closer():
    g = [run(**{"run.rounds": 60, "cells.layout": "hex", "cells.count": 7, "cells.isd_m": isd,
                "devices.count": 8, "devices.distance_m": [20.0, 60.0]}).summary["goodput_tps"]
         for isd in (100.0, 1e5)]
    assert g[0] < g[1]


def test_region_drops_follow_the_association_rule():
    r = run(**{"run.rounds": 5, "cells.layout": "hex", "cells.count": 7, "cells.isd_m": 300.0,
               "cells.drop": "region", "devices.count": 40, "cells.association": "nearest"})
    counts = [c["devices"] for c in r.summary["cells"]]
    assert sum(counts) == 40
    grid = HexGrid(7, 300.0)
    for block, cell in zip(r.summary["cells"], r.cells):
        xy = cell.population.positions
        assert np.all(grid.distances(xy).argmin(axis=1) == block["cell"])
    assert "cell" in r.rounds and set(r.rounds["cell"]) == {b["cell"] for b in r.summary["cells"]}


GRAPHML = """<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="x" for="node" attr.name="x" attr.type="double"/>
  <key id="y" for="node" attr.name="y" attr.type="double"/>
  <key id="r" for="node" attr.name="role" attr.type="string"/>
  <graph edgedefault="undirected">
    <node id="a"><data key="x">0</data><data key="y">0</data><data key="r">server</data></node>
    <node id="b"><data key="x">400</data><data key="y">0</data><data key="r">server</data></node>
    <node id="u"><data key="x">10</data><data key="y">5</data></node>
  </graph>
</graphml>
"""


def test_the_graphml_layout_takes_the_server_nodes(tmp_path):
    path = tmp_path / "servers.graphml"
    path.write_text(GRAPHML)
    r = run(**{"run.rounds": 10, "cells.layout": "graphml", "topology.graphml_file": str(path),
               "devices.count": 3})
    assert [c["cell"] for c in r.summary["cells"]] == [0, 1]
    np.testing.assert_array_equal(r.cells[1].population.server_position, [400.0, 0.0])


def test_region_drops_associate_on_the_drawn_gains_with_shadowing():
    # 3GPP UMi draws LOS states and shadowing: max-rsrp then differs from nearest for some
    kw = {"run.rounds": 3, "cells.layout": "hex", "cells.count": 7, "cells.isd_m": 200.0,
          "cells.drop": "region", "devices.count": 60, "cells.pathloss": "umi"}
    by = {rule: [c["devices"] for c in run(**kw, **{"cells.association": rule}).summary["cells"]]
          for rule in ("max-rsrp", "nearest")}
    assert sum(by["max-rsrp"]) == sum(by["nearest"]) == 60
    assert by["max-rsrp"] != by["nearest"]


def test_the_measured_interference_is_each_direction_at_its_receivers():
    from types import SimpleNamespace

    from multispin_sim.engine.interference import InterferenceField, Tx
    from multispin_sim.model.reactive import DL
    from multispin_sim.model.sinr import cochannel

    gain = np.array([[1e-9, 2e-11], [3e-12, 4e-10]])      # 2 devices x 2 servers
    links = SimpleNamespace(gain=gain)
    field = InterferenceField(links, cochannel(2, 1), 4e-21, np.array([1e6, 1e6]),
                              np.random.default_rng(0))
    for mode, power in ((UL, 0.01), (DL, 0.04)):
        tx = Tx()
        tx.cell, tx.glob, tx.mode, tx.power = 1, 1, mode, power
        field.active[mode].append(tx)
    # at cell 0's server: device 1's UL power times its gain to server 0, per Hz of the band
    np.testing.assert_allclose(field.ul_psd(0), 0.01 * 3e-12 / 1e6)
    # at cell 0's device 0: server 1's DL power times its gain to device 0
    np.testing.assert_allclose(field.dl_psd(0, np.array([0])), 0.04 * 2e-11 / 1e6)
    # a cell does not interfere with itself
    assert field.dl_psd(1, np.array([1]))[0] == 0.0


def test_the_narrator_names_the_cell():
    from multispin_sim.teaching.narrator import explain

    r = run(**{"run.rounds": 2, "cells.layout": "hex", "cells.count": 7, "devices.count": 2})
    text = explain(r, 1)
    assert all(f"Cell {c} (server at" in text for c in range(7))


def test_the_run_report_has_a_row_per_cell(tmp_path):
    from multispin_sim.report.html import write_report

    r = ms.simulate(ms.load_scenario(None, overrides={
        "run.rounds": 5, "cells.layout": "hex", "cells.count": 7, "devices.count": 2}),
        out=tmp_path / "run")
    page = write_report(r.folder).read_text(encoding="utf-8")
    section = page[page.index("<h2>Cells</h2>"):]
    assert section[:section.index("</table>")].count("<tr>") == 1 + 7


def test_servers_can_differ():
    slow = {"run.rounds": 20, "cells.layout": "hex", "cells.count": 7, "cells.isd_m": 1e6,
            "devices.count": 4}
    r = run(**slow, **{"cells.servers": {3: {"verify_fixed_ms": 500.0}}})
    base = run(**slow)
    by = {c["cell"]: c["mean_duration_s"] for c in r.summary["cells"]}
    ref = {c["cell"]: c["mean_duration_s"] for c in base.summary["cells"]}
    assert by[3] > ref[3] + 0.4
    # cell 0 serves until the slow cell 3 has done its 20 rounds (more rounds than without
    # it); its rounds are the same rounds
    n = base.cells[0].summary["rounds"]
    assert r.cells[0].summary["rounds"] > n >= 20
    np.testing.assert_allclose(r.cells[0].rounds["duration_s"][:n],
                               base.cells[0].rounds["duration_s"], rtol=1e-9)
    assert r.cells[3].scenario.server.verify_fixed_ms == 500.0


def test_load_aware_sees_each_servers_cost():
    from multispin_sim.engine.cell_plan import association_view
    from multispin_sim.model.cells import HexGrid

    sc = ms.load_scenario(None, overrides={"cells.layout": "hex",
                                           "cells.servers": {1: {"verify_per_device_ms": 1.0,
                                                                 "dl_power_dbm": 30.0}}})
    grid = HexGrid(7, 500.0)
    view = association_view(sc, grid, np.ones((2, 7)), np.zeros((2, 2)))
    assert view.verify_per_device_s[1] == 1e-3 and view.verify_per_device_s[0] != 1e-3
    assert view.rsrp_w[0, 1] == pytest.approx(1.0) and view.rsrp_w[0, 0] < 0.1


def test_the_mean_interference_is_the_time_average_of_the_transmissions():
    r = run(**{"run.rounds": 20, "cells.layout": "hex", "cells.count": 7, "cells.isd_m": 150.0,
               "devices.count": 4, "cells.interference_csi": "mean"})
    field = r.field
    end = max(tx.intervals[-1][1] for tx in field.log)
    gain, co, band = field.links.gain, field.co, field.bandwidth
    for cell in (0, 4):
        ul = sum(tx.power * gain[tx.glob, cell] * co[tx.cell, cell] / band[cell]
                 * (tx.intervals[-1][1] - tx.start) for tx in field.log if tx.mode == UL) / end
        assert field.mean_psd(cell, UL, np.array([0]), end)[0] == pytest.approx(ul, rel=1e-9)
        dev = int(np.flatnonzero(field.links.cell_of == cell)[0])
        dl = sum(tx.power * gain[dev, tx.cell] * co[tx.cell, cell] / band[cell]
                 * (tx.intervals[-1][1] - tx.start) for tx in field.log if tx.mode != UL) / end
        assert field.mean_psd(cell, 2, np.array([dev]), end)[0] == pytest.approx(dl, rel=1e-9)


def test_blind_csi_sees_no_interference_and_delivers_the_same_bits():
    kw = {"run.rounds": 20, "cells.layout": "hex", "cells.count": 7, "cells.isd_m": 150.0,
          "devices.count": 4}
    blind = run(**kw, **{"cells.interference_csi": "none"})
    aware = run(**kw)
    # blind: the recorded CSI is the one-cell gain (no interference term) of the same draws
    g_blind = blind.cells[0].device_rounds["gain_ul"][:4]
    g_aware = aware.cells[0].device_rounds["gain_ul"][:4]
    assert np.all(g_aware <= g_blind)
    for tx in blind.field.log:
        iv = np.array(tx.intervals)
        assert np.sum(iv[:, 2] * (iv[:, 1] - iv[:, 0])) == pytest.approx(tx.bits, rel=1e-9)


def test_the_command_line_runs_several_cells(tmp_path, capsys):
    from multispin_sim.cli import main

    assert main(["run", "scenarios/cells/hex7.yaml", "--rounds", "5", "--set", "devices.count=2",
                 "--out", str(tmp_path / "run"), "--quiet"]) == 0
    assert main(["run", "scenarios/cells/hex7.yaml", "--rounds", "5", "--set", "devices.count=2",
                 "--out", str(tmp_path / "run2")]) == 0
    out = capsys.readouterr().out
    rounds = json.loads((tmp_path / "run2" / "summary.json").read_text())["rounds"]
    assert rounds >= 35 and f"{rounds} rounds" in out and "goodput" in out


def test_layouts_refuse_what_they_cannot_place():
    for count in (2, 3, 8, 18, 62):   # a hexagonal cluster has 3n^2 + 3n + 1 sites
        with pytest.raises(ms.ScenarioError, match="cells.count: .*hexagonal"):
            ms.load_scenario(None, overrides={"cells.layout": "hex", "cells.count": count})
    for count in (1, 7, 19, 37, 61):
        ms.load_scenario(None, overrides={"cells.layout": "hex", "cells.count": count})
    with pytest.raises(ms.ScenarioError, match="topology.graphml_file"):
        ms.load_scenario(None, overrides={"cells.layout": "graphml"})
    with pytest.raises(ms.ScenarioError, match="cells.density_per_km2"):
        run(**{"run.rounds": 2, "cells.layout": "ppp", "cells.density_per_km2": 0.001,
               "cells.region_m": 10.0})


def test_the_run_folder_holds_the_scenario_that_was_run(tmp_path):
    """The run's scenario.yaml is the multi-cell scenario (each cell_<c>/ holds its one-cell
    part), so running it again gives the same records; run.json records the versions. Three
    devices dropped over seven cells leave cell 0 empty: the run still writes both files."""
    sc = ms.load_scenario(None, overrides={"devices.count": 3, "run.rounds": 5,
                                           "cells.layout": "hex", "cells.drop": "region"})
    first = ms.simulate(sc, out=tmp_path / "a")
    assert not (tmp_path / "a" / "cell_0").exists()
    again = ms.load_scenario(tmp_path / "a" / "scenario.yaml")
    assert again.cells.layout == "hex" and again.cells.drop == "region"
    ms.simulate(again, out=tmp_path / "b")
    for name in ("rounds.csv", "device_rounds.csv", "devices.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    meta = json.loads((first.folder / "run.json").read_text())
    assert meta["complete"] is True and "numpy" in meta["packages"]


def test_the_network_summary_sums_the_cells(tmp_path):
    """The network's tokens, corrections and energy are the cells' sums, tokens per joule the
    ratio of those sums, and device_goodput_tps lists every device cell by cell."""
    res = ms.simulate(ms.load_scenario(None, overrides={
        "cells.layout": "hex", "cells.count": 7, "devices.count": 2, "run.rounds": 20}),
        out=tmp_path / "net")
    net = json.loads((tmp_path / "net" / "summary.json").read_text())
    cells = [json.loads((tmp_path / "net" / f"cell_{c}" / "summary.json").read_text())
             for c in range(7)]
    assert net["tokens"] == sum(c["tokens"] for c in cells)
    assert net["rejections"] == net["ul_corrections"] + net["dl_corrections"]
    for key in ("device_j", "draft_j", "ul_j", "dl_j", "idle_j", "verify_j", "total_j"):
        assert net["energy"][key] == pytest.approx(sum(c["energy"][key] for c in cells),
                                                   rel=1e-12)
    assert net["energy"]["total_j"] == pytest.approx(
        net["energy"]["device_j"] + net["energy"]["server_j"], rel=1e-12)
    assert net["energy"]["tokens_per_j_total"] == pytest.approx(
        net["tokens"] / net["energy"]["total_j"], rel=1e-12)
    assert net["device_goodput_tps"] == [g for c in cells for g in c["device_goodput_tps"]]
    assert len(net["device_goodput_tps"]) == len(res.devices["device"]) == 14


def test_a_network_without_energy_records_has_no_energy_block():
    res = ms.simulate(ms.load_scenario(None, overrides={
        "cells.layout": "hex", "cells.count": 7, "devices.count": 2, "run.rounds": 5,
        "energy.record": False}))
    assert "energy" not in res.summary and res.summary["tokens"] > 0


def test_a_cell_without_rounds_adds_nothing_to_the_networks_interval():
    """Devices that all leave a cell leave it without rounds: its goodput is 0 exactly, so the
    network's interval is the root sum of squares of the other cells' half-widths."""
    res = run(**{"devices.count": 4, "run.rounds": 60, "seed": 7, "cells.layout": "hex",
                 "cells.count": 7, "cells.drop": "region", "cells.reassociate": True})
    s, cells = res.summary, [c.summary for c in res.cells]
    assert any(c["rounds"] == 0 for c in cells) and any(c["rounds"] > 1 for c in cells)
    half = np.sqrt(sum(((c["goodput_ci95"][1] - c["goodput_ci95"][0]) / 2) ** 2
                       for c in cells if c["rounds"]))
    assert np.isfinite(half) and half > 0
    np.testing.assert_allclose(s["goodput_ci95"], [s["goodput_tps"] - half,
                                                   s["goodput_tps"] + half], rtol=1e-12)


def test_each_cells_requests_end_with_that_cells_run():
    """Cells share one clock that runs until the last cell ends: each cell's request figures
    are over its own run (its throughput is completed requests over its own time) and no
    request arrives after it ended."""
    res = run(**{"devices.count": 4, "seed": 7, "cells.layout": "hex", "cells.count": 7,
                 "workload.arrivals": "poisson", "workload.rate_per_s": 0.2,
                 "run.max_time_s": 300.0, "run.rounds": 10**6})
    ends = [c.summary["sim_time_s"] for c in res.cells]
    assert max(ends) > min(ends)       # the cells end at different times
    for c, end in zip(res.cells, ends):
        q = c.summary["requests"]
        np.testing.assert_allclose(q["throughput_rps"], q["completed"] / end, rtol=1e-12)
        assert np.nanmax(c.requests["arrival_s"]) <= end
        assert q["arrivals"] == c.requests["arrival_s"].size


def test_the_field_counts_every_transmission_and_keeps_the_first_ones(monkeypatch):
    """The interference field's log is bounded (a long run of several cells would otherwise
    keep every transmission's intervals); the summary counts all of them."""
    from multispin_sim.scenario import limits

    overrides = {"cells.layout": "hex", "cells.count": 7, "devices.count": 4, "run.rounds": 30}
    whole = run(**overrides)
    n = whole.summary["interference"]["transmissions"]
    assert n == len(whole.field.log) == whole.field.transmissions > 20
    monkeypatch.setattr(limits, "LOGGED_TRANSMISSIONS", 20)
    cut = run(**overrides)
    assert cut.summary["interference"]["transmissions"] == n and len(cut.field.log) == 20
    assert [tx.start for tx in cut.field.log] == [tx.start for tx in whole.field.log[:20]]
    assert_tables_equal(whole, cut, rtol=0)


def test_the_memory_estimate_counts_every_cell():
    """Each cell is a whole single-cell system: the estimate of devices and rounds grows with
    the cells, and a run too large for limits.max_memory_mb is refused naming them."""
    from multispin_sim.scenario import ScenarioError, load_scenario
    from multispin_sim.scenario.limits import memory_terms

    one = memory_terms(load_scenario(None, overrides={"run.rounds": 10**6}))
    seven = memory_terms(load_scenario(None, overrides={"run.rounds": 10**6, "cells.layout": "hex",
                                                        "cells.count": 7}))
    assert seven["run.rounds"] == 7 * one["run.rounds"]
    assert seven["devices.count"] == 7 * one["devices.count"] and "cells.count" in seven
    with pytest.raises(ScenarioError, match=r"^run.rounds: .* in each of 7 cells need"):
        load_scenario(None, overrides={"run.rounds": 10**8, "cells.layout": "hex",
                                       "cells.count": 7, "limits.max_memory_mb": 20000})


def test_the_network_adds_up_its_cells_requests():
    """With a queueing workload the network summary has the request figures that add up across
    cells (counts, rates, SLO met and counted), so a capacity search or a sweep of several cells
    sees requests; the capacity search counts them."""
    from multispin_sim.experiments.capacity import CapacitySearch

    overrides = {"devices.count": 4, "seed": 7, "cells.layout": "hex", "cells.count": 7,
                 "workload.arrivals": "poisson", "workload.rate_per_s": 0.1,
                 "run.max_time_s": 60.0, "run.rounds": 10**6, "serving.slo_ttft_s": 2.0}
    res = run(**overrides)
    net, cells = res.summary["requests"], [c.summary["requests"] for c in res.cells]
    for key in ("arrivals", "completed", "in_system_at_end"):
        assert net[key] == sum(c[key] for c in cells)
    assert net["throughput_rps"] == pytest.approx(sum(c["throughput_rps"] for c in cells),
                                                  rel=1e-12)
    assert net["slo"]["counted"] == sum(c["slo"]["counted"] for c in cells) > 0
    assert net["slo"]["attainment"] == net["slo"]["met"] / net["slo"]["counted"]
    search = CapacitySearch(None, 2.0, None, 0.9, duration_s=60.0, min_requests=1,
                            overrides=[f"{k}={v}" for k, v in overrides.items()
                                       if k.split(".")[0] in ("devices", "cells", "workload")])
    search._replicate(0.1)
    assert search.points[0.1]["reps"][0]["counted"] > 0
