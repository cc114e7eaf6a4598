"""MkDocs hook: reference pages generated from the installed code at build time.

A page holding a marker line gets the generated text in its place, so the published reference
cannot drift from the code (nothing generated is committed):

- ``<!-- scenario-keys -->``: ``multispin_sim.scenario.reference_markdown()``, the key table;
- ``<!-- cli-help -->``: the ``--help`` text of ``multispin-sim`` and of each subcommand.
"""
import argparse
import os

KEYS = "<!-- scenario-keys -->"
CLI = "<!-- cli-help -->"


def scenario_keys():
    from multispin_sim.scenario import reference_markdown

    return reference_markdown().rstrip()


def cli_help():
    from multispin_sim.cli import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"           # argparse wraps to the terminal: fix the width
    try:
        parser = build_parser()
        parts = ["```text\n" + parser.format_help().rstrip() + "\n```"]
        def commands(parser, words):   # every command, nested ones too (acceptance fit)
            for action in parser._actions:
                if isinstance(action, argparse._SubParsersAction):
                    for name, sub in action.choices.items():
                        yield [*words, name], sub
                        yield from commands(sub, [*words, name])

        for words, sub in commands(parser, ["multispin-sim"]):
            parts.append(f"### `{' '.join(words)}`\n\n```text\n{sub.format_help().rstrip()}\n```")
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return "\n\n".join(parts)


GENERATORS = {KEYS: scenario_keys, CLI: cli_help}


def on_page_markdown(markdown, page, config, files, **kwargs):
    for marker, generate in GENERATORS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, generate())
    return markdown
