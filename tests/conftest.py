"""Shared fixtures: paths to ../shared data, small nets, random positions."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("FRUGALZERO_SHARED", ROOT.parent / "shared"))


def shared_file(relative: str) -> Path:
    """A file of ../shared, or a clean skip when this checkout has no ../shared beside it."""
    path = SHARED / relative
    if not path.is_file():
        pytest.skip(f"{path} not found (../shared is beside the project checkout only)")
    return path


@pytest.fixture(scope="session")
def tiny_net():
    import torch

    from frugalzero.nn.model import PolicyValueNet, architecture

    torch.manual_seed(0)
    return PolicyValueNet(architecture("tiny")).eval()
