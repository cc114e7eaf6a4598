"""The one switch of the compiled (numba) twins: ``MULTISPIN_NUMBA=0`` keeps every computation
in numpy (the draft search's kernels, the shared-band evaluator), as a missing numba does."""
import os


def numba_allowed():
    """False where ``MULTISPIN_NUMBA=0`` switches the compiled twins off."""
    return os.environ.get("MULTISPIN_NUMBA", "1") != "0"
