"""The engine's shortcuts change no output byte.

The round loop takes the shortcuts its components offer (``engine/round.py``): the fixed draft
plan worked out once, the outcomes of blocks of rounds capped at once
(``EdgeServer.steady_outcomes``, from the acceptance model's ``steady_blocks``), the policy's own
decision of one outcome without a ``ReactiveProblem`` (``ReactivePolicy.one_outcome``), and
devices that wait plain transmissions themselves (``OFDMAChannel.plain_transmit``): the switches
of ``bench fastpaths``, which times each one. Each run here is made twice, with every shortcut
and with none, and every output file must be the same bytes (summary.json without its
wall-clock fields).
"""
import json

import pytest

import multispin_sim as ms
from multispin_sim.benchmarks.fastpaths import ENGINE
from multispin_sim.engine.channel import OFDMAChannel
from multispin_sim.engine.server import EdgeServer
from multispin_sim.model.acceptance import AgreementTally

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
    "all-ul": {"policy.mode": "all-ul"},
    "random": {"policy.mode": "random"},
    "random-greedy": {"policy.mode": "random", "policy.draft": "greedy", "devices.count": 6},
    "poisson": {"workload.arrivals": "poisson", "workload.rate_per_s": 2.0},
    "ticks": {"workload.tick_period_s": 0.3},
    "coherence": {"channel.coherence_time_ms": 5},
    "asynchronous": {"serving.protocol": "asynchronous"},
    "asynchronous-pre-draft": {"serving.protocol": "asynchronous", "serving.pre_draft": True},
    "thermal": {"compute.thermal": True},
    "mobility": {"mobility.model": "random-waypoint", "mobility.speed_mps": 30.0,
                 "channel.shadowing_db": 8.0},
    "energy": {"energy.record": True},
    "verify-tokens": {"server.verify_model": "tokens"},
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
    """Every shortcut switched off: the general paths of ``bench fastpaths`` in their place."""
    for _, switches in ENGINE.values():
        for owner, name, general in switches:
            monkeypatch.setattr(owner, name, general)


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
    from multispin_sim.model import reactive, system

    def fail(*args, **kwargs):
        raise AssertionError("the general path ran")

    monkeypatch.setattr(reactive, "ReactiveProblem", fail)
    monkeypatch.setattr(system, "ReactiveProblem", fail)
    monkeypatch.setattr(OFDMAChannel, "transmit", fail)
    calls = {"outcomes": 0, "split": 0}
    real_outcomes, real_one = EdgeServer.steady_outcomes, reactive.split_one

    def steady_outcomes(self):
        calls["outcomes"] += 1
        return real_outcomes(self)

    def split_one(*args):
        calls["split"] += 1
        return real_one(*args)

    monkeypatch.setattr(EdgeServer, "steady_outcomes", steady_outcomes)
    monkeypatch.setattr(reactive, "split_one", split_one)
    scenario = ms.load_scenario(None, overrides={"run.rounds": 50})
    r = ms.simulate(scenario, out=tmp_path / "run")
    assert r.summary["rounds"] == 50 and calls["outcomes"] == 1
    assert calls["split"] == r.summary["rounds"] - r.rounds["n_rejected"].tolist().count(0)


@pytest.mark.parametrize("overrides", [{}, {"channel.reciprocal": False}])
def test_outcome_blocks_across_block_ends(overrides, tmp_path, monkeypatch):
    """2,100 rounds: the fading and acceptance blocks (1,024 rounds) end twice; every output
    byte as without the shortcuts."""
    scenario = ms.load_scenario(None, overrides={"run.rounds": 2_100, "devices.count": 5,
                                                 "name": "blocks", **overrides})
    ms.simulate(scenario, out=tmp_path / "fast")
    with monkeypatch.context() as m:
        no_shortcuts(m)
        ms.simulate(scenario, out=tmp_path / "slow")
    fast, slow = outputs(tmp_path / "fast"), outputs(tmp_path / "slow")
    assert fast == slow


def test_tally_rows_count_like_add():
    """Rows of blocks (``add_row``), single rounds (``add``) and reads in between, in any mix,
    give the counts of adding every round one by one."""
    import numpy as np

    rng = np.random.default_rng(5)
    blocks = [(rng.integers(0, 5, (8, 4)), rng.random((8, 4)) < 0.5) for _ in range(3)]
    rows = AgreementTally(4)
    one = AgreementTally(4)
    for step in range(60):
        b = step // 20
        i = step % 20
        accepted, rejected = blocks[b]
        if i < 8:
            rows.add_row(accepted, rejected, i)
            one.add(accepted[i], rejected[i])
        else:
            a, r = rng.integers(0, 5, 4), rng.random(4) < 0.5
            rows.add(a, r)
            one.add(a, r)
        if step % 7 == 0:
            assert rows.agreed.tolist() == one.agreed.tolist()
    for i in (3, 3, 5):  # a row again, a gap: counted again, as add would
        rows.add_row(*blocks[0], i)
        one.add(blocks[0][0][i], blocks[0][1][i])
    assert rows.agreed.tolist() == one.agreed.tolist()
    assert rows.verified.tolist() == one.verified.tolist()
    assert rows.rate().tolist() == one.rate().tolist()
