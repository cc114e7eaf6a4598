"""The PettingZoo AEC environment of several cells against its oracles: PettingZoo's own API
test, the engine's run of the network (the cells' own controllers as agents reproduce it), the
run's records (returns), the order of the cells' round starts, and what it refuses."""
import numpy as np
import pytest

pytest.importorskip("pettingzoo")
pytest.importorskip("greenlet")

import multispin_sim.gym as G  # noqa: E402
from multispin_sim.engine.simulation import simulate  # noqa: E402
from multispin_sim.scenario import load_scenario  # noqa: E402

HEX = {"cells.layout": "hex", "cells.count": 7, "cells.isd_m": 200.0, "devices.count": 3}


def play(env, agent, seed=None):
    """Every agent's return and the times of the round starts the agents acted at, one
    episode driven by ``agent(env, name)``."""
    env.reset(seed=seed)
    returns = {a: 0.0 for a in env.agents}
    starts = []
    for name in env.agent_iter():
        _, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
        else:
            starts.append(float(env.observe(name)["time_s"][0]))
            env.step(agent(env, name))
        for a, r in env.rewards.items():
            returns[a] += r
    return returns, starts


def assert_same_tables(got, want):
    """rounds.csv and device_rounds.csv of two network runs: the same columns, numbers within
    rtol 1e-12, the rest identical."""
    for table in ("rounds", "device_rounds"):
        a, b = got.table(table), want.table(table)
        assert sorted(a) == sorted(b) and a["cell"].size > 50
        for column in a:
            if np.asarray(a[column]).dtype.kind in "iufb":
                np.testing.assert_allclose(a[column], b[column], rtol=1e-12, atol=0,
                                           err_msg=f"{table}.{column}")
            else:
                np.testing.assert_array_equal(a[column], b[column], err_msg=f"{table}.{column}")


def own(env, name):
    """The cell's own draft controller on its round start: the scenario's decision."""
    return env.own_controllers[int(name.split("_")[1])].lengths(env.context)


# its advice for simple agents: the observations are the Dict spaces of MultiSpinEnv by design
@pytest.mark.filterwarnings("ignore:Observation is not a NumPy array")
@pytest.mark.filterwarnings("ignore:Observation space for each agent probably")
@pytest.mark.filterwarnings("ignore:Action space for each agent probably")
@pytest.mark.filterwarnings("ignore:Environment has not defined a render")
@pytest.mark.parametrize("control, protocol", [("draft", "synchronous"), ("both", "synchronous"),
                                               ("draft", "asynchronous"),
                                               ("both", "asynchronous")])
def test_the_pettingzoo_api_test_passes(control, protocol):
    from pettingzoo.test import api_test

    env = G.cells_env(None, {**HEX, "run.rounds": 10, "serving.protocol": protocol},
                      control=control, price=50.0)
    api_test(env, num_cycles=30)
    env.close()


@pytest.mark.parametrize("protocol", ["synchronous", "asynchronous"])
def test_an_agents_split_is_its_cells_split(protocol):
    """control 'mode': an agent's prefix action n = 0 sends its cell's corrections by DL, and
    its neighbours' (answering K: every rejected device) by UL, each in its own cell (under
    the asynchronous protocol an agent answers at its cell's drafts; its split stands)."""
    env = G.cells_env(None, {**HEX, "run.rounds": 8, "serving.protocol": protocol},
                      control="mode", price=50.0)
    env.reset(seed=3)
    for name in env.agent_iter():
        _, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else (0 if name == "cell_0" else env.k))
    dev = env.result.device_rounds
    rejected = dev["rejected"].astype(bool)
    mine = rejected & (dev["cell"] == 0)
    assert mine.any() and (dev["mode"][mine] == "dl").all()
    assert (dev["mode"][rejected & (dev["cell"] != 0)] == "ul").all()
    env.close()


@pytest.mark.parametrize("protocol", ["synchronous", "asynchronous"])
@pytest.mark.parametrize("overrides", [
    {"policy.draft": "greedy", "policy.saa_samples": 64},
    {"mobility.model": "random-waypoint", "mobility.speed_mps": 25.0,
     "workload.arrivals": "poisson", "workload.rate_per_s": 0.5},
])
def test_the_cells_own_controllers_as_agents_reproduce_the_network_run(overrides, protocol,
                                                                        tmp_path):
    """Each agent answering with its cell's own controller: the episode is `multispin-sim run`
    of the network (rounds.csv, device_rounds.csv within rtol 1e-12), and each agent's return
    is its cell's tokens minus the price times its cell's span (under the asynchronous protocol
    an agent acts at each of its cell's drafts, one device deciding: its last batch's end)."""
    price = 40.0
    over = {**HEX, "run.rounds": 15, "seed": 4, "serving.protocol": protocol, **overrides}
    env = G.cells_env(None, over, price=price, out=tmp_path / "env")
    returns, starts = play(env, own)
    got = env.result
    want = simulate(load_scenario(None, over), out=tmp_path / "run")
    assert_same_tables(got, want)
    rounds = got.rounds
    for c in range(7):
        mine = rounds["cell"] == c
        span = float(np.max(rounds["start_s"][mine] + rounds["duration_s"][mine]))
        np.testing.assert_allclose(returns[f"cell_{c}"],
                                   rounds["tokens"][mine].sum() - price * span, rtol=1e-9)
    # the agents act in order of their cells' round starts (draft starts: a draft still
    # queued when the network ends is decided but not recorded)
    assert np.all(np.diff(starts) >= 0)
    if protocol == "synchronous":
        assert len(starts) == rounds["cell"].size
    else:
        assert 0 <= len(starts) - got.device_rounds["cell"].size <= env.k * 7
    env.close()


def test_the_reference_price_is_each_cells_goodput_with_fixed_drafts():
    over = {**HEX, "run.rounds": 30}
    env = G.cells_env(None, over, price_rounds=30)
    want = simulate(load_scenario(None, {**over, "policy.draft": "fixed"})).summary["cells"]
    assert env.prices == {c["cell"]: c["goodput_tps"] for c in want}
    env.close()


def test_a_reset_mid_episode_ends_the_old_run_whatever_cell_asks_next():
    """Unwinding a run in progress must not hand another cell's round start to the caller."""
    env = G.cells_env(None, {**HEX, "run.rounds": 10}, price=50.0)
    env.reset(seed=1)
    for _ in range(5):
        env.step(np.full(env.k, 4))
    old = env._sim
    env.reset(seed=2)
    assert old.dead and env.agent_selection in env.agents
    env.close()


@pytest.mark.parametrize("overrides, words", [
    ({"cells.layout": "single"}, ["cells.layout", "'single'", "MultiSpinEnv"]),
    # a Poisson layout's number of cells, so of agents, changes with the episode's seed
    ({"cells.layout": "ppp", "cells.density_per_km2": 20.0}, ["cells.layout", "'ppp'",
                                                              "hex, graphml"]),
    ({**HEX, "cells.drop": "region"}, ["cells.drop", "'region'"]),
])
def test_what_the_environment_does_not_step_is_refused_at_construction(overrides, words):
    overrides = dict(overrides)
    control = overrides.pop("control", "draft")
    with pytest.raises(ValueError) as err:
        G.cells_env(None, overrides, control=control, price=1.0)
    assert all(w in str(err.value) for w in words) and "\n" not in str(err.value)


def test_under_the_asynchronous_protocol_an_agent_acts_at_one_devices_draft():
    """Each observation marks one deciding device of the selected cell and the load of that
    cell (devices in a cycle there, the deciding one included)."""
    env = G.cells_env(None, {**HEX, "run.rounds": 6, "serving.protocol": "asynchronous"},
                      price=10.0)
    env.reset(seed=2)
    steps = 0
    for name in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        assert obs["active"].sum() == 1 and 1 <= obs["load"][0] <= env.k
        env.step(np.full(env.k, 3))
        steps += 1
    assert steps >= env.result.device_rounds["cell"].size
    env.close()


@pytest.mark.parametrize("protocol", ["synchronous", "asynchronous"])
def test_every_agent_answering_all_ul_is_the_networks_all_ul_run(protocol, tmp_path):
    """control 'mode', every agent answering n = K (every rejected device by UL; under the
    asynchronous protocol the split stands from one answer to the next) and greedy control
    pricing with it: the network's run with policy.mode all-ul (rtol 1e-12)."""
    over = {**HEX, "run.rounds": 10, "seed": 5, "serving.protocol": protocol,
            "policy.draft": "greedy", "policy.saa_samples": 64}
    env = G.cells_env(None, over, control="mode", price=40.0, out=tmp_path / "env")
    play(env, lambda env, name: env.k)
    got = env.result
    want = simulate(load_scenario(None, {**over, "policy.mode": "all-ul"}), out=tmp_path / "run")
    dev = got.device_rounds
    assert dev["cell"].size > 50 and set(dev["mode"][dev["rejected"] == 1]) == {"ul"}
    assert_same_tables(got, want)
    env.close()
