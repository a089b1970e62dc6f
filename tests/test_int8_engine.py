"""The int8 net in the engine (issue 71): the ``Precision`` option and ``--precision`` flag, the
match spec key, the package cached per machine and per net (``nn.int8_cache``: built once,
then loaded; a damaged entry rebuilt, never loaded), and searches that really run int8, never
a silent fall back to bf16 or fp32."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import chess
import numpy as np
import pytest

from frugalzero.cli import main
from frugalzero.errors import UserError
from frugalzero.nn import int8_cache
from frugalzero.runtime.interpreter import own_code_env

ROOT = Path(__file__).resolve().parents[1]


# -- the cache, with a stand-in for the compiler and the loader -------------------------------


class _Builds:
    """A stand-in ``build`` (writes ``payload``) and ``load`` (returns what it read) that count
    their calls."""

    def __init__(self, payload: bytes = b"package") -> None:
        self.payload = payload
        self.built = 0
        self.loaded: list[bytes] = []

    def build(self, path: Path) -> None:
        self.built += 1
        path.write_bytes(self.payload)

    def load(self, path: Path):
        data = path.read_bytes()
        if data.startswith(b"refuse"):
            raise ValueError("refused")
        self.loaded.append(data)
        return data


@pytest.fixture()
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("FRUGALZERO_CACHE", str(tmp_path))
    return tmp_path / int8_cache.FOLDER


def test_a_package_is_built_once_then_loaded_from_the_cache(cache):
    builds = _Builds()
    assert int8_cache.cached_package("k1", builds.build, builds.load) == (b"package", True)
    assert int8_cache.cached_package("k1", builds.build, builds.load) == (b"package", False)
    assert builds.built == 1 and builds.loaded == [b"package", b"package"]
    record = json.loads((cache / "k1.json").read_text())
    assert record["sha256"] == hashlib.sha256(b"package").hexdigest()
    assert not list(cache.glob("build-*")) and not list(cache.glob(".*.tmp"))  # nothing left


@pytest.mark.parametrize(
    "damage",
    [
        lambda c: (c / "k1.pt2").write_bytes(b"packagf"),  # a byte changed
        lambda c: (c / "k1.pt2").write_bytes(b"pack"),  # torn
        lambda c: (c / "k1.pt2").unlink(),
        lambda c: (c / "k1.json").unlink(),  # died between the package and its record
        lambda c: (c / "k1.json").write_text("{not json"),
        lambda c: (c / "k1.json").write_text('["a list"]'),
    ],
)
def test_a_damaged_entry_is_rebuilt_never_loaded(cache, damage):
    builds = _Builds()
    int8_cache.cached_package("k1", builds.build, builds.load)
    damage(cache)
    assert int8_cache.cached_package("k1", builds.build, builds.load) == (b"package", True)
    assert builds.built == 2
    assert builds.loaded == [b"package", b"package"]  # the damaged bytes never reached load
    assert int8_cache.cached_package("k1", builds.build, builds.load)[1] is False


def test_a_package_the_loader_refuses_is_rebuilt(cache):
    cache.mkdir(parents=True)
    int8_cache._store(cache, "k1", b"refuse me")  # whole, its record matching, but refused
    builds = _Builds()
    assert int8_cache.cached_package("k1", builds.build, builds.load) == (b"package", True)
    assert builds.built == 1 and builds.loaded == [b"package"]


def test_an_unwritable_cache_builds_each_time_and_still_plays(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("FRUGALZERO_CACHE", str(blocked))
    builds = _Builds()
    for _ in range(2):
        assert int8_cache.cached_package("k1", builds.build, builds.load) == (b"package", True)
    assert builds.built == 2


def test_old_entries_are_pruned_to_the_newest(cache, monkeypatch):
    monkeypatch.setattr(int8_cache, "KEEP", 2)
    builds = _Builds()
    for key in ("a", "b", "c"):
        int8_cache.cached_package(key, builds.build, builds.load)
    int8_cache.cached_package("a", builds.build, builds.load)  # a used again: b is the oldest
    int8_cache.cached_package("d", builds.build, builds.load)
    assert sorted(p.stem for p in cache.glob("*.pt2")) == ["a", "d"]
    assert sorted(p.stem for p in cache.glob("*.json")) == ["a", "d"]


def test_the_key_follows_the_weights_the_calibration_torch_and_the_cpu(tiny_net, monkeypatch):
    import copy

    import torch

    recipe = {"asset": "x", "positions": 512, "batch": 128}
    key = int8_cache.package_key(tiny_net, recipe)
    assert int8_cache.package_key(copy.deepcopy(tiny_net), dict(recipe)) == key
    other = copy.deepcopy(tiny_net)
    with torch.no_grad():
        next(other.parameters()).view(-1)[0] += 1e-3
    assert int8_cache.package_key(other, recipe) != key
    assert int8_cache.package_key(tiny_net, {**recipe, "asset": "y"}) != key
    monkeypatch.setattr(torch, "__version__", "9.9.9")
    assert int8_cache.package_key(tiny_net, recipe) != key
    monkeypatch.undo()
    monkeypatch.setattr(int8_cache, "cpu_kind", lambda: "another CPU")
    assert int8_cache.package_key(tiny_net, recipe) != key


def test_the_key_follows_the_recipe(tiny_net):
    """Each part of how a net is quantized enters its package's key: the modules' modes, the
    observer, the calibration positions; the net's own recipe is ``MIXED`` for a ResNet."""
    from dataclasses import replace

    from frugalzero.nn.int8_backend import BF16, FLOAT
    from frugalzero.nn.quantize import MIXED, PLAIN, recipe_record

    key = int8_cache.package_key(tiny_net, recipe_record(tiny_net))
    assert int8_cache.package_key(tiny_net, recipe_record(tiny_net, MIXED)) == key
    others = [
        PLAIN,
        replace(MIXED, observer="histogram"),
        replace(MIXED, positions=2 * MIXED.positions),
        replace(MIXED, modules=(("stem", FLOAT), *MIXED.modules[1:])),
        replace(MIXED, modules=(*MIXED.modules, ("policy.2", BF16))),
    ]
    keys = {int8_cache.package_key(tiny_net, recipe_record(tiny_net, r)) for r in others}
    assert len(keys) == len(others) and key not in keys
    # a pattern that names no module of this net changes nothing: the modes are the key's
    unmatched = replace(MIXED, modules=(*MIXED.modules, ("body.*", FLOAT)))
    assert int8_cache.package_key(tiny_net, recipe_record(tiny_net, unmatched)) == key


def test_int8_without_torchao_and_no_package_is_one_line(tiny_net, cache, monkeypatch):
    import importlib.util

    from frugalzero.nn.quantize import int8_model

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "torchao" else find_spec(name, *a),
    )
    for compile in (True, False):
        with pytest.raises(UserError, match=r"needs torchao.*pip install torchao") as refused:
            int8_model(tiny_net, compile=compile)
        assert "\n" not in str(refused.value)


def test_torchao_is_a_dependency_since_auto_plays_int8_where_it_is_faster():
    from frugalzero.nn.config import EvaluatorConfig
    from frugalzero.uci.searcher import searcher_options

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert EvaluatorConfig().precision == "auto"
    assert [o.default for o in searcher_options(400) if o.name == "Precision"] == ["auto"]
    assert any(d.startswith("torchao") for d in project["dependencies"])
    assert project["optional-dependencies"]["int8"] == []  # the old extra still installs


# -- the option, the flag and the spec key ----------------------------------------------------


def test_the_precision_option_flag_and_spec_key():
    from frugalzero.evaluate.netplayer import net_configs
    from frugalzero.evaluate.specs import parse_spec
    from frugalzero.uci.searcher import EVALUATOR_OPTIONS, searcher_options

    (option,) = [o for o in searcher_options(400, precision="int8") if o.name == "Precision"]
    assert option.kind == "combo" and option.default == "int8"
    assert set(option.choices) == {"auto", "fp32", "bf16", "fp16", "int8"}
    assert EVALUATOR_OPTIONS["Precision"][0] == "precision"
    with pytest.raises(ValueError, match="one of"):
        option.check("int4")
    clocked = parse_spec("net:small?tc=10+0.1&precision=int8&history_fill=no")
    assert clocked.options == {"Precision": "int8", "HistoryFill": "no"}
    _, evaluator, _ = net_configs(parse_spec("net:small?nodes=50&precision=int8"), seats=2)
    assert evaluator.precision == "int8"


def test_an_unknown_precision_flag_is_refused_on_one_line(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("uci\nquit\n"))
    assert main(["uci", "--precision", "int4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--precision int4" in err[0] and "int8" in err[0], err


# -- the real package ------------------------------------------------------------------------


def _runner(net, precision: str, compile: bool):
    from frugalzero.nn.config import EvaluatorConfig
    from frugalzero.nn.runner import NetRunner

    config = EvaluatorConfig(
        device="cpu", backend="inline", precision=precision, compile="on" if compile else "off"
    )
    return NetRunner(net, config, threads=1, compile=compile)


def _answers(evaluate, inputs) -> tuple[np.ndarray, np.ndarray]:
    """(every legal move's prior, concatenated; the values) of ``inputs``."""
    priors, values = evaluate(inputs)
    return np.concatenate(priors), np.asarray(values)


def _runner_answers(runner, inputs):
    from frugalzero.nn.evaluator import pack_inputs

    priors, values, _ = runner.run(*pack_inputs(inputs))
    return [priors[k, : len(p.indices)] for k, p in enumerate(inputs)], values


def _assert_int8(got, inputs, net) -> None:
    """``got`` (priors, values) is the int8 net's: equal to the uncompiled int8 graph's (the
    same oneDNN int8 ops), and not what the net gives at fp32 or bf16."""
    want = _answers(lambda i: _runner_answers(_runner(net, "int8", False), i), inputs)
    for precision in ("fp32", "bf16"):
        other = _answers(lambda i, p=precision: _runner_answers(_runner(net, p, False), i), inputs)
        assert np.abs(got[1] - other[1]).max() > 1e-4, f"the answers are {precision}'s"
    assert np.abs(got[0] - want[0]).max() <= 1e-5 and np.abs(got[1] - want[1]).max() <= 1e-5


@pytest.mark.slow
def test_a_second_runner_loads_the_package_and_compiles_nothing(tiny_net, monkeypatch):
    """The second start's path: the package cached by the first is loaded, and nothing is
    quantized or compiled (counted, not timed); the answers are the int8 net's."""
    from frugalzero.nn import int8_backend
    from frugalzero.nn.calibration import calibration_positions

    first = _runner(tiny_net, "int8", compile=True)  # built, or cached by an earlier test
    assert first.int8_graph == "aoti" and first.compiled
    calls = []
    for name in ("quantize", "compile_package", "lower"):
        real = getattr(int8_backend, name)
        monkeypatch.setattr(
            int8_backend, name, lambda *a, _n=name, _r=real: calls.append(_n) or _r(*a)
        )
    second = _runner(tiny_net, "int8", compile=True)
    assert calls == [] and second.int8_cached and second.int8_graph == "aoti"
    assert set(second.timings) == {"load_s"}
    inputs = calibration_positions(limit=24, offset=0.75)
    _assert_int8(_answers(lambda i: _runner_answers(second, i), inputs), inputs, tiny_net)


@pytest.mark.slow
def test_a_corrupt_package_is_detected_and_rebuilt(tiny_net, monkeypatch):
    """The real package with one byte of its library changed: refused by its digest, rebuilt
    (the compiler stand-in writes the good bytes back, counted), and the net runs."""
    import torch

    from frugalzero.nn import int8_backend
    from frugalzero.nn.quantize import recipe_record

    _runner(tiny_net, "int8", compile=True)  # cached
    path = int8_cache.folder() / f"{int8_cache.package_key(tiny_net, recipe_record(tiny_net))}.pt2"
    good = path.read_bytes()
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 0xFF
    path.write_bytes(bytes(bad))
    built = []
    monkeypatch.setattr(
        int8_backend,
        "compile_package",
        lambda q, e, out: built.append(out) or out.write_bytes(good),
    )
    runner = _runner(tiny_net, "int8", compile=True)
    assert len(built) == 1 and not runner.int8_cached and runner.int8_graph == "aoti"
    assert path.read_bytes() == good
    assert runner.forward(torch.zeros(2, 119, 8, 8))[0].shape == (2, 4672)


@pytest.mark.slow
def test_setoption_precision_int8_searches_with_the_int8_package(tiny_net, tmp_path):
    """``setoption name Precision value int8``: the engine's evaluator (its inference
    processes) answers as the int8 net, not bf16 or fp32, and ``go`` plays a legal move."""
    from frugalzero.chess.history import GameHistory
    from frugalzero.nn.calibration import calibration_positions
    from frugalzero.nn.checkpoint import save_net
    from frugalzero.uci import NetSearcher, SearchRequest

    path = tmp_path / "tiny.safetensors"
    save_net(tiny_net, path)
    searcher = NetSearcher(str(path), default_nodes=16)
    try:
        assert searcher.settle().precision != "int8"
        searcher.set_option("Precision", "int8")
        evaluator = searcher.settle()
        assert evaluator.precision == "int8" and evaluator.compiled
        assert evaluator.backend == "process"  # the inference processes loaded the package
        inputs = calibration_positions(limit=24, offset=0.75)

        def evaluate(batch):
            answers = evaluator.evaluate(batch)
            return [a.priors for a in answers], [a.value for a in answers]

        evaluator.clear_cache()
        _assert_int8(_answers(evaluate, inputs), inputs, tiny_net)
        lines: list[str] = []
        request = SearchRequest(GameHistory(chess.Board()), 16, None, False, [])
        move, _ = searcher.search(request, threading.Event(), lines.append)
        assert move in chess.Board().legal_moves
    finally:
        searcher.close()


@pytest.mark.slow
def test_frugalzero_uci_precision_int8_lists_the_option_and_plays(tiny_net, tmp_path):
    from frugalzero.nn.checkpoint import save_net

    path = tmp_path / "tiny.safetensors"
    save_net(tiny_net, path)
    done = subprocess.run(
        [sys.executable, "-m", "frugalzero", "uci", "--net", str(path), "--precision", "int8"],
        input="uci\nisready\nposition startpos moves e2e4\ngo nodes 16\nquit\n",
        capture_output=True,
        text=True,
        timeout=600,
        env=own_code_env(),
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr[-2000:]
    assert "option name Precision type combo default int8" in " ".join(lines)
    assert "readyok" in lines
    (best,) = [line.split()[1] for line in lines if line.startswith("bestmove")]
    board = chess.Board()
    board.push_uci("e2e4")
    assert chess.Move.from_uci(best) in board.legal_moves


def test_bench_uci_takes_precisions_each_once():
    import argparse

    from frugalzero.bench import uci as bench

    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    assert parser.parse_args([]).precision == ["auto"]
    assert parser.parse_args(["--precision", "auto,int8"]).precision == ["auto", "int8"]
    for bad in ("auto,auto", "int4"):
        with pytest.raises(SystemExit):
            parser.parse_args(["--precision", bad])
