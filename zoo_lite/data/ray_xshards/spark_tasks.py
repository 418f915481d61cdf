"""What the Spark tasks of ``to_ray()`` and ``to_spark_xshards()`` run on the executors.

Each task connects its Python worker to the Ray node of its own executor, then either hands its
partition to that node's owner actor (:func:`put_partitions`) or borrows partitions from their
owners and reads them (:func:`fetch_partition`). The closures capture only plain values
(:func:`task_connection`), never a context.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

from zoo_lite.data import partition_ops
from zoo_lite.data.ray_xshards.errors import ObjectStoreFullError, PartitionReleasedError
from zoo_lite.data.ray_xshards.owners import NAMESPACE
from zoo_lite.data.ray_xshards.timeouts import GET_TIMEOUT_S
from zoo_lite.errors import NoRayNodeError, raising_transportably

if TYPE_CHECKING:
    from zoo_lite.ray_on_spark import RayContext

__all__ = ["task_connection", "put_partitions", "fetch_partition"]

#: in a Spark Python worker, the Ray address it is connected to
_task_connected_to: Optional[str] = None


def _connect_from_task(address: str, token: str, nodes: list[dict[str, Any]], log_output: bool) -> None:
    """Connect this Spark Python worker to the Ray node of its own executor (once per worker);
    ``log_output`` comes from the driver's RaySettings (the executor's OrcaContext is not the driver's)."""
    import ray

    from zoo_lite.ray_on_spark.cluster import connect_to_node, node_serving
    from zoo_lite.ray_on_spark.node_launch import executor_process

    global _task_connected_to
    if ray.is_initialized():
        # compared with the address this process connected with: Ray reports the GCS by the node's
        # IP, which differs from a loopback address given to connect (a reconnect costs ~0.3 s)
        if _task_connected_to == address:
            return
        ray.shutdown()  # a worker reused from an earlier cluster
    hostname, (executor_pid, _) = socket.gethostname(), executor_process()
    node = node_serving(nodes, hostname, executor_pid)
    if node is None:
        raise NoRayNodeError(
            f"the Spark executor on {hostname} has no Ray node; to_ray() needs a Ray node on every executor "
            "host: start Ray with num_ray_nodes equal to the number of executors"
        )
    connect_to_node(address, token, node["temp_dir"], log_output)
    _task_connected_to = address


def _check_fits(described: str, partition: list[Any], store_bytes: Optional[float]) -> None:
    """Refuse a partition larger than its node's whole object store: Ray 2.60 would not fail but
    write it to disk outside the store, slowly, and possibly fill the disk."""
    size = partition_ops.partition_nbytes(partition)
    if store_bytes and size > store_bytes:
        raise ObjectStoreFullError(
            f"{described} holds {size / 2**20:.0f} MiB, more than the {store_bytes / 2**20:.0f} MiB object store "
            "of its Ray node; raise object_store_memory in init_orca_context, or split the data into more "
            "partitions (repartition)"
        )


def put_partitions(ray_context: "RayContext", owner_names: dict[str, str], store_bytes: dict[str, float], tag: str,
                   num_partitions: int, piece_bytes: Optional[int] = None) -> Callable[[int, Iterator[Any]], list[tuple[int, str, int]]]:
    """The function of ``to_ray()``'s tasks: each hands its partition to the owner on its node, under
    ``tag``, and returns ``(index, node id, rows)``.

    With ``piece_bytes``, a partition goes in pieces of about that many bytes of shards, read one
    at a time (:func:`~zoo_lite.data.partition_ops.bounded_runs`): piece ``k`` of partition ``i``
    of ``num_partitions`` has index ``i + k * num_partitions``, unique without asking the other
    tasks, and ``i`` for the first piece, as without pieces."""
    connection = task_connection(ray_context)

    def put(index: int, shards: Iterator[Any]) -> list[tuple[int, str, int]]:
        import ray

        _connect_from_task(*connection)
        node_id = ray.get_runtime_context().get_node_id()
        owner = ray.get_actor(owner_names[node_id], namespace=NAMESPACE)
        placed = []
        pieces = partition_ops.bounded_runs(shards, lambda shard: partition_ops.partition_nbytes([shard]), piece_bytes)
        for piece_number, piece in enumerate(pieces):
            piece_index = index + piece_number * num_partitions
            described = f"partition {index}" if piece_bytes is None else f"piece {piece_number} of partition {index}"
            _adopt(owner, tag, piece_index, piece, store_bytes.get(node_id), described)
            placed.append((piece_index, node_id, partition_ops.partition_weight(piece)))
        return placed

    return raising_transportably(put)


def _adopt(owner: Any, tag: str, index: int, partition: list[Any], store_bytes: Optional[float], described: str) -> None:
    """Hand ``partition`` to ``owner`` to put into Ray under ``(tag, index)``; ``described`` names
    it in errors (the user's partition, or a piece of it)."""
    import ray
    from ray.exceptions import ObjectStoreFullError as RayStoreFull

    _check_fits(described, partition, store_bytes)
    try:
        ray.get(owner.adopt.remote(tag, index, partition), timeout=GET_TIMEOUT_S)
    except RayStoreFull as error:  # also a RayTaskError from the actor's put: it is an instance of its cause
        raise ObjectStoreFullError(
            f"{described} does not fit into the Ray object store of its node; raise object_store_memory "
            f"in init_orca_context, or use more, smaller partitions (repartition): {error}"
        ) from None


def task_connection(ray_context: "RayContext") -> tuple[str, str, list[dict[str, Any]], bool]:
    """What a Spark task needs to connect to its node (plain values: shipped in closures)."""
    return ray_context.address, ray_context.auth_token, ray_context.nodes, ray_context.settings.log_output


def fetch_partition(connection: tuple[str, str, list[dict[str, Any]], bool]) -> Callable[[Iterator[tuple[str, str, int]]], list[Any]]:
    """The function of ``to_spark_xshards()``'s tasks: each borrows its located partitions
    ``(holder, tag, index)`` from their owners and returns their shards."""

    def fetch(located: Iterator[tuple[str, str, int]]) -> list[Any]:
        import ray

        _connect_from_task(*connection)
        shards: list[Any] = []
        for holder_name, tag, index in located:
            holder = ray.get_actor(holder_name, namespace=NAMESPACE)
            try:
                boxed = ray.get(holder.boxed.remote(tag, index), timeout=GET_TIMEOUT_S)
            except PartitionReleasedError as error:  # a RayTaskError that is an instance of its cause
                raise getattr(error, "cause", error) from None  # the owner's error itself, without Ray's wrapping
            shards.extend(ray.get(boxed[0], timeout=GET_TIMEOUT_S))
        return shards

    return raising_transportably(fetch)
