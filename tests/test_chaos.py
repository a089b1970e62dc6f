"""The chaos test: a small run killed with SIGKILL at random (seeded) moments, many times, then
resumed to its end, must have exactly the games, positions, nets, matches and metrics rows of
the same run never killed. Also: the time each killed session spent is counted, and game ids
stay unique."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import chess.pgn
import pytest

from frugalzero.runtime.interpreter import own_code_env

RUN = [sys.executable, "-m", "frugalzero", "run"]
# two iterations of Stockfish games (three shards each), training with SWA and frequent
# checkpoints, gating and final matches: every step of a run, each a few seconds
CHAOS = [
    "--preset",
    "smoke",
    *("--set", "budget.iterations=2"),
    *("--set", "generate.games=60"),
    *("--set", "sfgames.max_plies=10"),
    *("--set", "sfgames.engine.nodes=10000"),  # generation long enough to be cut
    *("--set", "train.steps=4"),
    *("--set", "train.swa_cycles=1"),
    *("--set", "train.bn_samples=256"),
    *("--set", "train.log_every=2"),
    *("--set", "train.checkpoint_minutes=0.01"),
    *("--set", "evaluation.games_vs_random=2"),
    *("--set", "evaluation.games_vs_best=2"),
    *("--set", "evaluation.final_games=2"),
    *("--set", "evaluator.backend='inline'"),
]
KILLS = 8
SEED = 48
TIMING = {"time", "generate_s", "train_s", "evaluate_s", "seconds", "samples_per_s", "minutes"}


def _untimed(value: Any) -> Any:
    """``value`` without the keys that measure time (they differ from run to run)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _games(run_dir: Path) -> dict[str, list[tuple]]:
    """Every iteration's training games, in the order training reads them."""
    from frugalzero.data.shards import read_shard, scan_shards

    out: dict[str, list[tuple]] = {}
    for folder in sorted((run_dir / "data").iterdir()):
        games = []
        for info in scan_shards([folder]):
            for g in read_shard(info.path):
                targets = [
                    None
                    if t is None
                    else (
                        t.policy_indices.tolist(),
                        t.policy_probs.tolist(),
                        t.expert_value,
                        t.expert_wdl,
                    )
                    for t in g.targets
                ]
                games.append((g.game_id, g.start_fen, g.moves, targets, g.result))
        out[folder.name] = games
    return out


def _nets(run_dir: Path) -> dict[str, str]:
    from frugalzero.nn.checkpoint import load_net

    return {p.name: load_net(p)[1].net_id for p in sorted((run_dir / "nets").glob("*"))}


def _matches(run_dir: Path) -> dict[str, list[tuple]]:
    """Each match's games by round: moves and results (player names hold the run's path; the
    games are written as they finish, so two games played at once may swap)."""
    out = {}
    for path in sorted((run_dir / "matches").glob("*.pgn")):
        games = []
        with path.open() as handle:
            while (game := chess.pgn.read_game(handle)) is not None:
                moves = [m.uci() for m in game.mainline_moves()]
                headers = game.headers
                games.append((int(headers["Round"]), headers["Result"], headers.get("FEN"), moves))
        out[path.name] = sorted(games)
    return out


def _rows(path: Path) -> list[dict]:
    return [_untimed(json.loads(line)) for line in path.read_text().splitlines()]


def _state(run_dir: Path) -> dict:
    state = json.loads((run_dir / "state.json").read_text())
    keep = ("iteration", "net", "net_id", "games", "positions", "accepted", "score_vs_random")
    return {
        "iteration": state["iteration"],
        "positions": state["positions"],
        "finished": state["finished"],
        "best": state["best"],
        "final": _untimed(state["final"]),
        "iterations": [
            {**{k: r[k] for k in keep}, "validation": r["validation"], "elo": r["elo"]}
            for r in state["iterations"]
        ],
    }


def fingerprint(run_dir: Path) -> dict[str, Any]:
    """What must not depend on kills: games, nets, matches, metrics rows, the state."""
    return {
        "games": _games(run_dir),
        "nets": _nets(run_dir),
        "matches": _matches(run_dir),
        "metrics": _rows(run_dir / "metrics.jsonl"),
        "train_metrics": _rows(run_dir / "train" / "metrics.jsonl"),
        "state": _state(run_dir),
    }


def _start(run_dir: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [*RUN, "--dir", str(run_dir), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: the kill takes its workers too
        env=own_code_env(),
    )


def _finish(proc: subprocess.Popen) -> None:
    _, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err.decode()[-3000:]


STEPS = [(0, "generate"), (0, "train"), (0, "evaluate"), (1, "generate"), (1, "train")]
STEPS += [(1, "evaluate"), (2, "generate")]  # the last: the final matches


def _position(run_dir: Path) -> int:
    """Where the run is, as an index of STEPS (its clock's last tick; -1 before the first)."""
    clock = _read_json(run_dir / "clock.json")
    if clock is None:
        return -1
    here = (clock.get("iteration"), clock.get("step"))
    return STEPS.index(here) if here in STEPS else -1


def _reached(run_dir: Path, target: int) -> bool:
    """Whether the run is past STEPS[target], or in it (for a generation: with a shard
    written, so the kill cuts it part-way)."""
    here = _position(run_dir)
    iteration, step = STEPS[target]
    if here != target or step != "generate" or iteration == 2:
        return here >= target
    return _games_on_disk(run_dir, iteration + 1) > 0


def _games_on_disk(run_dir: Path, iteration: int) -> int:
    from frugalzero.data.shards import scan_shards

    folder = run_dir / "data" / f"iter-{iteration:04d}"
    return sum(i.games for i in scan_shards([folder])) if folder.is_dir() else 0


def _wait(proc: subprocess.Popen, done, seconds: float) -> bool:
    """Wait until ``done()`` or ``seconds`` pass; False when the process ended first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not done():
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    return proc.poll() is None


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


@pytest.mark.slow
@pytest.mark.usefixtures("stockfish")
def test_a_run_killed_many_times_ends_as_the_run_never_killed(tmp_path):
    reference = tmp_path / "reference"
    _finish(_start(reference, *CHAOS))
    expected = fingerprint(reference)

    killed = tmp_path / "killed"
    rng = random.Random(SEED)
    # each kill falls in a step of the run drawn at random (in run order, so every step kind
    # is cut, some twice), at a random moment once the run is seen in it
    targets = sorted(rng.choices(range(len(STEPS)), k=KILLS))
    kills, clocks = [], []
    for session, target in enumerate(targets):
        proc = _start(killed, *CHAOS) if session == 0 else _start(killed)
        reached = _wait(proc, lambda target=target: _reached(killed, target), 300)
        moment = rng.uniform(0.0, 1.0 if STEPS[target][1] == "generate" else 3.0)
        if not (reached and _wait(proc, lambda: False, moment)):
            _finish(proc)  # it ended before this kill
            break
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        state = _read_json(killed / "state.json") or {}
        on_disk = _games_on_disk(killed, state.get("iteration", 0) + 1)
        kills.append((STEPS[target], round(moment, 1), state.get("step"), on_disk))
        if (clock := _read_json(killed / "clock.json")) is not None:
            clocks.append(clock)
    else:
        _finish(_start(killed))
    print("kills (step aimed at, seconds into it, step cut, its iteration's games on disk):")
    print(kills)
    assert len(kills) >= KILLS // 2, f"the run ended after {len(kills)} kills: {kills}"
    # a generation was cut with some of its games written: the resume played only the others
    assert any(step == "generate" and 0 < n < 60 for _, _, step, n in kills), kills

    got = fingerprint(killed)
    for key in expected:
        assert got[key] == expected[key], f"{key} differs after {len(kills)} kills: {kills}"

    # game ids are unique within the run
    ids = [g[0] for games in got["games"].values() for g in games]
    assert len(ids) == len(set(ids)) == 120
    # the time of every killed session is counted: the run's and each step's seconds only grow
    state = json.loads((killed / "state.json").read_text())
    assert all(state["elapsed_s"] >= c["elapsed_s"] for c in clocks)
    for clock in clocks:
        if clock["step"] in ("generate", "train", "evaluate") and clock["iteration"] < 2:
            record = state["iterations"][clock["iteration"]]
            assert record[f"{clock['step']}_s"] >= round(clock["step_s"], 1) - 0.05, clock
