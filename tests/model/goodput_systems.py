"""Small systems and stand-ins shared by the tests of the T_comm kernels, the estimators and
the draft objective (test_tcomm.py, test_estimators.py, test_goodput.py)."""
import numpy as np

from multispin_sim.model.pathloss import pathloss_gain
from multispin_sim.model.system import System

N0 = 10 ** (-174 / 10) * 1e-3
MODES = ("optimal", "all-ul", "all-dl", "random")


def make_system(k, seed=0, p_dl_dbm=16.0, payload=34_816.0, alpha=None, t_spread=(1.0, 1.15)):
    rng = np.random.default_rng(seed)
    d = rng.uniform(100, 500, k)
    return System(
        alpha=np.asarray(alpha, float) if alpha is not None else rng.choice([0.93, 0.91, 0.86, 0.83], k),
        draft_latency_s=15.2e-3 * rng.uniform(*t_spread, k), p_ul_w=np.full(k, 0.01),
        pathloss=pathloss_gain(d), p_dl_w=10 ** (p_dl_dbm / 10) * 1e-3, payload_bits=payload,
        bandwidth_hz=10e6, n0=N0, verify_fixed_s=42.8e-3, verify_per_device_s=7.6e-3)


class Coins:
    """A stand-in stream: ``random`` returns a fixed coin table (the random split's draws)."""

    def __init__(self, table):
        self.table = table

    def random(self, size):
        assert tuple(size) == self.table.shape
        return self.table.copy()
