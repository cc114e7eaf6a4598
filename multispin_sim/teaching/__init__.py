"""Teaching helpers: checks for the tutorial exercises (``checks``), the round narrator
(``narrator.explain``) and sliders with a static fallback (``widgets.explore``).

The tutorials live in ``tutorials/`` at the top of the repository
(``pip install -e '.[tutorials]'`` then ``jupyter lab tutorials/``).
"""
from .checks import (EXERCISES, check_best_split, check_best_uniform_gamma, check_dl_delay,
                     check_expected_tokens, check_full_acceptance, check_goodput,
                     check_goodput_and_return, check_mean_sojourn, check_median_delay,
                     check_pk_wait, check_power_correlation, check_round_time,
                     check_threshold_policy, check_ul_delay)
from .narrator import explain
from .widgets import explore, static_mode

__all__ = ["EXERCISES", "check_best_split", "check_best_uniform_gamma", "check_dl_delay",
           "check_expected_tokens", "check_full_acceptance", "check_goodput",
           "check_goodput_and_return", "check_mean_sojourn",
           "check_median_delay", "check_pk_wait", "check_power_correlation", "check_round_time",
           "check_threshold_policy", "check_ul_delay", "explain", "explore", "static_mode", "run"]


def run(overrides=None, **kwargs):
    """Run the default scenario with ``overrides`` ({"devices.count": 3, ...}); returns a Result
    (``kwargs``: those of ``engine.simulation.simulate``)."""
    from ..engine.simulation import simulate
    from ..scenario import load_scenario

    return simulate(load_scenario(None, overrides=dict(overrides or {})), **kwargs)
