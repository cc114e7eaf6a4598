"""Payload formats: how one vocabulary distribution is represented on the air, and its size.

A format maps a distribution x over V token ids to (i) the number of bits it takes on the link
and (ii) the distribution x~ the receiver reconstructs (``compress``). Formats
(``payload.format``):

=============  ==========================================  ====================================
format         bits                                        reconstruction x~
=============  ==========================================  ====================================
``dense``      V Q                                         x (lossless)
``topk``       k (ceil(log2 V) + Q)                        the k largest entries, renormalised
``topp``       ceil(log2(V + 1)) + n (ceil(log2 V) + Q)    the n largest entries, n the fewest
                                                           with mass >= p, renormalised
``quantized``  k (ceil(log2 V) + b) + 32                   the k largest entries (k = V: dense,
               (dense: V b + 32)                           no indices), each quantised to b bits
=============  ==========================================  ====================================

Q = ``prob_bits`` (16: the probability values of ``dense``, ``topk`` and ``topp`` are taken as
exact), k = ``effective_vocab``, p = ``top_p``, b = ``quant_bits``. Headers: ``topk`` and
``dense`` have none (k, V and Q are fixed by the configuration, known to both ends); ``topp``
carries its count n in ceil(log2(V + 1)) bits; ``quantized`` carries the scale (the largest kept
probability) as one float32 (32 bits). Quantiser: level_i = round(x_i / x_max (2^b - 1)),
x~_i = level_i x_max / (2^b - 1), then renormalised (the largest entry is never zero).

``topk`` with the defaults (k = 1024, V = 151,665, Q = 16) is the default payload,
34,816 bits (``payload_bits``).
"""
import math

import numpy as np

DENSE = "dense"
QUANT_HEADER_BITS = 32


def index_bits(vocab):
    """Bits of one token index: ceil(log2 V)."""
    return math.ceil(math.log2(int(vocab)))


def correction_bits(ul, choice, ul_bits, dl_bits):
    """Bits of each device's correction: ``ul_bits`` (K,) where ``ul`` (K,) or (M, K) is True,
    else ``dl_bits`` (K, F) of the DL format ``choice`` picked (same shape as ``ul``)."""
    dl_bits = np.asarray(dl_bits, float)
    dl = dl_bits[np.arange(dl_bits.shape[0]), np.maximum(choice, 0)]
    return np.where(ul, np.asarray(ul_bits, float), dl)


def payload_bits(effective_vocab=1024, vocab=151_665, prob_bits=16):
    """Bits of one distribution.

    Top-k ("effective vocabulary"): each of the ``effective_vocab`` kept entries carries its token
    index (ceil(log2 vocab) bits) and its probability (``prob_bits``):
    S = V_eff (ceil(log2 V) + Q). Dense (``effective_vocab == "dense"``): every probability in
    vocabulary order, no indices: S = V Q.
    """
    if effective_vocab == DENSE:
        return int(vocab) * int(prob_bits)
    return int(effective_vocab) * (index_bits(vocab) + int(prob_bits))


def _renormalise(x):
    return x / x.sum(axis=-1, keepdims=True)


def _top_mask(x, k):
    """Mask of the k largest entries of each row (among equal entries at the k-th place, which
    ones are kept is numpy's ``argpartition``'s choice: one mask serves a row's bits and its
    compression alike)."""
    v = x.shape[-1]
    if k >= v:
        return np.ones(x.shape, dtype=bool)
    idx = np.argpartition(-x, k - 1, axis=-1)[..., :k]
    mask = np.zeros(x.shape, dtype=bool)
    np.put_along_axis(mask, idx, True, axis=-1)
    return mask


def _nucleus_count(x, p):
    """Fewest entries (largest first) whose mass reaches p, per row (p <= 1)."""
    s = -np.sort(-x, axis=-1)
    c = np.cumsum(s, axis=-1)
    n = np.sum(c < p * c[..., -1:] * (1 - 1e-12), axis=-1) + 1
    return np.minimum(n, x.shape[-1])


class PayloadFormat:
    """Interface: ``bits(x=None)`` (an int; the distribution(s) are needed only when the size
    depends on them) and ``compress(x)`` -> x~ of the same shape, rows summing to 1."""

    name = "?"
    fixed_size = True

    def __init__(self, vocab=151_665, prob_bits=16, effective_vocab=1024, top_p=0.95,
                 quant_bits=8):
        self.vocab = int(vocab)
        self.prob_bits = int(prob_bits)
        self.k = effective_vocab
        self.top_p = float(top_p)
        self.quant_bits = int(quant_bits)

    def bits(self, x=None):
        raise NotImplementedError

    def compress(self, x):
        raise NotImplementedError

    def describe(self):
        return self.name


class Dense(PayloadFormat):
    name = "dense"

    def bits(self, x=None):
        return self.vocab * self.prob_bits

    def compress(self, x):
        return np.array(x, dtype=float)


class TopK(PayloadFormat):
    name = "topk"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.k = self.vocab if self.k == DENSE else int(self.k)

    def bits(self, x=None):
        return payload_bits(self.k, self.vocab, self.prob_bits)

    def compress(self, x):
        x = np.asarray(x, dtype=float)
        return _renormalise(np.where(_top_mask(x, self.k), x, 0.0))

    def describe(self):
        return f"top-{self.k}"


class TopP(PayloadFormat):
    name = "topp"
    fixed_size = False

    def bits(self, x=None):
        if x is None:
            raise ValueError("the size of a top-p payload depends on the distribution")
        n = _nucleus_count(np.asarray(x, dtype=float), self.top_p)
        return (math.ceil(math.log2(self.vocab + 1))
                + n * (index_bits(self.vocab) + self.prob_bits))

    def compress(self, x):
        x = np.asarray(x, dtype=float)
        n = np.atleast_1d(_nucleus_count(x, self.top_p))
        rows = np.atleast_2d(x)
        out = np.stack([np.where(_top_mask(r, int(m)), r, 0.0) for r, m in zip(rows, n)])
        return _renormalise(out.reshape(x.shape))

    def describe(self):
        return f"top-p {self.top_p:g}"


class Quantized(PayloadFormat):
    name = "quantized"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.k = self.vocab if self.k == DENSE else min(int(self.k), self.vocab)

    def bits(self, x=None):
        if self.k >= self.vocab:
            return self.vocab * self.quant_bits + QUANT_HEADER_BITS
        return self.k * (index_bits(self.vocab) + self.quant_bits) + QUANT_HEADER_BITS

    def compress(self, x):
        x = np.asarray(x, dtype=float)
        kept = np.where(_top_mask(x, self.k), x, 0.0)
        top = kept.max(axis=-1, keepdims=True)
        levels = (1 << self.quant_bits) - 1
        q = np.rint(kept / top * levels) * (top / levels)
        return _renormalise(q)

    def describe(self):
        kept = "dense" if self.k >= self.vocab else f"top-{self.k}"
        return f"{kept} {self.quant_bits}-bit"


FORMATS = {cls.name: cls for cls in (Dense, TopK, TopP, Quantized)}


def make_format(name="topk", **kw):
    """The payload format registered under ``name`` (``payload.format``)."""
    try:
        cls = FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown payload format {name!r}; allowed: "
                         f"{', '.join(FORMATS)}") from None
    return cls(**kw)


def format_from_scenario(payload, **override):
    """The format of a scenario's ``payload`` section (keyword overrides, e.g. another k)."""
    kw = dict(vocab=payload.vocab, prob_bits=payload.prob_bits,
              effective_vocab=payload.effective_vocab, top_p=payload.top_p,
              quant_bits=payload.quant_bits)
    name = override.pop("format", payload.format)
    if name == DENSE:
        kw["effective_vocab"] = DENSE
    elif name == "topk" and kw["effective_vocab"] == DENSE:
        name = DENSE  # 'effective_vocab: dense' under the default format: the dense payload
    kw.update(override)
    return make_format(name, **kw)
