"""Loading, overriding, resolving and dumping scenarios."""

from __future__ import annotations

import copy
import dataclasses
import functools
import os
import weakref
from collections.abc import Mapping
from typing import Any, Iterable, Optional, Union

import yaml

from .errors import ScenarioError
from .params import FrozenMap, build_section, kind_of, python_values, section_hints, to_plain
from .presets import MODEL_PAIRS
from .cross_checks import CROSS_CHECKS
from .names import DEFAULT_DL_POWER_RATIO
from .schema import Scenario
from .limits import check_yaml_text  # also registers the limit checks (cross checks)

__all__ = ["load_scenario", "parse_set_options", "apply_overrides", "scenario_to_dict",
           "dump_scenario_yaml", "resolve_scenario", "name_scenario_file", "names_scenario_file",
           "file_at_fault"]

Source = Union[None, str, "os.PathLike[str]", Mapping, Scenario]
Overrides = Union[None, Mapping[str, Any], Iterable[str]]


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False):
    seen: dict[Any, Any] = {}
    for key_node, _ in node.value:   # the mapping's own keys: a merged one (<<) may be overridden
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=deep)
        try:
            hash(key)
        except TypeError:
            continue  # let the normal constructor report it
        if key in seen:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark,
                f"found duplicate key {key!r}", key_node.start_mark)
        seen[key] = True
    loader.flatten_mapping(node)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                                 _construct_mapping)


def read_yaml_file(path: str, kind: str = "scenario file") -> Any:
    """A YAML file as Python data (duplicate keys refused); ScenarioError naming the file (a
    ``kind``) if unreadable."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ScenarioError(path, f"cannot read {kind}: {reason}",
                            f"give the path of a readable {kind} (UTF-8 YAML)",
                            source=path) from None
    check_yaml_text(text, path, source=path)
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (SafeLoader subclass)
    except RecursionError:
        raise ScenarioError(path, "YAML nested too deep", "a scenario needs at most a few "
                            "levels of nesting", source=path) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        fix = ("each key may appear only once in a mapping" if "duplicate key" in problem
               else "fix the YAML syntax")
        raise ScenarioError(path, f"invalid YAML{where}: {problem}", fix, source=path) from None


# --------------------------------------------------------------------------------------------
# overrides


def parse_set_options(options: Union[str, Iterable[str]]) -> dict[str, Any]:
    """Parse ``--set`` options ``"a.b=value"`` into ``{"a.b": value}``.

    Values are parsed with ``yaml.safe_load`` (``8`` -> int, ``false`` -> bool, ``[200,300]`` ->
    list, empty -> null); they are typed and checked against the schema later, by
    :func:`load_scenario`.  Later options win over earlier ones.
    """
    if isinstance(options, str):
        options = [options]
    elif not isinstance(options, Iterable):
        raise ScenarioError("overrides", f"{options!r} ({type(options).__name__}) is not allowed",
                            "expected a mapping {'key.path': value} or a list of "
                            "'key.path=value' strings")
    out: dict[str, Any] = {}
    for option in options:
        key, sep, text = str(option).partition("=")
        key = key.strip()
        if not sep or not key or any(not part.strip() or part != part.strip()
                                     for part in key.split(".")):
            raise ScenarioError(str(option), "malformed --set option",
                                "expected KEY.PATH=VALUE, e.g. devices.count=8")
        check_yaml_text(text, key)
        try:
            value = yaml.safe_load(text) if text.strip() else None
        except (yaml.YAMLError, RecursionError):
            raise ScenarioError(key, f"cannot parse the value {text!r} of --set option",
                                "expected a YAML value, e.g. 8, 0.5, true, fixed or "
                                "[200, 300]") from None
        out[key] = value
    return out


def _same_key(node: Mapping, key: Any) -> Any:
    """The key of ``node`` with the text of ``key`` (``3`` matches ``"3"``), else ``key``."""
    return next((k for k in node if str(k) == str(key)), key)


def _merge(base: Any, value: Any) -> Any:
    if isinstance(base, Mapping) and isinstance(value, Mapping):
        merged = dict(base)
        for k, v in value.items():
            match = _same_key(merged, k)
            merged[match] = _merge(merged.get(match), v)
        return merged
    return copy.deepcopy(value)


def apply_overrides(raw: Mapping[str, Any], overrides: Overrides) -> dict[str, Any]:
    """Return a copy of the raw scenario mapping with dotted-path overrides applied.

    ``overrides`` is a mapping ``{"devices.count": 8}`` or a list of ``"a.b=v"`` strings.  Missing
    intermediate mappings are created (``devices.overrides.3.alpha``); a key matches an existing
    key with the same text (``3`` matches ``"3"``); mapping values merge into existing mappings.
    """
    result: dict[str, Any] = copy.deepcopy(dict(raw))
    if overrides is None:
        return result
    if not isinstance(overrides, Mapping):
        overrides = parse_set_options(overrides)
    for path, value in overrides.items():
        parts = str(path).split(".")
        if any(not p for p in parts):
            raise ScenarioError(str(path), "malformed override key",
                                "expected a dotted key path, e.g. devices.count")
        node: dict[Any, Any] = result
        for part in parts[:-1]:
            key = _same_key(node, part)
            # the level as a dict (it may be a FrozenMap or another mapping), or a new one
            node[key] = dict(node[key]) if isinstance(node.get(key), Mapping) else {}
            node = node[key]
        last = _same_key(node, parts[-1])
        node[last] = _merge(node.get(last), python_values(value))
        sibling = exclusive_sibling(parts)
        if sibling and value is not None and ".".join(parts[:-1] + [sibling]) not in overrides:
            for k in [k for k in node if str(k) == sibling]:
                node[k] = None
    return result


def exclusive_sibling(parts: list[str]) -> Optional[str]:
    """The ``exclusive_with`` sibling of the schema key at ``parts`` (None if none / unknown)."""
    cls: Any = Scenario
    for part in parts[:-1]:
        hint = section_hints(cls).get(part)
        if not (isinstance(hint, type) and dataclasses.is_dataclass(hint)):
            return None
        cls = hint
    field = next((f for f in dataclasses.fields(cls) if f.name == parts[-1]), None)
    return field.metadata.get("exclusive_with") if field is not None else None


# --------------------------------------------------------------------------------------------
# resolution


def resolve_scenario(sc: Scenario) -> Scenario:
    """Fill model-pair presets and the DL power default, then run the cross-field checks."""
    pair = MODEL_PAIRS[sc.model_pair]
    changes = {}
    for f in dataclasses.fields(sc):
        sect = getattr(sc, f.name)
        if not dataclasses.is_dataclass(sect):
            continue
        fills = {}
        for sf in dataclasses.fields(sect):
            attr = sf.metadata.get("preset")
            if not attr:
                continue
            given, preset = getattr(sect, sf.name), getattr(pair, attr)
            if isinstance(preset, Mapping):
                fills[sf.name] = FrozenMap({**preset, **(given or {})})
            elif given is None:
                fills[sf.name] = preset
        if fills:
            changes[f.name] = dataclasses.replace(sect, **fills)
    sc = dataclasses.replace(sc, **changes) if changes else sc

    server = sc.server
    if server.dl_power_dbm is not None and server.dl_power_ratio is not None:
        raise ScenarioError("server", "both dl_power_dbm and dl_power_ratio are given",
                            "give exactly one of them (or neither: dl_power_ratio 4)")
    if server.dl_power_dbm is None and server.dl_power_ratio is None:
        sc = dataclasses.replace(sc, server=dataclasses.replace(
            server, dl_power_ratio=DEFAULT_DL_POWER_RATIO))
    for check in CROSS_CHECKS:
        check(sc)
    return sc


def load_scenario(source: Source = None, overrides: Overrides = None) -> Scenario:
    """Load, validate and resolve a scenario.

    ``source``: ``None`` (the defaults), a YAML file path, a mapping, or a :class:`Scenario`
    (re-validated, e.g. to apply overrides).  ``overrides``: ``{"devices.count": 8}`` or
    ``["devices.count=8", ...]``, applied on top of the source.  Every key not given takes its
    default; model-pair presets fill the keys the user left out.  Raises :class:`ScenarioError`.
    """
    file: Optional[str] = None
    if source is None:
        raw: Any = {}
    elif isinstance(source, Scenario):
        raw = scenario_to_dict(source)
    elif isinstance(source, Mapping):
        raw = python_values(source)
    elif isinstance(source, (str, os.PathLike)):
        file = os.fspath(source)
        raw = read_yaml_file(file)
        if raw is None:  # empty file: all defaults
            raw = {}
    else:
        raw = source  # not a mapping: reported below
    if not isinstance(raw, Mapping):
        kind = kind_of(raw)
        keys = ", ".join(section_hints(Scenario))
        raise ScenarioError(file or "", f"the top-level document is {kind}",
                            f"expected a mapping with keys {keys}", source=file)
    if "sweep" in raw:   # the other kind of file: say so rather than "unknown key"
        raise ScenarioError(file or "sweep", "is a sweep file (it has a 'sweep' section), not a "
                            "scenario" if file else "a key of sweep files, not of scenarios",
                            "run it with 'multispin-sim sweep' (Python: load_sweep), or give a "
                            "scenario file", source=file)
    _refuse_sweep_overrides(overrides)
    try:
        sc = resolve_scenario(build_section(Scenario, apply_overrides(raw, overrides), ""))
    except ScenarioError as exc:
        if file is not None and exc.source is None and file_at_fault(
                exc, overrides, lambda: resolve_scenario(build_section(Scenario, raw, ""))):
            exc.source = file
        raise
    if file is not None:
        _remember_file(sc, file, overrides)
    return sc


def _override_keys(overrides: Overrides) -> list[str]:
    """The key paths ``overrides`` (a mapping or ``--set`` options, or None) set, as text."""
    if not overrides:
        return []
    keys = overrides if isinstance(overrides, Mapping) else parse_set_options(overrides)
    return [str(k) for k in keys]


def _refuse_sweep_overrides(overrides: Overrides) -> None:
    """An override (``--set``) of the ``sweep`` section is refused as a scenario mapping with
    one is: the key belongs to sweep files, rather than "unknown key"."""
    for key in _override_keys(overrides):
        if key.split(".")[0] == "sweep":
            raise ScenarioError(key, "a key of sweep files, not of scenarios (from --set)",
                                "write it in a sweep file and run that with 'multispin-sim "
                                "sweep' (Python: load_sweep); --set takes scenario keys")


# the file each loaded scenario came from, and the overrides applied to it: checks made later
# (the files a scenario refers to, checks needing the model) name the file as the loader does
_FILES: dict = {}


def _remember_file(sc: Scenario, file: str, overrides: Overrides) -> None:
    key = id(sc)
    _FILES[key] = (weakref.ref(sc, lambda _, key=key: _FILES.pop(key, None)), file,
                   tuple(_override_keys(overrides)))


def name_scenario_file(exc: ScenarioError, scenario: Any, check=None) -> ScenarioError:
    """``exc`` with its ``source`` set to the file ``scenario`` was loaded from where the file
    is at fault (``file_at_fault``; ``check(scenario)`` is what raised it, rerun on the file
    alone), unless it already names one."""
    entry = _FILES.get(id(scenario))
    if exc.source is None and entry is not None and entry[0]() is scenario:
        file, keys = entry[1], dict.fromkeys(entry[2])
        alone = None if check is None else (lambda: check(load_scenario(file)))
        if file_at_fault(exc, keys, alone):
            exc.source = file
    return exc


def names_scenario_file(func):
    """Decorator of a check ``func(scenario, ...)``: its ScenarioError names the scenario file
    where the file is at fault (``name_scenario_file``)."""
    @functools.wraps(func)
    def checked(scenario, *args, **kwargs):
        try:
            return func(scenario, *args, **kwargs)
        except ScenarioError as exc:
            name_scenario_file(exc, scenario, lambda sc: func(sc, *args, **kwargs))
            raise
    return checked


def file_at_fault(exc: ScenarioError, overrides: Overrides, alone=None) -> bool:
    """Whether the scenario file, not the ``overrides`` applied to it, is at fault for ``exc``:
    never where an override gave its key or a section holding it; else, with overrides, only
    where ``alone()`` (the same load or check of the file without them) fails at the same key
    too (an override can make a key the file does not write, or one it writes, fail a
    cross-check; one below the key may or may not be the cause)."""
    keys = _override_keys(overrides)
    path = exc.path
    if any(path == k or path.startswith(f"{k}.") for k in keys):
        return False
    if not keys or alone is None:
        return True
    try:
        alone()
    except ScenarioError as own:
        return own.path == path
    return False


# --------------------------------------------------------------------------------------------
# dumping


def scenario_to_dict(sc: Scenario) -> dict[str, Any]:
    """Plain nested dict of a (resolved) scenario: lists, not tuples; YAML-safe."""
    return to_plain(sc)


class _Dumper(yaml.SafeDumper):
    """Block-style mappings, flow-style (one-line) lists."""


# the same with libyaml's emitter (in C, about 5x faster), used where the two write the same
# text: every string printable ASCII and no key empty (they differ on empty keys and on
# characters outside the Basic Multilingual Plane)
_CDumper = type("_CDumper", (getattr(yaml, "CSafeDumper", _Dumper),), {})
for _d in (_Dumper, _CDumper):
    _d.add_representer(list, lambda d, v: d.represent_sequence(
        "tag:yaml.org,2002:seq", v, flow_style=True))


def _plain_ascii(value) -> bool:
    """Every string in ``value`` (nested dicts and lists) printable ASCII, no key empty."""
    if isinstance(value, str):
        return value.isascii() and value.isprintable()
    if isinstance(value, dict):
        return all(isinstance(k, str) and k and _plain_ascii(k) and _plain_ascii(v)
                   for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(map(_plain_ascii, value))
    return True


def dump_scenario_yaml(sc: Scenario, comment: Optional[str] = None) -> str:
    """YAML text of the resolved scenario; ``load_scenario(yaml.safe_load(text)) == sc``.

    ``comment`` (optional, may be several lines) is written as a ``#`` header.
    """
    plain = scenario_to_dict(sc)
    text = yaml.dump(plain, Dumper=_CDumper if _plain_ascii(plain) else _Dumper,
                     sort_keys=False, default_flow_style=False, allow_unicode=True)
    if comment:
        header = "".join(f"# {line}".rstrip() + "\n" for line in comment.splitlines())
        text = header + text
    return text
