"""Teaching helpers: checks for the tutorial exercises (``checks``), the round narrator
(``narrator.explain``) and sliders with a static fallback (``widgets.explore``).

The tutorials live in ``tutorials/`` at the top of the repository
(``pip install -e '.[tutorials]'`` then ``jupyter lab tutorials/``).
"""
from .checks import *  # noqa: F401,F403
from .checks import EXERCISES, __all__ as _checks
from .narrator import explain
from .widgets import explore, static_mode

__all__ = list(_checks) + ["EXERCISES", "explain", "explore", "static_mode", "run"]


def run(overrides=None, **kwargs):
    """Run the default scenario with ``overrides`` ({"devices.count": 3, ...}); returns a Result."""
    import multispin_sim as ms

    return ms.simulate(ms.load_scenario(None, overrides=dict(overrides or {})), **kwargs)
