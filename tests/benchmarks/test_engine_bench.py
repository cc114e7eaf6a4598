"""``bench engine``'s peak memory (``benchmarks/engine.py``): the peak of the run it starts, not
of the process that starts it."""
import sys

import pytest

from multispin_sim.benchmarks.engine import peak_memory_mb


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmHWM is Linux's")
def test_the_peak_memory_is_the_runs_own_not_its_parents():
    """Linux keeps ru_maxrss across execve: started from a process holding 400 MB, a child
    that reads ru_maxrss reports 400 MB whatever it used. A 200-round default run in a fresh
    interpreter holds well under that (numpy, SimPy and scipy imported: about 60-80 MB)."""
    ballast = bytearray(400 * 2**20)
    ballast[::4096] = b"x" * len(ballast[::4096])   # every page resident
    peak, rate, _ = peak_memory_mb(200)
    assert len(ballast) and 20 < peak < 250 and rate > 0
