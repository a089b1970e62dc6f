"""Generation on Ray: a local Ray runtime of 2 CPUs, shared by the tests here.

Skipped cleanly without the ``ray`` extra; ``make test`` installs it, so CI runs them.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow  # a Ray runtime and its worker processes

from frugalzero.cli import main  # noqa: E402
from frugalzero.data.shards import read_shard  # noqa: E402
from frugalzero.nn.checkpoint import save_net  # noqa: E402
from frugalzero.scale.config import RayConfig  # noqa: E402
from frugalzero.scale.selfplay import ray_selfplay  # noqa: E402
from frugalzero.search.config import SearchConfig  # noqa: E402
from frugalzero.selfplay.config import SelfPlayConfig  # noqa: E402
from frugalzero.selfplay.game import SelfPlayGame, game_starts  # noqa: E402
from frugalzero.selfplay.play import run_selfplay  # noqa: E402


@pytest.fixture(scope="module")
def runtime():
    """One private runtime for the module (starting one takes seconds): the generation code
    finds Ray connected and leaves the connection alone."""
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=100 << 20,
        logging_level="WARNING",
    )
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def net_file(tmp_path_factory, tiny_net) -> Path:
    path = tmp_path_factory.mktemp("ray") / "tiny.safetensors"
    save_net(tiny_net, path)
    return path


def _config(games: int, **overrides) -> SelfPlayConfig:
    """Short games (a ply limit) with a small search: seconds, not minutes."""
    fields = {"games": games, "concurrent": 2, "max_plies": 16, "workers": 1, "seed": 3}
    return SelfPlayConfig(search=SearchConfig(simulations=8), **(fields | overrides))


def _expected_ids(config: SelfPlayConfig) -> set[str]:
    """The game ids of a run: one per start (the id does not depend on who plays it)."""
    return {SelfPlayGame(s, config, "").game_id for s in game_starts(config)}


def test_ray_selfplay_yields_the_local_runs_games(runtime, net_file: Path) -> None:
    config = _config(games=6)
    local: list = []
    run_selfplay(net_file, config, local.append)
    remote: list = []
    run = ray_selfplay(net_file, config, remote.append, ray=RayConfig(workers=2))
    assert len(remote) == len(local) == config.games == run.games
    assert {r.game_id for r in remote} == {r.game_id for r in local} == _expected_ids(config)
    assert all(0 < len(r.moves) <= config.max_plies for r in remote)
    assert run.extra["ray_workers"] == 2 and run.extra["worker_deaths"] == 0
    assert run.moves == sum(len(r.moves) for r in remote) and run.simulations > 0


def test_killed_worker_loses_no_finished_game(runtime, net_file: Path) -> None:
    """SIGKILL a worker right after its first game arrived, while it plays its next ones: the
    game it finished is kept, the unfinished ones are played again elsewhere, none twice."""
    config = _config(games=8, concurrent=1)  # one game at a time: a chunk of 3 is mid-way
    received: list = []
    before_kill: list[str] = []
    workers = []

    def on_game(record) -> None:
        received.append(record)
        if not before_kill:  # the first game: kill the worker that still has games to play
            before_kill.extend(r.game_id for r in received)
            (pool,) = workers
            busy = pool.busy_pids()
            assert busy, "no worker holds unfinished games"
            os.kill(busy[0], signal.SIGKILL)

    run = ray_selfplay(
        net_file, config, on_game, ray=RayConfig(workers=2, chunk=3), workers_hook=workers.append
    )
    ids = [r.game_id for r in received]
    assert len(ids) == len(set(ids)) == config.games == run.games  # none lost, none twice
    assert set(ids) == _expected_ids(config)
    assert set(before_kill) <= set(ids)
    assert run.extra["worker_deaths"] == 1 and run.extra["replayed"] >= 1
    assert run.extra["failed"] == 0


def test_cli_selfplay_ray_writes_the_same_shards(runtime, net_file: Path, tmp_path, capsys):
    """The acceptance command's path: ``--ray local`` finds the runtime up and uses it."""
    out = tmp_path / "out"
    args = ["selfplay", "--net", str(net_file), "--games", "3", "--sims", "8", "--ray", "local"]
    args += ["--out", str(out), "--json", "--set", "max_plies=8", "--set", "concurrent=2"]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["games"] == 3 and result["worker_deaths"] == 0
    records = [r for shard in result["shards"] for r in read_shard(shard)]
    assert len(records) == 3 and sum(len(r.moves) for r in records) == result["positions"]
    assert ray.is_initialized()  # a runtime it did not start is left running


def test_stockfish_games_on_ray_match_local_and_survive_a_kill(runtime, stockfish) -> None:
    """Stockfish games through ``RayPlayoutPool``: every game of the local pool, once each
    (with the PGN its Ray worker wrote), though one worker is killed after the first game came
    back."""
    from frugalzero.data.pgnwriter import game_text
    from frugalzero.expert.engine import EngineConfig
    from frugalzero.expert.explore import label_playouts
    from frugalzero.expert.pool import StockfishPool
    from frugalzero.expert.sfgames import SfGamesConfig, game_tasks
    from frugalzero.scale.playouts import RayPlayoutPool

    config = SfGamesConfig(max_plies=24, seed=5, engine=EngineConfig(nodes=30))
    local: list = []
    with StockfishPool(config.engine, 1) as pool:
        label_playouts(pool, game_tasks(config, 8), local.append)
    remote: list = []
    with RayPlayoutPool(config.engine, RayConfig(workers=2, chunk=3)) as pool:

        def sink(played) -> None:  # with its PGN, written on the Ray worker
            remote.append(played)
            if len(remote) == 1:
                os.kill(pool.pool.busy_pids()[0], signal.SIGKILL)

        stats = label_playouts(pool, game_tasks(config, 8, pgn=True), sink)
        deaths = pool.stats()["worker_deaths"]
    ids = [p.record.game_id for p in remote]
    assert len(ids) == len(set(ids)) == len(local) == 8 and stats.failed == 0
    assert set(ids) == {r.game_id for r in local}
    assert deaths == 1
    assert all(p.pgn == game_text(p.record) for p in remote)


def test_pipeline_generation_step_goes_through_ray(
    runtime, net_file: Path, tmp_path, monkeypatch
) -> None:
    """``frugalzero run`` with ``ray`` set: the generation step's games come from Ray workers
    (the local pool would fail) and land in the iteration's shards like a local step's."""
    import frugalzero.selfplay.play
    from frugalzero.config import load_config
    from frugalzero.pipeline.config import RunConfig
    from frugalzero.pipeline.generate import generate
    from frugalzero.scale.runner import RayRunner, runner_for

    sets = ["ray=local", "generate.games=3", "selfplay.max_plies=8", "selfplay.concurrent=2"]
    config = load_config(RunConfig, None, sets + ["selfplay.search.simulations=8"])
    monkeypatch.setattr(frugalzero.selfplay.play, "run_selfplay", None)  # not called
    seen: list[int] = []
    runner = runner_for(config.ray)
    assert isinstance(runner, RayRunner)
    with runner:
        out = tmp_path / "gen"
        report = generate(config, out, 1, net_file, "n", None, lambda d, t: seen.append(d), runner)
    assert report["games"] == 3 and report["positions"] > 0 and seen[-1] == 3
    assert ray.is_initialized()


def test_a_worker_without_a_gpu_runs_its_net_on_the_cpu() -> None:
    """Explicitly: whatever Ray does with CUDA_VISIBLE_DEVICES, a worker given no GPU never
    puts its evaluator on CUDA; one given a share keeps the configured device."""
    from frugalzero.nn.config import EvaluatorConfig
    from frugalzero.scale.actors import SelfPlayWorker

    auto = EvaluatorConfig(device="auto")
    cpu_only = SelfPlayWorker(cpus=2, gpus=0).settings(auto)
    assert (cpu_only.device, cpu_only.backend, cpu_only.threads) == ("cpu", "process", 1)
    shared_gpu = SelfPlayWorker(cpus=1, gpus=0.25).settings(auto)
    assert (shared_gpu.device, shared_gpu.backend, shared_gpu.threads) == ("auto", "inline", 1)
