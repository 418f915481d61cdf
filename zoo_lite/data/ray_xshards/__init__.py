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

The modules, from the collection down:

- :mod:`~zoo_lite.data.ray_xshards.collection`: :class:`RayXShards`;
- :mod:`~zoo_lite.data.ray_xshards.transfer`: :func:`spark_to_ray`, the job that makes one;
- :mod:`~zoo_lite.data.ray_xshards.spark_tasks`: what that job's tasks, and those of
  ``to_spark_xshards()``, run on the executors;
- :mod:`~zoo_lite.data.ray_xshards.owners`: the owner actors;
- :mod:`~zoo_lite.data.ray_xshards.actors`: partitions and rows spread over actors;
- :mod:`~zoo_lite.data.ray_xshards.errors` and :mod:`~zoo_lite.data.ray_xshards.timeouts`.
"""

from zoo_lite.data.ray_xshards.actors import assign_whole_partitions, shards_of_ranges
from zoo_lite.data.ray_xshards.collection import RayXShards
from zoo_lite.data.ray_xshards.errors import ObjectStoreFullError, PartitionLostError, PartitionReleasedError
from zoo_lite.data.ray_xshards.owners import PartitionOwner
from zoo_lite.data.ray_xshards.transfer import spark_to_ray

__all__ = ["RayXShards", "PartitionLostError", "PartitionReleasedError", "ObjectStoreFullError", "shards_of_ranges",
           "assign_whole_partitions",
           # zoo_lite's own: SparkXShards.to_ray() calls spark_to_ray; the worker group tells the owners apart
           "spark_to_ray", "PartitionOwner"]
