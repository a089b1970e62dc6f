"""New weights for a runner whose compiled graph froze the old ones in (a CPU's, as self-play's
inference processes load every iteration's net): that runner is compiled again, alone. What
``runtime.device.compile_module`` relies on from torch.compile, pinned: inductor's
``freezing`` bakes the weights in (an in-place change is not seen), graphs are
kept per code object (a function of its own code gets graphs of its own), and so a reload
neither resets nor recompiles another runner's graphs, and never meets the recompile limit
(past it torch runs the net eager without a word)."""

from __future__ import annotations

import pytest
import torch

from frugalzero.nn.config import EvaluatorConfig, architecture
from frugalzero.nn.model import PolicyValueNet
from frugalzero.nn.runner import NetRunner

pytestmark = [
    pytest.mark.slow,  # each compile of the tiny net: 3-5 s
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # torch.compile imports torch.jit
]


def _net(seed: int) -> PolicyValueNet:
    torch.manual_seed(seed)
    return PolicyValueNet(architecture("tiny")).eval()


def _graphs() -> int:
    from torch._dynamo.utils import counters

    return counters["stats"]["unique_graphs"]


def _value(runner_or_net, planes: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        if isinstance(runner_or_net, NetRunner):
            return runner_or_net.forward(planes)[1]
        return runner_or_net(planes)[1]


def test_new_weights_compile_one_runner_again_and_leave_the_others(monkeypatch):
    config = EvaluatorConfig(device="cpu", backend="inline", precision="fp32", compile="on")
    first, second = _net(0), _net(1)
    a = NetRunner(first, config, threads=1, compile=True)
    b = NetRunner(second, config, threads=1, compile=True)
    assert a.compiled and a.frozen and b.compiled
    planes = torch.randn(8, 119, 8, 8)
    close = dict(atol=1e-5, rtol=1e-4)
    # frozen: an in-place change of the weights is not (all) seen by the compiled graph
    for runner, net in ((a, first), (b, second)):  # compiled for a batch of 8 too
        assert torch.allclose(_value(runner, planes), _value(net, planes), **close)
    newer = _net(2)
    a.net.load_state_dict(newer.state_dict())
    assert not torch.allclose(_value(a, planes), _value(newer, planes), **close)
    # a new net: this runner compiled again, the other's graph kept, not compiled again
    net = _net(3)
    before = _graphs()
    a.load_state_dict(net.state_dict())
    assert _graphs() > before
    assert torch.allclose(_value(a, planes), _value(net, planes), **close)
    before = _graphs()
    assert torch.allclose(_value(b, planes), _value(second, planes), **close)
    assert _graphs() == before, "the other runner's graph was dropped and compiled again"
    # more new nets, past a recompile limit of 2: each one compiled, and answered
    monkeypatch.setattr(torch._dynamo.config, "recompile_limit", 2)
    for seed in (4, 5):
        net = _net(seed)
        before = _graphs()
        a.load_state_dict(net.state_dict())
        assert _graphs() > before, "not compiled again: torch runs it eager"
        assert torch.allclose(_value(a, planes), _value(net, planes), **close)
    assert torch.allclose(_value(b, planes), _value(second, planes), **close)
