"""Benchmarks: speed and memory figures printed by ``multispin-sim bench [what]``.

Each module ``<what>.py`` has ``run(quick=False) -> dict`` that prints its figures and returns them.
"""
import importlib

BENCHMARKS = ("startup", "reactive", "engine", "recording", "draft", "dynamics", "payload",
              "serving", "acceptance", "link")
# rough minutes on the 2-core reference machine when idle (full, --quick): said up front
DURATION_MIN = {"startup": (0.1, 0.1), "reactive": (0.2, 0.1), "engine": (4, 0.3),
                "recording": (0.5, 0.1),
                "draft": (6, 0.5), "dynamics": (3, 0.5)}


def run(what="all", quick=False):
    names = BENCHMARKS if what == "all" else (what,)
    known = [n for n in names if n in DURATION_MIN]
    if known:
        full = sum(DURATION_MIN[n][0] for n in known)
        fast = sum(DURATION_MIN[n][1] for n in known)
        print(f"bench {what}: about {full:.0f} min on an idle 2-core machine"
              + (f" (--quick: about {max(fast, 0.5):.0f} min)" if not quick else " (--quick)")
              + "; ratios are medians of interleaved A/B pairs, CPU time beside wall time")
    figures = {}
    for name in names:
        if name not in BENCHMARKS:
            raise SystemExit(f"error: unknown benchmark {name!r}; allowed: all, {', '.join(BENCHMARKS)}")
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError:
            print(f"[{name}] not available yet")
            continue
        print(f"[{name}]")
        figures[name] = module.run(quick=quick)
    return figures
