"""Generation on a multi-node Ray cluster: ``frugalzero run`` joins a local cluster of 3 Ray
nodes (``raycluster.ray_cluster``) as a user's run joins ``ray start --head``, and its games
are played on more than one node.

Skipped cleanly without the ``ray`` extra; ``make test`` installs it, so CI runs them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytestmark = pytest.mark.slow  # a Ray cluster, its workers and whole runs

import raycluster  # noqa: E402
from experimentspecs import SMALL, spec_file  # noqa: E402
from frugalzero.runtime.interpreter import own_code_env  # noqa: E402
from raycluster import NODES, actor_nodes, node_ids  # noqa: E402

ray_cluster = raycluster.ray_cluster  # the fixture: a head and 2 worker nodes

GAMES = 6  # 3 workers (one per node's CPU), chunks of 2 (concurrent): every worker plays
# one iteration of short games on the tiny net, its training, and no evaluation games
RUN = [
    *("--preset", "smoke"),
    *("--set", "budget.iterations=1"),
    *("--set", f"generate.games={GAMES}"),
    *("--set", "selfplay.search.simulations=8"),
    *("--set", "selfplay.max_plies=16"),
    *("--set", "selfplay.concurrent=2"),
    *("--set", "evaluation.games_vs_random=0"),
    *("--set", "evaluation.games_vs_best=0"),
    *("--set", "evaluation.final_games=0"),
]


def _run(run_dir: Path, method: str, ray: list[str]) -> dict:
    """``frugalzero run`` in a fresh interpreter, as a user starts it; its --json summary."""
    proc = subprocess.run(
        [sys.executable, "-m", "frugalzero", "run", "--dir", str(run_dir), "--json"]
        + ["--method", method, *RUN, *ray],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=run_dir.parent,
        env=own_code_env(),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _games_on_disk(run_dir: Path) -> list[str]:
    from frugalzero.data.shards import read_shard, scan_shards

    shards = scan_shards([run_dir / "data" / "iter-0001"])
    return [r.game_id for info in shards for r in read_shard(info.path)]


@pytest.mark.parametrize(
    ("method", "how"),
    [("selfplay", "set"), ("contempt", "flag")],  # both ways a run is given the address
)
def test_a_run_generates_on_several_nodes(ray_cluster: str, tmp_path, method, how) -> None:
    assert len(node_ids(ray_cluster)) == NODES
    ray = ["--set", f"ray={ray_cluster}"] if how == "set" else ["--ray", ray_cluster]
    before = set(actor_nodes(ray_cluster, "SelfPlayWorker"))
    run_dir = tmp_path / "run"
    summary = _run(run_dir, method, ray)

    state = json.loads((run_dir / "state.json").read_text())
    assert state["finished"] and state["iteration"] == 1, summary
    assert f'ray = "{ray_cluster}"' in (run_dir / "config.toml").read_text()
    (record,) = state["iterations"]
    assert record["games"] == GAMES and record["positions"] > 0
    assert record["generation"]["selfplay"]["games"] == GAMES
    ids = _games_on_disk(run_dir)
    assert len(ids) == len(set(ids)) == GAMES
    # the run's workers: one per CPU of the cluster, so one on every node; each had games
    workers = actor_nodes(ray_cluster, "SelfPlayWorker")
    ours = {actor: node for actor, node in workers.items() if actor not in before}
    assert len(ours) >= NODES and set(ours.values()) == node_ids(ray_cluster)


def test_selfplay_reports_the_games_of_each_node(ray_cluster: str, tmp_path, tiny_net, capsys):
    """frugalzero's own record (``SelfPlayRun.extra``, in ``selfplay --json``): the nodes, by
    node id (every node here has the same IP), and how many games each played."""
    from frugalzero.cli import main
    from frugalzero.nn.checkpoint import save_net

    net = tmp_path / "tiny.safetensors"
    save_net(tiny_net, net)
    args = ["selfplay", "--net", str(net), "--games", str(GAMES), "--sims", "8"]
    args += ["--ray", ray_cluster, "--out", str(tmp_path / "out"), "--json"]
    assert main([*args, "--set", "max_plies=8", "--set", "concurrent=2"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["games"] == GAMES and result["worker_deaths"] == 0
    assert result["ray_workers"] == NODES and result["nodes"] == NODES
    per_node = result["ray_nodes"]
    assert set(per_node) == node_ids(ray_cluster) and sum(per_node.values()) == GAMES
    import ray

    assert not ray.is_initialized()  # the command disconnected from the cluster it joined


def test_the_smoke_experiment_generates_on_the_cluster(ray_cluster: str, tmp_path) -> None:
    """``frugalzero experiment SPEC --ray ADDRESS``: every arm-seed's self-play on the
    cluster's nodes (training and rating here), ending with its results and page. The smoke
    spec made small, with one seed: each unit is run alike, so one shows it."""
    directory = tmp_path / "exp"
    spec = spec_file(tmp_path, {**SMALL, "seeds = [0, 1]": "seeds = [0]"})
    command = [sys.executable, "-m", "frugalzero", "experiment", str(spec), "--dir", str(directory)]
    proc = subprocess.run(
        [*command, "--ray", ray_cluster, "--json"],
        capture_output=True,
        text=True,
        timeout=900,
        env=own_code_env(),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((directory / "experiment.json").read_text())
    assert results["complete"] and json.loads(proc.stdout) == results["verdict"]
    assert (directory / "experiment.html").is_file()
    for arm in results["arms"]:
        for seed in arm["seeds"]:
            state = json.loads((directory / seed["dir"] / "state.json").read_text())
            assert f'ray = "{ray_cluster}"' in (directory / seed["dir"] / "config.toml").read_text()
            for record in state["iterations"]:
                assert record["generation"]["selfplay"]["ray"]["nodes"] == NODES
            assert seed["evaluations"] >= results["budget"]["evaluations"]
