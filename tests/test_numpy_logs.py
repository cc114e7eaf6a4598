"""``policies._numpy_logs``: numpy's own log1p called from compiled code gives np.log1p's bits.

On a machine where numpy runs its AVX-512 (SVML) loop the kernels call that very function; where
numba's scalar log1p already is numpy's they call that; otherwise (-1) they do not use it and
the searches call ``np.log1p`` from Python (tests/test_compiled_kernels.py checks both ways).
"""
import numpy as np
import pytest

from multispin_sim.policies import greedy_fast

pytestmark = pytest.mark.skipif(not greedy_fast.available(),
                                reason="numba not installed or MULTISPIN_NUMBA=0")


def _logs():
    from multispin_sim.policies import _numpy_logs

    return _numpy_logs


def test_pointer_is_worked_out_once_and_is_an_address_zero_or_minus_one():
    logs = _logs()
    fp = logs.pointer()
    assert fp == logs.pointer()
    assert fp == -1 or fp >= 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_log1p_into_equals_numpy_bit_for_bit(seed):
    """The kernels' arguments (x = z r / (N0 B) >= 0, from tiny to huge), negative ones, the
    special values, and every length 0..40 (whole 8-lane blocks and padded tails)."""
    logs = _logs()
    fp = logs.pointer()
    if fp < 0:
        pytest.skip("no numpy log1p callable from compiled code here")
    rng = np.random.default_rng(seed)
    x = np.concatenate([10.0 ** rng.uniform(-12, 14, 100_000), rng.random(50_000),
                        -rng.random(1_000), [0.0, -0.0, np.inf, np.nan, -1.0, -np.inf]])
    rng.shuffle(x)
    out = np.empty_like(x)
    logs.log1p_into(fp, x, out, x.size)
    with np.errstate(all="ignore"):
        ref = np.log1p(x)
    np.testing.assert_array_equal(out.view(np.int64), ref.view(np.int64))
    for n in range(41):
        part = np.full(n + 3, 7.0)   # past n: left alone
        logs.log1p_into(fp, x[:n], part, n)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(part[:n].view(np.int64),
                                          np.log1p(x[:n]).view(np.int64))
        assert (part[n:] == 7.0).all()


def test_switched_off_the_searches_take_numpy_from_python(monkeypatch):
    monkeypatch.setattr(greedy_fast, "fused_logs", False)
    assert greedy_fast._log_pointer() == -1
