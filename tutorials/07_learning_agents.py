# %% [markdown]
# # 7. Learning agents: training a draft-length policy in the simulator
#
# **Learning goals.**
# - the simulator as a Gymnasium environment: one `step` is one protocol round of the real engine;
#   observations with units, the reward (tokens minus a price times time) and the round's `info`;
# - the built-in controllers (`fixed`, `uniform`, `greedy`, ...) as agents in the same loop;
# - training a draft-length policy with no deep-learning framework: the cross-entropy method (CEM) on a
#   seven-number linear policy, with common random numbers; its learning curve and its final goodput against
#   fixed, uniform and greedy, with 95% confidence intervals;
# - non-i.i.d. acceptance (the Gilbert-Elliott Markov model): what an agent that watches its own outcomes
#   can see and the greedy's i.i.d. objective cannot;
# - the same agent under continuous batching (the asynchronous protocol), where one step is one device's draft.
#
# Needs the `gym` extra (`pip install -e '.[gym,tutorials]'`). The full notebook trains two agents (about 45 s
# of CPU each) and runs in a few minutes on a 2-core laptop; `MULTISPIN_TUTORIALS_QUICK=1` shrinks every size
# (the tests use it; the figures are then only illustrative).

# %%
# %matplotlib inline
import os
import time

import numpy as np
import matplotlib.pyplot as plt
import gymnasium
import multispin_sim.gym as msgym
from multispin_sim import teaching
from multispin_sim.gym.baselines import ConstantAgent, ControllerAgent
from multispin_sim.experiments.tables import mean_ci

plt.rcParams["figure.figsize"] = (7, 3.5)
plt.rcParams["figure.constrained_layout.use"] = True
QUICK = os.environ.get("MULTISPIN_TUTORIALS_QUICK", "") not in ("", "0")
GENERATIONS, POPULATION, TRAIN_ROUNDS = (3, 6, 20) if QUICK else (50, 24, 100)
EVAL_SEEDS, EVAL_ROUNDS = (range(1, 3), 40) if QUICK else (range(1, 9), 300)

# %% [markdown]
# ## The environment
#
# `import multispin_sim.gym` registers `multispin_sim/MultiSpin-v0`. Any scenario file or dict works, with
# `--set`-style overrides; `control="draft"` hands the agent one draft length 0..20 per device (the reactive
# policy, optimal UL/DL selection, still decides the corrections). The default scenario has K = 20 devices.

# %%
DEFAULT = None       # the paper's default scenario (scenarios/default.yaml); a file path or a dict works too
env = gymnasium.make("multispin_sim/MultiSpin-v0", scenario=DEFAULT, control="draft", rounds=TRAIN_ROUNDS)
obs, info = env.reset(seed=1)
print("action space:", env.action_space)
for key, value in obs.items():
    print(f"  {key:16s} shape {value.shape}  first device: {value[0]:.4g}")

# %% [markdown]
# The observation is a `Dict` (units in `multispin_sim.gym.spaces`): UL/DL gains in dB as the controllers see
# them, drafting latency in s/token, the acceptance belief `alpha` the controllers are told, last round's
# accepted drafts and rejection, who has work, the DL power budget in W and the time in s.
#
# The reward of a step is the round's delivered tokens minus a price c (tokens/s) times the simulated time the
# step took: the return is N - c T. Its default price is a reference goodput (the scenario's fixed draft
# lengths); `info` carries everything to build any other reward: tokens, duration, energy, modes, delays.

# %%
obs, reward, terminated, truncated, info = env.step(np.full(20, 4))
print(f"price c = {env.unwrapped.price:.1f} tokens/s; reward {reward:.1f} = {info['tokens']} tokens "
      f"- c x {info['elapsed_s']:.3f} s")
print("info keys:", ", ".join(info))

# %% [markdown]
# ## Baselines, played through the same loop
#
# Every built-in draft controller is an agent (`ControllerAgent(env, name)`): it decides on the environment's
# round-start context exactly as inside `multispin-sim run`. `episode` plays one episode and returns the
# goodput N / T. All policies are scored on the same seeds: the same devices, fading and acceptance draws
# (common random numbers), so their differences are not luck of the draw.

# %%
def episode(env, agent, seed, log=None):
    """Goodput (tokens/s) of one episode of ``agent(obs, info) -> draft lengths``."""
    if hasattr(agent, "reset"):
        agent.reset()
    obs, info = env.reset(seed=seed)
    tokens = seconds = 0.0
    while True:
        action = agent(obs, info)
        obs, _, terminated, truncated, info = env.step(action)
        tokens += info["tokens"]
        seconds += info["elapsed_s"]
        if log is not None:
            log.append(info)
        if terminated or truncated:
            return tokens / seconds


def scores(scenario, agents, seeds=EVAL_SEEDS, rounds=EVAL_ROUNDS, overrides=None):
    """{name: goodputs on each seed} of {name: make_agent(env)}."""
    e = msgym.MultiSpinEnv(scenario, "draft", overrides, rounds=rounds, price=0.0)
    return {name: np.array([episode(e, make(e), s) for s in seeds]) for name, make in agents.items()}


BASELINES = {"fixed": lambda e: ConstantAgent(np.full(e.k, e.scenario.policy.draft_length)),
             "uniform": lambda e: ControllerAgent(e, "uniform"),
             "greedy": lambda e: ControllerAgent(e, "greedy")}
base_iid = scores(DEFAULT, BASELINES)
for name, g in base_iid.items():
    m, lo, hi = mean_ci(g)
    print(f"{name:8s} goodput {m:6.1f} tokens/s  (95% CI {lo:.1f} to {hi:.1f}, {len(g)} seeds)")

# %% [markdown]
# ## A policy of seven numbers
#
# Tutorials 3 and 4 showed where the goodput goes: a correction over a channel in a deep fade takes very long
# (the mean delay under Rayleigh fading is infinite), and the whole batch waits for it. A device that does not
# draft cannot be rejected and needs no correction. So the policy below decides per device, from the device's
# own observation, *whether* to draft (a linear score of its UL gain) and *how long* (another linear score).
# Besides the told belief `alpha` it keeps its own running estimate `q` of each device's recent agreement
# rate, from the accepted counts it sees: under i.i.d. acceptance `q` only repeats `alpha` noisily, under
# Markov acceptance it tracks the hidden easy/hard state.
#
# gate_k = x_k + w0 + w1 a_k + w2 b_k > 0, length_k = clip(round(u0 + u1 a_k + u2 b_k + u3 x_k), 1, 20),
# with x = (gain_dB + 120) / 10, a = 5 (alpha - 0.75), b = 5 (q - 0.75).

# %%
class LinearAgent:
    def __init__(self, theta, max_draft=20, memory=0.9):
        self.theta, self.max_draft, self.memory = np.asarray(theta, float), max_draft, memory

    def reset(self):
        self.agreed = self.tested = None

    def __call__(self, obs, info):
        alpha = obs["alpha"].astype(float)
        if self.agreed is None:
            self.agreed, self.tested = np.zeros_like(alpha), np.zeros_like(alpha)
        # last round (continuous batching: each batch verified since the last decision): accepted of
        # gamma drafts, min(gamma, accepted + 1) tested
        for told in info.get("verified", [info] if "gamma" in info else []):
            g, acc = told["gamma"], told["accepted"]
            self.agreed = self.memory * self.agreed + acc
            self.tested = self.memory * self.tested + np.minimum(g, acc + 1)
        q = (self.agreed + 2 * alpha) / (self.tested + 2)      # two pseudo-counts of the belief
        x, a, b = (obs["g_ul_db"] + 120) / 10, 5 * (alpha - 0.75), 5 * (q - 0.75)
        w0, w1, w2, u0, u1, u2, u3 = self.theta
        gate = x + w0 + w1 * a + w2 * b > 0
        length = np.clip(np.rint(u0 + u1 * a + u2 * b + u3 * x), 1, self.max_draft)
        return np.where(gate & (obs["active"] == 1), length, 0).astype(np.int64)


START = np.array([5.0, 0, 0, 1.0, 0, 0, 0])   # a poor start: every device always drafts one token

# %% [markdown]
# ## Training by the cross-entropy method
#
# CEM keeps a Gaussian over the seven numbers: each generation draws `POPULATION` candidates, plays each for
# one episode, keeps the best fifth (the elite) and moves the Gaussian to the elite's mean and spread. Every
# candidate of a generation plays the *same* seed (common random numbers), so the ranking compares policies,
# not channels; the seed changes between generations, so the policy must work on many placements and fades.
#
# Why not a policy gradient? REINFORCE on a linear-softmax policy estimates the gradient from the rewards
# themselves, and round times are heavy-tailed (a rare deep-fade correction dominates a whole batch of
# rounds): in our trials (100 updates of two 100-round episodes each, per-round rewards at a Dinkelbach
# price) it stayed near the fixed policy's goodput. CEM only ranks candidates on common random numbers, which
# the heavy tail cannot upset. Its fitness is the episode's goodput N / T itself: a method that ranks whole
# episodes can use the ratio directly, the per-step reward with its price is for methods that learn from
# single steps.

# %%
def cem(scenario, generations=GENERATIONS, population=POPULATION, rounds=TRAIN_ROUNDS, seed=0):
    e = msgym.MultiSpinEnv(scenario, "draft", rounds=rounds, price=0.0)
    rng = np.random.default_rng(seed)
    mean, std = START.copy(), np.array([2.0, 2, 2, 3, 3, 3, 3])
    n_elite = max(2, population // 5)
    curve = []
    for gen in range(generations):
        candidates = mean + std * rng.standard_normal((population, mean.size))
        fitness = np.array([episode(e, LinearAgent(c), 1000 + gen) for c in candidates])
        elite = candidates[np.argsort(fitness)[-n_elite:]]
        mean = 0.3 * mean + 0.7 * elite.mean(axis=0)
        std = 0.3 * std + 0.7 * elite.std(axis=0) + 0.2     # a floor keeps it exploring
        curve.append((np.median(fitness), fitness.max()))
    return mean, np.array(curve)


t0, c0 = time.perf_counter(), time.process_time()
theta_iid, curve_iid = cem(DEFAULT)
train_iid_s, train_iid_cpu = time.perf_counter() - t0, time.process_time() - c0
print(f"trained in {train_iid_s:.0f} s wall, {train_iid_cpu:.0f} s CPU "
      f"({GENERATIONS} x {POPULATION} episodes of {TRAIN_ROUNDS} rounds)")
print("theta =", np.round(theta_iid, 2))

# %% [markdown]
# The learning curve, each generation's goodput relative to greedy's on the same episode (same seed, so the
# ratio removes the luck of the placement and the fades):

# %%
train_env = msgym.MultiSpinEnv(DEFAULT, "draft", rounds=TRAIN_ROUNDS, price=0.0)
greedy_gen = np.array([episode(train_env, ControllerAgent(train_env, "greedy"), 1000 + g)
                       for g in range(GENERATIONS)])
fixed_gen = np.array([episode(train_env, BASELINES["fixed"](train_env), 1000 + g) for g in range(GENERATIONS)])
fig, ax = plt.subplots()
gens = np.arange(1, GENERATIONS + 1)
ax.plot(gens, curve_iid[:, 0] / greedy_gen, "o-", label="median candidate")
ax.plot(gens, curve_iid[:, 1] / greedy_gen, "s-", ms=4, label="best candidate")
ax.plot(gens, fixed_gen / greedy_gen, ":", color="grey", label="fixed gamma = 4")
ax.axhline(1.0, color="C3", label="greedy")
ax.set(xlabel="generation", ylabel="goodput / greedy's (same episode)",
       title="CEM on the default scenario (i.i.d. acceptance)"); ax.legend(); plt.show()
ratio = curve_iid[:, 0] / greedy_gen
print(f"median candidate / greedy: {ratio[0]:.2f} in generation 1, {ratio[-5:].mean():.2f} over the last "
      f"{min(5, GENERATIONS)}; fixed gamma = 4 / greedy: {np.mean(fixed_gen / greedy_gen):.2f}")

# %% [markdown]
# ## The trained agent against fixed, uniform and greedy
#
# On evaluation seeds it never saw in training, longer episodes, 95% confidence intervals over the seeds
# (Student t); `start` is the policy CEM started from. The paired difference to greedy (same seeds) has a much narrower interval than either goodput.

# %%
def compare(results, title):
    names = list(results)
    stats = [mean_ci(results[n]) for n in names]
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.bar(names, [s[0] for s in stats], yerr=[[s[0] - s[1] for s in stats], [s[2] - s[0] for s in stats]],
           capsize=4, color=["C7"] * (len(names) - 1) + ["C2"])
    ax.set(ylabel="goodput (tokens/s)", title=title); plt.show()
    for n, (m, lo, hi) in zip(names, stats):
        print(f"{n:16s} {m:6.1f} tokens/s  (95% CI {lo:6.1f} to {hi:6.1f})")
    m, lo, hi = mean_ci(results["agent"] - results["greedy"])
    print(f"agent - greedy, paired: {m:+.1f} tokens/s (95% CI {lo:+.1f} to {hi:+.1f})")


agent_iid = scores(DEFAULT, {"start (untrained)": lambda e: LinearAgent(START),
                             "agent": lambda e: LinearAgent(theta_iid)})
compare({**base_iid, **agent_iid}, "default scenario, i.i.d. acceptance")

# %% [markdown]
# Where does its goodput come from? The gate: the trained agent leaves out exactly the devices in deep fades
# (the greedy instead drops *everyone* to gamma = 0 in some rounds, or drafts and pays the slow correction).

# %%
obs_log, gam = [], []
probe = LinearAgent(theta_iid)
probe.reset()
o, i = train_env.reset(seed=1)
for _ in range(min(TRAIN_ROUNDS, 60)):
    a = probe(o, i)
    obs_log.append(o["g_ul_db"].copy()); gam.append(a)
    o, _, term, trunc, i = train_env.step(a)
    if term or trunc:
        break
g_db, gam = np.concatenate(obs_log), np.concatenate(gam)
fig, ax = plt.subplots()
ax.plot(g_db, gam + np.random.default_rng(0).uniform(-0.2, 0.2, gam.size), ".", alpha=0.4)
ax.set(xlabel="device's UL gain this round (dB)", ylabel="draft length chosen",
       title="the trained gate: no draft in a deep fade"); plt.show()

# %% [markdown]
# ## Non-i.i.d. acceptance: the Markov model
#
# `scenarios/acceptance/markov.yaml` (below as a dict): each device's agreements follow an easy/hard chain,
# agreement 0.88 in the easy state and 0.56 in the hard one, one step per token position, states lasting tens
# of positions (tens of rounds at these draft lengths), fitted to a Spec-Bench trace (mean 0.64). The controllers
# are told the long-run mean rate (`acceptance.belief: nominal`), so greedy's i.i.d. objective plans every round
# for a device of average agreement. The agent's own estimate `q` (memory 0.9 per round) follows each device's
# recent outcomes. Shown: the baselines; greedy told the chain's own forward filter (`acceptance.belief:
# filtered`), a controller that knows the model; the agent trained above under i.i.d. acceptance, deployed
# unchanged; and the same CEM, from the same poor start, trained on this scenario.

# %%
MARKOV = {"acceptance": {"model": "markov", "easy_rate": 0.880647, "hard_rate": 0.555158,
                         "easy_to_hard": 0.016226, "hard_to_easy": 0.005624, "belief": "nominal"}}
t0, c0 = time.perf_counter(), time.process_time()
theta_mk, curve_mk = cem(MARKOV)
train_mk_s, train_mk_cpu = time.perf_counter() - t0, time.process_time() - c0
print(f"trained in {train_mk_s:.0f} s wall, {train_mk_cpu:.0f} s CPU; theta = {np.round(theta_mk, 2)}")
res_mk = scores(MARKOV, BASELINES)
res_mk["greedy (filtered)"] = scores(MARKOV, {"g": lambda e: ControllerAgent(e, "greedy")},
                                     overrides={"acceptance.belief": "filtered"})["g"]
res_mk["agent (i.i.d.-trained)"] = scores(MARKOV, {"a": lambda e: LinearAgent(theta_iid)})["a"]
res_mk["agent"] = scores(MARKOV, {"a": lambda e: LinearAgent(theta_mk)})["a"]
compare(res_mk, "Markov (easy/hard) acceptance")

# %% [markdown]
# Where it wins and where it loses. One evaluation episode of each policy, every device-round sorted by what
# the device's *previous* draft did: fully accepted (likely the easy state) or rejected at its first or second
# token (likely the hard state). Look at three things: whether the draft length follows the previous outcome
# (greedy's cannot, its belief is the same in both cases), how many device-rounds do not speculate at all
# (gamma = 0: no rejection possible, no correction), and what the rounds cost in time.

# %%
def how_it_drafts(agent, scenario=MARKOV):
    e = msgym.MultiSpinEnv(scenario, "draft", rounds=EVAL_ROUNDS, price=0.0)
    log = []
    goodput = episode(e, agent(e), seed=1, log=log)
    g = np.array([i["gamma"] for i in log]); acc = np.array([i["accepted"] for i in log])
    tok = np.array([i["device_tokens"] for i in log])
    full = (acc[:-1] == g[:-1]) & (g[:-1] > 0)
    early = (g[:-1] > 0) & (acc[:-1] < np.minimum(g[:-1], 2))
    return {"goodput": goodput, "after full": g[1:][full].mean(), "after early": g[1:][early].mean(),
            "no draft": (g == 0).mean(), "tokens": tok.mean(),
            "round s": np.mean([i["elapsed_s"] for i in log])}


rows = {"greedy": how_it_drafts(lambda e: ControllerAgent(e, "greedy")),
        "greedy (filtered)": how_it_drafts(lambda e: ControllerAgent(e, "greedy"),
                                           {**MARKOV, "acceptance": {**MARKOV["acceptance"],
                                                                     "belief": "filtered"}}),
        "agent (i.i.d.-trained)": how_it_drafts(lambda e: LinearAgent(theta_iid)),
        "agent": how_it_drafts(lambda e: LinearAgent(theta_mk))}
print(f"{'':24s} {'goodput':>8s} {'gamma after full':>17s} {'after early':>12s} {'no draft':>9s} "
      f"{'tokens/dev-round':>17s} {'round (s)':>10s}")
for name, r in rows.items():
    print(f"{name:24s} {r['goodput']:8.1f} {r['after full']:17.2f} {r['after early']:12.2f} "
          f"{r['no draft']:9.0%} {r['tokens']:17.2f} {r['round s']:10.3f}")
fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.5))
x = np.arange(len(rows))
a1.bar(x - 0.2, [r["after full"] for r in rows.values()], 0.4, label="after a full acceptance")
a1.bar(x + 0.2, [r["after early"] for r in rows.values()], 0.4, label="after an early rejection")
a1.set_xticks(x, list(rows), rotation=15); a1.set(ylabel="mean draft length"); a1.legend()
a2.bar(x, [r["round s"] for r in rows.values()], color="C7")
a2.set_xticks(x, list(rows), rotation=15); a2.set(ylabel="mean round time (s)")
plt.show()
print(f"training: {train_iid_s:.0f} s + {train_mk_s:.0f} s wall, {train_iid_cpu:.0f} s + {train_mk_cpu:.0f} s CPU "
      "(i.i.d. + Markov)")

# %% [markdown]
# **What the full-size run shows** (8 evaluation seeds of 300 rounds). Under i.i.d. acceptance the agent beats
# greedy by about 29 tokens/s (paired 95% CI +26 to +32): not by drafting better lengths but by its gate, which
# keeps devices in a deep fade out of the batch. Under Markov acceptance:
#
# - the agent trained under i.i.d. acceptance and deployed unchanged *loses* about 9 tokens/s to greedy. It does
#   follow its own outcomes, the wrong way for this chain: it drafts *shorter* after a full acceptance than after
#   an early rejection (its weight on its own acceptance estimate came out negative in i.i.d. training, where
#   that estimate tells nothing). Its lengths were tuned for agreement rates of 0.83-0.93, far too long at 0.64,
#   and its rounds get longer; greedy adapts at once, because it is *told* the new mean rate
#   (`acceptance.belief: nominal`);
# - retrained on this scenario, the agent *ties* greedy (paired difference +0.6, 95% CI -1.8 to +3.1 tokens/s), by
#   another route: one-token drafts and shorter rounds instead of greedy's two to three tokens;
# - the state information that the i.i.d. objective cannot see is worth little here: the agent's drafts hardly
#   depend on the previous outcome once trained, and greedy told the chain's forward filter gains nothing
#   either. With 20 devices the batch waits for the slowest draft, so one device in its easy state cannot draft
#   long without holding up the other nineteen, most of them in the hard state (three quarters of the time).

# %% [markdown]
# ## The same agent under continuous batching
#
# With `serving.protocol: asynchronous` (the documentation's page *Protocol and serving*) the server
# verifies whatever drafts are waiting as soon as it is free, and each device starts its next draft when its
# own cycle ends: no device waits for the slowest. One `step` is then one device's draft decision: `active`
# marks the deciding device, `load` counts the devices in a cycle, and the action keeps its shape (only the
# deciding device's entry is drafted), so the agent trained on rounds above plays here unchanged. The reward
# counts the batches that end between two decisions, so `episode` still returns N / T. A deep-fade correction
# now holds up only its own device (and the batches whose corrections queue behind it on the channel): does the
# gate still pay?

# %%
ASYNC = {"serving.protocol": "asynchronous"}
ASYNC_ROUNDS = 3 * EVAL_ROUNDS   # batches of a few drafts each: about the simulated time of EVAL_ROUNDS rounds
res_async = scores(DEFAULT, {**BASELINES, "agent": lambda e: LinearAgent(theta_iid)}, rounds=ASYNC_ROUNDS,
                   overrides=ASYNC)
compare(res_async, "default scenario, continuous batching (agent trained on rounds)")

# %% [markdown]
# **What the full-size run shows** (8 evaluation seeds, 900 batches each, about the simulated time of the 300
# rounds above): the protocol alone lifts the fixed gamma = 4 from 177 to 265 tokens/s, since no device waits
# for the slowest draft or correction of a round any more; uniform (281), greedy (286) and the agent (277) are
# within the noise of each other (the agent - greedy paired difference is -9 tokens/s, 95% CI -52 to +35: a
# correction in a deep fade still holds the channel, and the batches queued behind it, for a long time, so
# the seeds differ a lot). The agent's edge in rounds (+29) does not carry over: its gate kept a device in a
# deep fade out of a round that would otherwise have waited for it, and in continuous batching that wait is
# mostly gone. To train for this protocol, give `cem` the scenario `{"serving": {"protocol": "asynchronous"}}`
# and episodes of a few hundred batches.

# %% [markdown]
# ## Exercises

# %% [markdown]
# **Exercise 7.1.** The environment's reward is r_t = tokens_t - c elapsed_t. Write
# `goodput_and_return(infos, price)`: from the `info` dicts of one episode, the episode's goodput N / T
# (tokens/s) and its return N - c T at price c.

# %% tags=["exercise-7.1", "starter"]
def goodput_and_return(infos, price):
    # TODO: N = total tokens, T = total elapsed time; return (N / T, N - price * T)
    return None


# %% tags=["exercise-7.1", "solution"]
def goodput_and_return(infos, price):
    tokens = sum(i["tokens"] for i in infos)
    seconds = sum(i["elapsed_s"] for i in infos)
    return tokens / seconds, tokens - price * seconds


# %% tags=["check-7.1"]
teaching.check_goodput_and_return(goodput_and_return)

# %% [markdown]
# **Exercise 7.2.** Write a hand-made policy `my_policy(obs)` for the default scenario (20 devices): an array of
# 20 draft lengths. The check plays it on a seed it picks and wants at least 1.4 times the goodput of the fixed
# draft length 4. (Hint: the trained gate above.)

# %% tags=["exercise-7.2", "starter"]
def my_policy(obs):
    # TODO: one draft length per device from obs["g_ul_db"] (and anything else in obs)
    return None


# %% tags=["exercise-7.2", "solution"]
def my_policy(obs):
    return np.where(obs["g_ul_db"] < -130.0, 0, 10)


# %% tags=["check-7.2"]
teaching.check_threshold_policy(my_policy)
