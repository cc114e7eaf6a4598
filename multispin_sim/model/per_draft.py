"""Random rows handed out per device by draft number, for common random numbers across batchings.

A stream of rows (one row: one number or array per device, drawn in order, several rows at a
time) serves device k's n-th draft with row n's part of device k, whichever drafts are verified
together and in whatever order the devices come. In a synchronous run where every device drafts
every round that is row = round, the row the round-by-round draw gives.
"""
from collections import deque

import numpy as np


class DraftRows:
    """Each device's part of row n for its n-th draft, from ``draw(generator)``.

    ``draw(g)`` draws the next rows of the stream from the generator ``g`` and returns one array
    per device (K arrays, each of the same length m along axis 0); it is called on ``rng`` when a
    device needs a row not drawn yet. A device behind the others does not keep the rows it has
    not read: the generator's state before each block is kept instead (until every device has
    passed the block), and a device that reaches an old block draws it again from that state,
    the same numbers. So the memory held is one state per block between the slowest device and
    the fastest (a device that never drafts holds a few bytes per row), not the rows themselves.
    """

    def __init__(self, k, draw, rng):
        self.draw, self.rng = draw, rng
        self.count = np.zeros(k, dtype=np.int64)   # drafts served per device
        self.drawn = 0                              # rows drawn from the stream
        self._states = deque()                      # (first row, rows, state before) per block
        self._last = None                           # (first row, rows, parts) of the newest block
        self._held = [None] * k                     # per device: (first row, rows, its part)

    def next(self, i):
        """Device ``i``'s part of the row of its next draft (its draft counter moves on)."""
        n = int(self.count[i])
        held = self._held[i]
        if held is None or not held[0] <= n < held[0] + held[1]:
            held = self._held[i] = self._block_of(n, i)
        self.count[i] = n + 1
        if self._states:
            self._drop_passed()
        return held[2][n - held[0]]

    def _block_of(self, n, i):
        while n >= self.drawn:
            state = self.rng.bit_generator.state
            parts = self.draw(self.rng)
            m = len(parts[0])
            self._states.append((self.drawn, m, state))
            self._last = (self.drawn, m, parts)
            self.drawn += m
        first, m, parts = self._last
        if n >= first:
            return first, m, parts[i]
        for first, m, state in self._states:   # an old block, drawn again from its state
            if n < first + m:
                again = np.random.Generator(type(self.rng.bit_generator)())
                again.bit_generator.state = state
                return first, m, self.draw(again)[i]
        raise AssertionError("a block every device has passed was asked for")

    def _drop_passed(self):
        slowest = int(self.count.min())
        while self._states and self._states[0][0] + self._states[0][1] <= slowest:
            self._states.popleft()
