"""The documentation site (mkdocs.yml, docs/): every page is in the nav and every nav entry
exists, the generated reference pages cover the schema and the command line, and
``mkdocs build --strict`` passes (that needs the 'docs' extra: pip install -e '.[docs]')."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
HOOK = DOCS / "hooks" / "generated.py"


def _nav_files(entries):
    for entry in entries:
        if isinstance(entry, str):
            yield entry
        elif isinstance(entry, dict):
            for value in entry.values():
                yield from (_nav_files(value) if isinstance(value, list) else [value])


def _config():
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))


def _hook():
    spec = importlib.util.spec_from_file_location("docs_hook_generated", HOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_page_is_in_the_nav_and_every_nav_entry_exists():
    nav = list(_nav_files(_config()["nav"]))
    assert len(nav) == len(set(nav)), "a page is listed twice in the nav"
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")
             if not p.relative_to(DOCS).as_posix().startswith("hooks/")}
    missing = sorted(set(nav) - pages)
    assert not missing, f"nav entries without a file in docs/: {missing}"
    orphans = sorted(pages - set(nav))
    assert not orphans, f"pages in docs/ missing from the nav in mkdocs.yml: {orphans}"


def test_key_reference_is_generated_from_the_schema():
    from multispin_sim.scenario import reference_rows

    hook = _hook()
    page = (DOCS / "reference" / "keys.md").read_text(encoding="utf-8")
    assert hook.KEYS in page, "docs/reference/keys.md lacks the marker the hook replaces"
    text = hook.on_page_markdown(page, None, None, None)
    assert hook.KEYS not in text
    for row in reference_rows():
        assert f"`{row[0]}`" in text, row[0]


def test_cli_reference_has_every_subcommand():
    from multispin_sim.cli import build_parser

    hook = _hook()
    page = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    assert hook.CLI in page
    text = hook.on_page_markdown(page, None, None, None)
    names = [a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction"][0].choices
    for name in names:
        assert f"### `multispin-sim {name}`" in text, name
        assert f"`{name}" in page, f"the command table of docs/reference/cli.md lacks {name}"


def test_strict_build(tmp_path):
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        pytest.importorskip(module, reason="building the docs needs the 'docs' extra: "
                            "pip install -e '.[docs]'")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "reference" / "keys" / "index.html").is_file()
