"""Self-play: records that replay legally, starts (books, odds), resignation, statistics, CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import chess
import numpy as np
import pytest

from conftest import shared_file
from frugalzero.chess.moves import legal_mask, move_to_index
from frugalzero.chess.positions import Opening
from frugalzero.chess.rules import game_ending
from frugalzero.data.records import GameRecord, PlyTarget, one_hot
from frugalzero.data.shards import read_shard
from frugalzero.gamestats import repeated_share_by_ply
from frugalzero.search import Evaluation, SearchConfig
from frugalzero.search.uniform import HashEvaluator, Ready
from frugalzero.selfplay.config import SelfPlayConfig
from frugalzero.selfplay.game import GameStart, game_starts
from frugalzero.selfplay.play import play_games
from frugalzero.selfplay.stats import selfplay_stats


def _config(**overrides) -> SelfPlayConfig:
    search = overrides.pop("search", {})
    return SelfPlayConfig(
        search=SearchConfig(**{"simulations": 12, **search}), **{"max_plies": 40, **overrides}
    )


def _play(config: SelfPlayConfig, evaluator=None) -> list[GameRecord]:
    records: list[GameRecord] = []
    play_games(evaluator or HashEvaluator(), game_starts(config), config, records.append, "test")
    return records


def _check_record(record: GameRecord, config: SelfPlayConfig) -> None:
    """Every move legal, every target over legal moves, the result what the board says."""
    board = chess.Board(record.start_fen)
    history_targets = 0
    for uci, target in zip(record.moves, record.targets):
        move = chess.Move.from_uci(uci)
        assert board.is_legal(move), (record.game_id, uci)
        if target is not None:
            history_targets += 1
            assert legal_mask(board)[target.policy_indices].all()
            assert target.policy_probs.dtype == np.float32
            assert target.policy_probs.sum() == pytest.approx(1.0, abs=1e-5)
            assert -1.0 <= target.search_value <= 1.0
        board.push(move)
    assert history_targets == record.positions
    termination = record.extra["termination"]
    if termination in ("checkmate", "stalemate", "insufficient material", "fifty-move rule"):
        assert game_ending(board, 0)[0] == termination
    if termination == "checkmate":
        assert record.result == (-1.0 if board.turn == chess.WHITE else 1.0)
    elif termination == "move limit":
        assert len(record.moves) == config.max_plies and record.result == 0.0
    elif termination == "resignation":
        assert record.result in (-1.0, 1.0)
    else:
        assert record.result == 0.0


def test_games_replay_legally_and_are_reproducible() -> None:
    config = _config(games=6, concurrent=4, seed=3)
    records = _play(config)
    assert len(records) == 6
    assert sorted(r.game_id for r in records) == [f"s3-g{i}" for i in range(6)]
    for record in records:
        _check_record(record, config)
        assert record.method == "selfplay" and record.net_id == "test"
    again = {r.game_id: r.moves for r in _play(config)}
    assert all(again[r.game_id] == r.moves for r in records)
    # temperature 1 for 30 plies: the games differ from each other
    assert len({tuple(r.moves[:10]) for r in records}) > 1


def test_contempt_and_gumbel_methods() -> None:
    contempt = _config(games=2, concurrent=2, search={"nscl": 3})
    for record in _play(contempt):
        assert record.method == "contempt"
        _check_record(record, contempt)
    gumbel = _config(games=2, concurrent=2, search={"gumbel": True, "simulations": 8})
    for record in _play(gumbel):
        assert record.method == "gumbel"
        _check_record(record, gumbel)
        # the improved policy covers every legal move, not just the visited ones
        board = chess.Board(record.start_fen)
        assert len(record.targets[0].policy_indices) == board.legal_moves.count()


def test_odds_starts_alternate_the_giver() -> None:
    config = _config(games=4, concurrent=4, odds="queen")
    starts = game_starts(config)
    boards = [chess.Board(s.opening.root_fen) for s in starts]
    assert boards[0].piece_at(chess.D1) is None and boards[0].piece_at(chess.D8) is not None
    assert boards[1].piece_at(chess.D8) is None and boards[1].piece_at(chess.D1) is not None
    for record in _play(config):
        _check_record(record, config)
    white_only = _config(games=2, odds="knight", odds_giver="white")
    assert all(
        chess.Board(s.opening.root_fen).piece_at(chess.B1) is None for s in game_starts(white_only)
    )


def test_opening_books_epd_and_pgn() -> None:
    epd = shared_file("openings/2moves_v1.epd")
    pgn = shared_file("openings/8moves_v3.pgn")
    config = _config(games=2, concurrent=2, openings=str(epd), openings_limit=50)
    for record in _play(config):
        assert record.start_fen != chess.STARTING_FEN
        _check_record(record, config)
    config = _config(games=2, concurrent=2, openings=str(pgn), openings_limit=50, max_plies=24)
    for record in _play(config):
        assert record.start_fen == chess.STARTING_FEN
        assert len(record.moves) >= 16 and record.targets[:16] == [None] * 16  # book moves
        assert record.positions == len(record.moves) - 16
        _check_record(record, config)


class _WhiteIsLost:
    """Uniform priors; White is always losing."""

    def submit(self, inputs):
        return Ready(
            [
                Evaluation(
                    np.full(len(i.moves), 1 / len(i.moves)), -0.99 if i.meta[0] == 1 else 0.99
                )
                for i in inputs
            ]
        )


def test_resignation_and_false_resignations() -> None:
    config = _config(games=2, search={"resign_disabled_share": 0.0})
    for record in _play(config, _WhiteIsLost()):
        assert record.extra["termination"] == "resignation" and record.result == -1.0
        assert len(record.moves) == 2  # White resigns at its second move (resign_plies = 2)
    never = _config(games=3, search={"resign_disabled_share": 1.0})
    records = _play(never, _WhiteIsLost())
    for record in records:
        assert record.extra["resign"] == "off" and record.extra["would_resign"] == "white"
        assert record.extra["termination"] != "resignation"
    stats = selfplay_stats(records)
    assert stats["would_resign"] == 3
    expected = sum(r.result != -1.0 for r in records) / 3
    assert stats["false_resignation_rate"] == pytest.approx(expected)


class _WhiteIsWinning:
    """Uniform priors; White is always winning, so Black takes any draw it is offered."""

    def submit(self, inputs):
        return Ready(
            [
                Evaluation(np.full(len(i.moves), 1 / len(i.moves)), 0.9 if i.meta[0] == 1 else -0.9)
                for i in inputs
            ]
        )


SHUFFLE = ("g1f3", "g8f6", "f3g1", "f6g8")
DRAWS = [  # (start, the one ply the game lasts, how it ends)
    (Opening("K1k5/P1Q5/8/8/8/8/8/8 b - - 0 1"), "c8c7", "stalemate"),  # Kxc7 is forced
    (Opening("7k/6Q1/8/8/8/8/8/K7 b - - 0 1"), "h8g7", "insufficient material"),  # forced
    (Opening("8/8/8/8/8/2k5/8/K6R w - - 99 80"), None, "fifty-move rule"),  # any move, no mate
    # the start position seen twice, Black to move: Black, lost everywhere else, repeats it
    (Opening(chess.STARTING_FEN, SHUFFLE + SHUFFLE[:3]), "f6g8", "repetition"),
]


def test_draw_rules_end_self_play_games() -> None:
    """Games started on constructed positions end by the draw rules, scored as draws."""
    starts = [GameStart(i, opening) for i, (opening, _, _) in enumerate(DRAWS)]
    config = _config(
        games=4,
        concurrent=4,
        search={"simulations": 32, "temperature": 0.0, "root_noise": False},
        max_plies=60,
    )
    records = {}
    play_games(_WhiteIsWinning(), starts, config, lambda r: records.update({r.game_id: r}), "t")
    assert len(records) == 4
    for i, (_, move, ending) in enumerate(DRAWS):
        record = records[f"s0-g{i}"]
        _check_record(record, config)
        assert record.extra["termination"] == ending and record.result == 0.0
        assert record.positions == 1  # one searched move, then the rule ended the game
        if move is not None:
            assert record.moves[-1] == move
    board = chess.Board()
    for uci in records["s0-g3"].moves:
        board.push_uci(uci)
    assert board.is_repetition(3) and not board.is_stalemate()


def _record(moves: list[str], result: float, **extra: str) -> GameRecord:
    board = chess.Board()
    targets: list[PlyTarget | None] = []
    for uci in moves:
        move = chess.Move.from_uci(uci)
        targets.append(PlyTarget(*one_hot(move_to_index(move, board.turn)), search_value=0.0))
        board.push(move)
    return GameRecord(chess.STARTING_FEN, moves, targets, result, "selfplay", extra=dict(extra))


def test_statistics_are_computed_from_the_games() -> None:
    a = ["e2e4", "e7e5", "g1f3"]
    records = [
        _record(a, 1.0),
        _record(a, 0.0),  # identical to the first for 3 plies
        _record(["e2e4", "c7c5"], -1.0),  # shares one ply
        _record(["d2d4"], 1.0),
        _record(["d2d4", "d7d5"], 0.0, resign="off", would_resign="black"),  # black drew
        _record(["c2c4"], -1.0, resign="off", would_resign="white"),  # white did lose
    ]
    stats = selfplay_stats(records)
    assert stats["games"] == 6 and stats["positions"] == 12
    assert stats["wdl"] == [2, 2, 2]
    assert stats["w_plus_l_over_d"] == 2.0
    assert stats["mean_length"] == pytest.approx(12 / 6)
    shares = stats["repeated_share_by_ply"]
    assert len(shares) == 30
    assert shares[0] == pytest.approx(5 / 6, abs=1e-4)  # e2e4 x3, d2d4 x2, c2c4 x1
    assert shares[1] == pytest.approx(2 / 6, abs=1e-4)  # only the two "a" games still agree
    assert shares[2:] == [pytest.approx(2 / 6, abs=1e-4)] * 28
    assert stats["would_resign"] == 2 and stats["false_resignation_rate"] == 0.5
    no_draws = selfplay_stats([_record(a, 1.0)])
    assert math.isinf(no_draws["w_plus_l_over_d"])
    assert repeated_share_by_ply([], 3) == [0.0, 0.0, 0.0]


def test_cli_selfplay_json_and_shards(tmp_path: Path, tiny_net, capsys) -> None:
    from frugalzero.cli import main
    from frugalzero.config import load_config
    from frugalzero.nn.checkpoint import save_net

    net = tmp_path / "tiny.safetensors"
    save_net(tiny_net, net)
    out = tmp_path / "games"
    args = ["selfplay", "--net", str(net), "--games", "3", "--out", str(out), "--sims", "8"]
    args += ["--nscl", "4", "--json", "--set", "max_plies=16", "--set", "concurrent=2"]
    args += ["--set", "evaluator.backend=inline", "--set", "evaluator.compile=off"]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    for key in ("games", "positions", "wdl", "w_plus_l_over_d", "repeated_share_by_ply"):
        assert key in result
    assert result["games"] == 3 and sum(result["wdl"]) == 3 and result["method"] == "contempt"
    games = [g for path in result["shards"] for g in read_shard(path)]
    assert len(games) == 3 and sum(g.positions for g in games) == result["positions"]
    (config_file,) = out.glob("*.config.toml")
    saved = load_config(SelfPlayConfig, str(config_file))
    assert saved.search.nscl == 4 and saved.search.simulations == 8 and saved.max_plies == 16
    assert (
        main(["selfplay", "--net", str(net), "--games", "1", "--out", str(out), "--set", "bogus=1"])
        == 2
    )
    assert "bogus" in capsys.readouterr().err


def test_an_opening_the_search_refuses_stops_selfplay_with_one_line(tmp_path, tiny_net, capsys):
    """A book position python-chess reads but calls invalid (two white kings): the search
    has nothing to hand it to, so the command says which position and why, on one line."""
    from frugalzero.cli import main
    from frugalzero.nn.checkpoint import save_net

    net, book = tmp_path / "tiny.safetensors", tmp_path / "odd.epd"
    save_net(tiny_net, net)
    book.write_text('4k3/8/8/8/8/8/8/K3K3 w - - id "two kings";\n')
    args = ["selfplay", "--net", str(net), "--games", "1", "--out", str(tmp_path / "games")]
    args += ["--sims", "4", "--openings", str(book), "--set", "evaluator.backend=inline"]
    assert main([*args, "--set", "evaluator.compile=off"]) == 2
    err = capsys.readouterr().err
    (line,) = [line for line in err.splitlines() if "error" in line]  # beside the progress bar
    fen = "4k3/8/8/8/8/8/8/K3K3 w - - 0 1"
    reason = "invalid position (too_many_kings)"
    assert line == f"frugalzero: error: position not supported by the search: {fen} ({reason})"
    assert "Traceback" not in err


@pytest.mark.slow
def test_two_worker_processes_share_one_inference_process(tmp_path: Path, tiny_net, capsys):
    from frugalzero.cli import main
    from frugalzero.nn.checkpoint import save_net

    net = tmp_path / "tiny.safetensors"
    save_net(tiny_net, net)
    args = ["selfplay", "--net", str(net), "--games", "4", "--out", str(tmp_path), "--sims", "4"]
    args += ["--workers", "2", "--json", "--set", "max_plies=8"]
    args += ["--set", "evaluator.backend=inline", "--set", "evaluator.compile=off"]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["games"] == 4 and result["workers"] == 2
    server = result["server"]  # both workers' leaves, through the one process
    assert server["positions"] > 0 and server["requests"] >= server["batches"] > 0
    ids = sorted(g.game_id for path in result["shards"] for g in read_shard(path))
    assert ids == [f"s0-g{i}" for i in range(4)]


def _bench_selfplay(*extra: str) -> dict:
    """``bench selfplay`` on a tiny net for one short round."""
    import argparse

    from frugalzero.bench import selfplay as bench

    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    args = ["--arch", "tiny", "--games", "8", "--sims", "8", "--rounds", "1", "--seconds", "0.5"]
    args += ["--device", "cpu", "--compile", "off", "--precision", "fp32"]
    result = bench.run(parser.parse_args([*args, *extra]))
    assert result["device"] == "cpu"
    return result


@pytest.mark.slow
def test_bench_selfplay_measures_the_search_against_the_net() -> None:
    result = _bench_selfplay("--backend", "inline")
    assert result["net_positions_per_s"] > 0 and result["evaluator_positions_per_s"] > 0
    for key in ("simulations_per_s", "positions_per_s", "client_cpu_us_per_simulation"):
        assert result[key] > 0
    sims_over_net = result["simulations_per_s"] / result["net_positions_per_s"]
    assert result["sims_over_net"] == pytest.approx(sims_over_net, rel=0.02)
    ratio = result["positions_per_s"] * 8 / result["evaluator_positions_per_s"]
    assert result["ratio"] == pytest.approx(ratio, rel=0.02)
    assert "cores" not in result and "native_over_python" not in result  # one search now
    # the search alone, on answers that cost nothing: its CPU, and faster than with the net
    assert result["search_cpu_us_per_simulation"] > 0
    assert result["simulations_per_s_answers_ready"] > result["simulations_per_s"]


def test_ready_answers_are_the_nets_own_logits_of_each_rows_moves() -> None:
    import torch

    from frugalzero import _native
    from frugalzero.bench.ready import ReadyNet
    from frugalzero.chess.positions import random_boards
    from frugalzero.nn.config import EvaluatorConfig, architecture
    from frugalzero.nn.model import PolicyValueNet
    from frugalzero.search import SearchConfig, new_tree

    torch.manual_seed(0)
    net = PolicyValueNet(architecture("tiny")).eval()
    config = EvaluatorConfig(device="cpu", precision="fp32", compile="off")
    ready = ReadyNet(net, config, cache_size=0, positions=8)
    trees = [new_tree(b, SearchConfig()) for b in random_boards(5, seed=3)]
    batch = _native.LeafBatch()
    assert _native.gather_trees([t.core for t in trees], batch, None) == 5
    logits, values, _ = ready.submit_leaves(batch).result()
    counts, index = batch.counts(), batch.indices(batch.width)
    for row in range(batch.rows):  # rows 0..4 of the table, in turn
        n = int(counts[row])
        assert np.array_equal(logits[row, :n], ready.logits[row, index[row, :n]])
        assert np.all(np.isneginf(logits[row, n:]))
        assert values[row] == ready.values[row]
    assert len(set(map(tuple, ready.logits[:, :50].round(4).tolist()))) == 8  # 8 positions
    assert ready.spent_s > 0


BASELINE = Path(__file__).resolve().parents[1] / "benchmarks/results/native/selfplay-small.json"


def test_bench_selfplay_reads_a_run_against_its_baseline(tmp_path: Path) -> None:
    from frugalzero.bench.selfplay import BASELINE_FIGURES, against_baseline, read_baseline
    from frugalzero.errors import UserError

    then = {"arch": "small", "games": 256, "sims_per_move": 64, "precision": "bf16"}
    then |= {"search_cpu_us_per_simulation": 4.0, "simulations_per_s_answers_ready": 100000.0}
    then |= {"sims_over_net": 0.9, "client_cpu_us_per_simulation": 8.0}
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"commit": "abc1234", "machine": "m", "result": then}))
    record = read_baseline(str(path))
    now = then | {"search_cpu_us_per_simulation": 5.0, "simulations_per_s_answers_ready": 80000.0}
    against = against_baseline(now, record)
    assert (against["commit"], against["machine"]) == ("abc1234", "m")
    assert against["search_cpu_us_per_simulation"] == {
        "baseline": 4.0,
        "now": 5.0,
        "now_over_baseline": 1.25,
    }
    assert against["simulations_per_s_answers_ready"]["now_over_baseline"] == 0.8
    assert against["sims_over_net"]["now_over_baseline"] == 1.0
    assert set(against) == {"commit", "machine", *BASELINE_FIGURES}
    path.write_text(json.dumps(then))  # the bench's own JSON, as --json printed it
    assert against_baseline(now, read_baseline(str(path)))["commit"] is None
    with pytest.raises(UserError, match="measured with sims_per_move 64, this run with 32"):
        against_baseline(now | {"sims_per_move": 32}, record)
    path.write_text(json.dumps({"result": {"arch": "small"}}))
    with pytest.raises(UserError, match="no bench selfplay result"):
        read_baseline(str(path))
    with pytest.raises(UserError, match="cannot read the baseline"):
        read_baseline(str(tmp_path / "missing.json"))


def test_the_committed_baseline_is_bench_selfplay_arch_small() -> None:
    """benchmarks/results/native/selfplay-small.json compares with ``bench selfplay --arch small``
    as it runs by default (the settings it was measured with are those of the command)."""
    import argparse

    from frugalzero.bench import selfplay as bench

    record = bench.read_baseline(str(BASELINE))
    assert record["command"].startswith("frugalzero bench selfplay --arch small")
    assert record["commit"] and record["machine"]
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    args = parser.parse_args(["--arch", "small"])
    defaults = {"arch": args.arch, "games": args.games, "groups": args.groups}
    defaults |= {"batch": args.games // args.groups, "sims_per_move": args.sims}
    assert {key: record["result"][key] for key in defaults} == defaults
    assert record["result"]["method"] == "selfplay" and record["result"]["device"] == "cpu"


@pytest.mark.slow
def test_bench_selfplay_measures_worker_layouts_in_one_run() -> None:
    result = _bench_selfplay("--workers", "1,2")
    one, two = result["workers"]["1"], result["workers"]["2"]
    for layout in (one, two):
        assert layout["simulations_per_s"] > 0 and layout["client_cpu_us_per_simulation"] > 0
        assert 0 < layout["server_busy_share"] <= 1.0 and layout["positions_per_forward"] >= 1
        assert layout["leaves_over_net"] > 0
    speedup = two["simulations_per_s"] / one["simulations_per_s"]
    assert result["speedup_2_over_1"] == pytest.approx(speedup, rel=0.01)


def test_a_lone_self_play_worker_runs_its_network_on_every_core(tmp_path, tiny_net, monkeypatch):
    """The evaluator's default keeps a core for its caller; a lone self-play worker's caller is
    the native search (~1% of a core), so its network gets them all, 1.82x the self-play rate
    on 2 cores (``one_worker_evaluator``). A setting of ``threads`` stands."""
    from frugalzero.nn import evaluator as evaluator_module
    from frugalzero.nn.checkpoint import save_net
    from frugalzero.selfplay import play

    class Stop(Exception):
        pass

    seen: list[int] = []

    def spy(net, config, *args, **kwargs):
        seen.append(config.threads)
        raise Stop  # the settings are what is asked; no network is started

    monkeypatch.setattr(evaluator_module, "Evaluator", spy)
    monkeypatch.setattr(play, "available_cores", lambda: 6)
    net = tmp_path / "tiny.safetensors"
    save_net(tiny_net, net)
    for threads in (0, 1):
        config = SelfPlayConfig(search=SearchConfig(simulations=4), games=1, workers=1)
        config.evaluator.threads = threads
        with pytest.raises(Stop):
            play.run_selfplay(net, config, lambda _: None)
    assert seen == [6, 1]
