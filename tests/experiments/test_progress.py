"""The sweep's progress report: the bar on a terminal, a line every few seconds elsewhere.

The figures are worked out by hand: runs done over runs, cells whose replications are all done,
and the time left as the mean time of the runs made so far times the runs still to make.
"""
import io
import types

from multispin_sim.experiments import runner


class _Stream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


def _report(monkeypatch, tty):
    clock = [100.0]
    monkeypatch.setattr(runner.time, "perf_counter", lambda: clock[0])
    stream = _Stream(tty)
    sweep = types.SimpleNamespace(cells=[0, 1, 2], n_runs=6, replications=2)
    progress = runner.SweepProgress(sweep, stream=stream)
    progress.start([(0, 0)], 5)        # one run of cell 0 done earlier, 5 to make
    for cell, ok in [(0, True), (1, False), (1, True), (2, True), (2, True)]:
        clock[0] += 3.0                 # each run takes 3 s
        progress.update(cell, ok)
    return stream.getvalue()


def test_lines_off_a_terminal_every_period(monkeypatch):
    monkeypatch.setattr(runner.SweepProgress, "LINE_PERIOD_S", 5.0)
    assert _report(monkeypatch, tty=False).splitlines() == [
        "sweep: cells 0/3, runs 1/6, 0 s",
        # 2 new runs in 6 s, 3 to go: 9 s left (the line at 3 s falls within the period)
        "sweep: cells 1/3, runs 3/6, 1 failed, 6 s, ~9 s left",
        "sweep: cells 2/3, runs 5/6, 1 failed, 12 s, ~3 s left",
        "sweep: cells 3/3, runs 6/6, 1 failed, 15 s",   # the last always, without an estimate
    ]


def test_bar_on_a_terminal(monkeypatch):
    frames = _report(monkeypatch, tty=True).split("\r")[1:]
    assert len(frames) == 6 and frames[-1].endswith("\n")
    assert frames[0] == "[..............................] cells 0/3  runs 1/6  0 s "
    assert frames[2] == ("[##########....................] cells 1/3  runs 3/6, 1 failed  6 s, "
                         "~9 s left ")
    assert frames[-1] == "[##############################] cells 3/3  runs 6/6, 1 failed  15 s \n"
