"""Fault injection: the options of ``bench`` and ``plot`` (the method of tests/cli/test_faults.py):
a bare ``bench`` starts the quick set, and a timeline of too many rounds is refused up front."""
import json
import os

import pytest

from multispin_sim import benchmarks, cli as cli_module
from multispin_sim.plots.timeline import MAX_TIMELINE_ROUNDS

from test_faults import cli, error_line, scenario


def test_bench_without_argument_runs_the_quick_set(monkeypatch, capsys):
    """FAULT_CLASS newcomer path: ``bench`` alone started the 14-minute full set; it runs the
    quick set and says how to run the full one."""
    calls = []
    monkeypatch.setattr(benchmarks, "run", lambda what, quick: calls.append((what, quick)) or {})
    assert cli_module.main(["bench"]) == 0
    assert calls == [("all", True)]
    assert "multispin-sim bench all" in capsys.readouterr().out
    assert cli_module.main(["bench", "all"]) == 0 and calls[-1] == ("all", False)


def test_bench_unknown_name_refused(tmp_path):
    """FAULT_CLASS messages: an unknown benchmark gets the one-line error with the names."""
    line = error_line(cli("bench", "nosuch", cwd=tmp_path), 2)
    assert "nosuch" in line and "engine" in line


def test_bench_help_names_every_benchmark(capsys):
    """FAULT_CLASS stale help: ``bench --help`` listed ten of the fourteen benchmarks."""
    with pytest.raises(SystemExit):
        cli_module.main(["bench", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    named = text[text.index("positional arguments:"):text.index("options:")]
    for name in benchmarks.BENCHMARKS:
        assert f"{name}," in named or f"{name} (" in named, name


def test_every_benchmark_has_the_duration_bench_says_up_front():
    """``bench all`` says how long it takes before it starts: the sum over its benchmarks, so
    each needs its (full, --quick) estimate, the quick one no longer than the full one."""
    for name in benchmarks.BENCHMARKS:
        full, quick = benchmarks.DURATION_MIN[name]
        assert 0 < quick <= full, name


def test_timeline_limit_in_help_is_the_plot_limit():
    assert cli_module.TIMELINE_ROUNDS_HELP == MAX_TIMELINE_ROUNDS


@pytest.mark.parametrize("args, key", [(["--rounds", "100000"], "--rounds 100000"),
                                       (["--first", "-1"], "--first -1")])
def test_plot_timeline_bounded(tmp_path, args, key):
    """FAULT_CLASS hangs: ``plot --timeline --rounds 100000`` drew for minutes; refused before
    reading the run, nothing written."""
    run = tmp_path / "run"
    assert cli("run", scenario(tmp_path), "--out", run, "--quiet", cwd=tmp_path).rc == 0
    line = error_line(cli("plot", "--timeline", run, *args, cwd=tmp_path), 2)
    assert line.startswith(f"error: {key}:")
    assert not (run / "timeline.png").exists()


@pytest.mark.parametrize("args, what", [
    (["--scheduler", ""], "--scheduler ''"),
    (["--executor", "local", "--scheduler", "tcp://127.0.0.1:1"], "--scheduler"),
    (["--executor", "serial", "--scheduler", "tcp://127.0.0.1:1"], "--scheduler"),
    # not an address (was an internal error), and no scheduler there (wrote the folder first)
    (["--scheduler", "notanaddress"], "cannot start the dask executor on notanaddress"),
    (["--scheduler", "tcp://127.0.0.1:1"], "cannot start the dask executor on tcp://127.0.0.1:1"),
])
def test_sweep_scheduler_options_refused_before_any_work(tmp_path, args, what):
    """FAULT_CLASS messages: the scheduler options had no "what to do" ('' even ran a local
    sweep); refused with it, exit 2, no output folder."""
    from test_faults import sweep_file

    sw = sweep_file(tmp_path, rounds=10, counts=(2,), reps=1)
    line = error_line(cli("sweep", sw, "--out", tmp_path / "o", *args, cwd=tmp_path), 2)
    assert line.startswith(f"error: {what}:")
    assert not (tmp_path / "o").exists()


def test_sweep_dask_missing_refused_before_any_work(tmp_path, monkeypatch):
    """FAULT_CLASS messages: --executor dask without dask.distributed: what to do, and no folder.
    (A stand-in package that cannot be imported hides an installed dask from the command.)"""
    hidden = tmp_path / "hide"
    (hidden / "dask").mkdir(parents=True)
    (hidden / "dask" / "__init__.py").write_text("raise ImportError('dask hidden by the test')\n")
    monkeypatch.setenv("PYTHONPATH", f"{hidden}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    from test_faults import sweep_file

    sw = sweep_file(tmp_path, rounds=10, counts=(2,), reps=1)
    line = error_line(cli("sweep", sw, "--out", tmp_path / "o", "--executor", "dask",
                          cwd=tmp_path), 2)
    assert "--executor local" in line and not (tmp_path / "o").exists()


def test_plot_error_lines_say_what_to_do(tmp_path):
    """FAULT_CLASS messages: a run folder without rounds drew no timeline with a bare line."""
    run = tmp_path / "run"
    assert cli("run", scenario(tmp_path), "--out", run, "--quiet", cwd=tmp_path).rc == 0
    line = error_line(cli("plot", "--timeline", run, "--first", "100000", cwd=tmp_path), 2)
    assert "no round in" in line


def test_a_reader_that_goes_away_is_not_an_error(tmp_path):
    """FAULT_CLASS messages: ``multispin-sim run ... --explain 50 | head -1`` printed "error: a
    file: Broken pipe" (exit 1) after writing every output; it now ends quietly with 128 +
    SIGPIPE, as a command stopped by its pipe's reader does, and the run is whole."""
    import subprocess
    import sys

    from test_faults import _env, _limits

    p = subprocess.Popen([sys.executable, "-m", "multispin_sim", "run", scenario(tmp_path),
                          "--rounds", "60", "--explain", "50", "--out", tmp_path / "r"],
                         cwd=tmp_path, env=_env(), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=_limits())
    p.stdout.close()            # the reader is gone before the first line
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 141, err
    assert err == ""
    assert json.loads((tmp_path / "r" / "run.json").read_text())["complete"] is True


def test_timeline_out_is_an_image_file(tmp_path):
    """FAULT_CLASS messages: ``plot --timeline RUN --out NAME`` without .png was an internal
    error from matplotlib ("Format 'tmp' is not supported"); a .png, .svg or .pdf is drawn in
    that format, anything else refused before any work."""
    pytest.importorskip("matplotlib")
    run = tmp_path / "run"
    assert cli("run", scenario(tmp_path), "--out", run, "--quiet", cwd=tmp_path).rc == 0
    for name in ("timeline", "t.xyz"):
        line = error_line(cli("plot", "--timeline", run, "--out", tmp_path / name, cwd=tmp_path), 2)
        assert line.startswith(f"error: --out {tmp_path / name}: is not a .png, .svg or .pdf")
    assert cli("plot", "--timeline", run, "--out", tmp_path / "t.svg", cwd=tmp_path).rc == 0
    assert (tmp_path / "t.svg").read_text().lstrip().startswith("<?xml")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "scenario.yaml", "t.csv", "t.svg"]


@pytest.mark.parametrize("name", [b"caf\xe9", "日本 run".encode()], ids=["latin-1", "cjk"])
def test_plot_and_report_of_a_folder_with_any_name(tmp_path, name):
    """FAULT_CLASS messages: a folder name that is not UTF-8 stopped ``plot --timeline`` (in
    matplotlib) and ``report`` (in the HTML writer) with internal errors; a CJK one printed
    matplotlib's warnings with source lines. Both draw, and stderr stays empty."""
    pytest.importorskip("matplotlib")
    run = os.fsdecode(os.path.join(os.fsencode(tmp_path), name))
    try:
        os.mkdir(run)
        os.rmdir(run)
    except (OSError, UnicodeError):
        pytest.skip("this file system does not take the name")
    assert cli("run", scenario(tmp_path), "--out", run, "--quiet", "--rounds", "3",
               cwd=tmp_path).rc == 0
    import subprocess
    import sys

    from test_faults import _env, _limits

    for args in (("plot", "--timeline", run), ("report", run)):
        # bytes: what is printed is the folder's name as it is, not UTF-8
        o = subprocess.run([sys.executable, "-m", "multispin_sim", *args], cwd=tmp_path,
                           env=_env(), capture_output=True, timeout=120, preexec_fn=_limits())
        assert o.returncode == 0 and o.stderr == b"", o
    assert os.path.isfile(os.path.join(run, "timeline.png"))
    assert os.path.isfile(os.path.join(run, "report.html"))
