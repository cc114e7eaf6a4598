"""The one rule by which every draft search compares candidates (numpy and compiled alike).

Objective values computed by two implementations (numpy, numba) agree within about 1e-15
relative, not bit for bit. A decision must not turn on that difference, so:

- a candidate improves on the current point only if it is larger by more than ``REL`` relative
  (``improves``);
- among candidates, the best is the first (lowest index) whose value is within ``REL``
  relative of the largest (``best_index``).

Decisions of two implementations can then differ only at near-ties: two values whose
difference is itself within about 1e-15 of ``REL`` relative. ``improves`` and
``best_index_loop`` use scalars and 1-D arrays only, so the compiled search compiles them as
they are; ``best_index`` is the same rule in numpy calls (tests/model/test_ties.py holds the
two to each other).
"""
import math

import numpy as np

REL = 1e-12


def improves(new, old):
    """True when ``new`` is larger than ``old`` by more than ``REL`` relative."""
    return new > old + REL * abs(old)


def best_index(values):
    """The first index whose value is within ``REL`` relative of the largest; -1 when every
    value is -inf or NaN (nothing to choose)."""
    values = np.asarray(values, dtype=float)
    top = np.fmax.reduce(values, initial=-math.inf)   # fmax: NaNs are passed over
    if top == -math.inf:
        return -1
    floor = top - REL * abs(top) if top < math.inf else top   # inf - inf would be NaN
    return int(np.argmax(values >= floor))


def best_index_loop(values):
    """``best_index`` as a loop (for compiled code)."""
    top = -math.inf
    for i in range(values.shape[0]):
        if values[i] > top:
            top = values[i]
    if top == -math.inf:
        return -1
    floor = top - REL * abs(top) if top < math.inf else top
    for i in range(values.shape[0]):
        if values[i] >= floor:
            return i
    return -1
