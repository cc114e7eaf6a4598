"""Teaching helpers: checks for the tutorial exercises (``checks``; tutorial 9's in
``cell_checks``), the round narrator (``narrator.explain``) and sliders with a static fallback
(``widgets.explore``).

The tutorials live in ``tutorials/`` at the top of the repository
(``pip install -e '.[tutorials]'`` then ``jupyter lab tutorials/``).
"""
from . import cell_checks, checks
from .cell_checks import *  # noqa: F401,F403 -- tutorial 9's checks (cell_checks.__all__)
from .checks import *  # noqa: F401,F403 -- every other exercise check, as in checks.__all__
from .narrator import explain
from .widgets import explore, static_mode

__all__ = [*checks.__all__, *cell_checks.__all__, "explain", "explore", "static_mode", "run"]


def run(overrides=None, **kwargs):
    """Run the default scenario with ``overrides`` ({"devices.count": 3, ...}); returns a Result
    (``kwargs``: those of ``engine.simulation.simulate``)."""
    from ..engine.simulation import simulate
    from ..scenario import load_scenario

    return simulate(load_scenario(None, overrides=dict(overrides or {})), **kwargs)
