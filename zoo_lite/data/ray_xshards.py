"""XShards in Ray's object store: partitions put there by Spark tasks on the executors.

``SparkXShards.to_ray()`` runs one Spark task per partition. Each task connects to the Ray node of
its own executor and hands its partition (the list of its shards) to a long-lived *owner* actor
pinned to that node, which puts it into the node's object store and so owns it (Ray 2.56 removed
``ray.put(_owner=...)``). The data never passes through the driver, and it outlives the Spark
task. There is one owner per Ray node, started once and reused by every ``to_ray()`` (starting an
actor costs about a second); each :class:`RayXShards` holds its objects there under its own tag,
and :meth:`RayXShards.release` (or garbage collection) makes the owners forget the tag, which
frees the objects.

``RayXShards.to_spark_xshards()`` is lazy: its Spark tasks borrow the objects from the owners
when an action runs. So the SparkXShards it returns, and every one derived from it, holds a lease
on the RayXShards that keeps its objects until the last of them is gone, even when the RayXShards
itself was released or dropped (``shards.to_ray().to_spark_xshards().collect()`` works).
"""

from __future__ import annotations

import logging
import socket
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Sequence

from zoo_lite.data import partition_ops
from zoo_lite.data.spark_jobs import run_job
from zoo_lite.errors import InvalidArgumentError, NoRayNodeError, ZooLiteError, raising_transportably
from zoo_lite.user_code import user_code_by_value

if TYPE_CHECKING:
    from pyspark import RDD

    from zoo_lite.data.shard import SparkXShards
    from zoo_lite.ray_on_spark import RayContext

    #: builds the SparkXShards of an RDD that keeps the given objects alive (SparkXShards passes it
    #: in, so that this module needs SparkXShards for type hints only)
    CollectionFactory = Callable[[RDD, Sequence[Any]], SparkXShards]

__all__ = ["RayXShards", "PartitionLostError", "PartitionReleasedError", "ObjectStoreFullError", "shards_of_ranges",
           "assign_whole_partitions"]

_NAMESPACE = "zoo_lite"
_GET_TIMEOUT_S = 600.0
#: how long a read that saw a lost object checks its partitions, in all
_LOST_CHECK_S = 30.0
_PING_TIMEOUT_S = 10.0


class PartitionLostError(ZooLiteError):
    """Partitions of a RayXShards are gone, e.g. because the Ray node holding them died."""


class ObjectStoreFullError(ZooLiteError):
    """A partition does not fit into the Ray object store."""


class PartitionReleasedError(ZooLiteError):
    """A Spark task read a partition of a RayXShards whose objects were freed already (e.g. through
    an RDD taken out of a SparkXShards with ``.rdd``, which keeps nothing alive)."""


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


@dataclass(frozen=True)
class _Partition:
    index: int
    ref: Any
    node_id: str
    rows: int
    holder: str  # name of the PartitionOwner that hands the reference to Spark tasks
    tag: str     # the RayXShards' key in that owner


class _Lease:
    """Held by a SparkXShards from :meth:`RayXShards.to_spark_xshards` and every collection derived
    from it (their ``_keep_alive``): keeps the RayXShards, so its objects, alive while one of them
    lives, and frees the objects when the last lease goes if the RayXShards was released."""

    __slots__ = ("source",)

    def __init__(self, source: "RayXShards") -> None:
        self.source = source
        source._leases += 1

    def __del__(self) -> None:
        try:
            self.source._lease_ended()
        except Exception:  # noqa: BLE001 - interpreter shutdown or Ray already gone
            pass


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


def _check_fits(index: int, partition: list[Any], store_bytes: Optional[float]) -> None:
    """Refuse a partition larger than its node's whole object store: Ray 2.60 would not fail but
    write it to disk outside the store, slowly, and possibly fill the disk."""
    size = partition_ops.partition_nbytes(partition)
    if store_bytes and size > store_bytes:
        raise ObjectStoreFullError(
            f"partition {index} holds {size / 2**20:.0f} MiB, more than the {store_bytes / 2**20:.0f} MiB object store "
            "of its Ray node; raise object_store_memory in init_orca_context, or split the data into more "
            "partitions (repartition)"
        )


def _put_partitions(ray_context: "RayContext", owner_names: dict[str, str], store_bytes: dict[str, float],
                    tag: str) -> Callable[[int, Iterator[Any]], list[tuple[int, str, int]]]:
    connection = _connection(ray_context)

    def put(index: int, shards: Iterator[Any]) -> list[tuple[int, str, int]]:
        import ray
        from ray.exceptions import ObjectStoreFullError as RayStoreFull

        _connect_from_task(*connection)
        partition = list(shards)
        node_id = ray.get_runtime_context().get_node_id()
        _check_fits(index, partition, store_bytes.get(node_id))
        owner = ray.get_actor(owner_names[node_id], namespace=_NAMESPACE)
        try:
            ray.get(owner.adopt.remote(tag, index, partition), timeout=_GET_TIMEOUT_S)
        except RayStoreFull as error:  # also a RayTaskError from the actor's put: it is an instance of its cause
            raise ObjectStoreFullError(
                f"partition {index} does not fit into the Ray object store of its node; raise object_store_memory "
                f"in init_orca_context, or use more, smaller partitions (repartition): {error}"
            ) from None
        return [(index, node_id, partition_ops.partition_weight(partition))]

    return raising_transportably(put)


#: per Ray cluster address, the owner actor of each node: node id -> (name, handle)
_node_owners: dict[str, dict[str, tuple[str, Any]]] = {}


def _owners_alive(owners: dict[str, tuple[str, Any]]) -> set[str]:
    """Node ids whose cached owner still answers (all asked at once, bounded together)."""
    import ray

    pings = {owner.registered.remote(""): node_id for node_id, (_, owner) in owners.items()}
    if not pings:
        return set()
    answered, _ = ray.wait(list(pings), num_returns=len(pings), timeout=_PING_TIMEOUT_S)
    alive = set()
    for ping in answered:
        try:
            ray.get(ping)
            alive.add(pings[ping])
        except Exception:  # noqa: BLE001 - a dead or unreachable owner is simply replaced
            pass
    return alive


def _owners_on(ray_context: "RayContext", alive_nodes: list[dict[str, Any]]) -> dict[str, tuple[str, Any]]:
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
                name=name, namespace=_NAMESPACE, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
            ).remote())
            started.append(cached[node_id][1])
    ray.get([owner.registered.remote("") for owner in started], timeout=_GET_TIMEOUT_S)
    return {node_id: cached[node_id] for node_id in node_ids}


def _connection(ray_context: "RayContext") -> tuple[str, str, list[dict[str, Any]], bool]:
    """What a Spark task needs to connect to its node (plain values: shipped in closures)."""
    return ray_context.address, ray_context.auth_token, ray_context.nodes, ray_context.settings.log_output


def spark_to_ray(rdd: "RDD", spark_collection: "CollectionFactory") -> "RayXShards":
    """Put every partition of ``rdd`` (a SparkXShards' RDD) into Ray from the executors (see the
    module docstring); ``spark_collection`` is what the result's :meth:`RayXShards.to_spark_xshards`
    builds its SparkXShards with.

    An executor that Spark registers on a host with no Ray node while the job runs (one given
    back after a loss, after the check for such hosts) fails its tasks with
    :class:`~zoo_lite.errors.NoRayNodeError`; the job then runs once more after a node was started
    there. Without a node to start (``num_ray_nodes`` below the executors) the error is raised."""
    from zoo_lite.context import ray_context_started_on_demand

    ray_context = ray_context_started_on_demand()
    nodes_before = {node["node_name"] for node in ray_context.nodes}
    try:
        return _put_into_ray(rdd, ray_context, spark_collection)
    except NoRayNodeError as error:
        ray_context = ray_context_started_on_demand()   # starts nodes where an executor's host has none
        if {node["node_name"] for node in ray_context.nodes} <= nodes_before:
            raise
        logging.getLogger(__name__).warning(
            "a Spark executor joined on a host without a Ray node while data moved into Ray (%s); a node was started "
            "there and the partitions are put into Ray again", error)
        return _put_into_ray(rdd, ray_context, spark_collection)


def _put_into_ray(rdd: "RDD", ray_context: "RayContext", spark_collection: "CollectionFactory") -> "RayXShards":
    """One job that puts every partition of ``rdd`` into Ray, on ``ray_context``'s nodes."""
    import ray

    from zoo_lite.ray_on_spark.cluster import alive_ray_nodes

    alive_nodes = alive_ray_nodes()
    named_owners = _owners_on(ray_context, alive_nodes)
    store_bytes = {node["NodeID"]: node["Resources"].get("object_store_memory", 0.0) for node in alive_nodes}
    owner_names = {node_id: name for node_id, (name, _) in named_owners.items()}
    owners = [owner for _, owner in named_owners.values()]
    tag = uuid.uuid4().hex
    try:
        placed = run_job(rdd.context, rdd.mapPartitionsWithIndex(_put_partitions(ray_context, owner_names, store_bytes, tag)).collect)
        registered = ray.get([owner.registered.remote(tag) for owner in owners], timeout=_GET_TIMEOUT_S)
        refs = {index: boxed[0] for by_index in registered for index, boxed in by_index.items()}
    except BaseException:
        _forget(owners, tag)
        raise
    partitions = [_Partition(index, refs[index], node_id, rows, owner_names[node_id], tag) for index, node_id, rows in sorted(placed)]
    return RayXShards(partitions, owners, tag, spark_collection)


def _forget(owners: Sequence[Any], tag: str) -> None:
    """Tell the owners to drop ``tag``'s objects (asynchronously: nothing to wait for)."""
    for owner in owners:
        owner.forget.remote(tag)


class RayXShards:
    """Partitions of an XShards held in Ray's object store, one object per partition.

    Built by :meth:`SparkXShards.to_ray`; each partition is the list of shards the Spark
    partition held. It keeps the actors that own the objects: :meth:`release` frees them, and so
    does garbage collection. A SparkXShards from :meth:`to_spark_xshards` reads the objects lazily
    and so keeps this RayXShards alive (as does every collection derived from it); a release
    meanwhile is deferred until the last of them is gone (see :meth:`release`).

    Methods that read the objects raise :class:`ZooLiteError` once this RayXShards was released.

    Examples
    --------
    >>> import numpy as np
    >>> from zoo_lite import init_orca_context
    >>> from zoo_lite.data import XShards
    >>> _ = init_orca_context(cores=2, init_ray_on_spark=True)
    >>> shards = XShards.partition({"x": np.arange(10)}, num_shards=2)
    >>> in_ray = shards.to_ray()
    >>> len(in_ray), in_ray.num_partitions()
    (10, 2)
    >>> [int(s["x"].sum()) for s in in_ray.to_spark_xshards().collect()]
    [10, 35]
    """

    def __init__(self, partitions: Sequence[_Partition], owners: Sequence[Any] = (), tag: str = "",
                 spark_collection: Optional["CollectionFactory"] = None) -> None:
        self._parts = list(partitions)
        self._owners = list(owners)
        self._tag = tag
        self._spark_collection = spark_collection
        self._released = False   # by the user: this handle cannot be used any more
        self._leases = 0         # live leases of SparkXShards reading the objects (see _Lease)

    @property
    def _partitions(self) -> list[_Partition]:
        if self._released:
            raise ZooLiteError("this RayXShards was released and its objects freed; build it again with to_ray()")
        return self._parts

    # -- facts ----------------------------------------------------------------------------------

    def num_partitions(self) -> int:
        """Number of partitions (objects).

        Returns
        -------
        int
            As many as the SparkXShards it was built from had.

        Raises
        ------
        ZooLiteError
            This RayXShards was released.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2, init_ray_on_spark=True)
        >>> XShards.partition(np.arange(6), num_shards=3).to_ray().num_partitions()
        3
        """
        return len(self._partitions)

    def __len__(self) -> int:
        """Rows over all partitions (a shard that is not rows counts as one).

        Known without reading the objects: counted when they were put into Ray.

        Returns
        -------
        int

        Raises
        ------
        ZooLiteError
            This RayXShards was released.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2, init_ray_on_spark=True)
        >>> len(XShards.partition({"x": np.zeros((5, 2))}, num_shards=2).to_ray())
        5
        """
        return sum(partition.rows for partition in self._partitions)

    def partition_rows(self) -> list[int]:
        """Rows of each partition, in partition order.

        Returns
        -------
        list of int

        Raises
        ------
        ZooLiteError
            This RayXShards was released.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2, init_ray_on_spark=True)
        >>> XShards.partition(np.arange(5), num_shards=2).to_ray().partition_rows()
        [2, 3]
        """
        return [partition.rows for partition in self._partitions]

    def partition_nodes(self) -> list[str]:
        """The Ray node id holding each partition, in partition order.

        Each partition is put on the Ray node of the Spark executor that computed it.

        Returns
        -------
        list of str
            Hexadecimal Ray node ids.

        Raises
        ------
        ZooLiteError
            This RayXShards was released.

        Examples
        --------
        >>> import numpy as np, ray
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2, init_ray_on_spark=True)
        >>> nodes = XShards.partition(np.arange(4), num_shards=2).to_ray().partition_nodes()
        >>> alive = {node["NodeID"] for node in ray.nodes() if node["Alive"]}
        >>> len(nodes), set(nodes) <= alive
        (2, True)
        """
        return [partition.node_id for partition in self._partitions]

    def object_refs(self) -> list[Any]:
        """The object reference of each partition, in partition order.

        Each object is the list of shards of one partition. The references stay valid while
        this RayXShards is referenced and not released.

        Returns
        -------
        list of ray.ObjectRef

        Raises
        ------
        ZooLiteError
            This RayXShards was released.

        Examples
        --------
        >>> import numpy as np, ray
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2, init_ray_on_spark=True)
        >>> in_ray = XShards.partition(np.arange(4), num_shards=2).to_ray()
        >>> ray.get(in_ray.object_refs()[1])  # the list of shards of partition 1
        [array([2, 3])]
        """
        return [partition.ref for partition in self._partitions]

    # -- data -----------------------------------------------------------------------------------

    def collect(self) -> list[Any]:
        """All shards on the driver, in order (for small data and tests).

        Returns
        -------
        list
            The shards of every partition, in partition order.

        Raises
        ------
        PartitionLostError
            A partition is gone with the Ray node or owner that held it; build the RayXShards
            again with :meth:`SparkXShards.to_ray`.
        ZooLiteError
            This RayXShards was released.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2, init_ray_on_spark=True)
        >>> XShards.partition(np.arange(4), num_shards=2).to_ray().collect()
        [array([0, 1]), array([2, 3])]
        """
        return [shard for partition in self._get(list(range(len(self._partitions)))) for shard in partition]

    def _get(self, positions: list[int]) -> list[list[Any]]:
        import ray

        refs = [self._partitions[p].ref for p in positions]
        try:
            return ray.get(refs, timeout=_GET_TIMEOUT_S)
        except (ray.exceptions.ObjectLostError, ray.exceptions.OwnerDiedError, ray.exceptions.ObjectFetchTimedOutError) as error:
            lost = self._lost_partitions(positions)
            raise PartitionLostError(
                f"partitions {lost} of this RayXShards are lost (the Ray node or owner holding them died); "
                "build it again from the SparkXShards with to_ray()"
            ) from error

    def _lost_partitions(self, positions: list[int]) -> list[int]:
        """The partitions of ``positions`` that cannot be fetched, within ``_LOST_CHECK_S`` in all
        (each later one gets 0.1 s once that is spent)."""
        import ray

        deadline = time.monotonic() + _LOST_CHECK_S
        lost = []
        for position in positions:
            try:
                ray.get(self._partitions[position].ref, timeout=max(0.1, deadline - time.monotonic()))
            except Exception:  # noqa: BLE001 - any failure to fetch means the partition is gone
                lost.append(self._partitions[position].index)
        return lost

    def assign_rows_to_actors(self, actors: Sequence[Any]) -> list[list[tuple[Any, int, int]]]:
        """Spread the rows over ``actors``: for each actor, a list of ``(object_ref, start, stop)``.

        zoo_lite's balanced form of :meth:`assign_partitions_to_actors` (which keeps Orca's
        whole-partition form).

        Each actor gets the same number of rows (within one), whole partitions on its own node
        first; partitions are cut when needed, including when there are fewer partitions than
        actors. Empty partitions are skipped. :meth:`assign_partition_ranges` also names the
        partition of each range.

        Parameters
        ----------
        actors : list of ray.actor.ActorHandle
            The actors to spread the rows over; where each runs is asked from it.

        Returns
        -------
        list of list of (ray.ObjectRef, int, int)
            For each actor, in the order of ``actors``, the rows ``start:stop`` of the
            partition objects it gets.

        Raises
        ------
        InvalidArgumentError
            ``actors`` is empty.
        ZooLiteError
            This RayXShards was released.

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
        >>> assigned = in_ray.assign_rows_to_actors([Worker.remote() for _ in range(3)])
        >>> [sum(stop - start for _, start, stop in slices) for slices in assigned]  # rows per actor
        [2, 2, 2]
        """
        return [[(ref, start, stop) for ref, _, start, stop in slices] for slices in self.assign_partition_ranges(actors)]

    def assign_partition_ranges(self, actors: Sequence[Any]) -> list[list[tuple[Any, int, int, int]]]:
        """As :meth:`assign_rows_to_actors`, with ``(object_ref, partition, start, stop)`` ranges.

        Parameters
        ----------
        actors : list of ray.actor.ActorHandle
            The actors to spread the rows over.

        Returns
        -------
        list of list of (ray.ObjectRef, int, int, int)
            For each actor, the partition index and rows ``start:stop`` of each range it gets.

        Raises
        ------
        InvalidArgumentError
            ``actors`` is empty.
        ZooLiteError
            This RayXShards was released.

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
        >>> ranges = in_ray.assign_partition_ranges([Worker.remote(), Worker.remote()])
        >>> [[(partition, start, stop) for _, partition, start, stop in slices] for slices in ranges]
        [[(0, 0, 3)], [(1, 0, 3)]]
        """
        if not actors:
            raise InvalidArgumentError("assign_rows_to_actors(actors=[]) needs at least one actor")
        return self._assign(actor_nodes(actors))

    def _assign(self, nodes: Sequence[Optional[str]]) -> list[list[tuple[Any, int, int, int]]]:
        ranges = partition_ops.assign_row_ranges(self.partition_rows(), self.partition_nodes(), nodes)
        return [[(self._partitions[index].ref, index, start, stop) for index, start, stop in worker] for worker in ranges]

    def transform_rows_with_actors(self, actors: Sequence[Any], func: Callable[[Any, list[Any]], Any]) -> "RayXShards":
        """Run ``func(actor_instance, shards)`` inside each actor on the rows assigned to it (see
        :meth:`assign_rows_to_actors`); each call's return value is the one shard of one
        partition of the result, which the driver owns. zoo_lite's balanced form of
        :meth:`transform_shards_with_actors` (which keeps Orca's per-partition form).

        Partition ``i`` of the result comes from ``actors[i]``; its rows are that actor's assigned
        ranges in order. Which rows an actor gets depends on where it runs (local partitions
        first), so the result's rows are in input order only when the assignment is.

        Parameters
        ----------
        actors : list of ray.actor.ActorHandle
            The actors to run ``func`` in, one call each.
        func : callable
            Called inside an actor as ``func(actor_instance, shards)``, with the list of shards
            (cut to the assigned rows) that actor got; returns the actor's result shard.

        Returns
        -------
        RayXShards
            ``len(actors)`` partitions of one shard each.

        Raises
        ------
        InvalidArgumentError
            ``actors`` is empty.
        ZooLiteError
            This RayXShards was released.

        Examples
        --------
        >>> import numpy as np, ray
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2, init_ray_on_spark=True)
        >>> in_ray = XShards.partition(np.arange(6), num_shards=2).to_ray()
        >>> @ray.remote(num_cpus=0)
        ... class Scaler:
        ...     factor = 10
        >>> scaled = in_ray.transform_rows_with_actors(
        ...     [Scaler.remote(), Scaler.remote()], lambda actor, shards: np.concatenate(shards) * actor.factor)
        >>> sorted(shard.tolist() for shard in scaled.collect())
        [[0, 10, 20], [30, 40, 50]]
        """
        import ray

        if not actors:
            raise InvalidArgumentError("transform_rows_with_actors(actors=[]) needs at least one actor")
        nodes = actor_nodes(actors)
        assigned = self._assign(nodes)
        with user_code_by_value():   # the user's function reaches actors on hosts without the user's project
            results = [actor.__ray_call__.remote(_apply_in_actor, func, slices) for actor, slices in zip(actors, assigned)]
        rows = ray.get([actor.__ray_call__.remote(_rows_of, [ref]) for actor, ref in zip(actors, results)], timeout=_GET_TIMEOUT_S)
        return self._held_results(results, nodes, rows)

    def _held_results(self, results: Sequence[Any], nodes: Sequence[Optional[str]], rows: Sequence[int]) -> "RayXShards":
        """A RayXShards of partition objects ``results`` (owned by the driver, which made the calls):
        an owner actor holds them too, so that Spark tasks can borrow them, as for to_ray()."""
        import ray

        from zoo_lite.context import ray_context_started_on_demand
        from zoo_lite.ray_on_spark.cluster import alive_ray_nodes

        named = _owners_on(ray_context_started_on_demand(), alive_ray_nodes())
        name, holder = next(iter(named.values()))
        tag = uuid.uuid4().hex
        ray.get([holder.hold.remote(tag, i, [ref]) for i, ref in enumerate(results)], timeout=_GET_TIMEOUT_S)
        partitions = [_Partition(i, ref, node or "", n, name, tag) for i, (ref, node, n) in enumerate(zip(results, nodes, rows))]
        return RayXShards(partitions, [holder], tag, self._spark_collection)

    # -- Orca's actor API: whole partitions, one call per partition -----------------------------

    @staticmethod
    def from_spark_xshards(spark_xshards: "SparkXShards") -> "RayXShards":
        """Orca's name for :meth:`SparkXShards.to_ray`: the partitions of ``spark_xshards`` put into
        Ray from the executors.

        Parameters
        ----------
        spark_xshards : SparkXShards
            The collection to move (it stays usable).

        Returns
        -------
        RayXShards
            One object per partition; Ray on Spark is started first if it is not running.

        Raises
        ------
        InvalidArgumentError
            ``spark_xshards`` is not a SparkXShards.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> from zoo_lite.data.ray_xshards import RayXShards
        >>> _ = init_orca_context(cores=2, init_ray_on_spark=True)
        >>> in_ray = RayXShards.from_spark_xshards(XShards.partition({"x": np.arange(4)}, num_shards=2))
        >>> in_ray.num_partitions(), len(in_ray)
        (2, 4)
        """
        to_ray = getattr(spark_xshards, "to_ray", None)
        if not callable(to_ray):  # duck-typed: importing SparkXShards here would make an import cycle
            raise InvalidArgumentError(
                f"RayXShards.from_spark_xshards(spark_xshards={type(spark_xshards).__name__} object) needs a SparkXShards, "
                "such as XShards.partition(data) or read_csv(path) returns"
            )
        return to_ray()

    def assign_partitions_to_actors(self, actors: Sequence[Any]) -> tuple[list[list[int]], list[str], list[Any]]:
        """Orca's assignment: whole partitions to actors, as evenly by count as possible, each
        partition to an actor on its own Ray node when one has room.

        With ``P`` partitions and ``A`` actors, the first ``P % A`` actors that fill up get
        ``P // A + 1`` partitions and the others ``P // A``. With fewer partitions than actors,
        the actors left without one are left out of the result (a warning suggests
        ``repartition``). Unlike Orca, the actors need no ``get_node_ip`` method: where each runs
        is asked from Ray. :meth:`assign_rows_to_actors` balances rows instead.

        Parameters
        ----------
        actors : list of ray.actor.ActorHandle
            The actors to spread the partitions over.

        Returns
        -------
        tuple of (list of list of int, list of str, list of ray.actor.ActorHandle)
            For each actor that got partitions, in the order of ``actors``: its partition
            indices (ascending), its node's IP address, and the actor itself.

        Raises
        ------
        InvalidArgumentError
            ``actors`` is empty.
        ZooLiteError
            This RayXShards was released.

        Examples
        --------
        >>> import numpy as np, ray
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2, init_ray_on_spark=True)
        >>> in_ray = XShards.partition(np.arange(10), num_shards=5).to_ray()
        >>> @ray.remote(num_cpus=0)
        ... class Worker:
        ...     pass
        >>> partitions, ips, assigned = in_ray.assign_partitions_to_actors([Worker.remote() for _ in range(3)])
        >>> partitions, len(ips), len(assigned)
        ([[0, 1], [2, 3], [4]], 3, 3)
        """
        if not actors:
            raise InvalidArgumentError("assign_partitions_to_actors(actors=[]) needs at least one actor")
        located = actor_nodes_and_ips(actors)
        if self.num_partitions() < len(actors):
            logging.getLogger(__name__).warning(
                "%d partitions for %d actors: %d actor(s) get no partition; repartition the XShards into at least %d "
                "partitions to use them all", self.num_partitions(), len(actors), len(actors) - self.num_partitions(),
                len(actors))
        assigned = assign_whole_partitions(self.partition_nodes(), [node for node, _ in located])
        kept = [i for i, partitions in enumerate(assigned) if partitions]
        return [assigned[i] for i in kept], [located[i][1] for i in kept], [actors[i] for i in kept]

    def transform_shards_with_actors(self, actors: Sequence[Any], func: Callable[[Any, Any], Any]) -> "RayXShards":
        """Orca's form: ``func(actor, partition_ref)`` is called on the driver for every partition
        with the actor it is assigned to (:meth:`assign_partitions_to_actors`), and returns the
        reference of the new partition, typically ``actor.method.remote(partition_ref)``.

        Ray passes a reference given directly as an argument to an actor method as its value, the
        partition's list of shards; the method returns the new list of shards. A ``func`` that
        returns a value instead of a reference has it put into Ray as the new partition.
        :meth:`transform_rows_with_actors` runs a function inside the actors on balanced rows instead.

        Parameters
        ----------
        actors : list of ray.actor.ActorHandle
            The actors to spread the partitions over.
        func : callable
            ``(actor, partition_ref) -> ray.ObjectRef`` of the new partition (a list of shards).

        Returns
        -------
        RayXShards
            As many partitions as this one, in the same order: partition ``i`` is the result of
            ``func`` for partition ``i``.

        Raises
        ------
        InvalidArgumentError
            ``actors`` is empty.
        ZooLiteError
            This RayXShards was released.

        Examples
        --------
        >>> import numpy as np, ray
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2, init_ray_on_spark=True)
        >>> in_ray = XShards.partition(np.arange(6), num_shards=3).to_ray()
        >>> @ray.remote(num_cpus=0)
        ... class AddOne:
        ...     def add_one(self, partition):
        ...         return [shard + 1 for shard in partition]
        >>> actors = [AddOne.remote(), AddOne.remote()]
        >>> result = in_ray.transform_shards_with_actors(actors, lambda actor, ref: actor.add_one.remote(ref))
        >>> result.collect()
        [array([1, 2]), array([3, 4]), array([5, 6])]
        """
        import ray

        partitions, _, assigned = self.assign_partitions_to_actors(actors)
        refs, nodes = self.object_refs(), self.partition_nodes()
        results: list[Any] = [None] * len(refs)
        for actor, indices in zip(assigned, partitions):
            for index in indices:
                result = func(actor, refs[index])
                results[index] = result if isinstance(result, ray.ObjectRef) else ray.put(result)
        count_rows = _count_rows_task()
        rows = ray.get([count_rows.remote(ref) for ref in results], timeout=_GET_TIMEOUT_S)
        return self._held_results(results, nodes, rows)

    def to_spark_xshards(self) -> "SparkXShards":
        """Back to a SparkXShards with the same partitions, read by Spark tasks from Ray.

        The result is lazy: its tasks read the objects when an action runs. It keeps this
        RayXShards (and its objects) alive until it and every SparkXShards derived from it through
        its methods are garbage-collected, even if this RayXShards is released or dropped first.

        Returns
        -------
        SparkXShards
            One partition per partition of this RayXShards, holding the same shards.

        Raises
        ------
        ZooLiteError
            This RayXShards was released, or was not made by :meth:`SparkXShards.to_ray`.
        PartitionReleasedError
            At an action: the objects were freed meanwhile (possible only through an RDD taken
            out with ``.rdd``, which keeps nothing alive).

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2, init_ray_on_spark=True)
        >>> back = XShards.partition(np.arange(6), num_shards=2).to_ray().to_spark_xshards()
        >>> back.transform_shard(np.negative).collect()  # the RayXShards lives on in back
        [array([ 0, -1, -2]), array([-3, -4, -5])]
        """
        from zoo_lite.context import OrcaContext, ray_context_started_on_demand

        if self._spark_collection is None:
            raise ZooLiteError("this RayXShards was not made by SparkXShards.to_ray(); build it with to_ray() to read it back")
        ray_context = ray_context_started_on_demand()
        sc = OrcaContext.get_spark_context()
        # tasks borrow each reference from its holder actor: a reference pickled into a Spark
        # closure would be serialised out of band, which Ray cannot track
        located = [(partition.holder, partition.tag, partition.index) for partition in self._partitions]
        fetch = _fetch_partition(_connection(ray_context))
        return self._spark_collection(sc.parallelize(located, max(1, len(located))).mapPartitions(fetch), (_Lease(self),))

    def release(self) -> None:
        """Free the partition objects (idempotent); this RayXShards cannot be used afterwards.

        While a SparkXShards from :meth:`to_spark_xshards`, or one derived from it, is still
        referenced, it may yet read the objects: then they are freed only when the last of those
        collections is garbage-collected (drop them with ``del``), and until then those
        collections keep working. This RayXShards itself raises ZooLiteError from now on.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2, init_ray_on_spark=True)
        >>> in_ray = XShards.partition(np.arange(4), num_shards=2).to_ray()
        >>> back = in_ray.to_spark_xshards()
        >>> in_ray.release()
        >>> in_ray.release()  # idempotent
        >>> back.collect()  # back still holds the objects; they go when back does
        [array([0, 1]), array([2, 3])]
        >>> in_ray.num_partitions()
        Traceback (most recent call last):
        ...
        zoo_lite.errors.ZooLiteError: this RayXShards was released and its objects freed; build it again with to_ray()
        """
        self._released = True
        if not self._leases:
            self._free()

    def _lease_ended(self) -> None:
        self._leases -= 1
        if self._released and not self._leases:
            self._free()

    def _free(self) -> None:
        """Make the owners forget this RayXShards' objects (idempotent)."""
        import ray

        owners, self._owners = self._owners, []
        self._parts, self._released = [], True   # the driver's own references go too
        if owners and ray.is_initialized():
            _forget(owners, self._tag)

    def __del__(self) -> None:
        try:
            self._free()   # no lease is left: each would hold this RayXShards
        except Exception:  # noqa: BLE001 - interpreter shutdown or Ray already gone
            pass

    def __repr__(self) -> str:
        if self._released:
            return "RayXShards(released)"
        return f"RayXShards(num_partitions={self.num_partitions()}, rows={len(self)})"


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

    return ray.get([actor.__ray_call__.remote(_node_and_ip_of) for actor in actors], timeout=_GET_TIMEOUT_S)


def _node_and_ip_of(_: Any) -> tuple[str, str]:
    import ray

    return ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address()


def _count_rows(partition: list[Any]) -> int:
    return partition_ops.partition_weight(partition)


def _count_rows_task() -> Any:
    """A zero-CPU Ray task counting the rows of a partition given by reference: Ray runs it where
    the partition is, so the data does not come to the driver."""
    import ray

    return ray.remote(num_cpus=0)(_count_rows)


def actor_nodes(actors: Sequence[Any]) -> list[Optional[str]]:
    """The Ray node id each actor runs on."""
    import ray

    return ray.get([actor.__ray_call__.remote(_node_id_of) for actor in actors], timeout=_GET_TIMEOUT_S)


def _node_id_of(_: Any) -> str:
    import ray

    return ray.get_runtime_context().get_node_id()


def _rows_of(_: Any, boxed: list[Any]) -> int:
    import ray

    return partition_ops.partition_weight(ray.get(boxed[0]))


def _apply_in_actor(instance: Any, func: Callable[[Any, list[Any]], Any], slices: list[tuple[Any, int, int, int]]) -> Any:
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

    partitions = ray.get([ref for ref, _, _, _ in slices], timeout=_GET_TIMEOUT_S)
    shards: list[Any] = []
    for partition, (_, _, start, stop) in zip(partitions, slices):
        shards.extend(partition_ops.slice_partition(partition, start, stop))
    return shards


def _fetch_partition(connection: tuple[str, str, list[dict[str, Any]], bool]) -> Callable[[Iterator[tuple[str, str, int]]], list[Any]]:
    def fetch(located: Iterator[tuple[str, str, int]]) -> list[Any]:
        import ray

        _connect_from_task(*connection)
        shards: list[Any] = []
        for holder_name, tag, index in located:
            holder = ray.get_actor(holder_name, namespace=_NAMESPACE)
            try:
                boxed = ray.get(holder.boxed.remote(tag, index), timeout=_GET_TIMEOUT_S)
            except PartitionReleasedError as error:  # a RayTaskError that is an instance of its cause
                raise getattr(error, "cause", error) from None  # the owner's error itself, without Ray's wrapping
            shards.extend(ray.get(boxed[0], timeout=_GET_TIMEOUT_S))
        return shards

    return raising_transportably(fetch)
