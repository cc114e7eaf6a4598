"""The engine's shortcuts change no output byte.

The round loop takes shortcuts when it can (``engine/round.py``): the fixed draft plan worked out
once, the outcomes of blocks of rounds capped at once (``EdgeServer.steady_outcomes``), the
optimal split in Python floats without a ``ReactiveProblem`` (``EdgeServer.scalar_split``), and
devices that wait plain transmissions themselves (``OFDMAChannel.plain_transmit``). Each run
here is made twice, with every shortcut and with none, and every output file must be the same
bytes (summary.json without its wall-clock fields).
"""
import json

import pytest

import multispin_sim as ms
from multispin_sim.engine import server as server_module
from multispin_sim.engine.channel import OFDMAChannel
from multispin_sim.policies.draft import FixedDraft

CASES = {
    "default": {},
    "few-rejections": {"policy.draft_length": 1},
    "no-draft": {"policy.draft_length": 0},
    "per-device-draft": {"devices.count": 3, "policy.draft_length": [1, 5, 2]},
    "not-reciprocal": {"channel.reciprocal": False},
    "no-fading": {"channel.fading": "none"},
    "learned-belief": {"acceptance.belief": "learned"},
    "deadline": {"policy.mode": "deadline"},
    "all-dl": {"policy.mode": "all-dl"},
    "poisson": {"workload.arrivals": "poisson", "workload.rate_per_s": 2.0},
    "ticks": {"workload.tick_period_s": 0.3},
    "coherence": {"channel.coherence_time_ms": 5},
    "asynchronous": {"serving.protocol": "asynchronous"},
    "thermal": {"compute.thermal": True},
    "energy": {"energy.record": True},
}


def outputs(folder):
    files = {}
    for path in sorted(folder.rglob("*")):
        if path.is_dir() or path.name == "run.json":
            continue
        data = path.read_bytes()
        if path.name == "summary.json":
            summary = json.loads(data)
            summary.pop("wall_time_s", None)
            summary.pop("rounds_per_s", None)
            data = json.dumps(summary, sort_keys=True).encode()
        files[str(path.relative_to(folder))] = data
    return files


def no_shortcuts(monkeypatch):
    monkeypatch.setattr(server_module, "_OUTCOMES", None)
    monkeypatch.setattr(server_module, "_DECIDE", None)
    monkeypatch.setattr(OFDMAChannel, "plain_transmit", property(lambda self: False))
    monkeypatch.setattr(FixedDraft, "context_free", False)


@pytest.mark.parametrize("name", sorted(CASES))
def test_shortcuts_change_no_output_byte(name, tmp_path, monkeypatch):
    scenario = ms.load_scenario(None, overrides={"run.rounds": 300, "name": name,
                                                 **CASES[name]})
    ms.simulate(scenario, out=tmp_path / "fast")
    with monkeypatch.context() as m:
        no_shortcuts(m)
        ms.simulate(scenario, out=tmp_path / "slow")
    fast, slow = outputs(tmp_path / "fast"), outputs(tmp_path / "slow")
    assert fast.keys() == slow.keys()
    for file in fast:
        assert fast[file] == slow[file], f"{name}: {file} differs"


def test_shortcuts_are_taken_in_the_default_scenario(tmp_path, monkeypatch):
    """The default scenario runs the shortcuts (else the test above compares nothing)."""
    from multispin_sim.engine.server import EdgeServer
    from multispin_sim.model import reactive, system

    def fail(*args, **kwargs):
        raise AssertionError("the general path ran")

    monkeypatch.setattr(reactive, "ReactiveProblem", fail)
    monkeypatch.setattr(system, "ReactiveProblem", fail)
    calls = {"split": 0, "outcomes": 0}
    real_split, real_outcomes = EdgeServer.scalar_split, EdgeServer.steady_outcomes

    def scalar_split(self):
        calls["split"] += 1
        return real_split(self)

    def steady_outcomes(self):
        calls["outcomes"] += 1
        return real_outcomes(self)

    monkeypatch.setattr(EdgeServer, "scalar_split", scalar_split)
    monkeypatch.setattr(EdgeServer, "steady_outcomes", steady_outcomes)
    monkeypatch.setattr(OFDMAChannel, "transmit", fail)
    scenario = ms.load_scenario(None, overrides={"run.rounds": 50})
    r = ms.simulate(scenario, out=tmp_path / "run")
    assert r.summary["rounds"] == 50 and calls["outcomes"] == 1 and calls["split"] >= 1
