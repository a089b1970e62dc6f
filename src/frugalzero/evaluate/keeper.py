"""The keeper of one engine process: it starts the engine and ends it with all it started.

    python -I -S keeper.py RUNNER_PID ARGV...

The match runner starts every UCI engine through a keeper of its own: this file, run as a
script on the standard library alone (no package import), so it costs a few milliseconds. The
keeper runs ARGV with the keeper's stdin, stdout and stderr (the runner's pipes), in a process
group of its own. On Linux it is the engine's child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``):
a process the engine forks is re-parented to the keeper when its parent exits, never to init,
even one that left the engine's group and session with ``setsid()`` or double-forked as a
daemon, so the keeper finds every one of them among its descendants in /proc. Elsewhere it
has the engine's process group only.

- The engine exits (after ``quit``, or a crash): whatever it left running gets SIGTERM, then
  SIGKILL after ``GRACE_SECONDS``, and is reaped; then the keeper exits as the engine did (its
  exit code, or killed by the same signal). So a child still holding the engine's stdout
  cannot make a crashed engine look alive: the runner reads the end of its output as soon as
  the keeper is gone, which is at once.
- The keeper gets SIGTERM (the runner ends the engine: a forfeit, the end of a match, an
  engine that ignores ``quit``): the engine and everything it started get SIGKILL at once.
- The runner dies, ``kill -9`` included: the kernel sends the keeper SIGTERM
  (``PR_SET_PDEATHSIG``), with the same effect; should the keeper itself be killed, the
  engine gets SIGKILL the same way.
"""

from __future__ import annotations

import os
import signal
import sys
import time

GRACE_SECONDS = 0.5
"""How long what an engine left running when it exited has to end after SIGTERM (our own
``frugalzero uci`` has an inference process that leaves with it) before SIGKILL."""
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
NOT_STARTED = 127
"""The keeper's exit code when the engine could not be started (as a shell's)."""
CANNOT_START = "frugalzero keeper: could not start "
"""How the keeper's one line on stderr begins when it could not start the engine: the runner
reads the rest as the reason and does not try again."""
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
RESTORED = (signal.SIGPIPE, signal.SIGXFSZ, *STOP_SIGNALS)
"""Signals the engine gets with their default action (Python ignores SIGPIPE and SIGXFSZ,
and an ignored signal stays ignored across exec)."""


class Stop(Exception):
    """The keeper was told to end the engine."""


_state = {"stop": False, "waiting": False}


def _on_signal(signum: int, frame: object) -> None:
    _state["stop"] = True
    if _state["waiting"]:
        _state["waiting"] = False
        raise Stop


def _prctl(option: int, value: int) -> bool:
    """``prctl(option, value)`` through libc; False where there is none (not Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _spawn(command: list[str]) -> int:
    """Start ``command`` in a process group of its own; its pid, or OSError if it could not
    be started (the reason comes back through a close-on-exec pipe, as subprocess does)."""
    keeper = os.getpid()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            os.setpgid(0, 0)
            for signum in RESTORED:
                signal.signal(signum, signal.SIG_DFL)
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != keeper:  # the keeper died before the line above
                os._exit(NOT_STARTED)
            os.execvp(command[0], command)
        except BaseException as exc:  # noqa: BLE001 - whatever it is, the keeper says it
            os.write(write, f"{type(exc).__name__}: {exc}".encode(errors="replace"))
        os._exit(NOT_STARTED)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        error = pipe.read()
    if error:
        os.waitpid(pid, 0)
        raise OSError(error.decode(errors="replace"))
    return pid


def _descendants() -> list[int]:
    """Every process below the keeper, from /proc (empty where there is no /proc)."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                text = stat.read()
            ppid = int(text[text.rindex(b")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # ended meanwhile
        children.setdefault(ppid, []).append(int(name))
    found, todo = [], [os.getpid()]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def _end_all(leader: int, status: int | None, grace: float, subreaper: bool) -> int | None:
    """End everything below the keeper: SIGTERM, and SIGKILL once ``grace`` is over (at once
    when it is 0, or when a stop signal comes meanwhile), until nothing is left (no child to
    reap; without a subreaper, no member left in the engine's group); the leader's status."""
    deadline = time.monotonic() + grace
    sent: dict[int, int] = {}
    pause = 0.001
    while True:
        children = True
        while True:  # reap whatever has ended
            try:
                pid, code = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                children = False
                break
            if pid == 0:
                break
            if pid == leader:
                status = code
        late = _state["stop"] or time.monotonic() >= deadline  # told to stop: no more grace
        signum = signal.SIGKILL if late else signal.SIGTERM
        if subreaper:  # every descendant is below us: none left once no child is
            if not children:
                return status
            targets = _descendants()
        else:  # the group alone (its id stays reserved while any member is alive)
            targets = []
            try:
                os.killpg(leader, signum)
            except OSError:
                if not children:
                    return status
        for pid in targets:
            if sent.get(pid) != signum:
                sent[pid] = signum
                try:
                    os.kill(pid, signum)
                except OSError:
                    pass
        time.sleep(pause)
        pause = min(2 * pause, 0.02)


def _exit_as(status: int | None) -> None:
    """Exit as the engine did: its exit code, or killed by its signal (SIGKILL if unknown)."""
    if status is not None and os.WIFEXITED(status):
        os._exit(os.WEXITSTATUS(status))
    signum = os.WTERMSIG(status) if status is not None and os.WIFSIGNALED(status) else 9
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # its SIGSEGV, not a core of ours
    except (ImportError, ValueError, OSError):
        pass
    if signum not in (signal.SIGKILL, signal.SIGSTOP):  # those two have no handler to reset
        signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # a signal whose default is not to terminate


def main(argv: list[str]) -> None:
    if len(argv) < 3:
        sys.stderr.write("usage: keeper.py RUNNER_PID ARGV...\n")
        os._exit(2)
    runner, command = int(argv[1]), argv[2:]
    for signum in STOP_SIGNALS:
        signal.signal(signum, _on_signal)
    subreaper = _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != runner:  # the runner died before the line above: nobody to play for
        os._exit(1)
    try:
        leader = _spawn(command)
    except OSError as exc:
        sys.stderr.write(f"{CANNOT_START}{command[0]} ({exc})\n")
        sys.stderr.flush()
        os._exit(NOT_STARTED)
    status: int | None = None
    grace = GRACE_SECONDS
    _state["waiting"] = True
    try:
        if _state["stop"]:
            raise Stop
        while status is None:
            pid, code = os.waitpid(-1, 0)  # the engine, or an orphan of it re-parented here
            if pid == leader:
                status = code
    except Stop:
        grace = 0.0
    except ChildProcessError:
        pass
    _state["waiting"] = False
    _exit_as(_end_all(leader, status, grace, subreaper))


if __name__ == "__main__":
    main(sys.argv)
