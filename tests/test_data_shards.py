"""Shards: exact round trips, damage detection, atomic writes (also under SIGKILL)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frugalzero.data import codec
from frugalzero.data.records import GameRecord, PlyTarget, one_hot
from frugalzero.data.shards import (
    ShardError,
    ShardWriter,
    read_shard,
    scan_shards,
    shard_paths,
    write_shard,
)
from frugalzero.data.synthetic import every_kind_games, selfplay_like_games
from frugalzero.runtime.interpreter import own_code_env


def assert_same_games(a: list[GameRecord], b: list[GameRecord]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert (x.start_fen, x.moves, x.result, x.method) == (
            y.start_fen,
            y.moves,
            y.result,
            y.method,
        )
        assert (x.net_id, x.game_id, x.extra) == (y.net_id, y.game_id, y.extra)
        for s, t in zip(x.targets, y.targets):
            assert (s is None) == (t is None)
            if s is None:
                continue
            assert np.array_equal(np.asarray(s.policy_indices, np.int64), t.policy_indices)
            assert np.array_equal(np.asarray(s.policy_probs, np.float32), t.policy_probs)
            assert t.policy_probs.dtype == np.float32
            for v, w in ((s.search_value, t.search_value), (s.expert_value, t.expert_value)):
                assert (v is None and w is None) or np.float32(v) == w
            assert s.expert_wdl == t.expert_wdl


def test_round_trip_is_exact(tmp_path):
    games = every_kind_games()
    path = write_shard(tmp_path / "a.fzs", games)
    assert_same_games(games, read_shard(path))
    kinds = set(codec.concat([codec.encode_game(g) for g in games]).arrays["kinds"] & 7)
    assert kinds == {codec.NONE, codec.PLAYED, codec.COUNTS, codec.OTHER, codec.FLOATS}
    assert [t.expert_wdl for g in games for t in g.targets if t and t.expert_wdl] == [
        (412, 500, 88)
    ]
    info = scan_shards([tmp_path])[0]
    assert info.games == len(games)
    assert info.positions == sum(g.positions for g in games)
    assert info.methods == {"selfplay": 3, "eps-explore": 1, "pgn": 1}


def test_visit_counts_are_stored_as_integers():
    probs = (np.array([3, 1, 60]) / 64).astype(np.float32)
    total, counts, ulps = codec.exact_counts(probs)
    assert total == 64 and counts.tolist() == [3, 1, 60] and not ulps.any()
    total, counts, _ = codec.exact_counts(np.array([0.3, 0.7], np.float32))
    assert total == 10 and counts.tolist() == [3, 7]
    assert codec.exact_counts(np.array([0.2137, 0.7863], np.float32)) is None


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 300), min_size=2, max_size=60).filter(lambda c: sum(c) > 0),
    st.sampled_from(["float64", "float32", "twice"]),
)
def test_any_normalisation_of_counts_round_trips_exactly(counts, how):
    """However a producer turned visit counts into float32, the bits come back unchanged."""
    counts = np.array(counts)
    if how == "float64":
        probs = (counts / counts.sum()).astype(np.float32)
    elif how == "float32":
        probs = counts.astype(np.float32) / np.float32(counts.sum())
    else:  # normalised again in float32, as a search may do after dropping zeros
        probs = (counts / counts.sum()).astype(np.float32)
        probs = probs / probs.sum(dtype=np.float32)
    exact = codec.exact_counts(probs)
    if sum(counts) <= 2048:
        assert exact is not None
    if exact is not None:
        total, stored, ulps = exact
        back = codec.counts_to_probs(stored, np.full(len(stored), total), ulps)
        assert back.tobytes() == probs.tobytes()


def test_compact_for_selfplay(tmp_path):
    games = selfplay_like_games(12, seed=1)
    path = write_shard(tmp_path / "s.fzs", games)
    per_position = path.stat().st_size / sum(g.positions for g in games)
    assert per_position <= 64, per_position


def test_bad_records_are_refused():
    good = selfplay_like_games(1, seed=3)[0]
    with pytest.raises(codec.RecordError, match="method"):
        codec.encode_game(GameRecord(good.start_fen, good.moves, good.targets, 1, "magic"))
    bad = GameRecord(good.start_fen, list(good.moves), list(good.targets), 1, "selfplay")
    bad.moves[3] = "zz99"
    with pytest.raises(codec.RecordError, match="ply 3"):
        codec.encode_game(bad)
    bad = GameRecord(good.start_fen, good.moves, list(good.targets), 1, "selfplay")
    bad.targets[0] = PlyTarget(np.array([5000]), np.ones(1, np.float32))
    with pytest.raises(codec.RecordError, match="ply 0"):
        codec.encode_game(bad)
    bad.targets[0] = PlyTarget(*one_hot(0), expert_value=0.1, expert_wdl=(500, 400, 99))
    with pytest.raises(codec.RecordError, match="ply 0: expert_wdl .* does not sum to 1000"):
        codec.encode_game(bad)


def test_shards_from_before_wdl_labels_still_read(tmp_path):
    """A layout without the expert_wdl column (every shard written before it) decodes."""
    columns = codec.concat([codec.encode_game(g) for g in selfplay_like_games(2, seed=4)])
    data, layout = codec.to_bytes(columns)
    del layout["expert_wdl"]
    back = codec.decode_games(codec.from_bytes(data, layout))
    assert_same_games(selfplay_like_games(2, seed=4), back)


@pytest.mark.parametrize("where", ["magic", "header", "payload", "digest", "truncated"])
def test_damage_is_detected_and_skipped(tmp_path, where, capsys):
    games = selfplay_like_games(2, seed=2)
    good = write_shard(tmp_path / "good.fzs", games)
    bad = write_shard(tmp_path / "bad.fzs", games)
    data = bytearray(bad.read_bytes())
    spot = {"magic": 2, "header": 20, "payload": len(data) // 2, "digest": len(data) - 3}
    if where == "truncated":
        data = data[:-100]
    else:
        data[spot[where]] ^= 0x10
    bad.write_bytes(bytes(data))
    with pytest.raises(ShardError, match="bad.fzs"):
        read_shard(bad)
    infos = scan_shards([tmp_path])
    assert [i.path for i in infos] == [good]
    assert "bad.fzs" in capsys.readouterr().err


def test_writer_rolls_over_and_never_overwrites(tmp_path):
    games = selfplay_like_games(5, seed=4)
    with ShardWriter(tmp_path, "w0", games_per_shard=2) as writer:
        for game in games:
            writer.add(game)
    assert [p.name for p in writer.paths] == [f"w0-00000{i}.fzs" for i in range(3)]
    again = ShardWriter(tmp_path, "w0")
    again.add(games[0])
    assert [p.name for p in again.close()] == ["w0-000003.fzs"]
    assert_same_games(games, [g for p in writer.paths for g in read_shard(p)])


def test_writer_keeps_finished_games_on_error(tmp_path):
    games = selfplay_like_games(2, seed=6)
    with pytest.raises(RuntimeError):
        with ShardWriter(tmp_path, "w1") as writer:
            writer.add(games[0])
            raise RuntimeError("worker crashed")
    assert_same_games(games[:1], read_shard(shard_paths([tmp_path])[0]))


_WRITER = """
import os, signal, sys
from frugalzero.data.shards import ShardWriter
from frugalzero.data.synthetic import every_kind_games, selfplay_like_games
games = selfplay_like_games(4, seed=0)
mode = sys.argv[2]
if mode == "fsync":  # die after the data is written, before the shard gets its name
    os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)
writer = ShardWriter(sys.argv[1], "k", games_per_shard=1, level=1)
while True:
    for game in games:
        writer.add(game)
"""


@pytest.mark.parametrize("mode", ["fsync", "random"])
def test_killed_writer_leaves_no_partial_shard(tmp_path, mode):
    script = tmp_path / "writer.py"
    script.write_text(textwrap.dedent(_WRITER))
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, str(script), str(out), mode], env=own_code_env())
    if mode == "random":
        deadline = time.monotonic() + 60
        while len(list(out.glob("*.fzs"))) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL
    visible = shard_paths([out])
    if mode == "fsync":
        assert visible == [] and list(out.iterdir())  # only the hidden temp file is there
    for path in visible:
        read_shard(path)  # every visible shard is whole
    assert len(scan_shards([out])) == len(visible)


def test_concurrent_writers_never_clobber_each_other(tmp_path):
    """Even two writers that (wrongly) share a prefix lose nothing: names are claimed by a
    hard link, which fails instead of replacing an existing shard."""
    import threading

    games = selfplay_like_games(3, seed=8)
    writers = [ShardWriter(tmp_path, "same", games_per_shard=1, level=1) for _ in range(2)]

    def work(writer: ShardWriter) -> None:
        for _ in range(10):
            for game in games:
                writer.add(game)

    threads = [threading.Thread(target=work, args=(w,)) for w in writers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    paths = [p for w in writers for p in w.close()]
    assert len(set(paths)) == len(paths) == 60
    assert sorted(shard_paths([tmp_path])) == sorted(paths)
    assert sum(len(read_shard(p)) for p in paths) == 60
