"""Commands that run no network answer at once: they never import torch.

Each test starts the real console script (``.venv/bin/frugalzero``, what a user types) with a
``sitecustomize`` on PYTHONPATH that watches imports: it reports when the main thread imports
torch, and at exit whether torch is in ``sys.modules``. Importing ``frugalzero.uci`` alone would
not do: the command first builds the parser of every subcommand.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from frugalzero.runtime.interpreter import own_code_env

SCRIPT = Path(sys.executable).with_name("frugalzero")
MAIN_THREAD = "probe: the main thread imported torch"
AT_EXIT = "probe: torch in sys.modules at exit:"

PROBE = f"""
import atexit, os, sys, threading

class _Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" and threading.current_thread() is threading.main_thread():
            sys.stderr.write({MAIN_THREAD!r} + "\\n")
        return None

if os.environ.pop("FRUGALZERO_PROBE", None):  # the command's process, not its children
    sys.meta_path.insert(0, _Watch())
    atexit.register(lambda: sys.stderr.write({AT_EXIT!r} + f" {{'torch' in sys.modules}}\\n"))
"""


@pytest.fixture(scope="module")
def probed_env(tmp_path_factory) -> dict[str, str]:
    assert SCRIPT.is_file(), f"{SCRIPT} missing: the package is not installed in this venv"
    folder = tmp_path_factory.mktemp("probe")
    (folder / "sitecustomize.py").write_text(PROBE)
    env = own_code_env()
    env["PYTHONPATH"] = os.pathsep.join([str(folder), env["PYTHONPATH"]])
    env["FRUGALZERO_PROBE"] = "1"
    return env


def run(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SCRIPT), *args], input=stdin, capture_output=True, text=True, env=env, timeout=300
    )


@pytest.mark.slow
def test_the_probe_sees_torch_when_it_is_imported(probed_env):
    """The check itself: a command that loads a net shows both marks."""
    result = run(probed_env, "net", "info", "small")
    assert result.returncode == 0, result.stderr
    assert MAIN_THREAD in result.stderr
    assert f"{AT_EXIT} True" in result.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--help"], "COMMAND"),
        (["config", "show", "demo"], 'method = "sfgames"'),
        (["run", "--help"], "--preset"),
        (["bench", "nn", "--help"], "--arch"),
    ],
)
def test_commands_that_run_no_net_never_import_torch(probed_env, args, expected):
    result = run(probed_env, *args)
    assert result.returncode == 0, result.stderr
    assert expected in result.stdout
    assert MAIN_THREAD not in result.stderr
    assert f"{AT_EXIT} False" in result.stderr


@pytest.mark.slow
def test_uci_answers_with_torch_left_to_the_network_loader(probed_env):
    """``uci`` answers ``uciok`` from a main thread that never imports torch; the network (and
    torch with it) loads on the searcher's own thread, and ``isready`` waits for it."""
    result = run(probed_env, "uci", stdin="uci\nisready\nquit\n")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines.index("uciok") < lines.index("readyok")
    assert MAIN_THREAD not in result.stderr
    assert f"{AT_EXIT} True" in result.stderr  # the loader thread did import it
