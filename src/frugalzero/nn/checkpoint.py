"""Network files: safetensors weights with JSON metadata in the header. Nothing is unpickled.

The metadata records what the weights mean (architecture, encoding, value head) and where they
came from (training step, creation time, parent net, notes); a SHA-256 over metadata and weights
catches any later edit. Loading checks the file against this code and refuses a mismatch with
one line naming the field. Everything the header claims (its JSON's shape, each tensor's dtype,
shape and byte range, the architecture the metadata names) is checked against the file's size
and against each other before anything is allocated, so a crafted header is a one-line error,
never a 32 GB allocation; weights that are not finite (a diverged training) are refused both
ways, on saving and on loading.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import struct
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

import torch
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from frugalzero.chess.encoding import ENCODING_SPEC, HISTORY_FILLS, LEGACY_HISTORY_FILL
from frugalzero.errors import UserError
from frugalzero.nn.config import NetConfig
from frugalzero.nn.model import PolicyValueNet
from frugalzero.runtime.files import atomic_write_bytes

FORMAT = "frugalzero-net/1"
CHOICES = {  # the architecture's fields with a set of values, and the values
    name: get_args(hint)
    for name, hint in get_type_hints(NetConfig).items()
    if get_origin(hint) is Literal
}
ATTENTION_ONLY = ("body", "heads", "ffn_ratio")  # left out of a ResNet's metadata
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
        if self.architecture.body == "resnet":  # a ResNet's file reads as it always did
            for name in ATTENTION_ONLY:
                del data["architecture"][name]
        # how the inputs are built is the encoding's: the net object carries it in its config
        data["encoding"]["history_fill"] = data["architecture"].pop("history_fill")
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


def not_finite(path: Path, tensors: dict[str, torch.Tensor]) -> NetFileError | None:
    """The error for weights holding inf or NaN (the first such tensor named), or None."""
    for name in sorted(tensors):
        t = tensors[name]
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            count = int((~torch.isfinite(t)).sum())
            return NetFileError(
                f"{path}: tensor {name} holds {count} values that are not finite (inf or NaN: "
                "a training that diverged); the network is unusable"
            )
    return None


def save_net(net: PolicyValueNet, path: str | Path, meta: NetMeta | None = None) -> NetMeta:
    """Save weights and metadata atomically; returns the metadata as written (with net_id).
    Weights that are not finite raise NetFileError and write nothing."""
    path = Path(path)
    meta = dataclasses.replace(meta) if meta else NetMeta(architecture=net.config)
    if meta.architecture != net.config:
        raise ValueError("metadata architecture differs from the network's")
    tensors = {k: v.detach().cpu().contiguous() for k, v in net.state_dict().items()}
    if (error := not_finite(path, tensors)) is not None:
        raise error
    digest = _digest(tensors).hexdigest()
    meta.net_id = digest[:16]
    meta_json = meta.to_json()
    header = {_META_KEY: json.dumps(meta_json), "checksum": _checksum(meta_json, digest)}
    atomic_write_bytes(path, st_save(tensors, metadata=header))
    return meta


_ITEM_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1}
_ITEM_BYTES |= {"U8": 1, "BOOL": 1}


def _read_header(path: Path, data: bytes) -> dict[str, Any]:
    """The safetensors header, each entry checked against the file before anything else."""
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
    if not isinstance(header, dict):
        raise NetFileError(f"{path}: not a network file (header is not a JSON object)")
    meta = header.get("__metadata__", {})
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise NetFileError(f"{path}: header field __metadata__ is not a table of strings")
    end = 0
    for name, entry in header.items():
        if name != "__metadata__":
            end = max(end, _tensor_end(path, name, entry))
    if 8 + size + end > len(data):
        raise NetFileError(
            f"{path}: truncated: weights need {8 + size + end} bytes, file has {len(data)}"
        )
    return header


def _tensor_end(path: Path, name: str, entry: Any) -> int:
    """Where tensor ``name``'s bytes end; its dtype, shape and byte range must agree."""
    where = f"{path}: header entry {name!r}"
    if not isinstance(entry, dict):
        raise NetFileError(f"{where} is not a table")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype not in _ITEM_BYTES:
        raise NetFileError(f"{where}: dtype {dtype!r} is not a number type")
    if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
        raise NetFileError(f"{where}: shape {shape!r} is not a list of sizes")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(type(n) is int for n in offsets)
        or not 0 <= offsets[0] <= offsets[1]
    ):
        raise NetFileError(f"{where}: data_offsets {offsets!r} is not a byte range")
    if offsets[1] - offsets[0] != math.prod(shape) * _ITEM_BYTES[dtype]:
        raise NetFileError(
            f"{where}: shape {shape} of {dtype} does not fill its {offsets[1] - offsets[0]} bytes"
        )
    return offsets[1]


def _parse_meta(path: Path, raw: dict[str, str]) -> tuple[NetMeta, dict[str, Any], str]:
    if _META_KEY not in raw or "checksum" not in raw:
        raise NetFileError(f"{path}: no frugalzero metadata (not a frugalzero network file)")
    try:
        data = json.loads(raw[_META_KEY])
    except json.JSONDecodeError:
        raise NetFileError(f"{path}: metadata is not valid JSON") from None
    if not isinstance(data, dict) or not isinstance(data.get("encoding", {}), dict):
        raise NetFileError(f"{path}: metadata is not a JSON object with an encoding table")
    if data.get("format") != FORMAT:
        raise NetFileError(f"{path}: field format is {data.get('format')!r}, expected {FORMAT!r}")
    for key, expected in ENCODING_SPEC.items():
        got = data.get("encoding", {}).get(key)
        if got != expected:
            raise NetFileError(
                f"{path}: field encoding.{key} is {got!r}, this frugalzero expects {expected!r}"
            )
    fill = data.get("encoding", {}).get("history_fill", LEGACY_HISTORY_FILL)  # older nets: measured
    if fill not in HISTORY_FILLS:
        raise NetFileError(
            f"{path}: field encoding.history_fill is {fill!r}; choose from "
            f"{', '.join(HISTORY_FILLS)}"
        )
    arch = data.get("architecture")
    if not isinstance(arch, dict):
        raise NetFileError(f"{path}: field architecture is missing")
    if "history_fill" in arch:
        raise NetFileError(f"{path}: field architecture.history_fill belongs in encoding")
    known = {f.name: f for f in dataclasses.fields(NetConfig)}
    for key, value in arch.items():
        if key not in known:
            raise NetFileError(f"{path}: field architecture.{key} is unknown to this frugalzero")
        choices = CHOICES.get(key)
        ok = value in choices if choices else type(value) is int and value >= 0
        if not ok:
            raise NetFileError(f"{path}: field architecture.{key} has a bad value {value!r}")
    extra = set(data) - {f.name for f in dataclasses.fields(NetMeta)} - {"format"}
    if extra:
        raise NetFileError(f"{path}: field {sorted(extra)[0]} is unknown to this frugalzero")
    fields = {k: v for k, v in data.items() if k != "format"}
    fields["encoding"] = {
        k: v for k, v in data.get("encoding", ENCODING_SPEC).items() if k != "history_fill"
    }
    try:
        meta = NetMeta(**{**fields, "architecture": NetConfig(**arch, history_fill=fill)})
    except UserError as exc:  # a shape the network cannot have
        raise NetFileError(f"{path}: field {exc}") from None
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
    if meta.architecture.blocks > len(header):  # each block has several tensors
        raise NetFileError(f"{path}: field architecture does not match the stored weights")
    with torch.device("meta"):  # the architecture's shapes, with no memory behind them
        expected = {
            k: tuple(v.shape) for k, v in PolicyValueNet(meta.architecture).state_dict().items()
        }
    stored = {k: tuple(v["shape"]) for k, v in header.items() if k != "__metadata__"}
    if expected != stored:
        diff = sorted(set(expected.items()) ^ set(stored.items()))[0][0]
        raise NetFileError(
            f"{path}: field architecture does not match the stored weights (tensor {diff})"
        )
    try:
        tensors = st_load(data)
    except Exception as exc:  # safetensors raises its own error type for damaged files
        raise NetFileError(f"{path}: damaged weights ({exc})") from None
    digest = _digest(tensors).hexdigest()
    if _checksum(meta_json, digest) != checksum:
        raise NetFileError(f"{path}: checksum mismatch: the file was changed after it was saved")
    if (error := not_finite(path, tensors)) is not None:
        raise error
    net = PolicyValueNet(meta.architecture)
    net.load_state_dict(tensors)
    return net.to(device).eval(), meta
