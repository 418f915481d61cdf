"""RayXShards: the partitions of an XShards held in Ray's object store, and what is done with them.

A RayXShards knows where each partition's object is (:class:`Partition`) and keeps the owner
actors that hold them (:mod:`~zoo_lite.data.ray_xshards.owners`); it spreads rows or whole
partitions over actors (:mod:`~zoo_lite.data.ray_xshards.actors`) and goes back to Spark lazily
(:meth:`RayXShards.to_spark_xshards`, read by the tasks of :mod:`~zoo_lite.data.ray_xshards.spark_tasks`).
:func:`~zoo_lite.data.ray_xshards.transfer.spark_to_ray` makes one.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from zoo_lite.data import partition_ops
from zoo_lite.data.ray_xshards.actors import (
    actor_nodes,
    actor_nodes_and_ips,
    apply_in_actor,
    assign_whole_partitions,
    count_rows_task,
    rows_of,
)
from zoo_lite.data.ray_xshards.errors import PartitionLostError
from zoo_lite.data.ray_xshards.owners import forget, owners_on
from zoo_lite.data.ray_xshards.spark_tasks import fetch_partition, task_connection
from zoo_lite.data.ray_xshards.timeouts import GET_TIMEOUT_S, LOST_CHECK_S
from zoo_lite.errors import InvalidArgumentError, ZooLiteError
from zoo_lite.user_code import user_code_by_value

if TYPE_CHECKING:
    from pyspark import RDD

    from zoo_lite.data.shard import SparkXShards

    #: builds the SparkXShards of an RDD that keeps the given objects alive (SparkXShards passes it
    #: in, so that this package needs SparkXShards for type hints only)
    CollectionFactory = Callable[[RDD, Sequence[Any]], SparkXShards]

__all__ = ["RayXShards", "Partition"]


@dataclass(frozen=True)
class Partition:
    """Where one partition of a RayXShards is: its object, node and rows, and the owner that holds it."""

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

    def __init__(self, partitions: Sequence[Partition], owners: Sequence[Any] = (), tag: str = "",
                 spark_collection: Optional["CollectionFactory"] = None) -> None:
        self._parts = list(partitions)
        self._owners = list(owners)
        self._tag = tag
        self._spark_collection = spark_collection
        self._released = False   # by the user: this handle cannot be used any more
        self._leases = 0         # live leases of SparkXShards reading the objects (see _Lease)

    @property
    def _partitions(self) -> list[Partition]:
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
            return ray.get(refs, timeout=GET_TIMEOUT_S)
        except (ray.exceptions.ObjectLostError, ray.exceptions.OwnerDiedError, ray.exceptions.ObjectFetchTimedOutError) as error:
            lost = self._lost_partitions(positions)
            raise PartitionLostError(
                f"partitions {lost} of this RayXShards are lost (the Ray node or owner holding them died); "
                "build it again from the SparkXShards with to_ray()"
            ) from error

    def _lost_partitions(self, positions: list[int]) -> list[int]:
        """The partitions of ``positions`` that cannot be fetched, within ``LOST_CHECK_S`` in all
        (each later one gets 0.1 s once that is spent)."""
        import ray

        deadline = time.monotonic() + LOST_CHECK_S
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
            results = [actor.__ray_call__.remote(apply_in_actor, func, slices) for actor, slices in zip(actors, assigned)]
        rows = ray.get([actor.__ray_call__.remote(rows_of, [ref]) for actor, ref in zip(actors, results)], timeout=GET_TIMEOUT_S)
        return self._held_results(results, nodes, rows)

    def _held_results(self, results: Sequence[Any], nodes: Sequence[Optional[str]], rows: Sequence[int]) -> "RayXShards":
        """A RayXShards of partition objects ``results`` (owned by the driver, which made the calls):
        an owner actor holds them too, so that Spark tasks can borrow them, as for to_ray()."""
        import ray

        from zoo_lite.context import ray_context_started_on_demand
        from zoo_lite.ray_on_spark.cluster import alive_ray_nodes

        named = owners_on(ray_context_started_on_demand(), alive_ray_nodes())
        name, holder = next(iter(named.values()))
        tag = uuid.uuid4().hex
        ray.get([holder.hold.remote(tag, i, [ref]) for i, ref in enumerate(results)], timeout=GET_TIMEOUT_S)
        partitions = [Partition(i, ref, node or "", n, name, tag) for i, (ref, node, n) in enumerate(zip(results, nodes, rows))]
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
            logging.getLogger(__package__).warning(  # zoo_lite.data.ray_xshards, the name users filter by
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
        count_rows = count_rows_task()
        rows = ray.get([count_rows.remote(ref) for ref in results], timeout=GET_TIMEOUT_S)
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
        fetch = fetch_partition(task_connection(ray_context))
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
            forget(owners, self._tag)

    def __del__(self) -> None:
        try:
            self._free()   # no lease is left: each would hold this RayXShards
        except Exception:  # noqa: BLE001 - interpreter shutdown or Ray already gone
            pass

    def __repr__(self) -> str:
        if self._released:
            return "RayXShards(released)"
        return f"RayXShards(num_partitions={self.num_partitions()}, rows={len(self)})"
