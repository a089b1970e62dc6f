"""The network on its device, as evaluation runs it: one copy of the net placed, cast and
compiled once (``NetRunner``, set by ``frugalzero.nn.config.EvaluatorConfig``), shared by the
caller's own runs (inline), the inference processes and the benchmarks."""

from __future__ import annotations

import copy
import time

import numpy as np
import torch

from frugalzero.chess.encoding import encode
from frugalzero.nn.config import EvaluatorConfig
from frugalzero.nn.model import PolicyValueNet, value_from_output
from frugalzero.nn.planes import encode_on, frames_bytes
from frugalzero.runtime.device import (
    autocast,
    compile_module,
    place,
    resolve_device,
    resolve_precision,
    set_threads,
)

Batch = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # frames, meta, index, counts
Output = tuple[np.ndarray, np.ndarray, np.ndarray | None]  # priors (N, L), values, wdl


class NetRunner:
    """A copy of a network on its device, with the precision and layout chosen once; the
    caller's network is never moved, converted or switched to eval mode. With precision 'int8'
    the copy is quantized once (``nn.quantize``: calibrated on the shipped positions,
    ``timings`` says how long it took) and, when ``compile``, compiled ahead of time and cached
    on disk for the next start (``nn.int8_cache``); uncompiled, or where compiling fails (with
    a warning), it runs lowered to oneDNN's int8 ops (``int8_graph``)."""

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
        fill = config.history_fill
        self.history_fill = net.config.history_fill if fill == "net" else fill
        self._model = self.net
        self.compiled = False
        self.forward_s = 0.0  # seconds in the network itself during run(): the rest is overhead
        self.timings: dict[str, float] = {}  # int8: seconds to quantize, compile, lower, load
        self.int8_graph: str | None = None  # int8: 'aoti', 'lowered' or 'reference'
        self.int8_cached = False  # int8: the package came from the machine's cache
        self._wants_compile = compile
        if self.precision == "int8":
            self._quantize()
        elif compile:
            self._compile()

    @property
    def frozen(self) -> bool:
        """Whether compiling bakes the weights in: on a CPU, where prepacked weights run ~1.3x
        faster and a new net costs a recompile (5-20 s an iteration); on a GPU the weights stay
        inputs of the graph, so a new net is copied in place and the warm compile is kept."""
        return self.device.type == "cpu"

    @property
    def model(self):
        """What evaluation calls: the compiled net, or the net itself when not compiled."""
        return self._model

    def _compile(self) -> None:
        """Compile the net (torch.compile; int8 is compiled ahead of time instead, in
        ``_quantize``) with a probe at batch 64."""
        planes = torch.zeros(64, self.net.config.input_planes, 8, 8)
        self._model, self.compiled = compile_module(
            self.net,
            self.device,
            freeze=self.frozen,
            probe=lambda model: self._forward(model, planes),
        )

    def _quantize(self) -> None:
        """The int8 net of ``self.net`` (``nn.quantize.int8_model``): with ``compile`` the
        machine's cached AOTInductor package (built and cached when missing), else, or where
        that fails, lowered to oneDNN's int8 ops. ``int8_graph`` says which runs."""
        from frugalzero.nn.quantize import int8_model

        built = int8_model(self.net, compile=self._wants_compile)
        self._model, self.int8_graph = built.model, built.graph
        self.compiled = built.graph == "aoti"
        self.int8_cached = built.cached
        self.timings = built.timings

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.net.load_state_dict(state)  # in place: the compiled graph reads these tensors
        if self.precision == "int8":  # quantized (and compiled) again from the new weights
            self._quantize()
        elif self.compiled and self.frozen:  # frozen weights are baked into the graph:
            self._compile()  # compiled again, this graph alone (``compile_module``)

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
        self,
        frames: np.ndarray,
        meta: np.ndarray,
        index: np.ndarray,
        counts: np.ndarray,
        softmax: bool = True,
    ) -> Output:
        """Encode, forward, and softmax restricted to each position's legal moves; without
        ``softmax`` the legal moves' logits themselves (padded with -inf), which the native
        search turns into priors at its own temperature."""
        if self.device.type == "cuda":  # 832 bytes a position to the device, unpacked there
            packed = (
                frames_bytes(frames, self.history_fill)
                .pin_memory()
                .to(self.device, non_blocking=True)
            )
            x = encode_on(packed, torch.from_numpy(meta).to(self.device, non_blocking=True))
        else:  # on a CPU the native encoder: 1.4 us a position (torch ops: ~10)
            x = torch.from_numpy(encode(frames, meta, self.history_fill))
        start = time.perf_counter()
        logits, value = self.forward(x)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self.forward_s += time.perf_counter() - start
        with torch.inference_mode():
            idx = torch.from_numpy(index.astype(np.int64, copy=False)).to(self.device)
            n_legal = torch.from_numpy(counts.astype(np.int64, copy=False)).to(self.device)
            illegal = torch.arange(idx.shape[1], device=self.device)[None, :] >= n_legal[:, None]
            # the legal moves' logits first, then float: 30 of 4,672 converted a position
            legal = logits.gather(1, idx).float().masked_fill_(illegal, float("-inf"))
            if softmax:
                priors = torch.softmax(legal, dim=1).nan_to_num_(0.0)  # rows with no legal move
            else:
                priors = legal
            values = value_from_output(value, self.head)
            wdl = torch.softmax(value.float(), dim=1).cpu().numpy() if self.head == "wdl" else None
            return priors.cpu().numpy(), values.cpu().numpy(), wdl
