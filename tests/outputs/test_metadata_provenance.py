"""run.json says what made a run: the command line only where one made it (null through the
Python API, where the host process's arguments would not reproduce the run), and a sha256 of
the package's source, which tells two states of the code apart where the version does not; and
the CPU features numpy's kernels use."""
import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import multispin_sim as ms
from multispin_sim.cli import main
from multispin_sim.outputs import metadata

SMALL = ["--set", "devices.count=2", "--rounds", "3", "--seed", "4", "--quiet"]


def _meta(folder):
    return json.loads((folder / "run.json").read_text())


def test_a_run_through_the_api_records_no_command_line(tmp_path):
    result = ms.simulate(ms.load_scenario(None, overrides={"devices.count": 2, "run.rounds": 3}),
                         out=tmp_path / "api")
    assert _meta(result.folder)["command_line"] is None


def test_the_command_records_its_own_arguments_not_the_host_process(tmp_path):
    out = tmp_path / "cli"
    assert main(["run", *SMALL, "--out", str(out)]) == 0
    assert _meta(out)["command_line"] == ["multispin-sim", "run", *SMALL, "--out", str(out)]


def test_code_sha256_is_the_hash_of_the_package_source(tmp_path):
    out = tmp_path / "cli"
    assert main(["run", *SMALL, "--out", str(out)]) == 0
    # recomputed here from the files themselves: relative path, NUL, content, NUL, in order
    h = hashlib.sha256()
    for path in metadata._source_files():
        h.update(path.relative_to(metadata.PACKAGE).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    assert _meta(out)["code_sha256"] == h.hexdigest()
    assert {p.relative_to(metadata.PACKAGE).as_posix()
            for p in metadata.PACKAGE.rglob("*.py") if "__pycache__" not in p.parts} <= {
        p.relative_to(metadata.PACKAGE).as_posix() for p in metadata._source_files()}


def test_the_command_reads_as_typed_however_it_was_started(tmp_path, monkeypatch):
    """``python -m multispin_sim run ...`` has __main__.py's path in sys.argv[0]: the record is
    the command a user types again."""
    out = tmp_path / "m"
    monkeypatch.setattr("sys.argv", ["/somewhere/multispin_sim/__main__.py", "run", *SMALL,
                                     "--out", str(out)])
    assert main() == 0
    assert _meta(out)["command_line"] == ["multispin-sim", "run", *SMALL, "--out", str(out)]


def test_numba_allowed_says_whether_the_switch_kept_the_compiled_twins_off(tmp_path, monkeypatch):
    for value, allowed in (("0", False), ("1", True)):
        monkeypatch.setenv("MULTISPIN_NUMBA", value)
        out = tmp_path / value
        assert main(["run", *SMALL, "--out", str(out)]) == 0
        assert _meta(out)["numba_allowed"] is allowed


def test_a_capacity_search_records_the_code_that_made_it(capacity_folder):
    made = json.loads((capacity_folder / "capacity.json").read_text())["made_with"]
    assert made["code_sha256"] == metadata.code_fingerprint()
    assert made["packages"]["numpy"] and made["multispin_sim_version"]


def test_numpy_simd_names_the_cpu_features_numpy_dispatches_to(tmp_path):
    """The same bytes need the same CPU features: run.json lists numpy's baseline and the
    extensions found at run time, and switching those off (``NPY_DISABLE_CPU_FEATURES``, numpy's
    own switch) leaves the baseline alone."""
    out = tmp_path / "native"
    assert main(["run", *SMALL, "--out", str(out)]) == 0
    simd = _meta(out)["numpy_simd"]
    config = np.show_config(mode="dicts")["SIMD Extensions"]
    assert simd[:len(config["baseline"])] == config["baseline"]
    found = simd[len(config["baseline"]):]
    if not found:
        pytest.skip("numpy found no SIMD extension beyond its baseline on this CPU")
    plain = tmp_path / "baseline"
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": " ".join(found)}
    subprocess.run([sys.executable, "-m", "multispin_sim", "run", *SMALL, "--out", str(plain)],
                   env=env, check=True, capture_output=True)
    assert _meta(plain)["numpy_simd"] == config["baseline"]
