"""What the int8 net relies on from torchao and torch's private API (``nn.int8_backend``),
pinned: an upgrade that changes one of these fails here, not in a game.

- ``quantize``: PT2E's reference graph, ``quantized_decomposed`` quantize / dequantize ops
  (per-channel weights) around the float convolutions and linear layers;
- ``lower``: oneDNN's int8 convolutions and linear layers, the weights' dequantize gone;
- ``compile_package``: an AOTInductor ``.pt2`` of one model's library, source and metadata,
  nothing pickled, whose generated code calls oneDNN's int8 convolutions;
- ``load_package``: torch's C++ loader, torch alone (no torchao, no inductor imported), any
  batch size, (policy logits, value) as the lowered graph gives them.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from collections import Counter

import numpy as np
import pytest
import torch

from frugalzero.nn import int8_backend
from frugalzero.nn.quantize import (
    MIXED,
    PLAIN,
    calibration_planes,
    int8_model,
    lower_int8,
    quantize_int8,
    recipe_record,
)
from frugalzero.runtime.interpreter import own_code_env

SLOW = pytest.mark.slow  # torchao's import alone takes 2 s, a package 25 s to build
BF16_CONVS = ("stem.0.0", "tower.0.conv1.0", "policy.0.0", "policy.2", "value.0.0")
BF16_LINEARS = ("value.3", "value.5")
"""The convolutions and linear layers ``MIXED`` keeps in bf16 in a ResNet."""


def _ops(graph: torch.fx.GraphModule) -> Counter:
    return Counter(str(n.target) for n in graph.graph.nodes if n.op == "call_function")


@pytest.fixture(scope="module")
def quantized(tiny_net):
    return quantize_int8(tiny_net)


@pytest.fixture(scope="module")
def planes():
    return torch.from_numpy(np.array(calibration_planes("always")[300:340]))


@pytest.fixture(scope="module")
def package(tiny_net):
    """The tiny net's package, as the runner builds it (shared with the other int8 tests
    through the session's cache folder)."""
    from frugalzero.nn import int8_cache

    built = int8_model(tiny_net, compile=True)
    assert built.graph == "aoti"
    key = int8_cache.package_key(tiny_net, recipe_record(tiny_net))
    return int8_cache.folder() / f"{key}.pt2"


@SLOW
def test_quantize_gives_pt2e_reference_graph(tiny_net, quantized, planes):
    ops = _ops(quantized)
    convs = sum(isinstance(m, torch.nn.Conv2d) for m in tiny_net.modules())
    linears = sum(isinstance(m, torch.nn.Linear) for m in tiny_net.modules())
    assert ops["aten.conv2d.default"] == convs and ops["aten.linear.default"] == linears
    # every weight but the bf16 layers' (MIXED) dequantized per channel, the int8 layers'
    # activations quantized per tensor
    int8_convs, int8_linears = convs - len(BF16_CONVS), linears - len(BF16_LINEARS)
    assert ops["quantized_decomposed.dequantize_per_channel.default"] == int8_convs + int8_linears
    assert ops["quantized_decomposed.quantize_per_tensor.default"] >= int8_convs
    with torch.inference_mode():
        policy, value = quantized(planes)
        want_policy, want_value = tiny_net(planes)
    assert policy.shape == want_policy.shape and value.shape == want_value.shape
    assert torch.allclose(value, want_value, atol=0.02)
    assert not torch.equal(value, want_value)  # quantized: not the float net's own numbers


def _layer_of(graph: torch.fx.GraphModule, module: str) -> torch.fx.Node:
    """The convolution or linear layer of ``module`` in ``graph``."""
    nodes = [n for n in graph.graph.nodes if int8_backend.module_of(n) == module]
    nodes = [n for n in nodes if "conv" in str(n.target) or "linear" in str(n.target)]
    assert len(nodes) == 1
    return nodes[0]


def _bf16_cast(node: object) -> bool:
    return (
        isinstance(node, torch.fx.Node)
        and node.target == torch.ops.aten._to_copy.default
        and node.kwargs.get("dtype") == torch.bfloat16
    )


@SLOW
def test_the_recipe_keeps_its_bf16_layers_bf16_and_the_residual_adds_float(tiny_net):
    """``MIXED`` on a ResNet, in the converted graph and lowered: the stem's, the first block's
    first and both heads' convolutions and linear layers take bf16 input, weight and bias, no
    int8 weight, and give fp32 back; each block's add takes the float residual stream, not a
    dequantized one, and stays out of the int8 convolution. ``PLAIN`` quantizes all of them."""
    aten = torch.ops.aten
    dequantize = torch.ops.quantized_decomposed.dequantize_per_tensor.default
    convs = sum(isinstance(m, torch.nn.Conv2d) for m in tiny_net.modules())
    linears = sum(isinstance(m, torch.nn.Linear) for m in tiny_net.modules())
    blocks = tiny_net.config.blocks
    assert MIXED.modes(tiny_net) == {
        "stem": "bf16",
        "tower.0.conv1": "bf16",
        "policy": "bf16",
        "value": "bf16",
        **{f"tower.{i}.conv2": "alone" for i in range(blocks)},
    }
    plain, mixed = quantize_int8(tiny_net, recipe=PLAIN), quantize_int8(tiny_net, recipe=MIXED)
    int8_layers = convs + linears - len(BF16_CONVS) - len(BF16_LINEARS)
    for graph, int8_weights in ((plain, convs + linears), (mixed, int8_layers)):
        assert _ops(graph)["quantized_decomposed.dequantize_per_channel.default"] == int8_weights
    for module in BF16_CONVS + BF16_LINEARS:
        layer = _layer_of(mixed, module)
        assert layer.target in (aten.conv2d.default, aten.linear.default)
        x, weight, bias = layer.args[:3]
        assert _bf16_cast(x) and _bf16_cast(weight) and _bf16_cast(bias)
        assert weight.args[0].op == "get_attr"  # the float weight itself, not a dequantized one
        [back] = layer.users
        assert back.target == aten._to_copy.default and back.kwargs["dtype"] == torch.float32
        assert not _bf16_cast(_layer_of(plain, module).args[1])
    for graph, skips_dequantized in ((plain, True), (mixed, False)):
        adds = [n for n in graph.graph.nodes if n.target == aten.add.Tensor]
        assert len(adds) == blocks
        assert all((a.args[0].target == dequantize) is skips_dequantized for a in adds)

    lowered = lower_int8(mixed)
    ops = _ops(lowered)
    assert ops["mkldnn._convolution_pointwise.default"] == len(BF16_CONVS)
    assert ops["onednn.qconv_pointwise.default"] == convs - len(BF16_CONVS)
    assert ops["onednn.qlinear_pointwise.default"] == linears - len(BF16_LINEARS)
    assert ops["onednn.qconv2d_pointwise.binary"] == 0 and ops["aten.add.Tensor"] == blocks
    for module in BF16_CONVS + BF16_LINEARS:
        layer = _layer_of(lowered, module)
        assert _bf16_cast(layer.args[0])
        assert getattr(lowered, layer.args[1].target).dtype == torch.bfloat16
    ops = _ops(lower_int8(plain))
    assert ops["onednn.qconv2d_pointwise.binary"] == blocks
    assert ops["onednn.qlinear_pointwise.default"] == linears


@SLOW
def test_a_mode_for_a_module_the_net_lacks_is_refused(tiny_net):
    calibration = torch.from_numpy(np.array(calibration_planes("always")[:8]))
    with pytest.raises(ValueError, match="no module 'stem.9'"):
        int8_backend.quantize(tiny_net, calibration, 8, {"stem.9": int8_backend.FLOAT})
    with pytest.raises(ValueError, match="no int8 mode 'fp8'"):
        int8_backend.quantize(tiny_net, calibration, 8, {"stem": "fp8"})
    with pytest.raises(ValueError, match="no observer"):
        int8_backend.quantize(tiny_net, calibration, 8, observer="percentile")


@SLOW
def test_lower_gives_onednn_int8_ops_and_the_same_answers(quantized, planes):
    lowered = lower_int8(quantized)
    ops = _ops(lowered)
    assert ops["onednn.qconv_pointwise.default"] + ops["onednn.qconv2d_pointwise.binary"] > 0
    assert "aten.conv2d.default" not in ops and "aten.linear.default" not in ops
    assert "quantized_decomposed.dequantize_per_channel.default" not in ops  # prepacked
    with torch.inference_mode():
        for rows in (1, 3, 40):  # any batch size
            got, want = lowered(planes[:rows]), quantized(planes[:rows])
            assert torch.allclose(got[0], want[0], atol=1e-3)
            assert torch.allclose(got[1], want[1], atol=1e-3)


@SLOW
def test_a_package_holds_no_pickle_and_calls_onednn_int8(package):
    int8_backend.check_package(package)
    with zipfile.ZipFile(package) as archive:
        names = archive.namelist()
        wrapper = [n for n in names if n.endswith("wrapper.cpp")]
        assert len(wrapper) == 1
        assert "qconv" in archive.read(wrapper[0]).decode()
    assert any(n.endswith(".so") for n in names)
    assert not any(n.endswith((".pkl", ".pt")) or "/data/weights/" in n for n in names)


@SLOW
def test_a_package_loads_with_torch_alone_and_answers_as_the_lowered_graph(
    package, quantized, planes
):
    model = int8_backend.load_package(package)
    lowered = lower_int8(quantized)
    with torch.inference_mode():
        for rows in (1, 5, 40):
            policy, value = model(planes[:rows])
            want_policy, want_value = lowered(planes[:rows])
            assert policy.shape == (rows, 4672) and value.shape == (rows, 1)
            # bit-equal when run alone; with the suite on two workers, twice apart by less
            # than 5e-5 (equal to 4 places: float sums in another order); so as close as the
            # lowering is held to the graph (above), where another net is off by far more
            assert torch.allclose(policy, want_policy, atol=1e-3)
            assert torch.allclose(value, want_value, atol=1e-3)
        # channels-last input (the runner's layout) is taken as well
        policy, _ = model(planes.contiguous(memory_format=torch.channels_last))
        assert torch.allclose(policy, lowered(planes)[0], atol=1e-3)
    # another process loads it with torchao made unimportable, and imports no inductor
    code = (
        "import sys; sys.modules['torchao'] = None\n"
        "import torch\n"
        "from pathlib import Path\n"
        "from frugalzero.nn.int8_backend import load_package\n"
        f"model = load_package(Path({str(package)!r}))\n"
        f"policy, value = model(torch.zeros(2, 119, 8, 8))\n"
        "assert policy.shape == (2, 4672), policy.shape\n"
        "print(sorted(m for m in sys.modules if m.startswith('torch._inductor')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=own_code_env()
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def _zip(path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


@pytest.mark.parametrize(
    "members, why",
    [
        ({"p/data/aotinductor/model/x.so": b"", "p/data/weights/w": b"\x80\x04"}, "unexpected"),
        ({"p/data/aotinductor/model/x.so": b"", "p/models/m.json": b"{}"}, "unexpected"),
        ({"p/data/aotinductor/model/x.so": b"", "p/data.pkl": b"\x80\x04"}, "unexpected"),
        ({"p/data/aotinductor/model/x.so": b"", "q/archive_format": b"pt2"}, "one folder"),
        ({"p/data/aotinductor/model/x.cpp": b"", "p/archive_format": b"pt2"}, "no compiled"),
    ],
)
def test_anything_but_a_library_and_its_metadata_is_refused_before_loading(tmp_path, members, why):
    path = tmp_path / "bad.pt2"
    _zip(path, members)
    with pytest.raises(ValueError, match=why):
        int8_backend.load_package(path)
    (tmp_path / "junk.pt2").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a package"):
        int8_backend.check_package(tmp_path / "junk.pt2")
