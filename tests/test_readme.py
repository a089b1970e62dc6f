"""The README stays a newcomer's page: short, and every command it shows is one the CLI takes."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from frugalzero.cli import build_parser

README = Path(__file__).resolve().parents[1] / "README.md"


def shown_commands() -> list[list[str]]:
    """The ``frugalzero`` command lines of the README's shell blocks, as argument lists."""
    blocks = re.findall(r"```sh\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    commands = []
    for line in "".join(blocks).splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0].endswith("frugalzero"):
            commands.append(words[1:])
    return commands


def test_the_readme_is_short():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 150


def test_the_readme_shows_commands():
    assert len(shown_commands()) >= 4


@pytest.mark.parametrize("argv", shown_commands(), ids=" ".join)
def test_every_command_the_readme_shows_parses(argv):
    args = build_parser().parse_args(argv)
    assert callable(args.handler)
