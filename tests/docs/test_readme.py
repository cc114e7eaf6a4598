"""The README's promises: its first lines are the two commands a new user needs, its commands
name real subcommands, options and files, its Python block runs, and its links lead somewhere."""
import re
import shlex
from pathlib import Path

import pytest

from multispin_sim.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(lang):
    return re.findall(rf"```{lang}\n(.*?)```", README, re.S)


def _commands():
    """Every ``multispin-sim ...`` command of the README's bash blocks (continuations joined)."""
    out = []
    for block in _blocks("bash"):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("multispin-sim "):
                out.append(shlex.split(line)[1:])
    return out


def test_readme_is_short():
    assert len(README.splitlines()) <= 200, "the README stays short: details go to docs/"


def test_first_lines_are_the_two_commands():
    assert README.startswith("# multispin_sim\n\n```bash\n")
    first = _blocks("bash")[0].strip().splitlines()
    assert first[0] == "pip install -e '.[plot]' && multispin-sim run scenarios/default.yaml"
    assert first[1] == "pip install -e '.[test]' && python -m pytest"


def test_commands_parse_and_name_existing_files():
    commands = _commands()
    assert {c[0] for c in commands} >= {"run", "sweep", "plot"}
    parser = build_parser()
    for argv in commands:
        parser.parse_args(argv)                      # exits (SystemExit) on an unknown option
        for arg in argv:
            if arg.endswith(".yaml"):
                assert (ROOT / arg).is_file(), f"README names {arg}, which does not exist"


def test_scenarios_and_sweeps_of_the_commands_load(monkeypatch):
    from multispin_sim.experiments import load_sweep
    from multispin_sim.scenario import load_scenario

    monkeypatch.chdir(ROOT)
    for argv in _commands():
        args = build_parser().parse_args(argv)
        sets = list(getattr(args, "set", None) or [])
        if argv[0] in ("run", "validate"):
            if getattr(args, "seed", None) is not None:
                sets.append(f"seed={args.seed}")
            if getattr(args, "rounds", None) is not None:
                sets.append(f"run.rounds={args.rounds}")
            load_scenario(args.scenario, overrides=sets)
        elif argv[0] == "sweep":
            assert load_sweep(args.file, overrides=sets).cells


def test_the_first_command_runs(tmp_path, monkeypatch):
    from multispin_sim.cli import main

    monkeypatch.chdir(ROOT)
    out = tmp_path / "run"
    assert main(["run", "scenarios/default.yaml", "--rounds", "20", "--quiet", "--out", str(out)]) == 0
    assert (out / "summary.json").is_file() and (out / "rounds.csv").is_file()


def test_python_block_runs(monkeypatch):
    (code,) = _blocks("python")
    assert len(code.strip().splitlines()) <= 12, "the API example stays about ten lines"
    monkeypatch.chdir(ROOT)
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["result"].summary["goodput_tps"] > 0


@pytest.mark.parametrize("target", sorted(set(re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README))))
def test_links_lead_to_files(target):
    if target.startswith(("http://", "https://")):
        return
    assert (ROOT / target).exists(), f"README links to {target}, which does not exist"
