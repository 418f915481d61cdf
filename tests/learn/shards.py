"""Helpers of the Estimator tests: XShards with chosen partition sizes (importable by the workers), prediction checks."""

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


def checked_digit_predictions(predicted, test) -> float:
    """The accuracy of ``predict``'s output for the digits test frame, after checking that it kept
    every column and row in order; at least 0.9."""
    assert predicted.columns == test.columns + ["prediction"]
    rows = predicted.toPandas()
    assert rows["id"].tolist() == test.toPandas()["id"].tolist()
    accuracy = float((np.stack(rows["prediction"]).argmax(axis=1) == rows["label"]).mean())
    assert accuracy >= 0.9
    return accuracy
