"""What the generation commands (``--ray``) and ``frugalzero run`` (``ray = ADDRESS``) call."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from frugalzero.scale.config import RayConfig


def ray_config_from_args(args: argparse.Namespace) -> RayConfig:
    """``--ray-workers`` on top of the defaults."""
    config = RayConfig(workers=getattr(args, "ray_workers", None) or 0)
    return config


def ray_selfplay_from_args(
    args: argparse.Namespace,
    net_path: Path,
    config,
    on_game: Callable,
    progress: Callable[[int], None],
):
    """``frugalzero selfplay --ray ADDRESS``: the run on Ray, connected for its duration."""
    from frugalzero.scale.runtime import ray_runtime
    from frugalzero.scale.selfplay import ray_selfplay

    ray = ray_config_from_args(args)
    with ray_runtime(args.ray, ray):
        return ray_selfplay(net_path, config, on_game, progress, ray)


@contextmanager
def ray_playout_pool(args: argparse.Namespace, engine) -> Iterator:
    """``frugalzero explore|sfgames --ray ADDRESS``: a ``RayPlayoutPool`` (the pool those
    commands label with), connected for the block."""
    from frugalzero.scale.playouts import RayPlayoutPool
    from frugalzero.scale.runtime import ray_runtime

    ray = ray_config_from_args(args)
    with ray_runtime(args.ray, ray), RayPlayoutPool(engine, ray) as pool:
        yield pool


# -- frugalzero run: one connection for the whole process (its iterations share it; Ray closes
# it at exit), workers and the published network per generation step.


def selfplay_on_ray(address: str, net_path: Path, config, on_game: Callable, progress):
    """``run_selfplay``'s twin for ``frugalzero run`` with ``ray = ADDRESS``."""
    from frugalzero.scale.runtime import connect
    from frugalzero.scale.selfplay import ray_selfplay

    connect(address)
    return ray_selfplay(net_path, config, on_game, progress)


def playout_pool_on_ray(address: str, engine):
    """A ``RayPlayoutPool`` in place of ``StockfishPool`` for ``frugalzero run``."""
    from frugalzero.scale.playouts import RayPlayoutPool
    from frugalzero.scale.runtime import connect

    connect(address)
    return RayPlayoutPool(engine)
