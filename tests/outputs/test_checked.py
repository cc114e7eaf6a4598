"""Reading an output CSV back (``outputs.checked.read_csv``, used by ``report`` and ``plot``): the streaming check of its rows
finds the line a damaged file goes wrong on, whatever the chunks its bytes are read in, as the
csv module reading every row would."""
import csv

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from multispin_sim.outputs import checked as checks
from multispin_sim.outputs.checked import OutputError


def first_bad_line(path):
    """The reference: the csv module's line of the first row whose field count differs from
    the header's (None: every row has it)."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        width = len(next(reader))
        for row in reader:
            if len(row) != width:
                return reader.line_num
    return None


_field = st.sampled_from(["0", "1.5", "ul", "", "nan", "é"])
_row = st.lists(_field, min_size=1, max_size=5)


@settings(max_examples=200, deadline=None)
@given(st.lists(_row, min_size=1, max_size=30), st.integers(1, 40), st.booleans())
def test_field_counts_are_checked_at_every_chunk_boundary(tmp_path_factory, rows, chunk, quote):
    header = [f"c{j}" for j in range(3)]
    path = tmp_path_factory.mktemp("c") / "t.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n",
                            quoting=csv.QUOTE_ALL if quote else csv.QUOTE_MINIMAL)
        writer.writerows([header] + rows)
    want = first_bad_line(path)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(checks, "_CHUNK", chunk)
        if want is None:
            assert checks._check_rows(path) == header
        else:
            with pytest.raises(OutputError, match=rf"t\.csv:{want}: \d+ fields, the header has 3"):
                checks._check_rows(path)


@pytest.mark.parametrize("data, words", [
    (b"a,b\n1,2\n3,\xff\n", "t.csv:3: not UTF-8 (byte 0xff)"),
    (b"a,b\n1,2\n3,4", "t.csv:3: the last row has no line end"),
    (b"", "t.csv: empty"),
    (b"a,b\n1,2\n\n", "t.csv:3: 1 fields, the header has 2"),
])
def test_damaged_files_name_their_line(tmp_path, data, words):
    path = tmp_path / "t.csv"
    path.write_bytes(data)
    for chunk in (1, 3, 1 << 24):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(checks, "_CHUNK", chunk)
            with pytest.raises(OutputError, match=words.replace(".", r"\.").replace("(", r"\(")
                               .replace(")", r"\)")):
                checks._check_rows(path)
