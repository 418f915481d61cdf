"""The errors of partitions held in Ray: lost with their node, freed before a read, or too large for the store."""

from __future__ import annotations

from zoo_lite.errors import ZooLiteError

__all__ = ["PartitionLostError", "ObjectStoreFullError", "PartitionReleasedError"]


class PartitionLostError(ZooLiteError):
    """Partitions of a RayXShards are gone, e.g. because the Ray node holding them died."""


class ObjectStoreFullError(ZooLiteError):
    """A partition does not fit into the Ray object store."""


class PartitionReleasedError(ZooLiteError):
    """A Spark task read a partition of a RayXShards whose objects were freed already (e.g. through
    an RDD taken out of a SparkXShards with ``.rdd``, which keeps nothing alive)."""
