"""Fault injection: stop signals to the commands other than ``run`` (the method of
tests/cli/test_faults.py). A serial sweep runs in the main process, so the run's own handlers take
the signal: the sweep must still exit 128 + N for that signal."""
import signal
import time

import pytest

from test_faults import cli, deterministic_runs, start, sweep_file


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_serial_sweep_exit_status(tmp_path, sig):
    """FAULT_CLASS signals: SIGTERM / SIGHUP / SIGINT to a serial sweep: 143 / 129 / 130, and the
    resumed sweep equals an uninterrupted one."""
    sw = sweep_file(tmp_path, rounds=40000, counts=(2, 3), reps=1)  # seconds per run
    p = start("sweep", sw, "--out", tmp_path / "a", "--executor", "serial", cwd=tmp_path)
    deadline = time.monotonic() + 30
    while not list((tmp_path / "a" / "runs").glob("*/rounds.csv")):
        assert time.monotonic() < deadline and p.poll() is None, "the first run did not start"
        time.sleep(0.05)
    time.sleep(0.3)
    assert p.poll() is None, "the sweep ended before the signal: make its runs longer"
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + sig, err
    assert "Traceback" not in err and "rerun the same command to resume" in err
    assert cli("sweep", sw, "--out", tmp_path / "a", "--executor", "serial", cwd=tmp_path).rc == 0
    assert cli("sweep", sw, "--out", tmp_path / "b", "--executor", "serial", cwd=tmp_path).rc == 0
    assert deterministic_runs(tmp_path / "a") == deterministic_runs(tmp_path / "b")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_bench_stops(tmp_path, sig):
    """FAULT_CLASS signals: the runs a benchmark times took the signal as their own, so
    ``bench`` went on timing cut runs and exited 0; it stops with 128 + N."""
    p = start("bench", "engine", "--quick", cwd=tmp_path)
    deadline = time.monotonic() + 30
    while "[engine]" not in (line := p.stdout.readline()):
        assert line and time.monotonic() < deadline, "the benchmark did not start"
    time.sleep(0.5)  # inside its first timed runs
    assert p.poll() is None, "the benchmark ended before the signal"
    p.send_signal(sig)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 128 + sig, err
    assert "Traceback" not in err and "interrupted" in err


def _started(p, folder, deadline_s=30):
    deadline = time.monotonic() + deadline_s
    while not list(folder.glob("**/rounds.csv")):
        assert time.monotonic() < deadline and p.poll() is None, "the run did not start"
        time.sleep(0.05)
    time.sleep(0.3)
    assert p.poll() is None, "it ended before the signal: make its runs longer"


def test_a_signal_ignored_at_start_stays_ignored(tmp_path):
    """FAULT_CLASS signals: ``nohup`` starts a command ignoring SIGHUP so that it outlives its
    terminal; the run's own handlers used to take SIGHUP back and stop the run. A SIGHUP now
    leaves it running to its end; SIGTERM still stops it."""
    out = tmp_path / "run"
    p = start("run", "--rounds", "30000", "--out", out, "--quiet", cwd=tmp_path,
              ignore=(signal.SIGHUP,))
    _started(p, out)
    p.send_signal(signal.SIGHUP)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert '"complete": true' in (out / "summary.json").read_text()
    p = start("run", "--rounds", "100000000", "--out", tmp_path / "stop", "--quiet",
              cwd=tmp_path, ignore=(signal.SIGHUP,))
    _started(p, tmp_path / "stop")
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM, err


def _stop_local_sweep(tmp_path, counts, jobs, sig, ignore=()):
    """Start a sweep of long runs on the local executor, send ``sig`` once a run has started;
    (seconds until it ended, its stderr), after checking its exit status and resume hint."""
    sw = sweep_file(tmp_path, rounds=2_000_000, counts=counts, reps=1)
    p = start("sweep", sw, "--out", tmp_path / "a", "--executor", "local", "--jobs", str(jobs),
              cwd=tmp_path, ignore=ignore)
    _started(p, tmp_path / "a" / "runs", deadline_s=60)
    t0 = time.monotonic()
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + sig, err
    assert "rerun the same command to resume" in err
    return time.monotonic() - t0, err


def test_a_local_sweep_stops_its_workers_with_the_signal_it_took(tmp_path):
    """FAULT_CLASS signals: a sweep started ignoring SIGINT (a shell script's background job)
    and stopped by SIGTERM asks its worker processes to stop with SIGTERM, which they take (a
    SIGINT they would ignore, and each run would go on to its end: minutes here)."""
    took, _ = _stop_local_sweep(tmp_path, (2, 3), 2, signal.SIGTERM, ignore=(signal.SIGINT,))
    assert took < 30


def test_a_local_sweep_starts_no_run_after_the_signal(tmp_path):
    """FAULT_CLASS signals: a worker has the next run queued while it runs one; after Ctrl-C
    it stops the one in flight and starts no other (a whole extra run, then discarded), so the
    sweep ends at once with only the interrupted run's folder."""
    took, _ = _stop_local_sweep(tmp_path, (2, 3, 4), 1, signal.SIGINT)
    assert took < 10 and len(list((tmp_path / "a" / "runs").iterdir())) == 1
