"""The Stockfish pool against a real Stockfish at tiny limits: labels, crashes, hangs."""

from __future__ import annotations

import os
import signal
import stat
import sys
import time
from concurrent.futures import FIRST_COMPLETED, wait
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest

from frugalzero.chess.moves import move_to_index
from frugalzero.errors import UserError
from frugalzero.expert.engine import EngineConfig
from frugalzero.expert.playout import PlayoutTask
from frugalzero.expert.pool import LabelError, PoolBroken, StockfishPool


def check_playout(record, task: PlayoutTask) -> None:
    """Every engine move legal, labelled with itself (one-hot) and a value in range; the
    game ends by the rules unless it hit the ply cap."""
    assert record.start_fen == task.start_fen
    assert tuple(record.moves[: len(task.moves)]) == task.moves
    assert all(t is None for t in record.targets[: len(task.moves)])
    board = chess.Board(record.start_fen)
    labelled = 0
    for uci, target in zip(record.moves, record.targets):
        move = chess.Move.from_uci(uci)
        assert move in board.legal_moves
        if target is not None:
            labelled += 1
            assert list(target.policy_indices) == [move_to_index(move, board.turn)]
            assert list(target.policy_probs) == [1.0]
            assert target.expert_value is not None and -1.0 <= target.expert_value <= 1.0
        board.push(move)
    assert labelled == len(record.moves) - len(task.moves) > 0
    assert "end" not in record.extra or record.extra["end"].startswith("cut at")
    if record.result is None:
        assert labelled == task.max_plies
    else:
        outcome = board.outcome(claim_draw=True)
        assert outcome is not None
        assert record.result == {True: 1.0, False: -1.0, None: 0.0}[outcome.winner]
    assert len(record.extra["scores"].split()) == labelled


def tasks(count: int, max_plies: int = 60) -> list[PlayoutTask]:
    openings = [("e2e4",), ("d2d4", "g8f6"), ("c2c4", "e7e5", "b1c3"), ("g1f3",)]
    return [
        PlayoutTask(chess.STARTING_FEN, openings[i % 4], game_id=str(i), max_plies=max_plies)
        for i in range(count)
    ]


def test_analyse_labels_positions(stockfish):
    mate_in_one = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"
    board = chess.Board()
    board.push_uci("e2e4")
    with StockfishPool(EngineConfig(nodes=50), size=2) as pool:
        labels = pool.analyse([mate_in_one, board, (chess.STARTING_FEN, ["d2d4", "d7d5"])])
        assert labels[0].move == "a1a8" and labels[0].score == "#1" and labels[0].value == 1.0
        assert chess.Move.from_uci(labels[1].move) in board.legal_moves
        assert -1 < labels[1].value < 1
        with pytest.raises(LabelError, match="illegal move"):
            pool.analyse([(chess.STARTING_FEN, ["e2e5"])])
        assert pool.engine_name.startswith("Stockfish")


@pytest.mark.slow
def test_killed_engines_are_restarted_and_every_position_labelled(stockfish):
    work = tasks(24)
    with StockfishPool(EngineConfig(nodes=30, timeout_s=5), size=2) as pool:
        first = pool.engine_pids()
        futures = [pool.submit(t) for t in work]
        wait(futures, return_when=FIRST_COMPLETED)  # labelling is under way, much is left
        os.kill(first[0], signal.SIGKILL)
        time.sleep(0.05)
        os.kill(first[1], signal.SIGKILL)
        records = [f.result(timeout=60) for f in futures]
        stats = pool.stats()
        assert set(pool.engine_pids()).isdisjoint(first)
    for record, task in zip(records, work):
        check_playout(record, task)
    assert stats["restarts"] >= 2
    assert stats["failed_tasks"] == 0


def _parent(pid: int) -> int:
    """The parent process of ``pid`` (Linux /proc: the field after the command's name)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@pytest.mark.slow
def test_a_dead_worker_process_is_replaced_and_its_tasks_redone(stockfish):
    work = tasks(16)
    with StockfishPool(EngineConfig(nodes=30), size=2) as pool:
        futures = [pool.submit(t) for t in work]
        wait(futures, return_when=FIRST_COMPLETED)
        os.kill(_parent(pool.engine_pids()[0]), signal.SIGKILL)  # the engine's worker
        records = [f.result(timeout=60) for f in futures]
        assert pool.stats()["worker_deaths"] == 1
        assert pool.analyse([chess.STARTING_FEN])[0].move  # both slots work again
    for record, task in zip(records, work):
        check_playout(record, task)


HANGING_ENGINE = """#!{python}
# Stockfish behind a pipe that stops answering after a few searches, once (a marker file
# remembers), like an engine stuck in a deadlock.
import os, subprocess, sys, threading

engine = subprocess.Popen([{stockfish!r}], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True, bufsize=1)
hung = threading.Event()

def pump():
    for line in engine.stdout:
        if not hung.is_set():
            sys.stdout.write(line)
            sys.stdout.flush()

threading.Thread(target=pump, daemon=True).start()
searches = 0
for line in sys.stdin:
    if line.startswith("go"):
        searches += 1
        if searches == 12 and not os.path.exists({marker!r}):
            open({marker!r}, "w").close()
            hung.set()
    if not hung.is_set():
        engine.stdin.write(line)
        engine.stdin.flush()
"""


@pytest.mark.slow
def test_a_hung_engine_is_killed_and_its_position_retried(stockfish, tmp_path):
    marker = tmp_path / "hung-once"
    script = tmp_path / "hanging-engine"
    script.write_text(
        HANGING_ENGINE.format(python=sys.executable, stockfish=stockfish, marker=str(marker))
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    work = tasks(2, max_plies=20)
    config = EngineConfig(command=str(script), nodes=30, timeout_s=2.0)
    with StockfishPool(config, size=1) as pool:
        records = [f.result(timeout=60) for f in [pool.submit(t) for t in work]]
        stats = pool.stats()
    assert marker.exists()
    assert stats["timeouts"] >= 1 and stats["restarts"] >= 1
    for record, task in zip(records, work):
        check_playout(record, task)


def test_an_engine_that_cannot_be_restarted_stops_the_pool(stockfish, tmp_path):
    marker = tmp_path / "started-once"
    script = tmp_path / "one-shot-engine"
    script.write_text(f"#!/bin/sh\n[ -e {marker} ] && exit 1\ntouch {marker}\nexec {stockfish}\n")
    script.chmod(0o755)
    config = EngineConfig(command=str(script), nodes=30, timeout_s=2, retries=1)
    with StockfishPool(config, size=1) as pool:
        os.kill(pool.engine_pids()[0], signal.SIGKILL)
        future = pool.submit(tasks(1)[0])
        with pytest.raises(PoolBroken, match="cannot be restarted"):
            future.result(timeout=30)
        with pytest.raises(PoolBroken):
            pool.submit(tasks(1)[0]).result(timeout=5)


def test_engine_that_cannot_start_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="not found"):
        StockfishPool(EngineConfig(command="no-such-engine-xyz"), size=1)
    broken = tmp_path / "broken-engine"
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    with pytest.raises(UserError, match="failed to start"):
        StockfishPool(EngineConfig(command=str(broken), timeout_s=2), size=1)


def test_map_unordered_bounds_the_work_in_flight(stockfish):
    counts = {"drawn": 0, "done": 0, "peak": 0}

    def source():
        for task in tasks(20, max_plies=8):
            counts["drawn"] += 1
            counts["peak"] = max(counts["peak"], counts["drawn"] - counts["done"])
            yield task

    with StockfishPool(EngineConfig(nodes=10), size=2) as pool:
        seen = []
        for task, future in pool.map_unordered(source(), max_pending=3):
            counts["done"] += 1
            seen.append(task.game_id)
            assert 0 < future.result().positions <= 8
    assert sorted(seen, key=int) == [str(i) for i in range(20)]
    assert counts["peak"] == 3  # memory stays flat however many tasks the source has


def test_multipv_labels_spread_the_policy_over_the_engines_candidates(stockfish):
    """With MultiPV 4 each label is a softmax over four scored candidates, the played move
    first and most probable; a colder temperature sharpens it."""
    from frugalzero.expert.playout import soft_target

    config = EngineConfig(nodes=400, multipv=4, policy_temperature=50.0)
    with StockfishPool(config, size=1) as pool:
        (task,) = tasks(1, max_plies=6)
        record = pool.submit(task).result()
    board = chess.Board(record.start_fen)
    for move in record.moves[: len(task.moves)]:
        board.push_uci(move)
    for uci, target in zip(record.moves[len(task.moves) :], record.targets[len(task.moves) :]):
        move = chess.Move.from_uci(uci)
        legal = {move_to_index(m, board.turn) for m in board.legal_moves}
        assert len(target.policy_indices) == 4 and set(target.policy_indices) <= legal
        assert abs(float(target.policy_probs.sum()) - 1.0) < 1e-6
        assert target.policy_indices[0] == move_to_index(move, board.turn)
        assert target.policy_probs.argmax() == 0 and target.expert_value is not None
        board.push(move)
    cp = chess.engine.Cp
    start = chess.Board()
    lines = [(chess.Move.from_uci(u), chess.engine.PovScore(cp(s), chess.WHITE)) for u, s in
             (("e2e4", 40), ("d2d4", 30), ("a2a3", -60))]  # fmt: skip
    _, warm = soft_target(start, lines, 50.0)
    _, cold = soft_target(start, lines, 5.0)
    assert warm[1] / warm[0] == pytest.approx(np.exp(-10 / 50)) and cold[0] > warm[0]
    mate = [(chess.Move.from_uci("d2d4"), chess.engine.PovScore(chess.engine.Mate(3), True))]
    _, only = soft_target(start, mate + lines, 50.0)
    assert only[0] == pytest.approx(1.0)
