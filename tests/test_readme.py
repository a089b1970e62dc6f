"""The README stays a newcomer's page: short, every command it shows is one the CLI takes, and
every figure of its Results table is in the page it links to for them."""

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


def results_section() -> str:
    """The README's Results section: its table of ratings and the link to where they come from."""
    text = README.read_text(encoding="utf-8")
    return text.split("\n## Results\n", 1)[1].split("\n## ", 1)[0]


def figures(text: str) -> set[str]:
    """The figures a reader would look up: ratings with their intervals ('2719 [2638, 2799]'),
    and every other number of three characters or more ('+89', '18,324', '0.05', '6.6')."""
    text = text.replace("−", "-")
    rated = set(re.findall(r"\d{3,4} \[-?\d+, -?\d+\]", text))
    numbers = {n for n in re.findall(r"(?<![\w.,])[+-]?\d[\d,.]*\d", text) if len(n) >= 3}
    return rated | numbers


def test_the_results_figures_are_where_the_readme_links_to():
    """Each figure of the Results section is in a page that section links to (RESULTS.md's
    summary, since its detail moved to benchmarks/notes/)."""
    section = results_section()
    pages = re.findall(r"\]\(([^)#]+\.md)(?:#[^)]*)?\)", section)
    assert pages
    linked = "\n".join((README.parent / p).read_text(encoding="utf-8") for p in pages)
    assert sorted(figures(section) - figures(linked)) == []


def test_the_figures_check_sees_a_missing_figure():
    assert figures("rated 2719 [2638, 2799], +89 and 18,324 steps at 0.05 (8 games)") == {
        "2719 [2638, 2799]",
        "2719",
        "2638",
        "2799",
        "+89",
        "18,324",
        "0.05",
    }
    assert figures("2443 [2319, 2567]") - figures("2443 [2319, 2566]") == {
        "2443 [2319, 2567]",
        "2567",
    }
