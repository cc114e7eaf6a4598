"""What the tutorials claim, checked against what they compute: notebook 4's coherence-time
prose and its Doppler figure, check 5.2's synthetic table, and the sliders' output in a kernel
without a frontend."""
import re
from pathlib import Path

import numpy as np
import pytest

from multispin_sim import teaching

ROOT = Path(__file__).resolve().parents[2]
TUT = ROOT / "tutorials"


def _cells(source):
    """The cells of a jupytext percent-format source, as text."""
    return re.split(r"^# %%.*$", source.read_text(encoding="utf-8"), flags=re.M)


# ---------------------------------------------------------------------------- notebook 4 (F1)


def _doppler_section():
    cells = _cells(TUT / "04_fading.py")
    i = next(n for n, c in enumerate(cells) if "def show_doppler" in c)
    return cells[i - 1], cells[i]


def test_notebook_4_coherence_time_prose_states_the_jakes_numbers():
    from scipy.special import j0

    prose, _ = _doppler_section()
    prose = " ".join(line.lstrip("# ") for line in prose.splitlines())
    half = float(re.search(r"halves at tau = ([\d.]+) / f_D", prose).group(1))
    assert abs(j0(2 * np.pi * half) - 0.5) < 0.01
    zero = float(re.search(r"crosses zero at ([\d.]+) / f_D", prose).group(1))
    assert abs(j0(2 * np.pi * zero)) < 0.01
    at_tc = float(re.search(r"T_c = 0\.423 / f_D sits .*?\(J0 = (-?[\d.]+) there\)", prose).group(1))
    assert abs(j0(2 * np.pi * 0.423) - at_tc) < 0.005
    assert "rho^n" in prose     # Gauss-Markov's own correlation after n blocks


def test_notebook_4_draws_each_series_beside_its_own_correlation(monkeypatch):
    """The figure's right panel has, for each series on the left, that series' correlation:
    J0 for the Jakes process, rho^n for the Gauss-Markov steps; the half point is where J0 is
    1/2."""
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    import matplotlib.pyplot as plt
    from scipy.special import j0

    from multispin_sim.model.fading import jakes_correlation

    _, code = _doppler_section()
    figures = []
    monkeypatch.setattr(plt, "show", lambda *a, **k: figures.append(plt.gcf()))
    monkeypatch.setenv("MULTISPIN_TUTORIALS_STATIC", "1")
    namespace = {"np": np, "plt": plt, "teaching": teaching}
    exec(compile(code, "04_fading.py:show_doppler", "exec"), namespace)
    for fd in (10.0, 50.0):
        namespace["show_doppler"](doppler_hz=fd)
        left, right = figures[-1].axes
        series = [ln.get_label().split(",")[0] for ln in left.get_lines()]
        curves = {ln.get_label().split(":")[0]: ln for ln in right.get_lines()
                  if not ln.get_label().startswith("_") and ":" in ln.get_label()}
        assert series and all(s in curves for s in series), (series, list(curves))
        lag_ms = np.asarray(curves["jakes"].get_xdata(), float)
        np.testing.assert_allclose(curves["jakes"].get_ydata(), j0(2 * np.pi * fd * lag_ms * 1e-3),
                                   atol=1e-12)
        rho = float(jakes_correlation(fd, 1e-3))
        np.testing.assert_allclose(curves["gauss-markov"].get_ydata(), rho ** (lag_ms / 1.0),
                                   rtol=1e-9)
        half = next(ln for ln in right.get_lines() if "1/2" in ln.get_label())
        x_ms = half.get_xdata()[0]
        assert abs(j0(2 * np.pi * fd * x_ms * 1e-3) - 0.5) < 0.01
        plt.close("all")


def test_check_4_2_names_the_jakes_model():
    doc = teaching.check_power_correlation.__doc__
    assert "channel.fading: jakes" in doc and "Gauss-Markov fading in the simulator" not in doc


# ---------------------------------------------------------------------------- check 5.2 (F7)


def _sojourn(start_column):
    def answer(req):
        done = np.isfinite(req["completion_s"])
        return float(np.mean(req["completion_s"][done] - req[start_column][done]))
    return answer


def test_check_5_2_tells_the_sojourn_from_the_service_time(capsys):
    assert teaching.check_mean_sojourn(_sojourn("arrival_s")) is True
    assert teaching.check_mean_sojourn(_sojourn("start_s")) is False        # E[S], not W
    assert teaching.check_mean_sojourn(_sojourn("first_token_s")) is False
    out = capsys.readouterr().out
    assert out.count("FAIL") == 2 and "start_s" in out.split("FAIL", 1)[1]


# ---------------------------------------------------------------------------- sliders (F10)


def test_sliders_in_a_kernel_without_a_frontend_leave_a_note_and_no_function_echo(tmp_path):
    """Executed headless without MULTISPIN_TUTORIALS_STATIC, a slider cell used to show
    ``<function show ...>`` (what ``interact`` returns) and, to a viewer without widgets, no
    figure and no word why."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("ipywidgets")
    import os

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "from multispin_sim import teaching\n"
        "def show(a=3):\n"
        "    print('a =', a)\n"
        "teaching.explore(show, a=(0, 10, 1, 3))")]
    env = {k: v for k, v in os.environ.items() if k != "MULTISPIN_TUTORIALS_STATIC"}
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute(env=env)
    outputs = nb.cells[0].outputs
    assert not any(o.output_type == "execute_result" for o in outputs), outputs
    assert "<function" not in str(outputs)
    views = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(views) == 1
    assert "MULTISPIN_TUTORIALS_STATIC=1" in views[0]["data"]["text/plain"]
