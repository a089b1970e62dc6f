"""What the fuzzer sends and how it reads an engine: ``Step``s (a command and what the engine
owes for it), grouped in ``Action``s and ``Sequence``s, and the options an engine lists
(``EngineOption``, ``parse_option``)."""

from __future__ import annotations

from dataclasses import dataclass, field

SHORT = "short"
"""Ends by itself within a fraction of a second (a small node, time or clock limit, or none)."""
LONG = "long"
"""May end by itself, but not soon: the fuzzer sends ``stop``; a ``bestmove`` before it is fine."""
INFINITE = "infinite"
"""``go infinite``: no ``bestmove`` until released (``stop``, or a command that ends the search)."""
PONDER = "ponder"
"""``go ponder``: no ``bestmove`` until ``stop``; ``ponderhit`` makes it its limits' kind."""


@dataclass(frozen=True)
class Step:
    """One command, and what the engine owes for it."""

    line: str | None
    """The command (surrogate escapes stand for raw bytes); None: the end of input."""
    pause_s: float = 0.0
    """Wait this long before sending (the random delay before a ``stop``)."""
    go: str | None = None
    """For a ``go``: SHORT, LONG, INFINITE or PONDER."""
    after_hit: str | None = None
    """For ``go ponder``: its kind after ``ponderhit``."""
    moves: frozenset[str] | None = None
    """For a ``go``: the moves its ``bestmove`` may name (``0000`` where there is none); None
    where the fuzzer does not know the position."""
    idle_first: bool = False
    """Send only once every ``go`` sent before is answered (what makes a later ``stop``
    unambiguous)."""


Action = tuple[Step, ...]
"""Steps that stay together when a failing sequence is shrunk (a ``go infinite`` and its
``stop``)."""


@dataclass
class Sequence:
    """Actions the fuzzer checks the engine's answers after; ``number`` counts from 0."""

    number: int
    actions: list[Action] = field(default_factory=list)

    def steps(self) -> list[Step]:
        return [step for action in self.actions for step in action]

    def lines(self) -> list[str]:
        return [render(step) for step in self.steps()]


def render(step: Step) -> str:
    """A step as a report shows it: a pause before it as ``(pause N s)``, a line too long to
    read shortened (the seed gives it whole)."""
    text = "<end of input>" if step.line is None else step.line
    if len(text) > 2_000:
        text = f"{text[:60]}…({len(text)} characters)"
    return f"(pause {step.pause_s:.3f} s) {text}" if step.pause_s else text


@dataclass(frozen=True)
class EngineOption:
    """An option as the engine lists it in its ``uci`` answer."""

    name: str
    kind: str
    default: str = ""
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()


def parse_option(line: str) -> EngineOption | None:
    """``option name N type T default D min A max B var V …``; None for another line."""
    words = line.split()
    if words[:2] != ["option", "name"] or "type" not in words:
        return None
    at = words.index("type")
    name, rest = " ".join(words[2:at]), words[at + 1 :]
    if not rest:
        return None
    values: dict[str, list[str]] = {}
    choices: list[str] = []
    key = None
    for word in rest[1:]:
        if word in ("default", "min", "max", "var"):
            key = word
            if key == "var":
                choices.append("")
            values.setdefault(key, [])
        elif key == "var":
            choices[-1] = f"{choices[-1]} {word}".strip()
        elif key is not None:
            values[key].append(word)

    def number(key: str) -> int | None:
        try:
            return int(" ".join(values.get(key, [])))
        except ValueError:
            return None

    default = " ".join(values.get("default", []))
    return EngineOption(name, rest[0], default, number("min"), number("max"), tuple(choices))
