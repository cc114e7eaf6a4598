"""The round timeline (for teaching): a Gantt chart of a few rounds of one run.

Reads only a run folder: ``rounds.csv`` (start, drafting, verification and communication
times of each round), ``device_rounds.csv`` (each device's draft length, mode and transmission
delay) and ``devices.csv`` (each device's per-token drafting latency). One lane per device:

- drafting: gamma_k t_k from the round start;
- waiting: for the slowest draft and the server's verification, then for the slowest
  correction (the round ends when the last correction is delivered);
- UL transmission (the device uploads its draft distribution) or DL transmission (the server
  sends the target distribution), coloured by mode;

and one lane for the server: the batched verification. Segments are also written as CSV.
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from ..outputs.atomic import replacing
from ..outputs.checked import read_csv, read_json
from ..outputs.records import read_header, read_table
from .figures import PlotError, _require_matplotlib, save_figure, shown

COLOURS = {
    "drafting": "#4C72B0",
    "waiting": "#D9D9D9",
    "ul": "#DD8452",
    "dl": "#55A868",
    "verification": "#8172B3",
}
# A Gantt chart of more rounds is unreadable, and drawing one bar per device per round takes
# minutes for thousands of rounds: ``plot --timeline`` refuses more.
MAX_TIMELINE_ROUNDS = 50

LABELS = {
    "drafting": "drafting",
    "waiting": "waiting",
    "ul": "UL transmission (draft distribution up)",
    "dl": "DL transmission (target distribution down)",
    "verification": "batched verification",
}


ROUND_COLUMNS = ("round", "start_s", "draft_s", "verify_s", "duration_s")
DEVICE_COLUMNS = ("round", "device", "draft_len", "mode", "delay_s")


def cell_folders(run_dir):
    """The cell folders of a run of several cells (``cell_<c>``, those with devices), by c."""
    found = [p for p in Path(run_dir).glob("cell_*") if p.is_dir() and p.name[5:].isdigit()]
    return sorted(found, key=lambda p: int(p.name[5:]))


def timeline_segments(run_dir, rounds=3, first=0):
    """[(lane, round, kind, start_s, end_s)] of rounds ``first .. first + rounds - 1``."""
    run_dir = Path(run_dir)
    for name in ("rounds", "device_rounds", "devices"):
        path = run_dir / f"{name}.csv"
        if not path.is_file():
            raise PlotError(f"{path}: not found; expected a run folder of 'multispin-sim run' "
                            "(or a runs/... folder of a sweep)")
    rt = read_csv(run_dir / "rounds.csv", ROUND_COLUMNS, ROUND_COLUMNS, ("cell",))
    if "cell" in rt:   # several cells' merged tables
        cells = cell_folders(run_dir)
        raise PlotError(f"{run_dir}: a run of several cells has one timeline per cell; draw one, "
                        f"e.g. plot --timeline {cells[0] if cells else run_dir / 'cell_0'}")
    summary = run_dir / "summary.json"
    summary = read_json(summary) if summary.is_file() else {}
    if isinstance(summary.get("asynchronous"), dict):
        raise PlotError(f"{run_dir}: an asynchronous run has batches, not rounds: the timeline "
                        "draws synchronous rounds only")
    dev = read_csv(run_dir / "devices.csv", ("device", "draft_latency_s"), ("draft_latency_s",))
    if len(rt["round"]) == 0:
        stopped = summary.get("stop_reason")
        raise PlotError(f"{run_dir}: the run has no rounds"
                        + (f" (it stopped before its first round ended: {stopped})"
                           if stopped else ""))
    # the device rows (K a round, millions in a long run): those up to the last round drawn,
    # the columns the chart draws; a damaged row among them: the whole file checked says where
    path = run_dir / "device_rounds.csv"
    try:
        dr = read_table(path, DEVICE_COLUMNS, _rows_through(path, first + rounds - 1))
    except KeyError as exc:   # a column missing: not the file 'run' writes
        raise PlotError(f"{exc.args[0]}; expected the device_rounds.csv of 'multispin-sim "
                        "run': rerun the command that wrote it") from None
    except ValueError:
        dr = read_csv(path, DEVICE_COLUMNS, columns=DEVICE_COLUMNS)
    t_draft = dict(zip(dev["device"].tolist(), dev["draft_latency_s"].tolist()))
    wanted = [r for r in rt["round"].tolist() if first <= r < first + rounds]
    if not wanted:
        raise PlotError(f"{run_dir}: no round in {first}..{first + rounds - 1} "
                        f"(the run has rounds {rt['round'][0]}..{rt['round'][-1]})")
    by_round = {r: i for i, r in enumerate(rt["round"].tolist())}
    modes = dr["mode"].astype(str)
    segs = []
    for r in wanted:
        i = by_round[r]
        start = float(rt["start_s"][i])
        drafts_done = start + float(rt["draft_s"][i])
        ver_end = drafts_done + float(rt["verify_s"][i])
        end = start + float(rt["duration_s"][i])
        segs.append(("server", r, "verification", drafts_done, ver_end))
        for j in np.flatnonzero(dr["round"] == r):
            k = int(dr["device"][j])
            lane = f"device {k}"
            draft_end = start + int(dr["draft_len"][j]) * t_draft[k]
            if draft_end > start:
                segs.append((lane, r, "drafting", start, draft_end))
            if ver_end > draft_end:
                segs.append((lane, r, "waiting", draft_end, ver_end))
            tx_end = ver_end
            mode = modes[j].strip().lower()
            if mode in ("ul", "dl"):
                tx_end = ver_end + float(dr["delay_s"][j])
                segs.append((lane, r, mode, ver_end, tx_end))
            if end > tx_end:
                segs.append((lane, r, "waiting", tx_end, end))
    return segs


def _rows_through(path, last_round):
    """How many rows of a table in round order (``device_rounds.csv``) come before the first
    row of a round after ``last_round``."""
    col = read_header(path).index("round")
    with open(path, "rb") as f:
        f.readline()
        n = 0
        for line in f:
            try:
                if int(line.split(b",", col + 1)[col]) > last_round:
                    break
            except (ValueError, IndexError):   # a damaged row: the reader says where
                return None
            n += 1
    return n


def plot_timeline(run_dir, rounds=3, first=0, out=None):
    """Draw the Gantt chart; ``out``: PNG path (default ``run_dir/timeline.png``; the CSV of
    the segments is written beside it). Returns (png, csv) paths."""
    if not 1 <= rounds <= MAX_TIMELINE_ROUNDS:
        raise PlotError(f"--rounds {rounds}: expected an integer from 1 to {MAX_TIMELINE_ROUNDS}")
    Figure = _require_matplotlib()
    from matplotlib.patches import Patch

    segs = timeline_segments(run_dir, rounds, first)
    devices = sorted({int(s[0].split()[1]) for s in segs if s[0].startswith("device")})
    lanes = [f"device {k}" for k in devices] + ["server"]
    ypos = {lane: len(lanes) - 1 - i for i, lane in enumerate(lanes)}
    fig = Figure(figsize=(11, 0.45 * len(lanes) + 1.8), layout="constrained")
    ax = fig.subplots()
    t0 = min(s[3] for s in segs)
    ms = 1e3
    for lane, _, kind, a, b in segs:
        ax.broken_barh([((a - t0) * ms, (b - a) * ms)], (ypos[lane] - 0.38, 0.76),
                       facecolors=COLOURS[kind], edgecolor="white", linewidth=0.4)
    round_starts = {}
    for _, r, _, a, _ in segs:
        round_starts[r] = min(round_starts.get(r, a), a)
    for r, a in sorted(round_starts.items()):
        x = (a - t0) * ms
        ax.axvline(x, color="black", linestyle="--", linewidth=0.8)
        ax.text(x, len(lanes) - 0.45, f" round {r}", va="bottom", fontsize=8)
    ax.set_yticks([ypos[l] for l in lanes], lanes)
    ax.set_ylim(-0.6, len(lanes) - 0.1)
    ax.set_xlabel("time since the first round shown (ms)")
    ax.set_title(f"{shown(Path(run_dir).name)}: rounds {min(round_starts)}..{max(round_starts)}",
                 fontsize=10)
    kinds = [k for k in COLOURS if any(s[2] == k for s in segs)]
    ax.legend(handles=[Patch(facecolor=COLOURS[k], label=LABELS[k]) for k in kinds],
              loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=min(len(kinds), 3), fontsize=8)
    ax.grid(True, axis="x", alpha=0.3)
    png = Path(out) if out else Path(run_dir) / "timeline.png"
    png.parent.mkdir(parents=True, exist_ok=True)
    with replacing(png) as tmp:
        save_figure(fig, tmp, dpi=120)
    csv_path = png.with_suffix(".csv")
    with replacing(csv_path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["lane", "round", "kind", "start_s", "end_s"])
        for lane, r, kind, a, b in segs:
            w.writerow([lane, r, kind, repr(a), repr(b)])
    return png, csv_path
