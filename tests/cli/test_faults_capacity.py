"""Fault injection for ``multispin-sim capacity`` (the method of tests/cli/test_faults.py: the real
CLI in subprocesses): options and output locations refused before any run, one search per
folder, runs without requests, searches bounded upwards and downwards, stop signals.
"""
import signal
import time

import pytest

from test_asynchronous import md1_scenario_file
from test_faults import cli, error_line, read_csv, start, strict_json

D = 0.05  # seconds: one request is one round of t + t0 + t1 = 5 + 22.4 + 7.6 ms + the link
ISSUE = ["--set", "workload.arrivals=poisson", "--set", "devices.count=2",
         "--set", "channel.coherence_time_ms=42.3", "--duration", "20", "--reps-max", "3",
         "--tol", "0.5"]


@pytest.mark.parametrize("args, key", [
    (["--reps-min", "5", "--reps-max", "2"], "--reps-min"),
    (["--tol", "-1"], "--tol"),
    (["--tol", "nan"], "--tol"),
    (["--tol", "0"], "--tol"),
    (["--duration", "1e308"], "--duration"),
    (["--duration", "0"], "--duration"),
    (["--duration", "inf"], "--duration"),
    (["--rate", "-1"], "--rate"),
    (["--rate", "nan"], "--rate"),
    (["--target", "nan"], "--target"),
    (["--target", "1"], "--target"),
])
def test_capacity_options_refused_before_any_run(tmp_path, args, key):
    """FAULT_CLASS capacity options: refused at once with the option named, nothing written."""
    out = tmp_path / "cap"
    o = cli("capacity", md1_scenario_file(tmp_path), "--slo", "ttft=0.1", *args, "--out", out,
            cwd=tmp_path, timeout=30)
    assert key in error_line(o, 2)
    assert not out.exists()


@pytest.mark.parametrize("out", ["", "x" * 300, "/dev/null", "/proc/version/sub"])
def test_capacity_bad_output_refused_before_any_run(tmp_path, out):
    """FAULT_CLASS output locations: an empty, too long, device or impossible --out: exit 2
    before the first run (no progress line), not exit 1 after the search."""
    o = cli("capacity", md1_scenario_file(tmp_path), "--slo", "ttft=0.1", "--out", out,
            cwd=tmp_path, timeout=30)
    assert "--out" in error_line(o, 2)
    assert "rate " not in o.err  # no run was made
    assert not any(tmp_path.glob("capacity*")) and not (tmp_path / "results").exists()


def test_capacity_one_search_per_folder(tmp_path):
    """FAULT_CLASS capacity output: a second search into a folder holding one is refused and
    leaves it as it was; --overwrite replaces it."""
    out = tmp_path / "cap"
    args = ("capacity", md1_scenario_file(tmp_path), "--slo", "ttft=0.1", "--duration", "20",
            "--reps-max", "3", "--tol", "0.5", "--out", out, "--quiet")
    assert cli(*args, cwd=tmp_path).rc == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    line = error_line(cli(*args, cwd=tmp_path), 2)
    assert "holds a capacity search" in line and "--overwrite" in line
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    o = cli(*args, "--overwrite", "--seed", "5", cwd=tmp_path)
    assert o.rc == 0, o
    assert strict_json(out / "capacity.json")["verdict"] == "found"
    # a sweep's folder, --overwrite or not: plot drew the search there instead of the sweep's
    # figures
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "sweep.json").write_text("{}")
    line = error_line(cli(*args[:-2], sweep, "--quiet", "--overwrite", cwd=tmp_path), 2)
    assert "holds a sweep's outputs (sweep.json)" in line
    assert [p.name for p in sweep.iterdir()] == ["sweep.json"]


def test_capacity_issue_example_counts_requests_and_extends(tmp_path):
    """FAULT_CLASS capacity correctness: the issue's example (runs of 20 s at rates that see a
    request or none) ends with a capacity, not 'no rate meets'; runs too short to count enough
    requests are extended and the output says so; every interval is inside [0, 1]."""
    out = tmp_path / "cap"
    o = cli("capacity", *ISSUE, "--slo", "ttft=2", "--out", out, cwd=tmp_path, timeout=120)
    assert o.rc == 0, o
    assert "extended" in o.err
    res = strict_json(out / "capacity.json")
    assert res["verdict"] == "found" and res["complete"] is True
    lo, hi = res["interval"]
    assert 0 < lo <= res["capacity_per_device_rps"] <= hi
    assert res["extended"] and all(e["duration_s"] > 20 for e in res["extended"])
    header, rows = read_csv(out / "capacity.csv")
    col = {name: i for i, name in enumerate(header)}
    for row in rows:
        a, b = float(row[col["ci95_lo"]]), float(row[col["ci95_hi"]])
        assert 0.0 <= a <= b <= 1.0
        assert int(row[col["requests"]]) > 0


def test_capacity_always_met_slo_stops_at_the_service_rate(tmp_path):
    """FAULT_CLASS capacity bounded upwards: an SLO that never binds (TTFT <= 1e9 s) on the
    M/D/1 scenario ends at the stability limit 1/D = 20 requests/s (a rate whose queue grows
    without bound fails), not at 10^5 requests/s after minutes."""
    out = tmp_path / "cap"
    o = cli("capacity", md1_scenario_file(tmp_path), "--slo", "ttft=1e9", "--duration", "50",
            "--tol", "0.1", "--out", out, "--quiet", cwd=tmp_path, timeout=120)
    assert o.rc == 0, o
    lo, hi = strict_json(out / "capacity.json")["interval"]
    # the instability is flagged once the queue outgrows 3 sqrt(arrivals): within 50 s that is
    # certain from rho = 1.25; below rho = 1 the queue is stable
    assert 0.5 / D <= lo and hi <= 2.5 / D and lo < hi


def test_capacity_unreachable_slo_bounded_downwards(tmp_path):
    """FAULT_CLASS capacity bounded downwards: an SLO below the service time itself (TTFT <=
    10 ms < D) fails at every rate: exit 1 with the verdict, the curve written, in bounded
    time (the runs at low rates are extended at most 100 x --duration)."""
    out = tmp_path / "cap"
    o = cli("capacity", md1_scenario_file(tmp_path), "--slo", "ttft=10ms", "--duration", "10",
            "--reps-max", "3", "--out", out, "--quiet", cwd=tmp_path, timeout=120)
    line = error_line(o, 1)
    assert "capacity is below" in line and "loosen the SLO" in line
    res = strict_json(out / "capacity.json")
    assert res["verdict"] == "below" and res["capacity_per_device_rps"] is None
    assert max(e["duration_s"] for e in res["extended"]) <= 1000.0


def _slow_search(tmp_path, out):
    # runs of 4000 simulated s: each takes a second or more of wall time
    return start("capacity", md1_scenario_file(tmp_path), "--slo", "ttft=0.1", "--duration", "4000",
                 "--out", out, cwd=tmp_path)


def _wait_line(p, timeout=60):
    """The first progress line (one rate decided): the search is between or inside runs."""
    deadline = time.monotonic() + timeout
    line = p.stderr.readline()
    assert line.startswith("rate ") and time.monotonic() < deadline, line
    return line


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_capacity_signal_stops_with_whole_files(tmp_path, sig):
    """FAULT_CLASS signals: SIGTERM / SIGINT / SIGHUP stop a capacity search: exit 128+N, a
    strict capacity.json with complete false and a whole capacity.csv of the rates so far."""
    out = tmp_path / "cap"
    p = _slow_search(tmp_path, out)
    _wait_line(p)
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + sig, err
    assert "Traceback" not in err and "interrupted" in err
    res = strict_json(out / "capacity.json")
    assert res["complete"] is False and res["verdict"] == "interrupted"
    header, rows = read_csv(out / "capacity.csv")
    assert len(rows) >= 1


def test_capacity_second_signal_stops_at_once(tmp_path):
    """FAULT_CLASS signals: a second signal right after the first: the process ends promptly
    with the status of the one delivered first (the kernel delivers pending signals lowest
    number first, so SIGHUP may overtake SIGTERM); whatever files exist are whole."""
    out = tmp_path / "cap"
    p = _slow_search(tmp_path, out)
    _wait_line(p)
    p.send_signal(signal.SIGTERM)
    p.send_signal(signal.SIGHUP)
    _, err = p.communicate(timeout=60)
    assert p.returncode in (128 + signal.SIGTERM, 128 + signal.SIGHUP), err
    assert "Traceback" not in err
    if (out / "capacity.json").exists():
        assert strict_json(out / "capacity.json")["complete"] is False
    if (out / "capacity.csv").exists():
        read_csv(out / "capacity.csv")
    assert not list(out.glob(".*.tmp"))


def test_capacity_inputs_checked_before_the_folder_is_made(tmp_path):
    """FAULT_CLASS a scenario the runs would refuse (5 MHz at 30 kHz: 11 PRBs, TS 38.101-1
    Table 5.3.2-1, for 200 devices): refused like `validate` before any run, and before the
    output folder is made (it was left behind empty)."""
    out = tmp_path / "cap"
    o = cli("capacity", md1_scenario_file(tmp_path), "--slo", "ttft=0.1", "--set",
            "link.model=mcs", "--set", "channel.bandwidth_mhz=5", "--set", "devices.count=200",
            "--out", out, cwd=tmp_path, timeout=60)
    line = error_line(o, 2)
    assert "link.subcarrier_spacing_khz" in line and "11 usable PRBs" in line, line
    assert "rate " not in o.err and not out.exists()
