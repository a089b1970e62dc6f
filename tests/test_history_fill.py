"""One history rule for every input the network sees (issue 69): missing history steps are
filled (or not) as the net was trained, by both doors to the planes, for play and training
alike, and every path that builds network inputs goes through them."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import chess
import numpy as np
import pytest
import torch

from frugalzero.chess.encoding import (
    HISTORY,
    LEGACY_HISTORY_FILL,
    encode,
    fill_history,
    frames_array,
)
from frugalzero.chess.history import GameHistory, net_input_from_board
from frugalzero.data.batches import HistoryInputs
from frugalzero.data.records import GameRecord, PlyTarget
from frugalzero.data.selection import select_all
from frugalzero.data.shards import write_shard
from frugalzero.nn.checkpoint import NetFileError, load_net, save_net
from frugalzero.nn.config import EvaluatorConfig, architecture
from frugalzero.nn.evaluator import Evaluator, pack_inputs
from frugalzero.nn.model import PolicyValueNet
from frugalzero.nn.planes import encode_on, frames_bytes
from frugalzero.train.data import PositionSet

SRC = Path(__file__).resolve().parents[1] / "src" / "frugalzero"
RUY = "r1bqkbnr/1ppp1ppp/p1n5/1B2p3/4P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 0 4"


def _frames(board: chess.Board) -> np.ndarray:
    return frames_array(net_input_from_board(board).frames, 1).copy()


def _played(*san: str) -> chess.Board:
    board = chess.Board()
    for move in san:
        board.push_san(move)
    return board


def test_always_repeats_the_oldest_known_position_without_its_repetitions():
    board = _played("Nf3", "Nf6", "Ng1", "Ng8")  # the start position again: a repetition
    frames = _frames(board)
    assert frames[0, 0, 12] == 1 and not frames[0, 5:].any()  # 5 known steps, 3 missing
    filled = fill_history(frames, "always")
    oldest = frames[0, 4].copy()
    assert (filled[0, :5] == frames[0, :5]).all()  # known steps untouched
    assert all((filled[0, k, :12] == oldest[:12]).all() for k in range(5, HISTORY))
    assert not filled[0, 5:, 12].any()  # a copy is no repetition
    assert not frames[0, 5:].any()  # the input is never changed


def test_fen_only_leaves_games_from_the_start_position_alone():
    from_start = _frames(_played("e4", "e5"))
    from_fen = _frames(chess.Board(RUY))
    both = np.concatenate([from_start, from_fen])
    filled = fill_history(both, "fen_only")
    assert (filled[0] == from_start[0]).all()  # oldest known is the start position
    assert filled[1, 1:, :12].any(axis=1).all()  # a FEN's missing steps are filled
    assert (fill_history(both, "always")[0, 3:, :12] == from_start[0, 2, :12]).all()
    assert fill_history(both, "no") is both
    # a FEN of the start position is the start position: fen_only does not fill it (as lc0)
    assert not fill_history(_frames(chess.Board(chess.STARTING_FEN)), "fen_only")[0, 1:].any()


def test_rows_with_every_step_known_are_returned_as_they_are():
    full = _frames(_played("e4", "e5", "Nf3", "Nc6", "Bb5", "a6", "Ba4", "Nf6"))
    assert full[0, :, :12].any(axis=1).all()
    assert fill_history(full, "always") is full
    with pytest.raises(ValueError, match="history fill 'sometimes'"):
        fill_history(full, "sometimes")  # type: ignore[arg-type]


def test_both_doors_to_the_planes_apply_the_rule_alike():
    boards = [chess.Board(RUY), chess.Board(), _played("d4", "d5", "c4")]
    frames, meta, _, _ = pack_inputs([net_input_from_board(b) for b in boards])
    for rule in ("always", "fen_only", "no"):
        host = encode(frames, meta, rule)
        device = encode_on(frames_bytes(frames, rule), torch.from_numpy(meta))
        assert np.array_equal(device.numpy(), host), rule
        assert np.array_equal(host, encode(fill_history(frames, rule), meta, "no")), rule
    assert not np.array_equal(encode(frames, meta, "always"), encode(frames, meta, "no"))


def _fen_game() -> GameRecord:
    """A game that starts at a FEN (as a book's games do), every position trained."""
    board, moves, targets = chess.Board(RUY), [], []
    for uci in ("b5a4", "g8f6", "e1g1", "f8e7", "f1e1"):
        move = chess.Move.from_uci(uci)
        assert board.is_legal(move)
        from frugalzero.chess.moves import move_to_index

        index = np.array([move_to_index(move, board.turn)])
        targets.append(PlyTarget(index, np.array([1.0], np.float32), 0.1, 0.2))
        moves.append(uci)
        board.push(move)
    return GameRecord(RUY, moves, targets, 0.0, "sfgames")


def test_training_and_play_build_the_same_planes_for_the_same_position(tmp_path):
    """A position of a game that began at a FEN: its training batch (replayed from the
    record) and what play sends the network for it (the game's history, or the native
    search's rows) are the same planes, under each rule."""
    from frugalzero.chess.native import native_history

    write_shard(tmp_path / "g.fzs", [_fen_game()])
    positions = PositionSet.load(select_all([tmp_path]))
    assert len(positions) == 5
    history = GameHistory(chess.Board(RUY))
    for ply, uci in enumerate(_fen_game().moves):
        inp = history.net_input()
        native = native_history(history).frames()
        assert bytes(native) == inp.frames  # the core's rows, the Python history's
        for rule in ("always", "fen_only", "no"):
            trained = positions.batch(np.array([ply]), HistoryInputs(rule)).planes.numpy()
            played = encode(frames_array(inp.frames, 1), np.array([inp.meta]), rule)
            assert np.array_equal(trained, played), (ply, rule)
        history.push(chess.Move.from_uci(uci))


def test_truncation_cuts_the_oldest_steps_of_a_drawn_share_and_is_a_function_of_the_seed():
    full = np.repeat(_frames(_played("e4", "e5", "Nf3", "Nc6", "Bb5", "a6", "Ba4", "Nf6")), 400, 0)
    cut = HistoryInputs("always", truncate=0.25).cut(full, seed=7)
    known = cut[:, :, :12].any(axis=2)
    kept = known.sum(axis=1)
    assert (known == (np.arange(HISTORY)[None, :] < kept[:, None])).all()  # newest kept
    share = float(np.mean(kept < HISTORY))
    assert 0.18 < share < 0.32  # about a quarter, each dropping 1-7 steps
    assert set(kept[kept < HISTORY].tolist()) == set(range(1, HISTORY))
    assert np.array_equal(cut, HistoryInputs("always", truncate=0.25).cut(full, seed=7))
    assert not np.array_equal(cut, HistoryInputs("always", truncate=0.25).cut(full, seed=8))
    assert HistoryInputs("always").cut(full, seed=7) is full


def test_a_nets_file_records_its_rule_and_an_old_file_reads_with_the_measured_one(tmp_path):
    net = PolicyValueNet(architecture("tiny", history_fill="fen_only"))
    path = tmp_path / "n.safetensors"
    save_net(net, path)
    loaded, meta = load_net(path)
    assert loaded.config.history_fill == "fen_only"
    header = json.loads(_metadata(path)["frugalzero"])
    assert header["encoding"]["history_fill"] == "fen_only"
    assert "history_fill" not in header["architecture"] and "history_fill" not in meta.encoding
    # a file written before the field: the rule measured best for such nets
    old = tmp_path / "old.safetensors"
    _rewrite(path, old, lambda h: h["encoding"].pop("history_fill"))
    assert load_net(old)[0].config.history_fill == LEGACY_HISTORY_FILL == "always"
    bad = tmp_path / "bad.safetensors"
    _rewrite(path, bad, lambda h: h["encoding"].update(history_fill="sometimes"))
    with pytest.raises(NetFileError, match="field encoding.history_fill is 'sometimes'"):
        load_net(bad)


def _metadata(path: Path) -> dict:
    from safetensors import safe_open

    with safe_open(str(path), "pt") as handle:
        return handle.metadata()


def _rewrite(src: Path, dst: Path, change) -> None:
    """``src`` with its metadata changed by ``change`` and re-signed, as an older frugalzero
    (or a hand edit) would have written it."""
    from safetensors.torch import load_file, save_file

    from frugalzero.nn.checkpoint import _checksum, _digest

    meta = json.loads(_metadata(src)["frugalzero"])
    change(meta)
    tensors = load_file(str(src))
    checksum = _checksum(meta, _digest(tensors).hexdigest())
    save_file(tensors, str(dst), metadata={"frugalzero": json.dumps(meta), "checksum": checksum})


@pytest.mark.parametrize("backend", ["inline", "process"])
def test_the_evaluator_encodes_with_the_nets_rule_unless_told_otherwise(backend):
    torch.manual_seed(3)
    net = PolicyValueNet(architecture("tiny", history_fill="always")).eval()
    board = chess.Board(RUY)
    frames, meta, _, _ = pack_inputs([net_input_from_board(board)])
    with torch.no_grad():
        want = {
            rule: float(net(torch.from_numpy(encode(frames, meta, rule)))[1][0, 0])
            for rule in ("always", "no")
        }
    assert abs(want["always"] - want["no"]) > 1e-4  # the rule matters to this net
    base = EvaluatorConfig(backend=backend, precision="fp32", compile="off", cache_size=0)
    for setting, rule in (("net", "always"), ("no", "no"), ("always", "always")):
        config = EvaluatorConfig(**{**base.__dict__, "history_fill": setting})
        with Evaluator(net, config) as evaluator:
            got = evaluator.evaluate([board])[0].value
        assert got == pytest.approx(np.tanh(want[rule]), abs=1e-4), setting


@pytest.mark.parametrize("name", ["default", "small"])
def test_the_start_position_is_level_for_both_shipped_nets_with_or_without_moves(name):
    from frugalzero.nn.shipped import resolve_net_path

    net, _ = load_net(resolve_net_path(name))
    assert net.config.history_fill == "always"  # an old file: the measured rule
    config = EvaluatorConfig(backend="inline", precision="fp32", compile="off")
    with Evaluator(net, config) as evaluator:
        values = [
            e.value for e in evaluator.evaluate([chess.Board(), chess.Board(chess.STARTING_FEN)])
        ]
    assert all(abs(v) <= 0.25 for v in values), values


# Every door to the network's input planes, and what may pass through it. A new call of
# either encoder, or of the native one, must be added here with where its rule comes from.
DOORS = {"encode", "frames_bytes"}
LITERAL_RULE_ALLOWED = {("nn/quantize.py", "lower_int8")}  # a tracing example: shape only


def _calls(tree: ast.AST):
    for func in ast.walk(tree):
        if isinstance(func, ast.FunctionDef):
            for node in ast.walk(func):
                if isinstance(node, ast.Call):
                    yield func.name, node


def test_every_path_that_builds_network_inputs_passes_a_history_rule():
    """Statically, over the package: the planes are built only by ``encode`` and
    ``frames_bytes`` (the native encoder is called by ``encode`` alone), and every call passes
    a rule taken from a net, a runner or a batch, never a literal (nor none)."""
    seen = 0
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        text = path.read_text()
        if "encode_planes" in text:
            assert rel == "chess/encoding.py", f"{rel} calls the native encoder itself"
        for func, call in _calls(ast.parse(text)):
            name = getattr(call.func, "id", getattr(call.func, "attr", None))
            if name not in DOORS or rel in ("chess/encoding.py", "nn/planes.py"):
                continue
            if name == "encode" and not isinstance(call.func, ast.Name):
                continue  # str.encode and the like
            seen += 1
            want = 3 if name == "encode" else 2
            rule = call.args[want - 1] if len(call.args) >= want else None
            rule = rule or next((k.value for k in call.keywords if k.arg == "history_fill"), None)
            assert rule is not None, f"{rel}:{call.lineno}: {name}() without a history rule"
            if isinstance(rule, ast.Constant):
                assert (rel, func) in LITERAL_RULE_ALLOWED, (
                    f"{rel}:{call.lineno}: {name}() with the literal rule {rule.value!r}"
                )
    assert seen >= 7  # runner (2), training (2), calibration (2), export, throughput


@pytest.mark.slow
def test_the_uci_engine_values_the_start_position_level_and_history_fill_changes_the_rule():
    """``position startpos`` and ``position fen`` of it through the engine's own evaluator
    (the net's rule), then ``HistoryFill no`` built and taken between searches."""
    from frugalzero.uci import NetSearcher
    from frugalzero.uci.protocol import parse_position
    from frugalzero.uci.searcher import searcher_options

    lines = [o.line() for o in searcher_options(8) if o.name == "HistoryFill"]
    assert lines == [
        "option name HistoryFill type combo default net var net var always var fen_only var no"
    ]
    boards = [
        parse_position(text.split(), chess.Board())[0]
        for text in ("startpos", f"fen {chess.STARTING_FEN}")
    ]
    searcher = NetSearcher("small", default_nodes=8)
    try:
        level = [e.value for e in searcher.settle().evaluate(boards)]
        assert all(abs(v) <= 0.25 for v in level), level
        searcher.set_option("HistoryFill", "no")
        evaluator = searcher.settle()
        assert evaluator.config.history_fill == "no"
        assert all(e.value < -0.9 for e in evaluator.evaluate(boards))  # as it was before
    finally:
        searcher.close()
