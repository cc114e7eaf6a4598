"""The report page of a capacity folder (``multispin-sim capacity``): the capacity and its
interval, the attainment curve as ``multispin-sim plot`` draws it, and every rate tried."""
from __future__ import annotations

from pathlib import Path

from ..plots.capacity import CURVE, capacity_figure, read_capacity_output
from .common import _cards, _e, _figure_class, _fmt, _img, _page, _png, _table


def read_capacity_folder(folder):
    """capacity.json and capacity.csv, checked before the figure is drawn."""
    return (Path(folder), *read_capacity_output(folder))


def capacity_report(checked):
    """The HTML page (str) of a checked capacity folder (``read_capacity_folder``)."""
    folder, res, curve = checked
    _figure_class()  # matplotlib missing: the report's own message
    slo = ", ".join(f"{k.split('_')[0].upper()} &le; {_fmt(v)} s" for k, v in res["slo"].items()
                    if v is not None)
    lo, hi = res.get("interval") or (None, None)
    capacity = res.get("capacity_per_device_rps")
    shown = _fmt(capacity) if capacity is not None else f"none ({_e(res.get('verdict', '?'))})"
    body = [_cards([("capacity (requests/s per device)", shown),
                    ("interval", f"{_fmt(lo)} to {_fmt(hi)}" if lo is not None else "none"),
                    ("target attainment", f"{res['target']:.0%}"), ("SLO", slo or "none"),
                    ("runs", _e(res.get("runs", "?")))]),
            f"<p>{_e(res['message'])}; the search stopped: {_e(res.get('stopped_by', '?'))}"
            + ("" if res.get("complete", True) else " (interrupted: not complete)") + ".</p>"]
    figure = _png(capacity_figure(res, curve))
    body.append("<h2>Figures</h2>" + _img(figure, "SLO attainment against the arrival rate",
                "The attainment of every rate tried with its 95% interval, coloured by verdict; "
                "the dashed line is the target, the shaded band the capacity's interval."))
    rows = [[_e(curve[c][i]) if digits is None else _fmt(curve[c][i], digits)
             for c, _, digits in CURVE] for i in curve["rate_per_s"].argsort()]
    body.append("<h2>Rates tried</h2>" + _table([_e(label) for _, label, _ in CURVE], rows))
    sub = f"capacity folder <code>{_e(folder.resolve())}</code>"
    return _page(f"multispin-sim capacity report: {res['scenario']}", sub, "\n".join(body))
