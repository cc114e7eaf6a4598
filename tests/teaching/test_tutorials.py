"""The tutorials (tutorials/*.ipynb): each notebook and its solution are what jupytext makes of
its plain-Python source (tutorials/NN_name.py, percent format), stored without outputs; every
notebook and solution runs headless top to bottom, and every exercise's check fails on its
untouched starter and passes on its solution (so no check is vacuous).

Executing the notebooks needs the ``tutorials`` extra (nbclient, ipykernel, matplotlib, ...):
``pip install -e '.[tutorials]'``; without it those tests skip with that message. Notebooks
run two at a time (one kernel each; only those of the selected cases, so ``-k 07`` runs one
notebook and its solution), at their small sizes (``MULTISPIN_TUTORIALS_QUICK=1``: the learning
agents' notebook trains for seconds instead of minutes) and with the static fallback of the
sliders (``MULTISPIN_TUTORIALS_STATIC=1``): inside an ipywidgets ``interact`` an exception would only be
shown in the widget, so a broken figure could pass unnoticed.
"""
import concurrent.futures
import importlib.util
import json
import os
import re
import time
from pathlib import Path

import numpy as np
import pytest

from multispin_sim import teaching

ROOT = Path(__file__).resolve().parents[2]
TUT = ROOT / "tutorials"
STARTERS = sorted(TUT.glob("[0-9][0-9]_*.ipynb"))
SOLUTIONS = sorted((TUT / "solutions").glob("[0-9][0-9]_*.ipynb"))
ALL = STARTERS + SOLUTIONS


def _tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def _check_cells(nb):
    """{exercise id: check cell} of a notebook (cells tagged check-<id>)."""
    out = {}
    for cell in nb["cells"]:
        for tag in _tags(cell):
            if tag.startswith("check-"):
                out[tag[len("check-"):]] = cell
    return out


def test_notebooks_are_listed_and_stored_without_outputs():
    assert [p.stem for p in STARTERS] == ["01_one_round", "02_uplink_or_downlink", "03_draft_length",
                                          "04_fading", "05_queueing", "06_beyond_the_paper",
                                          "07_learning_agents", "08_antennas",
                                          "09_many_cells"]
    readme = (TUT / "README.md").read_text(encoding="utf-8")
    for path in ALL:
        nb = json.loads(path.read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None, (
                    f"{path.relative_to(ROOT)}: stored with outputs; regenerate with "
                    "python tutorials/make_notebooks.py (from the tutorials/NN_name.py sources)")
        if path.parent == TUT:
            assert path.name in readme, f"{path.name} is not listed in tutorials/README.md"


def test_every_exercise_has_a_starter_a_solution_and_a_check():
    found = {}
    for path in STARTERS:
        nb = json.loads(path.read_text(encoding="utf-8"))
        checks = _check_cells(nb)
        for ex, cell in checks.items():
            found[ex] = path.stem
            assert re.search(r"teaching\.check_\w+\(", "".join(cell["source"]))
        solution = TUT / "solutions" / path.name
        if checks:
            assert solution.is_file(), f"{path.name} has exercises but no solution notebook"
            assert set(_check_cells(json.loads(solution.read_text(encoding="utf-8")))) == set(checks)
        starter_cells = [c for c in nb["cells"] if any(t == "starter" for t in _tags(c))]
        assert all("TODO" in "".join(c["source"]) for c in starter_cells)
        n = len(checks)
        assert path.stem.startswith("06") or 2 <= n <= 3, f"{path.name}: {n} exercises"
    assert found == {ex: nb for ex, (nb, _) in teaching.EXERCISES.items()}


def test_every_notebook_has_a_python_source():
    sources = sorted(p.stem for p in TUT.glob("[0-9][0-9]_*.py"))
    assert sources == [p.stem for p in STARTERS], "one tutorials/NN_name.py source per notebook"


def test_notebooks_are_what_jupytext_makes_of_their_sources():
    pytest.importorskip("jupytext", reason="needs the 'tutorials' extra: pip install -e '.[tutorials]'")
    spec = importlib.util.spec_from_file_location("make_notebooks", TUT / "make_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert set(module.targets()) == set(ALL)
    assert module.main(["--check"]) == 0, "regenerate: python tutorials/make_notebooks.py"


def test_checks_fail_cleanly_without_raising(capsys):
    def broken(*args):
        raise ZeroDivisionError("oops")

    for name in ("check_expected_tokens", "check_round_time", "check_ul_delay", "check_dl_delay",
                 "check_best_split", "check_goodput", "check_median_delay",
                 "check_power_correlation", "check_pk_wait", "check_mean_sojourn",
                 "check_goodput_and_return", "check_threshold_policy", "check_steering",
                 "check_zf_kept", "check_interference", "check_delivery_time",
                 "check_reuse_gain"):
        check = getattr(teaching, name)
        assert check(None) is False
        assert check(lambda *a: None) is False
        assert check(broken) is False
        assert check(lambda *a: 12345.0) is False     # a wrong value
    assert teaching.check_full_acceptance(None) is False
    assert teaching.check_full_acceptance((0.59, 0.5)) is False
    assert teaching.check_best_uniform_gamma(None, [0.9], [0.015], 0.04, 0.007, 0.0) is False
    assert teaching.check_first_null(None) is False
    assert teaching.check_first_null("thirty") is False
    assert teaching.check_first_null(25.0) is False
    out = capsys.readouterr().out
    assert out.count("FAIL") == 74 and "PASS" not in out and "hint:" in out


def test_checks_fail_what_is_not_an_answer_of_the_right_kind(capsys):
    """A NaN bearing, a draft length of 7.9 or inf, a steering 'vector' of strings and the right
    number repeated in an array are FAIL lines, not a PASS or a traceback."""
    def tokens(alpha, gamma):
        return sum(alpha ** j for j in range(gamma + 1))

    assert teaching.check_expected_tokens(tokens) is True
    assert teaching.check_expected_tokens(lambda a, g: np.full(3, tokens(a, g))) is False
    assert teaching.check_first_null(float("nan")) is False
    for value in (7.9, float("inf"), "7"):
        assert teaching.check_best_uniform_gamma(value, [0.9], [0.015], 0.04, 0.007, 0.0) is False
    assert teaching.check_steering(lambda *a: "todo") is False
    assert teaching.check_steering(lambda phi, m, d: ["a"] * m) is False
    out = capsys.readouterr().out
    assert out.count("FAIL") == 7 and out.count("PASS") == 1


def test_static_fallback_calls_the_function_once_with_the_defaults(monkeypatch):
    calls = []
    monkeypatch.setenv("MULTISPIN_TUTORIALS_STATIC", "1")
    assert teaching.static_mode()
    assert teaching.explore(lambda a, b, c: calls.append((a, b, c)), a=(0, 10, 1, 3),
                            b=(0.0, 1.0, 0.1, 0.5), c=["x", "y"]) is None
    assert calls == [(3, 0.5, "x")]
    monkeypatch.delenv("MULTISPIN_TUTORIALS_STATIC")
    assert teaching.static_mode()      # plain Python (no Jupyter kernel): static too


def test_slider_controls():
    pytest.importorskip("ipywidgets", reason="needs the 'tutorials' extra: pip install -e '.[tutorials]'")
    from multispin_sim.teaching.widgets import controls

    c = controls({"k": (1, 20, 1, 8), "p": (0.0, 40.0, 0.5, 16.0), "m": ["optimal", "all-ul"]})
    assert type(c["k"]).__name__ == "IntSlider" and (c["k"].min, c["k"].max, c["k"].value) == (1, 20, 8)
    assert type(c["p"]).__name__ == "FloatSlider" and c["p"].value == 16.0 and c["p"].step == 0.5
    assert type(c["m"]).__name__ == "Dropdown" and c["m"].value == "optimal"


# ---------------------------------------------------------------------------- execution


def _execute(path, tmp):
    import nbformat
    from nbclient import NotebookClient

    t0 = time.perf_counter()
    env = dict(os.environ, MULTISPIN_TUTORIALS_STATIC="1", MULTISPIN_TUTORIALS_QUICK="1")
    for _ in range(3):
        nb = nbformat.read(path, as_version=4)
        error = None
        try:
            NotebookClient(nb, timeout=600, kernel_name="python3",
                           resources={"metadata": {"path": str(tmp)}}).execute(env=env)
        except Exception as exc:  # reported by the test, with the cell's traceback
            error = f"{type(exc).__name__}: {exc}"
        # a kernel that dies before its first reply ran no cell: kernels started at the same
        # moment can race for a port (jupyter/jupyter_client#154, nteract/papermill#511)
        if error is None or "Kernel died before replying to kernel_info" not in error:
            break
    return nb, time.perf_counter() - t0, error


def _selected(session):
    """The notebooks of the test_notebook_runs_headless cases this session runs (-k narrows)."""
    chosen = {item.callspec.params["path"] for item in session.items
              if item.originalname == "test_notebook_runs_headless" and hasattr(item, "callspec")}
    return [p for p in ALL if p in chosen]


@pytest.fixture(scope="module")
def executed(request, tmp_path_factory):
    pytest.importorskip("nbclient", reason="running the tutorials needs the 'tutorials' extra: "
                        "pip install -e '.[tutorials]'")
    pytest.importorskip("ipykernel", reason="running the tutorials needs the 'tutorials' extra: "
                        "pip install -e '.[tutorials]'")
    pytest.importorskip("matplotlib", reason="running the tutorials needs the 'tutorials' extra")
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {path: pool.submit(_execute, path, tmp_path_factory.mktemp(path.stem))
                   for path in _selected(request.session)}
        for path, fut in futures.items():
            results[path] = fut.result()
    return results


@pytest.mark.parametrize("path", ALL, ids=[str(p.relative_to(TUT)) for p in ALL])
def test_notebook_runs_headless(executed, path, record_property):
    nb, seconds, error = executed[path]
    record_property("wall_time_s", round(seconds, 1))
    assert error is None, f"{path.relative_to(ROOT)}: {error}"
    solution = path.parent.name == "solutions"
    for ex, cell in _check_cells(nb).items():
        text = "".join(o.get("text", "") for o in cell["outputs"])
        result = [o for o in cell["outputs"] if o.get("output_type") == "execute_result"]
        value = result[0]["data"]["text/plain"] if result else None
        if solution:
            assert f"PASS  exercise {ex}" in text and value == "True", (ex, text)
        else:
            assert f"FAIL  exercise {ex}" in text and "hint:" in text and value == "False", (ex, text)
