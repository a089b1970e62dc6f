"""`frugalzero uci` when its surroundings fail: a GUI that closes the engine's output, an engine
killed whole (its shared memory left in /dev/shm), and the names that let the next start tell
a dead owner's segments (``frugalzero.runtime.shm``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from frugalzero.runtime.interpreter import own_code_env

ENGINE = [sys.executable, "-m", "frugalzero", "uci", "--net", "small"]
SHM_DIR = Path("/dev/shm")


def test_a_segment_is_stale_once_its_owner_is_gone(tmp_path):
    """Names carry the owner's pid and start time: a dead owner's segment is removed, a live
    owner's kept, and so is one whose pid a later process took, and anything not ours."""
    from frugalzero.runtime import shm

    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead = int(done.stdout)
    mine = shm.segment_name()
    assert mine.startswith(f"fz-{os.getpid():x}-") and len(mine) <= 31
    started = shm.start_time(os.getpid())
    names = {
        "dead": f"fz-{dead:x}-{started:x}-0a1b2c3d",
        "mine": mine,
        "reused": f"fz-{os.getpid():x}-{started + 1:x}-0a1b2c3d",  # my pid, another start
        "other": "psm_0a1b2c3d",
    }
    for name in names.values():
        (tmp_path / name).write_bytes(b"x")
    if shm.start_time(dead) is not None:  # its pid was taken again already
        pytest.skip("the dead process's pid is in use again")
    removed = shm.remove_stale(tmp_path)
    assert sorted(removed) == sorted([names["dead"], names["reused"]])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([mine, "psm_0a1b2c3d"])


def _segments(pid: int) -> set[str]:
    """The shared-memory segments ``pid`` maps (by name, as in /dev/shm)."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return set()
    return {
        line.split("/dev/shm/", 1)[1].removesuffix(" (deleted)")
        for line in maps.splitlines()
        if "/dev/shm/" in line
    }


def _started_engine() -> tuple[subprocess.Popen, set[str]]:
    """An engine in a session of its own, after a search, and the segments it maps."""
    proc = subprocess.Popen(
        ENGINE,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=own_code_env(),
        start_new_session=True,
    )
    proc.stdin.write("uci\nisready\nposition startpos\ngo nodes 64\n")
    proc.stdin.flush()
    while not (line := proc.stdout.readline()).startswith("bestmove"):
        assert line, "the engine exited"
    end = time.monotonic() + 120  # its inference processes may start after its first search
    while not (segments := _segments(proc.pid)) and time.monotonic() < end:
        proc.stdin.write("position startpos moves e2e4\ngo nodes 64\n")
        proc.stdin.flush()
        while not proc.stdout.readline().startswith("bestmove"):
            pass
    assert segments, "the engine maps no shared memory"
    return proc, segments


@pytest.mark.slow
@pytest.mark.skipif(not SHM_DIR.is_dir(), reason="no /dev/shm on this system")
def test_the_shared_memory_of_an_engine_killed_whole_is_removed_at_the_next_start():
    """An engine killed with its whole process group (its resource tracker too) left its
    segments, 16 MB each, in /dev/shm for good: the next engine's start removes them."""
    first, left = _started_engine()
    second = None
    try:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(30)
        assert all((SHM_DIR / name).exists() for name in left)  # nobody removed them
        second, _ = _started_engine()
        assert not [name for name in left if (SHM_DIR / name).exists()]
    finally:
        for name in left:  # not left behind by a failing run
            (SHM_DIR / name).unlink(missing_ok=True)
        if second is not None:
            second.stdin.write("quit\n")
            second.stdin.flush()
            second.wait(30)


@pytest.mark.slow
def test_a_closed_output_ends_the_real_engine_with_status_0_and_one_line():
    """A GUI that closed the engine's output got a double BrokenPipe traceback, a leak report,
    status 1: the engine ends (its input still open), status 0, one line on stderr."""
    proc = subprocess.Popen(
        ENGINE,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=own_code_env(),
    )
    try:
        proc.stdin.write(b"uci\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == b"id name frugalzero\n"
        proc.stdout.close()  # the GUI closes the engine's output
        proc.stdin.write(b"isready\nposition startpos\ngo nodes 5000\nisready\n")
        proc.stdin.flush()
        code = proc.wait(120)  # the input stays open
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = proc.stderr.read().decode()
    assert code == 0 and stderr.count("\n") == 1, stderr
    assert "output was closed" in stderr
