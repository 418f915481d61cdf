"""SparkXShards into Ray: one Spark job whose tasks put every partition into their own node's store.

:func:`spark_to_ray` is what ``SparkXShards.to_ray()`` calls. It starts (or finds) the owner actors
(:mod:`~zoo_lite.data.ray_xshards.owners`), runs the tasks of
:mod:`~zoo_lite.data.ray_xshards.spark_tasks`, and returns the :class:`RayXShards` of the objects.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Optional

from zoo_lite.data.ray_xshards.collection import Partition, RayXShards
from zoo_lite.data.ray_xshards.owners import forget, owners_on
from zoo_lite.data.ray_xshards.spark_tasks import put_partitions
from zoo_lite.data.ray_xshards.timeouts import GET_TIMEOUT_S
from zoo_lite.data.spark_jobs import run_job
from zoo_lite.errors import NoRayNodeError

if TYPE_CHECKING:
    from pyspark import RDD

    from zoo_lite.data.ray_xshards.collection import CollectionFactory
    from zoo_lite.ray_on_spark import RayContext

__all__ = ["spark_to_ray"]

def spark_to_ray(rdd: "RDD", spark_collection: "CollectionFactory", piece_bytes: Optional[int] = None) -> "RayXShards":
    """Put every partition of ``rdd`` (a SparkXShards' RDD) into Ray from the executors (see the
    package docstring); ``spark_collection`` is what the result's :meth:`RayXShards.to_spark_xshards`
    builds its SparkXShards with. With ``piece_bytes``, each partition goes in pieces of about that
    many bytes, each a partition of the result, in order (see
    :func:`~zoo_lite.data.ray_xshards.spark_tasks.put_partitions`).

    An executor that Spark registers on a host with no Ray node while the job runs (one given
    back after a loss, after the check for such hosts) fails its tasks with
    :class:`~zoo_lite.errors.NoRayNodeError`; the job then runs once more after a node was started
    there. Without a node to start (``num_ray_nodes`` below the executors) the error is raised."""
    from zoo_lite.context import ray_context_started_on_demand

    ray_context = ray_context_started_on_demand()
    nodes_before = {node["node_name"] for node in ray_context.nodes}
    try:
        return _put_into_ray(rdd, ray_context, spark_collection, piece_bytes)
    except NoRayNodeError as error:
        ray_context = ray_context_started_on_demand()   # starts nodes where an executor's host has none
        if {node["node_name"] for node in ray_context.nodes} <= nodes_before:
            raise
        logging.getLogger(__package__).warning(  # zoo_lite.data.ray_xshards, the name users filter by
            "a Spark executor joined on a host without a Ray node while data moved into Ray (%s); a node was started "
            "there and the partitions are put into Ray again", error)
        return _put_into_ray(rdd, ray_context, spark_collection, piece_bytes)


def _put_into_ray(rdd: "RDD", ray_context: "RayContext", spark_collection: "CollectionFactory",
                  piece_bytes: Optional[int]) -> "RayXShards":
    """One job that puts every partition of ``rdd`` into Ray, on ``ray_context``'s nodes."""
    import ray

    from zoo_lite.ray_on_spark.cluster import alive_ray_nodes

    alive_nodes = alive_ray_nodes()
    named_owners = owners_on(ray_context, alive_nodes)
    store_bytes = {node["NodeID"]: node["Resources"].get("object_store_memory", 0.0) for node in alive_nodes}
    owner_names = {node_id: name for node_id, (name, _) in named_owners.items()}
    owners = [owner for _, owner in named_owners.values()]
    tag = uuid.uuid4().hex
    try:
        num_partitions = rdd.getNumPartitions()
        put = put_partitions(ray_context, owner_names, store_bytes, tag, num_partitions, piece_bytes)
        placed = run_job(rdd.context, rdd.mapPartitionsWithIndex(put).collect)
        registered = ray.get([owner.registered.remote(tag) for owner in owners], timeout=GET_TIMEOUT_S)
        refs = {index: boxed[0] for by_index in registered for index, boxed in by_index.items()}
    except BaseException:
        forget(owners, tag)
        raise
    in_order = sorted(placed, key=lambda entry: (entry[0] % num_partitions, entry[0] // num_partitions))   # pieces after their partition's first
    partitions = [Partition(index, refs[index], node_id, rows, owner_names[node_id], tag) for index, node_id, rows in in_order]
    return RayXShards(partitions, owners, tag, spark_collection)
