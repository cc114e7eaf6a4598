"""The one tie rule by which every draft search compares candidates (numpy and compiled alike).

Objective values computed by two implementations (numpy, numba) agree within about 1e-15
relative, not bit for bit. A decision must not turn on that difference, so:

- a candidate improves on the current point only if it is larger by more than ``REL`` relative
  (``improves``);
- among candidates, the best is the first (lowest index) whose value is within ``REL``
  relative of the largest (``best_index``).

Decisions of two implementations can then differ only at near-ties: two values whose
difference is itself within about 1e-15 of ``REL`` relative. Both functions use scalars and
1-D arrays only, so the compiled search compiles them as they are: one source for both.
"""
import math

REL = 1e-12


def improves(new, old):
    """True when ``new`` is larger than ``old`` by more than ``REL`` relative."""
    return new > old + REL * abs(old)


def best_index(values):
    """The first index of the 1-D array ``values`` whose value is within ``REL`` relative of the
    largest; -1 when every value is -inf or NaN (nothing to choose)."""
    top = -math.inf
    for i in range(values.shape[0]):
        if values[i] > top:   # NaNs are passed over
            top = values[i]
    if top == -math.inf:
        return -1
    floor = top - REL * abs(top) if top < math.inf else top   # inf - inf would be NaN
    for i in range(values.shape[0]):
        if values[i] >= floor:
            return i
    return -1
