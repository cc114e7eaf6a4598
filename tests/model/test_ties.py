"""The one tie rule (model.ties): the first value within REL of the largest, on every input,
infinities and NaNs included, in Python and compiled from the same source alike."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from multispin_sim.model.ties import REL, best_index, improves

special = st.sampled_from([math.inf, -math.inf, math.nan, 0.0, 1.0, 1.0 + REL / 2, 1.0 + 2 * REL])
values = st.lists(st.one_of(st.floats(-1e6, 1e6), special), min_size=0, max_size=12)


def _rule(xs):
    """The rule as stated: NaNs passed over, the first value within REL of the largest."""
    top = max((x for x in xs if not math.isnan(x)), default=-math.inf)
    if top == -math.inf:
        return -1
    floor = top - REL * abs(top) if top < math.inf else top
    return next(i for i, x in enumerate(xs) if x >= floor)


@settings(max_examples=500, deadline=None)
@given(values)
def test_best_index_is_the_rule(xs):
    assert best_index(np.array(xs, dtype=float)) == _rule(xs)


@settings(max_examples=200, deadline=None)
@given(values)
def test_the_compiled_form_agrees(xs):
    sn = pytest.importorskip("multispin_sim.policies.search_numba")
    a = np.array(xs, dtype=float)
    assert sn.best_index(a) == best_index(a)


def test_infinity_is_the_best_value():
    assert best_index(np.array([1.0, math.inf])) == 1
    assert best_index(np.array([math.inf, 2.0, math.inf])) == 0


def test_near_ties_go_to_the_first_and_nothing_is_chosen_from_nothing():
    assert best_index(np.array([1.0, 1.0 + REL / 2])) == 0
    assert best_index(np.array([1.0, 1.0 + 2 * REL])) == 1
    assert best_index(np.array([-math.inf, math.nan])) == -1 == best_index(np.array([math.nan]))
    assert best_index(np.array([])) == -1
    assert not improves(1.0 + REL / 2, 1.0) and improves(1.0 + 2 * REL, 1.0)
    assert improves(math.inf, 1e300) and not improves(math.inf, math.inf)
