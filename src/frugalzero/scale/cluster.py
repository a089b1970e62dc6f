"""Connecting to Ray: ``local`` starts a private runtime on this machine, anything else joins a
running cluster (``HOST:6379``, ``auto``, ``ray://HOST:10001``)."""

from __future__ import annotations

import logging
from typing import Any

from frugalzero.errors import UserError
from frugalzero.scale.config import RayConfig

INSTALL_HINT = 'pip install "frugalzero[ray]"'


def require_ray() -> Any:
    """The ``ray`` module, or one line saying how to install it."""
    try:
        import ray
    except ImportError:
        raise UserError(f"--ray needs Ray, an optional extra: {INSTALL_HINT}") from None
    return ray


def connect(address: str, config: RayConfig | None = None) -> bool:
    """Connect this process to Ray; True when this call started or joined it (the caller then
    disconnects), False when it was connected already (a notebook, a test fixture)."""
    ray = require_ray()
    if ray.is_initialized():
        return False
    config = config or RayConfig()
    if not address:
        raise UserError("--ray needs an address: 'local', or the head's HOST:PORT")
    quiet: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": True}
    if address == "local":
        from frugalzero.runtime.cores import available_cores

        ray.init(
            address="local",
            num_cpus=config.local_cpus or available_cores(),
            include_dashboard=False,
            object_store_memory=config.object_store_mb << 20,
            **quiet,
        )
        return True
    try:
        ray.init(address=address, **quiet)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"--ray {address}: cannot join the Ray cluster ({first})") from None
    return True


def disconnect() -> None:
    ray = require_ray()
    if ray.is_initialized():
        ray.shutdown()


def cluster_cpus() -> float:
    """CPUs the connected cluster has in all (alive nodes)."""
    ray = require_ray()
    return float(ray.cluster_resources().get("CPU", 0.0))


def worker_count(config: RayConfig, items: int | None = None) -> int:
    """Workers to start: as configured, else as many as the cluster's CPUs hold; never more
    than there are items. A request the cluster cannot hold is an error, not a hang."""
    cpus = cluster_cpus()
    fit = int(cpus // config.cpus_per_worker)
    workers = config.workers or max(1, fit)
    if workers * config.cpus_per_worker > cpus:
        raise UserError(
            f"ray: {workers} workers x {config.cpus_per_worker} CPUs need "
            f"{workers * config.cpus_per_worker} CPUs; the cluster has {cpus:g} "
            "(set ray workers / cpus_per_worker, or add machines)"
        )
    if items is not None:
        workers = min(workers, max(1, items))
    return workers
