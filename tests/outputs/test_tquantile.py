"""The t quantiles the intervals use are scipy's."""
import pytest
from scipy import stats

from multispin_sim.outputs.tquantile import Q95, _table, t_quantile


def test_the_95_percent_table_is_scipys():
    table = _table()
    assert len(table) == 1000
    for df in range(1, 1001):
        assert t_quantile(Q95, df) == float(stats.t.ppf(Q95, df))


@pytest.mark.parametrize("q,df", [(0.9, 7), (Q95, 2.5), (Q95, 1001), (0.995, 3)])
def test_outside_the_table_scipy_answers(q, df):
    assert t_quantile(q, df) == pytest.approx(float(stats.t.ppf(q, df)), rel=1e-12)
