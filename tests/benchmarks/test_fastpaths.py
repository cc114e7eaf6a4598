"""The fast paths of ``bench fastpaths`` (``benchmarks/fastpaths.py``): with each of the numpy
search's switched off, the general path makes the same decisions, so the benchmark times the
same work done two ways (the engine's shortcuts: tests/engine/test_shortcuts.py, output bytes);
and every switch is put back afterwards, also after an error."""
import os
from unittest import mock

import numpy as np
import pytest

from multispin_sim.benchmarks import fastpaths
from multispin_sim.benchmarks.draft import decision_times, numpy_search
from multispin_sim.policies import budget_numba
from multispin_sim.policies.draft_search import compiled_enabled
from multispin_sim.policies.search_numba import CompiledSearch


@pytest.mark.parametrize("name", list(fastpaths.SEARCH))
def test_a_numpy_search_fast_path_switched_off_gives_the_same_decisions(name):
    controller, _, switches = fastpaths.SEARCH[name]
    with numpy_search():
        _, fast = decision_times(controller, 4)
        with fastpaths.switched_off(switches):
            _, slow = decision_times(controller, 4)
    assert fast.shape == (4, 20)
    np.testing.assert_array_equal(fast, slow)


def test_every_switch_is_put_back_even_after_an_error():
    switches = [s for _, s in fastpaths.ENGINE.values()] + \
               [s for _, _, s in fastpaths.SEARCH.values()] + \
               [s for _, _, s in fastpaths.COMPILED.values()]
    for group in switches:
        before = [owner.__dict__[attr] for owner, attr, _ in group]
        with pytest.raises(RuntimeError):
            with fastpaths.switched_off(group):
                assert [owner.__dict__[attr] for owner, attr, _ in group] == \
                    [general for _, _, general in group]
                raise RuntimeError
        assert [owner.__dict__[attr] for owner, attr, _ in group] == before


@pytest.mark.parametrize("name", ["whole greedy", "whole budget"])
def test_the_compiled_search_switched_off_makes_the_same_decisions(name):
    """The numpy search: the same decisions as the search compiled whole on these rounds (both
    compare candidates by the one tie rule)."""
    if os.environ.get("MULTISPIN_NUMBA") == "0":
        pytest.skip("MULTISPIN_NUMBA=0: there is no compiled search to compare with")
    assert compiled_enabled()   # numba is a core dependency: the compiled search runs here
    controller, _, switches = fastpaths.COMPILED[name]
    _, fast = decision_times(controller, 4)
    with fastpaths.switched_off(switches):
        _, slow = decision_times(controller, 4)
    np.testing.assert_array_equal(fast, slow)


@pytest.mark.parametrize("name, owner, attribute", [
    ("whole greedy", CompiledSearch, "greedy"),
    ("whole budget", budget_numba, "budget_search_compiled")])
def test_a_compiled_search_switched_off_does_not_run(name, owner, attribute):
    """The switch takes the compiled search out of the decisions it times (it once patched a
    name the controllers no longer read, and timed the compiled search against itself)."""
    if os.environ.get("MULTISPIN_NUMBA") == "0":
        pytest.skip("MULTISPIN_NUMBA=0: there is no compiled search to switch off")
    controller, _, switches = fastpaths.COMPILED[name]

    def compiled(*args, **kwargs):
        raise LookupError("the compiled search ran")
    with mock.patch.object(owner, attribute, compiled):
        with pytest.raises(LookupError):
            decision_times(controller, 1, warmup=0)
        with fastpaths.switched_off(switches):
            decision_times(controller, 1, warmup=0)
