"""The one tie rule (model.ties): the numpy form and the loop the compiled search compiles give
the same index on every input, infinities and NaNs included."""
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from multispin_sim.model.ties import REL, best_index, best_index_loop, improves

special = st.sampled_from([math.inf, -math.inf, math.nan, 0.0, 1.0, 1.0 + REL / 2, 1.0 + 2 * REL])
values = st.lists(st.one_of(st.floats(-1e6, 1e6), special), min_size=0, max_size=12)


@settings(max_examples=500, deadline=None)
@given(values)
def test_numpy_and_loop_forms_agree(xs):
    a = np.array(xs, dtype=float)
    assert best_index(a) == best_index_loop(a)


def test_infinity_is_the_best_value():
    assert best_index([1.0, math.inf]) == best_index_loop(np.array([1.0, math.inf])) == 1
    assert best_index([math.inf, 2.0, math.inf]) == 0


def test_near_ties_go_to_the_first_and_nothing_is_chosen_from_nothing():
    assert best_index([1.0, 1.0 + REL / 2]) == 0
    assert best_index([1.0, 1.0 + 2 * REL]) == 1
    assert best_index([-math.inf, math.nan]) == -1 == best_index_loop(np.array([math.nan]))
    assert best_index([]) == -1
    assert not improves(1.0 + REL / 2, 1.0) and improves(1.0 + 2 * REL, 1.0)
    assert improves(math.inf, 1e300) and not improves(math.inf, math.inf)
