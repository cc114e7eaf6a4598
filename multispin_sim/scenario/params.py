"""Generic machinery behind the scenario schema.

A *section* is a frozen, slotted dataclass whose fields are declared with :func:`param`.  The
field's type hint says what is accepted (``int``, ``float``, ``str``, ``bool``, ``Optional[X]``,
``Union[X, Y]``, ``tuple[X, Y]``, ``tuple[X, ...]``, ``Mapping[K, V]`` or another section) and
its metadata says what it means (``doc``, ``unit``) and which values are allowed (``choices``,
``check``, ``allowed``).  :func:`build_section` walks an input mapping against the fields,
rejects unknown keys with a did-you-mean hint, coerces and checks every value, and raises
:class:`ScenarioError` with the dotted path of the first problem.

Coercion rules: ``int`` is not ``bool``; an ``int`` is accepted where a ``float`` is expected; a
string is accepted where a ``float`` is expected only if it parses as a finite number (YAML 1.1
reads ``1e-3`` as a string); NaN and infinities are rejected; ``None`` (YAML ``null``) is
accepted only by ``Optional`` fields, and a missing or ``null`` section means "all defaults".
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import re
import typing
from collections.abc import Mapping
from typing import Any, Callable, Iterator, Optional, Union

from .errors import ScenarioError

__all__ = [
    "FrozenMap", "Params", "section", "param", "Check",
    "ge", "gt", "between", "in_interval", "range_pair", "number_or_range", "int_or_choice",
    "build_section", "to_plain", "kind_of", "allowed_text", "section_hints", "join_path",
    "show_value",
]

_NoneType = type(None)


class FrozenMap(Mapping):
    """An immutable, hashable mapping (used for mapping-valued parameters)."""

    __slots__ = ("_data", "_hash")

    def __init__(self, data: Any = (), **kwargs: Any) -> None:
        object.__setattr__(self, "_data", dict(data, **kwargs))
        object.__setattr__(self, "_hash", None)

    def __getitem__(self, key: Any) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        if self._hash is None:
            object.__setattr__(self, "_hash", hash(frozenset(self._data.items())))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self._data == dict(other.items())
        return NotImplemented

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("FrozenMap is immutable")

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"

    def __reduce__(self):
        return (FrozenMap, (self._data,))


class Params:
    """Base of every section: refuses unknown attributes (with a did-you-mean hint)."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:  # only called when normal lookup fails
        if name.startswith("__"):
            raise AttributeError(name)
        names = [f.name for f in dataclasses.fields(self)]  # type: ignore[arg-type]
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"parameters are {', '.join(names)}"
        raise AttributeError(f"{type(self).__name__} has no parameter {name!r}; {hint}")

    def __reduce__(self):
        fields = dataclasses.fields(self)  # type: ignore[arg-type]
        return (type(self), tuple(getattr(self, f.name) for f in fields))


def section(cls: type) -> type:
    """Class decorator for a schema section: a frozen, slotted dataclass."""
    return dataclasses.dataclass(frozen=True, slots=True)(cls)


@dataclasses.dataclass(frozen=True, eq=False)
class Check:
    """A value check: ``check(value) -> bool`` plus the text of what it allows (``">= 1"``)."""

    func: Callable[[Any], bool] = dataclasses.field(repr=False)
    text: str
    standalone: bool = False  # text is a full description (no type noun in front)

    def __call__(self, value: Any) -> bool:
        return bool(self.func(value))


def _num(value: float) -> str:
    """A bound as written in "what is allowed": ``100000``, ``0.5``, ``1e+09``."""
    if float(value).is_integer() and abs(value) < 1e7:
        return str(int(value))
    return f"{value:g}"


def ge(low: float) -> Check:
    return Check(lambda v: v >= low, f">= {_num(low)}")


def gt(low: float) -> Check:
    return Check(lambda v: v > low, f"> {_num(low)}")


def between(low: int, high: int) -> Check:
    """Closed interval, written ``low..high`` (for integers)."""
    return Check(lambda v: low <= v <= high, f"in {low}..{high}")


def in_interval(low: float, high: float, low_open: bool = False, high_open: bool = False) -> Check:
    def ok(v: float) -> bool:
        return (v > low if low_open else v >= low) and (v < high if high_open else v <= high)
    text = f"in {'(' if low_open else '['}{_num(low)}, {_num(high)}{')' if high_open else ']'}"
    return Check(ok, text)


def range_pair(low_gt: float, at_most: Optional[float] = None) -> Check:
    """A 2-tuple ``(low, high)`` with ``low_gt < low <= high`` (and ``high <= at_most``)."""
    top = math.inf if at_most is None else at_most
    cap = "" if at_most is None else f" <= {_num(at_most)}"
    return Check(lambda v: low_gt < v[0] <= v[1] <= top,
                 f"a range [low, high] of numbers with {_num(low_gt)} < low <= high{cap}",
                 standalone=True)


def number_or_range(low: float, at_most: Optional[float] = None,
                    inclusive: bool = False) -> Check:
    """One number ``> low`` or a 2-tuple ``(low', high)`` with ``low < low' <= high`` (``>=``
    with ``inclusive``; and at most ``at_most`` when given)."""
    top = math.inf if at_most is None else at_most

    def above(x: float) -> bool:
        return x >= low if inclusive else x > low

    def ok(v: Any) -> bool:
        return above(v[0]) and v[0] <= v[1] <= top if isinstance(v, tuple) else \
            above(v) and v <= top
    op = "<=" if inclusive else "<"
    cap = "" if at_most is None else f" <= {_num(at_most)}"
    single = (f"in {'[' if inclusive else '('}{_num(low)}, {_num(at_most)}]"
              if at_most is not None else f"{'>=' if inclusive else '>'} {_num(low)}")
    return Check(ok, f"a number {single} or a range [low, high] with {_num(low)} {op} low <= "
                 f"high{cap}", standalone=True)


def int_or_choice(low: int, choices: tuple[str, ...], meaning: str = "") -> Check:
    """An integer ``>= low`` or one of the strings ``choices``."""
    def ok(v: Any) -> bool:
        return v in choices if isinstance(v, str) else v >= low
    opts = ", ".join(repr(c) for c in choices)
    return Check(ok, f"{opts} or an integer >= {low}{' ' + meaning if meaning else ''}",
                 standalone=True)


def param(default: Any, doc: str, *, unit: str = "", choices: Optional[tuple] = None,
          check: Optional[Check] = None, allowed: Optional[str] = None,
          keys: Optional[tuple] = None, key_allowed: Optional[str] = None,
          preset: Optional[str] = None, default_text: Optional[str] = None,
          exclusive_with: Optional[str] = None) -> Any:
    """Declare one scenario key.

    doc/unit: documentation (the key reference); choices: allowed strings; check: a :class:`Check`
    (for ``Mapping`` fields it applies to each value); allowed: the "what is allowed" text when
    the automatic one (from the type hint, choices and check) does not fit; keys: allowed keys of
    a ``Mapping`` field; key_allowed: text for the keys; preset: name of the
    :class:`~multispin_sim.scenario.presets.ModelPair` attribute that fills this key when the user
    leaves it out; default_text: how the default is shown in the reference table;
    exclusive_with: a sibling key that may not be given together with this one (an override that
    sets this key clears the sibling, unless the same overrides set the sibling too).
    """
    meta = {"doc": doc, "unit": unit, "allowed": allowed, "choices": choices, "check": check,
            "keys": keys, "key_allowed": key_allowed, "preset": preset,
            "default_text": default_text, "exclusive_with": exclusive_with}
    return dataclasses.field(default=default, metadata=meta)


# --------------------------------------------------------------------------------------------
# helpers


def join_path(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


@functools.cache
def section_hints(cls: type) -> dict[str, Any]:
    """Resolved type hints of a section's fields (cached)."""
    return typing.get_type_hints(cls)


def value_at(params: Any, key: str) -> Any:
    """The value of a dotted key (``"link.model"``) in a scenario or section."""
    return functools.reduce(getattr, key.split("."), params)


def show_value(value: Any, limit: int = 60) -> str:
    """YAML-like short rendering of a value for error messages."""
    if value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = repr(value)
    elif isinstance(value, (list, tuple)):
        text = "[" + ", ".join(show_value(v, limit) for v in value) + "]"
    elif isinstance(value, Mapping):
        text = "{" + ", ".join(f"{k}: {show_value(v, limit)}" for k, v in value.items()) + "}"
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# the first type that matches names the value (bool before int: a bool is an int)
_KINDS = ((type(None), "null"), (bool, "a boolean"), (int, "an integer"), (float, "a number"),
          (str, "a string"), ((list, tuple), "a list"), (Mapping, "a mapping"))


def kind_of(value: Any) -> str:
    """'a number', 'a string', 'a list', ... for error messages."""
    return next((kind for t, kind in _KINDS if isinstance(value, t)), type(value).__name__)


_NOUNS = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


def _is_optional(hint: Any) -> bool:
    return typing.get_origin(hint) is Union and _NoneType in typing.get_args(hint)


def _strip_optional(hint: Any) -> Any:
    if typing.get_origin(hint) is Union:
        args = [a for a in typing.get_args(hint) if a is not _NoneType]
        if len(args) == 1:
            return args[0]
    return hint


def _value_allowed(meta: Mapping[str, Any], hint: Any) -> str:
    """What a (scalar) value of this field may be, e.g. ``an integer >= 1``."""
    if meta.get("allowed"):
        text = meta["allowed"]
    else:
        base = _strip_optional(hint)
        check = meta.get("check")
        if meta.get("choices"):
            text = "one of " + ", ".join(repr(c) for c in meta["choices"])
        elif check is not None and check.standalone:
            text = check.text
        else:
            noun = _NOUNS.get(base, str(base))
            text = f"{noun} {check.text}" if check is not None else noun
        if _is_optional(hint):
            text += " or null"
    return text


def allowed_text(field: dataclasses.Field, hint: Any) -> str:
    """Human-readable description of what a field accepts (errors and the key reference)."""
    meta = field.metadata
    if dataclasses.is_dataclass(hint):
        return "a mapping (section)"
    if typing.get_origin(hint) is Mapping:
        key_t, val_t = typing.get_args(hint)
        keys = meta.get("key_allowed") or (
            "one of " + ", ".join(meta["keys"]) if meta.get("keys") else _NOUNS.get(key_t, "key"))
        if dataclasses.is_dataclass(val_t):
            return f"a mapping {keys} -> settings"
        return f"a mapping {keys} -> {_value_allowed(meta, val_t)}"
    return _value_allowed(meta, hint)


# --------------------------------------------------------------------------------------------
# coercion


class _Mismatch(Exception):
    """Internal: the value does not have the shape of the type hint."""


def _coerce(value: Any, hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if hint is Any:
        return value
    if origin is Union:
        args = typing.get_args(hint)
        if value is None:
            if _NoneType in args:
                return None
            raise _Mismatch
        for arg in args:
            if arg is _NoneType:
                continue
            try:
                return _coerce(value, arg)
            except _Mismatch:
                pass
        raise _Mismatch
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(value, (list, tuple)):
            raise _Mismatch
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(v, args[0]) for v in value)
        if len(value) != len(args):
            raise _Mismatch
        return tuple(_coerce(v, a) for v, a in zip(value, args))
    if hint in (bool, str):
        if isinstance(value, hint):
            return value
        raise _Mismatch
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return int(value)
        raise _Mismatch
    if hint is float:
        if isinstance(value, bool):
            raise _Mismatch
        if isinstance(value, (int, float)):
            out = float(value)
        elif isinstance(value, str):
            try:
                out = float(value.strip())
            except ValueError:
                raise _Mismatch from None
        else:
            raise _Mismatch
        if not math.isfinite(out):
            raise _Mismatch
        return out
    raise TypeError(f"scenario schema: unsupported type hint {hint!r}")  # a schema bug


def _fail(path: str, value: Any, allowed: str, mismatch: bool) -> ScenarioError:
    what = f"{show_value(value)} ({kind_of(value)}) is not allowed" if mismatch else \
        f"{show_value(value)} is not allowed"
    return ScenarioError(path, what, f"expected {allowed}")


def _check_value(value: Any, meta: Mapping[str, Any], hint: Any, path: str) -> Any:
    """Coerce a scalar-like value to ``hint`` and apply the field's choices and check."""
    try:
        out = _coerce(value, hint)
    except _Mismatch:
        raise _fail(path, value, _value_allowed(meta, hint), True) from None
    if out is None:
        return out
    choices = meta.get("choices")
    if choices and isinstance(out, str) and out not in choices:
        close = difflib.get_close_matches(out, [str(c) for c in choices], n=1)
        err = _fail(path, value, _value_allowed(meta, hint), False)
        if close:
            err = ScenarioError(path, err.problem, f"{err.allowed} (did you mean {close[0]!r}?)")
        raise err
    check = meta.get("check")
    if check is not None and not check(out):
        raise _fail(path, value, _value_allowed(meta, hint), False)
    return out


def unknown_key(path: str, key: Any, valid: list[str]) -> ScenarioError:
    kpath = join_path(path, key)
    close = difflib.get_close_matches(str(key), valid, n=1)
    if close:
        return ScenarioError(kpath, "unknown key", f"did you mean {join_path(path, close[0])!r}?")
    return ScenarioError(kpath, "unknown key", f"valid keys are {', '.join(valid)}")


_INDEX_RE = re.compile(r"^\s*\+?\d+\s*$")


def _coerce_key(key: Any, key_t: Any, meta: Mapping[str, Any], path: str, valid: list[str]) -> Any:
    if key_t is int:
        if isinstance(key, int) and not isinstance(key, bool) and key >= 0:
            return int(key)
        if isinstance(key, str) and _INDEX_RE.match(key):
            return int(key)
        allowed = meta.get("key_allowed") or "an integer >= 0"
        raise ScenarioError(join_path(path, key), f"{show_value(key)} is not a valid key",
                            f"expected {allowed}")
    if not isinstance(key, str) or (meta.get("keys") and key not in meta["keys"]):
        raise unknown_key(path, key, valid)
    return key


def _build_mapping(field: dataclasses.Field, hint: Any, value: Any, path: str) -> FrozenMap:
    meta = field.metadata
    key_t, val_t = typing.get_args(hint)
    if value is None:
        return FrozenMap()
    if not isinstance(value, Mapping):
        raise _fail(path, value, allowed_text(field, hint), True)
    valid = [str(k) for k in meta.get("keys") or ()]
    out: dict[Any, Any] = {}
    for key, item in value.items():
        k = _coerce_key(key, key_t, meta, path, valid)
        if k in out:
            raise ScenarioError(join_path(path, key), "duplicate key",
                                f"key {k!r} is given more than once")
        kpath = join_path(path, k)
        if dataclasses.is_dataclass(val_t):
            out[k] = build_section(val_t, item, kpath)
        else:
            out[k] = _check_value(item, meta, val_t, kpath)
    if key_t is int:
        out = dict(sorted(out.items()))
    return FrozenMap(out)


def build_section(cls: type, data: Any, path: str = "") -> Any:
    """Build section ``cls`` from a mapping; missing keys take their defaults."""
    if data is None:
        data = {}
    fields = {f.name: f for f in dataclasses.fields(cls)}
    names = list(fields)
    if not isinstance(data, Mapping):
        raise ScenarioError(path, f"{show_value(data)} ({kind_of(data)}) is not allowed",
                            f"expected a mapping with keys {', '.join(names)}")
    hints = section_hints(cls)
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if not isinstance(key, str) or key not in fields:
            raise unknown_key(path, key, names)
        kpath = join_path(path, key)
        field, hint = fields[key], hints[key]
        if dataclasses.is_dataclass(hint):
            kwargs[key] = build_section(hint, value, kpath)
        elif typing.get_origin(hint) is Mapping:
            kwargs[key] = _build_mapping(field, hint, value, kpath)
        else:
            kwargs[key] = _check_value(value, field.metadata, hint, kpath)
    return cls(**kwargs)


def python_values(value: Any) -> Any:
    """A document given from Python with numpy scalars and arrays in it (``np.int64(3)``,
    ``np.arange(2, 10)``), with the Python numbers and lists YAML would give instead."""
    if isinstance(value, Mapping):
        return {python_values(k): python_values(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(python_values(v) for v in value)
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return value.tolist()
    return value


def to_plain(value: Any) -> Any:
    """Sections -> dicts, tuples -> lists, FrozenMaps -> dicts (YAML-safe).

    Sections with a true class attribute ``_omit_none`` leave out keys whose value is ``None``.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        omit = getattr(type(value), "_omit_none", False)
        out = {}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if v is None and omit:
                continue
            out[f.name] = to_plain(v)
        return out
    if isinstance(value, Mapping):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    return value
