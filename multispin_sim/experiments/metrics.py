"""The metrics of a sweep's tables: the names ``runs.csv`` and ``cells.csv`` use and that a
sweep file's ``plot`` may name as ``y`` (see ``tables`` for how they are computed)."""

# The per-run metrics of the tidy table (flattened summary + derived shares), in table order.
# ``plot`` entries are checked against this list.
METRICS = (
    "goodput_tps", "goodput_ci95_lo", "goodput_ci95_hi", "goodput_ci_batches", "tokens", "rounds",
    "sim_time_s", "mean_draft_len", "rejections", "ul_corrections", "dl_corrections",
    "duration_s_mean", "duration_s_median", "duration_s_p95", "duration_s_max",
    "comm_s_mean", "comm_s_median", "comm_s_p95", "comm_s_max", "complete",
    "device_rounds", "share_accepted", "share_ul", "share_dl",
    "wall_time_s", "rounds_per_s",
)

# Blocks of the summary some scenarios add (queueing requests, fading-block delays, the link
# model, the asynchronous protocol, several cells, ...): their flattened metrics
# (``requests_latency_s_median``, ``interference_transmissions``, ...) and the scalars of a
# run of several cells are accepted as plot y too; ``plot`` checks the figure's metrics against
# cells.csv itself when it draws.
# Wall-clock metrics differ from one machine and one run to the next: runs.csv has them, the
# per-cell means of cells.csv (which figures plot) leave them out.
WALL_CLOCK = ("wall_time_s", "rounds_per_s")
SUMMARY_BLOCKS = ("requests", "delays", "energy", "payload", "link", "asynchronous",
                  "acceptance", "interference", "deferred", "handover")
NESTED_METRIC_PREFIXES = tuple(f"{b}_" for b in SUMMARY_BLOCKS)
CELLS_METRICS = ("ul_share", "load_balance")


def is_metric(name):
    """A name the tables can have as a metric (known or of a summary block), wall-clock ones
    included."""
    return isinstance(name, str) and (name in METRICS or name in CELLS_METRICS
                                      or name.startswith(NESTED_METRIC_PREFIXES))


def plot_y_problem(y):
    """(what is wrong, what is allowed) when ``y`` cannot be a figure's y, else None."""
    plottable = [m for m in METRICS if m not in WALL_CLOCK]
    if y in WALL_CLOCK:
        return (f"{y!r} is a wall-clock figure (runs.csv only; figures plot the per-cell means "
                "of cells.csv)", f"one of {', '.join(plottable)}")
    if not is_metric(y):
        return (f"{y!r} is not a metric",
                f"expected one of {', '.join(plottable + list(CELLS_METRICS))}, or a metric of a "
                f"summary block ({', '.join(SUMMARY_BLOCKS)}: <block>_<key>, as the columns of "
                "cells.csv)")
    return None
