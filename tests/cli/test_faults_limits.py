"""Fault injection: values that scale memory or overflow, refused before any work with the key
that scales the memory (the method of tests/test_faults.py)."""
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
    o = cli("run", scenario(tmp_path, **sections), "--out", out, "--quiet", cwd=tmp_path)
    line = error_line(o, 2)
    assert line.startswith(f"error: {key}:") and "fewer devices" not in line
    assert not out.exists()


def test_limit_max_time_overflow_runs(tmp_path):
    """FAULT_CLASS limits: run.max_time_s = 1e308 (the memory estimate divided it into an
    infinite number of rounds: OverflowError) runs its 30 rounds."""
    out = tmp_path / "run"
    o = cli("run", scenario(tmp_path, run={"rounds": 30, "max_time_s": 1e308}), "--out", out,
            "--quiet", cwd=tmp_path)
    assert o.rc == 0, o
