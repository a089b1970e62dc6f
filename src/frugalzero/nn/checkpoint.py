"""Network files: safetensors weights with JSON metadata in the header. Nothing is unpickled.

The metadata records what the weights mean (architecture, encoding, value head) and where they
came from (training step, creation time, parent net, notes); a SHA-256 over metadata and weights
catches any later edit. Loading checks the file against this code and refuses a mismatch with
one line naming the field.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import struct
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from frugalzero.chess.encoding import ENCODING_SPEC
from frugalzero.errors import UserError
from frugalzero.nn.config import NetConfig
from frugalzero.nn.model import PolicyValueNet
from frugalzero.runtime.files import atomic_write_bytes

FORMAT = "frugalzero-net/1"
_META_KEY = "frugalzero"


class NetFileError(UserError):
    """A network file that cannot be used: the message names the file and the reason."""


@dataclass
class NetMeta:
    """What a network file says about its weights."""

    architecture: NetConfig
    """Shape of the network (value-head kind included)."""
    training_step: int = 0
    """Optimiser steps behind these weights."""
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    """UTC creation time, ISO 8601."""
    parent: str | None = None
    """``net_id`` of the network these weights were trained from."""
    notes: str = ""
    """Free text: how the net was made."""
    encoding: dict[str, Any] = field(default_factory=lambda: dict(ENCODING_SPEC))
    """Input and policy encoding the net was trained with."""
    net_id: str = ""
    """First 16 hex digits of the weights' SHA-256; set when saved."""

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["format"] = FORMAT
        return data


def _digest(tensors: dict[str, torch.Tensor]) -> hashlib._Hash:
    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        h.update(name.encode())
        h.update(str(t.dtype).encode())
        h.update(str(tuple(t.shape)).encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h


def _checksum(meta_json: dict[str, Any], weights_digest: str) -> str:
    body = json.dumps(meta_json, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256((body + weights_digest).encode()).hexdigest()


def save_net(net: PolicyValueNet, path: str | Path, meta: NetMeta | None = None) -> NetMeta:
    """Save weights and metadata atomically; returns the metadata as written (with net_id)."""
    path = Path(path)
    meta = dataclasses.replace(meta) if meta else NetMeta(architecture=net.config)
    if meta.architecture != net.config:
        raise ValueError("metadata architecture differs from the network's")
    tensors = {k: v.detach().cpu().contiguous() for k, v in net.state_dict().items()}
    digest = _digest(tensors).hexdigest()
    meta.net_id = digest[:16]
    meta_json = meta.to_json()
    header = {_META_KEY: json.dumps(meta_json), "checksum": _checksum(meta_json, digest)}
    atomic_write_bytes(path, st_save(tensors, metadata=header))
    return meta


def _read_header(path: Path, data: bytes) -> dict[str, Any]:
    if len(data) < 8:
        raise NetFileError(f"{path}: not a network file (only {len(data)} bytes)")
    (size,) = struct.unpack("<Q", data[:8])
    if size > len(data) - 8:
        raise NetFileError(
            f"{path}: truncated: header wants {size} bytes, file has {len(data) - 8}"
        )
    try:
        header = json.loads(data[8 : 8 + size])
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise NetFileError(f"{path}: not a network file (unreadable header)") from None
    end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
    if 8 + size + end > len(data):
        raise NetFileError(
            f"{path}: truncated: weights need {8 + size + end} bytes, file has {len(data)}"
        )
    return header


def _parse_meta(path: Path, raw: dict[str, str]) -> tuple[NetMeta, dict[str, Any], str]:
    if _META_KEY not in raw or "checksum" not in raw:
        raise NetFileError(f"{path}: no frugalzero metadata (not a frugalzero network file)")
    try:
        data = json.loads(raw[_META_KEY])
    except json.JSONDecodeError:
        raise NetFileError(f"{path}: metadata is not valid JSON") from None
    if data.get("format") != FORMAT:
        raise NetFileError(f"{path}: field format is {data.get('format')!r}, expected {FORMAT!r}")
    for key, expected in ENCODING_SPEC.items():
        got = data.get("encoding", {}).get(key)
        if got != expected:
            raise NetFileError(
                f"{path}: field encoding.{key} is {got!r}, this frugalzero expects {expected!r}"
            )
    arch = data.get("architecture")
    if not isinstance(arch, dict):
        raise NetFileError(f"{path}: field architecture is missing")
    known = {f.name: f for f in dataclasses.fields(NetConfig)}
    for key, value in arch.items():
        if key not in known:
            raise NetFileError(f"{path}: field architecture.{key} is unknown to this frugalzero")
        ok = value in ("scalar", "wdl") if key == "value_head" else type(value) is int
        if not ok or (key != "value_head" and value < 0):
            raise NetFileError(f"{path}: field architecture.{key} has a bad value {value!r}")
    extra = set(data) - {f.name for f in dataclasses.fields(NetMeta)} - {"format"}
    if extra:
        raise NetFileError(f"{path}: field {sorted(extra)[0]} is unknown to this frugalzero")
    fields = {k: v for k, v in data.items() if k != "format"}
    try:
        meta = NetMeta(**{**fields, "architecture": NetConfig(**arch)})
    except TypeError as exc:
        raise NetFileError(f"{path}: bad metadata ({exc})") from None
    return meta, data, raw["checksum"]


def load_net(
    path: str | Path, device: str | torch.device = "cpu"
) -> tuple[PolicyValueNet, NetMeta]:
    """Load and verify a network file; any problem is a NetFileError with one line."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise NetFileError(f"{path}: cannot read network file ({exc.strerror})") from None
    header = _read_header(path, data)
    meta, meta_json, checksum = _parse_meta(path, header.get("__metadata__") or {})
    try:
        tensors = st_load(data)
    except Exception as exc:  # safetensors raises its own error type for damaged files
        raise NetFileError(f"{path}: damaged weights ({exc})") from None
    net = PolicyValueNet(meta.architecture)
    expected = {k: tuple(v.shape) for k, v in net.state_dict().items()}
    stored = {k: tuple(v.shape) for k, v in tensors.items()}
    if expected != stored:
        diff = sorted(set(expected.items()) ^ set(stored.items()))[0][0]
        raise NetFileError(
            f"{path}: field architecture does not match the stored weights (tensor {diff})"
        )
    digest = _digest(tensors).hexdigest()
    if _checksum(meta_json, digest) != checksum:
        raise NetFileError(f"{path}: checksum mismatch: the file was changed after it was saved")
    net.load_state_dict(tensors)
    return net.to(device).eval(), meta
