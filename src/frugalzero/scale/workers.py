"""A set of Ray actors doing chunks of work, with results streamed back and dead ones replaced.

Each worker plays one chunk at a time through a streaming generator method: every finished
item comes back to the driver as soon as it is done, so the driver knows exactly which items of
a chunk are finished. When a worker dies (its process killed, its machine gone), the driver
starts a replacement and hands the chunk's unfinished items to the next free worker; finished
ones are never redone and a late duplicate is dropped, so every item is counted exactly once.
We do this ourselves rather than with Ray's task retries or actor restarts, which would replay
a whole chunk or forget which of its items were done.

A worker actor has ``ready() -> dict`` (``pid``, ``node``, ``node_id``, ``error``: a
constructor failure as one line) and a generator method that takes the chunk as its last
argument and yields ``(outcomes, counters)``: ``outcomes`` a list of ``(key, result, error)``
(``result`` None when the item failed for good, ``error`` saying why) and ``counters`` numbers
to add up.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from frugalzero.errors import UserError
from frugalzero.scale.cluster import require_ray
from frugalzero.scale.config import RayConfig

WAIT_S = 1.0  # the driver loop wakes at least this often (Ctrl+C, start timeouts)


@dataclass
class _Slot:
    actor: Any
    starting: Any = None  # ObjectRef of ready() until the worker answered
    pid: int = 0
    node: str = ""
    node_id: str = ""  # the Ray node (several may share an IP)
    stream: Any = None  # ObjectRefGenerator of the chunk being worked on
    chunk: dict[Hashable, Any] = field(default_factory=dict)  # unfinished items by key
    started_at: float = field(default_factory=time.monotonic)


class RayWorkers:
    """``count`` actors of ``actor_class`` (a plain class; made a Ray actor here) created with
    ``args``; ``map_unordered`` spreads items over them."""

    def __init__(
        self,
        actor_class: type,
        count: int,
        config: RayConfig,
        args: tuple = (),
        num_gpus: float = 0.0,
        name: str = "worker",
    ) -> None:
        ray = require_ray()
        self._ray = ray
        self.config = config
        self.name = name
        self._remote = ray.remote(actor_class).options(
            num_cpus=config.cpus_per_worker, num_gpus=num_gpus, max_restarts=0
        )
        self._args = args
        self.counters: dict[str, float] = {}
        self.deaths = 0
        self.replayed = 0
        self.failed = 0
        self.duplicates = 0
        self.info: list[dict[str, Any]] = []
        self.results_by_node: dict[str, int] = {}  # items finished (with a result) per node id
        self.slots = [self._start() for _ in range(count)]
        try:
            self._await_started()
        except BaseException:
            self.close()
            raise

    # -- public API ---------------------------------------------------------------------------
    def __enter__(self) -> RayWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def pids(self) -> list[int]:
        """Process ids of the running workers."""
        return [s.pid for s in self.slots if s.pid]

    def busy_pids(self) -> list[int]:
        """Process ids of the workers that hold unfinished items right now."""
        return [s.pid for s in self.slots if s.pid and s.chunk]

    def map_unordered(
        self,
        items: Iterable[Any],
        key: Callable[[Any], Hashable],
        method: str,
        args: tuple = (),
        chunk: int = 1,
    ) -> Iterator[tuple[Any, Any, str]]:
        """``(item, result, error)`` for every item, in finishing order. Items are drawn lazily,
        ``chunk`` at a time, when a worker is free; ``method(*args, items)`` runs on the
        worker. ``result`` is None (and ``error`` says why) for an item that failed on its
        worker or whose workers died more than ``config.retries`` times."""
        source = iter(items)
        exhausted = False
        requeued: deque[list[Any]] = deque()
        seen: set[Hashable] = set()
        done: set[Hashable] = set()
        deaths_of: dict[Hashable, int] = {}

        def draw(n: int) -> list[Any]:
            nonlocal exhausted
            out: list[Any] = []
            while not exhausted and len(out) < n:
                item = next(source, None)
                if item is None:
                    exhausted = True
                    break
                k = key(item)
                if k in seen:
                    raise ValueError(f"two work items share the key {k!r}")
                seen.add(k)
                out.append(item)
            return out

        while True:
            for slot in self.slots:
                if slot.pid and slot.stream is None:
                    work = requeued.popleft() if requeued else draw(chunk)
                    if work:
                        slot.chunk = {key(item): item for item in work}
                        slot.stream = getattr(slot.actor, method).remote(*args, work)
            streams = [s.stream for s in self.slots if s.stream is not None]
            if not streams and not requeued and exhausted:
                return
            self._check_start_timeout()
            starting = [s.starting for s in self.slots if s.starting is not None]
            ready, _ = self._ray.wait(streams + starting, num_returns=1, timeout=WAIT_S)
            for handle in ready:
                slot = self._slot_of(handle)
                if slot.starting is not None and _same(handle, slot.starting):
                    self._on_started(slot)
                    continue
                lost = self._on_stream(slot, done)
                if isinstance(lost, list):
                    yield from lost  # outcomes of the items this message finished
                    continue
                # the worker died (or its stream ended early): redo what it had not finished
                again = []
                for k, item in slot.chunk.items():
                    deaths_of[k] = deaths_of.get(k, 0) + 1
                    if deaths_of[k] > self.config.retries:
                        self.failed += 1
                        done.add(k)
                        yield item, None, f"{self.name}s died {deaths_of[k]} times on it"
                    else:
                        again.append(item)
                self.replayed += len(again)
                if again:
                    requeued.appendleft(again)
                slot.chunk = {}
                slot.stream = None
                if lost:
                    self._replace(slot)

    def close(self) -> None:
        """Idle workers close what they hold (engines, inference processes); then all are
        stopped."""
        ray = self._ray
        idle = [s for s in self.slots if s.pid and s.stream is None]
        try:
            closing = [s.actor.close.remote() for s in idle]
            if closing:
                ray.wait(closing, num_returns=len(closing), timeout=10)
        except Exception:  # a worker that is gone needs no closing
            pass
        for slot in self.slots:
            try:
                ray.kill(slot.actor, no_restart=True)
            except Exception:
                pass
        self.slots = []

    # -- internals ----------------------------------------------------------------------------
    def _start(self) -> _Slot:
        actor = self._remote.remote(*self._args)
        return _Slot(actor, starting=actor.ready.remote())

    def _await_started(self) -> None:
        """Every worker up (errors in their constructors are raised here), or a timeout."""
        while any(s.starting is not None for s in self.slots):
            self._check_start_timeout(every=True)
            starting = [s.starting for s in self.slots if s.starting is not None]
            ready, _ = self._ray.wait(starting, num_returns=len(starting), timeout=WAIT_S)
            for handle in ready:
                self._on_started(self._slot_of(handle))

    def _slot_of(self, handle: Any) -> _Slot:
        for slot in self.slots:
            if _same(handle, slot.stream) or _same(handle, slot.starting):
                return slot
        raise RuntimeError("ray.wait returned a handle of no worker")

    def _on_started(self, slot: _Slot) -> None:
        ray = self._ray
        handle, slot.starting = slot.starting, None
        try:
            info = ray.get(handle)
        except ray.exceptions.RayActorError:
            self.deaths += 1
            if self.deaths > self.config.retries + len(self.slots):
                raise UserError(f"ray: {self.name}s keep dying as they start") from None
            self._replace(slot)
            return
        if info.get("error"):
            raise UserError(info["error"])
        slot.pid, slot.node = int(info["pid"]), str(info.get("node", ""))
        slot.node_id = str(info.get("node_id", ""))
        self.info.append(info)

    def _check_start_timeout(self, every: bool = False) -> None:
        """No worker may wait forever for a place: with ``every`` (the first start) each must
        start in time; later, a replacement may wait as long as another worker is up."""
        limit = self.config.start_timeout_s
        waits = [time.monotonic() - s.started_at for s in self.slots if s.starting is not None]
        if not waits:
            return
        if every:
            late = max(waits) > limit
        else:
            late = not any(s.pid for s in self.slots) and min(waits) > limit
        if late:
            raise UserError(
                f"ray: a {self.name} could not start within {limit:g} s; does the cluster have "
                f"{self.config.cpus_per_worker} free CPU(s) per worker? (ray status shows it)"
            )

    def _on_stream(self, slot: _Slot, done: set[Hashable]) -> list | bool:
        """The next message of a worker's stream: the outcomes it brings (a list), or True
        when the worker died, False when its chunk ended (leftovers are redone either way)."""
        ray = self._ray
        try:
            ref = next(slot.stream)
        except StopIteration:
            if not slot.chunk:
                slot.stream = None
                return []
            return False  # it ended without reporting some items: hand them out again
        try:
            outcomes, counters = ray.get(ref)
        except ray.exceptions.RayTaskError as exc:  # our code raised: a real error, not a death
            cause = getattr(exc, "cause", None)
            if isinstance(cause, UserError):
                raise UserError(str(cause)) from None
            raise RuntimeError(f"ray {self.name} {slot.pid} failed: {exc}") from None
        except (
            ray.exceptions.RayActorError,
            ray.exceptions.WorkerCrashedError,
            ray.exceptions.ObjectLostError,
            ray.exceptions.NodeDiedError,
        ):
            self.deaths += 1
            return True
        for name, value in counters.items():
            self.counters[name] = self.counters.get(name, 0) + value
        out = []
        for k, result, error in outcomes:
            item = slot.chunk.pop(k, None)
            if item is None or k in done:
                self.duplicates += 1  # not ours, or already in (a replayed chunk's late twin)
                continue
            done.add(k)
            if result is None:
                self.failed += 1
            else:
                self.results_by_node[slot.node_id] = self.results_by_node.get(slot.node_id, 0) + 1
            out.append((item, result, error))
        return out

    def _replace(self, slot: _Slot) -> None:
        try:
            self._ray.kill(slot.actor, no_restart=True)
        except Exception:
            pass
        fresh = self._start()
        slot.actor, slot.starting, slot.started_at = fresh.actor, fresh.starting, time.monotonic()
        slot.pid, slot.node, slot.node_id, slot.stream, slot.chunk = 0, "", "", None, {}


def _same(a: Any, b: Any) -> bool:
    """The same ObjectRef or generator (ray.wait may hand back equal, not identical, refs)."""
    if a is b:
        return True
    return b is not None and type(a) is type(b) and a == b
