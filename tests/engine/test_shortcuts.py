"""The engine's shortcuts change no output byte, except one that changes numbers within rtol 1e-12.

The round loop takes the shortcuts its components offer (``engine/round.py``): the fixed draft
plan worked out once, the outcomes of blocks of rounds capped at once
(``EdgeServer.steady_outcomes``, from the acceptance model's ``steady_blocks``), the policy's own
decision of one outcome without a ``ReactiveProblem`` (``ReactivePolicy.one_outcome``), and
devices that wait plain transmissions themselves (``OFDMAChannel.plain_transmit``): the switches
of ``bench fastpaths``, which times each one. Each run here is made twice, with every shortcut
and with none, and every output file must be the same bytes (summary.json without its
wall-clock fields).

The fixed plan's reactive decisions made many rounds at a time (``EdgeServer.steady_decisions``:
the policy's vectorised ``decide`` instead of ``one_outcome`` on Python floats) give the same
modes and every number within rtol 1e-12 (the equality contract), not the same last bits: the
byte comparisons leave it off in both runs, and ``test_steady_decisions_within_the_contract``
compares with and without it.
"""
import csv
import io
import json
import math

import pytest

import multispin_sim as ms
from multispin_sim.benchmarks.fastpaths import ENGINE
from multispin_sim.engine.channel import OFDMAChannel
from multispin_sim.engine.server import EdgeServer

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
    "tokens-per-joule": {"policy.objective": "tokens-per-joule"},
    "exhaustive": {"policy.mode": "exhaustive", "devices.count": 6},
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


WITHIN_RTOL = ("steady_decisions",)   # the shortcut that changes last bits


def no_shortcuts(monkeypatch, names=None):
    """The shortcuts ``names`` (default: every one) switched off: the general paths of
    ``bench fastpaths`` in their place."""
    for name, (_, switches) in ENGINE.items():
        if names is None or name in names:   # names (): none switched off
            for owner, attr, general in switches:
                monkeypatch.setattr(owner, attr, general)


def _cells(data):
    return list(csv.reader(io.StringIO(data.decode())))


def _same(x, y):
    """Equal within the equality contract: numbers within rtol 1e-12, text exactly."""
    try:
        a, b = float(x), float(y)
    except (TypeError, ValueError):
        return x == y
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= max(1e-12 * max(abs(a), abs(b)), 1e-300)


def assert_within_contract(fast, slow):
    """The same files, headers, rows and text; numbers within rtol 1e-12."""
    assert fast.keys() == slow.keys()
    for file in fast:
        if file.endswith(".csv"):
            a, b = _cells(fast[file]), _cells(slow[file])
            assert a[0] == b[0] and len(a) == len(b), file
            for i, (ra, rb) in enumerate(zip(a[1:], b[1:])):
                bad = [c for c, x, y in zip(a[0], ra, rb) if not _same(x, y)]
                assert not bad, f"{file} row {i}: {bad}"
        elif file.endswith(".json"):
            a, b = json.loads(fast[file]), json.loads(slow[file])
            flat_a, flat_b = _flatten(a), _flatten(b)
            assert flat_a.keys() == flat_b.keys(), file
            bad = [key for key in flat_a if not _same(flat_a[key], flat_b[key])]
            assert not bad, f"{file}: {bad}"
        else:
            assert fast[file] == slow[file], file


def _flatten(value, key=""):
    if isinstance(value, dict):
        return {k: v for name, item in value.items()
                for k, v in _flatten(item, f"{key}/{name}").items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in _flatten(item, f"{key}/{i}").items()}
    return {key: value}


def runs(scenario, folder, monkeypatch, which):
    """The outputs of ``scenario`` run with every shortcut ('blocks'), with all but those
    ``WITHIN_RTOL`` ('fast'), and with none ('slow'), for each name in ``which``."""
    off = {"blocks": (), "fast": WITHIN_RTOL, "slow": None}
    out = {}
    for name in which:
        with monkeypatch.context() as m:
            no_shortcuts(m, off[name])
            ms.simulate(scenario, out=folder / name)
        out[name] = outputs(folder / name)
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_shortcuts_change_no_output_byte(name, tmp_path, monkeypatch):
    scenario = ms.load_scenario(None, overrides={"run.rounds": 300, "name": name,
                                                 **CASES[name]})
    fast, slow = runs(scenario, tmp_path, monkeypatch, ("fast", "slow")).values()
    assert fast.keys() == slow.keys()
    for file in fast:
        assert fast[file] == slow[file], f"{name}: {file} differs"


STEADY_CASES = ["default", "not-reciprocal", "few-rejections", "no-fading", "per-device-draft",
                "energy", "all-dl", "all-ul", "learned-belief", "ticks", "verify-tokens",
                "tokens-per-joule", "exhaustive"]


@pytest.mark.parametrize("name", STEADY_CASES)
def test_steady_decisions_within_the_contract(name, tmp_path, monkeypatch):
    """Decisions many rounds at a time: the same modes, every number within rtol 1e-12."""
    scenario = ms.load_scenario(None, overrides={"run.rounds": 300, "name": name,
                                                 **CASES[name]})
    assert_within_contract(*runs(scenario, tmp_path, monkeypatch, ("blocks", "fast")).values())


def test_shortcuts_are_taken_in_the_default_scenario(tmp_path, monkeypatch):
    """The default scenario runs the shortcuts (else the tests above compare nothing): after
    round 0 (the plan is made there) its reactive decisions come in blocks of 16, then 32, 64,
    ... rounds, one problem a block; no correction goes through ``transmit``."""
    from multispin_sim.model import reactive, system

    def fail(*args, **kwargs):
        raise AssertionError("the general path ran")

    monkeypatch.setattr(OFDMAChannel, "transmit", fail)
    calls = {"outcomes": 0, "split": 0, "problems": 0}
    real_outcomes, real_one = EdgeServer.steady_outcomes, reactive.split_one
    real_problem = system.ReactiveProblem

    def steady_outcomes(self):
        calls["outcomes"] += 1
        return real_outcomes(self)

    def split_one(*args):
        calls["split"] += 1
        return real_one(*args)

    def problem(*args, **kwargs):
        calls["problems"] += 1
        return real_problem(*args, **kwargs)

    monkeypatch.setattr(EdgeServer, "steady_outcomes", steady_outcomes)
    monkeypatch.setattr(reactive, "split_one", split_one)
    monkeypatch.setattr(system, "ReactiveProblem", problem)
    scenario = ms.load_scenario(None, overrides={"run.rounds": 50})
    r = ms.simulate(scenario, out=tmp_path / "run")
    assert r.summary["rounds"] == 50 and calls["outcomes"] == 1
    assert calls["split"] == (r.rounds["n_rejected"][0] > 0)    # round 0 only
    assert calls["problems"] == 3                               # rounds 1-16, 17-48, 49
    assert (r.rounds["n_rejected"][1:] > 0).sum() > 40


@pytest.mark.parametrize("overrides", [{}, {"channel.reciprocal": False}])
def test_outcome_blocks_across_block_ends(overrides, tmp_path, monkeypatch):
    """2,100 rounds: the fading and acceptance blocks (1,024 rounds) end twice; every output
    byte as without the shortcuts, and within the contract with the decisions in blocks."""
    scenario = ms.load_scenario(None, overrides={"run.rounds": 2_100, "devices.count": 5,
                                                 "name": "blocks", **overrides})
    blocks, fast, slow = runs(scenario, tmp_path, monkeypatch,
                              ("blocks", "fast", "slow")).values()
    assert fast == slow
    assert_within_contract(blocks, slow)


def test_gains_ahead_are_the_gains_of_the_rounds_to_come():
    """Row i + n of ``gains_ahead`` is what ``new_block`` returns n rounds later, bit for bit,
    up to the end of the drawn block; a channel that makes its gains its own way has none."""
    import numpy as np

    from multispin_sim.engine.population import build_population
    from multispin_sim.engine.streams import RandomStreams

    sc = ms.load_scenario(None, overrides={"devices.count": 4})
    system = build_population(sc, RandomStreams(sc.seed).devices).system
    for reciprocal in (True, False):
        channel = OFDMAChannel(system, np.random.default_rng(3), reciprocal=reciprocal, block=8)
        for _ in range(3):
            channel.new_block()
        g_ul, g_dl, i = channel.gains_ahead()
        assert i == 2 and (g_dl is g_ul) == reciprocal
        for n in range(1, 8 - i):
            ul, dl = channel.new_block()
            assert ul.tobytes() == g_ul[i + n].tobytes() and dl.tobytes() == g_dl[i + n].tobytes()
        channel.new_block()   # the next block
        assert channel.gains_ahead()[0] is not g_ul

    class Shadowed(OFDMAChannel):
        def new_block(self, now=0.0):
            g_ul, g_dl = super().new_block(now)
            return 0.5 * g_ul, 0.5 * g_dl

    assert Shadowed(system, np.random.default_rng(3)).gains_ahead() is None
    moving = OFDMAChannel(system, np.random.default_rng(3), moving=True)
    moving.new_block()
    assert moving.gains_ahead() is None


def test_a_policy_with_its_own_decide_is_not_stateless_unless_it_says_so():
    from multispin_sim.policies.reactive import OptimalSplit, RandomSplit, ReactivePolicy

    class Tweaked(OptimalSplit):
        def decide(self, problem, rng=None):
            return super().decide(problem, rng)

    class Declared(Tweaked):
        stateless = True

        def decide(self, problem, rng=None):
            return super().decide(problem, rng)

    class Renamed(OptimalSplit):
        name = "renamed"

    assert OptimalSplit.stateless and Renamed.stateless and Declared.stateless
    assert not (Tweaked.stateless or RandomSplit.stateless or ReactivePolicy.stateless)
