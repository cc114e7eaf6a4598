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


@pytest.fixture
def capacity_folder(tmp_path):
    """The output folder of a small capacity search (one device, 0.1 s TTFT, two runs a rate)."""
    from multispin_sim.experiments.capacity import CapacitySearch, write_capacity

    sc = {"devices": {"count": 1, "overrides": {0: {"alpha": 1.0, "draft_latency_ms": 5.0}}},
          "channel": {"fading": "none"}, "serving": {"protocol": "asynchronous"},
          "workload": {"arrivals": "poisson", "rate_per_s": 5.0, "length_tokens": 5}}
    search = CapacitySearch(sc, 0.1, None, 0.9, duration_s=20, reps_min=2, reps_max=2,
                            rel_tol=0.3)
    search.run()
    folder = tmp_path / "cap"
    write_capacity(folder, search)
    return folder


@pytest.fixture(scope="session")
def swept(tmp_path_factory):
    """``swept(doc, name)``: the output folder of the sweep ``doc`` (a sweep file's mapping),
    run serially."""
    from multispin_sim.experiments import load_sweep, run_sweep

    def run(doc, name):
        out = tmp_path_factory.mktemp(name) / "out"
        run_sweep(load_sweep(doc), out, executor="serial")
        return out
    return run
