"""The Gymnasium environment's speed: env steps/s against the engine's own rounds/s, and an
AsyncVectorEnv of 2 copies against one copy.

1. ``env/engine``: the default scenario (K = 20, fixed gamma = 4, optimal split), the engine's
   run (``simulate``) against an episode of the environment (control='draft', an agent
   returning the constant action gamma = 4), the same number of rounds, interleaved A/B pairs
   (``abtest``); both format their records in-process. Target: >= 0.5.
2. ``async 2/1``: environment steps/s of ``AsyncVectorEnv`` of 2 copies (each vector step
   advances both) against ``AsyncVectorEnv`` of 1 copy, interleaved. Target on the 2-core
   reference machine: >= 1.6. Also printed: 2 copies against one copy stepped in this process,
   which pays no pipe round trip per step.
3. ``cells env/engine``: seven hexagonal cells (ISD 500 m, 20 devices each, fixed gamma = 4),
   the engine's run of the network against an episode of the AEC environment
   (``gym.cells_env``, every agent answering gamma = 4), interleaved. Target: >= 0.5.
4. ``asynchronous env/engine``: the default scenario under the asynchronous protocol, the
   engine's run against an episode of the environment (one step per draft, constant action
   gamma = 4), the same batches, interleaved. A step is a draft, several to a batch, so the
   environment's cost per draft (an observation, a greenlet switch each way) weighs more than
   per round. Target: >= 0.2.
"""
import tempfile

import numpy as np

K = 20


def _episode(env, rounds, action):
    env.reset(seed=1)
    for _ in range(rounds):
        *_, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break


def run(quick=False):
    import gymnasium

    from ..gym import MultiSpinEnv
    from ..scenario import load_scenario
    from .abtest import describe, interleaved, records_in_process, scenario_run

    rounds = 2_000 if quick else 10_000
    pairs = 3 if quick else 5
    action = np.full(K, 4)
    with tempfile.TemporaryDirectory() as tmp, records_in_process():   # one core each
        env = MultiSpinEnv(load_scenario(None, {"run.rounds": rounds, "name": "bench"}), "draft",
                           price=1.0)
        _episode(env, 200, action)  # warm

        def stepped():
            _episode(env, rounds, action)
        res = interleaved(scenario_run(tmp, {"run.rounds": rounds}), stepped, pairs)
        env.close()
    print(f"gym: default scenario K={K}, gamma=4, {rounds:,} rounds; engine run vs environment "
          "episode (control=draft, constant action)")
    describe("engine", "env", res, units=rounds)
    ratio = 1.0 / res["ratio_wall"]
    print(f"  env steps/s / engine rounds/s = {ratio:.2f} (wall), "
          f"{1.0 / res['ratio_cpu']:.2f} (CPU); target >= 0.5")
    figures = {"rounds": rounds, "env_over_engine": ratio, "pairs": res}

    steps = 1_000 if quick else 4_000

    def make():
        return MultiSpinEnv(None, "draft", rounds=100_000, price=1.0)
    vecs = {n: gymnasium.vector.AsyncVectorEnv([make] * n) for n in (1, 2)}
    for n, vec in vecs.items():
        vec.reset(seed=list(range(1, n + 1)))
    one = make()
    one.reset(seed=1)

    def stepper(n):
        vec, act = vecs[n], np.full((n, K), 4)

        def go():
            for _ in range(steps):
                vec.step(act)
        return go
    async1, async2 = stepper(1), stepper(2)

    def local():
        for _ in range(steps):
            one.step(action)
    async1(), async2()  # warm
    res2 = interleaved(async1, async2, pairs)
    res3 = interleaved(local, async2, pairs)
    for vec in vecs.values():
        vec.close()
    one.close()
    speedup = 2.0 / res2["ratio_wall"]
    print(f"gym: AsyncVectorEnv of 2 copies vs of 1 copy, {steps:,} vector steps each")
    describe("async 1 copy", "async 2 copies", res2, units=steps)
    print(f"  environment steps/s, 2 copies / 1 copy = {speedup:.2f} (wall); target >= 1.6")
    local_ratio = 2.0 / res3["ratio_wall"]
    print(f"  against one copy stepped in this process (no pipes): {local_ratio:.2f}; each "
          "vector step pays a pipe round trip and shared-memory copies")
    figures.update(async_speedup=speedup, async_over_local=local_ratio, async_pairs=res2,
                   local_pairs=res3)
    figures.update(cells_figures(quick, pairs))
    figures.update(asynchronous_figures(quick, pairs))
    return figures


def _against_engine(make_env, play, over, pairs):
    """Interleaved A/B of the engine's run of ``over`` against ``play(env)``, one episode of
    the environment ``make_env()`` (warmed up once)."""
    from .abtest import interleaved, records_in_process, scenario_run

    with tempfile.TemporaryDirectory() as tmp, records_in_process():
        env = make_env()
        play(env)   # warm
        res = interleaved(scenario_run(tmp, over), lambda: play(env), pairs)
        env.close()
    return res


def _speed(name, res, target):
    ratio = 1.0 / res["ratio_wall"]
    print(f"  {name} / engine speed = {ratio:.2f} (wall), {1.0 / res['ratio_cpu']:.2f} (CPU); "
          f"target >= {target}")
    return ratio


def asynchronous_figures(quick, pairs):
    """Figure 4 of the module docstring."""
    from ..gym import MultiSpinEnv
    from .abtest import describe

    batches = 600 if quick else 3_000
    over = {"run.rounds": batches, "serving.protocol": "asynchronous", "seed": 1}
    res = _against_engine(lambda: MultiSpinEnv(None, "draft", over, price=1.0),
                          lambda env: _episode(env, 10**9, np.full(K, 4)), over, pairs)
    print(f"gym: the asynchronous protocol, default scenario K = {K}, gamma = 4, {batches:,} "
          "batches; engine run vs environment episode (one step per draft)")
    describe("engine", "env", res)
    return {"asynchronous_env_over_engine": _speed("environment", res, 0.2),
            "asynchronous_pairs": res}


def cells_figures(quick, pairs):
    """Figure 3 of the module docstring."""
    from ..gym import cells_env
    from .abtest import describe

    rounds = 100 if quick else 500
    over = {"run.rounds": rounds, "cells.layout": "hex", "cells.count": 7, "cells.isd_m": 500.0}

    def play(env):
        action = np.full(env.k, 4)
        env.reset(seed=env.scenario.seed)   # the engine run's
        for agent in env.agent_iter():
            *_, terminated, truncated, _ = env.last()
            env.step(None if terminated or truncated else action)
    res = _against_engine(lambda: cells_env(None, over, price=1.0), play, over, pairs)
    print(f"gym: seven hex cells (K = {K} each, gamma = 4), {rounds:,} rounds per cell; engine "
          "run vs AEC environment episode (every agent answering gamma = 4)")
    describe("engine", "cells env", res)
    return {"cells_env_over_engine": _speed("AEC env", res, 0.5), "cells_pairs": res}
