"""numpy's own ``log1p``, callable from numba kernels (the same bits as ``np.log1p``).

The compiled searches replay numpy's arithmetic, but a logarithm's last bit depends on its
implementation: numba's is the C library's, while numpy on an AVX-512 x86-64 machine runs Intel's
SVML (``__svml_log1p8_ha``: eight lanes per call, each lane on its own), which its extension
module exports. ``pointer()`` finds numpy's function and checks it, in compiled code, against
``np.log1p`` on a battery of arguments; ``log1p_into`` then gives numpy's values inside a
kernel, so a search needs no round trip to Python for its logarithms.

``pointer()`` returns the function's address (> 0), 0 when numba's scalar log1p already
gives numpy's bits (a numpy that uses the C library), or -1 when neither does: the kernels then
keep calling numpy from Python, as before. The address is an argument of the kernels (not a
linked symbol), so their cached machine code does not depend on which numpy is installed.
"""
import ctypes
import platform

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core.extending import intrinsic

_SYMBOL = "__svml_log1p8_ha"
_pointer = []


@intrinsic
def _lanes8(typingctx, fp, src, dst, i):
    """dst[i:i + 8] = the 8-lane function at address fp of src[i:i + 8] (<8 x double>)."""
    sig = types.void(fp, src, dst, i)

    def codegen(context, builder, signature, args):
        a = context.make_array(signature.args[1])(context, builder, args[1])
        b = context.make_array(signature.args[2])(context, builder, args[2])
        vt = ir.VectorType(ir.DoubleType(), 8)
        fn = builder.inttoptr(args[0], ir.FunctionType(vt, [vt]).as_pointer())
        v = builder.load(builder.bitcast(builder.gep(a.data, [args[3]]), vt.as_pointer()),
                         align=8)
        builder.store(builder.call(fn, [v]),
                      builder.bitcast(builder.gep(b.data, [args[3]]), vt.as_pointer()), align=8)
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True)
def _blocks(fp, x, out, n):
    """out[:n] = the 8-lane function fp of x[:n]; a last partial block is padded with zeros,
    as numpy pads it (the lanes are independent: the padding changes no other lane)."""
    i = 0
    while i + 8 <= n:
        _lanes8(fp, x, out, i)
        i += 8
    if i < n:
        tx = np.zeros(8)
        to = np.empty(8)
        for p in range(n - i):
            tx[p] = x[i + p]
        _lanes8(fp, tx, to, 0)
        for p in range(n - i):
            out[i + p] = to[p]


@njit(cache=True, error_model="numpy")
def log1p_into(fp, x, out, n):
    """out[:n] = np.log1p(x[:n]) (fp: ``pointer()``, > 0 numpy's 8-lane function, 0
    numba's scalar log1p)."""
    if fp == 0:
        for p in range(n):
            out[p] = np.log1p(x[p])
    else:
        _blocks(fp, x, out, n)


def _battery():
    """Arguments the check compares: [0, 1), tiny to huge, the rest of the line, and the special
    values."""
    rng = np.random.default_rng(20261201)
    parts = [1.0 - rng.random(20_000), np.exp(rng.uniform(-745, 709, 20_000)),
             np.expm1(rng.uniform(-40, 40, 20_000)), -rng.random(5_000),
             np.array([0.0, -0.0, 5e-324, 1e-300, 1.0, 2.0, np.inf, -1.0, -np.inf, np.nan,
                       -2.0, 1e308])]
    return np.concatenate(parts)


def _agrees(fp, x):
    for n in (x.size, 1, 7, 9, 13):   # whole blocks and padded tails
        out = np.empty(n)
        log1p_into(fp, x[:n], out, n)
        with np.errstate(all="ignore"):
            ref = np.log1p(x[:n])
        if not np.array_equal(out.view(np.int64), ref.view(np.int64)):
            return False
    return True


def _svml_address():
    """The address of numpy's exported 8-lane function when numpy dispatches its float64 loop
    to the AVX-512 code on this machine, else None."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    try:
        from numpy._core import _multiarray_umath as umath
        from numpy.lib.introspect import opt_func_info

        target = opt_func_info(func_name="^log1p$")["log1p"]["dd"]["current"]
        if not (target.startswith("AVX512") or target == "X86_V4"):
            return None
        return ctypes.cast(getattr(ctypes.CDLL(umath.__file__), _SYMBOL), ctypes.c_void_p).value
    except (ImportError, OSError, AttributeError, KeyError, TypeError):
        return None


def pointer():
    """numpy's log1p for ``log1p_into``: its address, 0 (numba's scalar log1p is numpy's) or
    -1 (neither checks out). Worked out once per process."""
    if not _pointer:
        x = _battery()
        addr = _svml_address()
        if addr and _agrees(addr, x):
            _pointer.append(addr)
        elif _agrees(0, x):
            _pointer.append(0)
        else:
            _pointer.append(-1)
    return _pointer[0]
