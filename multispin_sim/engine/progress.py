"""The progress line of a run on stderr (rounds done, rounds/s, time left)."""
import sys
import time


class Progress:
    """Rounds done, rounds/s and time left on stderr, at most twice a second.

    With a simulated-time limit (``max_time_s``) the time left is estimated from whichever limit
    is nearer (queueing runs usually stop on time, not on a round count).
    """

    def __init__(self, total, stream=sys.stderr, max_time_s=None):
        self.total = total
        self.stream = stream
        self.max_time_s = max_time_s
        self.t0 = time.perf_counter()
        self.last = 0.0

    @classmethod
    def for_run(cls, scenario, progress):
        """The display of ``scenario``'s rounds when ``progress`` is asked for and stderr is a
        terminal (a line redrawn in place would litter a file), else None."""
        if progress and sys.stderr.isatty():
            return cls(scenario.run.rounds, max_time_s=scenario.run.max_time_s)
        return None

    def __call__(self, done, now):
        if done & 63 and done != self.total:
            return
        t = time.perf_counter()
        if t - self.last < 0.5 and done != self.total:
            return
        self.last = t
        elapsed = max(t - self.t0, 1e-9)
        rate = done / elapsed
        frac = done / self.total
        if self.max_time_s:
            frac = max(frac, min(now / self.max_time_s, 1.0))
        left = elapsed * (1 - frac) / frac if frac > 0 else float("inf")
        self.stream.write(f"\rround {done}/{self.total}  {rate:,.0f} rounds/s  {left:,.0f} s left ")
        if done == self.total:
            self.stream.write("\n")
        self.stream.flush()
