"""Distributed data: XShards, their partitions in Ray (:class:`RayXShards`), the columns a model is
fed (:class:`Columns`), values shared with every executor (:class:`SharedValue`), the pandas
readers (``zoo_lite.data.pandas``) and the image readers (``zoo_lite.data.image``)."""

from zoo_lite.data.convert import Columns
from zoo_lite.data.ray_xshards import ObjectStoreFullError, PartitionLostError, PartitionReleasedError, RayXShards
from zoo_lite.data.shard import SparkXShards, XShards
from zoo_lite.data.shared import SharedValue

__all__ = [
    "XShards",
    "SparkXShards",
    "RayXShards",
    "Columns",
    "PartitionLostError",
    "ObjectStoreFullError",
    "PartitionReleasedError",
    "SharedValue",
]
