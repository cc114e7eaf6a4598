"""Fixtures shared by tests in several folders."""
import subprocess
import sys

import pytest


def _modules_after(code):
    """The names in ``sys.modules`` of a fresh interpreter once it has run ``code``."""
    code += "\nimport sys\nprint('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return out.stdout.split()


@pytest.fixture
def modules_after():
    """``modules_after(code)``: what a fresh interpreter has imported after running ``code``."""
    return _modules_after
