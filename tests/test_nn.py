"""Network shapes, the evaluator's priors and values, and both backends agreeing."""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from pathlib import Path

import chess
import numpy as np
import pytest
import torch

from frugalzero.chess.history import GameHistory, net_input_from_board
from frugalzero.chess.moves import NUM_MOVES
from frugalzero.chess.positions import random_boards
from frugalzero.nn.config import ARCHITECTURES, architecture
from frugalzero.nn.evaluator import Evaluator, EvaluatorConfig
from frugalzero.nn.model import PolicyValueNet
from frugalzero.runtime.interpreter import own_code_env

INLINE = EvaluatorConfig(device="cpu", backend="inline", precision="fp32", compile="off")


@pytest.mark.parametrize("name", ["tiny", "small", "attention"])
def test_output_shapes(name):
    net = PolicyValueNet(architecture(name)).eval()
    policy, value = net(torch.zeros(3, 119, 8, 8))
    assert policy.shape == (3, NUM_MOVES) and value.shape == (3, 1)
    assert value.abs().max() <= 1


def test_named_sizes():
    assert (ARCHITECTURES["tiny"].blocks, ARCHITECTURES["tiny"].filters) == (4, 32)
    assert (ARCHITECTURES["small"].blocks, ARCHITECTURES["small"].filters) == (6, 64)
    assert (ARCHITECTURES["medium"].blocks, ARCHITECTURES["medium"].filters) == (10, 128)
    assert (ARCHITECTURES["alphazero"].blocks, ARCHITECTURES["alphazero"].filters) == (19, 256)
    big = PolicyValueNet(architecture("alphazero"))
    assert 20e6 < sum(p.numel() for p in big.parameters()) < 30e6  # the paper's order of size


def test_flop_count_matches_the_layers():
    config = architecture("small", se_ratio=4)
    net = PolicyValueNet(config)
    counted = 0
    for m in net.modules():
        if isinstance(m, torch.nn.Conv2d):
            counted += 2 * m.in_channels * m.out_channels * m.kernel_size[0] * m.kernel_size[1] * 64
        elif isinstance(m, torch.nn.Linear):
            counted += 2 * m.in_features * m.out_features
    assert config.flops_per_position() == counted


def test_attention_flop_count_matches_the_layers():
    config = architecture("attention", blocks=3, filters=48, heads=6, value_head="wdl")
    net = PolicyValueNet(config)
    once = {id(m) for m in net.value[3:]}  # after the value head's flatten: once a position
    counted = sum(
        2 * m.in_features * m.out_features * (1 if id(m) in once else 64)
        for m in net.modules()
        if isinstance(m, torch.nn.Linear)
    )  # every other linear layer acts on each of the 64 tokens
    counted += config.blocks * 2 * 2 * 64 * 64 * config.filters  # scores, weighted values
    assert config.value_channels == 32 and config.flops_per_position() == counted


def test_attention_tokens_are_the_policys_from_squares():
    """With the layers made identities, a square's planes move only the logits of the moves
    from that square: token i is square i in the index plane * 64 + from-square."""
    config = architecture("attention", blocks=2, filters=16, heads=4)
    net = PolicyValueNet(config).eval()
    with torch.no_grad():
        for p in net.parameters():
            p.zero_()
        for layer in net.body.layers:  # LayerNorm weights to 1: zero weights elsewhere
            layer.norm1.weight.fill_(1)
            layer.norm2.weight.fill_(1)
        net.body.norm.weight.fill_(1)
        net.body.embed.weight[0, 5] = 1.0  # feature 0 = input plane 5
        net.policy.weight[:, 0] = 1.0
    for square in (0, 12, 63):
        planes = torch.zeros(1, 119, 8, 8)
        planes.view(1, 119, 64)[0, 5, square] = 1.0
        policy, _ = net(planes)
        by_square = policy.view(73, 64)
        assert (by_square.argmax(dim=1) == square).all()


def test_bad_shapes_are_one_line_errors():
    from frugalzero.errors import UserError

    with pytest.raises(UserError, match="multiple of heads"):
        architecture("attention", filters=100, heads=8)


def test_priors_sum_to_one_over_legal_moves_and_zero_elsewhere(tiny_net):
    boards = random_boards(40, seed=4)
    with Evaluator(tiny_net, INLINE) as ev:
        for board, result in zip(boards, ev.evaluate(boards)):
            inp = net_input_from_board(board)
            assert result.priors.shape == (board.legal_moves.count(),)
            assert abs(result.priors.sum() - 1) < 1e-5 and (result.priors >= 0).all()
            dense = np.zeros(NUM_MOVES)
            dense[inp.indices] = result.priors
            illegal = np.ones(NUM_MOVES, bool)
            illegal[inp.indices] = False
            assert dense[illegal].sum() == 0
            assert -1 <= result.value <= 1


def test_priors_are_the_softmax_of_legal_logits(tiny_net):
    board = random_boards(1, seed=9)[0]
    inp = net_input_from_board(board)
    with Evaluator(tiny_net, INLINE) as ev:
        result = ev.evaluate([board])[0]
        planes = torch.from_numpy(
            __import__("frugalzero").chess.encode(
                np.frombuffer(inp.frames, "<u8").reshape(1, 8, 13),
                np.array([inp.meta]),
                tiny_net.config.history_fill,
            )
        )
        logits, value = tiny_net(planes)
    expected = torch.softmax(logits[0, torch.from_numpy(inp.indices)], 0).detach().numpy()
    np.testing.assert_allclose(result.priors, expected, rtol=1e-5, atol=1e-6)
    assert result.value == pytest.approx(value.item(), abs=1e-6)


def test_wdl_head_gives_probabilities():
    net = PolicyValueNet(architecture("tiny", value_head="wdl")).eval()
    with Evaluator(net, INLINE) as ev:
        result = ev.evaluate([chess.Board()])[0]
    assert result.wdl is not None and abs(result.wdl.sum() - 1) < 1e-5
    assert result.value == pytest.approx(result.wdl[0] - result.wdl[2], abs=1e-6)


def test_terminal_position_has_no_priors(tiny_net):
    mate = chess.Board("7k/6Q1/6K1/8/8/8/8/8 b - - 0 1")
    assert mate.is_checkmate()
    with Evaluator(tiny_net, INLINE) as ev:
        result = ev.evaluate([mate, chess.Board()])
    assert result[0].priors.shape == (0,) and abs(result[1].priors.sum() - 1) < 1e-5


def test_cache_is_keyed_by_history_too(tiny_net):
    direct = GameHistory()
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8"]:  # back at the start, with a history
        direct.push(chess.Move.from_uci(uci))
    with Evaluator(tiny_net, INLINE) as ev:
        first = ev.evaluate([chess.Board()])[0]
        again = ev.evaluate([chess.Board()])[0]
        assert ev.hits == 1 and again is first
        other = ev.evaluate([direct.net_input()])[0]
        assert ev.misses == 2  # same board, other history: other planes, other entry
        assert other.value != first.value


@pytest.mark.slow
def test_process_backend_agrees_with_inline(tiny_net):
    boards = random_boards(300, seed=12)
    config = EvaluatorConfig(
        device="cpu", backend="process", precision="fp32", compile="off", cache_size=0
    )
    with Evaluator(tiny_net, INLINE) as inline, Evaluator(tiny_net, config) as proc:
        expected = inline.evaluate(boards)
        pendings = [proc.submit(boards[i : i + 64]) for i in range(0, 300, 64)]  # > 4 slots
        got = [r for p in pendings for r in p.result()]
        stats = proc.server_stats()
    assert stats["positions"] == 300
    for a, b in zip(expected, got):
        np.testing.assert_allclose(a.priors, b.priors, rtol=1e-4, atol=1e-6)
        assert a.value == pytest.approx(b.value, abs=1e-5)


def test_update_weights_changes_answers_and_clears_cache(tiny_net):
    other = PolicyValueNet(tiny_net.config).eval()
    with Evaluator(tiny_net, INLINE) as ev:
        before = ev.evaluate([chess.Board()])[0].value
        ev.update_weights(other)
        after = ev.evaluate([chess.Board()])[0].value
    assert before != after


@pytest.mark.slow
def test_dead_inference_process_is_an_error_not_a_hang(tiny_net):
    config = EvaluatorConfig(device="cpu", backend="process", precision="fp32", compile="off")
    ev = Evaluator(tiny_net, config)
    try:
        (pid,) = ev.server_pids()
        os.kill(pid, signal.SIGKILL)
        status = Path(f"/proc/{pid}/status")
        deadline = time.monotonic() + 10
        while "zombie" not in status.read_text() and time.monotonic() < deadline:
            time.sleep(0.01)  # dead once the kernel has reaped its pipes
        with pytest.raises(RuntimeError, match="inference process died"):
            ev.evaluate(random_boards(8, seed=1))
    finally:
        ev.close()


@pytest.mark.slow
def test_unguarded_script_gets_a_clear_error(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "unguarded.py"
    script.write_text(
        "from frugalzero.nn.evaluator import Evaluator, EvaluatorConfig\n"
        "from frugalzero.nn.config import architecture\n"
        "from frugalzero.nn.model import PolicyValueNet\n"
        "Evaluator(PolicyValueNet(architecture('small')), EvaluatorConfig(compile='off'))\n"
    )
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env=own_code_env(),
    )
    assert result.returncode != 0
    assert "guard its entry point" in result.stderr


@pytest.mark.slow
def test_two_inference_processes_share_the_batches_and_agree_with_one(tiny_net):
    """Batches go to the servers in turn (a server runs the batches waiting for it as one); the
    answers are the same as one server's."""
    boards = random_boards(48, seed=5)
    config = EvaluatorConfig(
        device="cpu", backend="process", precision="fp32", compile="off", cache_size=0
    )
    with Evaluator(tiny_net, config) as one:
        expected = [one.evaluate(boards[i : i + 8]) for i in range(0, 48, 8)]
    two_config = dataclasses.replace(config, servers=2, threads=1)
    with Evaluator(tiny_net, two_config) as two:
        pending = [two.submit(boards[i : i + 8]) for i in range(0, 48, 8)]  # all in flight
        got = [p.result() for p in reversed(pending)][::-1]  # collected out of order
        stats = two.server_stats()
    assert stats["servers"] == 2 and stats["requests"] == 6 and stats["positions"] == 48
    assert 2 <= stats["batches"] <= 6
    for want, have in zip(expected, got):
        for a, b in zip(want, have):
            np.testing.assert_allclose(a.priors, b.priors, rtol=1e-5, atol=1e-6)
            assert a.value == pytest.approx(b.value, abs=1e-5)


@pytest.mark.slow
def test_threads_change_in_the_running_inference_processes(tiny_net):
    config = EvaluatorConfig(
        device="cpu", backend="process", precision="fp32", compile="off", threads=2, servers=2
    )
    with Evaluator(tiny_net, config) as ev:
        assert ev.server_stats()["threads"] == 4  # summed over the two processes
        ev.submit([chess.Board()])  # a batch in flight is answered before the change
        ev.set_threads(1)
        assert ev.threads == 1 and ev.server_stats()["threads"] == 2
        assert len(ev.evaluate(random_boards(8, seed=5))) == 8


def test_the_cache_resizes_and_reports_how_full_it_is(tiny_net):
    config = EvaluatorConfig(
        device="cpu", backend="inline", precision="fp32", compile="off", cache_size=100
    )
    with Evaluator(tiny_net, config) as ev:
        ev.evaluate(random_boards(30, seed=6))
        assert ev.cache_permille == 300
        ev.resize_cache(10)  # the least recently used go
        assert ev.cache_permille == 1000 and ev.config.cache_size == 10
        ev.resize_cache(0)
        assert ev.cache_permille is None
        ev.evaluate([chess.Board()])
        assert ev.hits == 0
        ev.resize_cache(50)
        ev.evaluate([chess.Board()])
        ev.evaluate([chess.Board()])
        assert ev.cache_permille == 20 and ev.hits == 1


@pytest.mark.slow
def test_clients_of_one_inference_process_get_their_own_answers(tiny_net):
    """Two callers' batches, in flight together, go through one process (run as one when they
    wait together) and each caller gets the answers to its own positions; new weights from the
    owner reach every client; a client leaving does not stop the process."""
    from frugalzero.nn.server import InferenceServer

    boards = random_boards(40, seed=9)
    config = EvaluatorConfig(
        device="cpu", backend="inline", precision="fp32", compile="off", cache_size=0
    )
    with Evaluator(tiny_net, config) as inline:
        want = inline.evaluate(boards)
    server = InferenceServer(tiny_net, config, threads=1, clients=2)
    try:
        first, second = (Evaluator.connect(c, config) for c in server.clients)
        assert first.server_pids() == [server.pid] and first.head == tiny_net.config.value_head
        pending = [
            (i, (first, second)[(i // 5) % 2].submit(boards[i : i + 5])) for i in range(0, 40, 5)
        ]
        got = {i: p.result() for i, p in reversed(pending)}
        for i in range(0, 40, 5):
            for a, b in zip(want[i : i + 5], got[i], strict=True):
                np.testing.assert_allclose(a.priors, b.priors, rtol=1e-5, atol=1e-6)
                assert a.value == pytest.approx(b.value, abs=1e-5)
        stats = server.owner.stats()
        assert stats["requests"] == 8 and stats["positions"] == 40 and stats["batches"] <= 8
        first.close()
        changed = PolicyValueNet(tiny_net.config)
        server.owner.load_weights(changed)
        with Evaluator(changed, config) as reference:
            new = reference.evaluate(boards[:1])[0].value
        assert new != pytest.approx(want[0].value, abs=1e-4)
        assert second.evaluate(boards[:1])[0].value == pytest.approx(new, abs=1e-5)
        second.close()
    finally:
        server.close()
    assert not server.alive


def test_an_inference_process_whose_owner_died_before_the_weights_ends_quietly(tiny_net, capfd):
    """A match killed while its inference process starts: the process finds the owner's end
    closed and returns, with no traceback in the log the match shared with it."""
    import multiprocessing as mp
    from dataclasses import asdict

    from frugalzero.nn.server import _serve

    owner, child = mp.Pipe()
    owner.close()
    config = EvaluatorConfig(device="cpu", backend="process", precision="fp32", compile="off")
    _serve([child], asdict(config), asdict(tiny_net.config), 1, [])
    assert "Traceback" not in capfd.readouterr().err
