"""Large-scale models of a link to any server: ``cells.pathloss`` names a class of
``PATHLOSS_MODELS`` (pure numpy).

- ``power-law``: G(d) = G_0 d^-eta with log-normal shadowing of ``channel.shadowing_db`` (the
  paper's model, ``model.pathloss``), every link LOS.
- ``uma``, ``umi``: 3GPP TR 38.901 V17.0.0 (ETSI TR 138 901, 2022-04) Table 7.4.1-1 path loss
  of the urban macro (UMa) and urban micro street-canyon (UMi) scenarios, LOS and NLOS, with
  the LOS probability of Table 7.4.2-1 (outdoor devices) and the shadow-fading standard
  deviations of Table 7.4.1-1. The formulas and their ranges are in docs/model.md section 14.

``draw`` gives a static drop's links; a moving device's links evolve with its path
(``model.pathloss_spatial``).

Conventions of the standard: fc in GHz, distances in metres, d3D = sqrt(d2D^2 + (hBS - hUT)^2),
breakpoint d'BP = 4 h'BS h'UT fc / c with h' = h - hE and the effective environment height
hE = 1 m (the standard's value for UMi, and for UMa devices up to 13 m, for which its C(d2D,
hUT) is 0). A 2-D distance below the standard's 10 m is evaluated at 10 m (a device next to the
mast); beyond 5 km the formulas are extrapolated.
"""
import numpy as np

from .registry import Registry
from .units import SPEED_OF_LIGHT, db_to_linear

PATHLOSS_MODELS = Registry("path-loss model")

MIN_D2D_M = 10.0


class PathLossModel:
    """A large-scale model: mean gain (dB) given the LOS state, LOS probability, shadowing std.
    ``population_gain``: the model is the one the single-cell population already drew for a
    device's own server (the paper's power law), so a cell keeps those gains. ``draw(rng, d2d)``
    -> (linear gains, los): one uniform per link for its LOS state (in the order of
    ``d2d.ravel()``), then one standard normal per link for its shadowing."""

    @classmethod
    def from_scenario(cls, scenario):
        c = scenario.cells
        return cls(fc_ghz=c.fc_ghz, h_bs_m=c.h_bs_m, h_ut_m=c.h_ut_m)

    population_gain = False
    # the correlation distance (m) of the LOS state of a moving device's link
    # (``model.pathloss_spatial``): TR 38.901 Table 7.6.3.1-2, LOS/NLOS state, 50 m for UMa and
    # UMi (a model that is LOS everywhere never changes state)
    los_correlation_m = 50.0

    def gain_db(self, d2d_m, los):
        raise NotImplementedError

    def los_probability(self, d2d_m):
        raise NotImplementedError

    def shadowing_std_db(self, los):
        raise NotImplementedError

    def mean_gain(self, d2d_m, los):
        """Linear gain without shadowing (the long-term gain association reads)."""
        return db_to_linear(self.gain_db(d2d_m, los))

    def cross_models(self):
        """(server-to-server, device-to-device) models of the cross links
        (``cells.cross_link``); a model without heights is the same for every link."""
        return self, self

    def draw(self, rng, d2d_m):
        d = np.asarray(d2d_m, dtype=float)
        los = rng.random(d.shape) < self.los_probability(d)
        shadow = self.shadowing_std_db(los) * rng.standard_normal(d.shape)
        return db_to_linear(self.gain_db(d, los) + shadow), los


@PATHLOSS_MODELS.register("power-law")
class PowerLaw(PathLossModel):
    """G_0 (d / 1 m)^-eta (d clamped at the 1 m reference), LOS everywhere, shadowing sigma."""

    population_gain = True

    @classmethod
    def from_scenario(cls, scenario):
        ch = scenario.channel
        return cls(ch.ref_gain_db, ch.pathloss_exponent, ch.shadowing_db)

    def __init__(self, ref_gain_db=-30.0, exponent=3.5, shadowing_db=0.0):
        self.ref_gain_db = float(ref_gain_db)
        self.exponent = float(exponent)
        self.sigma_db = float(shadowing_db)

    def gain_db(self, d2d_m, los=True):
        d = np.maximum(np.asarray(d2d_m, dtype=float), 1.0)
        return self.ref_gain_db - 10.0 * self.exponent * np.log10(d)

    def los_probability(self, d2d_m):
        return np.ones(np.shape(d2d_m))

    def shadowing_std_db(self, los):
        return np.full(np.shape(los), self.sigma_db)


class TR38901(PathLossModel):
    """A TR 38.901 street scenario: ``fc_ghz``, base-station and device heights (m). A
    scenario gives its default hBS (m), its shadow-fading standard deviations (dB) and its
    row of Table 7.4.1-1 as coefficients (dB), lg = log10:
    ``los_db = (a, b, c, e)``: PL1 = a + b lg d3D + c lg fc and
    PL2 = a + 40 lg d3D + c lg fc - e lg(d'BP^2 + (hBS - hUT)^2);
    ``nlos_db = (a, b, c, e)``: PL'NLOS = a + b lg d3D + c lg fc - e (hUT - 1.5)."""

    h_bs_default: float
    sigma_los_db: float
    sigma_nlos_db: float
    los_db: tuple
    nlos_db: tuple

    def __init__(self, fc_ghz=3.5, h_bs_m=None, h_ut_m=1.5):
        self.fc_ghz = float(fc_ghz)
        self.h_bs = float(self.h_bs_default if h_bs_m is None else h_bs_m)
        self.h_ut = float(h_ut_m)
        h_e = 1.0   # the effective environment height (module docstring)
        self.d_bp = (4.0 * (self.h_bs - h_e) * (self.h_ut - h_e) * self.fc_ghz * 1e9
                     / SPEED_OF_LIGHT)

    def cross_models(self):
        """The scenario's formulas with both ends at hBS (server to server) or at hUT (device
        to device): outside the standard's validity (TR 38.901 models links to a base station
        only), a stand-in where no dedicated model is given."""
        return (type(self)(self.fc_ghz, self.h_bs, self.h_bs),
                type(self)(self.fc_ghz, self.h_ut, self.h_ut))

    def _d(self, d2d_m):
        d2d = np.maximum(np.asarray(d2d_m, dtype=float), MIN_D2D_M)
        return d2d, np.hypot(d2d, self.h_bs - self.h_ut)

    def pl_los_db(self, d2d_m):
        d2d, d3d = self._d(d2d_m)
        return np.where(d2d <= self.d_bp, self._pl1(d3d), self._pl2(d3d))

    def pl_nlos_db(self, d2d_m):
        _, d3d = self._d(d2d_m)
        return np.maximum(self.pl_los_db(d2d_m), self._pl_nlos_prime(d3d))

    def gain_db(self, d2d_m, los):
        return -np.where(los, self.pl_los_db(d2d_m), self.pl_nlos_db(d2d_m))

    def _pl1(self, d3d):
        a, b, c, _ = self.los_db
        return a + b * np.log10(d3d) + c * np.log10(self.fc_ghz)

    def _pl2(self, d3d):
        a, _, c, e = self.los_db
        return (a + 40.0 * np.log10(d3d) + c * np.log10(self.fc_ghz)
                - e * np.log10(self.d_bp ** 2 + (self.h_bs - self.h_ut) ** 2))

    def _pl_nlos_prime(self, d3d):
        a, b, c, e = self.nlos_db
        return a + b * np.log10(d3d) + c * np.log10(self.fc_ghz) - e * (self.h_ut - 1.5)

    def shadowing_std_db(self, los):
        return np.where(los, self.sigma_los_db, self.sigma_nlos_db)

    @staticmethod
    def _los_street(d2d, d1):
        """18 / d2D + exp(-d2D / d1) (1 - 18 / d2D) beyond 18 m, 1 within."""
        d = np.maximum(d2d, 18.0)
        return np.where(d2d <= 18.0, 1.0, 18.0 / d + np.exp(-d / d1) * (1.0 - 18.0 / d))


@PATHLOSS_MODELS.register("uma")
class UMa(TR38901):
    """Urban macro (the UMa rows of Tables 7.4.1-1 and 7.4.2-1)."""

    h_bs_default, sigma_los_db, sigma_nlos_db = 25.0, 4.0, 6.0
    los_db, nlos_db = (28.0, 22.0, 20.0, 9.0), (13.54, 39.08, 20.0, 0.6)

    def los_probability(self, d2d_m):
        d2d = np.asarray(d2d_m, dtype=float)
        h = self.h_ut
        c = 0.0 if h <= 13.0 else ((h - 13.0) / 10.0) ** 1.5
        d = np.maximum(d2d, 18.0)
        height = 1.0 + c * 1.25 * (d / 100.0) ** 3 * np.exp(-d / 150.0)
        return np.where(d2d <= 18.0, 1.0, self._los_street(d2d, 63.0) * height)


@PATHLOSS_MODELS.register("umi")
class UMi(TR38901):
    """Urban micro street canyon (the UMi rows of Tables 7.4.1-1 and 7.4.2-1)."""

    h_bs_default, sigma_los_db, sigma_nlos_db = 10.0, 4.0, 7.82
    los_db, nlos_db = (32.4, 21.0, 20.0, 9.5), (22.4, 35.3, 21.3, 0.3)

    def los_probability(self, d2d_m):
        return self._los_street(np.asarray(d2d_m, dtype=float), 36.0)
