"""A lean UCI client for the engines that label data: plain pipes, blocking reads, one deadline.

python-chess's asyncio client spent ~0.8 ms of Python a move against Stockfish's ~0.6 ms of
search at 400 nodes (``frugalzero bench sfgames``), so the labelling engines got under half of
the cores. This client does only what labelling needs: start and configure an engine, send a
position and ``go``, and read the answer, parsing only the lines it keeps (the last scored
line, per MultiPV line). Matches and the ladder keep python-chess (``evaluate.engines``),
where an engine's full protocol matters and a move's Python is noise beside its clock.
"""

from __future__ import annotations

import os
import select
import subprocess
import time
from dataclasses import dataclass, field

import chess
import chess.engine


class UciError(RuntimeError):
    """The engine died, closed its output, or broke the protocol."""


@dataclass
class Reply:
    """One search's result, from the side to move's view."""

    move: chess.Move | None
    """``bestmove`` (with MultiPV, the best line's first move); None for ``bestmove (none)``."""
    lines: list[tuple[chess.Move, chess.engine.PovScore]] = field(default_factory=list)
    """(first move, score) of each scored line with a PV, by MultiPV rank."""
    score: chess.engine.PovScore | None = None
    """The last score the engine printed (the best line's)."""
    wdl: tuple[int, int, int] | None = None
    """The best line's win/draw/loss per mille (UCI_ShowWDL), if printed."""


def go_command(nodes: int = 0, depth: int = 0, movetime_ms: int = 0) -> bytes:
    parts = ["go"]
    for name, value in (("nodes", nodes), ("depth", depth), ("movetime", movetime_ms)):
        if value:
            parts += [name, str(value)]
    return (" ".join(parts) + "\n").encode()


class UciPosition:
    """What ``position`` sends for a game: a FEN and the moves played since, kept up as the
    game goes on (rebuilding them from a python-chess move stack cost ~40 us a request)."""

    def __init__(self, board: chess.Board) -> None:
        self.fen = board.root().fen()
        self.moves = [m.uci() for m in board.move_stack]

    def push(self, uci: str, board: chess.Board) -> None:
        """Record the move ``uci`` that led to ``board``; a board without history (trimmed
        after an irreversible move) becomes the new FEN."""
        if board.move_stack:
            self.moves.append(uci)
        else:
            self.fen, self.moves = board.fen(), []

    def command(self) -> bytes:
        if self.moves:
            return f"position fen {self.fen} moves {' '.join(self.moves)}\n".encode()
        return f"position fen {self.fen}\n".encode()


def parse_score(tokens: list[bytes], at: int, turn: chess.Color) -> chess.engine.PovScore:
    kind, value = tokens[at + 1], int(tokens[at + 2])
    score = chess.engine.Cp(value) if kind == b"cp" else chess.engine.Mate(value)
    return chess.engine.PovScore(score, turn)


def parse_wdl(tokens: list[bytes]) -> tuple[int, int, int] | None:
    if b"wdl" not in tokens:
        return None
    at = tokens.index(b"wdl")
    return int(tokens[at + 1]), int(tokens[at + 2]), int(tokens[at + 3])


def parse_reply(lines: list[bytes], turn: chess.Color, multipv: int) -> Reply:
    """The answer in a search's output (its ``info`` lines and ``bestmove``, in order)."""
    words = lines[-1].split()
    none = len(words) < 2 or words[1] == b"(none)"
    reply = Reply(None if none else chess.Move.from_uci(words[1].decode()))
    if multipv == 1:
        for line in reversed(lines):
            tokens = line.split()
            if b"score" in tokens and tokens[1] != b"string":
                reply.score = parse_score(tokens, tokens.index(b"score"), turn)
                reply.wdl = parse_wdl(tokens)
                break
        return reply
    best: dict[int, tuple[chess.Move, chess.engine.PovScore, tuple | None]] = {}
    for line in lines:
        tokens = line.split()
        if b"score" not in tokens or b"pv" not in tokens or tokens[1] == b"string":
            continue
        rank = int(tokens[tokens.index(b"multipv") + 1]) if b"multipv" in tokens else 1
        first = tokens[tokens.index(b"pv") + 1].decode()
        score = parse_score(tokens, tokens.index(b"score"), turn)
        best[rank] = (chess.Move.from_uci(first), score, parse_wdl(tokens))
    reply.lines = [(m, s) for _, (m, s, _w) in sorted(best.items())]
    if best:  # the move labelled is the best line's first, its score and WDL the line's
        reply.move, reply.score, reply.wdl = best[min(best)]
    return reply


class UciEngine:
    """One engine process. Every read has a deadline: ``TimeoutError`` when it passes,
    ``UciError`` when the engine is gone; either way the caller kills it and starts another."""

    def __init__(self, command: str, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        # a new session: a Ctrl+C in the terminal reaches us, not the engine; we stop it
        self.process = subprocess.Popen(
            [command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
            start_new_session=True,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self._in = self.process.stdin.fileno()
        self._out = self.process.stdout.fileno()
        self._buffer = b""
        self.name = os.path.basename(command)
        self.options: set[str] = set()
        self._send(b"uci\n")
        for line in self._read_until(b"uciok", time.monotonic() + timeout_s):
            if line.startswith(b"id name "):
                self.name = line[8:].decode(errors="replace").strip()
            elif line.startswith(b"option name "):
                self.options.add(line[12:].split(b" type ")[0].decode(errors="replace"))

    @property
    def pid(self) -> int:
        return self.process.pid

    def configure(self, options: dict[str, str | int | bool]) -> None:
        """Set UCI options and wait until the engine has taken them."""
        commands = []
        for name, value in options.items():
            if isinstance(value, bool):
                value = "true" if value else "false"
            commands.append(f"setoption name {name} value {value}\n")
        self._send("".join(commands).encode() + b"isready\n")
        self._read_until(b"readyok", time.monotonic() + self.timeout_s)

    def new_game(self) -> None:
        self._send(b"ucinewgame\n")

    def search(
        self, position: UciPosition, turn: chess.Color, go: bytes, multipv: int, deadline_s: float
    ) -> Reply:
        """Search ``position`` (``turn`` to move) with the ``go`` command."""
        self._send(position.command() + go)
        lines = self._read_until(b"bestmove", time.monotonic() + deadline_s)
        return parse_reply(lines, turn, multipv)

    def quit(self, wait_s: float = 1.0) -> None:
        """Ask the engine to quit; kill it if it has not within ``wait_s``."""
        try:
            self._send(b"quit\n")
            self.process.wait(wait_s)
        except (UciError, subprocess.TimeoutExpired):
            pass
        self.kill()

    def kill(self) -> None:
        """Kill the process (no polite quit: it may be the one that hangs) and reap it."""
        if self.process.poll() is None:
            try:
                self.process.kill()
            except OSError:
                pass
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            pass
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass

    def _send(self, data: bytes) -> None:
        try:
            os.write(self._in, data)
        except OSError as exc:  # BrokenPipeError: the engine is gone
            raise UciError(f"engine stopped reading ({exc.strerror})") from None

    def _read_until(self, prefix: bytes, deadline: float) -> list[bytes]:
        """Lines up to and including the first that starts with ``prefix``."""
        lines: list[bytes] = []
        while True:
            *complete, self._buffer = self._buffer.split(b"\n")
            for number, line in enumerate(complete):
                line = line.rstrip(b"\r")
                lines.append(line)
                if line.startswith(prefix):
                    rest = complete[number + 1 :] + [self._buffer]
                    self._buffer = b"\n".join(rest)
                    return lines
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self._out], [], [], remaining)[0]:
                raise TimeoutError(f"no {prefix.decode()} within the deadline")
            chunk = os.read(self._out, 1 << 16)
            if not chunk:
                code = self.process.poll()
                raise UciError(f"engine exited (code {code})" if code is not None else "EOF")
            self._buffer += chunk
