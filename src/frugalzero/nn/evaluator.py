"""Batched network evaluation: positions in, priors over legal moves and values out.

Per position, python-chess needs ~60 us to list the legal moves and we need ~20 us more for
the history frames, while a bf16 forward pass of the ``small`` net costs ~150-250 us of one
core. Run one after the other, the Python half adds ~40%. A thread cannot hide it: PyTorch
re-takes the GIL between operators and a busy Python thread starves it (measured: 128 instead
of 5000 positions/s). So by default the network lives in its own *inference process*: the
caller lists moves and builds compact inputs (history frames, meta, legal-move indices), the
inference process encodes the planes, runs the net and the masked softmax, and the two overlap
whenever the caller submits the next batch before collecting the last (``nn/server.py``).
``backend='inline'`` runs everything in the caller (tests, tiny jobs, machines with one core);
``Evaluator.connect`` opens an evaluator on an inference process that another process started
and shares with others (self-play workers feeding one device).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import chess
import numpy as np

from frugalzero.chess.encoding import frames_array
from frugalzero.chess.history import NetInput, net_input_from_board
from frugalzero.nn.config import EvaluatorConfig, NetConfig
from frugalzero.nn.model import PolicyValueNet
from frugalzero.nn.runner import Batch, NetRunner, Output
from frugalzero.nn.server import Channel, InferenceServer, ServerClient, start_servers
from frugalzero.runtime.cores import available_cores
from frugalzero.runtime.device import set_threads
from frugalzero.search.types import Evaluation

__all__ = [
    "Evaluator",
    "EvaluatorConfig",
    "NetRunner",
    "Pending",
    "PendingRows",
    "ServerClient",
    "pack_inputs",
]


class Pending:
    """A submitted batch; ``result()`` waits for it and returns one Evaluation per position."""

    def __init__(self, evaluator: Evaluator, results: list[Evaluation | None]) -> None:
        self._evaluator = evaluator
        self._results = results
        self._misses: list[int] = []  # positions sent to the network, in batch order
        self._keys: list[tuple] = []
        self._counts: np.ndarray | None = None
        self._job: Any = None

    def result(self) -> list[Evaluation]:
        if self._job is not None:
            priors, values, wdl = self._evaluator._collect(self._job)
            self._job = None
            counts = self._counts
            assert counts is not None
            cache = self._evaluator._cache
            for row, (i, key) in enumerate(zip(self._misses, self._keys, strict=True)):
                ev = Evaluation(
                    priors[row, : counts[row]].copy(),
                    float(values[row]),
                    None if wdl is None else wdl[row],
                )
                self._results[i] = ev
                if cache is not None:
                    cache[key] = ev
            self._evaluator._trim_cache()
        return self._results  # type: ignore[return-value]


class PendingRows:
    """A batch of packed rows submitted with ``Evaluator.submit_rows``; ``result()`` waits for
    it: (logits of each row's legal moves, float32, padded with -inf; values; WDL or None)."""

    def __init__(self, evaluator: Evaluator, job: Any) -> None:
        self._evaluator = evaluator
        self._job = job

    def result(self) -> Output:
        return self._evaluator._collect(self._job)


class Evaluator:
    """Evaluates batches of positions with one network. Not thread-safe; one per process.

    Two ways in: ``submit`` takes positions (``NetInput``s or boards) and gives back an
    ``Evaluation`` each, with its own cache of them in Python; ``submit_rows`` takes the packed
    rows the native search gathers (``frugalzero.search.native``) and gives back the legal
    moves' logits, with the cache of answers in C++ (``native_cache``): no per-position Python
    on either side of the inference process."""

    def __init__(
        self,
        net: PolicyValueNet,
        config: EvaluatorConfig | None = None,
        spawned: Callable[[list[InferenceServer]], None] | None = None,
    ) -> None:
        """``spawned`` sees the inference processes once spawned, before they are waited for
        (``nn.server.start_servers``): another thread may then ``kill`` them."""
        self.config = config = config or EvaluatorConfig()
        backend = config.backend
        if backend == "auto":
            backend = "process" if available_cores() >= 2 else "inline"
        if backend not in ("process", "inline"):
            raise ValueError(f"unknown evaluator backend {backend!r}")
        self.backend = backend
        processes = config.servers if backend == "process" else 0
        self.threads = self._threads_for(config.threads, processes)
        self._processes = start_servers(net, config, self.threads, processes, spawned)
        self._setup(net.config, [p.owner for p in self._processes])
        if self._processes:
            self.precision = self._processes[0].precision
            self.compiled = self._processes[0].compiled
        else:
            self._runner = NetRunner(net, config, self.threads, compile=config.compile == "on")
            self.precision = self._runner.precision
            self.compiled = self._runner.compiled

    @classmethod
    def connect(cls, client: ServerClient, config: EvaluatorConfig | None = None) -> Evaluator:
        """An evaluator on an inference process that another process started and shares
        (``InferenceServer.clients``): its own cache, the server's network."""
        self = cls.__new__(cls)
        self.config = config or EvaluatorConfig()
        self.backend = "process"
        self.threads = 0  # the server's own
        self._processes = []
        self._setup(NetConfig(**client.net_config), [Channel.open(client)])
        self._pids = [client.pid]
        self.precision, self.compiled = client.precision, client.compiled
        return self

    def _setup(self, net_config: NetConfig, servers: list[Channel]) -> None:
        self.head = net_config.value_head
        self.net_config = net_config
        self._runner: NetRunner | None = None
        self._servers = servers
        self._pids = [p.pid for p in self._processes]
        self._turn = 0  # the server that takes the next batch
        self._cache: OrderedDict[tuple, Evaluation] | None = (
            OrderedDict() if self.config.cache_size > 0 else None
        )
        self._native_cache = None  # frugalzero._native.EvalCache, made when first asked for
        self._hits = 0
        self._misses = 0

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public API ---------------------------------------------------------------------------
    def evaluate(self, positions: Sequence[NetInput | chess.Board]) -> list[Evaluation]:
        return self.submit(positions).result()

    def submit(self, positions: Sequence[NetInput | chess.Board]) -> Pending:
        """Build the inputs now; the network runs in the background with the process backend."""
        inputs = [p if isinstance(p, NetInput) else net_input_from_board(p) for p in positions]
        pending = Pending(self, [None] * len(inputs))
        cache = self._cache
        for i, inp in enumerate(inputs):
            hit = cache.get(inp.key) if cache is not None else None
            if hit is not None:
                cache.move_to_end(inp.key)
                pending._results[i] = hit
            else:
                pending._misses.append(i)
                pending._keys.append(inp.key)
        self._hits += len(inputs) - len(pending._misses)
        self._misses += len(pending._misses)
        if pending._misses:
            batch = pack_inputs([inputs[i] for i in pending._misses])
            pending._counts = batch[3]
            if self._servers:
                server = self._turn
                self._turn = (server + 1) % len(self._servers)
                pending._job = (server, self._servers[server].send(batch))
            else:
                assert self._runner is not None
                pending._job = ("inline", self._runner.run(*batch))
        return pending

    def submit_rows(
        self, frames: np.ndarray, meta: np.ndarray, index: np.ndarray, counts: np.ndarray
    ) -> PendingRows:
        """Packed rows as ``pack_inputs`` makes them (frames (N, 8, 13) uint64, meta (N, 7),
        padded policy indices (N, W), counts (N,)) to the network, which answers with the legal
        moves' logits: the native search's softmax (at its policy temperature) is its own."""
        batch = (frames, meta, index, counts)
        if self._servers:
            server = self._turn
            self._turn = (server + 1) % len(self._servers)
            return PendingRows(self, (server, self._servers[server].send(batch, logits=True)))
        assert self._runner is not None
        return PendingRows(self, ("inline", self._runner.run(*batch, softmax=False)))

    def submit_leaves(self, leaves) -> PendingRows:
        """``submit_rows`` for a native ``LeafBatch``: with an inference process its rows go
        straight into the shared memory."""
        if self._servers:
            server = self._turn
            self._turn = (server + 1) % len(self._servers)
            return PendingRows(self, (server, self._servers[server].send_leaves(leaves)))
        width = leaves.width
        return self.submit_rows(
            leaves.frames(), leaves.meta(), leaves.indices(width), leaves.counts()
        )

    @property
    def native_cache(self):
        """The native search's cache of network answers (``frugalzero._native.EvalCache``, at
        most ``cache_size`` positions), or None without a cache."""
        if self._native_cache is None and self.config.cache_size > 0:
            from frugalzero import _native

            self._native_cache = _native.EvalCache(self.config.cache_size)
        return self._native_cache

    @property
    def hits(self) -> int:
        """Positions answered from a cache (both caches)."""
        native = self._native_cache
        return self._hits + (native.hits if native is not None else 0)

    @property
    def misses(self) -> int:
        """Positions the network evaluated for a cache that did not have them."""
        native = self._native_cache
        return self._misses + (native.misses if native is not None else 0)

    def update_weights(self, net: PolicyValueNet) -> None:
        """Swap in new weights of the same architecture; forgets cached evaluations."""
        if self._servers:
            for server in self._servers:
                server.load_weights(net)
        else:
            assert self._runner is not None
            self._runner.load_state_dict(net.state_dict())
        self.clear_cache()

    def server_stats(self) -> dict[str, float]:
        """Busy seconds, batches, positions and PyTorch threads of the inference processes so
        far, summed ({} inline); ``servers`` says how many there are."""
        if not self._servers:
            return {}
        total: dict[str, float] = {"servers": len(self._servers)}
        for server in self._servers:
            for key, value in server.stats().items():
                total[key] = total.get(key, 0) + value
        return total

    def server_pids(self) -> list[int]:
        """Process ids of the inference processes ([] inline): for pinning, monitoring."""
        return list(self._pids)

    def set_threads(self, threads: int) -> None:
        """Run the network with ``threads`` PyTorch threads per inference process from now on
        (0: the default, as ``EvaluatorConfig.threads``), so a UCI ``Threads`` option needs no
        reload."""
        self.threads = self._threads_for(threads, len(self._servers))
        for server in self._servers:
            server.set_threads(self.threads)
        if self._runner is not None:
            set_threads(self.threads, self._runner.device)

    def resize_cache(self, size: int) -> None:
        """Keep at most ``size`` positions from now on (0: no cache); the least recently used
        go first."""
        self.config = replace(self.config, cache_size=size)
        if size == 0:
            self._cache = None
            self._native_cache = None
        elif self._cache is None:
            self._cache = OrderedDict()
        if self._native_cache is not None:
            self._native_cache.resize(size)
        self._trim_cache()

    @property
    def cache_permille(self) -> int | None:
        """How full the cache is, per mille of its size (None without a cache)."""
        if self._cache is None:
            return None
        native = self._native_cache.size if self._native_cache is not None else 0
        return min(1000, (len(self._cache) + native) * 1000 // self.config.cache_size)

    def take_caches(self, other: Evaluator) -> None:
        """Keep ``other``'s cached answers (and its hit counts) from now on: an evaluator that
        replaces it with the same network and precision (more inference processes, another
        layout) starts warm. ``other`` is left without them; resized to this one's size."""
        self._cache, other._cache = other._cache, None
        self._native_cache, other._native_cache = other._native_cache, None
        self._hits, self._misses = other._hits, other._misses
        self.resize_cache(self.config.cache_size)

    def clear_cache(self) -> None:
        if self._cache is not None:
            self._cache.clear()
        if self._native_cache is not None:
            self._native_cache.clear()

    def close(self) -> None:
        if self._processes:
            for process in self._processes:
                process.close()
        else:
            for server in self._servers:
                server.close()
        self._processes, self._servers = [], []

    # -- internals ----------------------------------------------------------------------------
    @staticmethod
    def _threads_for(threads: int, processes: int) -> int:
        """Threads per inference process (``processes``; 0: inline): ``threads``, or for 0 the
        cores not taken by the caller and the other processes (at least 1)."""
        free = available_cores() - (processes > 0)
        return threads or max(1, free // max(1, processes))

    def _collect(self, job: Any) -> Output:
        if isinstance(job, tuple) and job and job[0] == "inline":
            return job[1]
        server, job_id = job
        return self._servers[server].wait(job_id)

    def _trim_cache(self) -> None:
        cache = self._cache
        if cache is not None:
            while len(cache) > self.config.cache_size:
                cache.popitem(last=False)


def pack_inputs(inputs: Sequence[NetInput]) -> Batch:
    """Compact arrays for a batch: frames (N, 8, 13), meta (N, 7), padded move indices, counts."""
    frames = frames_array([inp.frames for inp in inputs], len(inputs))
    meta = np.array([inp.meta for inp in inputs], dtype=np.int64)
    counts = np.array([len(inp.indices) for inp in inputs], dtype=np.int64)
    index = np.zeros((len(inputs), max(1, int(counts.max()))), dtype=np.int64)
    for row, inp in enumerate(inputs):
        index[row, : len(inp.indices)] = inp.indices
    return frames, meta, index, counts
