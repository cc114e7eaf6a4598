# %% [markdown]
# # 1. One round by hand
#
# **Learning goals.** After this notebook you can
# - say what one Multi-SPIN round is made of: drafting on the devices, one batched verification on the
#   server, and corrections for the rejected drafts;
# - compute the expected tokens of a round, E[N], from the acceptance rate alpha and the draft length gamma,
#   and check it against the simulator;
# - read a round's time budget (draft, verify, comm) on the timeline chart.
#
# Run the cells from top to bottom (Shift-Enter). Exercises are at the end; each has a check that prints
# PASS or FAIL with a hint.

# %%
# %matplotlib inline
import numpy as np
import matplotlib.pyplot as plt
import multispin_sim as ms
from multispin_sim import teaching

plt.rcParams["figure.figsize"] = (7, 3.5)
plt.rcParams["figure.constrained_layout.use"] = True

# %% [markdown]
# ## One round, told by the simulator
#
# Three devices, the paper's default parameters otherwise. `teaching.explain` tells the first rounds as a
# story (the same text as `multispin-sim run --explain N`).

# %%
result = teaching.run({"devices.count": 3, "run.rounds": 200, "seed": 3})
print(teaching.explain(result, rounds=1))

# %% [markdown]
# ## Acceptance and the bonus token
#
# Device k drafts gamma tokens with its small model. The server's large model accepts each draft with
# probability alpha (i.i.d. model), and stops at the first rejection. With A accepted drafts:
# - if A < gamma the (A+1)-th draft was rejected: the server and the device must agree on a **correction**
#   token, drawn from the residual distribution -- this needs a whole distribution over the link;
# - if A = gamma every draft was accepted: the server adds a **bonus** token for free.
#
# Either way the round gives N = A + 1 tokens. P(A >= j) = alpha^j, so
# E[N] = 1 + alpha + ... + alpha^gamma = (1 - alpha^(gamma+1)) / (1 - alpha).

# %%
from multispin_sim.model.speculative import expected_tokens, draft_outcome

rng = np.random.default_rng(1)
gammas = np.arange(0, 21)
fig, ax = plt.subplots()
for alpha in (0.7, 0.83, 0.93):
    ax.plot(gammas, expected_tokens(alpha, gammas), label=f"closed form, alpha={alpha}")
    u = 1.0 - rng.random((20_000, 1))                       # one uniform per round
    _, tokens, _ = draft_outcome(u, alpha, gammas[None, :])  # coupled draws for every gamma
    ax.plot(gammas, tokens.mean(axis=0), "o", ms=3, color=ax.lines[-1].get_color())
ax.axhline(1 / (1 - 0.93), ls=":", color="grey")
ax.set(xlabel="draft length gamma", ylabel="E[N] tokens per round",
       title="E[N]: closed form (lines) vs 20,000 sampled rounds (dots)")
ax.legend(fontsize=8); plt.show()

# %% [markdown]
# E[N] saturates at 1 / (1 - alpha) (dotted line for alpha = 0.93): long drafts stop paying off, while
# drafting time grows linearly in gamma. Move the sliders to see the distribution of N (with a static
# figure when widgets are not available).

# %%
from multispin_sim.model.speculative import accepted_pmf

def show_pmf(alpha=0.85, gamma=6):
    pmf = accepted_pmf(alpha, gamma)
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.bar(np.arange(gamma + 1) + 1, pmf, color=["C0"] * gamma + ["C2"])
    ax.set(xlabel="tokens N = A + 1 (green: all accepted, bonus token)", ylabel="P(N)",
           title=f"alpha={alpha:.2f}, gamma={gamma}: E[N]={expected_tokens(alpha, gamma):.3f}, "
                 f"P(correction)={1 - alpha**gamma:.3f}")
    plt.show()

teaching.explore(show_pmf, alpha=(0.5, 0.99, 0.01, 0.85), gamma=(1, 20, 1, 6))

# %% [markdown]
# ## Simulated E[N] against the closed form
#
# In the simulator every device-round is one row of `device_rounds.csv` (`result.device_rounds`). Four
# devices with alpha = 0.9 and gamma = 5:

# %%
run = teaching.run({"devices.count": 4, "run.rounds": 1000, "policy.draft_length": 5,
                    "devices.acceptance": {t: 0.9 for t in ("humaneval", "gsm8k", "ifeval", "mt-bench")}})
dr = run.device_rounds
mean = dr["tokens"].mean()
half = 1.96 * dr["tokens"].std(ddof=1) / np.sqrt(dr["tokens"].size)
print(f"simulated E[N] = {mean:.3f} +- {half:.3f} (95%), closed form {expected_tokens(0.9, 5):.4f}")

# %% [markdown]
# ## The round's time budget
#
# A round lasts `max_k gamma_k t_k` (the batch waits for the slowest draft) + `T_ver0 + K_b T_ver1` (one
# batched verification) + `T_comm` (the slowest correction). The timeline chart shows three rounds of the
# 3-device run: drafting (blue), waiting (grey), UL (orange) or DL (green) corrections, and the server's
# verification.

# %%
from IPython.display import Image, display
from multispin_sim.plots.timeline import plot_timeline

png, _ = plot_timeline(result.folder, rounds=3, out=result.folder / "timeline.png")
display(Image(filename=str(png)))
rt = result.rounds
shares = {name: rt[name].sum() / rt["duration_s"].sum() for name in ("draft_s", "verify_s", "comm_s")}
print({k: f"{v:.0%}" for k, v in shares.items()}, f"median comm {np.median(rt['comm_s']) * 1e3:.1f} ms")


# %% [markdown]
# ## Exercises

# %% [markdown]
# **Exercise 1.1.** Write `my_expected_tokens(alpha, gamma)` as the **sum** 1 + alpha + ... + alpha^gamma
# (not the closed form), valid for alpha = 1 and gamma = 0.

# %% tags=["exercise-1.1", "starter"]
def my_expected_tokens(alpha, gamma):
    # TODO: return E[N] = sum_{j=0}^{gamma} alpha^j
    return None


# %% tags=["exercise-1.1", "solution"]
def my_expected_tokens(alpha, gamma):
    return sum(alpha**j for j in range(gamma + 1))


# %% tags=["check-1.1"]
teaching.check_expected_tokens(my_expected_tokens)


# %% [markdown]
# **Exercise 1.2.** Write `my_round_time(gamma, t, verify_fixed_s, verify_per_device_s, t_comm_s)`: the
# length in seconds of one round in which every device (arrays `gamma`, `t`) is in the batch.

# %% tags=["exercise-1.2", "starter"]
def my_round_time(gamma, t, verify_fixed_s, verify_per_device_s, t_comm_s):
    # TODO: drafting (the slowest device) + verification + communication
    return None


# %% tags=["exercise-1.2", "solution"]
def my_round_time(gamma, t, verify_fixed_s, verify_per_device_s, t_comm_s):
    drafting = np.max(np.asarray(gamma) * np.asarray(t))
    return drafting + verify_fixed_s + len(gamma) * verify_per_device_s + t_comm_s


# %% tags=["check-1.2"]
teaching.check_round_time(my_round_time)

# %% [markdown]
# **Exercise 1.3.** In the 4-device run above (`dr = run.device_rounds`, alpha = 0.9, gamma = 5), what share
# of device-rounds accepted every draft (bonus token), and what does theory say? Give `(simulated, theory)`.

# %% tags=["exercise-1.3", "starter"]
# TODO: answer = (share of device-rounds with accepted == draft_len, its theoretical value)
answer = None

# %% tags=["exercise-1.3", "solution"]
answer = ((dr["accepted"] == dr["draft_len"]).mean(), 0.9**5)

# %% tags=["check-1.3"]
teaching.check_full_acceptance(answer)
