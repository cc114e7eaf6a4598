"""The run report's time budget and goodput figure against the run's own files: shares of the
simulated time with the idle time of a light load, of the summed batch spans for the
asynchronous protocol, of the cells' own times for several cells; each cell's goodput drawn
against its rounds; and a refused report that writes nothing."""
import json
import re

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from multispin_sim.cli import main  # noqa: E402
from multispin_sim.outputs.records import read_table  # noqa: E402

QUEUE = ["--set", "devices.count=4", "--set", "workload.arrivals=poisson",
         "--set", "workload.length_tokens=16"]


def _run(out, *args):
    assert main(["run", *args, "--out", str(out), "--quiet"]) == 0
    return out


def _budget_line(folder):
    assert main(["report", str(folder)]) == 0
    text = (folder / "report.html").read_text(encoding="utf-8")
    return re.search(r"<p>Time budget of the run: ([^<]*)</p>", text).group(1), text


def _shares(line):
    return {k: int(v) for v, k in ((m.group(2), m.group(1)) for m in
                                   re.finditer(r"([a-z][a-z ()]*?) (\d+)%", line))}


def test_a_light_load_budget_is_of_the_simulated_time_with_its_idle_time(tmp_path):
    run = _run(tmp_path / "run", *QUEUE, "--set", "workload.rate_per_s=0.2",
               "--set", "run.max_time_s=20", "--rounds", "200")
    rt = read_table(run / "rounds.csv")
    sim = json.loads((run / "summary.json").read_text())["sim_time_s"]
    want = {"drafting": rt["draft_s"].sum() / sim, "verification": rt["verify_s"].sum() / sim,
            "communication": rt["comm_s"].sum() / sim,
            "idle (no round running)": 1 - rt["duration_s"].sum() / sim}
    assert want["idle (no round running)"] > 0.2   # the devices wait for requests
    line, _ = _budget_line(run)
    assert line.endswith("of the simulated time.")
    assert _shares(line) == {k: round(v * 100) for k, v in want.items()}


def test_an_asynchronous_budget_is_of_the_summed_batch_spans(tmp_path):
    """Batches overlap: their phases summed exceed the simulated time. The shares are of the
    summed spans (rounds.csv duration_s, docs/guide/outputs.md), the rest being waits, and the
    summary's duration_s is named as what it is: the time between batch ends."""
    run = _run(tmp_path / "run", *QUEUE, "--set", "workload.rate_per_s=2",
               "--set", "serving.protocol=asynchronous", "--set", "run.max_time_s=10",
               "--rounds", "200")
    rt = read_table(run / "rounds.csv")
    spans = rt["duration_s"].sum()
    assert spans > json.loads((run / "summary.json").read_text())["sim_time_s"]   # overlap
    line, text = _budget_line(run)
    shares = _shares(line)
    assert shares["drafting"] == round(100 * rt["draft_s"].sum() / spans)
    assert shares["verification"] == round(100 * rt["verify_s"].sum() / spans)
    assert shares["communication"] == round(100 * rt["comm_s"].sum() / spans)
    phases = rt["draft_s"].sum() + rt["verify_s"].sum() + rt["comm_s"].sum()
    assert shares["waiting for the server or the channel"] == round(100 * (1 - phases / spans))
    assert "of the summed batch spans" in line and "not shares of the simulated time" in line
    assert "<td class=l>time between batch ends</td>" in text
    assert "<td class=l>round length</td>" not in text


@pytest.fixture(scope="module")
def cells_run(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("cells") / "run", "--set", "cells.layout=hex",
                "--set", "cells.count=7", "--set", "devices.count=14", "--rounds", "12")


def test_a_multi_cell_budget_is_of_the_cells_own_times(cells_run):
    rt = read_table(cells_run / "rounds.csv")
    total = sum(json.loads((cells_run / f"cell_{c}" / "summary.json").read_text())["sim_time_s"]
                for c in np.unique(rt["cell"]))
    line, _ = _budget_line(cells_run)
    assert "of the simulated time of the 7 cells" in line
    shares = _shares(line)
    assert shares["drafting"] == round(100 * rt["draft_s"].sum() / total)
    assert shares["communication"] == round(100 * rt["comm_s"].sum() / total)
    from multispin_sim.report.run import read_run_folder, time_budget

    _, summary, tables, _, cells = read_run_folder(cells_run)
    budget, _ = time_budget(summary, tables, cells)
    assert sum(budget.values()) == pytest.approx(1.0)


def test_each_cell_s_goodput_is_drawn_against_the_rounds_not_the_network_s(cells_run):
    """The histogram holds every cell's rounds; the lines beside it are the cells' goodputs
    (each cell's tokens over its time, from rounds.csv), not the network's sum."""
    from multispin_sim.report.run import goodput_figure, read_run_folder

    _, summary, tables, _, _ = read_run_folder(cells_run)
    fig, caption = goodput_figure(summary, tables)
    ax = fig.axes[0]
    rt = tables["rounds"]
    want = sorted(rt["tokens"][rt["cell"] == c].sum() / rt["duration_s"][rt["cell"] == c].sum()
                  for c in np.unique(rt["cell"]))
    drawn = sorted(line.get_xdata()[0] for line in ax.get_lines())
    assert drawn == pytest.approx(want, rel=1e-9)
    assert summary["goodput_tps"] == pytest.approx(sum(want), rel=1e-9)
    assert not any(np.isclose(x, summary["goodput_tps"]) for x in drawn)
    assert "is their sum" in caption


def test_a_refused_report_writes_nothing(tmp_path, capsys):
    run = _run(tmp_path / "zero", *QUEUE, "--set", "workload.rate_per_s=0.0001",
               "--set", "run.max_time_s=1")   # no request arrives: no round
    assert len(read_table(run / "rounds.csv")["round"]) == 0
    (tmp_path / "notrun").mkdir()
    for folder, out in ((run, tmp_path / "nd" / "sub" / "x.html"),
                        (tmp_path / "notrun", tmp_path / "nd2" / "x.html")):
        assert main(["report", str(folder), "--out", str(out)]) == 2
        assert capsys.readouterr().err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notrun", "zero"]
