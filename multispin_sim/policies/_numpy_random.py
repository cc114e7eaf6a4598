"""numpy's PCG64 uniforms drawn in compiled code: the same doubles, and the same stream state
after, as ``Generator.random``.

A draft search draws M x K acceptance uniforms per decision (20,000 at the paper's K = 20), and
numpy takes about 2.6 ns for each: ``Generator.random`` calls the bit generator through a
function pointer per double, then ``1 - U`` is a second pass. Here the same PCG64 XSL-RR
generator runs inline: a 128-bit LCG step (state = state x multiplier + increment), the output
rotr64(high ^ low, high >> 58), the double (output >> 11) x 2^-53, as numpy's ``next_double``, and
``1 - U`` on it, in one pass. The stream then moves on by ``PCG64.advance(n)``, which puts it
exactly where drawing the n uniforms would.

``available()`` checks this against numpy (several seeds, sizes and stream positions) once per
process; where it does not match (another numpy, another generator), ``one_minus_uniforms``
returns None and the caller draws with numpy.
"""
import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core.extending import intrinsic

from ..model.speculative import acceptance_uniforms

# PCG64's multiplier (numpy's PCG_DEFAULT_MULTIPLIER_HIGH, _LOW) and numpy's double scale
_MULT_HI, _MULT_LO = 2549297995355413924, 4865540595714422341
_SCALE = 1.0 / 9007199254740992.0
_LOW64 = (1 << 64) - 1
_checked = []


@intrinsic
def _mulhi(typingctx, a, b):
    """The high 64 bits of the 128-bit product of two uint64."""
    sig = types.uint64(types.uint64, types.uint64)

    def codegen(context, builder, signature, args):
        i128 = ir.IntType(128)
        p = builder.mul(builder.zext(args[0], i128), builder.zext(args[1], i128))
        return builder.trunc(builder.lshr(p, ir.Constant(i128, 64)), ir.IntType(64))

    return sig, codegen


@njit(cache=True, inline="always")
def _mul_add(h, lo, ah, al, ch, cl):
    """(h, lo) x (ah, al) + (ch, cl) modulo 2^128, on (high, low) uint64 halves."""
    p = lo * al
    hi = _mulhi(lo, al) + lo * ah + h * al
    low = p + cl
    return hi + ch + np.uint64(low < p), low


@njit(cache=True, inline="always")
def _one_minus(h, lo):
    """1 - U from the state (h, lo): the XSL-RR output rotr64(h ^ lo, h >> 58), then numpy's
    ``next_double`` (output >> 11) x 2^-53."""
    x = h ^ lo
    rot = h >> np.uint64(58)
    r = (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))
    return 1.0 - float(np.int64(r >> np.uint64(11))) * _SCALE


_CHAINS = 8   # draws i, i + 8, ... come from one chain: eight independent LCG chains at a time


@njit(cache=True)
def fill_one_minus(sh, sl, ih, il, out):
    """out[i] = 1 - U_i for the n = out.size uniforms a PCG64 stream at state (sh, sl) with
    increment (ih, il) gives next (draw i: the output of the state after i + 1 LCG steps).
    Chain j holds the state of draws j, j + 8, ...: it starts after j + 1 steps and moves 8
    steps at a time, state x M^8 + inc (1 + M + ... + M^7), so that eight independent
    multiplications are in flight (the same states, hence the same draws)."""
    mh = np.uint64(_MULT_HI)
    ml = np.uint64(_MULT_LO)
    zero = np.uint64(0)
    hs = np.empty(_CHAINS, np.uint64)
    ls = np.empty(_CHAINS, np.uint64)
    h, lo = sh, sl
    ah, al = zero, np.uint64(1)   # M^8
    ch, cl = zero, zero           # inc (1 + M + ... + M^7)
    for j in range(_CHAINS):
        h, lo = _mul_add(h, lo, mh, ml, ih, il)
        hs[j] = h
        ls[j] = lo
        ah, al = _mul_add(ah, al, mh, ml, zero, zero)
        ch, cl = _mul_add(ch, cl, mh, ml, ih, il)
    n = out.size
    i = 0
    while i + _CHAINS <= n:
        for j in range(_CHAINS):
            out[i + j] = _one_minus(hs[j], ls[j])
            hs[j], ls[j] = _mul_add(hs[j], ls[j], ah, al, ch, cl)
        i += _CHAINS
    for j in range(n - i):
        out[i + j] = _one_minus(hs[j], ls[j])


def _draw(rng, shape):
    """``1 - rng.random(shape)`` compiled, then the stream advanced past the draws; None with a
    buffered 32-bit half (``PCG64.advance`` drops it, drawing would keep it)."""
    bg = rng.bit_generator
    st = bg.state
    if st["has_uint32"]:
        return None
    s, inc = st["state"]["state"], st["state"]["inc"]
    out = np.empty(shape)
    fill_one_minus(np.uint64(s >> 64), np.uint64(s & _LOW64), np.uint64(inc >> 64),
                   np.uint64(inc & _LOW64), out.reshape(-1))
    bg.advance(out.size)
    return out


def available():
    """True when the compiled draws equal numpy's here (checked once per process)."""
    if not _checked:
        ok = True
        for seed in (0, 1, 2026, 2**63 + 5):
            for skip, shape in ((0, (1000, 20)), (3, (7,)), (1, (5, 3)), (2, (0, 4))):
                a = np.random.Generator(np.random.PCG64(seed))
                b = np.random.Generator(np.random.PCG64(seed))
                a.random(skip)
                b.random(skip)
                want = acceptance_uniforms(a, shape)   # what it replaces
                got = _draw(b, shape)
                if got is None or not np.array_equal(got.view(np.int64), want.view(np.int64)) \
                        or a.bit_generator.state != b.bit_generator.state:
                    ok = False
        _checked.append(ok)
    return _checked[0]


MIN_DRAWS = 8192   # fewer: numpy draws (reading and advancing the state costs a few us)


def _size(shape):
    return shape if isinstance(shape, int) else math.prod(shape)


def one_minus_uniforms(rng, shape):
    """``1 - rng.random(shape)`` (``model.speculative.acceptance_uniforms``' values, and the
    stream left where it leaves it) for a PCG64 ``Generator``; None when not applicable (another
    generator, a buffered 32-bit half, fewer than ``MIN_DRAWS`` uniforms, or a numpy whose draws
    differ from these)."""
    if type(rng) is not np.random.Generator or type(rng.bit_generator) is not np.random.PCG64 \
            or _size(shape) < MIN_DRAWS or not available():
        return None
    return _draw(rng, shape)
