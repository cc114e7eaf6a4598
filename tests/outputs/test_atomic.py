"""outputs/atomic.py: a file is replaced whole or not at all, whatever stops the writer."""
import json
import math

import pytest

from multispin_sim.outputs.atomic import replacing, write_json, write_text


def test_replacing_keeps_the_old_file_when_the_writer_fails(tmp_path):
    target = tmp_path / "figure.png"
    target.write_bytes(b"old")
    for exc in (RuntimeError, KeyboardInterrupt):  # an error, or a stop signal mid-write
        with pytest.raises(exc):
            with replacing(target) as tmp:
                tmp.write_bytes(b"half of a new")
                raise exc
        assert target.read_bytes() == b"old"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["figure.png"]


def test_replacing_keeps_the_suffix_for_writers_that_infer_the_format(tmp_path):
    with replacing(tmp_path / "a.csv") as tmp:
        assert tmp.suffix == ".csv" and tmp.parent == tmp_path and tmp.name.startswith(".")
        tmp.write_text("x\n")
    assert (tmp_path / "a.csv").read_text() == "x\n"


def test_write_json_is_strict(tmp_path):
    write_json(tmp_path / "s.json", {"ci": [math.nan, math.inf], "n": 3})
    assert json.loads((tmp_path / "s.json").read_text()) == {"ci": [None, None], "n": 3}
    write_text(tmp_path / "s.json", "{}\n")
    assert (tmp_path / "s.json").read_text() == "{}\n"
