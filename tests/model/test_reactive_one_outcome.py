"""The engine's scalar reactive paths give the very same numbers as the paths they replace.

``model.reactive.split_one`` (behind ``_optimal_split_one`` and ``ReactivePolicy.one_outcome``)
skips work that cannot change the decision; every float it returns must be bit-identical to the
original one-outcome solver, kept here verbatim as ``reference_split_one`` (the version the
golden outputs were made with). Edge cases: ties in the UL order, one device, no DL budget,
gains spanning many orders of magnitude, every device rejected.
``model.reactive.assign_one`` (all-UL, all-DL and the random split behind
``ReactivePolicy.one_outcome``) must give what ``evaluate_assignment`` gives, bit for bit, and the
random split must take the same coins from the policy stream.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from multispin_sim.engine.server import EdgeServer
from multispin_sim.model import reactive as R
from multispin_sim.model.reactive import UL, DL, ReactiveProblem
from multispin_sim.model.system import System
from multispin_sim.policies.reactive import (AllDownlink, AllUplink, ExhaustiveSplit,
                                             OptimalSplit, RandomSplit)
from multispin_sim.policies.straggler import DeadlineSplit

_LN2 = np.log(2.0)
N0 = 10 ** (-174 / 10) * 1e-3


def reference_split_one(problem):
    """The one-outcome optimal split as it was before the fast path (verbatim)."""
    k = problem.shape[1]
    idx = np.flatnonzero(problem.rejected[0]).tolist()
    if not idx:
        zeros = np.zeros((1, k))
        return R.ReactiveDecision(np.zeros((1, k), dtype=np.int8), zeros, zeros.copy(),
                                  np.zeros(1), np.zeros(1))
    s_bits, n0, p_dl = float(problem.payload_bits), float(problem.n0), float(problem.p_dl)
    b = float(problem.bandwidth_per_device[0])
    nb = n0 * b
    log1p = math.log1p
    p_ul, g_ul, g_dl = problem.p_ul.tolist(), problem.g_ul.tolist(), problem.g_dl.tolist()
    key = [p_ul[i] * g_ul[i] for i in idx]
    order = sorted(range(len(idx)), key=key.__getitem__, reverse=True)
    dev = [idx[j] for j in order]

    def seconds(snr):
        rate = b * log1p(snr) / _LN2
        return s_bits / rate if rate > 0 else math.inf

    d_ul = [seconds(key[j] / nb) for j in order]
    n = len(dev)
    suffix = [0.0] * (n + 1)
    for j in range(n - 1, -1, -1):
        g = g_dl[dev[j]]
        suffix[j] = suffix[j + 1] + (1.0 / g if g > 0 else math.inf)
    tau = [seconds(p_dl / (nb * x)) if x > 0 else 0.0 for x in suffix]
    f = [max(0.0 if m == 0 else d_ul[m - 1], tau[m]) for m in range(n + 1)]
    n_ul = min(range(n + 1), key=f.__getitem__)
    t_dl = tau[n_ul]
    grow = math.expm1(s_bits / (b * t_dl) * _LN2) if 0 < t_dl < math.inf else 0.0
    mode, power, delay = [0] * k, [0.0] * k, [0.0] * k
    for m, i in enumerate(dev):
        if m < n_ul:
            mode[i], power[i], delay[i] = UL, p_ul[i], d_ul[m]
        else:
            mode[i], power[i], delay[i] = DL, nb / g_dl[i] * grow, t_dl
    return R.ReactiveDecision(np.array([mode], dtype=np.int8), np.array([power]),
                              np.array([delay]), np.array([b]), np.array([f[n_ul]]))


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def assert_same(got, want):
    for name in ("mode", "power_w", "delay_s", "bandwidth_hz", "t_comm"):
        assert same_bits(getattr(got, name), getattr(want, name)), name


def system(k, p_ul, p_dl, bits, bandwidth):
    return System(alpha=np.full(k, 0.7), draft_latency_s=np.full(k, 0.01),
                  p_ul_w=np.asarray(p_ul, dtype=float), pathloss=np.ones(k), p_dl_w=p_dl,
                  payload_bits=bits, bandwidth_hz=bandwidth, n0=N0, verify_fixed_s=0.1,
                  verify_per_device_s=0.01)


# gains as the engine sees them: path loss (1e-13..1e-7) times Rayleigh powers, with a few
# values repeated so that UL keys tie
gain = st.floats(1e-16, 1e-6, allow_nan=False, allow_infinity=False)


@st.composite
def problems(draw):
    k = draw(st.integers(1, 12))
    pool = draw(st.lists(gain, min_size=1, max_size=4))
    g_ul = [draw(st.sampled_from(pool)) if draw(st.booleans()) else draw(gain) for _ in range(k)]
    reciprocal = draw(st.booleans())
    g_dl = g_ul if reciprocal else [draw(gain) for _ in range(k)]
    p_ul = draw(st.sampled_from([0.01, [0.01, 0.02, 0.005] * 4, [0.01, 0.0, 0.01] * 4]))
    p_ul = np.broadcast_to(np.asarray(p_ul, dtype=float)[:k] if np.ndim(p_ul) else p_ul, (k,))
    p_dl = draw(st.sampled_from([0.0, 1e-4, 0.04, 0.4, 4.0]))
    bits = draw(st.sampled_from([1.0, 34_816.0, 1e6]))
    bandwidth = draw(st.sampled_from([1e5, 10e6, 20e6]))
    rejected = draw(st.lists(st.booleans(), min_size=k, max_size=k))
    return k, np.array(g_ul), np.array(g_dl), p_ul.copy(), p_dl, bits, bandwidth, np.array(rejected)


@settings(max_examples=400, deadline=None)
@given(problems())
def test_optimal_split_one_bit_identical_to_reference(case):
    k, g_ul, g_dl, p_ul, p_dl, bits, bandwidth, rejected = case
    problem = ReactiveProblem(rejected, g_ul, g_dl, p_ul, p_dl, bits, bandwidth, N0)
    assert_same(R.optimal_split(problem), reference_split_one(problem))


@settings(max_examples=300, deadline=None)
@given(problems())
def test_server_decide_and_one_outcome_bit_identical(case):
    k, g_ul, g_dl, p_ul, p_dl, bits, bandwidth, rejected = case
    sys_ = system(k, p_ul, p_dl, bits, bandwidth)
    server = EdgeServer(sys_, OptimalSplit(), None, np.random.default_rng(0))
    want = reference_split_one(sys_.reactive_problem(rejected, g_ul, g_dl))
    assert_same(server.decide(rejected, g_ul, g_dl), want)
    idx = np.flatnonzero(rejected).tolist()
    if idx:
        mode, power, delay, b, t_comm = server.one_outcome()(idx, g_ul.tolist(), g_dl.tolist())
        assert same_bits(np.array(mode, dtype=np.int8), want.mode[0])
        assert same_bits(np.array(power), want.power_w[0])
        assert same_bits(np.array(delay), want.delay_s[0])
        assert same_bits(np.array([b]), want.bandwidth_hz)
        assert same_bits(np.array([t_comm]), want.t_comm)
        # the slowest delay is the largest planned delay (what the engine records as T_comm)
        assert max(delay) == t_comm


def test_random_engine_like_problems_bit_identical():
    rng = np.random.default_rng(7)
    k = 20
    pl = 10 ** rng.uniform(-13, -8, k)
    sys_ = system(k, np.full(k, 0.01), 0.04, 34_816.0, 10e6)
    server = EdgeServer(sys_, OptimalSplit(), None, rng)
    for _ in range(2000):
        g_ul = pl * rng.exponential(size=k)
        g_dl = g_ul if rng.random() < 0.5 else pl * rng.exponential(size=k)
        rejected = rng.random(k) < rng.uniform(0.05, 1.0)
        want = reference_split_one(sys_.reactive_problem(rejected, g_ul, g_dl))
        assert_same(server.decide(rejected, g_ul, g_dl), want)


def test_degenerate_gains():
    """A zero DL gain (infinite DL load) and an infinite gain keep the reference's values; where
    the reference divided by the zero gain, the batch solver's (numpy's inf and nan)."""
    k = 4
    sys_ = system(k, np.full(k, 0.01), 0.04, 34_816.0, 10e6)
    server = EdgeServer(sys_, OptimalSplit(), None, np.random.default_rng(0))
    for g_ul, g_dl in [([1e-9, 2e-9, 1e-10, 5e-9], [1e-9, 0.0, 1e-10, 5e-9]),
                       ([1e-9, np.inf, 1e-10, 5e-9], [1e-9, 2e-9, np.inf, 5e-9]),
                       ([1e-9] * 4, [1e-9] * 4)]:
        g_ul, g_dl = np.array(g_ul), np.array(g_dl)
        for rejected in ([True] * 4, [False, True, True, False], [False, False, True, False]):
            rejected = np.array(rejected)
            try:
                want = reference_split_one(sys_.reactive_problem(rejected, g_ul, g_dl))
            except ZeroDivisionError:
                two = R.optimal_split(sys_.reactive_problem(np.vstack([rejected] * 2), g_ul,
                                                            g_dl))
                want = R.ReactiveDecision(*(getattr(two, name)[:1] for name in (
                    "mode", "power_w", "delay_s", "bandwidth_hz", "t_comm")))
            assert_same(server.decide(rejected, g_ul, g_dl), want)


def test_one_outcome_is_the_policys_own():
    """The server asks the policy for its one-outcome decision; a deferring policy is read
    whole (None); a policy without a scalar form gets the default, its own ``decide``."""
    sys_ = system(3, np.full(3, 0.01), 0.04, 34_816.0, 10e6)
    rng = np.random.default_rng(0)
    assert EdgeServer(sys_, OptimalSplit(), None, rng).one_outcome() is not None
    assert EdgeServer(sys_, AllDownlink(), None, rng).one_outcome() is not None
    assert EdgeServer(sys_, DeadlineSplit(), None, rng).one_outcome() is None
    rejected, g = np.array([True, True, False]), np.array([1e-9, 3e-10, 2e-9])
    exhaustive = ExhaustiveSplit()
    got = EdgeServer(sys_, exhaustive, None, rng).decide(rejected, g, g)
    assert_same(got, exhaustive.decide(sys_.reactive_problem(rejected, g, g)))
    # a new system (another payload, say) gets its own constants
    server = EdgeServer(sys_, OptimalSplit(), None, rng)
    first = server.one_outcome()
    server.system = system(3, np.full(3, 0.01), 0.04, 1000.0, 10e6)
    assert server.one_outcome() is not first
    assert_same(server.decide(rejected, g, g),
                reference_split_one(server.system.reactive_problem(rejected, g, g)))


BASELINES = {"all-ul": AllUplink, "all-dl": AllDownlink, "random": RandomSplit}


def check_baseline(name, k, g_ul, g_dl, p_ul, p_dl, bits, bandwidth, rejected, seed=0):
    """``EdgeServer.decide`` and ``one_outcome`` of a baseline mode against the policy's own
    ``decide`` on the ``ReactiveProblem`` (numpy's ``evaluate_assignment``), on equal streams."""
    sys_ = system(k, p_ul, p_dl, bits, bandwidth)
    want_rng, got_rng, split_rng = (np.random.default_rng(seed) for _ in range(3))
    policy = BASELINES[name]()
    want = policy.decide(sys_.reactive_problem(rejected, g_ul, g_dl), want_rng)
    server = EdgeServer(sys_, policy, got_rng, np.random.default_rng(1))
    assert_same(server.decide(rejected, g_ul, g_dl), want)
    idx = np.flatnonzero(rejected).tolist()
    if idx:
        split = EdgeServer(sys_, policy, split_rng, np.random.default_rng(1)).one_outcome()
        mode, power, delay, b, t_comm = split(idx, g_ul.tolist(), g_dl.tolist())
        assert same_bits(np.array(mode, dtype=np.int8), want.mode[0])
        assert same_bits(np.array(power), want.power_w[0])
        assert same_bits(np.array(delay), want.delay_s[0])
        assert same_bits(np.array([b]), want.bandwidth_hz)
        assert same_bits(np.array([t_comm]), want.t_comm)
        # the policy stream is left where the policy's own decide leaves it
        assert split_rng.bit_generator.state == want_rng.bit_generator.state
    assert got_rng.bit_generator.state == want_rng.bit_generator.state


@settings(max_examples=300, deadline=None)
@given(problems(), st.sampled_from(sorted(BASELINES)))
def test_baseline_one_outcome_bit_identical(case, name):
    k, g_ul, g_dl, p_ul, p_dl, bits, bandwidth, rejected = case
    check_baseline(name, k, g_ul, g_dl, p_ul, p_dl, bits, bandwidth, rejected)


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_baseline_engine_like_problems_bit_identical(name):
    """Engine-sized problems (K up to 40: numpy's pairwise sum of the DL loads has blocks of
    8), and degenerate gains (zero, infinite), which take numpy's path."""
    rng = np.random.default_rng(11)
    for trial in range(600):
        k = int(rng.integers(1, 41))
        pl = 10 ** rng.uniform(-13, -8, k)
        g_ul = pl * rng.exponential(size=k)
        g_dl = g_ul if rng.random() < 0.5 else pl * rng.exponential(size=k)
        if trial % 50 == 0:
            g_dl = g_dl.copy()
            g_dl[0] = (0.0, np.inf)[trial // 50 % 2]
        rejected = rng.random(k) < rng.uniform(0.05, 1.0)
        check_baseline(name, k, g_ul, g_dl, np.full(k, 0.01), float(rng.choice([0.0, 0.04, 4.0])),
                       34_816.0, 10e6, rejected, seed=trial)


def test_a_zero_gain_on_dl_gives_an_infinite_delay_in_one_outcome_as_in_many():
    """A rejected device whose DL gain is 0 and whose UL is no better ends on DL with an
    infinite delay: the one-outcome split (``split_one``, behind a one-row problem and the
    engine's ``one_outcome``) gives the batch solver's values, not a ZeroDivisionError."""
    k = 3
    sys_ = system(k, np.full(k, 0.01), 0.04, 34_816.0, 10e6)
    g = np.array([8.77e-13, 0.0, 2.17e-13])
    rejected = np.array([False, True, True])
    two = R.optimal_split(sys_.reactive_problem(np.vstack([rejected] * 2), g, g))
    assert np.isinf(two.t_comm).all()
    one = R.optimal_split(sys_.reactive_problem(rejected, g, g))
    for name in ("mode", "power_w", "delay_s", "t_comm"):
        assert same_bits(getattr(one, name), getattr(two, name)[:1]), name
    mode, power, delay, _, t_comm = OptimalSplit().one_outcome(sys_)([1, 2], g.tolist(),
                                                                    g.tolist())
    assert t_comm == math.inf and mode == two.mode[0].tolist()
    assert same_bits(np.array(power), two.power_w[0]) and same_bits(np.array(delay),
                                                                   two.delay_s[0])
