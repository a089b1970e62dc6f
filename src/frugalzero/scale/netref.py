"""The iteration's network as plain data in the object store: weights as numpy arrays plus the
architecture, put there once per generation step; workers build their net from it. Nothing is
read from a pickle file: the driver loads (and verifies) the safetensors file itself."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from frugalzero.nn.config import NetConfig
from frugalzero.nn.model import PolicyValueNet
from frugalzero.runtime.weights import arrays_to_state_dict, weights_to_arrays


def net_payload(net: PolicyValueNet, net_id: str) -> dict[str, Any]:
    """Weights (numpy, so the object store shares them zero-copy) and what they mean."""
    return {
        "architecture": dataclasses.asdict(net.config),
        "net_id": net_id,
        "weights": weights_to_arrays(net),
    }


def build_net(payload: dict[str, Any]) -> PolicyValueNet:
    """The network of a payload, in eval mode on the CPU."""
    net = PolicyValueNet(NetConfig(**payload["architecture"]))
    net.load_state_dict(arrays_to_state_dict(payload["weights"]))
    return net.eval()


def publish_net(net_path: str | Path) -> tuple[Any, Any]:
    """Load and verify the file here, put it in the object store once: (ObjectRef, NetMeta)."""
    from frugalzero.nn.checkpoint import load_net
    from frugalzero.scale.cluster import require_ray

    ray = require_ray()
    net, meta = load_net(net_path)
    return ray.put(net_payload(net, meta.net_id)), meta
