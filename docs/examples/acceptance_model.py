"""A small acceptance model: every draft token is accepted with the device's alpha, except that
each device has a fixed cap on how many drafts it ever gets accepted in a round.

Run it: ``python docs/examples/acceptance_model.py`` (a 50-round run, printed goodput).
"""
import numpy as np

import multispin_sim as ms
from multispin_sim.model.acceptance import ACCEPTANCE_MODELS, AcceptanceModel
from multispin_sim.model.speculative import run_length


@ACCEPTANCE_MODELS.register("capped")
class CappedAcceptance(AcceptanceModel):
    """i.i.d. acceptance with alpha_k, then at most ``cap`` accepted drafts per round."""

    def __init__(self, alpha, rng, mean=None, cap=2, **_):
        # ``mean`` is a key of the acceptance section: the default from_scenario passes it
        super().__init__(alpha if mean is None else np.full(np.shape(alpha), mean), rng)
        self.cap = int(cap)

    def accepted(self, gamma, active=None):
        runs = run_length(self.rng.random(self.k), self.alpha)
        return np.minimum(np.minimum(runs, gamma), self.cap).astype(np.int64)

    def parameters(self):
        return {"alpha": self.alpha.tolist(), "cap": self.cap}


def main(rounds=50):
    scenario = ms.load_scenario(None, overrides={"acceptance.model": "capped",
                                                 "run.rounds": rounds})
    result = ms.simulate(scenario)
    assert result.summary["acceptance"]["model"] == "capped"
    assert max(result.device_rounds["accepted"]) <= 2
    print(result)
    return result


if __name__ == "__main__":
    main()
