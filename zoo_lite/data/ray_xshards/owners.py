"""The owner actors: one per Ray node, which hold the partition objects put on that node.

Ray 2.56 removed ``ray.put(_owner=...)``, so an object outlives the Spark task that made it only if
a long-lived actor puts and owns it: :class:`PartitionOwner`, pinned to its node, started on first
use (:func:`owners_on`) and reused by every later ``to_ray()`` of the same cluster. Each
RayXShards keeps its objects there under its own tag; :func:`forget` drops a tag, which frees them.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Sequence

from zoo_lite.data.ray_xshards.errors import PartitionReleasedError
from zoo_lite.data.ray_xshards.timeouts import GET_TIMEOUT_S, PING_TIMEOUT_S

if TYPE_CHECKING:
    from zoo_lite.ray_on_spark import RayContext

__all__ = ["NAMESPACE", "PartitionOwner", "owners_on", "forget"]

#: the Ray namespace of the owners, by which Spark tasks look them up
NAMESPACE = "zoo_lite"


class PartitionOwner:
    """Owns the partition objects put on its node, per RayXShards tag, until told to forget them."""

    def __init__(self) -> None:
        self.refs: dict[str, dict[int, Any]] = {}

    def adopt(self, tag: str, index: int, partition: list[Any]) -> None:
        """Put ``partition`` (read zero-copy from this node's store) as an object this actor owns;
        Ray 2.56 removed ``ray.put(_owner=...)``, so the owner puts it itself."""
        import ray

        self.refs.setdefault(tag, {})[index] = ray.put(partition)

    def hold(self, tag: str, index: int, boxed_ref: list[Any]) -> None:
        """Keep a reference owned elsewhere (boxed, so that Ray passes the reference, not the value)."""
        self.refs.setdefault(tag, {})[index] = boxed_ref[0]

    def boxed(self, tag: str, index: int) -> list[Any]:
        """The reference of partition ``index``, boxed: the caller borrows it in-band.

        Raises
        ------
        PartitionReleasedError
            This owner holds no such partition under ``tag``: its RayXShards was freed.
        """
        held = self.refs.get(tag, {})
        if index not in held:
            raise PartitionReleasedError(
                f"partition {index} of a RayXShards (tag {tag[:8]}) is no longer held in Ray: the RayXShards was "
                "released and its objects freed before this read; keep the SparkXShards from to_spark_xshards() (or "
                "one derived from it through its methods) referenced while it is used (it keeps the RayXShards "
                "alive; an RDD taken out with .rdd does not), or build the RayXShards again with to_ray()"
            )
        return [held[index]]

    def registered(self, tag: str) -> dict[int, list[Any]]:
        return {index: [ref] for index, ref in self.refs.get(tag, {}).items()}

    def forget(self, tag: str) -> int:
        """Drop the references of ``tag`` (Ray frees the objects once no one borrows them)."""
        return len(self.refs.pop(tag, {}))


#: per Ray cluster address, the owner actor of each node: node id -> (name, handle)
_node_owners: dict[str, dict[str, tuple[str, Any]]] = {}


def _owners_alive(owners: dict[str, tuple[str, Any]]) -> set[str]:
    """Node ids whose cached owner still answers (all asked at once, bounded together)."""
    import ray

    pings = {owner.registered.remote(""): node_id for node_id, (_, owner) in owners.items()}
    if not pings:
        return set()
    answered, _ = ray.wait(list(pings), num_returns=len(pings), timeout=PING_TIMEOUT_S)
    alive = set()
    for ping in answered:
        try:
            ray.get(ping)
            alive.add(pings[ping])
        except Exception:  # noqa: BLE001 - a dead or unreachable owner is simply replaced
            pass
    return alive


def owners_on(ray_context: "RayContext", alive_nodes: list[dict[str, Any]]) -> dict[str, tuple[str, Any]]:
    """The owner actor on each of the context's nodes (the executors'), pinned there; started on
    first use and reused while it lives."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    names = {node["node_name"] for node in ray_context.nodes}
    node_ids = [node["NodeID"] for node in alive_nodes if node.get("NodeName") in names]
    cached = _node_owners.setdefault(ray_context.address, {})
    alive = _owners_alive({node_id: cached[node_id] for node_id in node_ids if node_id in cached})
    owner_class = ray.remote(num_cpus=0)(PartitionOwner)
    started = []
    for node_id in node_ids:
        if node_id not in alive:
            name = f"zoo_lite-owner-{uuid.uuid4().hex[:8]}-{node_id[:12]}"
            cached[node_id] = (name, owner_class.options(
                name=name, namespace=NAMESPACE, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
            ).remote())
            started.append(cached[node_id][1])
    ray.get([owner.registered.remote("") for owner in started], timeout=GET_TIMEOUT_S)
    return {node_id: cached[node_id] for node_id in node_ids}


def forget(owners: Sequence[Any], tag: str) -> None:
    """Tell the owners to drop ``tag``'s objects (asynchronously: nothing to wait for)."""
    for owner in owners:
        owner.forget.remote(tag)
