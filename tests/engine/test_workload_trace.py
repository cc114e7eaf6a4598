"""Arrival traces as users bring them (``engine/workload.py``): files written by spreadsheets
(a byte-order mark), quoted fields that span lines, and fields too large for the csv module.
Each is either read as the same arrivals as a plain file, or refused in one line that names
``workload.trace_file`` and the line where the fault begins."""
import numpy as np
import pytest

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
