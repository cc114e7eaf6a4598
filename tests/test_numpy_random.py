"""``policies._numpy_random``: the draft searches' acceptance uniforms drawn in compiled code are
numpy's, bit for bit, and leave the stream where numpy's draw leaves it (what comes next is the
same); it declines what it cannot replay (another bit generator, a buffered 32-bit half).
"""
import numpy as np
import pytest

from multispin_sim.model.speculative import acceptance_uniforms
from multispin_sim.policies import greedy_fast

pytestmark = pytest.mark.skipif(not greedy_fast.available(),
                                reason="numba not installed or MULTISPIN_NUMBA=0")


def _random():
    from multispin_sim.policies import _numpy_random

    return _numpy_random


def _bits(a):
    return np.ascontiguousarray(a).view(np.int64)


def test_checked_against_numpy_on_this_machine():
    assert _random().available()


@pytest.mark.parametrize("seed", [0, 7, 2026, 2**64 - 1])
@pytest.mark.parametrize("shape", [(1000, 20), (1000, 9), (8192,), (3, 4099), (1, 2, 8200)])
def test_draws_equal_numpy_and_leave_the_same_state(seed, shape):
    """From a fresh stream and after other draws (uniforms, 64-bit integers, exponentials:
    any position of the 128-bit state), then the next draws of every kind agree too; every
    number of draws modulo the eight chains."""
    for before in (None, "random", "integers", "exponential"):
        a, b = np.random.default_rng(seed), np.random.default_rng(seed)
        for rng in (a, b):
            if before == "random":
                rng.random(13)
            elif before == "integers":
                rng.integers(2**63, size=5)
            elif before == "exponential":
                rng.standard_exponential(9)
        want = acceptance_uniforms(a, shape)
        got = greedy_fast.acceptance_uniforms(b, shape)
        assert got.shape == np.shape(want) and got.dtype == np.float64
        assert np.array_equal(_bits(got), _bits(want))
        assert a.bit_generator.state == b.bit_generator.state
        assert a.random() == b.random()
        assert a.integers(2**63) == b.integers(2**63)
        assert a.integers(10, dtype=np.int32) == b.integers(10, dtype=np.int32)


@pytest.mark.parametrize("n", list(range(0, 20)) + [8191])
def test_every_small_size_equals_numpy_and_small_draws_are_left_to_numpy(n):
    """The compiled draw itself at every length around the chains' 8 (whole blocks, tails,
    zero); ``greedy_fast.acceptance_uniforms`` leaves fewer than ``MIN_DRAWS`` to numpy."""
    nr = _random()
    a, b = np.random.default_rng(n), np.random.default_rng(n)
    want = acceptance_uniforms(a, (n,))
    got = nr._draw(b, (n,))
    assert np.array_equal(_bits(got), _bits(want))
    assert a.bit_generator.state == b.bit_generator.state
    assert nr.MIN_DRAWS > n
    assert greedy_fast.acceptance_uniforms(np.random.default_rng(0), (n,)) is None
    assert greedy_fast.acceptance_uniforms(np.random.default_rng(0), n) is None


def test_uniforms_are_in_the_half_open_unit_interval_from_above():
    """1 - U with U on [0, 1): never 0 (its log is finite), 1.0 possible; a chi-square test of
    equal deciles on 200,000 draws (fixed seed; 9 degrees of freedom, 0.1% critical value)."""
    u = greedy_fast.acceptance_uniforms(np.random.default_rng(11), (200_000,))
    assert u.min() > 0.0 and u.max() <= 1.0
    counts = np.bincount(np.minimum((u * 10).astype(int), 9), minlength=10)
    chi2 = float(((counts - 20_000) ** 2 / 20_000).sum())
    assert chi2 < 27.88


def test_declines_other_generators_and_a_buffered_half():
    n = _random().MIN_DRAWS
    assert greedy_fast.acceptance_uniforms(np.random.Generator(np.random.MT19937(1)), n) is None
    assert greedy_fast.acceptance_uniforms(np.random.RandomState(1), n) is None
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    state.update(has_uint32=1, uinteger=12345)
    rng.bit_generator.state = state
    assert greedy_fast.acceptance_uniforms(rng, _random().MIN_DRAWS) is None
    assert rng.bit_generator.state == state   # nothing drawn


def test_numba_off_draws_with_numpy(monkeypatch):
    monkeypatch.setattr(greedy_fast, "_kernels", False)
    assert greedy_fast.acceptance_uniforms(np.random.default_rng(1), 10_000) is None
