"""The manual's examples hold: every Python block of a page runs (a page's blocks in order, in
one namespace), every ``multispin-sim`` command it shows names a real subcommand and real
options (a concrete command parses whole; a synopsis with placeholders has its options
checked), every scenario file it names exists, and its YAML examples load as what they claim."""
import re
import shlex
from pathlib import Path

import pytest
import yaml

from multispin_sim.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").rglob("*.md"))
FENCE = re.compile(r"```(\w*)\n(.*?)```", re.S)


def _rel(page):
    return page.relative_to(ROOT).as_posix()


def _blocks(page, lang):
    return [code for kind, code in FENCE.findall(page.read_text(encoding="utf-8")) if kind == lang]


def _commands():
    """(page, command text) of every ``multispin-sim`` command in bash blocks and inline code."""
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for kind, code in FENCE.findall(text):
            if kind == "bash":
                for line in code.replace("\\\n", " ").splitlines():
                    line = line.split("#", 1)[0].strip()
                    if line.startswith("multispin-sim "):
                        out.append((_rel(page), line))
        inline = FENCE.sub("", text).replace("\n", " ")
        out += [(_rel(page), m) for m in re.findall(r"`(multispin-sim [^`]+)`", inline)]
    return out


def _subcommand(words):
    """The parser of the (nested) subcommand that ``words`` name, and how many words name it."""
    parser, used = build_parser(), 0
    while True:
        subs = [a for a in parser._actions if a.choices and hasattr(a.choices, "get")
                and isinstance(next(iter(a.choices.values()), None), type(parser))]
        if not subs or used >= len(words) or words[used] not in subs[0].choices:
            return (parser if used else None), used
        parser, used = subs[0].choices[words[used]], used + 1


COMMANDS = _commands()


@pytest.mark.parametrize("page, command", COMMANDS, ids=[f"{p}:{c[:40]}" for p, c in COMMANDS])
def test_command_names_real_options_and_files(page, command):
    words = shlex.split(command)[1:]
    sub, used = _subcommand(words)
    assert sub is not None, f"{page}: {command!r} names no subcommand"
    placeholder = any(re.search(r"[\[\]|<>]|^[A-Z_]+$", w) for w in words[used:])
    if not placeholder and (len(words) > 1 or words[0] in ("keys", "bench")):
        # a whole command (not the bare name of one in a sentence) parses
        build_parser().parse_args(words)     # SystemExit on an unknown option or a bad value
    known = set(sub._option_string_actions)
    for word in words[used:]:
        option = word.strip("[]").split("=", 1)[0]
        if option.startswith("--"):
            assert option in known, f"{page}: {command!r}: {sub.prog} has no option {option}"
        if word.endswith(".yaml") and not placeholder:
            assert (ROOT / word).is_file(), f"{page} names {word}, which does not exist"


def test_commands_are_found():
    assert len(COMMANDS) >= 30 and {c.split()[1] for _, c in COMMANDS} >= {
        "run", "sweep", "plot", "report", "capacity", "validate", "keys", "bench"}


PY_PAGES = [p for p in PAGES if _blocks(p, "python")]


@pytest.mark.parametrize("page", PY_PAGES, ids=[_rel(p) for p in PY_PAGES])
def test_python_blocks_run(page, monkeypatch):
    from multispin_sim.model.acceptance import ACCEPTANCE_MODELS
    from multispin_sim.policies import REACTIVE_POLICIES

    monkeypatch.chdir(ROOT)
    before = dict(ACCEPTANCE_MODELS), dict(REACTIVE_POLICIES)
    namespace = {}
    try:
        for code in _blocks(page, "python"):
            # pages show full runs; the blocks here run the same calls on fewer rounds
            code = re.sub(r"rounds=\d+", "rounds=20", code)
            exec(compile(code, _rel(page), "exec"), namespace)
    finally:   # the registries as they were: a page's example may register a class
        for registry, names in zip((ACCEPTANCE_MODELS, REACTIVE_POLICIES), before):
            registry.clear()
            registry.update(names)
        for value in namespace.values():    # environments a page opened
            if hasattr(value, "close") and type(value).__module__.startswith("gymnasium"):
                value.close()


def test_the_default_scenario_on_the_scenarios_page_is_the_file():
    (code,) = _blocks(ROOT / "docs" / "guide" / "scenarios.md", "yaml")
    assert yaml.safe_load(code) == yaml.safe_load((ROOT / "scenarios" / "default.yaml").read_text())


def test_the_sweep_file_on_the_sweeps_page_loads(tmp_path):
    from multispin_sim.experiments import load_sweep

    (code,) = _blocks(ROOT / "docs" / "guide" / "sweeps.md", "yaml")
    spec = yaml.safe_load(code)
    spec["base_file"] = str(ROOT / "scenarios" / spec["base_file"].split("/")[-1])
    path = tmp_path / "page_example.yaml"
    path.write_text(yaml.safe_dump(spec))
    sweep = load_sweep(str(path))
    # 4 modes x 10 device counts x 2 power ratios (zipped with nothing else: one axis)
    assert len(sweep.cells) == 4 * 10 * 2
