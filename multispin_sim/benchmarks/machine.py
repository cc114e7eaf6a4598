"""The machine a benchmark ran on, said before its figures: the same code ran 1.9x slower on one
2-core machine than on another of the same kind (docs/reference/benchmarks.md), so a figure
means little without the CPU, the SIMD extensions numpy dispatched to and whether the compiled
search ran."""
import platform

from ..experiments.executors import cpu_count
from ..outputs.metadata import numpy_simd, package_versions
from ..policies.draft_search import compiled_enabled


def cpu_model(path="/proc/cpuinfo"):
    """The CPU's model name with its family and model numbers, which tell generations apart
    where a virtual machine shows only "AMD EPYC" (Linux's /proc/cpuinfo; elsewhere what
    ``platform`` says)."""
    info = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for row in f:
                key, _, value = row.partition(":")
                if not key.strip():
                    break                     # the first CPU's block is enough
                info.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    name = info.get("model name") or platform.processor() or platform.machine() or "unknown"
    if info.get("cpu family") and info.get("model"):
        name += f" (family {info['cpu family']}, model {info['model']})"
    return name


def describe():
    """{cpu, cpus, numpy_simd, numpy, numba, compiled_search}, as ``bench --json`` gives it."""
    versions = package_versions()
    return {"cpu": cpu_model(), "cpus": cpu_count(), "numpy_simd": numpy_simd(),
            "numpy": versions.get("numpy"), "numba": versions.get("numba"),
            "compiled_search": compiled_enabled()}


def line(machine):
    """The one line ``bench`` prints first."""
    simd = " ".join(machine["numpy_simd"] or ["(numpy does not say)"])
    search = "compiled" if machine["compiled_search"] else "numpy only (no numba, or off)"
    return (f"machine: {machine['cpu']}, {machine['cpus']} CPUs; numpy {machine['numpy']} "
            f"(SIMD {simd}); numba {machine['numba'] or 'not installed'}; draft search {search}")
