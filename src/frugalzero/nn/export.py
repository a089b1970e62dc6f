"""A network as an ONNX file, so it runs without frugalzero (onnxruntime, TensorRT, a browser).

The graph is the network alone, in float32 with batch norm folded by the exporter:

* input ``planes``: float32 (batch, 119, 8, 8), the AlphaZero planes of
  ``frugalzero.chess.encoding.encode`` (side to move's view, 8 positions of history);
* output ``policy``: float32 (batch, 4672) logits over every move, index = plane * 64 +
  from-square as ``frugalzero.chess.moves.move_to_index`` numbers them (mask the illegal ones
  and take the softmax yourself);
* output ``value``: float32 (batch, 1), tanh, the expected result for the side to move; or,
  for a WDL net, (batch, 3) logits of win, draw and loss.

The batch dimension is dynamic. The file's metadata repeats the net's own (architecture,
encoding, net_id) so the weights can be traced back. The optional ``onnx`` extra provides the
exporter and the checker: ``pip install "frugalzero[onnx]"``.
"""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path

import numpy as np
import torch

from frugalzero.errors import UserError
from frugalzero.nn.checkpoint import NetMeta
from frugalzero.nn.model import PolicyValueNet
from frugalzero.runtime.files import atomic_write_bytes

INPUT, POLICY, VALUE = "planes", "policy", "value"
OPSET = 18
INSTALL_HINT = 'pip install "frugalzero[onnx]"'


def export_onnx(net: PolicyValueNet, meta: NetMeta, out: Path) -> Path:
    """Write ``net`` to ``out`` as ONNX (atomically), with its metadata, and return the path."""
    try:
        import onnx
    except ImportError:
        raise UserError(f"ONNX export needs the onnx extra: {INSTALL_HINT}") from None
    net = _float_copy(net)
    example = torch.zeros(2, net.config.input_planes, 8, 8)
    quiet = logging.getLogger("torch.onnx")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # its notes on torchvision's operators are for other models
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            net,
            (example,),
            input_names=[INPUT],
            output_names=[POLICY, VALUE],
            dynamic_shapes={"planes": {0: torch.export.Dim("batch")}},
            opset_version=OPSET,
            dynamo=True,
            verbose=False,
        )
    quiet.setLevel(level)
    model = program.model_proto
    for key, value in meta.to_json().items():
        entry = model.metadata_props.add()
        entry.key, entry.value = f"frugalzero.{key}", json.dumps(value)
    onnx.checker.check_model(model)
    atomic_write_bytes(out, model.SerializeToString())
    return out


def compare_with_torch(
    net: PolicyValueNet, path: Path, planes: np.ndarray
) -> dict[str, float | int]:
    """Run ``planes`` through the ONNX file (onnxruntime) and through ``net`` (PyTorch, float32)
    and report the largest absolute differences of the two outputs."""
    try:
        import onnxruntime
    except ImportError:
        raise UserError(f"checking an ONNX file needs onnxruntime: {INSTALL_HINT}") from None
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    planes = np.ascontiguousarray(planes, dtype=np.float32)
    policy, value = session.run([POLICY, VALUE], {INPUT: planes})
    with torch.inference_mode():
        expected_policy, expected_value = _float_copy(net)(torch.from_numpy(planes))
    return {
        "positions": int(planes.shape[0]),
        "policy_max_abs_diff": float(np.abs(policy - expected_policy.numpy()).max()),
        "value_max_abs_diff": float(np.abs(value - expected_value.numpy()).max()),
    }


def _float_copy(net: PolicyValueNet) -> PolicyValueNet:
    """The caller's net is never changed: a float32 CPU copy in eval mode."""
    copy = PolicyValueNet(net.config)
    copy.load_state_dict({k: v.detach().float().cpu() for k, v in net.state_dict().items()})
    return copy.eval()
