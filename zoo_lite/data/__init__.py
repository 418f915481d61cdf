"""Distributed data: XShards, their partitions in Ray (:class:`RayXShards`), the columns a model is
fed (:class:`Columns`), values shared with every executor (:class:`SharedValue`), the pandas
readers (``zoo_lite.data.pandas``) and the image readers (``zoo_lite.data.image``)."""

from typing import TYPE_CHECKING

from zoo_lite.lazy_exports import lazy_exports

if TYPE_CHECKING:   # imported on first use (see zoo_lite.lazy_exports)
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

__getattr__, __dir__ = lazy_exports(__name__, __file__)
