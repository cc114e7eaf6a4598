"""A stop signal after the last round, while the run writes its outputs: the run is complete
(every round ran), its files are those of a run without the signal, and the signal is still
honoured (``Result.stop_signal``: exit 128 + N, a sweep stops after the run). A signal in the
rounds still stops the run (``complete: false``, the signal named in ``stop_reason``).

The signal is delivered by calling the handler installed for SIGTERM at that moment (the run's
own, ``engine.guards.StopSignals``), as a real SIGTERM would at that point: deterministic, and
independent of how the test process was started (CI ignores SIGINT in its background job)."""
import json
import signal

import pytest

import multispin_sim as ms
from multispin_sim import errors
from multispin_sim.cli import main
from multispin_sim.outputs.recorder import Recorder

SMALL = {"devices.count": 4, "run.rounds": 300, "seed": 5}
CELLS = {"cells.layout": "hex", "cells.count": 7, "devices.count": 14, "run.rounds": 10,
         "seed": 5}
RECORDS = ("rounds.csv", "device_rounds.csv", "devices.csv")
WALL_CLOCK = ("wall_time_s", "rounds_per_s")

pytestmark = pytest.mark.skipif(signal.SIGTERM in errors.IGNORED_AT_START,
                                reason="SIGTERM ignored by this process from its start")


@pytest.fixture(autouse=True)
def _received():
    """The signals the handlers record (``errors.RECEIVED``) are this test's only."""
    n = len(errors.RECEIVED)
    yield
    del errors.RECEIVED[n:]


def _sigterm(times=1):
    handler = signal.getsignal(signal.SIGTERM)
    assert callable(handler), handler
    for _ in range(times):
        handler(signal.SIGTERM, None)


def _signal_at_close(monkeypatch, at=1, times=1):
    """A SIGTERM as the ``at``-th recorder is closed (the first step of writing the outputs)."""
    original = Recorder.close
    calls = []

    def close(self):
        calls.append(1)
        if len(calls) == at:
            _sigterm(times)
        return original(self)

    monkeypatch.setattr(Recorder, "close", close)
    return calls


def _simulate(overrides, out):
    return ms.simulate(ms.load_scenario(None, overrides=overrides), out=out)


def _plain_summary(folder):
    summary = json.loads((folder / "summary.json").read_text())
    for key in WALL_CLOCK:
        summary.pop(key, None)
    return summary


@pytest.mark.parametrize("times", [1, 2])
def test_a_signal_while_the_outputs_are_written_leaves_the_run_complete(tmp_path, monkeypatch,
                                                                        times):
    """Run.finish decided ``complete`` after closing the records, so the signal made a run
    whose every round ran "complete": false, stop_reason "stopped" (no signal named). A second
    signal then waits for the outputs too."""
    reference = _simulate(SMALL, tmp_path / "ref")
    _signal_at_close(monkeypatch, times=times)
    late = _simulate(SMALL, tmp_path / "late")
    assert late.complete and late.stop_signal == signal.SIGTERM
    assert "stop_reason" not in late.summary
    assert json.loads((late.folder / "run.json").read_text())["complete"] is True
    for name in RECORDS:
        assert (late.folder / name).read_bytes() == (reference.folder / name).read_bytes(), name
    assert _plain_summary(late.folder) == _plain_summary(reference.folder)


def test_a_signal_in_the_last_round_still_stops_the_run(tmp_path, monkeypatch):
    """The boundary: a signal before the loop has ended (here in the last round) stops the run
    as before: complete false, stop_reason naming the signal."""
    from multispin_sim.engine.server import EdgeServer

    real = EdgeServer.outcomes
    calls = []

    def outcomes(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == SMALL["run.rounds"]:
            _sigterm()
        return real(self, *args, **kwargs)

    monkeypatch.setattr(EdgeServer, "outcomes", outcomes)
    monkeypatch.setattr(EdgeServer, "steady_outcomes", lambda self: None)
    result = _simulate(SMALL, tmp_path / "x")
    assert not result.complete and result.summary["stop_reason"] == "stopped by SIGTERM"
    assert result.summary["rounds"] == SMALL["run.rounds"]


def test_a_signal_while_a_network_writes_its_cells_leaves_every_cell_complete(tmp_path,
                                                                              monkeypatch):
    """Several cells: the cells written before the signal said complete true, the later ones
    false, and the network false."""
    calls = _signal_at_close(monkeypatch, at=4)
    result = _simulate(CELLS, tmp_path / "net")
    assert len(calls) == 7 and result.complete and result.stop_signal == signal.SIGTERM
    assert "stop_reason" not in result.summary
    for cell in result.folder.glob("cell_*"):
        assert json.loads((cell / "summary.json").read_text())["complete"] is True, cell.name
        assert json.loads((cell / "run.json").read_text())["complete"] is True, cell.name
    assert json.loads((result.folder / "run.json").read_text())["complete"] is True


def test_the_run_command_still_stops_with_the_signal(tmp_path, monkeypatch, capsys):
    """``multispin-sim run``: the run is complete, and the signal gives the exit status."""
    _signal_at_close(monkeypatch)
    args = [a for key, value in SMALL.items() for a in ("--set", f"{key}={value}")]
    rc = main(["run", *args, "--quiet", "--out", str(tmp_path / "run")])
    assert rc == 128 + signal.SIGTERM
    assert "complete" in capsys.readouterr().err
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["complete"] is True
