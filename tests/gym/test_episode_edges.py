"""The environment at the edges of an episode and of its arguments: a run a limit stops
mid-round, copies sharing an ``out`` folder, uncapped drafts' remaining tokens, an exception out
of a step, arguments refused when the environment is made, the labels of one device's flat
observation, and the guide's speed figures against the benchmarks page."""
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")
pytest.importorskip("greenlet")

import multispin_sim.gym as G  # noqa: E402
from multispin_sim.engine.simulation import simulate  # noqa: E402
from multispin_sim.gym.baselines import ControllerAgent  # noqa: E402
from multispin_sim.scenario import load_scenario  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def episode(env, action, seed):
    """(rewards, infos, last truncated) of one episode playing ``action`` every step."""
    env.reset(seed=seed)
    rewards, infos = [], []
    while True:
        _, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        infos.append(info)
        if terminated or truncated:
            return rewards, infos, truncated


# -- a limit stops the run mid-round -----------------------------------------------------------
LIMITED = {"devices.count": 6, "link.model": "mcs"}


@pytest.mark.parametrize("blocks", [8, 2])   # 8: after some rounds; 2: in the first round
def test_a_limit_mid_round_ends_with_a_truncated_step_that_agrees_with_the_records(blocks):
    """A correction needing more fading blocks than the limit stops the run inside a round,
    which is not recorded: the episode is truncated, every info describes a round once, the
    return is N - c T of the recorded rounds, and the result has the engine's stop_todo."""
    over = {**LIMITED, "limits.max_blocks_per_transmission": blocks}
    price = 100.0
    env = G.MultiSpinEnv("scenarios/doppler-vehicular.yaml", "draft", over, rounds=200,
                         price=price)
    rewards, infos, truncated = episode(env, np.full(6, 4), seed=3)
    result = env.result
    summary, rounds = result.summary, result.rounds
    assert truncated and not summary["complete"]
    assert summary["rounds"] < 200   # the case is exercised: the limit did stop the run
    steps = [i["round"] for i in infos]
    assert len(set(steps)) == len(steps)   # no round reported twice
    assert steps[:-1] == rounds["round"].tolist()
    assert sum(i["tokens"] for i in infos) == summary["tokens"] == int(rounds["tokens"].sum())
    assert sum(rewards) == pytest.approx(summary["tokens"] - price * summary["sim_time_s"],
                                         rel=1e-12, abs=1e-9)
    last = infos[-1]   # the round the limit cut: nothing of it delivered nor recorded
    assert last["tokens"] == 0 and last["duration_s"] == 0.0 and last["energy_j"] == 0.0
    assert last["stop_reason"] == summary["stop_reason"]
    sc = load_scenario("scenarios/doppler-vehicular.yaml", {**over, "run.rounds": 200, "seed": 3})
    want = simulate(sc)
    assert want.summary["rounds"] == summary["rounds"]   # the same stop as the engine's run
    assert result.stop_todo and result.stop_todo == want.stop_todo
    env.close()


def test_a_limit_in_the_first_round_ends_a_parallel_episode_too():
    over = {**LIMITED, "limits.max_blocks_per_transmission": 2}
    penv = G.parallel_env("scenarios/doppler-vehicular.yaml", over, rounds=50, price=1.0)
    penv.reset(seed=3)
    _, rewards, _, truncations, infos = penv.step({a: 4 for a in penv.agents})
    assert all(truncations.values()) and penv.agents == []
    assert all(info["tokens"] == 0 for info in infos.values())
    summary = penv.env.result.summary   # nothing recorded: the return is -c T, T = 0 here
    assert set(rewards.values()) == {-1.0 * summary["sim_time_s"]}
    penv.close()


# -- copies sharing one out folder -------------------------------------------------------------
def _make(out, rounds=5):
    return lambda: G.MultiSpinEnv(None, "draft", {"devices.count": 3}, rounds=rounds, price=1.0,
                                  out=out)


def _folder_holds(folder, seed, tokens):
    """``folder`` holds the records of a run of ``seed`` that delivered ``tokens``."""
    assert json.loads((folder / "run.json").read_text())["seed"] == seed
    assert json.loads((folder / "summary.json").read_text())["tokens"] == tokens


def test_copies_of_a_vector_env_with_one_out_keep_their_own_records(tmp_path):
    out = tmp_path / "runs"
    vec = gymnasium.vector.SyncVectorEnv([_make(out), _make(out)])
    vec.reset(seed=[1, 2])
    tokens = np.zeros(2, dtype=np.int64)
    for _ in range(5):
        *_, info = vec.step(np.full((2, 3), 2))
        tokens += info["tokens"]
    copies = [e.unwrapped for e in vec.envs]
    folders = [c.result.folder for c in copies]
    assert folders[0] != folders[1]
    assert all(Path(f).is_relative_to(out) for f in folders)
    for copy, folder, n in zip(copies, folders, tokens):
        _folder_holds(Path(folder), copy.episode_seed, int(n))
    assert {c.episode_seed for c in copies} == {1, 2}
    vec.close()


def test_copies_in_processes_with_one_out_keep_their_own_records(tmp_path):
    out = tmp_path / "runs"
    vec = gymnasium.vector.AsyncVectorEnv([_make(out, rounds=3), _make(out, rounds=3)])
    vec.reset(seed=[1, 2])
    for _ in range(3):
        vec.step(np.full((2, 3), 2))
    vec.close()
    seeds = sorted(json.loads(p.read_text())["seed"] for p in out.rglob("episode-0000/run.json"))
    assert seeds == [1, 2]


def test_one_env_writes_out_episode_folders_and_a_later_env_takes_them_over(tmp_path):
    out = tmp_path / "runs"
    a = _make(out)()
    episode(a, np.full(3, 2), seed=1)
    episode(a, np.full(3, 2), seed=2)
    assert Path(a.result.folder) == out / "episode-0001"
    assert json.loads((out / "episode-0000" / "run.json").read_text())["seed"] == 1
    a.close()
    b = _make(out)()   # a itself closed: b writes out/episode-0000 again (a new series)
    _, infos, _ = episode(b, np.full(3, 2), seed=7)
    assert Path(b.result.folder) == out / "episode-0000"
    _folder_holds(out / "episode-0000", 7, sum(i["tokens"] for i in infos))
    b.close()


def test_two_live_envs_with_one_out_do_not_remove_each_others_records(tmp_path):
    out = tmp_path / "runs"
    a, b = _make(out)(), _make(out)()
    a.reset(seed=1)
    b.reset(seed=2)
    got = {1: 0, 2: 0}
    for _ in range(5):
        got[1] += a.step(np.full(3, 2))[4]["tokens"]
        got[2] += b.step(np.full(3, 2))[4]["tokens"]
    for env, seed in ((a, 1), (b, 2)):
        assert int(env.result.table("rounds")["tokens"].sum()) == got[seed]
        _folder_holds(Path(env.result.folder), seed, got[seed])
    a.close()
    b.close()


# -- remaining tokens with drafts not capped ---------------------------------------------------
def test_remaining_is_what_the_request_needs_when_drafts_are_not_capped():
    over = {"devices.count": 3, "workload.cap_draft_to_remaining": False,
            "workload.rate_per_s": 0.5}
    env = G.MultiSpinEnv("scenarios/light-load.yaml", "draft", over, rounds=6, price=1.0)
    obs, _ = env.reset(seed=1)
    seen = [obs]
    needed = [env.run.workload.needed()]
    while True:
        obs, _, terminated, truncated, _ = env.step(np.full(3, 3))
        seen.append(obs)
        needed.append(env.run.workload.needed())
        if terminated or truncated:
            break
    for o, n in zip(seen, needed):
        np.testing.assert_array_equal(o["remaining"], np.asarray(n, np.float32))
        assert (o["remaining"][o["active"] == 1] > 0).all()
    env.close()


# -- an exception out of a step ----------------------------------------------------------------
def test_a_step_after_an_exception_in_the_run_asks_for_reset():
    env = G.MultiSpinEnv(None, "draft", {"devices.count": 3}, rounds=10, price=1.0)
    env.reset(seed=1)
    env.step(np.full(3, 2))
    witness = env._witness
    record_round = witness.round

    def interrupted(record):   # as a Ctrl-C inside the simulation would
        witness.round = record_round
        raise KeyboardInterrupt
    witness.round = interrupted
    with pytest.raises(KeyboardInterrupt):
        env.step(np.full(3, 2))
    for _ in range(2):
        with pytest.raises(RuntimeError, match=r"call reset\(\)"):
            env.step(np.full(3, 2))
    rewards, infos, _ = episode(env, np.full(3, 2), seed=1)
    assert len(infos) == 10
    env.close()


# -- arguments refused when the environment is made --------------------------------------------
@pytest.mark.parametrize("kwargs, words", [
    ({"price": math.nan}, ["price", "nan"]),
    ({"price": math.inf}, ["price"]),
    ({"price": -5.0}, ["price", ">= 0"]),
    ({"price": "abc"}, ["price", "'abc'", "reference"]),
    ({"price": 1.0, "regret": True, "regret_samples": 0}, ["regret_samples", ">= 1"]),
    ({"price": 1.0, "regret": True, "regret_samples": -3}, ["regret_samples", ">= 1"]),
    ({"price": 1.0, "regret": True, "regret_samples": 2.5}, ["regret_samples", "2.5"]),
    ({"price": 1.0, "mode_action": "bogus"}, ["mode_action", "'bogus'", "prefix", "per-device"]),
    ({"price": 1.0, "regret": True, "control": "mode"}, ["regret", "control", "draft", "both"]),
    ({"price_rounds": 0}, ["price_rounds", ">= 1"]),
    ({"price": 1.0, "rounds": 2.7}, ["rounds", "2.7", ">= 1"]),
    ({"price": 1.0, "rounds": True}, ["rounds", "True"]),
    ({"price": 1.0, "rounds": "abc"}, ["rounds", "'abc'"]),
    ({"price": 1.0, "rounds": math.inf}, ["rounds", "inf"]),
    ({"price": 1.0, "warmup": 1.7}, ["warmup", "1.7", ">= 0"]),
    ({"price": 1.0, "warmup": None}, ["warmup", "None"]),
    ({"price": 1.0, "seed": 1.5}, ["seed", "1.5", ">= 0"]),
    ({"price": 1.0, "seed": "x"}, ["seed", "'x'"]),
    ({"price": 1.0, "objective": ""}, ["objective", "''", "goodput"]),
])
def test_constructor_arguments_are_checked(kwargs, words):
    control = kwargs.pop("control", "draft")
    kwargs.setdefault("rounds", 3)
    with pytest.raises(ValueError) as err:
        G.MultiSpinEnv(None, control, {"devices.count": 2}, **kwargs)
    message = str(err.value)
    assert all(w in message for w in words), message
    assert "\n" not in message


@pytest.mark.parametrize("kwargs, words", [
    ({"rounds": 2.7}, ["rounds", "2.7"]), ({"seed": -1}, ["seed", "-1", ">= 0"])])
def test_the_cells_environment_checks_its_counts_too(kwargs, words):
    pytest.importorskip("pettingzoo")
    from multispin_sim.gym.cells import CellsAECEnv
    with pytest.raises(ValueError) as err:
        CellsAECEnv(None, {"cells.layout": "hex", "cells.count": 7, "devices.count": 2},
                    price=1.0, **kwargs)
    assert all(w in str(err.value) for w in words), str(err.value)


def test_an_environment_used_before_reset_says_so():
    pytest.importorskip("pettingzoo")
    from multispin_sim.gym.cells import CellsAECEnv
    cells = CellsAECEnv(None, {"cells.layout": "hex", "cells.count": 7, "devices.count": 2},
                        rounds=2, price=1.0)
    with pytest.raises(RuntimeError, match="reset"):   # last(): PettingZoo's own assertion
        cells.step(1)
    env = G.MultiSpinEnv(None, "draft", {"devices.count": 2}, rounds=2, price=1.0)
    with pytest.raises(RuntimeError, match="reset"):
        ControllerAgent(env, "greedy")()


def test_closing_an_asynchronous_episode_ends_its_run():
    """An abort unwinds the run: a device whose draft starts while it unwinds must not ask
    the agent again (the run's greenlet stayed alive, and was reported when collected)."""
    env = G.MultiSpinEnv(None, "draft", {"devices.count": 4, "serving.protocol": "asynchronous"},
                         rounds=5, price=1.0)
    for _ in range(2):
        env.reset(seed=1)
        run = env._sim
        env.reset(seed=2) if _ == 0 else env.close()
        assert run.dead


# -- flat observation labels -------------------------------------------------------------------
def test_flat_names_index_each_device_entry_also_for_one_device():
    env = G.FlatObservation(G.MultiSpinEnv(None, "draft", {"devices.count": 1}, rounds=3,
                                           price=1.0))
    obs, _ = env.reset(seed=1)
    names = G.flat_names(env)
    assert len(names) == obs.shape[0]
    assert "g_ul_db[0]" in names and "active[0]" in names
    assert "g_ul_db" not in names and "time_s" in names and "p_dl_w" in names
    env.close()


# -- the guide's speed figures -----------------------------------------------------------------
def test_the_guides_speed_figures_are_those_of_the_benchmarks_page():
    guide = (ROOT / "docs" / "guide" / "learning-agents.md").read_text(encoding="utf-8")
    speed = guide.split("## Speed", 1)[1].split("\n## ", 1)[0]
    bench = (ROOT / "docs" / "reference" / "benchmarks.md").read_text(encoding="utf-8")
    rows = " ".join(line for line in bench.splitlines() if "`bench gym`" in line)
    measured = re.findall(r"\d+\.\d+x?", rows)
    assert measured   # the page has the figures
    speed = re.sub(r">=\s*\d+(\.\d+)?x?", "", speed)   # the targets are not measurements
    assert set(re.findall(r"\d+\.\d+x?", speed)) <= set(measured)
    assert "(../reference/benchmarks.md)" in speed
