"""Batched network evaluation: positions in, priors over legal moves and values out.

Per position, python-chess needs ~60 us to list the legal moves and we need ~20 us more for
the history frames, while a bf16 forward pass of the ``small`` net costs ~150-250 us of one
core. Run one after the other, the Python half adds ~40%. A thread cannot hide it: PyTorch
re-takes the GIL between operators and a busy Python thread starves it (measured: 128 instead
of 5000 positions/s). So by default the network lives in its own *inference process*: the
caller lists moves and builds compact inputs (history frames, meta, legal-move indices), the
inference process encodes the planes, runs the net and the masked softmax, and the two overlap
whenever the caller submits the next batch before collecting the last. ``backend='inline'``
runs everything in the caller (tests, tiny jobs, machines with one core).
"""

from __future__ import annotations

import copy
import multiprocessing as mp
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from multiprocessing.shared_memory import SharedMemory
from typing import Any, Literal

import chess
import numpy as np
import torch

from frugalzero.chess.encoding import FRAME_WORDS, HISTORY, encode, frames_array
from frugalzero.chess.history import NetInput, net_input_from_board
from frugalzero.config import check
from frugalzero.nn.model import NetConfig, PolicyValueNet, value_from_output
from frugalzero.runtime.cores import available_cores
from frugalzero.runtime.device import (
    autocast,
    compile_module,
    place,
    resolve_device,
    resolve_precision,
    set_threads,
)
from frugalzero.runtime.weights import arrays_to_state_dict, weights_to_arrays
from frugalzero.search.types import Evaluation

Batch = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # frames, meta, index, counts
Output = tuple[np.ndarray, np.ndarray, np.ndarray | None]  # priors (N, L), values, wdl


@dataclass
class EvaluatorConfig:
    """How the network is run; every default was measured to win on a 2-core CPU."""

    device: str = "auto"
    """'auto' (CUDA when present, else CPU), 'cpu', 'cuda' or 'cuda:N'."""
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"
    """'auto' (fp16 on CUDA, bf16 on CPUs with native bf16, else fp32), 'fp32', 'bf16', 'fp16'."""
    threads: int = 0
    """PyTorch intra-op threads on CPU, per inference process; 0 = the cores not taken by the
    caller and the other inference processes (at least 1), all of them for 'inline'."""
    servers: int = 1
    """Inference processes ('process' backend), each taking whole batches in turn. On a CPU,
    two single-threaded processes run two small batches at once with no threads to
    synchronise, where one two-threaded process runs them one after the other, its threads
    spinning whenever the caller holds a core (one game's search: a 16-leaf batch every few
    milliseconds). Keep as many batches in flight as there are processes."""
    backend: Literal["auto", "process", "inline"] = "auto"
    """'process' (network in an inference process, overlapping the caller), 'inline', or 'auto'
    ('process' when the machine has 2 or more cores)."""
    cache_size: int = 100_000
    """Positions remembered (LRU); 0 turns the cache off."""
    channels_last: bool = True
    """NHWC memory layout, which oneDNN and cuDNN convolutions prefer."""
    compile: Literal["auto", "on", "off"] = "auto"
    """'on', 'off' or 'auto' (on with the process backend): torch.compile with frozen, prepacked
    weights runs the net ~1.3x faster on CPU; it costs 5-20 s once and needs a C++ compiler,
    and falls back to eager if compiling fails."""

    def __post_init__(self) -> None:
        checks = [
            (self.threads >= 0, "threads must be >= 0"),
            (self.servers >= 1, "servers must be at least 1"),
            (self.cache_size >= 0, "cache_size must be >= 0"),
        ]
        check(self, "evaluator", checks)


class NetRunner:
    """A copy of a network on its device, with the precision and layout chosen once; the
    caller's network is never moved, converted or switched to eval mode."""

    def __init__(
        self, net: PolicyValueNet, config: EvaluatorConfig, threads: int, compile: bool = False
    ) -> None:
        self.device = resolve_device(config.device, "evaluator")
        self.precision, self.dtype = resolve_precision(config.precision, self.device)
        self.channels_last = config.channels_last
        self.threads = threads
        set_threads(threads, self.device)
        self.net = place(copy.deepcopy(net), self.device, config.channels_last).eval()
        self.head = net.config.value_head
        self._model = self.net
        self.compiled = False
        if compile:
            self._compile()

    def _compile(self) -> None:
        planes = torch.zeros(64, self.net.config.input_planes, 8, 8)
        self._model, self.compiled = compile_module(
            self.net, self.device, freeze=True, probe=lambda model: self._forward(model, planes)
        )

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.net.load_state_dict(state)
        if self.compiled:  # frozen weights are baked into the compiled graph
            torch._dynamo.reset()
            self._compile()

    def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The network alone on ready planes, exactly as evaluation runs it."""
        return self._forward(self._model, planes)

    def _forward(self, model, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = planes.to(self.device, non_blocking=True)
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.inference_mode(), autocast(self.device, self.dtype):
            return model(x)

    def run(
        self, frames: np.ndarray, meta: np.ndarray, index: np.ndarray, counts: np.ndarray
    ) -> Output:
        """Encode, forward, and softmax restricted to each position's legal moves."""
        x = torch.from_numpy(encode(frames, meta))
        if self.device.type == "cuda":
            x = x.pin_memory()
        logits, value = self.forward(x)
        with torch.inference_mode():
            idx = torch.from_numpy(index).to(self.device)
            n_legal = torch.from_numpy(counts).to(self.device)
            illegal = torch.arange(idx.shape[1], device=self.device)[None, :] >= n_legal[:, None]
            legal = logits.float().gather(1, idx).masked_fill_(illegal, float("-inf"))
            priors = torch.softmax(legal, dim=1).nan_to_num_(0.0)  # rows with no legal move
            values = value_from_output(value, self.head)
            wdl = torch.softmax(value.float(), dim=1).cpu().numpy() if self.head == "wdl" else None
            return priors.cpu().numpy(), values.cpu().numpy(), wdl


class _Slots:
    """Batch buffers in shared memory: the caller writes inputs, the inference process writes
    outputs, and only slot numbers travel through the pipe (a large message would block the
    sender until the other side has finished its batch, serialising the two processes)."""

    WIDTH = 256  # most legal moves a chess position can have is 218

    def __init__(self, slots: int, max_batch: int, name: str | None = None) -> None:
        from frugalzero.chess.encoding import FRAME_BYTES, HISTORY, META_FIELDS

        n, w = max_batch, self.WIDTH
        self.layout = {
            "frames": ((n, HISTORY * FRAME_BYTES // 8), np.uint64),
            "meta": ((n, META_FIELDS), np.int64),
            "index": ((n, w), np.int16),
            "counts": ((n,), np.int64),
            "priors": ((n, w), np.float32),
            "values": ((n,), np.float32),
            "wdl": ((n, 3), np.float32),
        }
        sizes = {
            k: int(np.prod(shape)) * np.dtype(dt).itemsize for k, (shape, dt) in self.layout.items()
        }
        self.slot_bytes = sum(sizes.values())
        self.slots = slots
        self.max_batch = max_batch
        total = slots * self.slot_bytes
        self.shm = SharedMemory(name=name, create=name is None, size=total if name is None else 0)
        self.views: list[dict[str, np.ndarray]] = []
        for slot in range(slots):
            offset, views = slot * self.slot_bytes, {}
            for key, (shape, dtype) in self.layout.items():
                views[key] = np.ndarray(shape, dtype=dtype, buffer=self.shm.buf, offset=offset)
                offset += sizes[key]
            self.views.append(views)

    def close(self, unlink: bool) -> None:
        self.views.clear()
        self.shm.close()
        if unlink:
            self.shm.unlink()


def _serve(
    conn,
    config: dict[str, Any],
    net_config: dict[str, Any],
    threads: int,
    shm: tuple[str, int, int],
) -> None:
    """Inference process: take the weights, then answer batch slots in order until the pipe
    closes."""
    net = PolicyValueNet(NetConfig(**net_config))
    net.load_state_dict(arrays_to_state_dict(conn.recv()))
    config = EvaluatorConfig(**config)
    runner = NetRunner(net, config, threads, compile=config.compile != "off")
    del net  # the runner works on its own copy
    slots = _Slots(shm[1], shm[2], name=shm[0])
    conn.send(("ready", runner.precision, runner.compiled))
    busy = positions = batches = 0
    try:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return
            if message is None:
                return
            if message[0] == "stats":
                counts = {"busy_s": busy, "batches": batches, "positions": positions}
                conn.send(("stats", {**counts, "threads": torch.get_num_threads()}))
                continue
            if message[0] == "threads":
                set_threads(message[1], runner.device)
                continue
            if message[0] == "weights":
                runner.load_state_dict(arrays_to_state_dict(message[1]))
                continue
            slot, n, width = message
            view = slots.views[slot]
            start = time.perf_counter()
            try:
                frames = view["frames"][:n].reshape(n, HISTORY, FRAME_WORDS)
                index = view["index"][:n, :width].astype(np.int64)
                priors, values, wdl = runner.run(
                    frames, view["meta"][:n], index, view["counts"][:n]
                )
                view["priors"][:n, :width] = priors
                view["values"][:n] = values
                if wdl is not None:
                    view["wdl"][:n] = wdl
                busy += time.perf_counter() - start
                batches += 1
                positions += n
                conn.send((slot, None))
            except Exception as exc:  # reported to the caller, who raises it
                conn.send((slot, f"inference process failed: {exc!r}"))
    finally:
        slots.close(unlink=False)


class _ProcessBackend:
    """The network in a spawned inference process, fed through shared-memory slots."""

    def __init__(
        self,
        net: PolicyValueNet,
        config: EvaluatorConfig,
        threads: int,
        slots: int = 4,
        max_batch: int = 1024,
    ) -> None:
        self._slots = _Slots(slots, max_batch)
        self._wdl = net.config.value_head == "wdl"
        ctx = mp.get_context("spawn")  # fork after PyTorch threads started can deadlock
        self._conn, child = ctx.Pipe()
        shm = (self._slots.shm.name, slots, max_batch)
        # Only small arguments go through spawn: CPython writes them into a pipe whose reading
        # end the parent keeps open, so a child that dies early would hang a large write.
        # The weights follow over the socket, where a dead child is an error, not a hang.
        self._proc = ctx.Process(
            target=_serve,
            args=(child, asdict(config), asdict(net.config), threads, shm),
            name="frugalzero-inference",
            daemon=True,
        )
        self._proc.start()
        child.close()
        try:
            self._conn.send(weights_to_arrays(net))
            _, self.precision, self.compiled = self._conn.recv()
        except (EOFError, OSError):
            self._proc.join(timeout=5)
            self._slots.close(unlink=True)
            raise RuntimeError(
                f"the inference process died while starting (exit code {self._proc.exitcode}); "
                "a script that creates an Evaluator must guard its entry point with "
                "`if __name__ == '__main__':`"
            ) from None
        self._free = list(range(slots))
        self._in_flight: list[tuple[int, int, int, int]] = []  # (job, slot, n, width), oldest first
        self._next_id = 0
        self._done: dict[int, Output] = {}
        self.max_batch = max_batch

    def send(self, batch: Batch) -> int:
        frames, meta, index, counts = batch
        n, width = len(counts), index.shape[1]
        if n > self.max_batch:
            raise ValueError(f"batch of {n} exceeds max_batch {self.max_batch}")
        while not self._free:
            self._finish_oldest()
        slot = self._free.pop()
        view = self._slots.views[slot]
        view["frames"][:n] = frames.reshape(n, -1)
        view["meta"][:n] = meta
        view["index"][:n, :width] = index
        view["counts"][:n] = counts
        job_id = self._next_id
        self._next_id += 1
        self._in_flight.append((job_id, slot, n, width))
        try:
            self._conn.send((slot, n, width))
        except OSError:
            raise RuntimeError("the inference process died") from None
        return job_id

    def _finish_oldest(self) -> None:
        job_id, slot, n, width = self._in_flight.pop(0)
        try:
            got, error = self._conn.recv()
        except (EOFError, OSError):
            raise RuntimeError("the inference process died") from None
        if error:
            self._free.append(slot)
            raise RuntimeError(error)
        assert got == slot
        view = self._slots.views[slot]
        wdl = view["wdl"][:n].copy() if self._wdl else None
        self._done[job_id] = (view["priors"][:n, :width].copy(), view["values"][:n].copy(), wdl)
        self._free.append(slot)

    def wait(self, job_id: int) -> Output:
        while job_id not in self._done:
            self._finish_oldest()
        return self._done.pop(job_id)

    @property
    def pid(self) -> int:
        return int(self._proc.pid or 0)

    def stats(self) -> dict[str, float]:
        while self._in_flight:
            self._finish_oldest()
        self._conn.send(("stats",))
        return self._conn.recv()[1]

    def load_weights(self, net: PolicyValueNet) -> None:
        while self._in_flight:  # answered batches keep the weights they were sent with
            self._finish_oldest()
        self._conn.send(("weights", weights_to_arrays(net)))

    def set_threads(self, threads: int) -> None:
        self._conn.send(("threads", threads))  # taken in order: later batches run with them

    def close(self) -> None:
        try:
            self._conn.send(None)
            self._conn.close()
        except OSError:
            pass
        self._proc.join(timeout=5)
        if self._proc.is_alive():
            self._proc.kill()
        self._slots.close(unlink=True)


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


class Evaluator:
    """Evaluates batches of positions with one network. Not thread-safe; one per process."""

    def __init__(self, net: PolicyValueNet, config: EvaluatorConfig | None = None) -> None:
        self.config = config = config or EvaluatorConfig()
        backend = config.backend
        if backend == "auto":
            backend = "process" if available_cores() >= 2 else "inline"
        self.backend = backend
        processes = config.servers if backend == "process" else 0
        self.threads = self._threads_for(config.threads, processes)
        self.head = net.config.value_head
        self.net_config = net.config
        self._runner: NetRunner | None = None
        self._servers = [_ProcessBackend(net, config, self.threads) for _ in range(processes)]
        self._turn = 0  # the server that takes the next batch
        if self._servers:
            self.precision = self._servers[0].precision
            self.compiled = self._servers[0].compiled
        elif backend == "inline":
            self._runner = NetRunner(net, config, self.threads, compile=config.compile == "on")
            self.precision = self._runner.precision
            self.compiled = self._runner.compiled
        else:
            raise ValueError(f"unknown evaluator backend {backend!r}")
        self._cache: OrderedDict[tuple, Evaluation] | None = (
            OrderedDict() if config.cache_size > 0 else None
        )
        self.hits = 0
        self.misses = 0

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
        self.hits += len(inputs) - len(pending._misses)
        self.misses += len(pending._misses)
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
        return [server.pid for server in self._servers]

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
        elif self._cache is None:
            self._cache = OrderedDict()
        self._trim_cache()

    @property
    def cache_permille(self) -> int | None:
        """How full the cache is, per mille of its size (None without a cache)."""
        if self._cache is None:
            return None
        return min(1000, len(self._cache) * 1000 // self.config.cache_size)

    def clear_cache(self) -> None:
        if self._cache is not None:
            self._cache.clear()

    def close(self) -> None:
        for server in self._servers:
            server.close()
        self._servers = []

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
