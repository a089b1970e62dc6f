"""The runtime package: atomic writes, cores, device and precision rules, weights sent to
another process, progress bars; and the inline evaluator leaving the caller's net alone."""

from __future__ import annotations

import io
import os
import stat
import subprocess
import sys
import warnings

import chess
import pytest
import torch

from frugalzero.errors import UserError
from frugalzero.nn.config import architecture
from frugalzero.nn.evaluator import Evaluator, EvaluatorConfig
from frugalzero.nn.model import PolicyValueNet
from frugalzero.runtime import device as rd
from frugalzero.runtime.cores import available_cores
from frugalzero.runtime.files import atomic_write_bytes, atomic_write_text
from frugalzero.runtime.interpreter import environment, own_code_env
from frugalzero.runtime.progress import progress_bar, stderr_console
from frugalzero.runtime.weights import arrays_to_state_dict, weights_to_arrays

# -- files ----------------------------------------------------------------------------------


def test_atomic_write_replaces_and_leaves_no_temp_file(tmp_path):
    path = tmp_path / "sub" / "a.json"
    assert atomic_write_text(path, "old ✓") == path  # creates the folder
    atomic_write_bytes(path, b"new")
    assert path.read_bytes() == b"new"
    assert os.listdir(path.parent) == ["a.json"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # readable by others, unlike mkstemp's
    atomic_write_text(path, "ünï")
    assert path.read_text(encoding="utf-8") == "ünï"


def test_failed_atomic_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "a.txt"
    atomic_write_text(path, "old")

    def crash(fd: int) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError, match="disk gone"):
        atomic_write_text(path, "new")
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["a.txt"]


def test_atomic_write_without_replace_never_overwrites(tmp_path):
    path = tmp_path / "shard"
    atomic_write_bytes(path, b"first", replace=False)
    with pytest.raises(FileExistsError):
        atomic_write_bytes(path, b"second", replace=False)
    assert path.read_bytes() == b"first" and os.listdir(tmp_path) == ["shard"]


def test_light_modules_do_not_import_torch():
    code = (
        "import sys\n"
        "import frugalzero.runtime.files, frugalzero.runtime.cores, frugalzero.runtime.progress\n"
        "import frugalzero.runtime.interpreter\n"
        "frugalzero.runtime.progress.progress_bar('x', 'count', enabled=False)\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    command = [sys.executable, "-c", code]
    result = subprocess.run(command, env=own_code_env(), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# -- interpreter ----------------------------------------------------------------------------


def test_an_environment_is_set_for_its_block_and_put_back_as_it_was(monkeypatch):
    monkeypatch.setenv("FZ_TEST_SET", "before")
    monkeypatch.delenv("FZ_TEST_UNSET", raising=False)
    with pytest.raises(RuntimeError):
        with environment({"FZ_TEST_SET": "in", "FZ_TEST_UNSET": "in"}):
            assert os.environ["FZ_TEST_SET"] == os.environ["FZ_TEST_UNSET"] == "in"
            raise RuntimeError  # put back on the way out of a failure too
    assert os.environ["FZ_TEST_SET"] == "before" and "FZ_TEST_UNSET" not in os.environ


# -- cores ----------------------------------------------------------------------------------


def test_available_cores_is_the_affinity_mask():
    expected = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    assert available_cores() >= 1
    assert expected is None or available_cores() == expected


# -- device ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "precision, kind, training, cpu_bf16, cuda_bf16, expected",
    [
        ("auto", "cpu", False, True, False, "bf16"),
        ("auto", "cpu", False, False, False, "fp32"),
        ("auto", "cpu", True, True, False, "bf16"),
        ("auto", "cpu", True, False, True, "fp32"),
        ("auto", "cuda", False, False, True, "fp16"),  # inference: fp16 on every GPU
        ("auto", "cuda", True, False, True, "bf16"),  # training: bf16 spares loss scaling
        ("auto", "cuda", True, True, False, "fp16"),
        ("fp32", "cuda", True, True, True, "fp32"),
        ("fp16", "cpu", False, True, True, "fp16"),
        ("bf16", "cpu", False, False, False, "bf16"),
    ],
)
def test_precision_table(monkeypatch, precision, kind, training, cpu_bf16, cuda_bf16, expected):
    monkeypatch.setattr(rd, "cpu_has_native_bf16", lambda: cpu_bf16)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: cuda_bf16)
    name, dtype = rd.resolve_precision(precision, torch.device(kind), training)
    assert name == expected and dtype == rd.DTYPES[expected]


def test_resolve_device():
    assert rd.resolve_device("cpu", "evaluator") == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert rd.resolve_device("auto", "evaluator").type == expected
    with pytest.raises(UserError, match=r"^train config: device 'gpu' is not a device$"):
        rd.resolve_device("gpu", "train config")
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="evaluator: device cuda asked for, but no CUDA"):
            rd.resolve_device("cuda:0", "evaluator")


def test_set_threads_only_on_the_cpu_and_only_when_asked():
    before = torch.get_num_threads()
    try:
        rd.set_threads(0, torch.device("cpu"))
        assert torch.get_num_threads() == before
        rd.set_threads(1, torch.device("cuda"))
        assert torch.get_num_threads() == before
        rd.set_threads(1, torch.device("cpu"))
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.compile imports torch.jit
@pytest.mark.slow
def test_compile_falls_back_to_eager(monkeypatch):
    module = torch.nn.Linear(2, 2)
    model, compiled = rd.compile_module(module, torch.device("cpu"), probe=_fail)
    assert model is module and not compiled  # compiler trouble costs speed only
    monkeypatch.setattr(rd.shutil, "which", lambda name: None)
    assert rd.compile_module(module, torch.device("cpu")) == (module, False)  # no C++ compiler


def _fail(model) -> None:
    raise RuntimeError("inductor says no")


def test_place_gives_the_layout_asked_for():
    net = rd.place(PolicyValueNet(architecture("tiny")), torch.device("cpu"), channels_last=True)
    conv = next(p for p in net.parameters() if p.dim() == 4)
    assert conv.is_contiguous(memory_format=torch.channels_last)


# -- weights --------------------------------------------------------------------------------


def test_weights_round_trip_is_exact():
    torch.manual_seed(3)
    net = PolicyValueNet(architecture("tiny", value_head="wdl"))
    net(torch.randn(4, 119, 8, 8))  # batch-norm statistics and counters move off their defaults
    arrays = weights_to_arrays(net)
    for array in arrays.values():
        array.flags.writeable = False  # as the object store hands them out
    other = PolicyValueNet(net.config)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch warns about read-only memory
        other.load_state_dict(arrays_to_state_dict(arrays))
    want, got = net.state_dict(), other.state_dict()
    assert want.keys() == got.keys()
    for key in want:
        assert want[key].dtype == got[key].dtype and torch.equal(want[key], got[key]), key


# -- the inline evaluator works on its own copy ---------------------------------------------


def test_inline_evaluator_leaves_the_callers_net_alone():
    torch.manual_seed(0)
    net = PolicyValueNet(architecture("tiny"))  # training mode, contiguous (NCHW) weights
    params = list(net.parameters())

    def snapshot() -> list:
        return [(p.device, p.dtype, p.stride(), p.data_ptr()) for p in params]

    before = snapshot()
    values = [t.clone() for t in net.state_dict().values()]
    with Evaluator(
        net, EvaluatorConfig(device="cpu", backend="inline")
    ) as ev:  # channels_last by default
        ev.evaluate([chess.Board()])
        ev.update_weights(PolicyValueNet(net.config))
        ev.evaluate([chess.Board()])
    now = list(net.parameters())
    assert len(now) == len(params) and all(a is b for a, b in zip(now, params))
    assert snapshot() == before and net.training
    assert all(torch.equal(a, b) for a, b in zip(values, net.state_dict().values()))


# -- progress -------------------------------------------------------------------------------


def _console() -> tuple:
    from rich.console import Console

    out = io.StringIO()
    return Console(file=out, width=100), out


def test_progress_bar_columns_and_final_line_off_a_terminal():
    console, out = _console()
    bar = progress_bar("games", "count", "{task.fields[n]} positions", "elapsed", console=console)
    names = [type(c).__name__ for c in bar.columns]
    assert names == [
        "TextColumn",
        "BarColumn",
        "MofNCompleteColumn",
        "TextColumn",
        "TimeElapsedColumn",
    ]
    with bar:
        task = bar.add_task("x", total=3, n=0)
        bar.update(task, completed=3, n=7)
    assert "games" in out.getvalue() and "3/3" in out.getvalue() and "7 positions" in out.getvalue()


@pytest.mark.parametrize("transient, enabled", [(True, True), (False, False)])
def test_transient_or_quiet_bars_leave_nothing(transient, enabled):
    console, out = _console()
    with progress_bar(
        "x", "bytes", "remaining", transient=transient, enabled=enabled, console=console
    ) as bar:
        bar.update(bar.add_task("x", total=10), completed=10)
    assert out.getvalue().strip() == ""


def test_off_a_terminal_unfinished_bars_print_a_line_as_often_as_asked(monkeypatch):
    """A background run's log: rich draws no live bar there, so without these lines a
    20-minute generation left its log silent until it ended."""
    from frugalzero.runtime import progress

    clock = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    console, out = _console()
    with progress_bar("gen", "count", transient=True, console=console, log_every=60) as bar:
        task = bar.add_task("x", total=64)
        bar.advance(task, 5)
        assert out.getvalue() == ""  # not a minute yet
        clock[0] += 61
        bar.advance(task, 5)
        assert "10/64" in out.getvalue() and "gen" in out.getvalue()
        clock[0] += 30
        bar.update(task, completed=20)
        assert "20/64" not in out.getvalue()  # at most one print a minute
        clock[0] += 31
        bar.update(task, completed=64)  # finished tasks are not printed
        done = bar.add_task("y", total=2, completed=1)
        clock[0] += 61
        bar.advance(done, 0)
    assert "64/64" not in out.getvalue() and "1/2" in out.getvalue()


def test_stderr_console_writes_to_stderr(capsys):
    stderr_console().print("note")
    captured = capsys.readouterr()
    assert captured.err == "note\n" and captured.out == ""
