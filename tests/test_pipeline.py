"""`frugalzero run`: a whole tiny run, and a run killed with SIGKILL that resumes and keeps
every shard it had finished."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from frugalzero.runtime.interpreter import own_code_env

RUN = [sys.executable, "-m", "frugalzero", "run"]
# the smoke preset, made smaller still: each step takes seconds
SMALL = [
    "--set",
    "generate.games=8",
    "--set",
    "evaluation.games_vs_random=2",
    "--set",
    "evaluation.games_vs_best=0",
    "--set",
    "evaluation.final_games=2",
    "--set",
    "train.epochs=1",
    "--set",
    "train.swa_cycles=0",
]


def shard_digests(run_dir: Path) -> dict[str, str]:
    return {
        str(p.relative_to(run_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in (run_dir / "data").rglob("*.fzs")
        if not p.name.startswith(".")
    }


@pytest.mark.slow
def test_killed_run_resumes_and_keeps_every_finished_shard(tmp_path):
    run_dir = tmp_path / "run"
    cmd = RUN + ["--preset", "smoke", "--dir", str(run_dir), *SMALL]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=own_code_env(),
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not shard_digests(run_dir):
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.2)
    time.sleep(1.0)  # let it get further: more shards, maybe a step boundary
    os.killpg(proc.pid, signal.SIGKILL)  # the whole process group: workers too
    proc.wait()
    before = shard_digests(run_dir)
    assert before, "no shard was finished before the kill"

    resumed = subprocess.run(
        RUN + ["--dir", str(run_dir), "--json"],
        capture_output=True,
        text=True,
        timeout=900,
        env=own_code_env(),
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    summary = json.loads(resumed.stdout)
    after = shard_digests(run_dir)
    for name, digest in before.items():
        assert after.get(name) == digest, f"{name} lost or changed by the resume"
    assert summary["iterations"] == 2
    state = json.loads((run_dir / "state.json").read_text())
    assert state["finished"] and len(state["iterations"]) == 2
    for record in state["iterations"]:
        assert (run_dir / record["net"]).exists()
        assert record["games"] >= 8
    assert (run_dir / "elo.csv").read_text().count("\n") == 3
    assert (run_dir / "config.toml").exists() and (run_dir / "metrics.jsonl").exists()
