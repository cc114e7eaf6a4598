"""run.json's ``compiled_search``: whether THIS run's draft controller ran the compiled search,
not whether the process ever imported it (a sweep worker, a second ``simulate`` call)."""
import json

import pytest

import multispin_sim as ms
from multispin_sim.policies.draft_search import compiled_enabled

SMALL = {"devices.count": 3, "run.rounds": 5, "seed": 2}
CELLS = {"cells.layout": "hex", "cells.count": 7, "devices.count": 14, "run.rounds": 5,
         "seed": 2}


def _compiled(overrides, out):
    result = ms.simulate(ms.load_scenario(None, overrides=overrides), out=out)
    return json.loads((result.folder / "run.json").read_text())["compiled_search"]


@pytest.mark.skipif(not compiled_enabled(), reason="no numba here (or MULTISPIN_NUMBA=0)")
def test_a_run_after_a_searching_run_reports_its_own_controller(tmp_path):
    """The greedy searches compiled; the fixed controller never searches, also when it runs
    after the greedy in the same process (it reported true)."""
    assert _compiled({**SMALL, "policy.draft": "greedy"}, tmp_path / "greedy") is True
    assert _compiled({**SMALL, "policy.draft": "fixed"}, tmp_path / "fixed") is False
    # computation-only searches without T_comm: no compiled implementation
    assert _compiled({**SMALL, "policy.draft": "computation-only"}, tmp_path / "co") is False


@pytest.mark.skipif(not compiled_enabled(), reason="no numba here (or MULTISPIN_NUMBA=0)")
def test_a_network_reports_whether_any_cell_searched_compiled(tmp_path):
    """Several cells: the network's run.json says true when a cell's controller ran it."""
    assert _compiled({**CELLS, "policy.draft": "greedy"}, tmp_path / "greedy") is True
    assert _compiled({**CELLS, "policy.draft": "fixed"}, tmp_path / "fixed") is False
    cells = [json.loads(p.read_text())["compiled_search"]
             for p in (tmp_path / "fixed").glob("cell_*/run.json")]
    assert cells and not any(cells)


def test_the_numpy_search_is_not_reported_compiled(tmp_path, monkeypatch):
    """With the compiled search switched off (MULTISPIN_NUMBA=0) the greedy runs numpy."""
    monkeypatch.setenv("MULTISPIN_NUMBA", "0")
    assert _compiled({**SMALL, "policy.draft": "greedy"}, tmp_path / "greedy") is False


MU_MIMO = {"server.antennas": 4, "server.dl_scheme": "mu-mimo-zf",
           "server.ul_scheme": "mu-mimo-mmse", "devices.count": 6, "run.rounds": 5, "seed": 2,
           "policy.draft": "greedy"}


@pytest.mark.parametrize("numba_env, overrides", [
    (None, MU_MIMO), ("0", MU_MIMO), (None, {**MU_MIMO, "server.ul_scheme": "ofdma-mrc"}),
    (None, {**MU_MIMO, "policy.draft": "fixed"}), (None, SMALL)])
def test_run_json_says_whether_the_shared_band_decisions_ran_compiled(tmp_path, monkeypatch,
                                                                       numba_env, overrides):
    """``compiled_shared_band`` is true exactly where the run built compiled shared-band
    evaluators (the draft search on both links' shared band, numba importable and allowed;
    fixed draft lengths decide one outcome a round without one)."""
    import multispin_sim.model.mimo_batch as mimo_batch

    if numba_env is not None:
        monkeypatch.setenv("MULTISPIN_NUMBA", numba_env)
    built = []
    twin = mimo_batch.compiled_twin
    monkeypatch.setattr(mimo_batch, "compiled_twin",
                        lambda ev: built.append(twin(ev)) or built[-1])
    result = ms.simulate(ms.load_scenario(None, overrides=overrides), out=tmp_path / "run")
    said = json.loads((result.folder / "run.json").read_text())["compiled_shared_band"]
    assert said is any(b is not None for b in built)
    if overrides is MU_MIMO:
        assert built and said is (numba_env is None and compiled_enabled())
