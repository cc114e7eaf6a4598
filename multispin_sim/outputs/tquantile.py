"""Student t quantiles, ``t_quantile(q, df) = scipy.special.stdtrit(df, q)``.

Importing scipy.special costs about 0.17 s of CPU (a 10-round run: 0.56 s -> 0.73 s), so the
95% quantiles that every run and sweep table asks for (df = 1..1000) are read from a file that
scipy wrote (``data/t_quantiles_95.txt``, checked against scipy by the tests); anything else
asks scipy.
"""
from functools import lru_cache
from importlib import resources

Q95 = 0.5 + 0.95 / 2


@lru_cache(maxsize=1)
def _table():
    text = resources.files("multispin_sim").joinpath("data/t_quantiles_95.txt").read_text()
    return tuple(float(line) for line in text.splitlines() if line and not line.startswith("#"))


def t_quantile(q, df):
    """The q quantile of Student's t with df degrees of freedom (a Python float)."""
    if q == Q95 and float(df).is_integer() and 1 <= df <= 1000:
        return _table()[int(df) - 1]
    from scipy.special import stdtrit

    return float(stdtrit(df, q))
