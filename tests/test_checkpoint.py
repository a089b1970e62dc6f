"""Network files: exact round trips; edited or damaged files refused in one line."""

from __future__ import annotations

import json
import struct
import subprocess
import sys

import pytest
import torch

from frugalzero.nn.checkpoint import NetFileError, NetMeta, load_net, save_net
from frugalzero.nn.config import architecture
from frugalzero.nn.model import PolicyValueNet
from frugalzero.nn.shipped import SHIPPED_NETS, resolve_net_path
from frugalzero.runtime.interpreter import own_code_env


@pytest.fixture()
def saved(tmp_path, tiny_net):
    path = tmp_path / "net.safetensors"
    meta = save_net(tiny_net, path, NetMeta(tiny_net.config, training_step=42, notes="test"))
    return path, meta


def rewrite_metadata(path, edit):
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    meta = json.loads(header["__metadata__"]["frugalzero"])
    edit(meta)
    header["__metadata__"]["frugalzero"] = json.dumps(meta)
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data[8 + size :])


def test_reload_is_bit_identical(saved, tiny_net):
    path, meta = saved
    net, loaded = load_net(path)
    for (k, a), (k2, b) in zip(tiny_net.state_dict().items(), net.state_dict().items()):
        assert k == k2 and torch.equal(a, b)
    assert loaded.training_step == 42 and loaded.notes == "test"
    assert loaded.net_id == meta.net_id and len(meta.net_id) == 16


def test_edited_encoding_field_is_named(saved):
    path, _ = saved
    rewrite_metadata(path, lambda m: m["encoding"].update(history=4))
    with pytest.raises(NetFileError, match=r"field encoding\.history is 4"):
        load_net(path)


def test_edited_architecture_is_named(saved):
    path, _ = saved
    rewrite_metadata(path, lambda m: m["architecture"].update(blocks=5))
    with pytest.raises(NetFileError, match=r"field architecture does not match"):
        load_net(path)


def test_edited_value_head_is_named(saved):
    path, _ = saved
    rewrite_metadata(path, lambda m: m["architecture"].update(value_head="logits"))
    with pytest.raises(NetFileError, match=r"field architecture\.value_head"):
        load_net(path)


def test_any_other_edit_fails_the_checksum(saved):
    path, _ = saved
    rewrite_metadata(path, lambda m: m.update(training_step=43))
    with pytest.raises(NetFileError, match="checksum"):
        load_net(path)


def test_flipped_weight_byte_fails_the_checksum(saved):
    path, _ = saved
    data = bytearray(path.read_bytes())
    data[-10] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(NetFileError, match="checksum"):
        load_net(path)


@pytest.mark.parametrize("keep", [0, 5, 100, 0.5, -1])
def test_truncated_file_is_refused(saved, keep):
    path, _ = saved
    data = path.read_bytes()
    cut = (
        int(len(data) * keep)
        if isinstance(keep, float)
        else (len(data) + keep if keep < 0 else keep)
    )
    path.write_bytes(data[:cut])
    with pytest.raises(NetFileError, match=str(path.name)):
        load_net(path)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["tiny", "attention"])
def test_wdl_net_round_trips(tmp_path, arch):
    net = PolicyValueNet(architecture(arch, value_head="wdl"))
    save_net(net, tmp_path / "w.safetensors")
    loaded, meta = load_net(tmp_path / "w.safetensors")
    assert meta.architecture.value_head == "wdl" and loaded.config == net.config


@pytest.mark.slow
def test_cli_reports_one_line_not_a_traceback(saved):
    path, _ = saved
    path.write_bytes(path.read_bytes()[:-7])
    result = subprocess.run(
        [sys.executable, "-m", "frugalzero", "net", "info", str(path)],
        capture_output=True,
        text=True,
        env=own_code_env(),
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "truncated" in lines[0] and "Traceback" not in result.stderr


def test_no_pickle_in_the_package():
    import pathlib

    import frugalzero

    root = pathlib.Path(frugalzero.__file__).parent
    for source in root.rglob("*.py"):
        text = source.read_text()
        assert "pickle.load" not in text and "torch.load(" not in text, source


def test_shipped_nets_load_by_name_and_default_is_the_larger():
    """``medium`` (``default``'s file) is the strongest net at equal nodes, ``small`` the cheap
    one a CPU user plays under a clock."""
    params = {}
    for name in SHIPPED_NETS:
        net, meta = load_net(resolve_net_path(name))  # checksum verified
        params[name] = sum(p.numel() for p in net.parameters())
        assert meta.architecture.blocks > 0
    assert params["default"] == params["medium"] > 3 * params["small"]
    assert resolve_net_path("my.safetensors").name == "my.safetensors"  # anything else: a path
