"""The round timeline (for teaching): a Gantt chart of a few rounds of one run.

Reads only a run folder: ``rounds.csv`` (start, drafting, verification and communication
times of each round), ``device_rounds.csv`` (each device's draft length, mode and transmission
delay) and ``devices.csv`` (each device's per-token drafting latency). One lane per device:

- drafting: gamma_k t_k (times the ``slowdown`` of a throttled device) from the round start;
- waiting: for the slowest draft and the server's verification, then for the slowest
  correction (the round ends when the last correction is delivered);
- UL transmission (the device uploads its draft distribution) or DL transmission (the server
  sends the target distribution), coloured by mode; a correction a ``deadline`` policy carried
  over from the last round is sent from the round start, while the others draft;

and one lane for the server: the batched verification. Segments are also written as CSV
beside the image (``output.sidecar_csv``).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..outputs.checked import RERUN, read_csv, read_json
from ..outputs.records import read_header, read_table
from .figures import _require_matplotlib, shown
from .output import PlotError, check_image, check_out_folder, save_image, sidecar_csv, write_csv

# kind of segment -> (colour, legend label), in the legend's order
KINDS = {"drafting": ("#4C72B0", "drafting"), "waiting": ("#D9D9D9", "waiting"),
         "ul": ("#DD8452", "UL transmission (draft distribution up)"),
         "dl": ("#55A868", "DL transmission (target distribution down)"),
         "verification": ("#8172B3", "batched verification")}
# A Gantt chart of more rounds is unreadable, and drawing one bar per device per round takes
# minutes for thousands of rounds: ``plot --timeline`` refuses more.
MAX_TIMELINE_ROUNDS = 50

ROUND_COLUMNS = ("round", "start_s", "draft_s", "verify_s", "duration_s", "batch_size")
DEVICE_COLUMNS = ("round", "device", "draft_len", "mode", "delay_s")
# drawn when the run has them: throttled drafting, and the corrections a deadline carried over
OPTIONAL_DEVICE_COLUMNS = ("slowdown", "rejected")
SEGMENT_COLUMNS = ("lane", "round", "kind", "start_s", "end_s")


def cell_folders(run_dir):
    """The cell folders of a run of several cells (``cell_<c>``, those with devices), by c."""
    found = [p for p in Path(run_dir).glob("cell_*") if p.is_dir() and p.name[5:].isdigit()]
    return sorted(found, key=lambda p: int(p.name[5:]))


def first_cell(run_dir):
    """The folder of the first cell of a run of several cells, to name in a message."""
    cells = cell_folders(run_dir)
    return cells[0] if cells else Path(run_dir) / "cell_0"


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
        raise PlotError(f"{run_dir}: a run of several cells has one timeline per cell; draw one, "
                        f"e.g. plot --timeline {first_cell(run_dir)}")
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
    columns = DEVICE_COLUMNS + tuple(c for c in OPTIONAL_DEVICE_COLUMNS if c in read_header(path))
    through, dr = _rows_through(path, first + rounds - 1), None
    try:
        dr = None if through is None else read_table(path, columns, through)
    except KeyError as exc:   # a column missing: not the file 'run' writes
        raise PlotError(f"{exc.args[0]}; expected the device_rounds.csv of 'multispin-sim "
                        "run': rerun the command that wrote it") from None
    except ValueError:
        pass
    if dr is None:
        dr = read_csv(path, DEVICE_COLUMNS, columns=columns)
    t_draft = dict(zip(dev["device"].tolist(), dev["draft_latency_s"].tolist()))
    wanted = [r for r in rt["round"].tolist() if first <= r < first + rounds]
    if not wanted:
        raise PlotError(f"{run_dir}: no round in {first}..{first + rounds - 1} "
                        f"(the run has rounds {rt['round'][0]}..{rt['round'][-1]})")
    by_round = {r: i for i, r in enumerate(rt["round"].tolist())}
    held = np.bincount(dr["round"].astype(np.int64), minlength=max(wanted) + 1)
    for r in wanted:   # a round has a row per device of its batch (and per carried correction)
        if held[r] < rt["batch_size"][by_round[r]]:
            raise PlotError(f"{path}: {held[r]} rows of round {r}, whose batch in rounds.csv has "
                            f"{int(rt['batch_size'][by_round[r]])} devices: the file was cut "
                            f"short; {RERUN}")
    segs = []
    for r in wanted:
        i = by_round[r]
        segs.extend(_round_segments(r, float(rt["start_s"][i]), float(rt["draft_s"][i]),
                                    float(rt["verify_s"][i]), float(rt["duration_s"][i]),
                                    dr, np.flatnonzero(dr["round"] == r), t_draft))
    return segs


def _round_segments(r, start, draft_s, verify_s, duration_s, dr, rows, t_draft):
    """The segments of round ``r``: ``rows`` its rows of device_rounds.csv.
    A device drafts gamma_k t_k times its ``slowdown`` (thermal throttling). A correction
    deferred by ``policy.mode: deadline`` is carried into this round (a row with ``rejected`` 0
    and a mode): it is sent from the round start while the others draft, and the round's own
    corrections start only once every carried one has ended (docs/components/csi.md)."""
    drafts_done = start + draft_s
    ver_end = drafts_done + verify_s
    end = start + duration_s
    modes = [str(m).strip().lower() for m in dr["mode"][rows]]
    carried = [m in ("ul", "dl") and "rejected" in dr and int(dr["rejected"][j]) == 0
               for j, m in zip(rows, modes)]
    carry_end = max((start + float(dr["delay_s"][j]) for j, c in zip(rows, carried) if c),
                    default=start)
    tx_start = max(ver_end, carry_end)
    segs = [("server", r, "verification", drafts_done, ver_end)]
    for j, mode, carry in zip(rows, modes, carried):
        lane = f"device {int(dr['device'][j])}"
        if carry:
            tx_end = start + float(dr["delay_s"][j])
            segs.append((lane, r, mode, start, tx_end))
        else:
            slow = float(dr["slowdown"][j]) if "slowdown" in dr else 1.0
            draft_end = start + int(dr["draft_len"][j]) * t_draft[int(dr["device"][j])] * slow
            if draft_end > start:
                segs.append((lane, r, "drafting", start, draft_end))
            tx_end = draft_end
            if mode in ("ul", "dl"):
                if tx_start > draft_end:
                    segs.append((lane, r, "waiting", draft_end, tx_start))
                tx_end = tx_start + float(dr["delay_s"][j])
                segs.append((lane, r, mode, tx_start, tx_end))
        if end > tx_end:
            segs.append((lane, r, "waiting", tx_end, end))
    return segs


def _rows_through(path, last_round):
    """How many rows of a table in round order (``device_rounds.csv``) come before the first
    row of a round after ``last_round``; None if a row among them is damaged or cut."""
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
            if not line.endswith(b"\n"):      # cut mid-row: likewise
                return None
            n += 1
    return n


def plot_timeline(run_dir, rounds=3, first=0, out=None):
    """Draw the Gantt chart; ``out``: the image, .png, .svg or .pdf (default
    ``run_dir/timeline.png``); the segments are written beside it as ``<stem>.csv``. Returns
    (image, csv) paths. The inputs and the place are checked before anything is written."""
    if not 1 <= rounds <= MAX_TIMELINE_ROUNDS:
        raise PlotError(f"--rounds {rounds}: expected an integer from 1 to {MAX_TIMELINE_ROUNDS}")
    png = check_image(out or Path(run_dir) / "timeline.png", "--out",
                      "give the image file to write, e.g. timeline.png")
    Figure = _require_matplotlib()
    from matplotlib.patches import Patch

    segs = timeline_segments(run_dir, rounds, first)
    check_out_folder(png.parent)
    csv_path = sidecar_csv(png, SEGMENT_COLUMNS)
    devices = sorted({int(s[0].split()[1]) for s in segs if s[0].startswith("device")})
    lanes = [f"device {k}" for k in devices] + ["server"]
    ypos = {lane: len(lanes) - 1 - i for i, lane in enumerate(lanes)}
    fig = Figure(figsize=(11, 0.45 * len(lanes) + 1.8), layout="constrained")
    ax = fig.subplots()
    t0 = min(s[3] for s in segs)
    ms = 1e3
    for lane, _, kind, a, b in segs:
        ax.broken_barh([((a - t0) * ms, (b - a) * ms)], (ypos[lane] - 0.38, 0.76),
                       facecolors=KINDS[kind][0], edgecolor="white", linewidth=0.4)
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
    kinds = [k for k in KINDS if any(s[2] == k for s in segs)]
    ax.legend(handles=[Patch(facecolor=KINDS[k][0], label=KINDS[k][1]) for k in kinds],
              loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=min(len(kinds), 3), fontsize=8)
    ax.grid(True, axis="x", alpha=0.3)
    save_image(fig, png, dpi=120)
    write_csv(csv_path, SEGMENT_COLUMNS, ([lane, r, kind, repr(a), repr(b)]
                                          for lane, r, kind, a, b in segs), "\n")
    return png, csv_path
