"""Regenerate the golden runs (ONLY when a change is meant to alter the paper's default outputs).

The golden files pin the outputs of a few scenarios as they were before the components
(acceptance models, link layer, compute/energy, payloads, protocols) were added: each
component's default must leave them value-for-value identical (tests/test_golden.py). The
token payload's corrections are pinned as each correction reads the context of the outcome it
decides (``CORRECTIONS``; tests/engine/test_tokens_protocols.py). Both are compared within the
equality contract (``compare.py``), not byte for byte.

    python tests/golden/make_golden.py            # every golden file
    python tests/golden/make_golden.py token      # only those named
"""
import gzip
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

import multispin_sim as ms  # noqa: E402

# name -> (scenario file, overrides); small enough to run in a few seconds each
GOLDEN = {
    "default": ("scenarios/default.yaml", {"run.rounds": 300, "seed": 7}),
    "greedy": ("scenarios/default.yaml", {"run.rounds": 40, "seed": 3, "policy.draft": "greedy",
                                          "policy.saa_samples": 200}),
    "budget": ("scenarios/default.yaml", {"run.rounds": 10, "seed": 5, "policy.draft": "budget",
                                          "policy.saa_samples": 200}),
    "light-load": ("scenarios/light-load.yaml", {"run.max_time_s": 300, "seed": 2}),
    "all-dl-indep": ("scenarios/default.yaml", {"run.rounds": 200, "seed": 9,
                                                "policy.mode": "all-dl",
                                                "channel.reciprocal": False}),
}
TABLES = ("rounds", "device_rounds", "devices", "requests")

# name -> overrides of the built-in defaults: token-payload runs whose corrections.csv is pinned
CORRECTIONS = {
    "token": {"payload.model": "token", "run.rounds": 200},
    "token-k4-dense": {"payload.model": "token", "run.rounds": 200, "devices.count": 4,
                       "payload.format": "dense"},
}


def write(name, scenario, tables):
    """Run ``scenario`` and keep its ``tables`` as ``<name>.<table>.csv.gz`` (those it wrote)."""
    with tempfile.TemporaryDirectory() as tmp:
        ms.simulate(scenario, out=Path(tmp) / "out")
        for table in tables:
            src = Path(tmp) / "out" / f"{table}.csv"
            if src.exists():
                with open(src, "rb") as f, open(HERE / f"{name}.{table}.csv.gz", "wb") as raw, \
                        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as g:
                    shutil.copyfileobj(f, g)
    print("wrote", name)


def main(names=()):
    unknown = set(names) - set(GOLDEN) - set(CORRECTIONS)
    if unknown:
        raise SystemExit(f"no golden run {', '.join(sorted(unknown))}; "
                         f"allowed: {', '.join([*GOLDEN, *CORRECTIONS])}")
    root = HERE.parent.parent
    for name, (path, overrides) in GOLDEN.items():
        if not names or name in names:
            write(name, ms.load_scenario(root / path, overrides=overrides), TABLES)
    for name, overrides in CORRECTIONS.items():
        if not names or name in names:
            write(name, ms.load_scenario(None, overrides=overrides), ("corrections",))


if __name__ == "__main__":
    main(sys.argv[1:])
