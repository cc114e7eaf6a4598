"""The environment under the asynchronous protocol (one step = one device's draft decision)
against the engine's own asynchronous runs: every registered draft controller played as an
agent reproduces its run, the deciding devices and draft lengths are the recorded drafts, the
rewards add up to the records (a limit's stop included), the observed outcomes are the verified
batches', a warm-up, a queueing workload, Gymnasium's checker; with control 'mode' or 'both' the
split an agent answers stands for the correction phases until its next decision."""
import warnings

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")
pytest.importorskip("pettingzoo")
pytest.importorskip("greenlet")

import multispin_sim.gym as G  # noqa: E402
from multispin_sim.engine.simulation import simulate  # noqa: E402
from multispin_sim.gym.baselines import ConstantAgent, ControllerAgent  # noqa: E402
from multispin_sim.policies.draft import DRAFT_CONTROLLERS  # noqa: E402
from multispin_sim.scenario import load_scenario  # noqa: E402

from test_env import play  # noqa: E402  (one episode driven by an agent)

ASYNC = {"devices.count": 4, "serving.protocol": "asynchronous"}


def async_env(over=None, rounds=30, **kwargs):
    return G.MultiSpinEnv("scenarios/default.yaml", "draft", {**ASYNC, **(over or {})},
                          rounds=rounds, **kwargs)


@pytest.mark.parametrize("name", sorted(DRAFT_CONTROLLERS))
def test_every_controller_as_an_agent_reproduces_its_asynchronous_run(name, tmp_path):
    """Driven by the agent, one decision per step, the same rounds.csv (one row per batch) and
    draft lengths as `multispin-sim run` with the controller (backoff learns from the outcomes
    the steps report as verified, in the engine's order)."""
    over = {**ASYNC, "devices.count": 5, "policy.saa_samples": 100,
            "adaptive.load_threshold": 3}
    rounds = 25
    env = G.MultiSpinEnv("scenarios/default.yaml", "draft", over, rounds=rounds, price=1.0,
                         out=tmp_path / "env")
    play(env, ControllerAgent(env, name), seed=4)
    sc = load_scenario("scenarios/default.yaml", {**over, "run.rounds": rounds,
                                                  "policy.draft": name, "seed": 4})
    want = simulate(sc, out=tmp_path / "run")
    got = env.result
    assert len(got.rounds["round"]) == rounds
    assert_same_run(got, want)
    env.close()


def assert_same_run(got, want, label=""):
    """rounds.csv's tokens and times within rtol 1e-12, and the same draft lengths."""
    for column in ("tokens", "start_s", "duration_s", "comm_s"):
        np.testing.assert_allclose(got.rounds[column], want.rounds[column], rtol=1e-12,
                                   err_msg=f"{label}{column}")
    np.testing.assert_array_equal(got.device_rounds["draft_len"], want.device_rounds["draft_len"])


def _drafts_by_device(result):
    """{device: its recorded draft lengths in order} from device_rounds (one row per draft)."""
    dr = result.device_rounds
    out = {}
    for device, length in zip(dr["device"], dr["draft_len"]):
        out.setdefault(int(device), []).append(int(length))
    return out


def test_a_step_is_one_devices_draft_and_the_rewards_add_up_to_the_records():
    """Each observation marks one deciding device (``active``, with ``load`` devices in a cycle,
    itself included); the next info names it and the length it drafted (the action's entry,
    capped); each device's drafts in order are its recorded ones (drafts still queued when the
    run ends are not recorded); tokens, time and energy add up to the run's records."""
    price = 50.0
    env = async_env({"policy.max_draft": 8}, rounds=40, price=price)
    rng = np.random.default_rng(1)
    obs, _ = env.reset(seed=2)
    decided, rewards, infos = {}, [], []
    while True:
        assert obs["active"].sum() == 1 and 1 <= obs["load"][0] <= 4
        device = int(np.flatnonzero(obs["active"])[0])
        action = rng.integers(0, 12, size=4).clip(0, 8)
        obs, reward, terminated, truncated, info = env.step(action)
        assert info["device"] == device and info["draft_length"] == action[device]
        decided.setdefault(device, []).append(int(action[device]))
        rewards.append(reward)
        infos.append(info)
        if terminated or truncated:
            break
    recorded = _drafts_by_device(env.result)
    for device, lengths in recorded.items():
        assert decided[device][:len(lengths)] == lengths
        assert len(decided[device]) - len(lengths) <= 1   # at most one draft left queued
    summary = env.result.summary
    assert sum(i["tokens"] for i in infos) == summary["tokens"] == env.result.rounds["tokens"].sum()
    assert sum(i["elapsed_s"] for i in infos) == pytest.approx(summary["sim_time_s"], rel=1e-12)
    assert sum(rewards) == pytest.approx(summary["tokens"] - price * summary["sim_time_s"],
                                         rel=1e-12)
    energy = np.asarray(env.result.device_rounds["energy_j"]).sum()
    assert sum(i["energy_j"] for i in infos) == pytest.approx(energy, rel=1e-12)
    batches = [b["round"] for i in infos for b in i["batches"]]
    # every batch reported once, as it ended (a batch with no correction may end first)
    assert batches == env.result.rounds["round"].tolist() and sorted(batches) == list(range(40))
    assert batches != sorted(batches)   # the case is exercised
    assert sum(len(i["verified"]) for i in infos) == 40
    env.close()


def test_observed_outcomes_are_the_verified_batches():
    """``last_accepted`` and ``last_rejected`` of a device are those of its last verified draft
    (a batch reported in the step's ``verified``); other devices' entries stay as they were."""
    env = async_env(rounds=30, price=1.0)
    obs, _ = env.reset(seed=5)
    last = np.zeros(4)
    rejected = np.zeros(4, dtype=np.int8)
    seen = 0
    while True:
        obs, _, terminated, truncated, info = env.step(np.array([2, 4, 6, 8]))
        for batch in info["verified"]:
            a = batch["active"]
            last[a] = batch["accepted"][a]
            rejected[a] = batch["accepted"][a] < batch["gamma"][a]
            seen += int(a.sum())
        np.testing.assert_array_equal(obs["last_accepted"], last)
        np.testing.assert_array_equal(obs["last_rejected"], rejected)
        if terminated or truncated:
            break
    assert seen == len(env.result.device_rounds["device"]) and rejected.any()
    env.close()


def test_warmup_batches_are_the_scenarios_own():
    """warmup=w: the drafts decided before w batches have ended are the scenario's fixed
    length; the first step's info reports none of the warm-up batches, and the episode's
    rewards count the records after them (N - c T from the warm-up's end)."""
    price = 10.0
    env = async_env({"policy.draft_length": 3}, rounds=30, warmup=6, price=price)
    _, info0 = env.reset(seed=7)
    assert len(info0["warmup"]) >= 6
    _, rewards, infos = play_from_reset(env, ConstantAgent(np.full(4, 9)))
    rounds = env.result.rounds
    n0 = len(info0["warmup"])
    # the batches after the warm-up's, in the order they ended (rounds.csv's row order)
    assert [b["round"] for i in infos for b in i["batches"]] == rounds["round"][n0:].tolist()
    t0 = rounds["start_s"][n0 - 1] + rounds["duration_s"][n0 - 1]
    tokens = int(rounds["tokens"][n0:].sum())
    T = env.result.summary["sim_time_s"] - t0
    assert sum(rewards) == pytest.approx(tokens - price * T, rel=1e-12)
    lengths = env.result.device_rounds["draft_len"]
    assert set(lengths[:4]) == {3} and 9 in set(lengths)
    env.close()


def play_from_reset(env, agent):
    """One episode after a ``reset`` already made: (None, rewards, infos)."""
    rewards, infos = [], []
    while True:
        _, reward, terminated, truncated, info = env.step(agent())
        rewards.append(reward)
        infos.append(info)
        if terminated or truncated:
            return None, rewards, infos


def test_poisson_requests_end_with_every_token_counted():
    env = async_env({"workload.arrivals": "poisson", "workload.rate_per_s": 2.0,
                     "workload.length_tokens": 40}, rounds=60, price=1.0)
    assert "backlog" in env.observation_space.spaces
    _, rewards, infos = play(env, ConstantAgent(np.full(4, 6)), seed=3)
    summary = env.result.summary
    assert sum(i["tokens"] for i in infos) == summary["tokens"]
    assert sum(i["elapsed_s"] for i in infos) == pytest.approx(summary["sim_time_s"], rel=1e-12)
    env.close()


@pytest.mark.parametrize("blocks", [8, 2])
def test_a_limit_ends_the_episode_with_the_records_time(blocks):
    """A correction needing more fading blocks than the limit stops the run: truncated, and the
    return is N - c T of the recorded batches (the clock stopped mid-cycle is not counted)."""
    over = {"devices.count": 6, "link.model": "mcs", "serving.protocol": "asynchronous",
            "limits.max_blocks_per_transmission": blocks}
    price = 100.0
    env = G.MultiSpinEnv("scenarios/doppler-vehicular.yaml", "draft", over, rounds=200,
                         price=price)
    _, rewards, infos = play(env, ConstantAgent(np.full(6, 4)), seed=3)
    summary = env.result.summary
    assert sum(rewards) == pytest.approx(summary["tokens"] - price * summary["sim_time_s"],
                                         rel=1e-12, abs=1e-9)
    if blocks == 2:   # the limit stopped it: said in the last info, as the engine says it
        assert not summary["complete"] and infos[-1]["stop_reason"] == summary["stop_reason"]
    env.close()


@pytest.mark.parametrize("control", ["draft", "mode", "both"])
def test_check_env_passes_under_the_asynchronous_protocol(control):
    from gymnasium.utils.env_checker import check_env

    env = G.MultiSpinEnv("scenarios/default.yaml", control, ASYNC, rounds=10, price=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env, skip_render_check=True)
    env.close()


@pytest.mark.parametrize("draft", ["fixed", "greedy"])
def test_a_standing_split_on_one_link_is_that_policys_run(draft, tmp_path):
    """control 'mode': the prefix n = K (every rejected device by UL) and n = 0 (all by DL),
    answered at every draft decision, reproduce the runs with policy.mode all-ul and all-dl
    (rounds.csv within rtol 1e-12, the same draft lengths): the split an agent answers stands
    for the correction phases until its next decision, and the draft controllers price
    corrections with it (greedy's lengths differ between the two, so that is exercised)."""
    over = {**ASYNC, "devices.count": 5, "policy.draft": draft, "policy.saa_samples": 100}
    lengths = []
    for n, policy in ((5, "all-ul"), (0, "all-dl")):
        env = G.MultiSpinEnv("scenarios/default.yaml", "mode", over, rounds=30, price=1.0,
                             out=tmp_path / f"env{n}")
        play(env, ConstantAgent(n), seed=4)
        sc = load_scenario("scenarios/default.yaml", {**over, "run.rounds": 30,
                                                      "policy.mode": policy, "seed": 4})
        want, got = simulate(sc, out=tmp_path / policy), env.result
        assert_same_run(got, want, f"{policy} ")
        rejected = got.device_rounds["rejected"] == 1
        assert rejected.any() and set(got.device_rounds["mode"][rejected]) == {policy[4:]}
        lengths.append(got.device_rounds["draft_len"].tolist())
        env.close()
    if draft == "greedy":   # priced with another split, it would draft otherwise
        assert np.mean(lengths[0]) != np.mean(lengths[1])


def test_each_batchs_corrections_follow_the_split_standing_at_its_phase():
    """Alternating all DL and all UL from one decision to the next: a batch's corrections never
    mix the two (one standing split decides a whole phase) and both occur; per-device modes
    under control 'both' are followed device by device."""
    env = G.MultiSpinEnv("scenarios/default.yaml", "mode", ASYNC, rounds=60, price=1.0)
    answers = iter(np.arange(10_000) % 2 * 4)   # 0, 4, 0, 4, ...: all DL, all UL, ...
    play(env, lambda obs, info: next(answers), seed=6)
    dev = env.result.device_rounds
    rejected = dev["rejected"] == 1
    modes = {}
    for batch, mode in zip(dev["round"][rejected], dev["mode"][rejected]):
        modes.setdefault(int(batch), set()).add(mode)
    assert len(modes) > 20 and all(len(m) == 1 for m in modes.values())
    assert set.union(*modes.values()) == {"ul", "dl"}
    env.close()

    per_device = np.array([0, 1, 0, 1])
    env = G.MultiSpinEnv("scenarios/default.yaml", "both", ASYNC, rounds=30, price=1.0,
                         mode_action="per-device")
    play(env, ConstantAgent({"draft": np.full(4, 5), "mode": per_device}), seed=2)
    dev = env.result.device_rounds
    rejected = dev["rejected"] == 1
    assert rejected.sum() > 10 and set(dev["draft_len"]) == {5}
    np.testing.assert_array_equal(dev["mode"][rejected],
                                  np.where(per_device == 0, "ul", "dl")[dev["device"][rejected]])
    env.close()


def test_the_parallel_environment_refuses_it():
    with pytest.raises(ValueError, match="steps synchronous rounds"):
        G.parallel_env("scenarios/default.yaml", ASYNC, price=1.0)


def test_regret_is_the_deciding_devices():
    """The regret searches the deciding device's length on its context (the other devices are
    not drafting): exhaustive over 0..max_draft, so never negative, the best vector zero but
    for the deciding device, and zero when the agent plays the best length."""
    env = async_env({"policy.max_draft": 10}, rounds=12, price=1.0, regret=True,
                    regret_samples=50)
    obs, _ = env.reset(seed=3)
    zero = 0
    while True:
        device = int(np.flatnonzero(obs["active"])[0])
        obs, _, terminated, truncated, info = env.step(np.full(4, 5))
        regret = info["regret"]
        assert regret["method"] == "exhaustive" and regret["regret"] >= -1e-12
        assert np.flatnonzero(regret["best_gamma"]).tolist() in ([device], [])
        if regret["best_gamma"][device] == 5:
            assert regret["regret"] == 0.0
            zero += 1
        if terminated or truncated:
            break
    assert zero >= 1   # the last check is exercised
    env.close()


def test_the_flat_observation_labels_the_load_once():
    env = G.FlatObservation(async_env({"devices.count": 3}, rounds=5, price=1.0))
    obs, _ = env.reset(seed=1)
    names = G.flat_names(env)
    assert len(names) == obs.shape[0] and names.count("load") == 1
    assert not any(n.startswith("load[") for n in names)
    env.close()
