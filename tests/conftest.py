"""Shared fixtures: paths to ../shared data, small nets, random positions."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("FRUGALZERO_SHARED", ROOT.parent / "shared"))


@pytest.fixture(scope="session", autouse=True)
def _own_cache(tmp_path_factory):
    """The tests' measurements (which shipped net the UCI engine plays here) go to a cache of
    their own, not the user's ~/.cache; the engines the tests start inherit it. No engine
    times int8 in the background (a compile of a core's minute for each shipped net) unless a
    test asks for it (``uci.network.INT8_TIMING``)."""
    from frugalzero.runtime.interpreter import environment
    from frugalzero.uci.network import INT8_TIMING

    cache = str(tmp_path_factory.mktemp("cache"))
    with environment({"FRUGALZERO_CACHE": cache, INT8_TIMING: "off"}):
        yield


def shared_file(relative: str) -> Path:
    """A file of ../shared, or a clean skip when this checkout has no ../shared beside it."""
    path = SHARED / relative
    if not path.is_file():
        pytest.skip(f"{path} not found (../shared is beside the project checkout only)")
    return path


def engine_binary(name: str) -> str:
    """An engine's binary as frugalzero finds it, or a clean skip where it is missing."""
    from frugalzero.errors import UserError
    from frugalzero.expert.engine import resolve_command

    try:
        return resolve_command(name)
    except UserError:
        pytest.skip(f"{name} is not installed (make test installs it)")


@pytest.fixture(scope="session")
def stockfish() -> str:
    """Stockfish's binary: every test that plays or labels with it asks for this fixture."""
    return engine_binary("stockfish")


@pytest.fixture(scope="session")
def fairy_stockfish() -> str:
    """Fairy-Stockfish's binary (a ladder rung)."""
    return engine_binary("fairy-stockfish")


@pytest.fixture(scope="session")
def tiny_net():
    import torch

    from frugalzero.nn.config import architecture
    from frugalzero.nn.model import PolicyValueNet

    torch.manual_seed(0)
    return PolicyValueNet(architecture("tiny")).eval()
