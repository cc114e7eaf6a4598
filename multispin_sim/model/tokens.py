"""Token-level speculative sampling on explicit distributions (``payload.model: token``).

Notation: p = target distribution, q = the draft model's distribution, q_d = the distribution the
device actually drafts from, p~ = the target as the device receives it in a DL correction.

One drafted position (docs/model.md section 3, Leviathan et al. / Chen et al.):

1. the device samples x ~ q_d;
2. the server accepts x with probability min(1, p(x) / q_d(x)) (it has p and the scalar q_d(x));
   the acceptance probability of the position is beta = sum_x min(p(x), q_d(x));
3. on rejection the correction is drawn from r = norm(max(p - q_d, 0)):
   - UL correction: the device uploads q_d; the server has the full p, so r is exact and the
     output token is distributed exactly as p;
   - DL correction: the server sends p~ = format(p); the device draws from
     r~ = norm(max(p~ - q_d, 0)). The output token of the position then has the distribution
     o = min(p, q_d) + (1 - beta) r~, and its total-variation distance to p is
     TV(o, p) = (1 - beta) TV(r~, r) (``dl_output_tv``: computed from the distributions).
4. after gamma accepted drafts, the bonus token is drawn from p.

UL compression and the drafting rule. A compressed UL payload q~ keeps the sampler exact only if
the device drafted from q~ itself. The simulator's rule: **the device always drafts from
q_d = ulformat(q)**, the UL payload format (``payload.format``; ``dense``: q_d = q), decided
before drafting, whatever direction the server later picks. A UL correction then sends q_d
losslessly; a DL correction uses r~ = norm(max(p~ - q_d, 0)) (the device knows q_d). The
acceptance rate of every position is beta = sum min(p, q_d), whatever the reactive decision, so
outcomes can be drawn at verification as in the bits model, and the draft-length objective sees
the UL acceptance cost through alpha_eff = beta (``PayloadModel.alpha_effective``).

Synthetic pairs (``ZipfPairs``). Target: Zipf over ranks, p_r = r^(-s) / sum_j j^(-s), r = 1..V
(s = ``payload.zipf_exponent``), put on the token ids by a random ranking. Draft: the target's
logits plus Gaussian noise, q = softmax(-s ln r + sigma z_r), z_r ~ N(0, 1) drawn once per rank
(from the ``tokens`` stream, so each seed has its own draft): the draft ranks tokens differently
from the target, as a small model does. sigma is the one knob: it is calibrated (``brentq``) so
that sum_r min(p_r, q_r) equals the device's alpha (sigma = 0: q = p, alpha = 1).
The exact scheme at V = 151,665: every position of a device uses the same pair up to the random
relabelling of token ids, and no quantity the simulator reports (acceptance, residuals,
formats' bits, TV) depends on the labels. So each pair is built once as full length-V vectors
in the target's rank order (one row per distinct alpha; their cumulative sums make every draw
one ``searchsorted``), and per position only the tokens are drawn: exact for any V, O(log V) per
draw, no truncated tail. Tokens are reported as ranks (the relabelling is not materialised).
With this generator the acceptance process is exactly the i.i.d. model with alpha_eff per
device; UL top-k drafting lowers alpha_eff (the draft's top k miss tokens the target likes).

Pairs from a file (``payload.pairs_file``; ``engine.reading.load_pairs`` reads it, then
``pairs_from_arrays`` checks the arrays): an npz with arrays ``p`` and ``q`` (or ``p_logits``
and ``q_logits``), shape (N, V), one pair per row; each drafted position uses a row drawn
uniformly. Then the acceptance varies with the position (its mean is the file's, not the
devices' alpha).
"""
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import brentq
from scipy.special import softmax


# ---------------------------------------------------------------------------- closed forms


def acceptance_probability(p, q):
    """beta = sum min(p, q) (per row)."""
    return np.minimum(p, q).sum(axis=-1)


def residual(p, q):
    """norm(max(p - q, 0)) per row; where p == q (nothing to correct) p itself."""
    d = np.maximum(np.asarray(p, float) - q, 0.0)
    z = d.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(z > 0, d / np.where(z > 0, z, 1.0), p)


def output_distribution(p, q_d, p_tilde=None):
    """Distribution of one position's output token: draft from q_d, accept with
    min(1, p/q_d), correct from norm(max(p~ - q_d, 0)) (p~ = p: exact, the result is p)."""
    p = np.asarray(p, float)
    beta = acceptance_probability(p, q_d)[..., None]
    r = residual(p if p_tilde is None else p_tilde, q_d)
    return np.minimum(p, q_d) + (1.0 - beta) * r


def total_variation(a, b):
    """Total-variation distance 0.5 sum |a - b| (per row)."""
    return 0.5 * np.abs(np.asarray(a, float) - b).sum(axis=-1)


def dl_output_tv(p, q_d, p_tilde):
    """TV(o, p) of a DL correction with p~: (1 - beta) TV(r~, r)."""
    return total_variation(output_distribution(p, q_d, p_tilde), p)


# ---------------------------------------------------------------------------- synthetic pairs


class ZipfPairs:
    """Zipf target over V ranks and a noisy draft; ``calibrate(alpha)`` finds the noise scale.

    Target logits -s ln r; draft logits -s ln r + sigma z_r with z_r ~ N(0, 1), one fixed draw
    per rank (from ``rng``). sigma = 0 gives q = p (alpha = 1); the acceptance falls as sigma
    grows, and the draft ranks tokens differently from the target (what top-k drafting loses).
    """

    def __init__(self, vocab, exponent=1.5, rng=None):
        self.vocab = int(vocab)
        self.exponent = float(exponent)
        rng = np.random.default_rng(0) if rng is None else rng
        self.z = rng.standard_normal(self.vocab)
        self.logits = -self.exponent * np.log(np.arange(1, self.vocab + 1, dtype=float))
        self.p = softmax(self.logits)

    def draft(self, sigma):
        return softmax(self.logits + sigma * self.z)

    def beta(self, sigma):
        return float(acceptance_probability(self.p, self.draft(sigma)))

    def calibrate(self, alpha):
        """sigma >= 0 with sum min(p, q(sigma)) = alpha (0 for alpha = 1)."""
        alpha = float(alpha)
        if alpha >= 1.0:
            return 0.0
        hi = 1.0
        while self.beta(hi) > alpha:
            hi *= 2.0
            if hi > 1e4:
                raise ValueError(f"alpha {alpha} is below the generator's reach")
        return brentq(lambda t: self.beta(t) - alpha, 0.0, hi, xtol=1e-14, rtol=1e-13)

    def pair(self, alpha):
        """(p, q) in rank order of p for acceptance rate alpha."""
        return self.p, self.draft(self.calibrate(alpha))


# ---------------------------------------------------------------------------- pairs from a file


class PairsFileError(ValueError):
    """A distributions file that cannot be used (the message says what is wrong; ``todo``, when
    set, what to do instead of the file format's description)."""

    def __init__(self, message, todo=None):
        super().__init__(message)
        self.todo = todo


def pairs_from_arrays(p, q, vocab, logits=False, atol=1e-6):
    """(p, q) arrays (N, V) of probabilities from the arrays of a pairs file: checked (shape
    (N, ``vocab``) with N >= 1, finite, equal shapes; probabilities: not negative, rows summing
    to 1 within ``atol``) and normalised; ``logits``: the arrays are logits, turned into
    probabilities by a softmax per row. Raises ``PairsFileError``."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    for name, a in (("p", p), ("q", q)):
        if a.ndim != 2 or a.shape[1] != vocab or a.shape[0] < 1:
            raise PairsFileError(f"array {name!r} has shape {a.shape}; expected (N, {vocab}) "
                                 "with N >= 1 and payload.vocab columns")
        if not np.all(np.isfinite(a)):
            raise PairsFileError(f"array {name!r} has non-finite values")
    if p.shape != q.shape:
        raise PairsFileError(f"'p' has shape {p.shape} and 'q' {q.shape}; expected equal shapes")
    if logits:
        return softmax(p, axis=1), softmax(q, axis=1)
    for name, a in (("p", p), ("q", q)):
        if np.any(a < 0):
            raise PairsFileError(f"array {name!r} has negative probabilities")
        s = a.sum(axis=1)
        bad = np.flatnonzero(np.abs(s - 1.0) > atol)
        if bad.size:
            raise PairsFileError(f"row {int(bad[0])} of {name!r} sums to {s[bad[0]]:.9g}; "
                                 f"expected rows summing to 1 (within {atol:g})")
    return p / p.sum(axis=1, keepdims=True), q / q.sum(axis=1, keepdims=True)


# ---------------------------------------------------------------------------- tables


def _flat_cdf(x):
    """Row-wise normalised cumulative sums, row i shifted by i: one sorted array for all rows."""
    c = np.cumsum(x, axis=1)
    c /= c[:, -1:]
    return (c + np.arange(x.shape[0])[:, None]).ravel()


@dataclass
class PairTable:
    """Everything one group of devices needs, precomputed over its N pairs (rows).

    p, q_d: (N, V); beta: (N,) acceptance per row (beta_uncompressed: with q instead of q_d);
    ul_bits: (N,); q_cdf, p_cdf, ul_cdf: flat CDFs (``_flat_cdf``) of q_d, p and the exact
    residual; dl_*: one entry per DL format (lists): bits (N,), tv (N,) = TV(o, p), residual_tv
    (N,) = TV(r~, r), cdf.
    """

    p: np.ndarray
    q_d: np.ndarray
    beta: np.ndarray
    ul_bits: np.ndarray
    beta_uncompressed: np.ndarray = None
    dl_bits: list = field(default_factory=list)
    dl_tv: list = field(default_factory=list)
    dl_residual_tv: list = field(default_factory=list)

    def __post_init__(self):
        self.n, self.vocab = self.p.shape
        self.q_cdf = _flat_cdf(self.q_d)
        self.p_cdf = _flat_cdf(self.p)
        self.ul_cdf = _flat_cdf(residual(self.p, self.q_d))
        self.dl_cdf = []

    @classmethod
    def build(cls, p, q, ul_format, dl_formats):
        p, q = np.atleast_2d(p), np.atleast_2d(q)
        q_d = ul_format.compress(q)
        ul_bits = _row_bits(ul_format, q)   # the format of q: q_d is what it sends
        beta = acceptance_probability(p, q_d)
        table = cls(p, q_d, beta, ul_bits, acceptance_probability(p, q))
        r = residual(p, q_d)
        for fmt in dl_formats:
            p_t = fmt.compress(p)
            r_t = residual(p_t, q_d)
            table.dl_bits.append(_row_bits(fmt, p))
            table.dl_residual_tv.append(total_variation(r_t, r))
            table.dl_tv.append((1.0 - beta) * table.dl_residual_tv[-1])
            table.dl_cdf.append(_flat_cdf(r_t))
        return table

    def draw(self, cdf, rows, u):
        """Token (column) of rows ``rows`` from a flat CDF, by uniforms ``u``."""
        flat = np.searchsorted(cdf, u + rows, side="right")
        return np.minimum(flat - rows * self.vocab, self.vocab - 1)


def _row_bits(fmt, x):
    if fmt.fixed_size:
        return np.full(x.shape[0], fmt.bits(), dtype=np.int64)
    return np.array([fmt.bits(row) for row in x], dtype=np.int64)


class PayloadModel:
    """The token-level payload component: one ``PairTable`` whose rows are all the pairs.

    Device k draws each position's pair uniformly from rows ``row0[k] .. row0[k] + nrows[k] - 1``
    (synthetic pairs: one row per distinct alpha; a pairs file: all its rows for every device).
    ``alpha_effective`` (K,) = mean beta of its rows (the acceptance rate the outcomes have);
    ``ul_bits`` (K,), ``dl_bits`` and ``dl_tv`` (K, F) are per-device means over its rows (exact
    for synthetic pairs: one row).
    """

    def __init__(self, table, row0, nrows, ul_format, dl_formats):
        self.table = table
        self.row0 = np.asarray(row0, dtype=np.int64)
        self.nrows = np.asarray(nrows, dtype=np.int64)
        self.ul_format = ul_format
        self.dl_formats = list(dl_formats)
        t = table

        def mean(a):   # each device's mean over its own rows
            return np.array([a[r:r + n].mean() for r, n in zip(self.row0, self.nrows)])

        self.alpha_effective = mean(t.beta)
        self.acceptance_loss = mean(t.beta_uncompressed) - self.alpha_effective
        self.ul_bits = mean(t.ul_bits)
        self.dl_bits = np.stack([mean(b) for b in t.dl_bits], axis=1)
        self.dl_tv = np.stack([mean(x) for x in t.dl_tv], axis=1)

    @classmethod
    def synthetic(cls, alpha, ul_format, dl_formats, vocab, exponent=1.5, rng=None):
        gen = ZipfPairs(vocab, exponent, rng)
        levels, group = np.unique(np.asarray(alpha, float), return_inverse=True)
        q = np.stack([gen.draft(gen.calibrate(a)) for a in levels])
        p = np.broadcast_to(gen.p, q.shape)
        table = PairTable.build(p, q, ul_format, dl_formats)
        return cls(table, group, np.ones(len(group), dtype=np.int64), ul_format, dl_formats)

    @classmethod
    def from_pairs(cls, p, q, k, ul_format, dl_formats):
        table = PairTable.build(p, q, ul_format, dl_formats)
        return cls(table, np.zeros(k, dtype=np.int64), np.full(k, table.n), ul_format,
                   dl_formats)
