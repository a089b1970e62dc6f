"""Forgiving PGN import: one training record per played move, bad games skipped and counted.

The reader process splits the text into games (cheap line scanning, bounded memory) and hands
chunks of games to worker processes, which parse them with python-chess through a visitor
that keeps only what is needed (headers, the main line's moves, the result) and skips
variations and comments cheaply, then encode them as shard columns. The reader writes the
shards in file order. A game that cannot be used is skipped with its reason and number and
the import goes on; a BOM, comments, NAGs and variations are normal PGN and cost nothing.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import chess
import chess.engine
import chess.pgn
import numpy as np

from frugalzero.chess.moves import move_to_index
from frugalzero.data import codec
from frugalzero.data.records import GameRecord, PlyTarget
from frugalzero.results import UNFINISHED, VALUE
from frugalzero.values import score_to_value

KEPT_HEADERS = ("Event", "Site", "Date", "White", "Black", "WhiteElo", "BlackElo", "TimeControl")
STANDARD_VARIANTS = {"standard", "chess", "normal", "from position", "fromposition", ""}

_RESULT_AT_END = re.compile(f"(?:{'|'.join(map(re.escape, [*VALUE, UNFINISHED]))})\\s*$")
_COMMENT = re.compile(r"\{[^}]*\}|;[^\n]*")
_VARIATION = re.compile(r"\([^()]*\)")
MAX_GAME_CHARS = 1 << 20  # no real game comes near; bounds memory on a damaged file
_MOVE_NUMBER = re.compile(r"\d+\s*\.+")
_GAP = re.compile(r"(?:\s|[+#]|\d+\s*\.+)*")  # what may stand between tokens: move numbers


@dataclass
class RawGame:
    """One game's text as the splitter found it."""

    number: int  # 1-based within its file
    line: int  # its first line in the file
    text: str
    oversized: bool = False  # longer than MAX_GAME_CHARS: text dropped, game skipped


@dataclass
class Skipped:
    """A game that was not imported, and why."""

    file: str
    game: int
    line: int
    reason: str
    detail: str = ""

    def to_json(self) -> dict:
        return {
            "file": self.file,
            "game": self.game,
            "line": self.line,
            "reason": self.reason,
            "detail": self.detail,
        }


def split_games(lines: Iterable[str]) -> Iterator[RawGame]:
    """Games of a PGN text, each with its number and first line; bounded memory.

    A game ends where the next one's headers begin (outside a comment) or at a blank line
    after its result token; other blank lines inside movetext are dropped (python-chess would
    take them as the end of the game). A byte-order mark anywhere at a line start is removed.
    """
    current: list[str] = []
    number, first, size = 0, 0, 0
    in_moves = ended = blank_after_headers = oversized = False
    depth = 0

    def finish() -> RawGame | None:
        nonlocal current, in_moves, ended, blank_after_headers, depth, number, size, oversized
        game = None
        if oversized:
            number += 1
            game = RawGame(number, first, "", oversized=True)
        elif any(not ln.startswith(("%", ";")) for ln in current):
            number += 1
            game = RawGame(number, first, "".join(current))
        current, in_moves, ended, blank_after_headers, depth = [], False, False, False, 0
        size, oversized = 0, False
        return game

    for lineno, line in enumerate(lines, 1):
        if line.startswith("\ufeff"):
            line = line.lstrip("\ufeff")
        stripped = line.strip()
        if depth == 0:
            if not stripped:
                if in_moves and ended:
                    if game := finish():
                        yield game
                elif (current or oversized) and not in_moves:
                    blank_after_headers = True
                continue
            if stripped.startswith("[") and (in_moves or blank_after_headers):
                if game := finish():
                    yield game
        if not current and not oversized:
            first = lineno
        if not line.endswith("\n"):
            line += "\n"
        size += len(line)
        if size > MAX_GAME_CHARS and not oversized:  # keep nothing more of this game
            oversized, current, depth = True, [], 0
        if not oversized:
            current.append(line)
        # an oversized game is still followed line by line (headers, then movetext), so
        # it ends where it would have and is counted once
        if depth == 0 and not in_moves and stripped.startswith(("[", "%", ";")):
            continue
        in_moves = True
        if not oversized and ("{" in line or "}" in line):  # its unclosed comment ends here
            depth = max(0, depth + line.count("{") - line.count("}"))
        ended = depth == 0 and bool(_RESULT_AT_END.search(stripped))
    if (current or oversized) and (game := finish()):
        yield game


def unreadable_token(movetext: str) -> str | None:
    """The first main-line text that python-chess would silently ignore (e.g. ``Qz9``), which
    would leave the game's moves shifted by a ply; None when the movetext is clean."""
    text = _COMMENT.sub(" ", movetext)
    text = "\n".join(ln for ln in text.split("\n") if not ln.startswith("%"))
    while True:
        text, found = _VARIATION.subn(" ", text)
        if not found:
            break
    pos = 0
    for match in chess.pgn.MOVETEXT_REGEX.finditer(text):
        if not _GAP.fullmatch(text, pos, match.start()):
            return _first_word(text[pos : match.start()] + match.group(0))
        pos = match.end()
    if not _GAP.fullmatch(text, pos):
        return _first_word(text[pos:])
    return None


def _first_word(gap: str) -> str:
    words = _MOVE_NUMBER.sub(" ", gap).split()
    return words[0][:20] if words else gap.strip()[:20]


class _MainLine(chess.pgn.BaseVisitor):
    """Collects headers, the main line's moves (with policy indices), the engine evaluations
    of its comments (``[%eval 0.35]``, ``[%eval #-3]``, as lichess and cutechess write them)
    and the result token; variations are skipped without being parsed."""

    def __init__(self, min_elo: int = 0) -> None:
        self.min_elo = min_elo

    def begin_game(self) -> None:
        self.headers = chess.pgn.Headers({})
        self.start_fen: str | None = None
        self.moves: list[chess.Move] = []
        self.indices: list[int] = []
        self.token: str | None = None  # the main line's result token
        self.reason: tuple[str, str] | None = None
        self.evals: dict[int, chess.engine.Score] = {}  # moves played -> White's score then

    def begin_headers(self) -> chess.pgn.Headers:
        return self.headers

    def visit_header(self, tagname: str, tagvalue: str) -> None:
        self.headers[tagname] = tagvalue

    def end_headers(self):
        variant = self.headers.get("Variant", "")
        if variant.strip().lower() not in STANDARD_VARIANTS or self.headers.is_chess960():
            self.reason = ("variant", variant)
            return chess.pgn.SKIP
        if self.min_elo:
            elos = [_elo(self.headers.get(side)) for side in ("WhiteElo", "BlackElo")]
            if min(elos) < self.min_elo:
                self.reason = ("min-elo", "/".join(str(e) for e in elos))
                return chess.pgn.SKIP
        return None

    def visit_board(self, board: chess.Board) -> None:
        if self.start_fen is None:
            self.start_fen = board.fen()
            if not board.is_valid():
                self.reason = ("bad FEN", f"{self.start_fen} ({board.status()!r})")
            elif board.chess960 or board.has_chess960_castling_rights():
                self.reason = ("variant", "Chess960 castling rights")

    def begin_variation(self):
        return chess.pgn.SKIP

    def visit_move(self, board: chess.Board, move: chess.Move) -> None:
        if self.reason:
            return
        if not move:
            self.reason = ("null move", f"ply {len(self.moves) + 1}")
            return
        self.moves.append(move)
        self.indices.append(move_to_index(move, board.turn))

    def visit_comment(self, comment: str) -> None:
        if not self.moves or "%eval" not in comment:
            return
        found = chess.pgn.EVAL_REGEX.search(comment)
        if found is None:
            return
        if found.group("mate"):
            mate = int(found.group("mate"))
            score: chess.engine.Score = chess.engine.Mate(mate) if mate else chess.engine.MateGiven
        else:
            score = chess.engine.Cp(round(float(found.group("cp")) * 100))
        self.evals[len(self.moves)] = score

    def visit_result(self, result: str) -> None:
        self.token = result

    def handle_error(self, error: Exception) -> None:
        if self.reason:
            return
        if self.start_fen is None:
            self.reason = ("bad FEN", str(error))
        elif isinstance(error, chess.IllegalMoveError):
            self.reason = ("illegal move", f"ply {len(self.moves) + 1}: {error}")
        elif isinstance(error, chess.AmbiguousMoveError):
            self.reason = ("ambiguous move", f"ply {len(self.moves) + 1}: {error}")
        else:
            self.reason = ("unreadable move", f"ply {len(self.moves) + 1}: {error}")

    def result(self) -> _MainLine:  # type: ignore[override]
        return self


def _elo(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


def parse_game(raw: RawGame, file: str, min_elo: int = 0) -> GameRecord | Skipped:
    """A game's record (one-hot policy on each played move, z from the result), or why not."""

    def skip(reason: str, detail: str = "") -> Skipped:
        return Skipped(file, raw.number, raw.line, reason, detail)

    if raw.oversized:
        return skip("too long", f"more than {MAX_GAME_CHARS} characters")
    visitor = chess.pgn.read_game(io.StringIO(raw.text), Visitor=lambda: _MainLine(min_elo))
    if visitor is None:
        return skip("empty")
    if visitor.reason and visitor.reason[0] in ("variant", "min-elo", "bad FEN"):
        return skip(*visitor.reason)
    # python-chess passes over text it cannot read as a move; the moves after it would then
    # belong to the wrong side, so any such text is the reason a game fails
    token = unreadable_token(_movetext(raw.text))
    if token is not None:
        return skip("unreadable move", repr(token))
    if visitor.reason:
        return skip(*visitor.reason)
    if visitor.token is None:
        return skip("truncated", "no result token at the end of the game")
    if visitor.token == UNFINISHED:
        return skip("no result", "result is *")
    header = visitor.headers.get("Result", visitor.token)
    if header in VALUE and header != visitor.token:
        return skip("result mismatch", f"header {header}, movetext {visitor.token}")
    if not visitor.moves:
        return skip("no moves")
    ones = np.ones(1, dtype=np.float32)
    targets: list[PlyTarget | None] = []
    for ply, index in enumerate(visitor.indices):
        # the evaluation written after the previous move is this position's, White's view
        white = visitor.evals.get(ply)
        value = None
        if white is not None:
            turn = chess.WHITE if (ply + _black_first(visitor.start_fen)) % 2 == 0 else chess.BLACK
            value = score_to_value(chess.engine.PovScore(white, chess.WHITE).pov(turn))
        targets.append(PlyTarget(np.array([index], dtype=np.int64), ones, expert_value=value))
    extra = {k: visitor.headers[k] for k in KEPT_HEADERS if visitor.headers.get(k, "?") != "?"}
    return GameRecord(
        start_fen=visitor.start_fen or chess.STARTING_FEN,
        moves=[m.uci() for m in visitor.moves],
        targets=targets,
        result=VALUE[visitor.token],
        method="pgn",
        game_id=f"{file}#{raw.number}",
        extra=extra,
    )


def _black_first(fen: str | None) -> int:
    """1 when the game starts with Black to move, else 0."""
    return int(fen is not None and fen.split()[1] == "b")


def _movetext(text: str) -> str:
    """The text after the header lines."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        s = line.strip()
        if s and not s.startswith(("[", "%", ";")):
            return "\n".join(lines[i:])
    return ""


@dataclass
class ChunkResult:
    """What a worker made of a chunk of games."""

    columns: list[codec.GameColumns] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    games: int = 0
    positions: int = 0


def import_chunk(args: tuple[str, list[RawGame], int]) -> ChunkResult:
    """Parse and encode a chunk of games (runs in a worker process)."""
    file, games, min_elo = args
    out = ChunkResult()
    for raw in games:
        out.games += 1
        parsed = parse_game(raw, file, min_elo)
        if isinstance(parsed, Skipped):
            out.skipped.append(parsed)
            continue
        try:
            columns = codec.encode_game(parsed)
        except codec.RecordError as exc:  # e.g. a position our encoding cannot express
            out.skipped.append(Skipped(file, raw.number, raw.line, "unusable", str(exc)))
            continue
        out.columns.append(columns)
        out.positions += columns.positions
    return out
