"""int8 inference on a CPU (``EvaluatorConfig(precision="int8")``, ``nn.quantize``): the shipped
calibration positions, the quantized net's agreement with fp32, its outputs shaped as every
other precision's, the refusal on CUDA, and an int8 evaluator playing self-play."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from frugalzero.errors import UserError
from frugalzero.nn.calibration import POSITIONS, calibration_positions, read_games
from frugalzero.nn.config import EvaluatorConfig, architecture
from frugalzero.nn.evaluator import Evaluator, NetRunner, pack_inputs
from frugalzero.nn.model import PolicyValueNet
from frugalzero.runtime.device import cpu_has_native_bf16, resolve_precision

# measured 2026-11-29 on the 2-core EPYC (shipped small, 256 held-out positions): see the report
TOP1_FLOOR = 0.92
VALUE_MAE_CEILING = 0.025
INLINE_INT8 = EvaluatorConfig(device="cpu", backend="inline", precision="int8", compile="off")


def _run(runner: NetRunner, inputs):
    return runner.run(*pack_inputs(inputs))


def test_int8_on_cuda_is_refused_in_one_line() -> None:
    with pytest.raises(UserError) as refused:
        EvaluatorConfig(device="cuda", precision="int8")
    line = str(refused.value)
    assert "\n" not in line and line.startswith("evaluator:") and "int8" in line
    assert "CPU only" in line
    with pytest.raises(UserError) as refused:  # device 'auto' that turns out to be CUDA
        resolve_precision("int8", torch.device("cuda"))
    assert str(refused.value) == "evaluator: precision 'int8' runs on a CPU only, not on cuda"
    with pytest.raises(UserError):
        resolve_precision("int8", torch.device("cpu"), training=True)
    assert resolve_precision("int8", torch.device("cpu")) == ("int8", torch.int8)


def test_auto_is_what_it_was() -> None:
    auto = resolve_precision("auto", torch.device("cpu"))
    assert auto[0] == ("bf16" if cpu_has_native_bf16() else "fp32")
    assert EvaluatorConfig().precision == "auto"


def test_calibration_positions_are_real_fixed_and_keep_their_history() -> None:
    games = read_games()
    assert len(games) * 4 >= POSITIONS
    positions = calibration_positions()
    assert len(positions) == POSITIONS
    assert len({p.key for p in positions}) > 0.95 * POSITIONS  # distinct positions
    assert [p.key for p in calibration_positions()] == [p.key for p in positions]  # fixed
    # real games' positions, most with the full 8 frames of history
    empty = bytes(len(positions[0].frames) // 8)
    full = sum(p.frames[-len(empty) :] != empty for p in positions)
    assert full > 0.7 * POSITIONS
    assert all(len(p.moves) > 0 for p in positions)
    # other positions of the same games (the held-out set of the agreement test)
    held = calibration_positions(limit=64, offset=0.75)
    assert not {p.key for p in held} & {p.key for p in positions}


@pytest.mark.slow
def test_int8_outputs_are_shaped_as_fp32s_and_the_value_derived_alike(tiny_net) -> None:
    """Same shapes and dtypes as the fp32 runner's, for a scalar and a WDL head; the int8
    graph runs any batch size; WDL values come from the WDL as every precision's do."""
    from frugalzero.values import wdl_to_value

    inputs = calibration_positions(limit=9, offset=0.75)
    torch.manual_seed(1)
    wdl_net = PolicyValueNet(architecture("tiny", value_head="wdl")).eval()
    fp32 = EvaluatorConfig(device="cpu", backend="inline", precision="fp32", compile="off")
    for net in (tiny_net, wdl_net):
        runner = NetRunner(net, INLINE_INT8, threads=1)
        assert runner.precision == "int8" and not runner.compiled
        assert runner.int8_graph == "lowered"  # oneDNN's int8 ops, uncompiled
        assert runner.timings["quantize_s"] > 0
        reference = NetRunner(net, fp32, threads=1)
        for batch in (inputs[:1], inputs):
            got, want = _run(runner, batch), _run(reference, batch)
            for a, b in zip(got, want):
                assert (a is None) == (b is None)
                if a is not None:
                    assert a.shape == b.shape and a.dtype == b.dtype
        priors, values, wdl = _run(runner, inputs)
        assert np.allclose(priors.sum(axis=1), 1.0, atol=1e-5)
        assert np.all(np.abs(values) <= 1.0)
        if net is wdl_net:
            expected = wdl_to_value(torch.from_numpy(wdl[:, 0]), torch.from_numpy(wdl[:, 2]))
            assert np.allclose(values, expected.numpy(), atol=1e-6)
        logits, value = runner.forward(torch.zeros(3, 119, 8, 8))
        assert logits.shape == (3, 4672) and logits.dtype == torch.float32
        assert value.shape == (3, 3 if net is wdl_net else 1)


@pytest.mark.slow
def test_new_weights_are_quantized_again(tiny_net) -> None:
    inputs = calibration_positions(limit=16, offset=0.75)
    runner = NetRunner(tiny_net, INLINE_INT8, threads=1)
    before = _run(runner, inputs)[1]
    torch.manual_seed(5)
    other = PolicyValueNet(architecture("tiny")).eval()
    runner.load_state_dict(other.state_dict())
    fresh = NetRunner(other, INLINE_INT8, threads=1)
    assert np.array_equal(_run(runner, inputs)[1], _run(fresh, inputs)[1])
    assert not np.array_equal(_run(runner, inputs)[1], before)


@pytest.mark.slow
def test_int8_small_agrees_with_fp32_on_real_positions() -> None:
    """The shipped ``small`` net, quantized and compiled as the evaluator runs it, against fp32
    on 256 held-out positions of the calibration games (other plies than calibration's):
    top-1 over the legal moves and the value. Measured 2026-11-29: see the thresholds."""
    from frugalzero.nn.checkpoint import load_net
    from frugalzero.nn.shipped import resolve_net_path

    net, _ = load_net(resolve_net_path("small"))
    inputs = calibration_positions(limit=256, offset=0.75)
    config = EvaluatorConfig(device="cpu", precision="int8", compile="on")
    int8 = NetRunner(net, config, threads=2, compile=True)
    assert int8.compiled and int8.int8_graph == "aoti", "AOTInductor could not compile it"
    fp32 = NetRunner(net, EvaluatorConfig(device="cpu", precision="fp32"), threads=2)
    priors, values, _ = _run(int8, inputs)
    want_priors, want_values, _ = _run(fp32, inputs)
    top1 = np.mean(
        [
            np.argmax(priors[k, : len(p.indices)]) == np.argmax(want_priors[k, : len(p.indices)])
            for k, p in enumerate(inputs)
        ]
    )
    mae = float(np.mean(np.abs(values - want_values)))
    assert top1 >= TOP1_FLOOR, top1
    assert mae <= VALUE_MAE_CEILING, mae
    # any batch size, one row at a time as in a batch: activation scales are fixed
    single = _run(int8, inputs[:1])[1]
    assert single[0] == pytest.approx(values[0], abs=1e-4)
    odd = _run(int8, inputs[:5])[1]
    assert odd == pytest.approx(values[:5], abs=1e-4)


@pytest.mark.slow
def test_the_shipped_small_nets_int8_error_is_near_katagos_gates() -> None:
    """Issue 71's recipe (``nn.quantize.MIXED``) on the shipped ``small``, lowered (the UCI
    engine's int8), against fp32 on the first 300 held-out positions: KataGo's statistics
    (``bench nn --compare``). Measured 2026-11-29 on the 2-core EPYC: winrate error p99 / max
    1.57 / 1.85 points, top policy delta 3.11 / 4.43; every layer int8 (``PLAIN``, before) gave
    4.66 / 5.99 and 9.09 / 19.2 against bf16 on the same positions. The limits leave room for
    another CPU's kernels: about 1.5x the figures at the 99th percentile, KataGo's own gates
    for the maxima."""
    from pathlib import Path

    from frugalzero.bench import nn as bench

    heldout = Path(__file__).resolve().parents[1] / bench.HELDOUT
    argv = ["--net", "small", "--compare", "int8", "--precision", "fp32", "--compile", "off"]
    argv += ["--positions", str(heldout), "--limit", "300", "--device", "cpu"]
    result = _bench(bench, *argv)
    assert result["int8_graph"] == "lowered" and result["positions"] == 300
    winrate, policy = result["winrate_error"], result["top_policy_delta"]
    assert winrate["p99"] <= 2.5 and winrate["max"] <= 5.0, winrate
    assert policy["p99"] <= 4.5 and policy["max"] <= 6.0, policy


@pytest.mark.slow
def test_an_int8_evaluator_plays_selfplay_games_end_to_end(tiny_net) -> None:
    """Through an inference process, as self-play runs it: the net quantized there."""
    from frugalzero.search import SearchConfig
    from frugalzero.selfplay.config import SelfPlayConfig
    from frugalzero.selfplay.game import game_starts
    from frugalzero.selfplay.play import play_games

    config = SelfPlayConfig(
        games=2, concurrent=2, max_plies=16, search=SearchConfig(simulations=8), seed=2
    )
    records = []
    evaluator_config = EvaluatorConfig(
        device="cpu", backend="process", precision="int8", compile="off", threads=1
    )
    with Evaluator(tiny_net, evaluator_config) as evaluator:
        assert evaluator.precision == "int8"
        play_games(evaluator, game_starts(config), config, records.append, "int8")
        stats = evaluator.server_stats()
    assert len(records) == 2 and all(len(r.moves) > 0 for r in records)
    assert stats["positions"] > 0


def _bench(module, *argv: str) -> dict:
    import argparse

    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    return module.run(parser.parse_args(list(argv)))


@pytest.mark.slow
def test_bench_nn_times_int8_beside_the_default_precision_with_both_peaks() -> None:
    from frugalzero.bench import nn as bench

    argv = ["--arch", "tiny", "--batch", "16", "--rounds", "1", "--device", "cpu"]
    result = _bench(bench, *argv, "--compile", "off", "--precision", "int8", "--plain-int8")
    assert result["precision"] == "int8" and result["reference_precision"] in ("bf16", "fp32")
    # every layer int8 (the recipe before issue 71's) timed in the same round
    plain = result["net_positions_per_s"] / result["plain_int8_positions_per_s"]
    assert result["over_plain_int8"] == pytest.approx(plain, rel=0.01)
    for key in ("net_positions_per_s", "reference_net_positions_per_s", "matmul_gflops"):
        assert result[key] > 0
    assert result["reference_matmul_gflops"] > 0 and result["fraction_of_peak"] > 0
    ratio = result["net_positions_per_s"] / result["reference_net_positions_per_s"]
    assert result["over_reference"] == pytest.approx(ratio, rel=0.01)  # one round
    assert result["int8_quantize_s"] > 0 and "int8_lower_s" in result


@pytest.mark.slow
def test_bench_selfplay_measures_several_precisions_in_one_run() -> None:
    from frugalzero.bench import selfplay as bench

    argv = ["--arch", "tiny", "--games", "8", "--sims", "8", "--rounds", "1", "--seconds", "0.5"]
    argv += ["--device", "cpu", "--backend", "inline", "--compile", "off", "--precision"]
    with pytest.raises(UserError, match="twice"):
        _bench(bench, *argv, "fp32,int8,fp32")
    argv.append("fp32,int8")
    result = _bench(bench, *argv)
    fp32, int8 = result["precisions"]["fp32"], result["precisions"]["int8"]
    assert fp32["precision"] == "fp32" and int8["precision"] == "int8"
    for figures in (fp32, int8):
        assert figures["simulations_per_s"] > 0 and figures["net_positions_per_s"] > 0
    ratio = int8["simulations_per_s"] / fp32["simulations_per_s"]
    assert result["int8_over_fp32"] == pytest.approx(ratio, rel=0.01)  # one round
