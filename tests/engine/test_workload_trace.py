"""Arrival traces as users bring them (``engine/workload.py``): files written by spreadsheets
(a byte-order mark), quoted fields that span lines, and fields too large for the csv module.
Each is either read as the same arrivals as a plain file, or refused in one line that names
``workload.trace_file`` and the line where the fault begins."""
import subprocess
import sys

import numpy as np
import pytest

import multispin_sim as ms
from multispin_sim.engine.workload import TRACE_KEY, read_trace
from multispin_sim.scenario import ScenarioError

PLAIN = "time_s,device,tokens\n0.5,1,12\n0.1,0,30\n3.0,0,7\n"


def test_a_byte_order_mark_reads_as_the_plain_file(tmp_path):
    plain, marked = tmp_path / "plain.csv", tmp_path / "marked.csv"
    plain.write_text(PLAIN, encoding="utf-8")
    marked.write_text(PLAIN, encoding="utf-8-sig")   # what Excel's "CSV UTF-8" writes
    assert marked.read_bytes().startswith(b"\xef\xbb\xbf")
    for a, b in zip(read_trace(plain, 2), read_trace(marked, 2)):
        np.testing.assert_array_equal(a, b)


def _refused(path, k=2):
    with pytest.raises(ScenarioError) as info:
        read_trace(path, k)
    assert info.value.path == TRACE_KEY and "\n" not in str(info.value)
    return str(info.value)


def test_lines_are_physical_lines_when_a_quoted_field_spans_several(tmp_path):
    # the header is line 1, the quoted note of the first row spans lines 2-4, so the row with
    # device 7 (out of range for 2 devices) begins on line 5, and the unparsable one on line 6
    path = tmp_path / "t.csv"
    path.write_text('time_s,device,note\n0.5,0,"a\nb\nc"\n1.0,7,x\n')
    assert "line 5: '1.0,7,x' is out of range" in _refused(path)
    path.write_text('time_s,device,note\n0.5,0,"a\nb\nc"\n1.0,1,x\nsoon,0,y\n')
    assert "line 6: 'soon,0,y' is not valid" in _refused(path)


def test_a_field_over_the_csv_limit_is_refused_with_its_line(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("time_s,device\n0.5,0\n1.0," + "1" * 200_000 + "\n")
    message = _refused(path)
    assert "line 3" in message and "field larger than field limit" in message


@pytest.mark.parametrize("text, fragment", [
    ("time,device\n1,0\n", "columns"),
    ("time_s,device\n1,5\n", "out of range"),
    ("time_s,device\nx,0\n", "not valid"),
    ("time_s,device,tokens\n1,0,0\n", "out of range"),
])
def test_bad_trace_is_a_scenario_error(tmp_path, text, fragment):
    trace = tmp_path / "t.csv"
    trace.write_text(text)
    out = tmp_path / "out"
    with pytest.raises(ScenarioError) as info:
        ms.simulate(ms.load_scenario(None, overrides={
            "devices.count": 2, "workload.arrivals": "trace", "workload.trace_file": str(trace)}),
            out=out)
    assert info.value.path == "workload.trace_file" and fragment in str(info.value)
    assert not out.exists()  # nothing written


def test_bad_trace_exits_2_with_one_line(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("time_s,device\n1,9\n")
    proc = subprocess.run([sys.executable, "-m", "multispin_sim", "run", "--set", "devices.count=3",
                           "--set", "workload.arrivals=trace", "--set", f"workload.trace_file={trace}",
                           "--out", str(tmp_path / "o")], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "workload.trace_file" in proc.stderr


def test_a_row_quoted_from_a_file_changed_since_it_was_parsed_is_still_one_error(tmp_path):
    """A sweep parses a trace once: if the file changes before a later run finds a row out of
    range, the message quotes nothing rather than failing with a traceback."""
    from multispin_sim.engine.workload import _row_at

    path = tmp_path / "t.csv"
    path.write_text("time_s,device\n0.5,0\n")
    assert _row_at(path, 2) == ["0.5", "0"]
    assert _row_at(path, 9) == []
    path.unlink()
    assert _row_at(path, 2) == []
