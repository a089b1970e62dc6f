"""The native core's C++ tests and fuzz passes under AddressSanitizer and UBSan.

A separate build (build/sanitize, incremental across runs) of native_tests, the C++ test
driver, runs on a corpus python-chess writes here: positions with their legal moves in
python-chess's order, from the special positions of test_native_chess, positions built around
pins, checks, en passant and promotions, and random games. The driver plays random games from
them, builds random placements and reads garbage FENs, searches random trees alone and in
groups (search/many.h, the driver's gather and apply); any sanitizer report fails the test.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import chess
import pytest

from conftest import ROOT
from frugalzero.chess.native_check import tricky_board
from frugalzero.chess.positions import random_boards
from test_native_chess import SPECIAL_FENS

pytestmark = pytest.mark.slow  # integration: the whole module runs in `make test` only

BUILD = ROOT / "build" / "sanitize"
SANITIZER_ENV = {
    "ASAN_OPTIONS": "halt_on_error=1:abort_on_error=0:detect_leaks=1:strict_string_checks=1",
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
}
REPORTS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


def _tool(name: str) -> str | None:
    """The virtual environment's copy first (pip installs cmake and ninja there), then PATH."""
    local = Path(sys.executable).parent / name
    return str(local) if local.is_file() else shutil.which(name)


@pytest.fixture(scope="module")
def driver() -> Path:
    cmake, ninja, compiler = _tool("cmake"), _tool("ninja"), shutil.which("g++")
    if cmake is None or compiler is None:
        pytest.fail("cmake and g++ are needed (make test installs both)")
    configure = [cmake, "-S", str(ROOT / "native"), "-B", str(BUILD), "-DFZ_PYTHON=OFF"]
    configure += ["-DFZ_TESTS=ON", "-DFZ_SANITIZE=ON", "-DCMAKE_BUILD_TYPE=Debug"]
    if ninja and not (BUILD / "CMakeCache.txt").exists():
        configure += ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"]
    subprocess.run(configure, check=True, capture_output=True, text=True)
    build = [cmake, "--build", str(BUILD), "--target", "native_tests", "--parallel", "2"]
    done = subprocess.run(build, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return BUILD / "native_tests"


def _corpus(path: Path) -> int:
    """FEN, tab, python-chess's legal moves (or '-'), one position a line."""
    rng = random.Random(45)
    boards = [chess.Board(fen) for fen in SPECIAL_FENS]
    while len(boards) < len(SPECIAL_FENS) + 300:
        board = tricky_board(rng)
        if board is not None:
            boards.append(board)
    boards += random_boards(200, seed=45, max_plies=160)
    lines = []
    for board in boards:
        moves = " ".join(move.uci() for move in board.legal_moves) or "-"
        lines.append(f"{board.fen()}\t{moves}")
    path.write_text("\n".join(lines) + "\n")
    return len(lines)


def _run(command: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, **SANITIZER_ENV}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)


def test_native_tests_and_fuzz_passes_run_clean_under_sanitizers(driver: Path, tmp_path: Path):
    corpus = tmp_path / "corpus.txt"
    assert _corpus(corpus) > 500
    done = _run([str(driver), "--corpus", str(corpus), "--seed", "45"])
    output = done.stdout + done.stderr
    assert not any(report in output for report in REPORTS), output[-6000:]
    assert done.returncode == 0, output[-6000:]
    assert "sanitizers: address on, undefined on" in done.stdout
    assert "corpus_positions" in done.stdout and "fuzz_garbage_fens" in done.stdout
    assert "fuzz_search_trees" in done.stdout  # the tree, fed random batches of evaluations
    assert "fuzz_many_trees" in done.stdout  # gather_trees / apply_batch over groups of trees
    assert "fuzz_planes" in done.stdout  # the input planes, from random frames and meta
    assert " 0 failed" in done.stdout.splitlines()[-1]


@pytest.mark.parametrize(
    ("kind", "report"),
    [("address", "ERROR: AddressSanitizer: heap-buffer-overflow"), ("undefined", "runtime error")],
)
def test_the_sanitizers_catch_a_planted_fault(driver: Path, kind: str, report: str):
    """The build really is instrumented: the driver's probe reads past a heap block or
    overflows an int, and the sanitizer stops it."""
    done = _run([str(driver), "--probe", kind])
    assert done.returncode != 0
    assert report in done.stderr
