"""The precision the UCI engine plays under a clock (issue 71): int8 where it runs enough faster
than the float net on this machine, measured once (in a niced process of its own) and cached,
for the shipped nets only; ``Precision`` overrides it."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from frugalzero.nn import choice
from frugalzero.nn.checkpoint import save_net
from frugalzero.nn.shipped import resolve_net_path
from frugalzero.runtime.cores import available_cores
from frugalzero.uci.network import INT8_TIMING, EngineNetwork, NetSettings, network_layout
from frugalzero.uci.searcher import BATCH_SIZE


def test_the_rule_plays_int8_where_it_is_enough_faster():
    bar = choice.INT8_THRESHOLD
    assert bar == pytest.approx(2.0 ** (choice.INT8_EQUAL_NODES_ELO / choice.ELO_PER_DOUBLING))
    assert choice.pick_precision(1000.0 * bar, 1000.0, "bf16") == "int8"
    assert choice.pick_precision(1000.0 * bar - 1.0, 1000.0, "bf16") == "bf16"
    assert choice.pick_precision(500.0, 1000.0, "fp32") == "fp32"  # no VNNI: int8 emulated


def _entry(tmp_path, net: str, threads: int, int8: float, other: float) -> str:
    key = choice.precision_key(resolve_net_path(net), threads, BATCH_SIZE)
    path = tmp_path / choice.PRECISION_CACHE_FILE
    entries = json.loads(path.read_text()) if path.exists() else {}
    entries[key] = {"int8": int8, "float": other}
    path.write_text(json.dumps(entries))
    return key


def test_a_measurement_is_read_for_its_machine_net_and_layout_only(monkeypatch, tmp_path):
    monkeypatch.setenv("FRUGALZERO_CACHE", str(tmp_path))
    small = resolve_net_path("small")
    assert choice.cached_precision(small, 1, BATCH_SIZE) is None
    _entry(tmp_path, "small", 1, int8=1500.0, other=1000.0)
    got = choice.cached_precision(small, 1, BATCH_SIZE)
    assert got is not None and got.cached and got.ratio == pytest.approx(1.5)
    assert got.precision == ("int8" if 1.5 >= choice.INT8_THRESHOLD else got.float_precision)
    assert "1.50x" in got.describe() and "once" in got.describe()
    assert choice.cached_precision(small, 2, BATCH_SIZE) is None  # other threads
    assert choice.cached_precision(resolve_net_path("medium"), 1, BATCH_SIZE) is None
    cache = tmp_path / choice.PRECISION_CACHE_FILE
    cache.write_text('{"cut')  # a damaged cache is no measurement: timed again
    assert choice.cached_precision(small, 1, BATCH_SIZE) is None
    key = choice.precision_key(small, 1, BATCH_SIZE)
    cache.write_text(json.dumps({key: {"int8": "fast", "float": -1}}))
    assert choice.cached_precision(small, 1, BATCH_SIZE) is None


@pytest.fixture()
def session_cache():
    """The tests' own cache folder (conftest), where an int8 package built by another test
    is loaded, not compiled again; its precision figures removed after the test, so that no
    later engine of the session plays int8 by them."""
    folder = choice.cache_dir()
    figures = folder / choice.PRECISION_CACHE_FILE
    figures.unlink(missing_ok=True)
    yield folder
    figures.unlink(missing_ok=True)


def _threads() -> int:
    return network_layout(0, available_cores(), cpu=True)[1]


@pytest.mark.slow
def test_the_engine_reads_the_choice_and_a_user_net_stays_float(
    monkeypatch, tmp_path, tiny_net, session_cache
):
    monkeypatch.setenv(INT8_TIMING, "on")

    def never(*args):
        raise AssertionError("int8 timed although the cache holds this machine")

    monkeypatch.setattr(choice, "probe_precision", never)
    _entry(session_cache, "small", _threads(), int8=900.0, other=1000.0)  # int8 slower here
    network = EngineNetwork(NetSettings("small"), BATCH_SIZE)
    try:
        evaluator = network.settle()
        assert evaluator.config.precision != "int8"
        assert network.note is not None and "0.90x" in network.note
    finally:
        network.close()
    mine = tmp_path / "mine.safetensors"
    save_net(tiny_net, mine)
    network = EngineNetwork(NetSettings(str(mine)), BATCH_SIZE)  # a user's net: no timing
    try:
        assert network.settle().config.precision != "int8"
        assert network.note is None
    finally:
        network.close()


@pytest.mark.slow
def test_the_engine_times_int8_once_then_plays_it_where_it_is_faster(
    monkeypatch, session_cache, tmp_path
):
    """No measurement yet: the engine plays the float net at once, the niced process times
    int8 (a stand-in here, which writes what the real one would once it is let go), an option
    changed meanwhile is built without waiting for it, and the next search after the int8
    evaluator is built runs int8."""
    monkeypatch.setenv(INT8_TIMING, "on")
    threads = _threads()
    key = choice.precision_key(resolve_net_path("small"), threads, BATCH_SIZE)
    go = tmp_path / "go"
    timed = []

    def stand_in(path, probe_threads, batch):
        timed.append((path.name, probe_threads, batch))
        entries = {key: {"int8": 2000.0, "float": 1000.0}}
        target = session_cache / choice.PRECISION_CACHE_FILE
        script = (
            "import pathlib, time\n"
            f"while not pathlib.Path({str(go)!r}).exists(): time.sleep(0.05)\n"
            f"pathlib.Path({str(target)!r}).write_text({json.dumps(entries)!r})"
        )
        return subprocess.Popen(
            [sys.executable, "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    monkeypatch.setattr(choice, "probe_precision", stand_in)
    settings = NetSettings("small")
    network = EngineNetwork(settings, BATCH_SIZE)
    try:
        network.wait_ready()
        first = network.take()
        assert first.config.precision != "int8"  # ready before int8 exists here
        network.want(dataclasses.replace(settings, history_fill="no"))
        with network._lock:  # built while int8 is still being timed
            assert network._lock.wait_for(
                lambda: any("'no'" in e and e.startswith("built") for e in network.events), 60
            )
            assert network._prober is not None and network._prober.poll() is None
        go.touch()
        evaluator = network.settle()
        assert (evaluator.config.precision, evaluator.config.history_fill) == ("int8", "no")
        assert timed == [("small.safetensors", threads, BATCH_SIZE)]  # once
        assert any("precision int8: int8 runs 2.00x" in p for p in network.problems)
        assert network.note is not None and "int8 runs 2.00x" in network.note
    finally:
        go.touch()
        network.close()


@pytest.mark.slow
def test_the_niced_process_times_both_precisions_and_caches_them(session_cache):
    """The real timing process (``python -m frugalzero.nn.choice``): int8's package loaded (or
    built) in it, both precisions timed in turn, the figures cached, the choice printed."""
    small = resolve_net_path("small")
    process = choice.probe_precision(small, 1, BATCH_SIZE)
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err
    got = choice.cached_precision(small, 1, BATCH_SIZE)
    assert got is not None and got.int8_per_s > 0 and got.float_per_s > 0
    assert out.strip() == got.describe().replace("measured once on this machine", "measured now")
