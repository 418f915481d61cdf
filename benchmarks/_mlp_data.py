"""The data both training benchmarks (``bench_torch_fit.py``, ``bench_keras_fit.py``) use, so that
their figures are comparable: rows of 64 float features labelled by a fixed linear teacher."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["FEATURES", "CLASSES", "make_dataframe", "frame_arrays"]

FEATURES, CLASSES = 64, 10


def make_dataframe(spark: Any, rows: int) -> Any:
    """A cached frame of ``features: array<float>`` and ``label: int`` in 4 partitions; the label
    is a fixed linear teacher's argmax, so the task is learnable."""
    from pyspark.sql import functions as F

    teacher = np.random.default_rng(7).normal(size=(CLASSES, FEATURES))
    features = F.array(*[(F.rand(seed=i) * 2 - 1).cast("float") for i in range(FEATURES)])
    frame = spark.range(rows, numPartitions=4).select(features.alias("features"))
    scores = [sum(F.col("features")[j] * float(teacher[c, j]) for j in range(FEATURES)) for c in range(CLASSES)]
    best = F.greatest(*scores)
    label = F.coalesce(*[F.when(scores[c] == best, F.lit(c)) for c in range(CLASSES)]).cast("int")
    frame = frame.select("features", label.alias("label")).cache()
    frame.count()
    return frame


def frame_arrays(frame: Any) -> tuple[np.ndarray, np.ndarray]:
    """The frame's rows on the driver: ``x`` (float32, rows x FEATURES) and ``y`` (int64)."""
    table = frame.toArrow()
    x = table.column("features").combine_chunks().flatten().to_numpy().reshape(-1, FEATURES)
    return x.astype(np.float32), table.column("label").to_numpy().astype(np.int64)
