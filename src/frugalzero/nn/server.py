"""Inference processes: the network in a process of its own, answering batches that callers
leave in shared memory.

One process can serve several callers: the process that started it (the *owner*) and any
number of *clients*, handed to other processes (self-play workers) as a picklable
``ServerClient``. Whatever batches are waiting when the process looks are run as one forward
pass, so many workers' small batches become one large one, and one device, one copy of the
weights and one compiled model serve them all. With one caller it is the evaluator's own
inference process, overlapping the caller's Python with the network.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.shared_memory import SharedMemory
from typing import Any

import numpy as np
import torch

from frugalzero import _native
from frugalzero.chess.encoding import FRAME_BYTES, FRAME_WORDS, HISTORY, META_FIELDS
from frugalzero.nn.config import EvaluatorConfig, NetConfig
from frugalzero.nn.model import PolicyValueNet
from frugalzero.nn.runner import Batch, NetRunner, Output
from frugalzero.runtime.device import set_threads
from frugalzero.runtime.shm import segment_name
from frugalzero.runtime.weights import arrays_to_state_dict, weights_to_arrays
from frugalzero.search.puct import legal_softmax

# legal moves a row can carry, as many as the native core lists: 218 in a real game, up to
# 415 in a position python-chess accepts (15 queens a side)
WIDTH = _native.MAX_MOVES
MERGE = 4096  # most positions run in one forward pass when several batches wait


class _Slots:
    """One caller's batch buffers in shared memory: the caller writes inputs, the inference
    process writes outputs, and only slot numbers travel through the pipe (a large message
    would block the sender until the other side has finished its batch, serialising the two
    processes)."""

    def __init__(self, slots: int, max_batch: int, name: str | None = None) -> None:
        n = max_batch
        layout = {
            "frames": ((n, HISTORY * FRAME_BYTES // 8), np.uint64),
            "meta": ((n, META_FIELDS), np.int64),
            "index": ((n, WIDTH), np.int16),
            "counts": ((n,), np.int64),
            "priors": ((n, WIDTH), np.float32),
            "values": ((n,), np.float32),
            "wdl": ((n, 3), np.float32),
        }
        sizes = {k: int(np.prod(s)) * np.dtype(dt).itemsize for k, (s, dt) in layout.items()}
        slot_bytes = sum(sizes.values())
        size = 0 if name else slots * slot_bytes
        self.shm = SharedMemory(name=name or segment_name(), create=name is None, size=size)
        self.spec = (self.shm.name, slots, max_batch)
        self.views: list[dict[str, np.ndarray]] = []
        for slot in range(slots):
            offset, views = slot * slot_bytes, {}
            for key, (shape, dtype) in layout.items():
                views[key] = np.ndarray(shape, dtype=dtype, buffer=self.shm.buf, offset=offset)
                offset += sizes[key]
            self.views.append(views)

    def close(self, unlink: bool) -> None:
        self.views.clear()
        self.shm.close()
        if unlink:
            self.shm.unlink()


@dataclass(frozen=True)
class ServerClient:
    """A client's end of an inference process, for another process: pass it to a worker as an
    argument (its pipe end travels with it) and open it there with ``Evaluator.connect``."""

    conn: Connection
    slots: tuple[str, int, int]  # shared memory name, slots, max batch
    net_config: dict[str, Any]
    precision: str
    compiled: bool
    pid: int


class Channel:
    """A caller's end of an inference process: its slots, its batches in flight (answered in
    the order sent), and the control messages."""

    def __init__(self, conn: Connection, slots: _Slots, wdl: bool, owner: bool) -> None:
        self._conn = conn
        self._slots = slots
        self._wdl = wdl
        self._owner = owner  # unlinks the shared memory at close
        self._free = list(range(len(slots.views)))
        self._in_flight: list[tuple[int, int, int, int]] = []  # (job, slot, n, width)
        self._next_id = 0
        self._done: dict[int, Output] = {}
        self.max_batch = slots.spec[2]

    @classmethod
    def open(cls, client: ServerClient) -> Channel:
        name, slots, max_batch = client.slots
        wdl = client.net_config.get("value_head") == "wdl"
        return cls(client.conn, _Slots(slots, max_batch, name), wdl, owner=False)

    def send(self, batch: Batch, logits: bool = False) -> int:
        """Leave ``batch`` for the inference process; it answers with priors, or with the legal
        moves' logits (``logits``: the native search's rows)."""
        frames, meta, index, counts = batch
        n, width = len(counts), index.shape[1]

        def write(view: dict[str, np.ndarray]) -> None:
            view["frames"][:n] = frames.reshape(n, -1)
            view["meta"][:n] = meta
            view["index"][:n, :width] = index
            view["counts"][:n] = counts

        return self._post(n, width, logits, write)

    def send_leaves(self, leaves: _native.LeafBatch) -> int:
        """``send`` for the native search's batch, its rows written straight into the slot (one
        copy, no array per field); answered with the legal moves' logits."""

        def write(view: dict[str, np.ndarray]) -> None:
            leaves.write_rows(view["frames"], view["meta"], view["index"], view["counts"])

        return self._post(leaves.rows, leaves.width, True, write)

    def _post(self, n: int, width: int, logits: bool, write) -> int:
        if n > self.max_batch:
            raise ValueError(f"batch of {n} exceeds max_batch {self.max_batch}")
        while not self._free:
            self._finish_oldest()
        slot = self._free.pop()
        try:
            write(self._slots.views[slot])
        except BaseException:
            self._free.append(slot)
            raise
        job_id = self._next_id
        self._next_id += 1
        self._in_flight.append((job_id, slot, n, width))
        self._send((slot, n, width, logits))
        return job_id

    def wait(self, job_id: int) -> Output:
        while job_id not in self._done:
            self._finish_oldest()
        return self._done.pop(job_id)

    def stats(self) -> dict[str, float]:
        """The inference process's counters (all its callers together)."""
        self._drain()
        self._send(("stats",))
        return self._recv()[1]

    def load_weights(self, net: PolicyValueNet) -> None:
        self._drain()  # answered batches keep the weights they were sent with
        self._send(("weights", weights_to_arrays(net)))

    def set_threads(self, threads: int) -> None:
        self._send(("threads", threads))  # taken in order: later batches run with them

    def close(self) -> None:
        """Leave the inference process (the owner leaving stops it)."""
        try:
            self._conn.send(None)
            self._conn.close()
        except OSError:
            pass
        self._slots.close(unlink=self._owner)

    def _drain(self) -> None:
        while self._in_flight:
            self._finish_oldest()

    def _finish_oldest(self) -> None:
        job_id, slot, n, width = self._in_flight.pop(0)
        got, error = self._recv()
        if error:
            self._free.append(slot)
            raise RuntimeError(error)
        assert got == slot
        view = self._slots.views[slot]
        wdl = view["wdl"][:n].copy() if self._wdl else None
        self._done[job_id] = (view["priors"][:n, :width].copy(), view["values"][:n].copy(), wdl)
        self._free.append(slot)

    def _send(self, message: Any) -> None:
        try:
            self._conn.send(message)
        except OSError:
            raise RuntimeError("the inference process died") from None

    def _recv(self) -> Any:
        try:
            return self._conn.recv()
        except (EOFError, OSError):
            raise RuntimeError("the inference process died") from None


class InferenceServer:
    """Starts an inference process for ``net``: ``owner`` is this process's channel to it,
    ``clients`` the ends for other processes. It runs until the owner closes.

    Starting one is two steps: the process is spawned (``wait=False`` returns then, while it
    imports torch, a second or more of one core) and ``wait_started`` hands it the weights and
    waits for its ``ready``. ``start_servers`` spawns several before waiting for any, so they
    start side by side; ``kill`` (from any thread) ends one that is still starting."""

    def __init__(
        self,
        net: PolicyValueNet,
        config: EvaluatorConfig,
        threads: int,
        clients: int = 0,
        slots: int = 4,
        max_batch: int = 1024,
        wait: bool = True,
    ) -> None:
        ctx = mp.get_context("spawn")  # fork after PyTorch threads started can deadlock
        buffers = [_Slots(slots, max_batch) for _ in range(1 + clients)]
        pipes = [ctx.Pipe() for _ in buffers]
        # Only small arguments go through spawn: CPython writes them into a pipe whose reading
        # end the parent keeps open, so a child that dies early would hang a large write.
        # The weights follow over the socket, where a dead child is an error, not a hang.
        self._proc = ctx.Process(
            target=_serve,
            args=(
                [child for _, child in pipes],
                asdict(config),
                asdict(net.config),
                threads,
                [b.spec for b in buffers],
            ),
            name="frugalzero-inference",
            daemon=True,
        )
        self._proc.start()
        for _, child in pipes:
            child.close()
        self._starting: tuple[PolicyValueNet, list[_Slots], list] | None = (net, buffers, pipes)
        self._killed = False
        self._failed = False  # the start failed, and tidied up after itself
        if wait:
            self.wait_started()

    def wait_started(self) -> None:
        """Hand the spawned process its weights and wait until it is ready to serve (at once
        when it is already)."""
        if self._starting is None:
            return
        net, buffers, pipes = self._starting
        self._starting = None
        conn = pipes[0][0]
        try:
            conn.send(weights_to_arrays(net))
            _, self.precision, self.compiled = conn.recv()
        except (EOFError, OSError):
            self._failed = True
            self._proc.join(timeout=5)
            for buffer in buffers:
                buffer.close(unlink=True)
            for end, _ in pipes:
                end.close()
            if self._killed:
                raise RuntimeError("the inference process was stopped while starting") from None
            raise RuntimeError(
                f"the inference process died while starting (exit code {self._proc.exitcode}); "
                "a script that creates an Evaluator must guard its entry point with "
                "`if __name__ == '__main__':`"
            ) from None
        self.owner = Channel(conn, buffers[0], net.config.value_head == "wdl", owner=True)
        self._client_buffers = buffers[1:]
        self.clients = [
            ServerClient(end, b.spec, asdict(net.config), self.precision, self.compiled, self.pid)
            for (end, _), b in zip(pipes[1:], buffers[1:], strict=True)
        ]

    def kill(self) -> None:
        """End the process now, from any thread: a ``wait_started`` in progress raises; a
        started server is left for ``close`` to tidy up."""
        self._killed = True
        if self._proc.is_alive():
            self._proc.kill()

    @property
    def pid(self) -> int:
        return int(self._proc.pid or 0)

    @property
    def alive(self) -> bool:
        return self._proc.is_alive()

    def close(self) -> None:
        if self._starting is not None:  # spawned, never started: kill it, then tidy up
            self.kill()
            try:
                self.wait_started()
            except RuntimeError:
                pass
        if self._failed:
            return
        self.owner.close()
        for client in self.clients:
            client.conn.close()
        self._proc.join(timeout=5)
        if self._proc.is_alive():
            self._proc.kill()
        for buffer in self._client_buffers:
            buffer.close(unlink=True)


def start_servers(
    net: PolicyValueNet,
    config: EvaluatorConfig,
    threads: int,
    count: int,
    spawned: Callable[[list[InferenceServer]], None] | None = None,
) -> list[InferenceServer]:
    """``count`` inference processes for ``net``, started side by side: all are spawned before
    any is waited for (each imports torch on its own core where there is one). ``spawned``
    sees them before the wait, so another thread can ``kill`` them (an engine that quits
    while they start). If one fails, the others are closed and its error raised."""
    servers: list[InferenceServer] = []
    try:
        for _ in range(count):
            servers.append(InferenceServer(net, config, threads, wait=False))
        if spawned is not None:
            spawned(servers)
        for server in servers:
            server.wait_started()
    except BaseException:
        for server in servers:
            server.close()
        raise
    return servers


def _serve(
    conns: list[Connection],
    config: dict[str, Any],
    net_config: dict[str, Any],
    threads: int,
    specs: list[tuple[str, int, int]],
) -> None:
    """Inference process: take the weights from the owner (``conns[0]``), then answer every
    caller's batch slots until the owner leaves."""
    try:
        weights = conns[0].recv()
    except (EOFError, OSError):  # the owner died (a killed match) before it sent them
        return
    net = PolicyValueNet(NetConfig(**net_config))
    net.load_state_dict(arrays_to_state_dict(weights))
    evaluator_config = EvaluatorConfig(**config)
    runner = NetRunner(net, evaluator_config, threads, compile=evaluator_config.compile != "off")
    del net  # the runner works on its own copy
    buffers = [_Slots(slots, n, name=name) for name, slots, n in specs]
    conns[0].send(("ready", runner.precision, runner.compiled))
    live = {conn: i for i, conn in enumerate(conns)}
    # busy: answering batches; forward: the network itself; cpu: this process's CPU time
    counters = {
        "busy_s": 0.0,
        "forward_s": 0.0,
        "cpu_s": 0.0,
        "batches": 0,
        "positions": 0,
        "requests": 0,
    }
    try:
        while conns[0] in live:
            jobs: list[tuple[int, int, int, int, bool]] = []  # (caller, slot, n, width, logits)
            for conn in wait(list(live)):
                while conn in live and conn.poll():
                    try:
                        message = conn.recv()
                    except (EOFError, OSError):
                        message = None
                    if message is None:
                        del live[conn]
                    elif isinstance(message[0], str):
                        if message[0] == "weights" and jobs:  # earlier batches, earlier weights
                            _run(runner, buffers, conns, jobs, counters)
                            jobs = []
                        _control(runner, conn, message, counters)
                    else:
                        jobs.append((live[conn], *message))
            if jobs:
                _run(runner, buffers, conns, jobs, counters)
    finally:
        for buffer in buffers:
            buffer.close(unlink=False)


def _control(runner: NetRunner, conn: Connection, message: tuple, counters: dict) -> None:
    if message[0] == "stats":
        conn.send(("stats", {**counters, "threads": torch.get_num_threads()}))
    elif message[0] == "threads":
        set_threads(message[1], runner.device)
    elif message[0] == "weights":
        runner.load_state_dict(arrays_to_state_dict(message[1]))


def _run(
    runner: NetRunner,
    buffers: list[_Slots],
    conns: list[Connection],
    jobs: list[tuple[int, int, int, int, bool]],
    counters: dict,
) -> None:
    """Answer ``jobs`` with as few forward passes as ``MERGE`` allows."""
    group: list[tuple[int, int, int, int, bool]] = []
    size = 0
    for job in jobs:
        if group and size + job[2] > MERGE:
            _run_group(runner, buffers, conns, group, counters)
            group, size = [], 0
        group.append(job)
        size += job[2]
    _run_group(runner, buffers, conns, group, counters)


def _run_group(
    runner: NetRunner,
    buffers: list[_Slots],
    conns: list[Connection],
    group: list[tuple[int, int, int, int, bool]],
    counters: dict,
) -> None:
    start, cpu, forward = time.perf_counter(), time.process_time(), runner.forward_s
    views = [buffers[caller].views[slot] for caller, slot, _, _, _ in group]
    sizes = [n for _, _, n, _, _ in group]
    width = max(w for _, _, _, w, _ in group)
    wants_logits = [logits for *_, logits in group]
    total = sum(sizes)
    error = None
    try:
        if len(group) == 1:
            n, view = total, views[0]
            frames, meta, counts = view["frames"][:n], view["meta"][:n], view["counts"][:n]
            index = view["index"][:n, :width].astype(np.int64)
        else:
            frames = np.concatenate([v["frames"][:n] for v, n in zip(views, sizes, strict=True)])
            meta = np.concatenate([v["meta"][:n] for v, n in zip(views, sizes, strict=True)])
            counts = np.concatenate([v["counts"][:n] for v, n in zip(views, sizes, strict=True)])
            index = np.zeros((total, width), dtype=np.int64)
            row = 0
            for (_, _, n, w, _), view in zip(group, views, strict=True):
                index[row : row + n, :w] = view["index"][:n, :w]
                row += n
        frames = frames.reshape(total, HISTORY, FRAME_WORDS)
        priors, values, wdl = runner.run(frames, meta, index, counts, softmax=not any(wants_logits))
        row = 0
        for (_, _, n, w, logits), view in zip(group, views, strict=True):
            rows = priors[row : row + n, :w]
            if any(wants_logits) and not logits:  # a caller of both kinds in one pass
                rows = legal_softmax(rows)
            view["priors"][:n, :w] = rows
            view["values"][:n] = values[row : row + n]
            if wdl is not None:
                view["wdl"][:n] = wdl[row : row + n]
            row += n
        counters["busy_s"] += time.perf_counter() - start
        counters["forward_s"] += runner.forward_s - forward
        counters["cpu_s"] += time.process_time() - cpu
        counters["batches"] += 1
        counters["positions"] += total
        counters["requests"] += len(group)
    except Exception as exc:  # reported to each caller, who raises it
        error = f"inference process failed: {exc!r}"
    for caller, slot, *_ in group:
        try:
            conns[caller].send((slot, error))
        except OSError:  # a caller that left does not stop the others
            pass
