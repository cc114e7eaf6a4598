"""Fault injection: values that scale memory or overflow, refused before any work with the key
that scales the memory (the method of tests/cli/test_faults.py)."""
import pytest

from test_faults import cli, error_line, scenario


@pytest.mark.parametrize("sections, key", [
    ({"acceptance": {"model": "beta", "session_tokens": 10**15}}, "acceptance.session_tokens"),
    ({"payload": {"model": "token", "vocab": 10**9}}, "payload.vocab"),
    ({"link": {"model": "mcs", "harq_max_transmissions": 10**12}}, "link.harq_max_transmissions"),
])
def test_limit_memory_counts_every_key(tmp_path, sections, key):
    """FAULT_CLASS limits: a key that scales memory is named, with advice about that key (not
    about devices and rounds), before anything is written."""
    out = tmp_path / "run"
    path = scenario(tmp_path, **sections)
    line = error_line(cli("run", path, "--out", out, "--quiet", cwd=tmp_path), 2)
    assert line.startswith(f"error: {path}: {key}:") and "fewer devices" not in line
    assert not out.exists()


def test_limit_max_time_overflow_runs(tmp_path):
    """FAULT_CLASS limits: run.max_time_s = 1e308 (the memory estimate divided it into an
    infinite number of rounds: OverflowError) runs its 30 rounds."""
    out = tmp_path / "run"
    o = cli("run", scenario(tmp_path, run={"rounds": 30, "max_time_s": 1e308}), "--out", out,
            "--quiet", cwd=tmp_path)
    assert o.rc == 0, o


@pytest.mark.parametrize("key, value", [
    ("payload.zipf_exponent", 1e308), ("link.implementation_gap_db", 1e308),
    ("channel.shadowing_db", 1e6), ("channel.bandwidth_mhz", 1e308),
    ("compute.thermal_resistance_c_per_w", 1e308), ("channel.doppler_hz", 1e308),
    # a power mode's own thermal resistance (it had no bound: NaN temperatures, no throttling)
    ("compute.power_modes.m.thermal_resistance_c_per_w", 1.7e308),
])
def test_limit_absurd_finite_values_refused(tmp_path, key, value):
    """FAULT_CLASS limits: absurd finite values that overflowed mid-run (internal error) or
    ended 'complete' with infinite delays, NaN gains or NaN temperatures: refused with the limit,
    which the key reference shows (the key's allowed interval)."""
    from multispin_sim.scenario.reference import reference_rows

    section, *names = key.split(".")
    sections = {section: {names[0]: value}} if len(names) == 1 else {
        section: {"power_modes": {"m": {names[-1]: value}}, "power_mode": "m", "thermal": True}}
    out = tmp_path / "run"
    path = scenario(tmp_path, **sections)
    line = error_line(cli("run", path, "--out", out, "--quiet", cwd=tmp_path), 2)
    assert line.startswith(f"error: {path}: {key}:") and "expected a number in " in line
    assert not out.exists()
    shown = {row[0]: row[1] for row in reference_rows()}
    bound = line.split("expected a number in ")[1].split(" or null")[0]
    assert bound in shown[key.replace(".m.", ".<name>.")]


@pytest.mark.parametrize("command", ["run", "capacity"])
def test_output_empty_out_refused(tmp_path, command):
    """FAULT_CLASS output locations: --out '' wrote into the current folder."""
    extra = ["--slo", "ttft=2", "--set", "workload.arrivals=poisson"] if command == "capacity" else []
    o = cli(command, *extra, "--out", "", cwd=tmp_path)
    assert "--out" in error_line(o, 2)
    assert list(tmp_path.iterdir()) == []
