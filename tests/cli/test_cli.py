"""The command line: validation errors (exit 2, nothing written), run outputs, interruption."""
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from multispin_sim.cli import main
from multispin_sim.outputs import read_table

ROOT = Path(__file__).resolve().parents[2]


def cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "multispin_sim", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_validate_prints_the_resolved_default(capsys):
    assert main(["validate"]) == 0
    out = capsys.readouterr().out
    for line in ("count: 20", "dl_power_ratio: 4.0", "verify_fixed_ms: 42.8", "effective_vocab: 1024",
                 "noise_psd_dbm_hz: -174.0", "rounds: 1000"):
        assert line in out


@pytest.mark.parametrize("setting, path", [
    ("devices.cuont=3", "devices.cuont"),
    ("devices.count=-3", "devices.count"),
    ("devices.acceptance.gsm8k=1.5", "devices.acceptance.gsm8k"),
    ("devices.distance_m=[500,100]", "devices.distance_m"),
    ("server.dl_power_dbm=20", None),  # fine alone: the ratio is then dropped
    ("policy.mode=best", "policy.mode"),
])
def test_bad_values_exit_2_with_one_line(tmp_path, setting, path):
    r = cli("run", "--set", setting, "--rounds", "5", "--quiet", cwd=tmp_path)
    if path is None:
        assert r.returncode == 0, r.stderr
        return
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}:"), r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "results").exists()


def test_both_dl_power_keys_in_a_file(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("server:\n  dl_power_dbm: 20\n  dl_power_ratio: 4\n")
    r = cli("run", str(f), cwd=tmp_path)
    assert r.returncode == 2 and "server" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "results").exists()


def test_run_never_overwrites(tmp_path):
    args = ("run", str(ROOT / "scenarios" / "default.yaml"), "--rounds", "20", "--set", "devices.count=3")
    assert cli(*args, "--quiet", cwd=tmp_path).returncode == 0
    assert cli(*args, "--quiet", cwd=tmp_path).returncode == 0
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["default-seed1", "default-seed1-2"]
    out = tmp_path / "mine"
    assert cli(*args, "--out", str(out), cwd=tmp_path).returncode == 0
    again = cli(*args, "--out", str(out), cwd=tmp_path)
    assert again.returncode == 2 and "not empty" in again.stderr
    a = (tmp_path / "results" / "default-seed1" / "device_rounds.csv").read_bytes()
    assert a == (out / "device_rounds.csv").read_bytes()


def test_ctrl_c_leaves_valid_partial_output(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "multispin_sim", "run", "--rounds", "100000000",
                             "--out", str(out), "--quiet"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # Ctrl-C as at a terminal, whatever started the tests
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 60
    while time.time() < deadline:
        f = out / "rounds.csv"
        if f.exists() and f.stat().st_size > 200_000:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is False
    rounds = read_table(out / "rounds.csv")
    assert summary["rounds"] == rounds["round"].size > 1000
    np.testing.assert_array_equal(rounds["round"], np.arange(rounds["round"].size))
    dr = read_table(out / "device_rounds.csv")
    assert dr["round"].size == 20 * summary["rounds"]
    assert summary["tokens"] == rounds["tokens"].sum() == dr["tokens"].sum()
    assert (out / "devices.csv").exists() and (out / "run.json").exists()


def test_run_prints_request_latency_and_warnings(tmp_path):
    r = cli("run", str(ROOT / "scenarios" / "overload.yaml"), "--rounds", "1500",
            "--set", "devices.count=4", "--set", "workload.rate_per_s=1.0", "--out", str(tmp_path / "o"),
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "requests:" in r.stdout and "latency median" in r.stdout
    assert "warning: queues grow without bound" in r.stderr
