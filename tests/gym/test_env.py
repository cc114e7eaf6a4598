"""The Gymnasium environment against its oracles: Gymnasium's own checker, the engine's own run
(rounds.csv), the run's own records (returns), seeds (determinism, common random numbers), the
paper's power optimisation for the agent's split, and invalid actions."""
import pickle
import warnings

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")
pytest.importorskip("pettingzoo")
pytest.importorskip("greenlet")

import multispin_sim.gym as G  # noqa: E402
from multispin_sim.engine.simulation import simulate  # noqa: E402
from multispin_sim.gym.baselines import ConstantAgent, ControllerAgent  # noqa: E402
from multispin_sim.scenario import load_scenario  # noqa: E402

SMALL = {"devices.count": 4}


def small_env(control="draft", rounds=20, **kwargs):
    return G.MultiSpinEnv("scenarios/default.yaml", control, SMALL, rounds=rounds,
                          price_rounds=100, **kwargs)


def play(env, agent, seed=None):
    """(observations, rewards, infos) of one episode driven by ``agent(obs, info)``."""
    obs, info = env.reset(seed=seed)
    observations, rewards, infos = [obs], [], []
    while True:
        obs, reward, terminated, truncated, info = env.step(agent(obs, info))
        observations.append(obs)
        rewards.append(reward)
        infos.append(info)
        if terminated or truncated:
            return observations, rewards, infos


@pytest.mark.parametrize("control", ["draft", "mode", "both"])
def test_check_env_passes_for_every_control(control):
    from gymnasium.utils.env_checker import check_env

    env = small_env(control)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the checker's warnings count as failures here
        check_env(env, skip_render_check=True)
    env.close()


def test_make_registered_id_with_overrides():
    env = gymnasium.make(G.ENV_ID, scenario="scenarios/default.yaml", control="draft",
                         overrides=["devices.count=3"], rounds=5, price_rounds=50)
    obs, _ = env.reset(seed=1)
    assert obs["g_ul_db"].shape == (3,)
    assert env.action_space == gymnasium.spaces.MultiDiscrete([21, 21, 21])
    env.close()


@pytest.mark.parametrize("name", ["greedy", "uniform", "backoff", "fixed"])
def test_controller_actions_reproduce_the_run(name, tmp_path):
    """An episode driven by the actions a built-in controller takes = `multispin-sim run` with
    that controller, same seed: rounds.csv and device_rounds.csv equal within rtol 1e-12."""
    rounds = 25
    env = G.MultiSpinEnv("scenarios/default.yaml", "draft", {"devices.count": 5}, rounds=rounds,
                         out=tmp_path / "env", price=1.0)
    play(env, ControllerAgent(env, name))
    got = env.result
    sc = load_scenario("scenarios/default.yaml", {"devices.count": 5, "run.rounds": rounds,
                                                  "policy.draft": name})
    want = simulate(sc, out=tmp_path / "run")
    for table in ("rounds", "device_rounds"):
        a, b = got.table(table), want.table(table)
        assert sorted(a) == sorted(b)
        for column in a:
            if np.asarray(a[column]).dtype.kind in "iufb":
                np.testing.assert_allclose(a[column], b[column], rtol=1e-12, atol=0,
                                           err_msg=f"{table}.{column}")
            else:  # labels (the modes)
                np.testing.assert_array_equal(a[column], b[column], err_msg=f"{table}.{column}")
    assert got.summary["tokens"] == want.summary["tokens"]
    env.close()


@pytest.mark.parametrize("control", ["draft", "mode"])
def test_a_learning_controller_after_warm_up_rounds_reproduces_the_run(control):
    """backoff adapts gamma to the outcomes it is told: the scenario's own backoff decides the
    warm-up rounds learning every outcome (with the agent deciding gamma too), and a
    ControllerAgent handed reset's info learns the same outcomes, so the whole episode is the
    run with backoff."""
    over = {"devices.count": 3, "policy.draft": "backoff"}
    env = G.MultiSpinEnv(None, control, over, rounds=14, warmup=6, price=1.0)
    obs, info = env.reset(seed=1)
    assert len(info["warmup"]) == 6
    agent = ControllerAgent(env)
    while True:
        action = agent(obs, info) if control == "draft" else 3   # mode: all UL, own gamma
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    want = simulate(load_scenario(None, {**over, "run.rounds": 14, "seed": 1}))
    gamma = env.result.device_rounds["draft_len"]
    if control == "draft":
        np.testing.assert_array_equal(gamma, want.device_rounds["draft_len"])
    else:   # the warm-up rounds are the run's; every round's gamma is backoff's
        np.testing.assert_array_equal(gamma[:18], want.device_rounds["draft_len"][:18])
    assert len(set(gamma.tolist())) > 1   # backoff did move gamma
    env.close()


def test_return_is_tokens_minus_price_times_time_from_the_records(tmp_path):
    price = 150.0
    env = small_env(rounds=40, price=price, out=tmp_path)
    _, rewards, infos = play(env, ConstantAgent(np.full(4, 3)), seed=5)
    rounds = env.result.rounds
    want = rounds["tokens"] - price * rounds["duration_s"]
    np.testing.assert_allclose(rewards, want, rtol=1e-12, atol=1e-9)
    total = env.result.summary
    assert sum(rewards) == pytest.approx(total["tokens"] - price * total["sim_time_s"],
                                         rel=1e-12)
    assert [i["tokens"] for i in infos] == rounds["tokens"].tolist()
    env.close()


def test_reference_price_is_the_fixed_drafts_goodput():
    env = small_env(rounds=5)
    sc = load_scenario("scenarios/default.yaml", {**SMALL, "run.rounds": 100})
    assert env.price == simulate(sc).summary["goodput_tps"]
    env.close()


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, dict):
            assert x.keys() == y.keys()
            for key in x:
                np.testing.assert_array_equal(x[key], y[key], err_msg=key)
        else:
            assert x == y


def test_same_seed_same_actions_identical_trajectories():
    rng_actions = np.random.default_rng(0).integers(0, 8, size=(20, 4))
    runs = []
    for _ in range(2):
        env = small_env()
        it = iter(rng_actions)
        obs, rewards, infos = play(env, lambda o, i: next(it), seed=11)
        runs.append((obs, rewards, [{k: v for k, v in i.items()} for i in infos]))
        env.close()
    _same(runs[0][0], runs[1][0])
    assert runs[0][1] == runs[1][1]
    _same(runs[0][2], runs[1][2])


def test_common_random_numbers_across_agents():
    """Two agents with different actions and the same seed see the same gains every round."""
    gains = []
    for gamma in (1, 7):
        env = small_env()
        obs, _, infos = play(env, ConstantAgent(np.full(4, gamma)), seed=3)
        gains.append(np.array([o["g_ul_db"] for o in obs[:-1]]))
        env.close()
    np.testing.assert_array_equal(gains[0], gains[1])
    env = small_env()
    other, _, _ = play(env, ConstantAgent(np.full(4, 2)), seed=4)
    assert not np.array_equal(gains[0][0], other[0]["g_ul_db"])
    env.close()


@pytest.mark.parametrize("action, words", [
    (np.full(3, 2), ["shape (3,)", "(4,)"]),
    (np.array([1, 2, 21, 0]), ["device 2", "0..20"]),
    (np.array([1, -1, 2, 0]), ["device 1", "0..20"]),
    (np.array([1.0, 2.0, np.nan, 0.0]), ["device 2", "0..20"]),
    (np.array([1.5, 2.0, 3.0, 0.0]), ["device 0", "0..20"]),
])
def test_invalid_action_raises_and_changes_nothing(action, words):
    good = ConstantAgent(np.full(4, 3))
    env = small_env()
    obs, info = env.reset(seed=2)
    with pytest.raises(ValueError) as err:
        env.step(action)
    for word in words:
        assert word in str(err.value)
    after = [env.step(good())[0] for _ in range(3)]
    ref = small_env()
    ref.reset(seed=2)
    _same(after, [ref.step(good())[0] for _ in range(3)])
    env.close()
    ref.close()


def test_invalid_mode_action_names_the_range():
    env = small_env("mode")
    env.reset(seed=1)
    with pytest.raises(ValueError, match=r"0\.\.4"):
        env.step(5)
    env.step(2)
    env.close()


def _rejected_rounds(infos):
    return [i for i in infos if i["rejected"].any()]


def test_regret_of_an_objective_the_scenario_refuses_is_refused_up_front(monkeypatch):
    """The regret searches the draft objective: one the scenario refuses (here a check added
    for the test: the scenario no longer refuses any objective with these keys) is refused
    when the environment is made, in one line naming the key, not at the first step with an
    internal error. On a shared band with an energy tie tolerance the regret prices energy
    under the schemes; the reward alone (no regret) is the round's tokens over its energy,
    which any scheme has."""
    from multispin_sim.scenario import ScenarioError, loading

    def refuse(sc):
        if sc.policy.objective == "tokens-per-joule" and sc.policy.energy_tie_tolerance:
            raise ScenarioError("policy.energy_tie_tolerance", "0.1 is refused by this test",
                                "expected 0")
    monkeypatch.setattr(loading, "CROSS_CHECKS", loading.CROSS_CHECKS + [refuse])
    overrides = {"run.rounds": 6, "policy.energy_tie_tolerance": 0.1}
    with pytest.raises(ValueError) as info:
        G.MultiSpinEnv("scenarios/antennas/mu-mimo.yaml", "draft", overrides, price=100.0,
                       objective="tokens-per-joule", regret=True)
    assert "policy.energy_tie_tolerance" in str(info.value) and "\n" not in str(info.value)
    monkeypatch.undo()
    env = G.MultiSpinEnv("scenarios/antennas/mu-mimo.yaml", "draft",
                         {"run.rounds": 3, "devices.count": 6,
                          "policy.energy_tie_tolerance": 0.1}, price=100.0,
                         objective="tokens-per-joule", regret=True, regret_samples=50)
    _, _, infos = play(env, ConstantAgent(np.full(6, 3)), seed=1)
    assert len(infos) == 3 and all(np.isfinite(i["regret"]["regret"]) for i in infos)
    env.close()
    env = G.MultiSpinEnv("scenarios/antennas/mu-mimo.yaml", "draft", overrides, price=100.0,
                         objective="tokens-per-joule")
    _, rewards, _ = play(env, ConstantAgent(np.full(20, 3)), seed=1)
    assert len(rewards) == 6 and all(r > 0 for r in rewards)
    env.close()


def test_prefix_mode_all_ul_and_all_dl():
    """n = K: every rejected device corrects by UL at full power; n = 0: all by DL, the DL
    budget shared so that their delays are equal (the paper's power optimisation)."""
    for n, mode in ((4, 1), (0, 2)):
        env = small_env("mode", rounds=30)
        _, _, infos = play(env, ConstantAgent(n), seed=1)
        rejected = _rejected_rounds(infos)
        assert rejected
        for info in rejected:
            assert (info["modes"][info["rejected"]] == mode).all()
            assert (info["modes"][~info["rejected"]] == 0).all()
            if mode == 2:
                d = info["delays_s"][info["rejected"]]
                np.testing.assert_allclose(d, d[0], rtol=1e-9)
                p_dl = env.run.population.system.p_dl_w
                assert info["powers_w"][info["rejected"]].sum() == pytest.approx(p_dl, rel=1e-9)
            else:
                p_ul = np.broadcast_to(env.run.population.system.p_ul_w, (4,))
                np.testing.assert_allclose(info["powers_w"][info["rejected"]],
                                           p_ul[info["rejected"]], rtol=1e-12)
        env.close()


def test_per_device_modes_follow_the_action():
    modes = np.array([0, 1, 0, 1])
    env = small_env("both", rounds=30, mode_action="per-device")
    _, _, infos = play(env, ConstantAgent({"draft": np.full(4, 5), "mode": modes}), seed=2)
    for info in _rejected_rounds(infos):
        r = info["rejected"]
        np.testing.assert_array_equal(info["modes"][r], np.where(modes == 0, 1, 2)[r])
        assert (info["gamma"] == 5).all()
    env.close()


def test_corrections_deferred_by_the_scenarios_policy_are_still_sent():
    """policy.mode 'deadline' defers the slowest corrections to the next round start: those of
    the warm-up rounds (the scenario's own decisions) go out after the agent takes over (it
    raised "'AgentSplit' object has no attribute 'carry'")."""
    env = G.MultiSpinEnv("scenarios/link/deadline.yaml", "mode", {"devices.count": 8},
                         rounds=30, warmup=10, price=100.0)
    _, _, infos = play(env, ConstantAgent(8), seed=4)
    assert len(infos) == 20
    deferred = env.result.summary["deferred"]
    assert deferred["corrections"] > 0 and deferred["pending_at_end"] == 0
    env.close()


def test_tokens_per_joule_reward():
    env = small_env(objective="tokens-per-joule")
    _, rewards, infos = play(env, ConstantAgent(np.full(4, 3)), seed=1)
    np.testing.assert_allclose(rewards, [i["tokens"] / i["energy_j"] for i in infos], rtol=1e-12)
    env.close()


def test_regret_exhaustive_for_small_k_is_nonnegative_and_zero_at_the_best():
    env = G.MultiSpinEnv("scenarios/default.yaml", "draft", {"devices.count": 2,
                                                           "policy.max_draft": 6},
                         rounds=8, regret=True, regret_samples=100, price=1.0)
    obs, info = env.reset(seed=1)
    best = None
    for _ in range(8):
        action = np.full(2, 1) if best is None else best
        obs, _, term, trunc, info = env.step(action)
        reg = info["regret"]
        assert reg["method"] == "exhaustive"
        assert reg["regret"] >= -1e-12
        assert reg["best"] >= reg["agent"]
        best = reg["best_gamma"]
        if term or trunc:
            break
    env.close()


def test_regret_greedy_for_large_k():
    env = small_env(rounds=3, regret=True, regret_samples=50)
    env.reset(seed=1)
    info = env.step(np.full(4, 2))[4]
    assert info["regret"]["method"] == "greedy"
    assert np.isfinite(info["regret"]["regret"])
    env.close()


def test_queueing_observation_has_backlog():
    env = G.MultiSpinEnv("scenarios/light-load.yaml", "draft",
                         {"devices.count": 4, "workload.rate_per_s": 0.5}, rounds=10,
                         price_rounds=50)
    obs, _ = env.reset(seed=1)
    assert {"backlog", "remaining"} <= set(obs)
    assert (obs["backlog"] >= obs["active"]).all()
    assert env.observation_space.contains(obs)
    env.close()


def test_last_accepted_is_bounded_by_max_draft_and_reaches_it():
    # accepted draft tokens <= drafted <= policy.max_draft; at acceptance 0.999 a draft of 5
    # is accepted whole with probability 0.995, so the bound is reached and never passed
    env = G.MultiSpinEnv("scenarios/default.yaml", "draft",
                         {**SMALL, "policy.max_draft": 5, "acceptance.mean": 0.999}, rounds=15,
                         price_rounds=50)
    assert (env.observation_space["last_accepted"].high == 5).all()
    obs, _ = env.reset(seed=1)
    seen = []
    for _ in range(14):
        obs = env.step(np.full(4, 5))[0]
        assert env.observation_space.contains(obs)
        seen.append(obs["last_accepted"].max())
    assert max(seen) == 5
    env.close()


def test_flat_observation_and_names():
    env = G.FlatObservation(small_env())
    obs, _ = env.reset(seed=1)
    names = G.flat_names(env)
    assert obs.shape == (len(names),) == (7 * 4 + 2,)
    assert names[0] == "active[0]" and "time_s" in names
    env.close()


def test_vector_envs_match_single_copies():
    fns = [lambda: small_env(rounds=6) for _ in range(2)]
    want = []
    for seed in (1, 2):
        env = small_env(rounds=6)
        env.reset(seed=seed)
        want.append([env.step(np.full(4, 3))[0]["g_ul_db"] for _ in range(4)])
        env.close()
    for cls in (gymnasium.vector.SyncVectorEnv, gymnasium.vector.AsyncVectorEnv):
        vec = cls(fns)
        vec.reset(seed=[1, 2])
        got = [vec.step(np.full((2, 4), 3))[0]["g_ul_db"] for _ in range(4)]
        for i in range(2):
            np.testing.assert_array_equal(np.array(got)[:, i], np.array(want[i]))
        vec.close()


def test_pickle_gives_a_fresh_copy():
    env = small_env()
    env.reset(seed=1)
    env.step(np.full(4, 3))
    copy = pickle.loads(pickle.dumps(env))
    a, _ = copy.reset(seed=1)
    b, _ = small_env().reset(seed=1)
    _same([a], [b])
    copy.close()
    env.close()


def test_import_multispin_sim_imports_no_gym(modules_after):
    loaded = modules_after("import multispin_sim, multispin_sim.engine.simulation")
    assert not {"gymnasium", "pettingzoo", "greenlet", "multispin_sim.gym"} & set(loaded)


def test_out_that_is_a_file_is_refused_at_construction(tmp_path):
    """``MultiSpinEnv(out="somefile")`` raised NotADirectoryError at the first reset; the
    environment now refuses it when made, with one line naming ``out``."""
    from multispin_sim.errors import OutputLocationError

    (tmp_path / "somefile").write_text("")
    with pytest.raises(OutputLocationError, match="out .*somefile: exists and is a file"):
        small_env(out=tmp_path / "somefile")


@pytest.mark.parametrize("overrides, words, makers", [
    ({"serving.protocol": "asynchronous"}, ["serving.protocol", "synchronous"], ["parallel"]),
    ({"cells.layout": "hex", "cells.count": 7}, ["cells.layout", "'hex'", "single"],
     ["env", "parallel"]),
])
def test_what_the_environments_do_not_step_is_refused_at_construction(overrides, words, makers):
    """An environment steps one cell (the parallel one, its synchronous rounds); a scenario it
    would step only in part (one cell of several) is refused with one line naming the key."""
    make_by = {"env": lambda: G.MultiSpinEnv(None, "draft", overrides, rounds=5),
               "parallel": lambda: G.parallel_env(None, overrides, rounds=5)}
    for make in (make_by[m] for m in makers):
        with pytest.raises(ValueError) as err:
            make()
        assert all(w in str(err.value) for w in words) and "\n" not in str(err.value)


def test_an_environment_leaves_no_temporary_folder_to_the_garbage_collector():
    """The default price's run writes into a folder removed as soon as the price is read (no
    ResourceWarning for a TemporaryDirectory cleaned up implicitly)."""
    import gc

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = G.MultiSpinEnv(None, "draft", {"devices.count": 3, "seed": 13}, rounds=5)
        env.reset(seed=1)
        env.close()
        del env
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


def test_the_first_step_after_warm_up_observes_the_last_warm_up_round():
    """After warm-up rounds the first observation's previous round is the last warm-up round."""
    env = G.MultiSpinEnv(None, "draft", {"devices.count": 4}, rounds=8, warmup=3, price=1.0)
    obs, info = env.reset(seed=2)
    last = info["warmup"][-1]
    rec = env._witness.last
    np.testing.assert_array_equal(obs["last_accepted"], np.asarray(last["accepted"], np.float32))
    np.testing.assert_array_equal(obs["last_rejected"], np.asarray(rec.rejected, np.int8))
    assert obs["last_rejected"].any()   # the case is exercised (seed 2: device 2 rejected)
    env.close()


@pytest.mark.parametrize("warmup", [0, 3])
def test_the_return_counts_the_wait_before_the_first_round(warmup):
    """A trace whose first request arrives at 0.1 s: the episode's time runs from its start (or
    the warm-up's end), so the return is N - c T with T the run's time after the warm-up."""
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as d:
        trace = Path(d) / "trace.csv"
        trace.write_text("time_s,device\n0.1,0\n0.15,1\n0.3,0\n0.9,1\n2.5,0\n", encoding="utf-8")
        price = 5.0
        env = G.MultiSpinEnv(None, "draft", {"devices.count": 2, "workload.arrivals": "trace",
                                             "workload.trace_file": str(trace)},
                             rounds=400, warmup=warmup, price=price)
        _, info = env.reset(seed=1)
        start = 0.0 if not warmup else env._witness.last.start + env._witness.last.duration
        _, rewards, infos = play_from(env, ConstantAgent(np.full(2, 2)))
        tokens = sum(i["tokens"] for i in infos)
        end = env.result.summary["sim_time_s"]
        assert sum(rewards) == pytest.approx(tokens - price * (end - start), rel=1e-12)
        if not warmup:
            assert infos[0]["elapsed_s"] > env.result.rounds["duration_s"][0] + 0.09
        env.close()


def play_from(env, agent):
    obs, info, rewards, infos = None, {}, [], []
    while True:
        obs, reward, terminated, truncated, info = env.step(agent(obs, info))
        rewards.append(reward)
        infos.append(info)
        if terminated or truncated:
            return obs, rewards, infos


def test_regret_under_both_evaluates_this_steps_split():
    """control='both': the regret of a step depends on that step's context and action only, not
    on the previous step's mode action."""
    def regrets(first_mode):
        env = small_env("both", rounds=4, regret=True, regret_samples=50)
        env.reset(seed=5)
        out = []
        for t in range(3):
            info = env.step({"draft": np.full(4, 3), "mode": first_mode if t == 0 else 2})[4]
            out.append((info["regret"]["agent"], info["regret"]["best"]))
        env.close()
        return out
    a, b = regrets(0), regrets(4)
    assert a[1:] == b[1:]   # the same context and action at steps 1, 2
    assert a[0] != b[0]     # step 0's own mode counts


def test_the_final_observation_shows_the_workload_as_the_run_left_it():
    env = G.MultiSpinEnv("scenarios/light-load.yaml", "draft",
                         {"devices.count": 4, "workload.rate_per_s": 0.5, "run.max_time_s": 20},
                         rounds=10_000, price_rounds=50)
    obs, info = env.reset(seed=1)
    while True:
        obs, _, terminated, truncated, info = env.step(np.full(4, 3))
        if terminated or truncated:
            break
    workload = env.run.workload
    np.testing.assert_array_equal(obs["remaining"], workload.remaining().astype(np.float32))
    np.testing.assert_array_equal(obs["active"], (np.asarray(workload.n) > 0).astype(np.int8))
    np.testing.assert_array_equal(obs["backlog"], np.asarray(workload.n, np.float32))
    env.close()


def test_the_agents_split_keeps_the_scenarios_energy_tie_break():
    """control='mode' wraps the scenario's reactive policy: rounds without an action (warm-up)
    are decided as in the scenario's own run, the energy tie-break with the devices present."""
    over = {"devices.count": 6, "workload.rate_per_s": 0.3, "policy.objective": "tokens-per-joule",
            "policy.energy_tie_tolerance": 0.3}
    env = G.MultiSpinEnv("scenarios/light-load.yaml", "mode", over, rounds=151, warmup=150,
                         price=1.0)
    env.reset(seed=4)
    env.step(0)
    got = env.result.rounds
    env.close()
    want = simulate(load_scenario("scenarios/light-load.yaml", {**over, "run.rounds": 151,
                                                                 "seed": 4}))
    for col in ("n_ul", "n_dl", "batch_size"):
        np.testing.assert_array_equal(got[col][:150], want.rounds[col][:150])


@pytest.mark.parametrize("overrides, plan", [({}, "instantaneous"),
                                             ({"channel.coherence_time_ms": 5.0}, "ergodic")])
def test_regret_prices_corrections_as_the_scenarios_controllers_do(overrides, plan, monkeypatch):
    """Where fading blocks are shorter than a round the controllers price corrections at the
    ergodic gains (policy.plan_gains: auto), and so does the regret's objective."""
    from multispin_sim.policies import draft
    from multispin_sim.policies.draft import ergodic_gains

    seen = []
    real = draft.make_objective
    monkeypatch.setattr(draft, "make_objective", lambda system, g_ul, g_dl, active, *a, **kw:
                        seen.append((system, g_ul, active)) or real(system, g_ul, g_dl, active,
                                                                     *a, **kw))
    env = G.MultiSpinEnv("scenarios/default.yaml", "draft", {"devices.count": 3, **overrides},
                         rounds=2, regret=True, regret_samples=50, price=1.0)
    obs, _ = env.reset(seed=1)
    env.step(np.full(3, 2))
    system, g_ul, active = seen[0]
    if plan == "ergodic":
        np.testing.assert_array_equal(g_ul, ergodic_gains(system, np.count_nonzero(active))[0])
    else:   # the round start's CSI, as the observation shows it (in dB)
        np.testing.assert_allclose(10 * np.log10(g_ul), obs["g_ul_db"], rtol=1e-6)
    env.close()
