"""Everything the int8 network takes from outside torch's public API, in one place: torchao's
PT2E quantizer (``X86InductorQuantizer``) and its x86 lowering passes, inductor's private
freezing passes, and AOTInductor's packager and C++ package loader. An upgrade of torch or
torchao that changes one of them breaks here, and ``tests/test_int8_backend.py`` pins what the
rest of the package relies on: the quantized graph's ops, the lowered graph's oneDNN int8 ops,
the package's members (no pickle among them) and the loaded package's outputs.

torchao is a dependency since the engine's ``Precision`` ``auto`` plays int8 where it is faster
(``nn.choice``); only quantizing needs it, and a package already built (``nn.int8_cache``)
loads with torch alone.

Why AOTInductor: the compiled int8 net must start in well under a second where quantizing
and compiling take 5-30 s (issue 71). ``aoti_compile_and_package`` writes the net, its int8
weights prepacked for oneDNN and frozen into a shared library, as a ``.pt2`` zip; that zip
holds generated C++, the ``.so``, JSON metadata and version strings, no pickle (its members are
checked before loading: ``PACKAGE_FILES``). It is loaded with torch's C++
``AOTIModelPackageLoader`` directly: Python's ``aoti_load_package`` would first try
``torch.export``'s ``load_pt2``, which can ``torch.load`` (unpickle) weights stored beside a
model, and imports inductor (1.5 s). The batch dimension stays dynamic, so one package serves
every batch size; its kernels take their threads from the calling thread at run time.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType

import torch

from frugalzero.errors import UserError

PACKAGE_MODEL = "model"
"""The model's name inside a package (AOTInductor's default)."""
PACKAGE_FILES = (
    "archive_format",
    "archive_version",
    "byteorder",
    ".data/version",
    ".data/serialization_id",
)
"""Members of a package besides its model's files, under the package's own folder."""
MODEL_SUFFIXES = (".so", ".cpp", ".json")
"""What the model's folder (``data/aotinductor/model/``) may hold: the library, its source and
their metadata. Anything else (weights beside the library, a pickled program) is refused."""
INSTALL = "precision 'int8' needs torchao, a dependency of frugalzero: pip install torchao"
FLOAT = "float"
"""A module's mode (``quantize``): not quantized; its convolutions and linear layers run in
fp32, and with them what follows them inside the module (its batch norm, folded in)."""
BF16 = "bf16"
"""Not quantized, its convolutions and linear layers run in bf16 (input, weights and bias
cast; the output cast back to fp32): a float layer where int8's error is too large (a stem
whose per-channel weight scale follows a few large weights), at bf16's rate, half int8's on
the CPUs int8 is for (benchmarks/int8/README.md: bf16 matmul 382 GFLOP/s, int8 755 GOP/s)."""
ALONE = "alone"
"""Quantized on its own: its input and weights int8, its output float, and what follows it
outside the module (a residual block's add and relu after its second convolution) in float
rather than fused into the int8 op, whose fused add takes its other input (the residual
stream) quantized: the residual stream stays float from block to block."""
MODES = (FLOAT, BF16, ALONE)
OBSERVERS = ("minmax", "histogram")
"""How an activation's int8 range is set from the calibration positions: the extremes seen
(``MinMaxObserver``), or the range with the least squared error over what was seen
(``HistogramObserver``, torchao's default), which clips the rare large values."""

# inductor's lowering of the int8 convolutions builds a tensor from a tensor: a harmless
# warning at every compile of an int8 graph
warnings.filterwarnings(
    "ignore",
    message="To copy construct from a tensor",
    category=UserWarning,
    module=r"torch\._inductor\.mkldnn_lowerings",
)


def require() -> None:
    """A one-line UserError saying how to install torchao where it is missing."""
    import importlib.util

    if importlib.util.find_spec("torchao") is None:
        raise UserError(INSTALL)


def torchao_version() -> str:
    """torchao's version without importing it (2 s): part of what a package was built with."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torchao")
    except PackageNotFoundError:
        return "none"


def quantize(
    net: torch.nn.Module,
    calibration: torch.Tensor,
    chunk: int,
    modules: Mapping[str, str] = MappingProxyType({}),
    observer: str = "minmax",
) -> torch.fx.GraphModule:
    """``net`` (float32, eval mode; not changed) exported with a dynamic batch, observed on
    ``calibration`` (``chunk`` positions a pass, the first chunk the export's example) and
    converted: PT2E static quantization with torchao's ``X86InductorQuantizer`` (per-channel
    symmetric int8 weights, uint8 activations whose ranges ``observer`` sets: ``OBSERVERS``),
    except the ``modules`` (``net.named_modules()`` names) each quantized as its mode says
    (``MODES``). The result is the reference graph: ``quantized_decomposed`` quantize /
    dequantize ops around float convolutions and linear layers (bf16 ones for ``BF16``)."""
    from dataclasses import replace

    require()
    if observer not in OBSERVERS:
        raise ValueError(f"no observer {observer!r}; choose from {', '.join(OBSERVERS)}")
    with quiet():
        from torchao.quantization.pt2e.observer import HistogramObserver, MinMaxObserver
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
        from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
            X86InductorQuantizer,
            get_default_x86_inductor_quantization_config,
        )

    config = get_default_x86_inductor_quantization_config()
    kind = {"minmax": MinMaxObserver, "histogram": HistogramObserver}[observer]
    activations = replace(
        config.input_activation, observer_or_fake_quant_ctr=kind.with_args(eps=2**-12)
    )
    config = replace(config, input_activation=activations, output_activation=activations)
    named = dict(net.named_modules())
    quantizer = X86InductorQuantizer()
    quantizer.set_global(config)
    for name, mode in modules.items():
        if not name or name not in named:
            raise ValueError(f"no module {name!r} in the net")
        if mode not in MODES:
            raise ValueError(f"{name}: no int8 mode {mode!r}; choose from {', '.join(MODES)}")
        # the quantizer annotates a pattern (conv + batch norm + add + relu, ...) by a module's
        # configuration only where all the pattern's nodes are the module's: a convolution's
        # batch norm inside it, its relu or residual add outside it. So a module's own
        # configuration, even the global one, splits it from what follows it (``ALONE``).
        quantizer.set_module_name_qconfig(name, config if mode == ALONE else None)
    batch = torch.export.Dim("batch", min=1)
    example = calibration[:chunk]
    exported = torch.export.export(net, (example,), dynamic_shapes=({0: batch},)).module()
    prepared = prepare_pt2e(exported, quantizer)
    with torch.no_grad():
        for part in calibration.split(chunk):
            prepared(part)
    converted = convert_pt2e(prepared)
    _in_bf16(converted, [name for name, mode in modules.items() if mode == BF16])
    return converted


def module_of(node: torch.fx.Node) -> str:
    """The name of the innermost module a node of an exported graph comes from ('' if none)."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path = list(stack.values())[-1][0]
    return path.removeprefix("L['self'].")


def _in_bf16(graph: torch.fx.GraphModule, names: list[str]) -> None:
    """The float convolutions and linear layers of the modules ``names`` run in bf16: their
    input, weight and bias cast to bf16 (the casts of constants folded when lowered or
    compiled), their output cast back to fp32."""
    if not names:
        return
    aten = torch.ops.aten
    layers = (aten.conv2d.default, aten.linear.default)
    for node in list(graph.graph.nodes):
        if node.op != "call_function" or node.target not in layers:
            continue
        owner = module_of(node)
        if not any(owner == n or owner.startswith(n + ".") for n in names):
            continue
        tensors = [a for a in node.args if isinstance(a, torch.fx.Node)]
        with graph.graph.inserting_before(node):
            cast = {
                a: graph.graph.call_function(aten._to_copy.default, (a,), {"dtype": torch.bfloat16})
                for a in tensors
            }
        node.args = tuple(cast.get(a, a) if isinstance(a, torch.fx.Node) else a for a in node.args)
        with graph.graph.inserting_after(node):
            back = graph.graph.call_function(
                aten._to_copy.default, (node,), {"dtype": torch.float32}
            )
        node.replace_all_uses_with(back, delete_user_cb=lambda user, back=back: user is not back)
        for made in (*cast.values(), back):
            made.meta["nn_module_stack"] = node.meta.get("nn_module_stack", {})
    graph.graph.lint()
    graph.recompile()


def lower(quantized: torch.fx.GraphModule, example: torch.Tensor) -> torch.fx.GraphModule:
    """``quantize``'s graph with its quantize / dequantize patterns replaced by oneDNN's int8
    convolutions and linear layers, the weights packed once, and no code generated: torchao's
    ``lower_pt2e_quantized_to_x86`` with the batch kept dynamic (any batch size) and the
    flattening views made reshapes (oneDNN's outputs are channels-last, which a view of the
    flat value-head input cannot take). ``example`` gives the input's shape only. Raises where
    the passes fail."""
    from torch._export.utils import _is_cia_op
    from torch._inductor.constant_folding import constant_fold
    from torch._inductor.fx_passes.freezing_patterns import freezing_passes

    require()
    with quiet():
        import torchao.quantization.pt2e.inductor_passes.x86  # noqa: F401  (its patterns)

    table = torch.export.default_decompositions()
    for op in list(table):
        if not _is_cia_op(op):  # post-autograd: keep the primitive ops
            del table[op]
    batch = torch.export.Dim("batch", min=1)
    with warnings.catch_warnings():  # torch's own deprecations inside export's deep copies
        warnings.simplefilter("ignore", FutureWarning)
        exported = torch.export.export(
            quantized, (example,), dynamic_shapes=({0: batch},), strict=True
        )
        lowered = exported.run_decompositions(table).module()
    aten = torch.ops.aten
    for node in lowered.graph.nodes:
        if node.target == aten.t.default:  # as torchao does: the linear patterns want a permute
            node.target, node.args = aten.permute.default, (node.args[0], [1, 0])
    lowered.recompile()
    with torch.no_grad():
        freezing_passes(lowered, (example,))
        constant_fold(lowered)
    for node in lowered.graph.nodes:
        if node.target == aten.view.default:
            node.target = aten.reshape.default
    lowered.recompile()
    return lowered


def compile_package(quantized: torch.fx.GraphModule, example: torch.Tensor, path: Path) -> None:
    """``quantize``'s graph compiled ahead of time into the package ``path`` (a ``.pt2``):
    exported with a dynamic batch, frozen (inductor's x86 int8 patterns fuse only into frozen
    weights: oneDNN int8 convolutions and linear layers, prepacked, in a shared library) and
    with kernels that take their threads from the caller at run time. Needs a C++ compiler;
    raises where compiling fails."""
    from torch._inductor import aoti_compile_and_package

    require()
    with quiet():
        import torchao.quantization.pt2e.inductor_passes.x86  # noqa: F401  (its patterns)
    batch = torch.export.Dim("batch", min=1)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.filterwarnings("ignore", message="To copy construct from a tensor")
        exported = torch.export.export(quantized, (example,), dynamic_shapes=({0: batch},))
        aoti_compile_and_package(
            exported,
            package_path=str(path),
            inductor_configs={"freezing": True, "cpp.dynamic_threads": True},
        )


def check_package(path: Path) -> None:
    """Refuse (ValueError) a package that holds anything but one model's library, source and
    metadata (``PACKAGE_FILES``, ``MODEL_SUFFIXES``): nothing in it may be a pickle."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (OSError, zipfile.BadZipFile) as exc:
        raise ValueError(f"not a package: {exc}") from None
    roots = {name.split("/", 1)[0] for name in names}
    if len(roots) != 1:
        raise ValueError(f"a package has one folder, not {sorted(roots)}")
    library = False
    for name in names:
        inner = name.split("/", 1)[1] if "/" in name else ""
        if inner in PACKAGE_FILES or inner.endswith("/"):
            continue
        folder, _, file = inner.rpartition("/")
        if folder != f"data/aotinductor/{PACKAGE_MODEL}" or not file.endswith(MODEL_SUFFIXES):
            raise ValueError(f"unexpected member {name!r}")
        library = library or file.endswith(".so")
    if not library:
        raise ValueError("no compiled library in the package")


def load_package(path: Path) -> Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    """The model of the package ``path`` (checked by ``check_package`` first) as a function of
    the planes (N, 119, 8, 8; made contiguous: it was exported so) to (policy logits, value),
    loaded by torch's C++ loader: no Python object is unpickled."""
    check_package(path)
    loader = torch._C._aoti.AOTIModelPackageLoader(str(path), PACKAGE_MODEL, False, 1, -1)

    def run(planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        policy, value = loader.run([planes.contiguous()])
        return policy, value

    return run


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """torchao's import logs a warning for each of its CUDA kernel libraries that a CPU-only
    machine cannot load, and torch one about an enum it registers: expected, and no concern of
    a user of the CPU int8 net."""
    loggers = [logging.getLogger(name) for name in ("torchao", "torch.utils._pytree")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
