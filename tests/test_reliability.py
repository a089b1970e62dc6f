"""Faults and bad input, probed as a hostile user would (docs/reliability.md lists what each
test holds): a run's identity, one writer per directory, numbers checked where they enter,
nets that are not finite, one line for every file the machine refuses, damaged input files,
and the bookkeeping of a killed run. The run killed many times is tests/test_chaos.py."""

from __future__ import annotations

import bz2
import dataclasses
import errno
import gzip
import json
import lzma
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import save as st_save

from frugalzero.cli import main
from frugalzero.config import load_config
from frugalzero.data import codec
from frugalzero.data.records import GameRecord
from frugalzero.data.shards import MAGIC, ShardError, shard_bytes, shard_info, write_shard
from frugalzero.data.synthetic import selfplay_like_games
from frugalzero.errors import UserError
from frugalzero.expert.sfgames import InOrder
from frugalzero.layout import RunLayout
from frugalzero.nn.checkpoint import NetFileError, NetMeta, load_net, save_net
from frugalzero.nn.config import architecture
from frugalzero.nn.model import PolicyValueNet
from frugalzero.pipeline.clock import RunClock
from frugalzero.pipeline.config import RunConfig
from frugalzero.pipeline.generate import GAMES_PER_SHARD
from frugalzero.pipeline.identity import open_run
from frugalzero.pipeline.state import IterationRecord, RunState
from frugalzero.runtime.files import atomic_write_text
from frugalzero.runtime.interpreter import own_code_env
from frugalzero.runtime.lock import DirectoryLock

GAME = '[Event "g{i}"]\n[Result "1-0"]\n\n1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0\n\n'


def _error(capsys, argv: list[str], code: int = 2) -> str:
    """The one line a refused command ends with (a progress bar may stand above it; no
    traceback)."""
    capsys.readouterr()
    assert main(argv) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert [line for line in err if "error" in line.lower()] == err[-1:], err
    assert err[-1].startswith("frugalzero: error: ") and "Traceback" not in " ".join(err)
    return err[-1]


# -- 1. a run's identity --------------------------------------------------------------------


@pytest.fixture()
def stopped_run(tmp_path) -> Path:
    """A run directory as its first start leaves it (config.toml, then state.json)."""
    run_dir = tmp_path / "run"
    open_run(RunLayout(run_dir), load_config(RunConfig, "smoke"))
    return run_dir


def test_a_resume_refuses_every_flag_that_would_change_the_run(stopped_run, capsys):
    config = (stopped_run / "config.toml").read_bytes()
    line = _error(capsys, ["run", "--dir", str(stopped_run), "--set", "net.arch=small"])
    assert 'net.arch: this run was made with "tiny"' in line
    assert f'--config {stopped_run / "config.toml"} --set net.arch="small" --dir' in line
    line = _error(capsys, ["run", "--dir", str(stopped_run), "--method", "selfplay"])
    assert 'method: this run was made with "sfgames"' in line
    line = _error(capsys, ["run", "--dir", str(stopped_run), "--set", "budget.iterations=3"])
    assert "budget.iterations: this run was made with 2" in line
    assert (stopped_run / "config.toml").read_bytes() == config  # never rewritten
    # the same values, and where the work runs, are no change
    same = load_config(RunConfig, "smoke", ["ray=local"])
    open_run(RunLayout(stopped_run), same)


def test_a_missing_or_edited_config_is_refused_not_replaced(stopped_run, capsys):
    path = stopped_run / "config.toml"
    text = path.read_text()
    path.write_text(text.replace("iterations = 2", "iterations = 5"))
    line = _error(capsys, ["run", "--dir", str(stopped_run)])
    assert "changed since the run started" in line and f"--config {path}" in line
    path.unlink()
    line = _error(capsys, ["run", "--dir", str(stopped_run)])
    assert f"{path}: missing" in line
    assert not path.exists()  # not replaced by the defaults
    (stopped_run / "state.json").unlink()
    (stopped_run / "nets").mkdir()
    line = _error(capsys, ["run", "--dir", str(stopped_run)])
    assert "holds a run's nets but no state.json or config.toml" in line


# -- 2. one writer per directory --------------------------------------------------------------


def test_a_second_writer_is_refused_with_the_holders_pid(tmp_path, capsys):
    run_dir, out = tmp_path / "run", tmp_path / "games"
    code = (
        "import sys, time\n"
        "from frugalzero.runtime.lock import DirectoryLock\n"
        "locks = [DirectoryLock(p).acquire() for p in sys.argv[1:]]\n"
        "print('held', flush=True)\n"
        "time.sleep(120)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(run_dir), str(out)],
        stdout=subprocess.PIPE,
        text=True,
        env=own_code_env(),
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        for argv in (
            ["run", "--preset", "smoke", "--dir", str(run_dir)],
            ["sfgames", "--games", "2", "--out", str(out)],
            ["import-pgn", str(tmp_path / "none.pgn"), "--out", str(out)],
        ):
            line = _error(capsys, argv)
            assert f"in use by another frugalzero command (pid {holder.pid})" in line, argv
        assert not (run_dir / "config.toml").exists()  # the refused run wrote nothing
    finally:
        holder.kill()
        holder.wait()
    with DirectoryLock(run_dir):  # the lock ended with its holder (kill -9 too)
        pass


# -- 3. nets whose weights are not finite -----------------------------------------------------


def _nan_net_file(path: Path) -> None:
    """A network file with a NaN weight and a valid checksum (as a diverged run wrote)."""
    from frugalzero.nn import checkpoint

    net = PolicyValueNet(architecture("tiny"))
    with torch.no_grad():
        next(net.parameters())[0, 0, 0, 0] = float("nan")
    tensors = {k: v.contiguous() for k, v in net.state_dict().items()}
    meta = NetMeta(net.config)
    meta.net_id = checkpoint._digest(tensors).hexdigest()[:16]
    body = meta.to_json()
    checksum = checkpoint._checksum(body, checkpoint._digest(tensors).hexdigest())
    header = {checkpoint._META_KEY: json.dumps(body), "checksum": checksum}
    path.write_bytes(st_save(tensors, metadata=header))


def test_nets_that_are_not_finite_are_refused_on_load_and_on_save(tmp_path, capsys):
    bad = tmp_path / "nan.safetensors"
    _nan_net_file(bad)
    line = _error(capsys, ["net", "info", str(bad)])
    assert str(bad) in line and "not finite" in line
    with pytest.raises(NetFileError, match="not finite"):
        load_net(bad)  # every loader goes through load_net: uci, match, train --net, ...
    net = PolicyValueNet(architecture("tiny"))
    with torch.no_grad():
        next(net.parameters()).fill_(float("inf"))
    with pytest.raises(NetFileError, match="not finite"):
        save_net(net, tmp_path / "inf.safetensors")
    assert not list(tmp_path.glob("*inf*"))  # nothing written, no temporary left


@pytest.mark.slow
def test_a_diverging_training_stops_with_one_line_and_writes_no_net(tmp_path, capsys):
    shards = tmp_path / "shards"
    write_shard(shards / "a.fzs", selfplay_like_games(4, seed=1))
    out = tmp_path / "net.safetensors"
    argv = ["train", "--data", str(shards), "--arch", "tiny", "--out", str(out)]
    argv += ["--steps", "4", "--swa-cycles", "0", "--set", "batch_size=32", "--set", "log_every=1"]
    line = _error(capsys, [*argv, "--lr", "inf"])
    assert "lr: inf is not a finite number" in line
    line = _error(capsys, [*argv, "--lr", "1e30"])
    assert "training diverged" in line and "no net written" in line
    run = tmp_path / "net.run"
    assert not out.exists() and not (run / "net.safetensors").exists()


# -- 5. one line for every file operation the machine refuses --------------------------------


def test_a_path_that_cannot_be_written_is_one_line_naming_it(tmp_path, capsys, stopped_run):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for argv in (
        ["net", "new", "--arch", "tiny", "--out", str(blocker / "x.safetensors")],
        ["run", "--preset", "smoke", "--dir", str(blocker / "run")],
        ["import-pgn", str(blocker), "--out", str(blocker / "shards")],
        ["report", str(stopped_run), "--out", str(blocker / "report.html")],
    ):
        line = _error(capsys, argv, code=1)
        assert f"cannot create the directory {blocker}" in line, argv
    epd = tmp_path / "one.epd"
    epd.write_text("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - bm e5;\n")
    folder = tmp_path / "folder"
    folder.mkdir()
    for argv in (
        ["eval-epd", str(epd), "--engine", "random", "--write", str(folder)],
        ["match", "random", "random", "--games", "2", "--pgn", str(folder)],
    ):
        line = _error(capsys, argv, code=1)  # before the games are played
        assert line.endswith(f"cannot write {folder}: Is a directory"), argv


@pytest.mark.parametrize(
    ("code", "reason"),
    [(errno.ENOSPC, "No space left on device"), (errno.EROFS, "Read-only file system")],
)
def test_a_full_or_read_only_disk_is_one_line_and_loses_nothing(
    tmp_path, capsys, monkeypatch, code, reason
):
    path = tmp_path / "state.json"
    atomic_write_text(path, "the old state")

    def refuse(fd):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "fsync", refuse)
    line = _error(capsys, ["net", "new", "--arch", "tiny", "--out", str(tmp_path / "n")], code=1)
    assert line == f"frugalzero: error: cannot write {tmp_path / 'n'}: {reason}"
    with pytest.raises(OSError):
        atomic_write_text(path, "the new state")
    monkeypatch.undo()
    assert path.read_text() == "the old state"  # the old file whole, no temporary beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


# -- 6. damaged input files -------------------------------------------------------------------


def _import(capsys, tmp_path, file: Path) -> tuple[int, dict]:
    capsys.readouterr()
    argv = ["import-pgn", str(file), "--out", str(tmp_path / f"out-{file.name}")]
    code = main([*argv, "--workers", "1", "--json"])
    captured = capsys.readouterr()
    return code, {"summary": json.loads(captured.out), "err": captured.err}


def test_a_cut_gzip_keeps_and_counts_the_games_before_the_cut(tmp_path, capsys):
    data = gzip.compress("".join(GAME.format(i=i) for i in range(400)).encode())
    cut = tmp_path / "cut.pgn.gz"
    cut.write_bytes(data[: len(data) // 2])
    code, got = _import(capsys, tmp_path, cut)
    summary = got["summary"]
    assert code == 1 and f"{cut}: damaged" in got["err"]
    assert [d["file"] for d in summary["damaged_files"]] == [str(cut)]
    assert 50 < summary["imported"] < 400  # the games before the cut, in the shards
    assert summary["games"] == summary["imported"] + summary["skipped"]


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_a_file_not_in_its_names_format_is_named(tmp_path, capsys, suffix):
    fake = tmp_path / f"games.pgn{suffix}"
    fake.write_text(GAME.format(i=0))
    code, got = _import(capsys, tmp_path, fake)
    assert code == 1 and f"{fake}: damaged" in got["err"]
    assert got["summary"]["games"] == 0 and got["summary"]["damaged_files"][0]["file"] == str(fake)
    real = tmp_path / f"real.pgn{suffix}"
    opener = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}[suffix]
    real.write_bytes(opener(GAME.format(i=0).encode()))
    code, got = _import(capsys, tmp_path, real)
    assert code == 0 and got["summary"]["imported"] == 1


def test_a_two_megabyte_header_line_skips_its_game_once(tmp_path, capsys):
    big = '[Event "' + "x" * 2_000_000 + '"]\n[Result "1-0"]\n\n1. e4 e5 1-0\n\n'
    pgn = tmp_path / "big.pgn"
    pgn.write_text(big + GAME.format(i=1))
    code, got = _import(capsys, tmp_path, pgn)
    summary = got["summary"]
    assert code == 0
    assert (summary["games"], summary["imported"], summary["skipped"]) == (2, 1, 1)
    assert summary["skipped_by_reason"] == {"too long": 1}


def test_a_binary_opening_book_is_named(tmp_path, capsys):
    book = tmp_path / "book.epd"
    book.write_bytes(bytes(range(256)) * 8)
    line = _error(
        capsys, ["sfgames", "--games", "2", "--out", str(tmp_path / "g"), "--openings", str(book)]
    )
    assert f"{book}: not an opening book" in line


def _safetensors(header: object, payload: bytes = b"") -> bytes:
    head = json.dumps(header).encode()
    return struct.pack("<Q", len(head)) + head + payload


def test_crafted_network_headers_are_one_line_and_allocate_nothing(tmp_path, capsys):
    good = tmp_path / "good.safetensors"
    save_net(PolicyValueNet(architecture("tiny")), good)
    meta = load_net(good)[1].to_json()
    meta["architecture"].update(blocks=40, filters=30000)  # 32 GB of weights, claimed
    entry = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    crafted = {
        "list": ([1, 2, 3], "not a JSON object"),
        "offsets": ({"w": {"dtype": "F32", "shape": [2]}}, "data_offsets"),
        "shape": ({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}}, "does not fill"),
        "huge": ({"w": {"dtype": "F32", "shape": [10**12], "data_offsets": [0, 4 * 10**12]}}, ""),
        "string": ({"__metadata__": {"frugalzero": '"text"', "checksum": "x"}}, "JSON object"),
        "claims": (
            {"__metadata__": {"frugalzero": json.dumps(meta), "checksum": "x"}, "w": entry},
            "does not match the stored weights",
        ),
    }
    for name, (header, says) in crafted.items():
        path = tmp_path / f"{name}.safetensors"
        path.write_bytes(_safetensors(header, bytes(8)))
        line = _error(capsys, ["net", "info", str(path)])
        assert str(path) in line and says in line, (name, line)


def test_shard_headers_missing_fields_or_of_the_wrong_type_are_named(tmp_path):
    data = shard_bytes(codec.concat([codec.encode_game(g) for g in selfplay_like_games(1)]))
    size = struct.unpack_from("<I", data, len(MAGIC))[0]
    start = len(MAGIC) + 4
    header = json.loads(data[start : start + size])
    for name, change, says in (
        ("noversion", lambda h: h.pop("version"), "no version"),
        ("methods", lambda h: h.update(methods=["selfplay"]), "methods"),
        ("games", lambda h: h.update(games="many"), "games"),
    ):
        h = dict(header)
        change(h)
        head = json.dumps(h).encode()
        path = tmp_path / f"{name}.fzs"
        path.write_bytes(MAGIC + struct.pack("<I", len(head)) + head)
        with pytest.raises(ShardError, match=says) as caught:
            shard_info(path, verify=False)
        assert str(path) in str(caught.value)


# -- 7. numbers checked where they enter ------------------------------------------------------


def test_numbers_are_checked_before_any_work(tmp_path, capsys):
    line = _error(capsys, ["config", "show", "--set", "net.arch=nope"])
    assert "arch 'nope' is not one of tiny, small, compact, medium, large," in line
    line = _error(capsys, ["config", "show", "--set", "train.lr=nan"])
    assert "train.lr: nan is not a finite number" in line
    line = _error(capsys, ["config", "show", "--set", "selfplay.search.c_init=inf"])
    assert "inf is not a finite number" in line
    run_dir = tmp_path / "run"
    line = _error(
        capsys, ["run", "--preset", "smoke", "--dir", str(run_dir), "--set", "evaluation.nodes=0"]
    )
    assert "--set evaluation.nodes: 0 is out of range (1 to 100,000,000)" in line
    assert not run_dir.exists()  # refused before anything was made
    assert load_config(RunConfig, None, ["selfplay.search.nscl=inf"]).selfplay.search.nscl > 1e308
    from frugalzero.evaluate.specs import parse_spec

    with pytest.raises(UserError, match="elo and skill"):
        parse_spec("stockfish?elo=1500&skill=5")


# -- 8. the bookkeeping of a killed run ------------------------------------------------------


class _Writer:
    def __init__(self) -> None:
        self.shards: list[list[str]] = [[]]

    def add(self, record: GameRecord) -> None:
        self.shards[-1].append(record.game_id)

    def flush(self) -> None:
        if self.shards[-1]:
            self.shards.append([])


def test_games_are_written_in_number_order_whatever_order_they_finish_in():
    writer = _Writer()
    numbers = list(range(3, GAMES_PER_SHARD + 5))
    order = InOrder(writer.add, numbers, writer.flush, GAMES_PER_SHARD)  # 0-2: before a kill
    finished = sorted(numbers, key=lambda n: (n * 7) % 11)  # an order workers might give
    for n in finished:
        if n == 9:
            order.skip(n)  # given up by the engines
        else:
            order.add(n, GameRecord("", [], [], None, "sfgames", game_id=f"i1-s{n}"))
    ids = [g for shard in writer.shards for g in shard]
    assert ids == [f"i1-s{n}" for n in numbers if n != 9]
    # shards close after every GAMES_PER_SHARD-th number, as in a run never killed
    assert writer.shards[0][-1] == f"i1-s{GAMES_PER_SHARD - 1}"


def test_the_time_before_a_kill_is_counted(tmp_path):
    layout = RunLayout(tmp_path)
    now = [100.0]
    state = RunState(iteration=1, step="generate", elapsed_s=50.0)
    state.current["generate_s"] = 10.0
    clock = RunClock(layout, state, now=lambda: now[0])
    now[0] += 36.0  # 36 s of games, then kill -9: state.json was not written again
    clock.tick()
    resumed = RunState(iteration=1, step="generate", elapsed_s=50.0)
    resumed.current["generate_s"] = 10.0
    RunClock(layout, resumed, now=lambda: 0.0)
    assert resumed.elapsed_s == 86.0 and resumed.current["generate_s"] == 46.0
    # a tick from before the state moved on is the state's own time already
    later = RunState(iteration=1, step="train", elapsed_s=90.0)
    RunClock(layout, later, now=lambda: 0.0)
    assert later.elapsed_s == 90.0 and "train_s" not in later.current
    # a finished run keeps its final time, though the clock ticked on while its report was
    # written (reopening it summarises it again, the same)
    done = RunState(iteration=1, step="generate", elapsed_s=80.0, finished=True)
    RunClock(layout, done, now=lambda: 0.0)
    assert done.elapsed_s == 80.0


def test_a_stopped_clock_counts_nothing_until_started_again(tmp_path):
    """An experiment keeps each arm's run loop and resumes it an iteration at a time: the time
    its process spends on the other arms in between is not this run's."""
    layout = RunLayout(tmp_path)
    now = [100.0]
    state = RunState(iteration=1, step="generate", elapsed_s=50.0)
    clock = RunClock(layout, state, now=lambda: now[0], tick_s=0.01)
    clock.start()
    now[0] += 10.0  # this run's games
    clock.stop()
    now[0] += 600.0  # the other arms' iterations
    assert (clock.elapsed(), clock.step_seconds()) == (60.0, 10.0)
    clock.begin(1, "train", 0.0)  # a step may begin while stopped: it counts from the start
    now[0] += 300.0
    clock.start()
    now[0] += 5.0
    assert (clock.elapsed(), clock.step_seconds()) == (65.0, 5.0)
    # and it ticks again after its restart (a kill then loses at most a tick)
    expected = {"iteration": 1, "step": "train", "elapsed_s": 65.0, "step_s": 5.0}
    deadline, ticked = time.monotonic() + 10, None
    while time.monotonic() < deadline and ticked != expected:
        time.sleep(0.01)
        ticked = json.loads(layout.clock.read_text()) if layout.clock.exists() else None
    clock.stop()
    assert ticked == expected


# -- 9. a run directory is a whole run or refused (issue 63) --------------------------------


def test_a_run_without_its_state_is_refused_and_left_as_it_was(stopped_run, capsys):
    """state.json gone, config.toml kept, the run's files beside them: what the run did is
    unknown, so nothing is replayed, cut or rewritten (it was: metrics cut, matches redone)."""
    (stopped_run / "state.json").unlink()
    (stopped_run / "nets").mkdir()
    (stopped_run / "metrics.jsonl").write_text('{"iteration": 1}\n{"iteration": 2}\n')
    before = {p.name: p.read_bytes() for p in stopped_run.iterdir() if p.is_file()}
    with pytest.raises(UserError, match="no state.json"):
        open_run(RunLayout(stopped_run), load_config(RunConfig, "smoke"))
    line = _error(capsys, ["run", "--dir", str(stopped_run)])
    assert (
        f"{stopped_run}: holds a run's config.toml, nets and metrics.jsonl but no state.json"
        in line
    )
    assert "restore state.json to resume" in line and "--dir NEW_DIR" in line
    after = {p.name: p.read_bytes() for p in stopped_run.iterdir() if p.is_file()}
    after.pop(".frugalzero.lock")  # the refused command held the directory while it looked
    assert after == before  # no state written, metrics not cut
    # stopped between its config and its first state, with nothing else: that run resumes
    (stopped_run / "metrics.jsonl").unlink()
    (stopped_run / "nets").rmdir()
    open_run(RunLayout(stopped_run), load_config(RunConfig, "smoke"))
    assert (stopped_run / "state.json").is_file()


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("iteration", "two", "iteration: expected an integer, got 'two'"),
        ("step", "dance", "step: 'dance' is not one of"),
        ("iteration", 1, "1 iterations finished but 0 recorded"),
        ("iteration", -1, "iteration: -1 is out of range"),
        ("positions", [1], "positions: expected an integer"),
        ("iterations", [{"iteration": "x"}], "iterations[0].iteration: expected an integer"),
    ],
)
def test_a_state_of_the_wrong_types_is_refused_by_field(stopped_run, capsys, field, value, says):
    path = stopped_run / "state.json"
    state = json.loads(path.read_text())
    state[field] = value
    path.write_text(json.dumps(state))
    with pytest.raises(UserError):  # before a resume acts on it (a bad step looped forever)
        RunState.load(stopped_run)
    line = _error(capsys, ["run", "--dir", str(stopped_run)])
    assert f"{path}" in line and says in line, line
    assert "restore it" in line
    assert json.loads(path.read_text())[field] == value  # left as it was


def test_infinite_ratings_in_a_state_read_back(stopped_run):
    """An iteration that lost every game is rated -inf (written "-inf" in JSON): a state that
    holds one is a whole state, not a damaged one."""
    state = RunState.load(stopped_run)
    state.iteration, state.step = 1, "generate"
    record = IterationRecord(1, elo=float("-inf"), elo_ci95=[float("-inf"), 1.5])
    state.iterations = [record]
    state.save(stopped_run)
    back = RunState.load(stopped_run)
    assert back.iterations[0].elo == float("-inf") and back.iterations[0].elo_ci95[1] == 1.5


def test_the_same_preset_resumes_a_stopped_run_and_another_is_refused(stopped_run, capsys):
    """The README's promise: after Ctrl-C, the same `frugalzero run --preset P --dir D`
    resumes (it changes nothing); a preset that would change the run is refused by field."""
    from frugalzero.cli import build_parser
    from frugalzero.pipeline.cli import run_config

    args = build_parser().parse_args(["run", "--preset", "smoke", "--dir", str(stopped_run)])
    run_dir, config = run_config(args)
    assert run_dir == stopped_run
    state = open_run(RunLayout(stopped_run), config)  # the same run: resumed, not refused
    assert state.config_sha256 == RunState.load(stopped_run).config_sha256
    line = _error(capsys, ["run", "--preset", "demo", "--dir", str(stopped_run)])
    assert "this run was made with" in line and "a resume keeps its config.toml" in line


@pytest.mark.parametrize(
    "flags",
    [
        ["--preset", "demo"],
        ["--preset", "demo", "--set", "net.arch=small", "--no-budget.fit"],
        ["--set", "net.arch=small", "--set", "budget.iterations=3", "--method", "selfplay"],
        ["--set", "generate.pgn=['a b.pgn']", "--method", "pgn"],
    ],
)
def test_a_refused_resume_advises_a_command_that_builds_what_was_asked(stopped_run, capsys, flags):
    """The command a refused resume offers for a new run builds the config the refused one
    asked for (another preset, several flags), not the saved run with one field changed."""
    import shlex

    from frugalzero.cli import build_parser
    from frugalzero.config import to_dict
    from frugalzero.config_cli import config_from_args
    from frugalzero.pipeline.cli import run_config

    line = _error(capsys, ["run", "--dir", str(stopped_run), *flags])
    advice = shlex.split(line.partition("; for a run with it: ")[2])
    assert advice[:2] == ["frugalzero", "run"] and advice[-2:] == ["--dir", "NEW_DIR"], line
    asked = run_config(build_parser().parse_args(["run", "--dir", str(stopped_run), *flags]))
    advised = config_from_args(build_parser().parse_args(advice[1:-2]))
    assert to_dict(advised) == to_dict(asked[1])


def test_report_and_every_writer_refuse_a_runs_own_files(stopped_run, tmp_path, capsys):
    own = {p: p.read_bytes() for p in (stopped_run / "config.toml", stopped_run / "state.json")}
    for path in own:
        line = _error(capsys, ["report", str(stopped_run), "--out", str(path)])
        assert f"{path}: the run {stopped_run}'s own {path.name}" in line
    for argv in (
        ["net", "new", "--arch", "tiny", "--out", str(stopped_run / "nets" / "iter-0001.x")],
        ["net", "export", "small", "--onnx", str(stopped_run / "config.toml")],
        ["import-pgn", str(tmp_path / "none.pgn"), "--out", str(stopped_run / "data" / "x")],
    ):
        line = _error(capsys, argv)
        assert f"the run {stopped_run}'s own" in line, argv
    assert {p: p.read_bytes() for p in own} == own
    assert not (stopped_run / "nets").exists() and not (stopped_run / "data").exists()
    # the run's report is not one of its own files: `report RUN` rewrites it
    capsys.readouterr()
    assert main(["report", str(stopped_run)]) == 0
    assert (stopped_run / "report.html").is_file()


def test_a_folder_with_another_tools_config_toml_is_not_taken_for_a_run(tmp_path):
    from frugalzero.layout import LOCK, refuse_run_files

    (tmp_path / "config.toml").write_text("[tool]\n")  # a project's own config, not a run's
    refuse_run_files(tmp_path / "data" / "games.pgn")  # no run here: nothing refused
    (tmp_path / LOCK).write_text("")  # what `frugalzero run` holds from its first start
    with pytest.raises(UserError, match="own data"):
        refuse_run_files(tmp_path / "data" / "games.pgn")


def test_every_path_a_config_names_is_checked_before_anything_is_written(tmp_path, capsys):
    run_dir = tmp_path / "run"
    missing = tmp_path / "nope.pgn"
    cases = [
        (["--set", "method=pgn", "--set", f'generate.pgn=["{missing}"]'], "generate.pgn"),
        (["--set", f'generate.openings="{missing}"'], "generate.openings"),
        (["--set", f'net.init="{tmp_path / "none.safetensors"}"'], "net.init"),
        (["--set", f'sfgames.engine.command="{tmp_path / "no-engine"}"'], "engine"),
    ]
    for flags, field in cases:
        line = _error(capsys, ["run", "--preset", "smoke", "--dir", str(run_dir), *flags])
        assert field in line and str(tmp_path) in line, (flags, line)
        assert not run_dir.exists(), flags  # refused before the directory was made


# -- 10. numbers and files refused where they enter (issue 63) -------------------------------


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ("generate.games=1e100", "generate.games: 1e+100 is out of range (0 to "),
        ("budget.iterations=10000000000", "budget.iterations: 10,000,000,000 is out of range"),
        ("evaluation.nodes=1e12", "evaluation.nodes: 1e+12 is out of range"),
        ("sfgames.engine.nodes=1e100", "sfgames.engine.nodes: 1e+100 is out of range"),
        ("selfplay.search.simulations=1e100", "simulations: 1e+100 is out of range"),
        ("train.steps=1e100", "train.steps: 1e+100 is out of range"),
        ("seed=1e100", "seed: 1e+100 is out of range (0 to 4,294,967,295)"),
        ("net.seed=-1", "net.seed: -1 is out of range (0 to 4,294,967,295)"),  # NumPy takes none
    ],
)
def test_integers_are_bounded_per_field(capsys, setting, says):
    line = _error(capsys, ["config", "show", "--set", setting])
    assert says in line, line
    with pytest.raises(UserError, match="out of range"):
        RunConfig(generate=dataclasses.replace(RunConfig().generate, games=10**100))


def test_a_set_error_names_the_flag_not_the_preset(capsys):
    line = _error(capsys, ["config", "show", "smoke", "--set", "generate.games=x"])
    assert "--set generate.games: expected an integer, got 'x'" in line
    assert "smoke.toml" not in line
    line = _error(capsys, ["config", "show", "smoke", "--set", "train.lr=nan"])
    assert "--set train.lr: nan is not a finite number" in line


def test_binary_files_are_one_line_naming_them(tmp_path, stopped_run, capsys):
    binary = bytes(range(256)) * 8
    book = tmp_path / "book.pgn"
    book.write_bytes(binary)
    argv = ["sfgames", "--games", "2", "--out", str(tmp_path / "g"), "--openings", str(book)]
    assert f"{book}: not an opening book" in _error(capsys, argv)
    toml = tmp_path / "binary.toml"
    toml.write_bytes(binary)
    for argv in (["config", "show", str(toml)], ["run", "--config", str(toml), "--dir", "x"]):
        assert f"{toml}: not a TOML file (it is not UTF-8 text)" in _error(capsys, argv)
    (stopped_run / "config.toml").write_bytes(binary)
    for argv in (["run", "--dir", str(stopped_run)], ["report", str(stopped_run)]):
        assert f"{stopped_run / 'config.toml'}: not a TOML file" in _error(capsys, argv)


def test_a_utf8_bom_is_accepted_in_configs_and_positions(tmp_path, capsys):
    from frugalzero.chess.positions import load_book
    from frugalzero.evaluate.epd import read_epd

    bom = b"\xef\xbb\xbf"
    toml = tmp_path / "bom.toml"
    toml.write_bytes(bom + b'method = "sfgames"\n[generate]\ngames = 7\n')
    assert load_config(RunConfig, str(toml)).generate.games == 7
    epd = tmp_path / "bom.epd"
    epd.write_bytes(bom + b"rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - bm e5;\n")
    positions, skipped = read_epd(epd)
    assert (len(positions), skipped) == (1, 0)
    assert len(load_book(epd)) == 1
    pgn = tmp_path / "bom.pgn"
    pgn.write_bytes(bom + GAME.format(i=0).encode())
    assert len(load_book(pgn)) == 1


def test_shards_exits_non_zero_for_any_shard_it_cannot_read(tmp_path, capsys):
    good = tmp_path / "shards"
    write_shard(good / "a.fzs", selfplay_like_games(2, seed=1))
    capsys.readouterr()
    assert main(["shards", str(good), "--json"]) == 0
    capsys.readouterr()
    (good / "b.fzs").symlink_to(tmp_path / "gone.fzs")  # a shard whose file is gone
    assert main(["shards", str(good), "--json"]) == 1
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert (summary["shards"], summary["damaged"], summary["games"]) == (1, 1, 2)
    assert f"{good / 'b.fzs'}" in captured.err
    (good / "a.fzs").unlink()  # every shard damaged
    assert main(["shards", str(good), "--json"]) == 1


def test_onnx_export_checks_its_destination_before_exporting(tmp_path, capsys, monkeypatch):
    from frugalzero.nn import export

    def never(*args, **kwargs):
        raise AssertionError("exported before the destination was checked")

    monkeypatch.setattr(export, "export_onnx", never)
    folder = tmp_path / "folder"
    folder.mkdir()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    line = _error(capsys, ["net", "export", "small", "--onnx", str(folder)], code=1)
    assert line.endswith(f"cannot write {folder}: Is a directory")
    line = _error(capsys, ["net", "export", "small", "--onnx", str(blocker / "x.onnx")], code=1)
    assert f"cannot create the directory {blocker}" in line
