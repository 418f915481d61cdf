"""RayXShards and actors: where each actor runs, which partitions or rows each gets, and what runs inside them.

:func:`assign_whole_partitions` is Orca's assignment of whole partitions, a pure function of
where partitions and actors are (zoo_lite's balanced assignment of rows is
:func:`zoo_lite.data.partition_ops.assign_row_ranges`). The other functions ask Ray where actors
run, or run inside actors and tasks: :func:`shards_of_ranges` reads the rows an actor was given.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from zoo_lite.data import partition_ops
from zoo_lite.data.ray_xshards.timeouts import GET_TIMEOUT_S
from zoo_lite.errors import InvalidArgumentError

__all__ = ["assign_whole_partitions", "actor_nodes", "actor_nodes_and_ips", "count_rows_task", "rows_of", "apply_in_actor",
           "shards_of_ranges"]


def assign_whole_partitions(partition_nodes: Sequence[str], actor_nodes: Sequence[Optional[str]]) -> list[list[int]]:
    """Orca's assignment of whole partitions to actors, as a pure function of where each is.

    Every actor gets ``len(partition_nodes) // len(actor_nodes)`` partitions, and the first actors
    to fill up one more, until the remainder is used. A first pass gives each partition to an actor
    on its node with room, in actor order; a second pass gives the rest to any actor with room.

    Parameters
    ----------
    partition_nodes : list of str
        The node of each partition.
    actor_nodes : list of str or None
        The node of each actor.

    Returns
    -------
    list of list of int
        For each actor, the indices of its partitions, ascending (empty for actors beyond the
        number of partitions).

    Raises
    ------
    InvalidArgumentError
        ``actor_nodes`` is empty.

    Examples
    --------
    >>> assign_whole_partitions(["a", "a", "b", "b", "b"], ["b", "a"])  # local partitions first
    [[2, 3, 4], [0, 1]]
    >>> assign_whole_partitions(["a"] * 5, ["a", "a", "a"])  # 5 over 3: the first fill up to 2
    [[0, 1], [2, 3], [4]]
    >>> assign_whole_partitions(["a", "a"], ["a", "a", "a"])
    [[0], [1], []]
    """
    if not actor_nodes:
        raise InvalidArgumentError("assign_whole_partitions(actor_nodes=[]) needs at least one actor")
    quota, extra = divmod(len(partition_nodes), len(actor_nodes))
    assigned: list[list[int]] = [[] for _ in actor_nodes]

    def give(actor: int, partition: int) -> bool:
        nonlocal extra
        held = len(assigned[actor])
        if held < quota or (held == quota and extra > 0):
            if held == quota:
                extra -= 1
            assigned[actor].append(partition)
            return True
        return False

    actors_on: dict[Optional[str], list[int]] = {}
    for actor, node in enumerate(actor_nodes):
        actors_on.setdefault(node, []).append(actor)
    remote = [partition for partition, node in enumerate(partition_nodes)
              if not any(give(actor, partition) for actor in actors_on.get(node, []))]
    for partition in remote:
        any(give(actor, partition) for actor in range(len(actor_nodes)))
    return [sorted(partitions) for partitions in assigned]


def actor_nodes_and_ips(actors: Sequence[Any]) -> list[tuple[str, str]]:
    """The Ray node id and the node's IP address of each actor."""
    import ray

    return ray.get([actor.__ray_call__.remote(_node_and_ip_of) for actor in actors], timeout=GET_TIMEOUT_S)


def _node_and_ip_of(_: Any) -> tuple[str, str]:
    import ray

    return ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address()


def _count_rows(partition: list[Any]) -> int:
    return partition_ops.partition_weight(partition)


def count_rows_task() -> Any:
    """A zero-CPU Ray task counting the rows of a partition given by reference: Ray runs it where
    the partition is, so the data does not come to the driver."""
    import ray

    return ray.remote(num_cpus=0)(_count_rows)


def actor_nodes(actors: Sequence[Any]) -> list[Optional[str]]:
    """The Ray node id each actor runs on."""
    import ray

    return ray.get([actor.__ray_call__.remote(_node_id_of) for actor in actors], timeout=GET_TIMEOUT_S)


def _node_id_of(_: Any) -> str:
    import ray

    return ray.get_runtime_context().get_node_id()


def rows_of(_: Any, boxed: list[Any]) -> int:
    """Run in an actor (``__ray_call__``): the rows of the partition object ``boxed[0]``, which the actor made."""
    import ray

    return partition_ops.partition_weight(ray.get(boxed[0]))


def apply_in_actor(instance: Any, func: Callable[[Any, list[Any]], Any], slices: list[tuple[Any, int, int, int]]) -> Any:
    """Run in an actor (``__ray_call__``): ``func`` on the shards of ``slices``, as a partition of one shard."""
    return [func(instance, shards_of_ranges(slices))]


def shards_of_ranges(slices: Sequence[tuple[Any, int, int, int]]) -> list[Any]:
    """The shards an actor was assigned (:meth:`RayXShards.assign_partition_ranges`), in order,
    fetched from the object store together.

    Parameters
    ----------
    slices : list of (ray.ObjectRef, int, int, int)
        One actor's ``(object_ref, partition, start, stop)`` ranges.

    Returns
    -------
    list
        The shards of those ranges, each cut to rows ``start:stop`` of its partition.

    Examples
    --------
    >>> import numpy as np, ray
    >>> from zoo_lite import init_orca_context
    >>> from zoo_lite.data import XShards
    >>> _ = init_orca_context(cores=2, init_ray_on_spark=True)
    >>> in_ray = XShards.partition(np.arange(6), num_shards=2).to_ray()
    >>> @ray.remote(num_cpus=0)
    ... class Worker:
    ...     pass
    >>> first, second = in_ray.assign_partition_ranges([Worker.remote(), Worker.remote()])
    >>> shards_of_ranges(second)  # called inside an actor, usually
    [array([3, 4, 5])]
    """
    import ray

    partitions = ray.get([ref for ref, _, _, _ in slices], timeout=GET_TIMEOUT_S)
    shards: list[Any] = []
    for partition, (_, _, start, stop) in zip(partitions, slices):
        shards.extend(partition_ops.slice_partition(partition, start, stop))
    return shards
