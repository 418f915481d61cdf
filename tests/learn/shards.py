"""XShards with chosen partition sizes, for the Estimator tests (importable by the workers)."""

from __future__ import annotations

import numpy as np

from zoo_lite import OrcaContext
from zoo_lite.data import SparkXShards


def shards_with_sizes(arrays: dict, sizes: list[int]) -> SparkXShards:
    """Dict shards, one per partition, with these row counts."""
    sc = OrcaContext.get_spark_context()
    bounds = np.cumsum([0, *sizes])
    def rows(value, i):
        if isinstance(value, tuple):
            return tuple(part[bounds[i]:bounds[i + 1]] for part in value)
        return value[bounds[i]:bounds[i + 1]]

    pieces = [{key: rows(value, i) for key, value in arrays.items()} for i in range(len(sizes))]
    return SparkXShards(sc.parallelize(pieces, len(pieces)))
