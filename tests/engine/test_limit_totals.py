"""A run stopped mid-round reports the rounds it recorded, nothing of the round it cut short.

A limit (``LimitReached``: here ``limits.max_blocks_per_transmission`` on the NR link) or a
second stop signal ends a run in the middle of a round, after its outcomes were drawn and some
of its corrections sent, before the round was recorded (engine/guards.py). Every total of the
outputs must then describe the recorded rounds (docs/guide/outputs.md): devices.csv's agreed and
verified positions and summary.json's ``acceptance`` are the sums over device_rounds.csv
(accepted drafts, plus one disagreement per rejection), ``link.corrections`` and
``delays.transmissions`` its corrections, ``link``'s HARQ totals its HARQ columns, and
``deferred`` its deferrals (a rejection not corrected in its round) and those still pending.
"""
import io
import json
import os
import signal

import numpy as np
import pytest

import multispin_sim as ms
from multispin_sim.engine import link as engine_link
from multispin_sim.errors import IGNORED_AT_START, RECEIVED, report
from multispin_sim.outputs.recorder import Recorder
from multispin_sim.outputs.records import read_table

# 3 devices at 500 m on the NR link: a correction needs more than 4 fading blocks in round 55
LIMITED = {"devices.count": 3, "devices.distance_m": 500, "run.rounds": 100,
           "link.model": "mcs", "limits.max_blocks_per_transmission": 4, "seed": 5}
# 2 devices at 2 km: the first round's first correction already needs more than 10 blocks
AT_ONCE = {"devices.count": 2, "devices.distance_m": 2000, "run.rounds": 10,
           "link.model": "mcs", "limits.max_blocks_per_transmission": 10, "seed": 1}

STOPPED = {
    "mid-run": (LIMITED, (1, 99)),
    "before-any-round": (AT_ONCE, (0, 0)),
    "deadline": ({**LIMITED, "policy.mode": "deadline"}, (1, 99)),
    "asynchronous": ({**LIMITED, "devices.count": 6, "serving.protocol": "asynchronous"},
                     (1, 99)),
    "asynchronous-pre-draft": ({**LIMITED, "devices.count": 8, "serving.protocol": "asynchronous",
                               "serving.pre_draft": True, "serving.batching": "window",
                               "serving.window_ms": 20, "seed": 2}, (1, 99)),
    "coherence-time": ({**LIMITED, "devices.count": 6, "seed": 2,
                        "channel.coherence_time_ms": 5, "policy.mode": "deadline"}, (1, 99)),
    "shannon-grid": ({**LIMITED, "devices.count": 6, "devices.distance_m": 1500, "seed": 2,
                      "link.model": "shannon", "channel.coherence_time_ms": 1,
                      "limits.max_blocks_per_transmission": 16}, (1, 99)),
    "token-payload": ({**LIMITED, "payload.model": "token", "payload.vocab": 64,
                       "payload.effective_vocab": 8}, (1, 99)),
    "token-fidelity": ({**LIMITED, "devices.count": 6, "payload.model": "token",
                        "payload.vocab": 64, "payload.effective_vocab": 8,
                        "payload.menu": [4, "dense"], "policy.mode": "fidelity"}, (1, 99)),
}


def assert_totals_match_records(res):
    """Every total of summary.json and devices.csv equals what the record tables imply."""
    s, d, dev = res.summary, res.device_rounds, res.devices
    k = dev["device"].size

    def per_device(x):
        return np.bincount(d["device"], weights=np.asarray(x, float),
                           minlength=k).astype(np.int64)

    agreed = per_device(d["accepted"])
    verified = agreed + per_device(d["rejected"])
    np.testing.assert_array_equal(dev["agreed_positions"], agreed)
    np.testing.assert_array_equal(dev["verified_positions"], verified)
    with np.errstate(invalid="ignore", divide="ignore"):
        np.testing.assert_array_equal(dev["agreement_rate"],
                                      np.where(verified > 0, agreed / verified, np.nan))
    acceptance = s["acceptance"]
    assert acceptance["verified_positions"] == int(verified.sum())
    assert acceptance["realised_agreement_rate"] == (
        agreed.sum() / verified.sum() if verified.sum() else None)

    n = d["device"].size
    mode = d["mode"] if n else np.zeros(0, dtype=str)
    corrected = mode != ""
    rejected = d["rejected"] == 1
    assert s["rejections"] == int(np.count_nonzero(rejected))
    assert s["ul_corrections"] + s["dl_corrections"] == int(np.count_nonzero(corrected))
    if "link" in s:
        assert s["link"]["corrections"] == int(np.count_nonzero(corrected))
        for name in ("harq_transmissions", "harq_failures", "outages"):
            if name in s["link"]:
                assert s["link"][name] == int(d[name].sum()), name
    if "delays" in s:
        delays = s["delays"]
        assert delays["transmissions"] == int(np.count_nonzero(corrected))
        assert delays["over_several_blocks"] <= delays["transmissions"]
    if "deferred" in s:
        assert s["deferred"]["corrections"] == int(np.count_nonzero(rejected & ~corrected))
        assert s["deferred"]["pending_at_end"] == s["rejections"] - int(
            np.count_nonzero(corrected))
    if "asynchronous" in s:
        # the batch totals: those of the recorded batches (rounds.csv's rows)
        block, rounds = s["asynchronous"], res.rounds
        assert block["batches"] == rounds["round"].size
        assert block["mean_batch_size"] == pytest.approx(
            rounds["batch_size"].mean() if rounds["round"].size else 0.0, rel=1e-12)
        assert block["server_busy_s"] == pytest.approx(rounds["verify_s"].sum(), rel=1e-12)
        assert block["correction_phases"] == int(np.count_nonzero(rounds["n_rejected"] > 0))
    if s.get("payload", {}).get("model") == "token":
        # corrections.csv and the payload section: the recorded rounds' corrections, each in
        # the round device_rounds.csv has it in, and their verified positions
        payload, rows = s["payload"], read_table(res.folder / "corrections.csv")
        sent = sorted(zip(d["round"][corrected].tolist(), d["device"][corrected].tolist()))
        assert sorted(zip(rows["round"].tolist(), rows["device"].tolist())) == sent
        assert payload["corrections"] == len(sent)
        assert sum(payload["dl_by_format"].values()) == int(np.count_nonzero(mode == "dl"))
        assert payload["positions"] == int(verified.sum())
        assert payload["mean_bits"] == pytest.approx(rows["bits"].mean() if len(sent) else 0.0,
                                                     rel=1e-12)


@pytest.mark.parametrize("name", sorted(STOPPED))
def test_a_run_stopped_by_a_limit_reports_its_recorded_rounds(name):
    overrides, (lo, hi) = STOPPED[name]
    res = ms.simulate(ms.load_scenario(None, overrides=overrides))
    s = res.summary
    assert s["complete"] is False
    assert "limits.max_blocks_per_transmission" in s["stop_reason"]
    assert lo <= s["rounds"] <= hi, s["rounds"]   # the settings still stop where they did
    assert s["rounds"] == res.rounds["round"].size
    assert_totals_match_records(res)


def test_a_complete_run_reports_the_same_totals():
    res = ms.simulate(ms.load_scenario(None, overrides={**LIMITED, "seed": 6,
                                                        "policy.mode": "deadline"}))
    assert res.summary["complete"] is True
    assert_totals_match_records(res)


# the stop signal these tests send themselves: SIGTERM, which a shell's background job does not
# ignore (it ignores SIGINT, and a signal ignored at the start stays ignored in a run)
STOP = signal.SIGTERM
needs_stop = pytest.mark.skipif(STOP in IGNORED_AT_START,
                                reason="SIGTERM ignored by this process from its start")


@pytest.fixture
def received():
    """Leave ``errors.RECEIVED`` (the signals a process received) as it was."""
    saved = list(RECEIVED)
    yield
    RECEIVED[:] = saved


CELLS = {"cells.layout": "hex", "cells.count": 7, "cells.isd_m": 500, "devices.count": 14}


@needs_stop
@pytest.mark.parametrize("overrides", [{}, {"link.model": "mcs"}, CELLS],
                         ids=["paper", "nr-link", "cells"])
def test_a_run_stopped_mid_round_by_a_second_signal_reports_its_recorded_rounds(
        monkeypatch, received, overrides):
    """Two SIGTERMs when device 0's draft of round 5 is verified (the second stops the run at
    once, in the middle of the round: engine/guards.py StopSignals). Several cells: in round 5
    of the first cell, the other cells' rounds under way too."""
    from multispin_sim.engine import device as engine_device

    real_run = engine_device.Device.run
    state = {"rounds": 0}

    def interrupting_run(self, env):
        # device 0 (of the first cell) sends the two signals when its draft of round 5 is
        # verified: the server has drawn the round's outcomes, the round is not recorded
        loop = self.loop
        gen = real_run(self, env)
        value = None
        while True:
            try:
                event = gen.send(value)
            except StopIteration:
                return
            verified = event is loop.verified   # the loop puts a new event in its place
            value = yield event
            if self.index == 0 and verified and state.setdefault("loop", loop) is loop:
                state["rounds"] += 1
                if state["rounds"] == 6:
                    os.kill(os.getpid(), STOP)
                    os.kill(os.getpid(), STOP)

    monkeypatch.setattr(engine_device.Device, "run", interrupting_run)
    sc = ms.load_scenario(None, overrides={"devices.count": 4, "run.rounds": 20,
                                           "policy.draft_length": 6, **overrides})
    res = ms.simulate(sc)
    s = res.summary
    assert s["complete"] is False
    assert "twice" in s["stop_reason"]
    if overrides is not CELLS:
        assert s["rounds"] == 5
        assert_totals_match_records(res)
        return
    assert s["rounds"] > 0
    for cell in res.cells:
        assert_totals_match_records(cell)
    assert s["interference"]["transmissions"] == s["ul_corrections"] + s["dl_corrections"]


@needs_stop
def test_the_nr_link_counts_of_a_cut_round_are_taken_back(monkeypatch, received):
    """A second signal right after a correction of round 3 was delivered (its HARQ
    transmissions counted, the round not recorded): the link block has only the recorded
    rounds' corrections."""
    real = engine_link.LinkChannel.transmit
    state = {"sent": 0}

    def transmit(self, env, device, mode, power_w, bandwidth_hz, planned_s, index=None):
        delay = yield from real(self, env, device, mode, power_w, bandwidth_hz, planned_s, index)
        state["sent"] += 1
        if state["sent"] == state["stop_at"]:
            os.kill(os.getpid(), STOP)
            os.kill(os.getpid(), STOP)
        return delay

    overrides = {"devices.count": 4, "run.rounds": 20, "policy.draft_length": 6,
                 "link.model": "mcs", "channel.coherence_time_ms": 5}
    full = ms.simulate(ms.load_scenario(None, overrides={**overrides, "run.rounds": 3}))
    state["stop_at"] = full.summary["link"]["corrections"] + 1  # round 3's first correction
    monkeypatch.setattr(engine_link.LinkChannel, "transmit", transmit)
    res = ms.simulate(ms.load_scenario(None, overrides=overrides))
    s = res.summary
    assert s["complete"] is False and s["rounds"] == 3
    assert s["link"] == full.summary["link"]
    assert s["delays"]["transmissions"] == full.summary["delays"]["transmissions"]
    assert s["delays"]["over_several_blocks"] == full.summary["delays"]["over_several_blocks"]
    assert s["acceptance"] == full.summary["acceptance"]
    assert_totals_match_records(res)


class Fault(RuntimeError):
    """Stands for a bug met in the middle of a run."""


@pytest.mark.parametrize("overrides", [{}, CELLS], ids=["one-cell", "seven-cells"])
def test_a_fault_mid_run_keeps_the_recorded_rounds(monkeypatch, tmp_path, overrides):
    """A fault as the 4th round of the run ends, before it is recorded: the error reaches the
    caller, and the folder holds the rounds recorded before it as a stopped run's (complete:
    false, the error as the reason, each table whole)."""
    base = {"devices.count": 4, "run.rounds": 20, **overrides}
    real, state = Recorder.round, {"rounds": 0}

    def record(self, *args):
        state["rounds"] += 1
        if state["rounds"] == 4:
            raise Fault("a bug")
        return real(self, *args)

    monkeypatch.setattr(Recorder, "round", record)
    out = tmp_path / "run"
    with pytest.raises(Fault) as info:
        ms.simulate(ms.load_scenario(None, overrides=base), out=out)
    assert info.value.partial_output == out
    line = io.StringIO()
    assert report(info.value, stream=line) == 1   # the CLI's one line names the folder
    assert line.getvalue().count("\n") == 1
    assert f"partial output in {out} (complete: false)" in line.getvalue()
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] is False and s["stop_reason"] == "internal error: Fault: a bug"
    rounds, rows = read_table(out / "rounds.csv"), read_table(out / "device_rounds.csv")
    assert s["rounds"] == rounds["round"].size == len(set(zip(*(
        rows[c].tolist() for c in (("cell", "round") if overrides else ("round",))))))
    if not overrides:   # one cell: its first three rounds
        assert s["rounds"] == 3
    assert s["tokens"] == int(rounds["tokens"].sum())
    if not overrides:   # one cell: the three rounds of the run without the fault
        monkeypatch.undo()
        whole = ms.simulate(ms.load_scenario(None, overrides=base))
        np.testing.assert_array_equal(rounds["tokens"], whole.rounds["tokens"][:3])
