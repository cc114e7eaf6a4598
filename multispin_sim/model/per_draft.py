"""Random rows handed out per device by draft number, for common random numbers across batchings.

A stream of rows (one row: one number or array per device, drawn in order, several rows at a
time) serves device k's n-th draft with row n's part of device k, whichever drafts are verified
together and in whatever order the devices come. In a synchronous run where every device drafts
every round that is row = round, the row the round-by-round draw gives.
"""
from collections import deque

import numpy as np


class DraftRows:
    """Each device's part of row n for its n-th draft, from ``draw()``.

    ``draw()`` returns the next rows of the stream as one array per device (K arrays, each of
    the same length m along axis 0: rows drawn .. drawn + m - 1); it is called when a device
    needs a row not drawn yet. Each device keeps only its own parts of the rows it has not read
    yet, so the memory held is that of the devices' lags behind the device with the most drafts
    (none when every device drafts as often as the others).
    """

    def __init__(self, k, draw):
        self.draw = draw
        self.count = np.zeros(k, dtype=np.int64)   # drafts served per device
        self.drawn = 0                              # rows drawn from the stream
        self._parts = [deque() for _ in range(k)]   # per device: (first row, its part), in order

    def next(self, i):
        """Device ``i``'s part of the row of its next draft (its draft counter moves on)."""
        n = int(self.count[i])
        while n >= self.drawn:
            parts = self.draw()
            first = self.drawn
            for queue, part in zip(self._parts, parts):
                queue.append((first, part))
            self.drawn += len(parts[0])
        queue = self._parts[i]
        while n >= queue[0][0] + len(queue[0][1]):
            queue.popleft()
        first, part = queue[0]
        self.count[i] = n + 1
        return part[n - first]
