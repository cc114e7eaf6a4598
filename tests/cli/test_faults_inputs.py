"""Fault injection: files users bring (agreement traces, verification tables) and the options of
``acceptance fit``, through the real CLI in subprocesses (the method of tests/cli/test_faults.py).
Every case: exit 2, one ``error: what: why; what to do`` line naming the file (and line), no
"internal error", nothing written."""
import gzip
import json

import pytest

from test_faults import cli, error_line, scenario, write_yaml


def _corrupt_gzip(path):
    good = gzip.compress(b'{"accept_lengths": [1, 2, 3]}\n' * 50)
    path.write_bytes(good[:12] + b"\x00garbage-deflate-data" + good[-8:])


TRACES = {
    "corrupt-deflate.jsonl.gz": (_corrupt_gzip, "gzip"),
    "step-1e30.jsonl": (lambda p: p.write_text(json.dumps({"accept_lengths": [10**30]}) + "\n"),
                        ":1: a step of"),
    "step-1e12.jsonl": (lambda p: p.write_text(json.dumps({"accept_lengths": [10**12]}) + "\n"),
                        ":1: a step of"),
    "field-140k.csv": (lambda p: p.write_text("agree,answer\n1," + "x" * 140_000 + "\n"),
                       ":2: field larger"),
    "unterminated.csv": (lambda p: p.write_text('agree,answer\n1,"a\n0,b\n1,c\n'),
                         "unexpected end of data"),
    "all-ones.csv": (lambda p: p.write_text("agree\n" + "1\n" * 50), "both 1s and 0s"),
    "all-zeros.csv": (lambda p: p.write_text("agree\n" + "0\n" * 50), "both 1s and 0s"),
    "one-position.csv": (lambda p: p.write_text("agree\n1\n"), "1 known position"),
}


@pytest.mark.parametrize("name", sorted(TRACES))
def test_input_acceptance_fit_trace_refused(tmp_path, name):
    """FAULT_CLASS files users bring: a damaged or unfittable trace: the file, the line where
    there is one, what is expected."""
    make, expected = TRACES[name]
    make(tmp_path / name)
    out = tmp_path / "fit.yaml"
    o = cli("acceptance", "fit", tmp_path / name, "--out", out, cwd=tmp_path, timeout=60)
    line = error_line(o, 2)
    assert name in line and expected in line and "internal error" not in line
    assert "Warning" not in o.err and not out.exists()


@pytest.mark.parametrize("args, key", [(["--seed", "-1"], "--seed"), (["--out", ""], "--out"),
                                       (["--out", "missing/dir/fit.yaml"], "--out"),
                                       (["--draws", "0"], "--draws"),
                                       (["--draws", "many"], "--draws")])
def test_input_acceptance_fit_options_refused_before_the_fit(tmp_path, args, key):
    """FAULT_CLASS output locations: checked before the fit (exit 2, no table printed)."""
    (tmp_path / "ok.csv").write_text("agree\n" + "1\n0\n1\n1\n0\n" * 20)
    o = cli("acceptance", "fit", tmp_path / "ok.csv", *args, cwd=tmp_path, timeout=60)
    assert key in error_line(o, 2)
    assert "E[A+1]" not in o.out


def test_acceptance_fit_help_gives_the_formats_and_debug_the_traceback(tmp_path):
    """The refusal of a bad trace sends to --help 'for the formats': the help describes them;
    --debug shows the refusal's traceback, as for every other error."""
    o = cli("acceptance", "fit", "--help", cwd=tmp_path, timeout=60)
    assert o.rc == 0 and "accept_lengths" in o.out and "agree" in o.out
    (tmp_path / "bad.jsonl").write_text("not json\n")
    o = cli("acceptance", "fit", tmp_path / "bad.jsonl", "--debug", cwd=tmp_path, timeout=60)
    assert o.rc == 2 and "Traceback" in o.err and "TraceError" in o.err
    assert o.err.rstrip().splitlines()[-1].startswith("error: ")


def test_input_acceptance_fit_by_category_with_an_unfittable_category(tmp_path):
    """FAULT_CLASS files users bring: with --by category, a category of only agreements is
    named (the whole trace is fittable), before any table is printed."""
    rows = ["agree,answer,category"] + ["1,a,easy"] * 30 + ["0,b,mixed", "1,b,mixed"] * 30
    (tmp_path / "cats.csv").write_text("\n".join(rows) + "\n")
    o = cli("acceptance", "fit", tmp_path / "cats.csv", "--by", "category", cwd=tmp_path,
            timeout=60)
    line = error_line(o, 2)
    assert "category easy" in line and "both 1s and 0s" in line
    assert "E[A+1]" not in o.out


TABLES = {
    "latin1": ("tokens,ms\n1,40\n100,5\u00e9\n".encode("latin-1"), "not UTF-8"),
    "zero-times": (b"tokens,ms\n1,0\n100,0\n", "expected milliseconds > 0"),
    "falling-tail": (b"tokens,ms\n1,40\n2,5\n", "last two rows decrease"),
    "unterminated": (b'tokens,ms\n1,"40\n2,50\n', "unexpected end of data"),
    "absurd-tokens": (b"tokens,ms\n1,40\n1e300,50\n", "line 3: batched tokens 1e300 out of range"),
    "absurd-time": (b"tokens,ms\n1,40\n100,1e12\n", "line 3: time 1e12 ms is more than a minute"),
}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_input_verification_table_refused(tmp_path, name):
    """FAULT_CLASS files users bring: a verification table that is not UTF-8, whose times are
    zero (rounds of zero duration with draft length 0) or fall below zero when extrapolated."""
    data, expected = TABLES[name]
    (tmp_path / "t.csv").write_bytes(data)
    sc = scenario(tmp_path, server={"verify_model": "table", "verify_table": str(tmp_path / "t.csv")},
                  policy={"draft_length": 0})
    out = tmp_path / "run"
    o = cli("run", sc, "--out", out, "--quiet", cwd=tmp_path, timeout=60)
    line = error_line(o, 2)
    assert expected in line and "internal error" not in line
    assert not out.exists()


def test_input_a_bad_key_names_the_file_it_is_in_unless_set_on_the_command_line(tmp_path):
    """FAULT_CLASS a bad key in a scenario file: the line names the file before the key path; a
    bad value given by ``--set`` is not blamed on the file."""
    path = scenario(tmp_path, devices={"count": -3})
    line = error_line(cli("run", path, "--out", tmp_path / "o", cwd=tmp_path), 2)
    assert line.startswith(f"error: {path}: devices.count: -3 is not allowed"), line
    good = scenario(tmp_path)
    line = error_line(cli("run", good, "--set", "devices.count=0", "--out", tmp_path / "o",
                          cwd=tmp_path), 2)
    assert line.startswith("error: devices.count: 0 is not allowed"), line
    assert not (tmp_path / "o").exists()


def test_input_a_sweep_cell_whose_trace_lacks_its_devices_is_refused_before_any_run(tmp_path):
    """FAULT_CLASS files users bring, in a sweep: a trace whose device 50 exists with 60
    devices but not with 20: the sweep ran cell 0, then failed (exit 1); now exit 2 naming
    the file, the line and the cell, no output folder."""
    (tmp_path / "tr.csv").write_text("time_s,device\n0.5,50\n")
    sweep = write_yaml(tmp_path / "trc.yaml", {
        "name": "trc", "base": {"run": {"rounds": 5},
                                "workload": {"arrivals": "trace", "trace_file": "tr.csv"}},
        "sweep": {"grid": {"devices.count": [60, 20]}}})
    out = tmp_path / "o_trc"
    line = error_line(cli("sweep", sweep, "--out", out, "--executor", "serial", cwd=tmp_path), 2)
    assert "workload.trace_file" in line and "line 2" in line, line
    assert "(in sweep cell 1: devices.count=20)" in line, line
    assert not out.exists()


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("key", ["sweep.grid", "sweep"])
def test_input_a_set_of_the_sweep_section_says_it_belongs_to_sweep_files(tmp_path, command, key):
    """FAULT_CLASS --set of a sweep file's key on a scenario command: the file loader says a
    file with a 'sweep' section is a sweep file; --set says the same, not 'unknown key; did
    you mean seed?'."""
    out = tmp_path / "o"
    args = [command, scenario(tmp_path), "--set", f"{key}=1"]
    line = error_line(cli(*args, *(["--out", out] if command == "run" else []), cwd=tmp_path), 2)
    assert line.startswith(f"error: {key}: a key of sweep files"), line
    assert "multispin-sim sweep" in line and "did you mean" not in line, line
    assert not out.exists()
