"""The Gilbert-Elliott agreement chain (an easy and a hard state, one step per token position):
its stationary law, mean and lag-1 autocorrelation, and sampling it. Used by the ``markov``
acceptance model, the ``filtered`` belief and the acceptance fit.
"""
import numpy as np

# the chain's parameters as the scenario's ``acceptance`` keys name them
MARKOV_KEYS = ("easy_rate", "hard_rate", "easy_to_hard", "hard_to_easy")


def markov_stationary(easy_to_hard, hard_to_easy):
    """Stationary probability of the easy state, pi_e = h2e / (e2h + h2e)."""
    return hard_to_easy / (easy_to_hard + hard_to_easy)


def markov_moments(easy_rate, hard_rate, easy_to_hard, hard_to_easy):
    """(mean agreement rate, lag-1 autocorrelation) of the Gilbert-Elliott agreement sequence."""
    pe = markov_stationary(easy_to_hard, hard_to_easy)
    m = pe * easy_rate + (1 - pe) * hard_rate
    lam = 1.0 - easy_to_hard - hard_to_easy
    var = m * (1 - m)
    rho = pe * (1 - pe) * (easy_rate - hard_rate) ** 2 * lam / var if var > 0 else 0.0
    return m, rho


def markov_chain(rng, n, rates, switch, state=None):
    """n positions of the Gilbert-Elliott chain: (agreement bits, per-position rate, last state).

    ``rates``: agreement rate (easy, hard); ``switch``: (easy -> hard, hard -> easy) per
    position; ``state``: the state at the position before (None: start in the stationary law).
    """
    if state is None:
        state = 0 if rng.random() < markov_stationary(*switch) else 1
    elif rng.random() < switch[state]:
        state = 1 - state
    # sojourns are geometric (memoryless: a sojourn cut at the block's end continues alike);
    # drawn in batches of alternating states, as many batches as the block needs
    p = np.asarray(switch, dtype=float)
    if p[state] <= 0:
        states = np.full(n, state, dtype=np.int8)
    else:
        order = np.array([state, 1 - state])
        pairs = int(n * max(p.sum(), 1e-3) / 2 * 1.5) + 8
        lengths, total = [], 0
        while total < n:
            q = p[order]
            stay = [rng.geometric(x, size=pairs) if x > 0 else np.full(pairs, n) for x in q]
            batch = np.column_stack(stay).ravel()
            lengths.append(batch)
            total += int(batch.sum())
        lengths = np.concatenate(lengths)
        lengths = lengths[:int(np.searchsorted(np.cumsum(lengths), n)) + 1]
        labels = np.resize(order, len(lengths)).astype(np.int8)
        states = np.repeat(labels, lengths)[:n]
    rate = np.asarray(rates)[states]
    bits = rng.random(n) < rate
    return bits, rate, int(states[-1])
