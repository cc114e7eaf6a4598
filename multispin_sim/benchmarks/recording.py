"""Cost of recording a round (``outputs.recorder.Recorder``): CPU us per round, CSVs formatted
in-process.

The rounds of a default run (K = 20, saturated, energy columns) are captured as the engine
hands them over (one ``RoundRecord`` each), then replayed into a fresh ``Recorder`` (copying
each round into the block buffers, the per-block statistics, energy and CSV columns, the CSV
text, the files) and, in turn, into a function that does nothing with the same record (the
call's own cost): interleaved, and the difference of the medians is the recording's cost per
round.
"""
import dataclasses
import itertools
import tempfile
import time
from pathlib import Path
from unittest import mock

import numpy as np

from ..scenario import load_scenario
from .abtest import records_in_process


def _capture(rounds, folder):
    """The record of every ``Recorder.round`` call of a default run (arrays copied), and the
    recorder's construction arguments."""
    from ..engine import simulation
    from ..outputs import recorder as module

    calls, made = [], {}
    original_round, original_init = module.Recorder.round, module.Recorder.__init__

    def init(self, folder, k, chunk_rounds=1024, **kwargs):
        made.update(k=k, chunk_rounds=chunk_rounds, kwargs=kwargs)
        original_init(self, folder, k, chunk_rounds, **kwargs)

    def capture(self, record):
        calls.append(dataclasses.replace(record, **{
            f.name: getattr(record, f.name).copy() for f in dataclasses.fields(record)
            if isinstance(getattr(record, f.name), np.ndarray)}))
        original_round(self, record)

    with mock.patch.object(module.Recorder, "__init__", init), \
            mock.patch.object(module.Recorder, "round", capture), records_in_process():
        simulation.simulate(load_scenario(None, overrides={"run.rounds": rounds,
                                                           "name": "bench"}), out=folder)
    return calls, made


def run(quick=False):
    from ..outputs.energy import EnergyAccount
    from ..outputs.recorder import Recorder

    rounds = 2_000 if quick else 10_000
    repeats = 3 if quick else 7
    with tempfile.TemporaryDirectory() as tmp:
        calls, made = _capture(rounds, Path(tmp) / "run")
        count = itertools.count()

        def record():
            kwargs = dict(made["kwargs"])
            energy = kwargs.get("energy")
            if energy is not None:  # fresh totals
                kwargs["energy"] = EnergyAccount(energy.powers, energy.k, energy.thermal)
            folder = Path(tmp) / f"replay{next(count)}"
            folder.mkdir()
            recorder = Recorder(folder, made["k"], made["chunk_rounds"], **kwargs)
            t = time.process_time()
            for call in calls:
                recorder.round(call)
            recorder.close()
            return time.process_time() - t

        def nothing(_):
            pass

        def call_only():
            t = time.process_time()
            for call in calls:
                nothing(call)
            return time.process_time() - t

        record()  # warm
        times = [(record(), call_only()) for _ in range(repeats)]
    rec = float(np.median([a for a, _ in times])) / len(calls) * 1e6
    call = float(np.median([b for _, b in times])) / len(calls) * 1e6
    print(f"recording: default scenario K={made['k']}, {len(calls):,} rounds replayed "
          f"{repeats} times (CSV formatted in-process, energy columns): {rec - call:.1f} us/round "
          f"CPU (median; the call itself, {call:.1f} us, taken out)")
    return {"rounds": len(calls), "us_per_round": rec - call, "call_us": call}
