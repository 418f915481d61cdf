"""Distributed data: XShards and the pandas readers (``zoo_lite.data.pandas``)."""

from zoo_lite.data.shard import SparkXShards, XShards

__all__ = ["XShards", "SparkXShards"]
