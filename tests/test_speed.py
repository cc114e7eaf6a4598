"""Speed work that must not change values: the t quantile table, lazy imports, and the
draft controllers' fast paths against their reference implementations."""
import subprocess
import sys

import numpy as np
import pytest

from multispin_sim.outputs.tquantile import Q95, _T95, t_quantile


def test_t_quantile_table_is_scipys_values():
    from scipy import stats

    for df in range(1, len(_T95) + 1):
        assert t_quantile(Q95, df) == float(stats.t.ppf(Q95, df))
    # outside the table: scipy itself
    assert t_quantile(0.9, 7) == float(stats.t.ppf(0.9, 7))
    assert t_quantile(Q95, 2.5) == float(stats.t.ppf(Q95, 2.5))


def test_short_run_imports_no_heavy_scipy():
    code = (
        "import sys, tempfile\n"
        "import multispin_sim as ms\n"
        "from multispin_sim import cli\n"
        "sc = ms.load_scenario('scenarios/default.yaml', overrides={'run.rounds': 10})\n"
        "with tempfile.TemporaryDirectory() as tmp:\n"
        "    ms.simulate(sc, out=tmp + '/run')\n"
        "heavy = [m for m in ('scipy.stats', 'scipy.optimize', 'scipy.special', 'scipy.signal',\n"
        "                     'matplotlib', 'dask') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, cwd=root).stdout.strip()
    assert out == "[]"
