"""The capacity tests here share the helpers of tests/cli/test_faults.py (the CLI in subprocesses)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
