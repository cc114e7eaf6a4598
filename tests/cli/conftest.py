"""The fault tests here share the helpers of tests/cli/test_faults.py (the CLI in subprocesses)
and the M/D/1 scenario of tests/engine/test_asynchronous.py."""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "engine")]
