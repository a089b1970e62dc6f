"""The network's own throughput on this machine, as an evaluator runs it: the reference of the
benchmarks, and what the UCI engine times to choose its net (``nn.choice``)."""

from __future__ import annotations

from frugalzero.runtime.timing import best_rate


class BareNet:
    """``batch`` ready positions through a network exactly as an evaluator with ``config`` runs
    it (device, precision, layout, ``threads``, compilation) and nothing else: the network's own
    throughput, the reference of ``bench nn``, ``selfplay`` and ``uci``. Call it to run once."""

    def __init__(self, net, config, threads: int, batch: int, compiled: bool) -> None:
        import torch

        from frugalzero.chess.encoding import encode
        from frugalzero.chess.history import net_input_from_board
        from frugalzero.chess.positions import random_boards
        from frugalzero.nn.evaluator import NetRunner, pack_inputs

        self.batch = batch
        self.runner = NetRunner(net, config, threads, compile=compiled)
        boards = random_boards(batch, seed=1)
        frames, meta, _, _ = pack_inputs([net_input_from_board(b) for b in boards])
        planes = encode(frames, meta, self.runner.history_fill)
        self.planes = torch.from_numpy(planes).to(self.runner.device)
        self._sync = torch.cuda.synchronize if self.runner.device.type == "cuda" else None

    def __call__(self) -> None:
        self.runner.forward(self.planes)
        if self._sync is not None:
            self._sync()

    def positions_per_s(self) -> float:
        """Its throughput right now, robustly (``best_rate``)."""
        return best_rate(self, self.batch)
