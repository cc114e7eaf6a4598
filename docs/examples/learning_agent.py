"""An agent in the loop: the Gymnasium environment (docs/guide/learning-agents.md) with a
hand-written draft-length rule against two of the simulator's own controllers played as agents,
the paper's greedy search and the fixed gamma = 4, on one episode of the same seed each.

The rule: draft round(alpha / (1 - alpha)) tokens (about the expected run of accepted tokens),
at most ``policy.max_draft``, and none for a device whose UL gain (path loss included) is 10 dB
below the round's median: a deep fade would hold up the batch with a slow correction. Each
step's ``info["regret"]`` compares the draft objective (expected tokens over expected round
time, tokens/s) at the agent's draft vector with the best vector's on the same sampled outcomes;
with K = 4 devices and ``policy.max_draft`` = 4 there are 5^4 = 625 vectors, so the best is
found by exhaustive search and the regret is >= 0. The agents see the same drop, fading and
acceptance draws (an agent consumes none of the engine's random streams).

Run it: ``python docs/examples/learning_agent.py`` (needs ``pip install -e '.[gym]'``; three
episodes of 200 rounds, a few seconds). Without gymnasium it prints one line and returns None.
"""
import importlib.util

import numpy as np

MAX_DRAFT = 4   # 5^K draft vectors: small enough to search them all


def rule(obs, info=None):
    """Draft about the expected accepted run; nothing in a deep fade or without work."""
    alpha = obs["alpha"].astype(float)
    gamma = np.clip(np.rint(alpha / (1.0 - alpha)), 1, MAX_DRAFT)
    deep = obs["g_ul_db"] < np.median(obs["g_ul_db"]) - 10.0
    return np.where(deep | (obs["active"] == 0), 0, gamma).astype(np.int64)


def episode(env, agent, seed):
    """Play one episode; return (goodput in tokens/s, the steps' regret dicts)."""
    obs, info = env.reset(seed=seed)
    tokens = elapsed = 0.0
    regrets = []
    while True:
        obs, _, terminated, truncated, info = env.step(agent(obs, info))
        tokens, elapsed = tokens + info["tokens"], elapsed + info["elapsed_s"]
        regrets.append(info["regret"])
        if terminated or truncated:
            return tokens / elapsed, regrets


def main(rounds=200, devices=4, seed=1):
    """Return {"agents": {name: (goodput, regrets)}, "price": tokens/s}; None without gymnasium."""
    if importlib.util.find_spec("gymnasium") is None:
        print("gymnasium is not installed: pip install -e '.[gym]'")
        return None
    from multispin_sim.gym import MultiSpinEnv
    from multispin_sim.gym.baselines import ControllerAgent

    env = MultiSpinEnv(None, "draft", {"devices.count": devices, "policy.max_draft": MAX_DRAFT},
                       rounds=rounds, regret=True, regret_samples=100, price_rounds=rounds)
    agents = {"rule": rule, "greedy": ControllerAgent(env, "greedy"),
              "fixed gamma=4": ControllerAgent(env, "fixed")}
    out = {name: episode(env, agent, seed) for name, agent in agents.items()}
    env.close()
    print(f"K = {devices}, {rounds} rounds, seed {seed}; price (fixed gamma's goodput) "
          f"{env.price:.1f} tokens/s")
    print(f"{'agent':<14} {'goodput':>8} {'mean regret':>11} {'max regret':>10}  search"
          "   (all in tokens/s)")
    for name, (goodput, regrets) in out.items():
        r = np.array([x["regret"] for x in regrets])
        print(f"{name:<14} {goodput:8.1f} {r.mean():11.3f} {r.max():10.3f}  "
              f"{regrets[0]['method']}")
    return {"agents": out, "price": env.price}


if __name__ == "__main__":
    main()
