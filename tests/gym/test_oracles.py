"""The environment's observations, info and baselines against the engine's own records: the
scenario as a dict, warm-up rounds decided by the scenario's controllers, common acceptance
draws, gains as the CSI model shows them, thermal slowdown, the round's energy, every registered
draft controller as an agent, invalid actions under control='both' and in the PettingZoo env,
and the exhaustive regret against an enumeration of every draft vector."""
import itertools

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


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for key in x:
            np.testing.assert_array_equal(x[key], y[key], err_msg=key)


def _rows(result, column, rounds):
    """(rounds, K) array of a device_rounds column (rows are in round, device order)."""
    dr = result.device_rounds
    return np.asarray(dr[column]).reshape(rounds, -1)


def test_make_with_a_scenario_dict_and_dict_overrides():
    scenario = {"devices": {"count": 3}, "policy": {"max_draft": 9}, "run": {"rounds": 7}}
    env = gymnasium.make(G.ENV_ID, scenario=scenario, overrides={"devices.count": 2},
                         price=1.0)
    obs, _ = env.reset(seed=3)
    assert obs["g_ul_db"].shape == (2,)
    assert env.action_space == gymnasium.spaces.MultiDiscrete([10, 10])
    steps = 0
    while True:
        *_, terminated, truncated, _ = env.step(np.array([2, 2]))
        steps += 1
        if terminated or truncated:
            break
    assert steps == 7 and truncated and not terminated
    env.close()


def test_warmup_rounds_are_the_scenarios_own_and_the_episode_follows(tmp_path):
    """warmup=w: rounds 0..w-1 drafted by the scenario's controller (fixed, policy.draft_length),
    the first step is round w, and the episode has run.rounds - w steps."""
    env = G.MultiSpinEnv("scenarios/default.yaml", "draft", {"devices.count": 3}, rounds=12,
                         warmup=5, price=1.0, out=tmp_path)
    _, info = env.reset(seed=2)
    assert info["round"] == 5
    _, _, infos = play(env, ConstantAgent(np.full(3, 9)))
    assert [i["round"] for i in infos] == list(range(5, 12))
    gamma = _rows(env.result, "draft_len", 12)
    assert (gamma[:5] == env.scenario.policy.draft_length).all()
    assert (gamma[5:] == 9).all()
    env.close()


def test_a_run_that_ends_in_its_warmup_says_so_at_reset(tmp_path):
    """The scenario's time limit ends the run before the warm-up's 5 rounds are done: reset
    raises, naming the rounds the run had and the warm-up to lower; the run's records are kept
    (env.result)."""
    env = G.MultiSpinEnv("scenarios/default.yaml", "draft", {"devices.count": 3,
                                                              "run.max_time_s": 0.5},
                         rounds=12, warmup=5, price=1.0, out=tmp_path)
    with pytest.raises(RuntimeError, match=r"ended after \d warm-up rounds.*lower warmup \(now 5\)"):
        env.reset(seed=2)
    assert 0 < env.result.summary["rounds"] < 5
    env.close()

def test_common_acceptance_draws_across_agents(tmp_path):
    """i.i.d. acceptance: one uniform per device and round, accepted = min(run, gamma); two
    agents with the same seed see the same runs: min(accepted under gamma 7, 3) = accepted under
    gamma 3, device-round by device-round."""
    accepted = {}
    for gamma in (3, 7):
        env = G.MultiSpinEnv("scenarios/default.yaml", "draft", {"devices.count": 4},
                             rounds=60, price=1.0)
        _, _, infos = play(env, ConstantAgent(np.full(4, gamma)), seed=9)
        accepted[gamma] = np.array([i["accepted"] for i in infos])
        env.close()
    np.testing.assert_array_equal(np.minimum(accepted[7], 3), accepted[3])
    assert (accepted[7] > 3).any()    # the check is not vacuous


def test_gains_are_the_csi_the_controller_sees(tmp_path):
    """The observed gains are the decision's CSI, which the run records (device_rounds gain_ul,
    in dB): the true gains under exact CSI; under an estimation error the estimates, which
    differ from the true gains of the same seed (the same fading) but follow them."""
    seen = {}
    for error in (0.0, 0.5):
        env = G.MultiSpinEnv("scenarios/default.yaml", "draft",
                             {"devices.count": 4, "csi.estimation_error_variance": error},
                             rounds=30, price=1.0, out=tmp_path / f"e{error}")
        observations, _, _ = play(env, ConstantAgent(np.full(4, 3)), seed=4)
        seen[error] = np.array([o["g_ul_db"] for o in observations[:-1]], dtype=float)
        recorded = 10 * np.log10(_rows(env.result, "gain_ul", 30))
        np.testing.assert_allclose(seen[error], recorded, rtol=0, atol=1e-4)  # float32 dB
        env.close()
    assert np.abs(seen[0.5] - seen[0.0]).max() > 0.1
    assert np.corrcoef(seen[0.5].ravel(), seen[0.0].ravel())[0, 1] > 0.5


def test_thermal_slowdown_observation_is_the_records(tmp_path):
    env = G.MultiSpinEnv("scenarios/compute/jetson-fleet.yaml", "draft", rounds=400,
                         price=1.0, out=tmp_path)
    assert "slowdown" in env.observation_space.spaces
    observations, _, _ = play(env, ConstantAgent(np.full(8, 12)), seed=7)
    seen = np.array([o["slowdown"] for o in observations[:-1]], dtype=float)
    recorded = _rows(env.result, "slowdown", len(seen))
    np.testing.assert_allclose(seen, recorded, rtol=1e-6)
    assert (seen > 1).any(), "no device throttled: the check is vacuous"
    env.close()


def test_info_energy_is_the_recorded_device_energy(tmp_path):
    env = G.MultiSpinEnv("scenarios/default.yaml", "draft", {"devices.count": 4}, rounds=25,
                         price=1.0, out=tmp_path)
    _, _, infos = play(env, ConstantAgent(np.array([0, 3, 6, 9])), seed=6)
    energy = _rows(env.result, "energy_j", 25).sum(axis=1)
    np.testing.assert_allclose([i["energy_j"] for i in infos], energy, rtol=1e-12)
    np.testing.assert_allclose([i["duration_s"] for i in infos],
                               env.result.rounds["duration_s"], rtol=1e-12)
    env.close()


@pytest.mark.parametrize("name", sorted(set(DRAFT_CONTROLLERS)
                                        - {"greedy", "uniform", "backoff", "fixed"}))
def test_every_other_controller_as_an_agent_reproduces_its_run(name, tmp_path):
    """The controllers test_env does not replay (computation-only, budget and the adaptive
    ones): driven by the agent, the same rounds.csv as `multispin-sim run` (rtol 1e-12)."""
    over = {"devices.count": 5, "policy.saa_samples": 100, "adaptive.load_threshold": 3}
    rounds = 15
    env = G.MultiSpinEnv("scenarios/default.yaml", "draft", over, rounds=rounds, price=1.0,
                         out=tmp_path / "env")
    play(env, ControllerAgent(env, name))
    sc = load_scenario("scenarios/default.yaml", {**over, "run.rounds": rounds,
                                                  "policy.draft": name})
    want = simulate(sc, out=tmp_path / "run")
    got = env.result
    for column in ("tokens", "duration_s", "comm_s"):
        np.testing.assert_allclose(got.rounds[column], want.rounds[column], rtol=1e-12,
                                   err_msg=column)
    np.testing.assert_array_equal(got.device_rounds["draft_len"], want.device_rounds["draft_len"])
    env.close()


def test_invalid_both_action_raises_and_changes_nothing():
    def fresh():
        return G.MultiSpinEnv("scenarios/default.yaml", "both", {"devices.count": 3}, rounds=10,
                              price=1.0)
    good = {"draft": np.full(3, 2), "mode": 1}
    env = fresh()
    env.reset(seed=5)
    for bad, words in (({"draft": np.full(3, 2)}, ["'draft' and 'mode'"]),
                       (np.full(3, 2), ["dict"]),
                       ({"draft": np.array([2, 30, 2]), "mode": 1}, ["device 1", "0..20"]),
                       ({"draft": np.full(3, 2), "mode": 4}, ["0..3"])):
        with pytest.raises(ValueError) as err:
            env.step(bad)
        for word in words:
            assert word in str(err.value)
    ref = fresh()
    ref.reset(seed=5)
    _same([env.step(good)[0] for _ in range(3)], [ref.step(good)[0] for _ in range(3)])
    env.close()
    ref.close()


def test_parallel_env_still_usable_after_an_invalid_action():
    def fresh():
        return G.parallel_env("scenarios/default.yaml", {"devices.count": 2}, rounds=8,
                              price=1.0)
    penv, ref = fresh(), fresh()
    penv.reset(seed=3)
    ref.reset(seed=3)
    with pytest.raises(ValueError, match="device 0"):
        penv.step({"device_0": -1, "device_1": 2})
    with pytest.raises(ValueError, match="unknown agent"):
        penv.step({"device_7": 1})
    actions = {"device_0": 4, "device_1": 2}
    for _ in range(3):
        a, b = penv.step(actions), ref.step(actions)
        for agent in actions:
            _same([a[0][agent]], [b[0][agent]])
        assert a[1] == b[1]
    penv.close()
    ref.close()


def test_exhaustive_regret_is_the_best_of_every_vector_on_the_same_samples():
    """round_regret's exhaustive best = the max of G over every draft vector (an enumeration
    here) on the same outcome samples (the same generator state)."""
    from multispin_sim.gym.regret import round_regret
    from multispin_sim.policies.draft_search import make_objective

    env = G.MultiSpinEnv("scenarios/default.yaml", "draft",
                         {"devices.count": 3, "policy.max_draft": 4}, rounds=5, price=1.0)
    env.reset(seed=8)
    ctx = env.unwrapped.context
    got = round_regret(ctx, np.array([1, 2, 3]), np.random.default_rng(5), 4, samples=80)
    assert got["method"] == "exhaustive"
    obj = make_objective(ctx.system, ctx.g_ul, ctx.g_dl, np.asarray(ctx.active, bool),
                         np.full(3, 4), ctx.reactive, np.random.default_rng(5), 80,
                         reciprocal=ctx.reciprocal)
    values = {g: obj.value_of(np.array(g)) for g in itertools.product(range(5), repeat=3)}
    best = max(values, key=values.get)
    assert got["best"] == pytest.approx(values[best], rel=1e-12)
    assert got["agent"] == pytest.approx(values[(1, 2, 3)], rel=1e-12)
    assert got["regret"] == pytest.approx(values[best] - values[(1, 2, 3)], rel=1e-9, abs=1e-12)
    env.close()


def test_per_device_modes_get_the_papers_powers():
    """mode_action='per-device': the rejected devices the agent puts on UL send at full UL power,
    those on DL share the DL budget so that their delays are equal (docs/model.md section 6)."""
    modes = np.array([0, 1, 0, 1, 1])
    env = G.MultiSpinEnv("scenarios/default.yaml", "both", {"devices.count": 5}, rounds=40,
                         price=1.0, mode_action="per-device")
    _, _, infos = play(env, ConstantAgent({"draft": np.full(5, 6), "mode": modes}), seed=3)
    system = env.run.population.system
    p_ul = np.broadcast_to(system.p_ul_w, (5,))
    checked = 0
    for info in infos:
        dl = info["rejected"] & (modes == 1)
        ul = info["rejected"] & (modes == 0)
        np.testing.assert_allclose(info["powers_w"][ul], p_ul[ul], rtol=1e-12)
        if dl.any():
            assert info["powers_w"][dl].sum() == pytest.approx(system.p_dl_w, rel=1e-9)
            np.testing.assert_allclose(info["delays_s"][dl], info["delays_s"][dl][0], rtol=1e-9)
            checked += dl.sum() > 1
    assert checked, "no round with two DL corrections: the check is vacuous"
    env.close()
