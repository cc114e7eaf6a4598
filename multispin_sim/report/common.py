"""What the report pages share: the page, its style, cards, warnings, figures as base64 PNG."""
from __future__ import annotations

import base64
import html
import io
import math
from pathlib import Path

import numpy as np

from ..plots.output import save_figure
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
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ReportError("report: the figures are drawn with matplotlib; "
                          "pip install 'multispin_sim[plot]'") from None
    return Figure


def _png(fig):
    buf = io.BytesIO()
    save_figure(fig, buf, format="png", dpi=100)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _img(data, alt, caption):
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(alt)}">'
            f"<figcaption>{caption}</figcaption></figure>")


def _e(x):
    return html.escape(str(x))


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




def _timeline_png(run_dir, rounds=3):
    """The timeline of the run's first rounds, and whose they are: '' for the run, ' of cell c'
    for the first cell of a run of several cells."""
    import tempfile

    from ..plots.timeline import cell_folders, plot_timeline

    cells = cell_folders(run_dir)
    whose = f" of cell {cells[0].name[5:]}" if cells else ""
    with tempfile.TemporaryDirectory(prefix="multispin-report-") as tmp:
        png, _ = plot_timeline(cells[0] if cells else run_dir, rounds=rounds,
                               out=Path(tmp) / "timeline.png")
        return base64.b64encode(Path(png).read_bytes()).decode("ascii"), whose


def _yaml_text(path):
    return path.read_text(encoding="utf-8") if path.is_file() else "(not found)"
