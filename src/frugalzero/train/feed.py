"""Training batches made ahead of the step that needs them.

A step's batch is a pure function of its indices (the data order is fixed by seed, iteration,
phase and epoch), so a background thread can build the next ``ahead`` steps' batches while the
current step computes, and a run stays exact: same batches, same order, same numbers.

On a CPU the thread builds dense batches (NumPy's planes are the fast ones there). On CUDA it
builds compact batches (~1.2 kB a position instead of ~55 kB), pins them, copies them without
blocking and expands them on the device (``expand_on``): the host does the little it must, the
copy is 45 times smaller, and the GPU never waits for NumPy between steps.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

import numpy as np
import torch

from frugalzero.chess.moves import NUM_MOVES
from frugalzero.data.batches import CompactBatch, HistoryInputs, TrainingBatch
from frugalzero.nn.planes import encode_on, frames_bytes

_DONE = object()


def expand_on(batch: CompactBatch, device: torch.device) -> TrainingBatch:
    """A compact batch as dense tensors on ``device``: the same tensors as
    ``batch.expand().to(device)``, built there from pinned compact arrays."""
    pin = device.type == "cuda"

    def send(array: np.ndarray | torch.Tensor) -> torch.Tensor:
        t = (
            array
            if isinstance(array, torch.Tensor)
            else torch.from_numpy(np.ascontiguousarray(array))
        )
        if pin:
            t = t.pin_memory()
        return t.to(device, non_blocking=True)

    n = len(batch)
    planes = encode_on(send(frames_bytes(batch.frames, batch.history_fill)), send(batch.meta))
    rows_legal = torch.repeat_interleave(
        torch.arange(n, device=device), send(batch.legal_len.astype(np.int64))
    )
    legal = torch.zeros((n, NUM_MOVES), dtype=torch.bool, device=device)
    legal[rows_legal, send(batch.legal.astype(np.int64))] = True
    rows_policy = torch.repeat_interleave(
        torch.arange(n, device=device), send(batch.policy_len.astype(np.int64))
    )
    policy = torch.zeros((n, NUM_MOVES), dtype=torch.float32, device=device)
    policy[rows_policy, send(batch.policy_index.astype(np.int64))] = send(batch.policy_prob)
    values = send(batch.values)
    return TrainingBatch(
        planes=planes,
        legal=legal,
        policy=policy,
        z=values[:, 0].contiguous(),
        search_value=values[:, 1].contiguous(),
        expert_value=values[:, 2].contiguous(),
        expert_wdl=values[:, 3:6].contiguous(),
    )


def auto_prefetch(setting: int, device: torch.device) -> int:
    """``TrainConfig.prefetch`` resolved: -1 means 2 on CUDA and 0 on a CPU."""
    if setting >= 0:
        return setting
    return 2 if device.type == "cuda" else 0


def make_batch(
    data, indices: np.ndarray, device: torch.device, channels_last: bool, inputs: HistoryInputs
):
    """The batch of ``indices`` on ``device``, its histories as ``inputs`` says: expanded there
    from a compact batch on CUDA when the data can give one, else assembled on the host and
    moved."""
    if device.type == "cuda" and hasattr(data, "compact"):
        return expand_on(data.compact(indices, inputs), device)
    batch = data.batch(indices, inputs).to(device, non_blocking=True)
    if not channels_last:
        batch.planes = batch.planes.contiguous()
    return batch


class BatchFeed:
    """Iterates over the batches of ``plan`` (one list of index arrays per step: its
    micro-batches), each list built by a background thread up to ``ahead`` steps early.
    ``ahead`` 0 builds each step's batches when it is asked for, in the caller's thread.

    Use as a context manager (or call ``close``): leaving early stops the thread."""

    def __init__(
        self,
        data,
        plan: Iterator[list[np.ndarray]],
        device: torch.device,
        inputs: HistoryInputs,
        channels_last: bool = True,
        ahead: int = 2,
    ) -> None:
        self._make = lambda indices: make_batch(data, indices, device, channels_last, inputs)
        self._plan = plan
        self._ahead = ahead
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        if ahead > 0:
            self._queue: queue.Queue = queue.Queue(maxsize=ahead)
            self._thread = threading.Thread(target=self._produce, name="batch-feed", daemon=True)
            self._thread.start()

    def __iter__(self) -> Iterator[list[TrainingBatch]]:
        if self._thread is None:
            for parts in self._plan:
                yield [self._make(p) for p in parts]
            return
        while True:
            item = self._queue.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def _produce(self) -> None:
        try:
            for parts in self._plan:
                if not self._put([self._make(p) for p in parts]):
                    return
            item: object = _DONE
        except BaseException as exc:  # handed to the consumer, raised in its thread
            item = exc
        self._put(item)

    def _put(self, item: object) -> bool:
        """Queue ``item`` as soon as there is room; False if the feed was closed first."""
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> BatchFeed:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
