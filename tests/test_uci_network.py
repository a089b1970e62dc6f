"""The UCI engine's network lifecycle (issue 72): ready before its inference processes start,
and an option that needs new ones built while the searches go on."""

from __future__ import annotations

import dataclasses
import threading

import chess
import pytest

from frugalzero.chess.history import GameHistory
from frugalzero.nn.config import EvaluatorConfig
from frugalzero.nn.server import InferenceServer
from frugalzero.uci import NetSearcher, SearchRequest

HOLD_S = 20.0
"""How long a held start of an inference process waits for the test to let it go. The tests
let it go as soon as what they check is decided; only where the engine waits for the held
processes itself (today's code did) does the hold run out, and the test then fails."""


@pytest.fixture(scope="module")
def tiny_file(tmp_path_factory, tiny_net):
    from frugalzero.nn.checkpoint import save_net

    path = tmp_path_factory.mktemp("net") / "tiny.safetensors"
    save_net(tiny_net, path)
    return str(path)


class HeldStarts:
    """``InferenceServer``'s start held until ``release``: ``starts`` records, per start,
    whether the thread that searches asked for it, and whether the hold ran out."""

    def __init__(self, monkeypatch) -> None:
        self.gate = threading.Event()
        self.searching: threading.Thread | None = None
        self.starts: list[dict[str, bool]] = []
        original = InferenceServer.__init__

        def held(server, *args, **kwargs) -> None:
            on_search = threading.current_thread() is self.searching
            ran_out = False if on_search else not self.gate.wait(HOLD_S)
            self.starts.append({"on_search_thread": on_search, "hold_ran_out": ran_out})
            original(server, *args, **kwargs)

        monkeypatch.setattr(InferenceServer, "__init__", held)

    def release(self) -> None:
        self.gate.set()


def _search(searcher: NetSearcher, nodes: int = 16):
    lines: list[str] = []
    request = SearchRequest(GameHistory(chess.Board()), nodes, None, False)
    move = searcher.search(request, threading.Event(), lines.append).move
    return move, lines


@pytest.mark.slow
def test_the_engine_is_ready_and_searches_before_its_inference_processes_start(
    monkeypatch, tiny_file
):
    """``readyok`` (``wait_ready``) once came after both inference processes had imported
    torch, one after the other (5-8 s after launch): now the net runs in the engine's own
    process first, and the first search is served there while the processes are held back."""
    held = HeldStarts(monkeypatch)
    held.searching = threading.current_thread()
    searcher = NetSearcher(tiny_file, default_nodes=16)
    try:
        searcher.wait_ready()  # today's code: waits for the held processes until the hold ends
        move, lines = _search(searcher)
        assert move in chess.Board().legal_moves and " nodes 17 " in lines[-1]
        served_by = searcher.evaluator.backend
        held.release()
        assert not any(s["hold_ran_out"] for s in held.starts), "ready only once they started"
        assert served_by == "inline"
        events = searcher.network.events
        assert events.index("ready") < min(
            i for i, e in enumerate(events) if e.startswith("start ('process'")
        )
        evaluator = searcher.settle()  # the processes now started: the next search takes them
        assert evaluator.backend == "process" and len(evaluator.server_pids()) == 2
        assert len(held.starts) == 2 and not any(s["on_search_thread"] for s in held.starts)
    finally:
        held.release()
        searcher.close()


@pytest.mark.slow
def test_a_threads_change_is_built_while_the_next_search_goes_on(monkeypatch, tiny_file):
    """Issue 72's sequence: ``go nodes 50``, ``Threads 1`` (two inference processes become
    one), ``go movetime 100``. The search once closed the two processes and started the new
    one itself (3-5 s, ``stop`` unheard meanwhile): now it runs on the evaluator it had while
    the new process starts in the background, and a later search takes it."""
    searcher = NetSearcher(tiny_file, default_nodes=16)
    try:
        searcher.wait_ready()
        getattr(searcher, "settle", lambda: None)()  # two inference processes in use
        _search(searcher, 50)
        before = searcher.evaluator
        assert before.backend == "process" and len(before.server_pids()) == 2
        held = HeldStarts(monkeypatch)
        held.searching = threading.current_thread()
        searcher.set_option("Threads", "1")
        searcher.set_option("NNCacheSize", "1000")  # changed in place, at the next search
        move, lines = _search(searcher)  # the new process is held: this must not wait for it
        assert move in chess.Board().legal_moves
        served_by = searcher.evaluator
        held.release()
        assert not any(s["on_search_thread"] for s in held.starts), held.starts
        assert served_by is before and before.config.cache_size == 1000
        after = searcher.settle()
        assert after is not before and len(after.server_pids()) == 1
        assert after.server_stats()["threads"] == 1 and after.config.cache_size == 1000
        assert after.misses >= 51  # the cache moved over: same net, same answers
        assert not any(s["hold_ran_out"] for s in held.starts)
        searcher.set_option("Threads", "0")  # and back: two processes, again built aside
        searcher.set_option("NNCacheSize", "0")
        _, lines = _search(searcher)
        assert searcher.evaluator is after and " hashfull " not in lines[-1]
        assert len(searcher.settle().server_pids()) == 2
    finally:
        searcher.close()


@pytest.mark.slow
def test_a_setting_that_changes_the_answers_is_served_in_process_first(tiny_file):
    """The generic path of an option that changes what the net answers (a precision here;
    a net, a history rule): built aside, in-process first on a CPU, with no cached answers of
    the old settings."""
    searcher = NetSearcher(tiny_file, default_nodes=16)
    try:
        searcher.wait_ready()
        searcher.settle()
        _search(searcher, 50)
        network = searcher.network
        network.want(dataclasses.replace(network.settings, precision="fp32"))
        after = searcher.settle()
        assert after.backend == "process" and after.precision == "fp32"
        assert after.misses == 0  # nothing carried over from the other precision
        started = [e for e in network.events if e.startswith("start") and "fp32" in e]
        assert [e.split(",")[0] for e in started] == ["start ('inline'", "start ('process'"]
    finally:
        searcher.close()


@pytest.mark.slow
def test_closing_while_the_processes_start_kills_them(monkeypatch, tiny_file):
    """An engine that quits right after ``readyok`` (its inference processes still importing
    torch) ends them at once rather than waiting for them to start."""
    spawned: list[InferenceServer] = []
    original = InferenceServer.wait_started
    gate = threading.Event()

    def recorded(server) -> None:
        spawned.append(server)
        gate.set()
        original(server)

    monkeypatch.setattr(InferenceServer, "wait_started", recorded)
    searcher = NetSearcher(tiny_file, default_nodes=16)
    searcher.wait_ready()
    assert gate.wait(HOLD_S)  # the builder is starting them now
    searcher.close()
    assert spawned and not any(server.alive for server in spawned)
    assert not searcher.network._builder.is_alive()


def test_a_server_killed_while_it_starts_says_so_and_tidies_up(tiny_net):
    config = EvaluatorConfig(device="cpu", precision="fp32", compile="off")
    server = InferenceServer(tiny_net, config, threads=1, wait=False)
    server.kill()
    with pytest.raises(RuntimeError, match="stopped while starting"):
        server.wait_started()
    server.close()  # nothing left to close: no error
    assert not server.alive


def test_start_servers_lets_another_thread_stop_them(tiny_net):
    from frugalzero.nn.server import start_servers

    config = EvaluatorConfig(device="cpu", precision="fp32", compile="off")
    seen: list[InferenceServer] = []

    def spawned(servers: list[InferenceServer]) -> None:
        seen.extend(servers)
        servers[0].kill()

    with pytest.raises(RuntimeError, match="stopped while starting"):
        start_servers(tiny_net, config, 1, 2, spawned)
    assert len(seen) == 2 and not any(server.alive for server in seen)
