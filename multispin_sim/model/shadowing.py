"""Log-normal shadowing of the large-scale gain, and its correlation as devices move.

``PathProcess`` is the spatially consistent part: standard normal processes X(s) of the distance
s a device has travelled along its path, each a deterministic function of s and of the
generator it was built from, whatever the instants at which it is read. Values on a grid of
spacing Delta = d_corr / ``GRID_POINTS_PER_DECORRELATION`` along s form a Gauss-Markov chain,
X_{j+1} = rho X_j + sqrt(1 - rho^2) Z_{j+1}, rho = exp(-Delta / d_corr), so grid values m metres
apart have correlation exp(-m / d_corr) exactly (Gudmundson, Electron. Lett. 27(23), 1991).
Between two grid points X is the conditional law of that process given both ends (the
Gauss-Markov bridge) with one residual W_j per grid interval:

    X(s_j + a) = alpha X_j + beta X_{j+1} + gamma W_j,   r1 = exp(-a / d_corr),
    r2 = exp(-(Delta - a) / d_corr),  alpha = r1 (1 - r2^2) / (1 - rho^2),
    beta = r2 (1 - r1^2) / (1 - rho^2),  gamma^2 = (1 - r1^2) (1 - r2^2) / (1 - rho^2),

so X(s) ~ N(0, 1) exactly at every s, and two values in different grid intervals (or at grid
points) have correlation exp(-|s - s'| / d_corr) exactly (the residuals are independent and,
the chain being Markov, uncorrelated with everything outside their interval). Two values in
the same interval share W_j: their correlation is alpha alpha' + beta beta' + rho (alpha beta'
+ alpha' beta) + gamma gamma', which exceeds exp(-|s - s'| / d_corr) by less than
Delta / (4 d_corr) (1/64 at 16 grid points per d_corr).
"""
import numpy as np

from .units import db_to_linear

GRID_POINTS_PER_DECORRELATION = 16
_STEPS_AT_ONCE = 64   # more grid steps in one read: the device's own recursion (``_advance``)


def shadowing_gain(shadowing_db):
    """Linear gain of log-normal shadowing values given in dB (10^(X/10))."""
    return db_to_linear(shadowing_db)


class PathProcess:
    """Processes ``scale`` X_i(s) (shape ``x0.shape``, X standard normal) of the distance s_i
    travelled by each of the D = ``x0.shape[0]`` devices: the value at s = 0 is ``x0[i]`` (in
    the same units, exactly), exponentially correlated over ``decorrelation_m`` as the module
    docstring states. Each device draws its innovations from a stream of its own, spawned from
    ``rng`` at construction (one row (Z, W) of ``x0.shape[1:]`` normals each per grid interval,
    in order), so its values depend on its own path and the seed only, not on when or how often
    ``at`` reads them (with non-decreasing distances per device)."""

    def __init__(self, x0, decorrelation_m, rng, scale=1.0):
        self.lo = np.array(x0, dtype=float)         # X at each device's current grid point j
        d = self.lo.shape[0]
        self.decorrelation_m = float(decorrelation_m)
        self.scale = float(scale)
        self.spacing_m = self.decorrelation_m / GRID_POINTS_PER_DECORRELATION
        self.rho = float(np.exp(-self.spacing_m / self.decorrelation_m))
        self._one_minus_rho2 = float(-np.expm1(-2.0 * self.spacing_m / self.decorrelation_m))
        self._seeds = np.random.SeedSequence(
            rng.integers(0, 2**63, size=4, dtype=np.uint64)).spawn(d)
        self._rngs = None   # the devices' streams, made at the first ``at`` (none if never read)
        self.index = np.zeros(d, dtype=np.int64)
        self.hi = np.empty_like(self.lo)              # X at grid point j + 1
        self.w = np.empty_like(self.lo)               # the bridge residual of interval j

    def _start(self):
        """Each device's stream and its first interval's row: X_1 and W_0."""
        self._rngs = [np.random.default_rng(s) for s in self._seeds]
        rows = np.stack([g.standard_normal((2,) + self.lo.shape[1:]) for g in self._rngs])
        self.hi = self.rho * self.lo + np.sqrt(self._one_minus_rho2) * self.scale * rows[:, 0]
        self.w = self.scale * rows[:, 1]

    def _advance(self, devices, steps):
        """Move each of ``devices`` on by its ``steps`` (>= 1) grid points: one row (Z, W) from
        its stream per step. A few steps run over all of them at once, step by step; a device
        going further (a long read gap, a short d_corr) runs its own recursion in scipy's
        ``lfilter``, y_n = c Z_n + rho y_(n-1), the same two products and one sum per step, so
        values do not depend on which devices moved together or in how many calls."""
        self.index[devices] += steps
        rest = self.lo.shape[1:]
        c = np.sqrt(self._one_minus_rho2) * self.scale
        far = steps > _STEPS_AT_ONCE
        for i, n in zip(devices[far].tolist(), steps[far].tolist()):
            from scipy.signal import lfilter   # only for long gaps (its import costs ~0.2 s)

            rows = self._rngs[i].standard_normal((n, 2) + rest)
            self.w[i] = self.scale * rows[-1, 1]
            y = lfilter([c], [1.0, -self.rho], rows[:, 0], axis=0, zi=[self.rho * self.hi[i]])[0]
            self.lo[i], self.hi[i] = y[-2], y[-1]
        devices, steps = devices[~far], steps[~far]
        if devices.size:
            z = np.zeros((int(steps.max()), devices.size) + rest)
            for col, (i, n) in enumerate(zip(devices.tolist(), steps.tolist())):
                rows = self._rngs[i].standard_normal((n, 2) + rest)
                z[:n, col] = rows[:, 0]
                self.w[i] = self.scale * rows[-1, 1]
            lo, hi = self.lo[devices], self.hi[devices]
            for k in range(z.shape[0]):
                going = (k < steps).reshape((-1,) + (1,) * len(rest))
                lo, hi = np.where(going, hi, lo), np.where(going, self.rho * hi + c * z[k], hi)
            self.lo[devices], self.hi[devices] = lo, hi

    def at(self, travelled_m):
        """The values (shape ``x0.shape``) at the distances ``travelled_m`` (D,) metres along
        each path."""
        s = np.asarray(travelled_m, dtype=float)
        j = np.floor(s / self.spacing_m).astype(np.int64)
        if np.any(j < self.index):
            raise ValueError("a device's travelled distance went back; PathProcess reads "
                             "non-decreasing distances")
        if self._rngs is None:
            self._start()
        ahead = np.flatnonzero(j > self.index)
        if ahead.size:
            self._advance(ahead, j[ahead] - self.index[ahead])
        extra = (1,) * (self.lo.ndim - 1)
        a = np.maximum(s - j * self.spacing_m, 0.0).reshape((-1,) + extra)
        b = np.maximum(self.spacing_m - a, 0.0)
        r1, r2 = np.exp(-a / self.decorrelation_m), np.exp(-b / self.decorrelation_m)
        q1 = -np.expm1(-2.0 * a / self.decorrelation_m)   # 1 - r1^2, exact near a = 0
        q2 = -np.expm1(-2.0 * b / self.decorrelation_m)
        alpha = r1 * q2 / self._one_minus_rho2
        beta = r2 * q1 / self._one_minus_rho2
        gamma = np.sqrt(q1 * q2 / self._one_minus_rho2)
        return alpha * self.lo + beta * self.hi + gamma * self.w
