"""What the report pages share: the page, its style, cards, warnings, figures as base64 PNG."""
from __future__ import annotations

import base64
import html
import io
import math
import tempfile
from pathlib import Path

import numpy as np

from ..plots.figures import _require_matplotlib
from ..plots.output import save_figure
from ..plots.timeline import cell_folders, plot_timeline
from .checks import ReportError

CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1100px; color: #222; line-height: 1.4; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em; }
.sub { color: #666; margin-top: 0; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.92em; }
td, th { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
.cards { display: flex; flex-wrap: wrap; gap: 0.8em; margin: 1em 0; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 0.6em 1em; min-width: 11em; background: #fafafa; }
.card .v { font-size: 1.5em; font-weight: 600; } .card .k { color: #666; font-size: 0.85em; }
.warn { background: #fff4e5; border-left: 4px solid #f0a020; padding: 0.5em 1em; margin: 0.5em 0; }
.ok { background: #eef8ee; border-left: 4px solid #4a4; padding: 0.5em 1em; }
figure { margin: 1em 0; } figcaption { color: #555; font-size: 0.9em; }
img { max-width: 100%; height: auto; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
"""


def _figure_class():
    """matplotlib's Figure class, or the report's own message when it is missing."""
    return _require_matplotlib(ReportError("report: the figures are drawn with matplotlib; "
                                           "pip install 'multispin_sim[plot]'"))


def _png(fig):
    """The bytes of the figure as a PNG (100 dpi)."""
    buf = io.BytesIO()
    save_figure(fig, buf, format="png", dpi=100)
    return buf.getvalue()


def _img(png, alt, caption):
    """The HTML figure of the PNG bytes ``png``, embedded as base64."""
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(alt)}">'
            f"<figcaption>{caption}</figcaption></figure>")


def _e(x):
    return html.escape(str(x))


def _table(head, rows, left=0):
    """An HTML table of the header cells ``head`` and the ``rows`` (cells as HTML), its first
    ``left`` columns aligned left."""
    def row(cells, tag):
        return "<tr>" + "".join(f"<{tag} class=l>{c}</{tag}>" if i < left else f"<{tag}>{c}</{tag}>"
                                for i, c in enumerate(cells)) + "</tr>"
    return "<table>" + row(head, "th") + "".join(row(r, "td") for r in rows) + "</table>"


def _fmt(x, digits=4):
    if x is None:
        return "-"
    if isinstance(x, (int, np.integer)):
        return f"{int(x):,}"
    try:
        x = float(x)
    except (TypeError, ValueError):
        return _e(x)
    if math.isnan(x):
        return "-"
    return f"{x:.{digits}g}"


def _page(title, subtitle, body):
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(title)}</title><style>{CSS}</style></head><body>\n"
            f"<h1>{_e(title)}</h1><p class=\"sub\">{subtitle}</p>\n{body}\n"
            f"<p class=\"sub\">Written by multispin-sim report; self-contained (figures embedded).</p>"
            f"</body></html>\n")


def _cards(items):
    return '<div class="cards">' + "".join(
        f'<div class="card"><div class="v">{v}</div><div class="k">{k}</div></div>' for k, v in items
    ) + "</div>"


def _warnings(items):
    if not items:
        return '<div class="ok">No warnings.</div>'
    return "".join(f'<div class="warn">{_e(w)}</div>' for w in items)


def _timeline(run_dir, alt, caption):
    """The page's figure of the timeline of the run's first three rounds (of its first cell in
    a run of several cells), captioned 'The first three rounds[ of cell c]<caption>'; a timeline
    that cannot be drawn is reported, not fatal."""
    try:
        cells = cell_folders(run_dir)
        whose = f" of cell {cells[0].name[5:]}" if cells else ""
        with tempfile.TemporaryDirectory(prefix="multispin-report-") as tmp:
            png, _ = plot_timeline(cells[0] if cells else run_dir, rounds=3,
                                   out=Path(tmp) / "timeline.png")
            data = Path(png).read_bytes()
        return _img(data, alt, f"The first three rounds{whose}{caption}")
    except Exception as exc:  # a figure that cannot be drawn is reported, not fatal
        return f'<div class="warn">timeline not drawn: {_e(exc)}</div>'


def _yaml_text(path):
    return path.read_text(encoding="utf-8") if path.is_file() else "(not found)"
