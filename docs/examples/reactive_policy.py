"""A small reactive policy: the weakest-uplink half of the rejected devices corrects downlink,
the others uplink (powers optimised for that split, as every policy's are).

Run it: ``python docs/examples/reactive_policy.py`` (a 50-round run, printed goodput).
"""
import numpy as np

import multispin_sim as ms
from multispin_sim.model import reactive as solver
from multispin_sim.policies import REACTIVE_POLICIES, ReactivePolicy


@REACTIVE_POLICIES.register("half-dl")
class HalfDownlink(ReactivePolicy):
    """The half of the rejected devices with the weakest UL SNR goes downlink."""

    def decide(self, problem, rng=None):
        m, k = problem.shape
        key = np.where(problem.rejected, np.broadcast_to(problem.ul_snr_key(), (m, k)), np.inf)
        rank = np.argsort(np.argsort(key, axis=1, kind="stable"), axis=1)  # 0 = weakest UL
        n_dl = problem.rejected.sum(axis=1) // 2
        ul_mask = problem.rejected & (rank >= n_dl[:, None])
        return solver.evaluate_assignment(problem, ul_mask)


def main(rounds=50):
    scenario = ms.load_scenario(None, overrides={"policy.mode": "half-dl", "run.rounds": rounds})
    result = ms.simulate(scenario)
    rows = result.rounds
    assert all(abs(ul - dl) <= 1 for ul, dl in zip(rows["n_ul"], rows["n_dl"]))
    print(result)
    return result


if __name__ == "__main__":
    main()
