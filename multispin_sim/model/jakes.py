"""Jakes (Clarke) fading in continuous time: a statistical sum-of-sinusoids Rayleigh process.

Each device and link has its own complex gain, the sum of M sinusoids of Zheng & Xiao's
statistical model (Y. R. Zheng, C. Xiao, "Simulation models with correct statistical properties
for Rayleigh fading channels", IEEE Trans. Commun. 51(6), 2003; in the form with independent
in-phase and quadrature phases of their letter "Improved models for the generation of multiple
uncorrelated Rayleigh fading waveforms", IEEE Commun. Lett. 6(6), 2002):

    h(t) = M^(-1/2) [ sum_n cos(w_D t cos a_n + phi_n) + j sum_n cos(w_D t sin a_n + psi_n) ],
    a_n = (2 pi n - pi + theta) / (4 M),  n = 1..M,  w_D = 2 pi f_D,

with theta, phi_n, psi_n independent and uniform on [-pi, pi). Averaged over these random
angles and phases (the ensemble: devices, links, seeds), E[h(t) h*(t + tau)] = J0(w_D tau)
exactly for every tau and every M (the a_n cover [0, pi/2) uniformly, and the average of
cos(x cos a) over it is J0(x)); E|h|^2 = 1 and the phase of h is uniform. The sinusoids make h
Gaussian only as M grows: var |h|^2 = 1 - 3 / (4 M) instead of 1, and the correlation of
|h|^2 at lag tau differs from J0^2 by at most about 0.52 / M (0.008 for the default M = 64)
while w_D tau stays below about 3 M, and by up to about 1.3 / M (0.021) beyond, where the
regular grid of angles aliases (computed from the model's exact fourth moments). A single
realisation is not ergodic: its time averages carry the angles it drew, so statistics are
taken over many independent processes.

The process is a function of time: the same draws give the same h(t) whatever asks for it and
in whatever order (common random numbers), at any event time, for any block length.

A device that moves through a static scattering field sees the channel of where it is: with
``clock`` (``JakesProcess``) the argument w_D t becomes 2 pi s_k(t) / lambda, s_k(t) the metres
device k has walked by t (``model.mobility.Wavelengths`` gives s_k / lambda). Two instants then
correlate as J0(2 pi Delta_s / lambda), Delta_s the distance walked between them: at a constant
speed v this is the process above at f_D = v / lambda, so every property above carries over,
and a device that pauses keeps its channel.
"""
import numpy as np

_TWO_PI = 2.0 * np.pi
SINUSOIDS = 64  # M: ensemble |h|^2 statistics within 0.52 / M of Rayleigh's (module docstring)


class SumOfSinusoids:
    """Independent gains h(t) of ``shape`` (e.g. (K,)): ``gains(t)`` has shape t.shape + shape.
    Draws from ``rng`` theta of every process, then the 2M phases of every process (in-phase
    first), all uniform on [-pi, pi)."""

    def __init__(self, rng, shape, doppler_hz):
        shape = tuple(np.atleast_1d(shape))
        m = SINUSOIDS
        self.shape, self.m = shape, m
        self.doppler_hz = float(doppler_hz)
        theta = rng.uniform(-np.pi, np.pi, shape)
        self.phase = rng.uniform(-np.pi, np.pi, shape + (2 * m,))
        a = (2.0 * np.pi * np.arange(1, m + 1) - np.pi + theta[..., None]) / (4.0 * m)
        w = 2.0 * np.pi * self.doppler_hz
        # angular Doppler shifts of the in-phase (w cos a_n) and quadrature (w sin a_n) sums
        self.omega = np.concatenate([w * np.cos(a), w * np.sin(a)], axis=-1)
        self.pick = np.zeros((2 * m, 2))  # sums the in-phase and the quadrature terms
        self.pick[:m, 0] = self.pick[m:, 1] = 1.0
        self._scale2 = 1.0 / m
        self._arg = np.empty_like(self.omega)   # buffers of one time for all, or one each
        self._turns = np.empty_like(self.omega)
        self._z = np.empty(self.omega.shape, np.float32)

    def _sums(self, t, device=None, each=False):
        """(in-phase, quadrature) sums at the time(s) t, (..., 2): cosines in single precision
        after reducing the argument to [-pi, pi] in double precision (arg - 2 pi rint(arg / 2
        pi); below 2e-7 per term), several times faster than double cosines of large
        arguments; sums in double precision. ``each``: t holds one time per process (its
        last axes broadcast against ``shape``), not one time shared by them all."""
        omega = self.omega if device is None else self.omega[device]
        phase = self.phase if device is None else self.phase[device]
        scalar = np.ndim(t) == 0
        if device is None and (scalar or (each and np.broadcast_shapes(np.shape(t), self.shape)
                                          == self.shape)):   # the channel's calls: buffered
            arg, turns, z = self._arg, self._turns, self._z
            np.multiply(omega, t if scalar else np.asarray(t, dtype=float)[..., None], out=arg)
            np.add(arg, phase, out=arg)
        else:
            t = np.asarray(t, dtype=float)
            arg = t[(...,) + (None,) * (1 if each else omega.ndim)] * omega + phase
            turns, z = np.empty_like(arg), np.empty(arg.shape, np.float32)
        np.multiply(arg, 1.0 / _TWO_PI, out=turns)
        np.rint(turns, out=turns)
        np.multiply(turns, _TWO_PI, out=turns)
        np.subtract(arg, turns, out=arg)
        z[...] = arg
        np.cos(z, out=z)
        return z.astype(np.float64) @ self.pick

    def gains(self, t, device=None, each=False):
        """Complex h at the time(s) ``t`` (seconds); one process of ``device`` if given;
        ``each``: one time per process (``_sums``)."""
        xy = self._sums(t, device, each)
        return (xy[..., 0] + 1j * xy[..., 1]) * np.sqrt(self._scale2)

    def powers(self, t, device=None, each=False):
        """|h|^2 at the time(s) ``t``; one process of ``device`` if given; ``each``: one time
        per process (``_sums``)."""
        xy = self._sums(t, device, each)
        xy *= xy
        return (xy[..., 0] + xy[..., 1]) * self._scale2


class ContinuousGrid:
    """The block grid of a process in continuous time (``JakesProcess``, the antenna array's
    ``model.antennas.JakesVectors``): an event at time t meets the process at t; a transmission
    holds the value of its start, then of each block boundary (n T_c) it crosses. Needs
    ``block_s`` and ``power(device, dl, t)``, the gain of one device's link at the time(s) t."""

    continuous = True

    def index(self, t):
        """The grid block of time t: floor(t / T_c)."""
        return int(np.floor(t / self.block_s))

    def sample_key(self, t):
        """Equal keys mean the same channel value: every instant is its own sample."""
        return float(t)

    def planned_holds(self, t0, t_decided):
        """A transmission starting at ``t0`` meets the channel decided on at ``t_decided``
        only when it starts at that very instant."""
        return t0 == t_decided

    def sample_times(self, t0, m, start=0):
        """The start t0, then the next m - 1 block boundaries after it (from the start-th)."""
        n0 = self.index(t0)
        times = (n0 + np.arange(start, m, dtype=float)) * self.block_s
        if start == 0 and m > 0:
            times[0] = t0
        return times

    def segments(self, device, dl, t0, m, start=0):
        """|h|^2 (with an antenna array: ||h||^2) of ``device`` over blocks start..m-1 of a
        transmission from ``t0``."""
        return self.power(device, dl, self.sample_times(t0, m, start))

    def block_power(self, device, dl, t0, n):
        """|h|^2 of ``device`` in grid block n of a transmission from ``t0``."""
        return float(self.power(device, dl, t0 if n <= self.index(t0) else n * self.block_s))

    def block_powers(self, device, dl, t0, n, most):
        """``block_power`` of blocks n, n + 1, ..., n + m - 1, m = min(``most``, 256) >= 1 (longer
        runs are slower per block: their (m, 2M) arguments leave the cache)."""
        ns = n + np.arange(max(1, min(int(most), 256)))
        return self.power(device, dl, np.where(ns <= self.index(t0), t0, ns * self.block_s))

    def blocks(self, t0, m, start=0):
        """(UL, DL) channel vectors (m - start, K, M) of blocks start..m-1 of a set of streams
        from ``t0``: the process at the sample times (``vectors_at``)."""
        h = [self.vectors_at(t) for t in self.sample_times(t0, m, start)]
        return np.array([x[0] for x in h]), np.array([x[1] for x in h])

    def prune_before(self, t):
        """Nothing is stored: the process is a function of time."""


class JakesProcess(ContinuousGrid):
    """UL and DL small-scale powers of K devices in continuous time (``SumOfSinusoids``): the
    UL processes are drawn, then the DL ones (also when ``reciprocal``, where the DL power is
    the UL array itself, so that the UL channel is the same either way). It serves both ways
    the channel samples fading: once per round (``round_powers``) and on a block grid of
    ``block_s`` seconds (``powers_at``, ``segments``, ``block_power``): an event at time t
    meets h(t); a transmission holds the value of its start, then of each block boundary
    (n T_c) it crosses, so the block length sets how often the channel is sampled, never the
    correlation between two instants. ``clock``: None (every device at ``doppler_hz``), or
    ``(t, device=None) ->`` the wavelengths each device has travelled by t (t.shape + (K,), or
    t.shape for one device; ``model.mobility.Wavelengths``), which then replaces f_D t: each
    device's Doppler is its own speed over the wavelength."""

    def __init__(self, rng, k, reciprocal, doppler_hz, block_s=None, clock=None):
        self.k = int(k)
        self.reciprocal = bool(reciprocal)
        self.block_s = None if block_s is None else float(block_s)
        self.clock = clock
        rate = doppler_hz if clock is None else 1.0   # cycles per second, or per wavelength
        self.ul = SumOfSinusoids(rng, (self.k,), rate)
        self.dl = SumOfSinusoids(rng, (self.k,), rate)

    def powers_at(self, t):
        """(|h_ul|^2, |h_dl|^2) at time ``t`` (scalar: (K,) each; array: t.shape + (K,))."""
        if self.clock is not None:
            x = self.clock(t)
            ul = self.ul.powers(x, each=True)
            return ul, (ul if self.reciprocal else self.dl.powers(x, each=True))
        ul = self.ul.powers(t)
        return ul, (ul if self.reciprocal else self.dl.powers(t))

    def round_powers(self, now):
        """The powers a round starting at ``now`` meets (one block per round)."""
        return self.powers_at(now)

    def vectors_at(self, t):
        """(UL, DL) one-antenna channel vectors (K, 1) at ``t``: sqrt(|h|^2) (a phase changes
        nothing with one antenna)."""
        return tuple(np.sqrt(x)[:, None] for x in self.powers_at(t))

    def power(self, device, dl, t):
        """One device's |h|^2 on one link at the time(s) ``t``."""
        link = self.dl if dl and not self.reciprocal else self.ul
        return link.powers(t if self.clock is None else self.clock(t, device), device)
