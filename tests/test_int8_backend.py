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
    calibration_planes,
    calibration_recipe,
    int8_model,
    lower_int8,
    quantize_int8,
)
from frugalzero.runtime.interpreter import own_code_env

SLOW = pytest.mark.slow  # torchao's import alone takes 2 s, a package 25 s to build


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
    key = int8_cache.package_key(tiny_net, calibration_recipe())
    return int8_cache.folder() / f"{key}.pt2"


@SLOW
def test_quantize_gives_pt2e_reference_graph(tiny_net, quantized, planes):
    ops = _ops(quantized)
    convs = sum(isinstance(m, torch.nn.Conv2d) for m in tiny_net.modules())
    linears = sum(isinstance(m, torch.nn.Linear) for m in tiny_net.modules())
    assert ops["aten.conv2d.default"] == convs and ops["aten.linear.default"] == linears
    # every weight dequantized per channel, activations quantized per tensor
    assert ops["quantized_decomposed.dequantize_per_channel.default"] == convs + linears
    assert ops["quantized_decomposed.quantize_per_tensor.default"] >= convs
    with torch.inference_mode():
        policy, value = quantized(planes)
        want_policy, want_value = tiny_net(planes)
    assert policy.shape == want_policy.shape and value.shape == want_value.shape
    assert torch.allclose(value, want_value, atol=0.02)
    assert not torch.equal(value, want_value)  # quantized: not the float net's own numbers


@SLOW
def test_lower_gives_onednn_int8_ops_and_the_same_answers(quantized, planes):
    lowered = lower_int8(quantized)
    ops = _ops(lowered)
    assert ops["onednn.qconv_pointwise.default"] + ops["onednn.qconv2d_pointwise.binary"] > 0
    assert ops["onednn.qlinear_pointwise.default"] > 0
    assert "aten.conv2d.default" not in ops
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
            assert torch.allclose(policy, want_policy, atol=1e-5)
            assert torch.allclose(value, want_value, atol=1e-5)
        # channels-last input (the runner's layout) is taken as well
        policy, _ = model(planes.contiguous(memory_format=torch.channels_last))
        assert torch.allclose(policy, lowered(planes)[0], atol=1e-5)
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
