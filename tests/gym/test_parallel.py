"""The PettingZoo environment: PettingZoo's own API test, one agent per device, partial
observations, the team reward, per-agent info, and the same rounds as the Gymnasium env."""
import numpy as np
import pytest

pytest.importorskip("pettingzoo")
pytest.importorskip("greenlet")

import multispin_sim.gym as G  # noqa: E402


def small(**kwargs):
    return G.parallel_env("scenarios/default.yaml", {"devices.count": 3}, rounds=15,
                          price_rounds=50, **kwargs)


def test_parallel_api_test_passes():
    from pettingzoo.test import parallel_api_test

    parallel_api_test(small(), num_cycles=40)


def test_agents_see_their_own_device_and_share_the_team_reward():
    penv = small()
    obs, _ = penv.reset(seed=4)
    genv = G.MultiSpinEnv("scenarios/default.yaml", "draft", {"devices.count": 3}, rounds=15,
                          price_rounds=50)
    full, _ = genv.reset(seed=4)
    assert penv.agents == ["device_0", "device_1", "device_2"]
    for i, agent in enumerate(penv.agents):
        assert obs[agent]["g_ul_db"].shape == (1,)
        assert obs[agent]["g_ul_db"][0] == full["g_ul_db"][i]
        assert penv.observation_space(agent).contains(obs[agent])
    gamma = np.array([1, 4, 7])
    obs, rewards, terms, truncs, infos = penv.step(
        {a: int(g) for a, g in zip(penv.agents, gamma)})
    full, reward, _, _, info = genv.step(gamma)
    assert set(rewards.values()) == {reward}
    for i, agent in enumerate(penv.possible_agents):
        assert infos[agent]["gamma"] == gamma[i]
        assert infos[agent]["tokens"] == info["device_tokens"][i]
        assert infos[agent]["mode"] == info["modes"][i]
        assert obs[agent]["last_accepted"][0] == full["last_accepted"][i]
    with pytest.raises(ValueError, match=r"device 1 .*0\.\.20"):
        penv.step({"device_0": 1, "device_1": 30, "device_2": 2})
    penv.close()
    genv.close()
