"""The key reference (the docs page docs/reference/keys.md, generated from it), derived from the
schema."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any

from .params import allowed_text, section_hints, to_plain
from .presets import MODEL_PAIRS
from .schema import Scenario

__all__ = ["reference_rows", "reference_markdown"]

Row = tuple[str, str, str, str, str]


def _show_default(value: Any) -> str:
    plain = to_plain(value)
    if plain is None:
        return "null"
    if isinstance(plain, bool):
        return "true" if plain else "false"
    if isinstance(plain, Mapping) and not plain:
        return "{}"
    if isinstance(plain, list):
        return "[" + ", ".join(_show_default(v) for v in plain) + "]"
    return str(plain)


def _default_text(field: dataclasses.Field) -> str:
    meta = field.metadata
    preset = meta.get("preset")
    if preset and not isinstance(getattr(next(iter(MODEL_PAIRS.values())), preset), Mapping):
        per_pair = ", ".join(f"{name} {getattr(pair, preset)}"
                             for name, pair in MODEL_PAIRS.items())
        return f"from model_pair ({per_pair})"
    if meta.get("default_text"):
        return meta["default_text"]
    return _show_default(field.default)


def _rows(cls: type, prefix: str) -> list[Row]:
    rows: list[Row] = []
    hints = section_hints(cls)
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        path = f"{prefix}.{field.name}" if prefix else field.name
        if dataclasses.is_dataclass(hint):
            rows.extend(_rows(hint, path))
            continue
        meta = field.metadata
        rows.append((path, allowed_text(field, hint), meta.get("unit") or "",
                     _default_text(field), meta.get("doc") or ""))
        if typing.get_origin(hint) is Mapping:
            key_t, value_t = typing.get_args(hint)
            if dataclasses.is_dataclass(value_t):   # entries keyed by an index or a name
                rows.extend(_rows(value_t, f"{path}.<{'index' if key_t is int else 'name'}>"))
    return rows


def reference_rows() -> list[Row]:
    """One row per key: (key path, type / allowed values, unit, default, description).

    All five entries are strings.  Rows follow the schema's field order; per-device override keys
    appear as ``devices.overrides.<index>.<key>``.
    """
    return _rows(Scenario, "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def reference_markdown() -> str:
    """The reference as a Markdown table (docs/reference/keys.md, ``multispin-sim keys``)."""
    lines = ["| key | type / allowed | unit | default | description |",
             "|---|---|---|---|---|"]
    for row in reference_rows():
        path, allowed, unit, default, doc = (_cell(c) for c in row)
        lines.append(f"| `{path}` | {allowed} | {unit} | {default} | {doc} |")
    return "\n".join(lines) + "\n"
