"""Everything the int8 network takes from outside torch's public API, in one place: torchao's
PT2E quantizer (``X86InductorQuantizer``) and its x86 lowering passes, inductor's private
freezing passes, and AOTInductor's packager and C++ package loader. An upgrade of torch or
torchao that changes one of them breaks here, and ``tests/test_int8_backend.py`` pins what the
rest of the package relies on: the quantized graph's ops, the lowered graph's oneDNN int8 ops,
the package's members (no pickle among them) and the loaded package's outputs.

torchao is the ``int8`` extra (``pip install 'frugalzero[int8]'``): int8 is no default, and only
quantizing needs it. A package already built (``nn.int8_cache``) loads with torch alone.

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
from collections.abc import Callable, Iterator
from pathlib import Path

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
INSTALL = "precision 'int8' needs torchao: pip install 'frugalzero[int8]'"

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


def quantize(net: torch.nn.Module, calibration: torch.Tensor, chunk: int) -> torch.fx.GraphModule:
    """``net`` (float32, eval mode; not changed) exported with a dynamic batch, observed on
    ``calibration`` (``chunk`` positions a pass, the first chunk the export's example) and
    converted: PT2E static quantization with torchao's ``X86InductorQuantizer`` default
    (per-channel symmetric int8 weights, uint8 activations, histogram observers). The result
    is the reference graph: ``quantized_decomposed`` quantize / dequantize ops around float
    convolutions and linear layers."""
    require()
    with quiet():
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
        from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
            X86InductorQuantizer,
            get_default_x86_inductor_quantization_config,
        )

    batch = torch.export.Dim("batch", min=1)
    example = calibration[:chunk]
    exported = torch.export.export(net, (example,), dynamic_shapes=({0: batch},)).module()
    quantizer = X86InductorQuantizer()
    quantizer.set_global(get_default_x86_inductor_quantization_config())
    prepared = prepare_pt2e(exported, quantizer)
    with torch.no_grad():
        for part in calibration.split(chunk):
            prepared(part)
    return convert_pt2e(prepared)


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
