"""Which file an error blames: the scenario file only where the file is at fault. A key given by
an override (``--set``), a key below one (``--set devices.overrides.20.alpha=...`` against an
error at ``devices.overrides.20``), or a check a ``--set`` triggers on a key the file does not
write is not the file's doing; a key the file writes wrongly, or a file that is wrong on its
own, is."""
import pytest

from multispin_sim.engine.simulation import read_inputs
from multispin_sim.scenario import ScenarioError, load_scenario


@pytest.fixture
def file(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("devices:\n  count: 4\nrun:\n  rounds: 10\n")
    return str(path)


def _error(source, overrides=None, later=False):
    with pytest.raises(ScenarioError) as info:
        sc = load_scenario(source, overrides)
        if later:
            read_inputs(sc)
    return info.value


def test_an_override_below_the_error_path_is_not_the_files_fault(file):
    err = _error(file, ["devices.overrides.20.alpha=0.5"])
    assert err.path.startswith("devices.overrides") and err.source is None


def test_a_cross_check_an_override_triggers_on_a_key_the_file_does_not_write(file):
    err = _error(file, ["payload.vocab=2"])
    assert err.path == "payload.effective_vocab" and err.source is None


def test_a_model_check_an_override_triggers_is_not_the_files_fault(file):
    err = _error(file, ["link.model=mcs", "channel.bandwidth_mhz=5", "devices.count=200"],
                 later=True)
    assert err.source is None, err


def test_the_file_is_named_where_it_is_wrong_on_its_own(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("payload:\n  vocab: 2\n")      # effective_vocab's default is larger
    assert _error(str(path), ["run.rounds=5"]).source == str(path)
    path.write_text("devices:\n  count: -3\n")
    assert _error(str(path), ["run.rounds=5"]).source == str(path)
    path.write_text("link:\n  model: mcs\nchannel:\n  bandwidth_mhz: 5\ndevices:\n  count: 200\n")
    assert _error(str(path), ["run.rounds=5"], later=True).source == str(path)


def test_a_file_wrong_on_its_own_is_named_when_an_override_sets_a_key_below_the_error(tmp_path):
    path = tmp_path / "both.yaml"     # both DL powers: refused at the section 'server'
    path.write_text("server:\n  dl_power_dbm: 16\n  dl_power_ratio: 4\n")
    err = _error(str(path), ["server.antennas=4"])
    assert err.path == "server" and err.source == str(path)
