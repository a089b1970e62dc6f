"""A local multi-node Ray cluster for tests: several Ray nodes (raylets) on this one machine,
made with Ray's own ``ray.cluster_utils.Cluster``.

``ray_cluster`` (module scope) starts a head node and 2 worker nodes, 1 CPU and an 80 MiB
object store each (3 CPUs in all; no dashboard but Ray's minimal one), waits until all 3 are
registered, and yields the cluster's address, the head's GCS ``"HOST:PORT"`` (e.g.
``"192.0.2.2:42089"``; a random free port, so it never collides with a cluster on 6379). That
is what ``frugalzero run --ray ADDRESS``, ``--set ray=ADDRESS``, ``RunConfig.ray`` and
``frugalzero selfplay --ray ADDRESS`` take: the driver (a subprocess, or this process through
``frugalzero.cli.main``) joins it as a user's would join ``ray start --head``. The test
process itself is *not* connected to it: a test that calls ``ray.init(address=...)`` must
``ray.shutdown()`` before it ends. The cluster is shut down when the module's tests are done,
failed or not.

On the 2-core development machine starting it takes about 5 s (8-9 s when the machine is
busy) and stopping it about 1.3 s; idle, its processes hold about 0.9 GiB (per node a raylet,
Ray's dashboard and runtime-env agents; on the head the GCS, a minimal dashboard, the monitor
and the log monitor). A ``frugalzero run`` on it (its driver and 3 workers, each a Python
process with torch) brings the whole, pytest included, to about 2.2 GiB.

All nodes share this machine's IP: count nodes by node id, never by IP. ``actor_nodes``
tells on which nodes the actors of a class ran (alive or dead), from Ray's own actor table.

Use it from a test module::

    from raycluster import actor_nodes, ray_cluster  # noqa: F401  (the fixture)

    def test_something(ray_cluster: str) -> None:
        before = set(actor_nodes(ray_cluster, "SelfPlayWorker"))
        ...  # frugalzero ... --ray <ray_cluster>
        nodes = actor_nodes(ray_cluster, "SelfPlayWorker")
        assert len({nodes[a] for a in set(nodes) - before}) > 1
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

NODES = 3  # the head and 2 worker nodes
CPUS_PER_NODE = 1
OBJECT_STORE_MB = 80  # Ray's minimum is 75 MiB; the tests' nets are kilobytes

_clusters: dict[str, Any] = {}  # address -> ray.cluster_utils.Cluster, while it runs


def start_cluster(
    nodes: int = NODES, cpus: int = CPUS_PER_NODE, object_store_mb: int = OBJECT_STORE_MB
) -> Any:
    """A running ``Cluster`` of ``nodes`` nodes (the head included), every one registered; a
    start that fails part-way stops what it had started."""
    from ray.cluster_utils import Cluster

    node_args = {"num_cpus": cpus, "object_store_memory": object_store_mb << 20}
    cluster = Cluster(
        initialize_head=True,
        connect=False,  # the drivers under test connect, not this process
        head_node_args={**node_args, "include_dashboard": False},
    )
    try:
        for _ in range(nodes - 1):
            cluster.add_node(**node_args)
        cluster.wait_for_nodes(timeout=60)
    except BaseException:
        cluster.shutdown()
        raise
    _clusters[cluster.address] = cluster
    return cluster


def stop_cluster(cluster: Any) -> None:
    """Every process of every node stopped (the drivers must have disconnected)."""
    _clusters.pop(cluster.address, None)
    cluster.shutdown()


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[str]:
    """The address (``"HOST:PORT"``) of a local Ray cluster of a head and 2 worker nodes, 1 CPU
    each, for the test module; see the module's docstring."""
    pytest.importorskip("ray")
    started = time.perf_counter()
    cluster = start_cluster()
    print(
        f"\nray cluster of {NODES} nodes at {cluster.address}: "
        f"{time.perf_counter() - started:.1f} s to start"
    )
    try:
        yield cluster.address
    finally:
        stopping = time.perf_counter()
        stop_cluster(cluster)
        print(f"\nray cluster stopped in {time.perf_counter() - stopping:.1f} s")


def node_ids(address: str) -> set[str]:
    """The ids of the cluster's alive nodes."""
    return set(_clusters[address].global_state._live_node_ids())


def actor_nodes(address: str, class_name: str) -> dict[str, str]:
    """Actor id -> id of the node it ran on, for every actor of ``class_name`` the cluster has
    seen (alive or dead: Ray keeps dead actors in its table), whichever driver made it. Read
    from the head's GCS by the cluster's own state accessor: this process stays unconnected.
    (Ray's private API: ``ray`` is pinned in pyproject.toml.)"""
    table = _clusters[address].global_state.actor_table(None)
    return {
        actor_id: info["Address"]["NodeID"]
        for actor_id, info in table.items()
        if info.get("ActorClassName") == class_name and info["Address"].get("NodeID")
    }
