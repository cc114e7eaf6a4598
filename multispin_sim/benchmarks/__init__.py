"""Benchmarks: speed and memory figures printed by ``multispin-sim bench [what]``.

Each module ``<what>.py`` has ``run(quick=False) -> dict`` that prints its figures and returns them.
"""
import importlib

BENCHMARKS = ("reactive", "engine", "draft", "dynamics", "payload", "serving", "acceptance",
              "link")


def run(what="all", quick=False):
    names = BENCHMARKS if what == "all" else (what,)
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
