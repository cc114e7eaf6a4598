"""Where ``plot`` and ``report`` write: the location checked before any input is drawn, without
creating anything (a refused command leaves no folder behind), and folders made only when a
file is written."""
from __future__ import annotations

import csv
import warnings
from pathlib import Path

from ..outputs.atomic import check_folder, replacing
from ..outputs.checked import OutputError

IMAGE_FORMATS = (".png", ".svg", ".pdf")


class PlotError(OutputError):
    """Missing input files, a figure the data cannot draw, or matplotlib not installed (a
    damaged file is an ``OutputError`` of its reader)."""


def save_figure(fig, target, **kwargs):
    """``fig.savefig`` without matplotlib's warning for each character its font lacks (a CJK
    folder or sweep name in a title): such characters are drawn as boxes, the figure is whole."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from", category=UserWarning)
        fig.savefig(target, **kwargs)


def check_image(path, option, give):
    """``path`` as a Path when it names an image of ``IMAGE_FORMATS``; else PlotError
    '<option> <path>: is not a .png, .svg or .pdf file; <give>'."""
    path = Path(path)
    if path.suffix.lower() not in IMAGE_FORMATS:
        raise PlotError(f"{option} {path}: is not a .png, .svg or .pdf file; {give}")
    return path


def check_out_folder(path, option="--out"):
    """``outputs.atomic.check_folder`` without creating anything."""
    return check_folder(path, option, create=False)


def save_image(fig, path, dpi):
    """``fig`` written to ``path`` atomically, its folder made if missing."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path) as tmp:
        save_figure(fig, tmp, dpi=dpi)
    return path


def write_csv(path, header, rows, lineterminator):
    """The CSV ``path`` written atomically: the line ``header``, then ``rows``."""
    with replacing(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator=lineterminator)
        w.writerow(header)
        w.writerows(rows)


def sidecar_csv(image, header, option="--out"):
    """The CSV written beside an image (``<stem>.csv``), checked before anything is drawn: a
    file already there is replaced only when it is one such CSV (its first line ``header``).
    Any other, such as the run's own ``rounds.csv`` beside ``--out RUN/rounds.png``, is
    refused (``PlotError``) rather than overwritten."""
    image = Path(image)
    path = image.with_suffix(".csv")
    if path.exists() or path.is_symlink():
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                ours = path.is_file() and f.readline().rstrip("\r\n") == ",".join(header)
        except OSError:
            ours = False
        if not ours:
            raise PlotError(f"{option} {image}: its data would replace {path}, a file this "
                            "command did not write (a table of the run?); give the image "
                            "another name")
    return path
