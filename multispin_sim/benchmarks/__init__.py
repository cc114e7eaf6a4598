"""Benchmarks: speed and memory figures printed by ``multispin-sim bench [what]``.

Each module ``<what>.py`` has ``run(quick=False) -> dict`` that prints its figures and returns them.
"""
import importlib

# names only up here: the CLI builds its help from them without importing numpy
BENCHMARKS = ("startup", "reactive", "engine", "recording", "draft", "fastpaths", "dynamics",
              "payload", "serving", "acceptance", "link", "gym", "cells", "antennas", "paper")
IN_ALL = BENCHMARKS[:-1]   # 'paper' (the paper's figure sweeps, about 15 min) only by name
# rough minutes on the 2-core reference machine when idle (full, --quick): said up front
DURATION_MIN = {"startup": (0.1, 0.1), "reactive": (0.2, 0.1), "engine": (4, 0.3),
                "recording": (0.5, 0.1), "draft": (6, 0.5), "fastpaths": (5, 0.4),
                "dynamics": (3, 0.5), "payload": (0.4, 0.1), "serving": (0.1, 0.1),
                "acceptance": (0.3, 0.1), "link": (0.6, 0.1), "gym": (1, 0.3), "cells": (2, 0.5),
                "antennas": (4, 1), "paper": (15, 0.5)}


def _minutes(m):
    return "under a minute" if m < 1 else f"about {m:.0f} min"


def run(what="all", quick=False):
    """Run benchmark ``what`` ('all': each of IN_ALL in turn), printing the machine
    (``machine.describe``) and then its figures; returns {"machine": ..., name: its figures}."""
    from . import machine
    from .abtest import stop_if_signalled

    names = IN_ALL if what == "all" else (what,)
    known = [n for n in names if n in DURATION_MIN]
    if known:
        full = sum(DURATION_MIN[n][0] for n in known)
        fast = sum(DURATION_MIN[n][1] for n in known)
        about = (f"{_minutes(fast)} on an idle 2-core machine (--quick)" if quick
                 else f"{_minutes(full)} on an idle 2-core machine (--quick: {_minutes(fast)})")
        print(f"bench {what}: {about}"
              + "; ratios are medians of interleaved A/B pairs, CPU time beside wall time")
    figures = {"machine": machine.describe()}
    print(machine.line(figures["machine"]))
    for name in names:
        if name not in BENCHMARKS:
            raise SystemExit(f"error: unknown benchmark {name!r}; allowed: all, {', '.join(BENCHMARKS)}")
        module = importlib.import_module(f"{__name__}.{name}")
        stop_if_signalled()
        print(f"[{name}]")
        figures[name] = module.run(quick=quick)
    return figures
