"""Training positions (``PositionSet``) and selection: exact planes and targets, every position
once an epoch, replay window, holdout, bad data skipped, worker processes."""

from __future__ import annotations

import math

import chess
import numpy as np
import pytest
import torch

from frugalzero.chess.encoding import encode, frames_array
from frugalzero.chess.history import net_input_from_board
from frugalzero.chess.moves import NUM_MOVES, legal_mask
from frugalzero.data.batches import HistoryInputs
from frugalzero.data.records import GameRecord
from frugalzero.data.selection import Selection, replay_window, select_all, split_holdout
from frugalzero.data.shards import ShardWriter, read_shard, write_shard
from frugalzero.data.synthetic import every_kind_games, selfplay_like_games
from frugalzero.train.data import PositionSet
from frugalzero.train.trainer import phase_order

PLAYED = HistoryInputs("always")  # positions as played, the missing steps filled


def expected_samples(games: list[GameRecord]):
    """Planes and targets of every trained position, built the slow, independent way: a
    python-chess board's own move stack, ``legal_mask``, the record's sparse targets."""
    for game in games:
        board = chess.Board(game.start_fen)
        for uci, target in zip(game.moves, game.targets):
            if target is not None:
                inp = net_input_from_board(board)
                planes = encode(frames_array(inp.frames, 1), np.array([inp.meta]), "always")[0]
                policy = np.zeros(NUM_MOVES, np.float32)
                policy[target.policy_indices] = target.policy_probs
                z = math.nan if game.result is None else game.result
                z = z if board.turn == chess.WHITE else -z
                values = [target.search_value, target.expert_value]
                values = [math.nan if v is None else v for v in values]
                wdl = target.expert_wdl or (math.nan,) * 3
                yield planes, legal_mask(board), policy, z, *values, *[x / 1000 for x in wdl]
            board.push_uci(uci)


def flatten(batches):
    fields = ("planes", "legal", "policy", "z", "search_value", "expert_value")
    for batch in batches:
        arrays = [getattr(batch, f).numpy() for f in fields]
        arrays += list(batch.expert_wdl.numpy().T)
        yield from zip(*arrays)


def in_order(sources, batch_size: int = 64) -> list:
    """Every position of ``sources`` replayed once, batched in stored order (shards, games,
    plies): how the trainer reads its validation set."""
    positions = PositionSet.load(sources if isinstance(sources, Selection) else select_all(sources))
    indices = np.arange(len(positions))
    return [
        positions.batch(indices[i : i + batch_size], PLAYED)
        for i in range(0, len(indices), batch_size)
    ]


def test_positions_rebuild_exact_planes_and_targets(tmp_path):
    games = every_kind_games()
    write_shard(tmp_path / "a.fzs", games)
    got = list(flatten(in_order([tmp_path], batch_size=7)))
    want = list(expected_samples(read_shard(tmp_path / "a.fzs")))
    assert len(got) == len(want) == sum(g.positions for g in games)
    for g, w in zip(got, want):
        assert np.array_equal(g[0], w[0])
        assert np.array_equal(g[1], w[1])
        assert np.array_equal(g[2], w[2])
        np.testing.assert_array_equal(np.array(g[3:], np.float32), np.array(w[3:], np.float32))
    assert sum(np.isfinite(g[6]) for g in got) == 1  # the one position with Stockfish's WDL
    policy_sums = np.array([g[2].sum() for g in got])
    assert np.allclose(policy_sums, 1, atol=1e-5)
    assert all(not g[2][~g[1]].any() for g in got)  # no target off the legal moves


def sv_ids(batches) -> list[float]:
    """Synthetic search values are continuous random floats: they identify positions."""
    return [float(v) for b in batches for v in b.search_value]


@pytest.fixture(scope="module")
def shard_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("shards")
    with ShardWriter(out, "w0", games_per_shard=4) as writer:
        for game in selfplay_like_games(16, seed=7):
            writer.add(game)
    return out


def test_an_epoch_batches_every_position_once(shard_dir):
    """The trainer's epoch: its order (``phase_order``) over the replayed positions."""
    positions = PositionSet.load(select_all([shard_dir]))
    ordered = sv_ids([positions.batch(np.arange(len(positions)), PLAYED)])
    assert len(set(ordered)) == len(ordered) == select_all([shard_dir]).positions
    order = phase_order(seed=1, iteration=0, phase="main", epoch=0, size=len(positions))
    batches = [positions.batch(order[i : i + 64], PLAYED) for i in range(0, len(order), 64)]
    shuffled = sv_ids(batches)
    assert sorted(shuffled) == sorted(ordered) and shuffled != ordered
    first = batches[0]
    assert first.planes.shape == (64, 119, 8, 8) and first.planes.dtype == torch.float32
    assert first.planes.is_contiguous(memory_format=torch.channels_last)
    assert first.legal.dtype == torch.bool and first.policy.shape == (64, NUM_MOVES)


def _per_game(shard_dir) -> dict[float, int]:
    """Game number (in stored order) of every position, keyed by its search value."""
    out = {}
    games = [g for p in sorted(shard_dir.glob("*.fzs")) for g in read_shard(p)]
    for number, game in enumerate(games):
        for target in game.targets:
            out[float(np.float32(target.search_value))] = number
    return out


def test_replay_window_takes_the_newest_games(shard_dir):
    everything = select_all([shard_dir])
    window = replay_window([shard_dir], everything.positions // 3)
    assert everything.positions // 3 <= window.positions < everything.positions // 3 + 250
    newest = sv_ids(in_order(window))
    ordered = sv_ids(in_order(everything))
    assert newest == ordered[-len(newest) :]


def test_a_moving_window_replays_only_its_new_games(shard_dir, monkeypatch):
    from frugalzero.data import replay

    everything = select_all([shard_dir])
    older = replay_window([shard_dir], everything.positions * 2 // 3)  # an earlier iteration's
    replayed: dict = {}
    PositionSet.load(older, replayed=replayed)
    assert len(replayed) == older.games
    reads = []
    real = replay.read_columns
    monkeypatch.setattr(replay, "read_columns", lambda path: reads.append(path) or real(path))
    moved = PositionSet.load(everything, replayed=replayed)  # the window took in new games
    assert 0 < len(reads) < 4  # only the shards holding new games were read, of four
    fresh = PositionSet.load(everything)
    # the same positions in the same order as replaying everything, same identity
    assert moved.fingerprint == fresh.fingerprint and len(moved) == len(fresh)
    ids = np.arange(len(fresh))
    assert torch.equal(moved.batch(ids, PLAYED).planes, fresh.batch(ids, PLAYED).planes)
    assert sv_ids([moved.batch(ids, PLAYED)]) == sv_ids([fresh.batch(ids, PLAYED)])
    assert len(replayed) == everything.games
    # the carried games are exactly the last window's: games that left it are dropped
    PositionSet.load(older, replayed=replayed)
    assert len(replayed) == older.games


def test_loading_positions_pauses_the_cycle_collector_and_restores_it(shard_dir):
    import gc

    everything = select_all([shard_dir])
    during: list[bool] = []
    try:
        for enabled_before in (True, False):
            gc.enable() if enabled_before else gc.disable()
            loaded = PositionSet.load(everything, lambda d, t: during.append(gc.isenabled()))
            assert gc.isenabled() is enabled_before
            assert len(loaded) == everything.positions
    finally:
        gc.enable()
    assert during and not any(during)


def test_holdout_is_fixed_whole_games_and_excluded(shard_dir):
    train, holdout = split_holdout([shard_dir], 0.1)
    total = select_all([shard_dir]).positions
    assert train.positions + holdout.positions == total
    assert 0.1 * total <= holdout.positions < 0.1 * total + 250
    again = Selection.from_json(holdout.to_json())
    held = sv_ids(in_order(holdout))
    assert sv_ids(in_order(again)) == held
    trained = sv_ids(in_order(select_all([shard_dir]).without(holdout)))
    assert not set(trained) & set(held)
    assert len(trained) + len(held) == total
    games_of = _per_game(shard_dir)
    assert {games_of[v] for v in held}.isdisjoint({games_of[v] for v in trained})


def test_holdout_floor_takes_whole_games_up_to_a_quarter(shard_dir):
    total = select_all([shard_dir]).positions
    share = 0.02 * total
    plain = split_holdout([shard_dir], 0.02)[1].positions
    floored_train, floored = split_holdout([shard_dir], 0.02, min_positions=int(0.1 * total))
    assert plain < 0.1 * total <= floored.positions < 0.1 * total + 250
    assert floored_train.positions + floored.positions == total
    # the floor never takes more than a quarter, and never applies when nothing is held out
    capped = split_holdout([shard_dir], 0.02, min_positions=10 * total)[1].positions
    assert max(share, total // 4) <= capped < total // 4 + 250
    assert split_holdout([shard_dir], 0.0, min_positions=total)[1].positions == 0


def test_damaged_shard_and_bad_game_are_skipped(tmp_path, capsys):
    games = selfplay_like_games(3, seed=9)
    write_shard(tmp_path / "a.fzs", games[:2])
    bad = write_shard(tmp_path / "b.fzs", games[2:])
    illegal = GameRecord(chess.STARTING_FEN, ["e2e4", "e7e5", "e1e3"], [None] * 3, 1, "pgn")
    illegal.targets = list(games[0].targets[:3])
    write_shard(tmp_path / "c.fzs", [illegal, games[0]])
    data = bytearray(bad.read_bytes())
    data[len(data) // 2] ^= 1
    bad.write_bytes(bytes(data))
    got = sv_ids(in_order([tmp_path]))
    err = capsys.readouterr().err
    assert "b.fzs" in err and "c.fzs: game 0 skipped" in err
    assert len(got) == 2 * games[0].positions + games[1].positions


@pytest.mark.slow
def test_worker_processes_replay_exactly_what_one_process_does(tmp_path, monkeypatch, capsys):
    from frugalzero.data.batches import pack
    from frugalzero.train import data as train_data

    monkeypatch.setattr(train_data, "MIN_GAMES_PER_WORKER", 1)  # tiny data, real processes
    pools = []
    spawn = train_data.mp.get_context
    monkeypatch.setattr(train_data.mp, "get_context", lambda how: pools.append(how) or spawn(how))
    with ShardWriter(tmp_path, "w", games_per_shard=3) as writer:
        for game in [*selfplay_like_games(5, seed=4), *every_kind_games()]:
            writer.add(game)
    illegal = GameRecord(chess.STARTING_FEN, ["e2e4", "e7e5", "e1e3"], [None] * 3, 1, "pgn")
    illegal.targets = list(every_kind_games()[0].targets[:3])
    write_shard(tmp_path / "x-bad-game.fzs", [illegal, *selfplay_like_games(2, seed=8)])
    damaged = write_shard(tmp_path / "y-damaged.fzs", selfplay_like_games(2, seed=3))
    everything = select_all([tmp_path])
    data = bytearray(damaged.read_bytes())  # damaged after it was selected
    data[len(data) // 2] ^= 1
    damaged.write_bytes(bytes(data))
    capsys.readouterr()
    alone = PositionSet.load(everything, workers=0)
    alone_err = capsys.readouterr().err
    carried: dict = {}
    older = Selection(everything.parts[:2])
    PositionSet.load(older, replayed=carried, workers=2)
    seen = []
    together = PositionSet.load(
        everything, lambda d, t: seen.append((d, t)), replayed=carried, workers=2
    )
    err = capsys.readouterr().err
    assert pools == ["spawn", "spawn"]  # both loads with workers went to worker processes
    assert "x-bad-game.fzs: game 0 skipped" in err and err.count("y-damaged.fzs") == 1
    assert alone_err.count("warning") == err.count("warning")
    assert together.skipped_games == alone.skipped_games == 1 + 2
    assert together.fingerprint == alone.fingerprint and len(together) == len(alone) > 0
    assert seen[-1] == (everything.games, everything.games)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert len(carried) == everything.games - 3  # skipped games are not carried
    a, b = pack(alone.samples, PLAYED), pack(together.samples, PLAYED)
    for name in (
        "frames",
        "meta",
        "legal",
        "legal_len",
        "policy_index",
        "policy_prob",
        "policy_len",
    ):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert np.array_equal(a.values, b.values, equal_nan=True)
    assert not np.isnan(a.values[:, 3]).all() and np.isnan(a.values[:, 3]).any()  # WDL both ways
