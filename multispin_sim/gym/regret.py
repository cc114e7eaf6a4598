"""Per-step regret: the agent's expected round objective against the best draft vector.

For the round start's context (gains, active devices, belief, reactive policy) the draft
objective G (``policies.draft.priced_objective``, the searching controllers' own: expected
tokens over expected round time, or expected tokens per joule, E[T_comm] over ``samples``
outcomes drawn from the environment's own stream, never an engine stream, with the corrections
priced as the scenario's controllers price them) is evaluated at the agent's gamma and at
the best gamma found on the same samples: by exhaustive search over every vector when there are
at most ``max_exhaustive`` of them (prod(cap_k + 1)), else by the paper's greedy. regret =
G(best) - G(agent), >= 0 with the exhaustive search (up to ties), possibly < 0 against the
greedy (which is a heuristic).
"""
import numpy as np

from ..policies.draft import priced_objective
from ..policies.draft_search import exhaustive_search, greedy_search


def round_regret(ctx, gamma, rng, max_draft, samples=200, max_exhaustive=4096, energy=None,
                 pricing=None):
    """dict(agent=G(gamma), best=G(best), regret, best_gamma, method) for one round start
    (``ctx``: its ``DraftContext``; caps: ``max_draft``, the request's remaining tokens - 1;
    ``pricing``: the scenario's ``priced_objective`` options, ``policies.draft.pricing_options``;
    None: the round start's CSI, the SAA estimator)."""
    system = ctx.system
    k = system.k
    active = np.asarray(ctx.active, dtype=bool)
    caps = np.full(k, int(max_draft), dtype=np.int64)
    if ctx.remaining is not None:
        caps = np.minimum(caps, np.maximum(np.asarray(ctx.remaining) - 1, 0)).astype(np.int64)
    caps = np.where(active, caps, 0)
    obj = priced_objective(ctx, active, caps, ctx.reactive, rng, samples, energy=energy,
                           **(pricing or {}))
    agent = float(obj.value_of(np.asarray(gamma, dtype=np.int64)))
    if not active.any():
        return {"agent": agent, "best": agent, "regret": 0.0,
                "best_gamma": np.zeros(k, dtype=np.int64), "method": "none"}
    n_vectors = float(np.prod(caps[active].astype(float) + 1.0))
    if n_vectors <= max_exhaustive:
        best, method = exhaustive_search(obj), "exhaustive"
    else:
        best, method = greedy_search(obj), "greedy"
    return {"agent": agent, "best": float(best.value), "regret": float(best.value) - agent,
            "best_gamma": np.asarray(best.gamma, dtype=np.int64), "method": method}

