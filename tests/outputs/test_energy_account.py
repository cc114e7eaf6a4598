"""The energy columns of a block of rounds (``outputs.energy.EnergyAccount.rounds``): a round's
sums are those of its own array of active devices, whatever the other rounds of the block."""
import numpy as np

from multispin_sim.model.energy import Powers, device_round_energy
from multispin_sim.outputs.energy import EnergyAccount


def test_round_sums_are_the_sums_of_each_rounds_active_devices():
    rng = np.random.default_rng(11)
    n, k = 300, 20
    active = rng.random((n, k)) < rng.uniform(0.05, 1.0, (n, 1))   # 0 to 20 active devices
    active[:40] = True                                             # some full rounds
    mode = np.where(active, rng.integers(0, 3, (n, k)), 0).astype(np.int8)
    draft = np.where(active, rng.uniform(0.01, 0.2, (n, k)), 0.0)
    power = np.where(mode > 0, rng.uniform(0.001, 0.5, (n, k)), 0.0)
    delay = np.where(mode > 0, rng.exponential(0.05, (n, k)), 0.0)
    duration = draft.max(axis=1) + 0.19 + delay.max(axis=1)
    verify = np.full(n, 0.19)
    powers = Powers(rng.uniform(0.5, 3.0, k))
    account = EnergyAccount(powers, k)
    columns, (device_j, server_dl_j, _, _) = account.rounds(
        active, active.all(axis=1), draft, mode, power, delay, duration, verify)
    for i in range(n):
        sel = active[i]
        each = device_round_energy(powers, draft[i], mode[i], power[i], delay[i], duration[i])
        # the device columns are model.energy's, element by element
        assert np.array_equal(columns["energy_j"][i][sel], each[4][sel])
        # the round's sum is that of its own array of active devices, bit for bit
        assert device_j[i] == each[4][sel].sum()
        dl_tx = np.where(mode[i] == 2, power[i] * delay[i], 0.0)
        assert server_dl_j[i] == dl_tx[sel].sum()
