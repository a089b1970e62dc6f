"""ONNX export: the file runs in onnxruntime as the network runs in PyTorch."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from frugalzero.cli import main
from frugalzero.nn.checkpoint import NetMeta, save_net
from frugalzero.nn.config import architecture
from frugalzero.nn.model import PolicyValueNet

onnx = pytest.importorskip("onnx", reason="the onnx extra is not installed (make test has it)")
onnxruntime = pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
pytestmark = pytest.mark.slow  # exporting and checking in onnxruntime takes seconds


def test_the_shipped_net_agrees_with_pytorch_on_a_thousand_positions(tmp_path, capsys):
    out = tmp_path / "default.onnx"
    args = ["net", "export", "default", "--onnx", str(out), "--check", "1000", "--json"]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["real"]["positions"] + result["random"]["positions"] == 1000
    for part in ("real", "random"):
        assert result[part]["policy_max_abs_diff"] < 1e-3
        assert result[part]["value_max_abs_diff"] < 1e-3
    model = onnx.load(str(out))
    assert [i.name for i in model.graph.input] == ["planes"]
    assert [o.name for o in model.graph.output] == ["policy", "value"]
    meta = {p.key: json.loads(p.value) for p in model.metadata_props}
    assert meta["frugalzero.net_id"] == result["net_id"]
    assert meta["frugalzero.encoding"]["policy"] == "alphazero-4672"


@pytest.mark.parametrize("arch", ["tiny", "attention"])
def test_a_wdl_net_exports_with_a_dynamic_batch(tmp_path, capsys, arch):
    torch.manual_seed(3)
    config = architecture(arch, value_head="wdl")
    net = PolicyValueNet(config).eval()
    path = tmp_path / "wdl.safetensors"
    save_net(net, path, NetMeta(config))
    out = tmp_path / "wdl.onnx"
    before = {k: v.clone() for k, v in net.state_dict().items()}
    assert main(["net", "export", str(path), "--onnx", str(out), "--check", "0"]) == 0
    session = onnxruntime.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    for batch in (1, 7):
        planes = np.random.default_rng(batch).random((batch, 119, 8, 8), dtype=np.float32)
        policy, value = session.run(None, {"planes": planes})
        with torch.inference_mode():
            want_policy, want_value = net(torch.from_numpy(planes))
        assert policy.shape == (batch, 4672) and value.shape == (batch, 3)
        np.testing.assert_allclose(policy, want_policy.numpy(), atol=1e-4)
        np.testing.assert_allclose(value, want_value.numpy(), atol=1e-4)
    after = net.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)  # the caller's net is untouched
