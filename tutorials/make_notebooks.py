"""Writes the tutorial notebooks from their plain-Python sources (jupytext percent format).

Each notebook has one source, ``tutorials/NN_name.py``: ``# %%`` starts a code cell,
``# %% [markdown]`` a markdown cell. An exercise is a starter cell tagged
``["exercise-<id>", "starter"]`` (with a TODO), the solved cell tagged
``["exercise-<id>", "solution"]`` right after it, and its check tagged ``["check-<id>"]``. Keeping
starter and solution side by side in one file means the two notebooks never drift apart:

- ``tutorials/NN_name.ipynb`` gets every cell but the solutions;
- ``tutorials/solutions/NN_name.ipynb`` (only for notebooks with exercises) every cell but the
  starters.

Notebooks are written without outputs and with stable cell ids, so diffs stay readable. After
editing a source run ``python tutorials/make_notebooks.py`` and commit the .ipynb files (they are
kept for readers without jupytext); ``--check`` writes nothing and exits 1 if a committed notebook
differs from what its source gives. Needs ``pip install -e '.[tutorials]'`` (jupytext, nbformat).
"""
from __future__ import annotations

import sys
from pathlib import Path

import jupytext
import nbformat

HERE = Path(__file__).resolve().parent
METADATA = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"}}


def sources():
    """The notebook sources, ``NN_name.py``, in order."""
    return sorted(HERE.glob("[0-9][0-9]_*.py"))


def build(source, solution):
    """The starter (``solution=False``) or solved notebook of one source."""
    nb = jupytext.read(source, fmt="py:percent")
    drop = "starter" if solution else "solution"
    nb.cells = [c for c in nb.cells if drop not in c.metadata.get("tags", [])]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"c{i:02d}"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nb.metadata = nbformat.from_dict(METADATA)
    return nb


def targets():
    """{path: notebook} of every notebook and solution the sources give."""
    files = {}
    for source in sources():
        files[HERE / f"{source.stem}.ipynb"] = build(source, solution=False)
        solved = build(source, solution=True)
        if any("solution" in c.metadata.get("tags", []) for c in solved.cells):
            files[HERE / "solutions" / f"{source.stem}.ipynb"] = solved
    return files


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    check = "--check" in argv
    stale = []
    for path, nb in targets().items():
        text = nbformat.writes(nb) + "\n"
        if check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(path)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(path.relative_to(HERE.parent))
    if stale:
        print("out of date (run python tutorials/make_notebooks.py):",
              ", ".join(str(p.relative_to(HERE.parent)) for p in stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
