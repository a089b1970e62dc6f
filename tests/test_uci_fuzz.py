"""The seeded UCI fuzzer (``frugalzero.uci.fuzz``): what it sends, what it holds an engine to,
that it catches a broken engine with the commands that reproduce it, and a short run against
the real ``frugalzero uci`` (the long one is ``frugalzero bench uci-fuzz``)."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections import Counter

import pytest

from frugalzero.runtime.interpreter import own_code_env
from frugalzero.uci.fuzz.commands import HOSTILE, RETUNE, Fuzzer
from frugalzero.uci.fuzz.driver import Bounds
from frugalzero.uci.fuzz.oracle import Oracle
from frugalzero.uci.fuzz.run import FuzzSettings, fuzz, smallest
from frugalzero.uci.fuzz.steps import INFINITE, LONG, PONDER, SHORT, Step, parse_option

UCI_ANSWER = """\
option name MoveOverhead type spin default 100 min 0 max 5000
option name Odds type combo default none var none var knight var rook var queen
option name Ponder type check default false
option name Nodes type spin default 400 min 1 max 10000000
option name Threads type spin default 0 min 0 max 256
option name Temperature type string default 0
option name MultiPV type spin default 1 min 1 max 256
option name NNCacheSize type spin default 200000 min 0 max 10000000
option name RamLimitMb type spin default 6000 min 1 max 24000
option name Clear Hash type button
"""
OPTIONS = [o for o in map(parse_option, UCI_ANSWER.splitlines()) if o is not None]

READY_S = 5.0
"""``readyok`` within this in the tests: the promise is a second (``bench uci-fuzz`` holds the
engine to it), but these run beside the rest of the suite on two cores, where load alone can
stretch a second; an engine that stops reading its input never answers, which this catches as
surely."""


def test_option_lines_are_read_with_their_ranges_and_choices():
    by_name = {o.name: o for o in OPTIONS}
    assert by_name["Nodes"].kind == "spin" and by_name["Nodes"].maximum == 10_000_000
    assert by_name["Odds"].choices == ("none", "knight", "rook", "queen")
    assert by_name["Clear Hash"].kind == "button" and by_name["Temperature"].default == "0"
    assert parse_option("info string option name X") is None


@pytest.mark.slow
def test_the_fuzzer_is_seeded_and_sends_every_command_and_hostile_number():
    def lines(seed: int) -> list[str]:
        fuzzer = Fuzzer(seed, OPTIONS)
        sequences = [fuzzer.opening()] + [fuzzer.sequence() for _ in range(600)]
        steps = [step for s in sequences + [fuzzer.ending()] for step in s.steps()]
        return [step.line for step in steps if step.line is not None]

    sent = lines(7)
    assert sent == lines(7) and sent != lines(8)
    words = Counter(line.split()[0] for line in sent if line.split())
    for command in ("position", "go", "stop", "ponderhit", "isready", "setoption", "ucinewgame"):
        assert words[command] > 5, command
    gos = " ".join(line for line in sent if line.startswith("go"))
    for word in ("nodes", "depth", "movetime", "wtime", "btime", "winc", "binc", "movestogo"):
        assert f"{word} " in gos, word
    for word in ("mate", "infinite", "ponder", "searchmoves"):
        assert word in gos, word
    for number in ("-1", "0", "1000000000000000", "99999999999", "abc"):
        assert f" {number} " in gos + " " or f" {number}" in gos, number
    options = " ".join(line for line in sent if line.startswith("setoption"))
    for option in OPTIONS:
        assert f"name {option.name} value" in options, option.name
    for number in HOSTILE[:5]:
        assert f"value {number}" in options, number
    assert any("position fen" in line and "moves" in line for line in sent)
    endings = {Fuzzer(seed, OPTIONS).ending().steps()[-1].line for seed in range(20)}
    assert endings == {None, "quit"}  # the end of input, or quit


@pytest.mark.slow
def test_a_search_that_may_not_end_soon_is_stopped_in_its_own_action():
    """``stop`` follows every go that is infinite, pondering, or not sure to end soon (huge
    limits, heavy options), in the same action (kept together when shrinking); such a go is
    sent once the earlier ones are answered, so its stop is unambiguous."""
    fuzzer = Fuzzer(3, OPTIONS)
    kinds: Counter = Counter()
    for _ in range(800):
        for action in fuzzer.sequence().actions:
            for at, step in enumerate(action):
                if step.go is None:
                    continue
                kinds[step.go] += 1
                if step.go == SHORT:
                    continue
                assert step.idle_first
                rest = [s.line for s in action[at + 1 :]]
                after = step.after_hit if step.go == PONDER else step.go
                assert "stop" in rest or (after == SHORT and "ponderhit" in rest), action
    assert all(kinds[kind] > 20 for kind in (SHORT, LONG, INFINITE, PONDER)), kinds


def test_option_changes_are_interleaved_with_searches():
    """Sane new values of the options that shape a search (threads, cache, lines, nodes …) are
    set while a search runs, with a search under them after, in the same action."""
    fuzzer = Fuzzer(5, OPTIONS)
    retuned: Counter = Counter()
    for _ in range(300):
        for action in fuzzer.sequence().actions:
            lines = [step.line or "" for step in action]
            gos = [at for at, line in enumerate(lines) if line.startswith("go")]
            for at, line in enumerate(lines):
                words = line.split()
                if words[:1] == ["setoption"] and len(gos) > 1 and gos[0] < at < gos[-1]:
                    retuned[words[2].lower()] += words[-1] in RETUNE.get(words[2].lower(), ())
    assert all(retuned[name] > 5 for name in ("threads", "nncachesize", "multipv", "nodes"))


def test_the_oracle_holds_one_bestmove_per_go_and_none_before_stop():
    oracle = Oracle()
    moves = frozenset({"e2e4", "d2d4"})
    oracle.sent(Step("go nodes 5", go=SHORT, moves=moves))
    assert oracle.received("info depth 1 pv e2e4") is None
    assert oracle.received("bestmove e2e4 ponder e7e5") is None
    assert oracle.received("bestmove d2d4").kind == "extra"
    oracle.sent(Step("go infinite", go=INFINITE, moves=moves))
    assert oracle.received("bestmove e2e4").kind == "early"
    oracle.sent(Step("go ponder nodes 5", go=PONDER, after_hit=SHORT))
    oracle.sent(Step("ponderhit"))
    assert oracle.received("bestmove a2a3") is None  # a ponderhit turned it into its limits
    oracle.sent(Step("go ponder", go=PONDER, after_hit=SHORT))
    oracle.sent(Step("stop"))
    assert oracle.received("bestmove g1f3") is None
    oracle.sent(Step("go nodes 1", go=SHORT, moves=moves))
    assert oracle.received("bestmove a2a3").kind == "illegal"
    oracle.sent(Step("go nodes 1", go=SHORT, moves=frozenset({"0000"})))
    assert oracle.received("bestmove 0000") is None and oracle.unanswered == 0
    assert oracle.received("readyok").kind == "readyok"  # no isready asked for it
    assert (oracle.gos, oracle.bestmoves, oracle.extra) == (6, 7, 1)


FAKE_ENGINE = textwrap.dedent(
    """\
    import sys
    from frugalzero.uci.protocol import BestMove, Option, UciEngine

    FAULT = sys.argv[1]
    hoard = []

    class Instant:
        def search(self, request, stop, info):
            if request.infinite:
                if FAULT == "grows":  # the fault planted: memory that is never given back
                    hoard.append(bytearray(64 << 20))
                stop.wait()
            moves = request.searchmoves or list(request.history.board.legal_moves)
            return BestMove(moves[0])

        def new_game(self):
            pass

        def set_option(self, name, value):
            pass

    class Engine(UciEngine):
        def _take(self, line, read_at):
            if FAULT == "mute-quit" and line == "quit":  # the fault planted: quit drops the gos
                with self._lock:
                    self._quiet = True
            return super()._take(line, read_at)

        def handle(self, line):
            words = line.split()
            if FAULT == "drops" and words[0] == "go" and ("-1" in words or "-5" in words):
                return True  # the fault planted: a go with a negative number never answered
            return super().handle(line)

    options = [Option("Nodes", "spin", "32", 1, 10_000_000), Option("RamLimitMb", "spin",
               "64", 1, 100_000)]
    Engine(Instant(), sys.stdin, sys.stdout, options).run()
    """
)


def _fake_settings(
    tmp_path, fault: str, commands: int, seed: int = 11, answer_s: float = 3.0, **more
) -> FuzzSettings:
    """The fake engine answers at once: ``answer_s`` is hundreds of times what it needs."""
    script = tmp_path / "engine.py"
    script.write_text(FAKE_ENGINE)
    bounds = Bounds(ready_s=READY_S, answer_s=answer_s, exit_s=20.0, margin_mb=64.0)
    return FuzzSettings(
        [sys.executable, str(script), fault],
        seed,
        commands,
        bounds=bounds,
        env=own_code_env(),
        **more,
    )


@pytest.mark.slow
def test_the_protocol_loop_with_an_instant_searcher_survives_the_fuzzer(tmp_path):
    """The engine's own protocol loop (``UciEngine``) with a searcher that answers at once:
    hundreds of commands in seconds, every go answered once, in two engine processes (each
    ended by ``quit`` or the end of its input)."""
    report = fuzz(_fake_settings(tmp_path, "none", 600, session_commands=300))
    assert not report.failures, json.dumps(report.failures, indent=1)
    assert report.sessions == 2 and report.commands >= 600
    assert report.gos == report.bestmoves > 80 and report.missing == report.extra == 0


@pytest.mark.slow
def test_a_dropped_go_is_reported_with_its_seed_and_the_commands_that_reproduce_it(tmp_path):
    """A fake engine that never answers a go with a negative number: the run stops at the
    first, and the commands that reproduce it on a fresh engine are replayed and shrunk (a few
    tries here: ``smallest`` is tested on its own below)."""
    settings = _fake_settings(tmp_path, "drops", 3_000, seed=5, answer_s=1.5, shrink_tries=3)
    report = fuzz(settings)
    (failure,) = report.failures
    assert failure["kind"] == "missing" and failure["seed"] == "5.0"
    assert report.missing == 1 and report.gos == report.bestmoves + 1

    def dropped(lines: list[str]) -> list[str]:
        commands = [line.split(" s) ")[-1] for line in lines]  # without "(pause N s) "
        return [c for c in commands if c.startswith("go") and {"-1", "-5"} & set(c.split())]

    assert any(go in failure["detail"] for go in dropped(failure["commands"]))
    shrunk = failure["shrunk"]
    assert failure["reproduced"] and shrunk[:2] == ["uci", "isready"] and dropped(shrunk)
    assert len(shrunk) < len(failure["commands"])


@pytest.mark.slow
def test_a_go_left_unanswered_at_quit_is_reported(tmp_path):
    """Every ``go`` read before ``quit`` is owed its ``bestmove`` (a running search stops and
    answers): an engine that writes nothing more after ``quit`` fails the session that ended
    with a ``go`` still searching."""
    settings = _fake_settings(tmp_path, "mute-quit", 6_000, seed=5, session_commands=30)
    (failure,) = fuzz(settings).failures
    assert failure["kind"] == "missing" and "after quit" in failure["detail"]


def test_shrinking_keeps_only_what_the_failure_needs():
    asked = []

    def fails(items: list[int]) -> bool:
        asked.append(items)
        return 3 in items and 11 in items

    assert smallest(list(range(16)), fails, tries=100) == [3, 11]
    assert len(asked) < 30
    assert len(smallest(list(range(16)), fails, tries=2)) > 2  # out of tries: what it had


@pytest.mark.slow
def test_memory_past_the_limit_is_reported(tmp_path):
    settings = _fake_settings(tmp_path, "grows", 3_000, ram_limit_mb=16)
    (failure,) = fuzz(settings).failures
    assert failure["kind"] == "memory" and "over the limit" in failure["detail"]


@pytest.mark.slow
def test_the_real_engine_survives_a_short_fuzz_run():
    """``frugalzero bench uci-fuzz`` on ``frugalzero uci --net small``: a few hundred commands,
    every go answered exactly once, readyok always, RSS under its limit, and ``RamLimitMb``
    listed and set."""
    from frugalzero.bench import ucifuzz

    parser = argparse.ArgumentParser()
    ucifuzz.add_arguments(parser)
    args = ["--commands", "250", "--session-commands", "250", "--seed", "1"]
    args += ["--ready-s", str(READY_S), "--max-failures", "1", "--shrink-tries", "0"]
    result = ucifuzz.run(parser.parse_args(args))
    assert result["ram_limit_mb"] == 512, "the engine lists no RamLimitMb option"
    assert result["ok"], json.dumps(result["failures"], indent=1)
    assert result["commands"] >= 250 and result["gos"] >= 25
    assert result["gos"] == result["bestmoves"] and result["missing"] == result["extra"] == 0
    assert result["readyok_max_s"] <= READY_S
    assert result["rss_peak_mb"] <= result["rss_limit_mb"]


def test_bench_uci_fuzz_exits_non_zero_when_the_fuzzer_finds_a_failure(monkeypatch, capsys):
    from frugalzero.bench import ucifuzz
    from frugalzero.cli import main

    verdict = {"commands": 1, "failures": [{"kind": "missing"}], "ok": False}
    monkeypatch.setattr(ucifuzz, "run", lambda args: dict(verdict))
    assert main(["bench", "uci-fuzz", "--json"]) == 1  # a soak in a script fails loudly
    assert json.loads(capsys.readouterr().out)["ok"] is False
    verdict.update(failures=[], ok=True)
    assert main(["bench", "uci-fuzz", "--json"]) == 0
