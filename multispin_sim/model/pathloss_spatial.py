"""Spatially consistent LOS states and shadowing of moving devices' links (pure numpy).

A static drop draws each device-server link's LOS state and shadowing once
(``PathLossModel.draw``). A moving device must see them change with its position, or the LOS
probability no longer holds at the distance it has reached. ``ConsistentLinks`` keeps, per link,
two standard normal processes of the distance s the device has travelled
(``model.shadowing.PathProcess``: N(0, 1) at every s, exponentially correlated over a
correlation distance, a function of the device's path and the seed only, whatever the instants
at which the gains are read):

- the LOS state, TR 38.901 V17.0.0 section 7.6.3.3: the link is LOS when a spatially
  consistent uniform U = Phi(X_los) is below P_LOS(d2D) at the current distance (Table
  7.4.2-1). U is uniform at every instant, so the fraction of LOS links at distance d is
  P_LOS(d) exactly, wherever the devices started; the correlation distance is the LOS/NLOS
  state one of Table 7.6.3.1-2 (50 m for UMa and UMi; ``PathLossModel.los_correlation_m``);
- the shadowing in dB, sigma_SF(state) X_sf, with sigma_SF of the current state (Table 7.4.1-1)
  and the correlation distance ``channel.shadowing_decorrelation_m`` (the same key and law as
  the single-cell ``Mover``; TR 38.901 Table 7.5-6 gives 37 / 50 m for UMa LOS / NLOS and
  10 / 13 m for UMi).

The processes follow the distance along each device's path, not a field over the plane: a
device coming back to where it was draws anew (the standard one-dimensional approximation).
At the drop the state is the one ``draw`` makes from the same generator (one uniform per link
for the LOS state, then one standard normal per link for the shadowing), so a device that has
not moved has exactly the static drop's gains. The processes' innovations come from a
generator of their own (``rng_move``): the shadowing's devices' streams are spawned from it
first, then the LOS state's.
"""
import numpy as np

from .shadowing import PathProcess
from .units import db_to_linear

MOVE_STREAM_KEY = (1000, 1)   # under the cells stream's key (engine.cell_plan.CELLS_STREAM_KEY)


class ConsistentLinks:
    """LOS states and shadowing (D, S) of D devices to S servers under ``model``, evolving as
    the devices move. ``gain`` (D, S): the linear large-scale gains now; ``los`` (D, S)."""

    def __init__(self, model, rng, d2d_m, decorrelation_m, rng_move):
        d = np.asarray(d2d_m, dtype=float)
        self.model = model
        # the draws of PathLossModel.draw, in its order
        self.u0 = self.u = rng.random(d.shape)
        self.x_sf = rng.standard_normal(d.shape)
        from scipy.special import ndtri   # scipy.special only where devices move

        self.sf_path = PathProcess(self.x_sf, decorrelation_m, rng_move)
        self.los_path = PathProcess(ndtri(self.u), model.los_correlation_m, rng_move)
        self._set(d)

    @classmethod
    def from_scenario(cls, scenario, model, rng, d2d_m):
        """The links of a run's devices: the drop's draws from ``rng`` (the cells stream), the
        innovations from the stream SeedSequence(seed, spawn_key=(1000, 1))."""
        rng_move = np.random.Generator(np.random.PCG64(
            np.random.SeedSequence(scenario.seed, spawn_key=MOVE_STREAM_KEY)))
        return cls(model, rng, d2d_m, scenario.channel.shadowing_decorrelation_m, rng_move)

    def _set(self, d):
        m = self.model
        self.los = self.u < m.los_probability(d)
        self.gain = db_to_linear(m.gain_db(d, self.los) + m.shadowing_std_db(self.los) * self.x_sf)

    def at(self, d2d_m, travelled_m):
        """The gains (D, S) at the distances ``d2d_m`` when each device has travelled
        ``travelled_m`` (D,) metres along its path (non-decreasing from call to call)."""
        d = np.asarray(d2d_m, dtype=float)
        s = np.asarray(travelled_m, dtype=float)
        self.x_sf = self.sf_path.at(s)
        x_los = self.los_path.at(s)
        from scipy.special import ndtr

        # a device that has not moved keeps the drop's own uniform (Phi(Phi^-1(u)) may not
        # return u to the last bit)
        self.u = np.where((s > 0)[:, None], ndtr(x_los), self.u0)
        self._set(d)
        return self.gain
