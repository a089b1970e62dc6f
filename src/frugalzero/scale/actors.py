"""The workers that run on Ray (plain classes; ``RayWorkers`` makes them actors).

Each holds what is costly to build (an evaluator, a Stockfish pool) from one chunk to the next
and streams every finished game back as soon as it ends (see ``frugalzero.scale.workers`` for
the protocol). Worker output to stdout goes to stderr: Ray forwards a worker's stdout to the
driver's, which must stay clean for ``--json``.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from collections.abc import Iterator
from typing import Any

Message = tuple[list[tuple[Any, Any, str]], dict[str, float]]

_GAME_INDEX = re.compile(r"g(\d+)$")


def _where() -> dict[str, Any]:
    """Where the worker runs: its process, its machine's IP (``node``) and its Ray node's id
    (``node_id``: several nodes can share one IP, e.g. a test cluster on one machine)."""
    import ray

    node_id = ray.get_runtime_context().get_node_id()
    return {
        "pid": os.getpid(),
        "node": ray.util.get_node_ip_address(),
        "node_id": node_id,
        "error": "",
    }


def game_index(game_id: str) -> int:
    """The start index a self-play record's ``game_id`` ends with (``...g17``)."""
    match = _GAME_INDEX.search(game_id)
    if match is None:
        raise ValueError(f"self-play game id {game_id!r} does not end with g<index>")
    return int(match.group(1))


class SelfPlayWorker:
    """Self-play games with one evaluator: inline on one CPU, or an inference process beside
    the search with two or more (``threads`` for the network either way)."""

    def __init__(self, cpus: int, gpus: float = 0.0) -> None:
        sys.stdout = sys.stderr
        self.cpus = cpus
        self.gpus = gpus
        self._key: tuple | None = None
        self._evaluator: Any = None

    def ready(self) -> dict[str, Any]:
        import torch

        info = _where()
        info["cuda"] = torch.cuda.is_available()
        return info

    def settings(self, evaluator):
        """The worker's evaluator settings: its CPUs as backend and threads, and the CPU as its
        device unless Ray gave it a GPU (or a share of one), so a worker without one never
        opens a CUDA context on a machine that has CUDA."""
        backend = "inline" if self.cpus == 1 else "process"
        threads = self.cpus if backend == "inline" else self.cpus - 1
        device = evaluator.device if self.gpus > 0 else "cpu"
        return dataclasses.replace(evaluator, backend=backend, threads=threads, device=device)

    def _evaluator_for(self, payload: dict[str, Any], config) -> Any:
        """The cached evaluator when net and settings are unchanged, else a new one."""
        from frugalzero.nn.evaluator import Evaluator
        from frugalzero.scale.netref import build_net

        settings = self.settings(config.evaluator)
        key = (payload["net_id"], repr(settings))
        if key != self._key:
            self.close()
            self._evaluator = Evaluator(build_net(payload), settings)
            self._key = key
        return self._evaluator

    def play(self, payload: dict[str, Any], config, starts: list) -> Iterator[Message]:
        """Play ``starts``; yield the games as they finish, keyed by start index."""
        from frugalzero.selfplay.play import SelfPlayLoop

        evaluator = self._evaluator_for(payload, config)
        expected = {start.index for start in starts}
        finished: list = []
        loop = SelfPlayLoop(evaluator, starts, config, finished.append, payload["net_id"])
        last = {"moves": 0, "simulations": 0, "leaves": 0, "batches": 0}
        while True:
            loop.run(stop=lambda: bool(finished))  # back to us whenever a game has ended
            now = {
                "moves": loop.stats["moves"],
                "simulations": loop.stats["sims"],
                "leaves": loop.driver.leaves,
                "batches": loop.driver.batches,
            }
            counters = {k: now[k] - last[k] for k in now}
            last = now
            outcomes = []
            for record in finished:
                index = game_index(record.game_id)
                if index not in expected:
                    raise ValueError(f"game {record.game_id} is not one of this chunk's")
                outcomes.append((index, record, ""))
            finished.clear()
            yield outcomes, counters
            if loop.games >= len(starts):
                return

    def close(self) -> None:
        if self._evaluator is not None:
            self._evaluator.close()
        self._evaluator, self._key = None, None


class PlayoutWorker:
    """A Stockfish pool (one engine per CPU of the worker) playing playouts: ε-Explore's
    labels and Stockfish's own games."""

    def __init__(self, engine, engines: int) -> None:
        from frugalzero.errors import UserError
        from frugalzero.expert.pool import StockfishPool

        sys.stdout = sys.stderr
        self.error = ""
        self.pool: Any = None
        try:
            self.pool = StockfishPool(engine, engines)
        except UserError as exc:  # reported by ready(): one line on the driver
            self.error = str(exc)

    def ready(self) -> dict[str, Any]:
        info = _where()
        info["error"] = self.error
        info["engine"] = self.pool.engine_name if self.pool is not None else ""
        return info

    def play(self, tasks: list) -> Iterator[Message]:
        """Play each task to its end; yield the records as they finish, keyed by game id."""
        from frugalzero.expert.pool import LabelError

        before = self.pool.stats()
        for task, future in self.pool.map_unordered(tasks, len(tasks)):
            try:
                outcome = (task.game_id, future.result(), "")
            except LabelError as exc:  # the pool retried it already
                outcome = (task.game_id, None, str(exc))
            after = self.pool.stats()
            yield [outcome], {k: v - before.get(k, 0) for k, v in after.items()}
            before = after

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
        self.pool = None
