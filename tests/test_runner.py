"""Where generation runs: ``runner_for`` picks this machine or Ray, and the local runner plays
the same games as the process pool it stands for."""

from __future__ import annotations

from pathlib import Path

import pytest

from frugalzero.errors import UserError
from frugalzero.expert.engine import EngineConfig
from frugalzero.expert.pool import StockfishPool
from frugalzero.nn.checkpoint import save_net
from frugalzero.scale.config import RayConfig
from frugalzero.scale.runner import LocalRunner, RayRunner, runner_for
from frugalzero.search.config import SearchConfig
from frugalzero.selfplay.config import SelfPlayConfig
from frugalzero.selfplay.play import run_selfplay


def test_no_address_runs_here_an_address_on_ray() -> None:
    assert isinstance(runner_for(""), LocalRunner)
    assert isinstance(runner_for(None), LocalRunner)
    runner = runner_for("local", RayConfig(workers=3))
    assert isinstance(runner, RayRunner)
    assert runner.address == "local" and runner.config.workers == 3
    assert runner_for("HOST:6379").config == RayConfig()  # the defaults when none is given


def test_ray_runner_checks_its_config_before_connecting() -> None:
    with pytest.raises(UserError, match="ray:"):
        RayRunner("local", RayConfig(cpus_per_worker=0))


@pytest.mark.slow
def test_local_runner_plays_the_process_pools_games(tmp_path: Path, tiny_net) -> None:
    net = tmp_path / "tiny.safetensors"
    save_net(tiny_net, net)
    config = SelfPlayConfig(
        search=SearchConfig(simulations=8), games=3, concurrent=2, max_plies=8, workers=1, seed=4
    )
    config.evaluator.backend, config.evaluator.compile = "inline", "off"
    direct: list = []
    run_selfplay(net, config, direct.append)
    seen: list = []
    done: list[int] = []
    with runner_for("") as runner:
        run = runner.selfplay(net, config, seen.append, done.append)
    assert [g.game_id for g in seen] == [g.game_id for g in direct]
    assert [g.moves for g in seen] == [g.moves for g in direct]
    assert run.games == 3 and run.workers == 1 and run.extra == {} and done == [1, 2, 3]


def test_local_runner_playout_pool_is_a_stockfish_pool(stockfish) -> None:
    with LocalRunner().playout_pool(EngineConfig(nodes=10), 1) as pool:
        assert isinstance(pool, StockfishPool) and pool.size == 1
