"""The lab notebook stays readable and stays out of the product's way: benchmarks/RESULTS.md is a
short summary whose every link lands (on a file, and on a heading where it names one), and no
trained net is added under benchmarks/ (a record keeps the net's SHA-256 instead:
benchmarks/README.md); the nets committed before that rule are pinned by
benchmarks/results/nets.json, byte for byte."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
RESULTS = BENCHMARKS / "RESULTS.md"
MANIFEST = BENCHMARKS / "results" / "nets.json"
PAGES = sorted(BENCHMARKS.rglob("*.md"))
PRODUCT_PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose_lines(path: Path) -> list[str]:
    """The file's lines outside fenced code blocks (a ``#`` there is a shell comment)."""
    out, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            out.append(line)
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text (links and code marks gone) in lower case, every
    character but letters, digits, spaces, hyphens and underscores dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    kept = (c for c in text if c in " -" or unicodedata.category(c)[0] in "LMN" or c == "_")
    return "".join(kept).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in ``path``, repeats numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    out = set()
    for line in prose_lines(path):
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def relative_links(path: Path) -> list[str]:
    """The link and image targets in ``path``'s prose that are not web addresses."""
    targets = []
    for line in prose_lines(path):
        line = re.sub(r"``.*?``|`[^`]*`", "``", line)  # code spans hold no links
        targets += [t for t in LINK.findall(line) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]
    return targets


def broken(path: Path, target: str) -> str | None:
    """Why ``target``, linked from ``path``, does not land (None when it does)."""
    file_part, _, anchor = unquote(target).partition("#")
    dest = (path.parent / file_part).resolve() if file_part else path
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    if not dest.exists():
        return f"{where}: {target}: no such file"
    if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
        return f"{where}: {target}: no heading #{anchor} there"
    return None


def test_slugs_follow_githubs_rules() -> None:
    assert slug("The search's settings for play") == "the-searchs-settings-for-play"
    assert slug("Tuning `cpu-1h` (Stockfish's games, one hour)") == (
        "tuning-cpu-1h-stockfishs-games-one-hour"
    )
    assert slug("Stockfish's games 1.6× faster: our own UCI client") == (
        "stockfishs-games-16-faster-our-own-uci-client"
    )
    assert slug("`net:default`: one more pass over 55,000 new games (an H100, 2026-11-27)") == (
        "netdefault-one-more-pass-over-55000-new-games-an-h100-2026-11-27"
    )
    assert slug("What a 2-core CPU can train — on [a GPU](x.md)") == (
        "what-a-2-core-cpu-can-train--on-a-gpu"
    )


def test_a_link_checker_that_can_fail(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## A part\n\n```sh\n# not a heading\n```\n")
    page.write_text(
        "# Page\n[ok](other.md#a-part) [gone](missing.md) [wrong](other.md#not-a-heading)\n"
        "[self](#page) `[in code](missing.md)` [web](https://example.org/x)\n"
    )
    links = relative_links(page)
    assert links == ["other.md#a-part", "missing.md", "other.md#not-a-heading", "#page"]
    assert [t for t in links if broken(page, t)] == ["missing.md", "other.md#not-a-heading"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(BENCHMARKS)))
def test_every_link_of_the_notebook_lands(page: Path) -> None:
    assert [why for t in relative_links(page) if (why := broken(page, t))] == []


@pytest.mark.parametrize("page", PRODUCT_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_from_readme_and_docs_lands(page: Path) -> None:
    """Those into benchmarks/ above all: a section moved out of RESULTS.md takes its anchor."""
    assert [why for t in relative_links(page) if (why := broken(page, t))] == []


def test_results_is_a_summary_that_links_its_details() -> None:
    assert len(RESULTS.read_text(encoding="utf-8").splitlines()) <= 300
    notes = {t.partition("#")[0] for t in relative_links(RESULTS) if t.startswith("notes/")}
    assert notes == {f"notes/{p.name}" for p in (BENCHMARKS / "notes").glob("*.md")}


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def test_no_net_under_benchmarks_but_the_listed_ones_byte_for_byte() -> None:
    listed = json.loads(MANIFEST.read_text(encoding="utf-8"))["nets"]
    found = {p.relative_to(ROOT).as_posix(): p for p in BENCHMARKS.rglob("*.safetensors")}
    assert sorted(set(found) - set(listed)) == [], "a new net: keep its SHA-256, not the file"
    assert sorted(set(listed) - set(found)) == []
    for name, entry in listed.items():
        assert found[name].stat().st_size == entry["bytes"], name
        assert sha256(found[name]) == entry["sha256"], name


def test_each_listed_net_says_how_to_remake_it() -> None:
    for name, entry in json.loads(MANIFEST.read_text(encoding="utf-8"))["nets"].items():
        config = re.search(r"--config (\S+)", entry["remake"])
        assert config and (ROOT / config.group(1)).is_file(), name
        assert entry["what"] and broken(ROOT / "README.md", entry["details"]) is None, name
