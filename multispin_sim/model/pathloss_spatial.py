"""Spatially consistent LOS states and shadowing of moving devices' links (pure numpy).

A static drop draws each device-server link's LOS state and shadowing once
(``PathLossModel.draw``). A moving device must see them change with its position, or the LOS
probability no longer holds at the distance it has reached. ``ConsistentLinks`` keeps, per link,
two standard normal processes of the distance the device has travelled, each an exponentially
correlated (Gauss-Markov) process: after moving m metres, X' = rho X + sqrt(1 - rho^2) W with
rho = exp(-m / d_corr) and W ~ N(0, 1) fresh, so X stays N(0, 1) and the correlation of two
values m apart along the path is exp(-m / d_corr) (Gudmundson, Electron. Lett. 27(23), 1991):

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
not moved has exactly the static drop's gains. The innovations come from a generator of their
own (``rng_move``).
"""
import numpy as np

from .fading import gauss_markov_step
from .units import db_to_linear

MOVE_STREAM_KEY = (1000, 1)   # under the cells stream's key (engine.cell_plan.CELLS_STREAM_KEY)


class ConsistentLinks:
    """LOS states and shadowing (D, S) of D devices to S servers under ``model``, evolving as
    the devices move. ``gain`` (D, S): the linear large-scale gains now; ``los`` (D, S)."""

    def __init__(self, model, rng, d2d_m, decorrelation_m, rng_move):
        d = np.asarray(d2d_m, dtype=float)
        self.model = model
        self.decorrelation_m = float(decorrelation_m)
        self.los_correlation_m = float(model.los_correlation_m)
        self.rng = rng_move
        # the draws of PathLossModel.draw, in its order
        self.u = rng.random(d.shape)
        self.x_sf = rng.standard_normal(d.shape)
        from scipy.special import ndtri   # scipy.special only where devices move

        self.x_los = ndtri(self.u)
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

    def move(self, d2d_m, moved_m):
        """The gains (D, S) at the distances ``d2d_m`` after each device moved ``moved_m`` (D,)
        metres along its path since the last call."""
        d = np.asarray(d2d_m, dtype=float)
        moved = np.broadcast_to(np.asarray(moved_m, dtype=float)[:, None], d.shape)
        w = self.rng.standard_normal((2,) + d.shape)
        went = moved > 0
        # X after moving m metres: the Gauss-Markov step with rho = exp(-m / d_corr)
        x_sf = gauss_markov_step(self.x_sf, np.exp(-moved / self.decorrelation_m), w[0])
        self.x_sf = np.where(went, x_sf, self.x_sf)
        x_los = gauss_markov_step(self.x_los, np.exp(-moved / self.los_correlation_m), w[1])
        from scipy.special import ndtr

        self.u = np.where(went, ndtr(x_los), self.u)
        self.x_los = np.where(went, x_los, self.x_los)
        self._set(d)
        return self.gain
