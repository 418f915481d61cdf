"""The data the training benchmarks (``bench_torch_fit.py``, ``bench_keras_fit.py``,
``bench_recovery.py``) use, so that their figures are comparable: rows of 64 float features
labelled by a fixed linear teacher; and their Keras MLP."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["FEATURES", "CLASSES", "KERAS_LEARNING_RATE", "make_dataframe", "frame_arrays", "make_keras_mlp"]

FEATURES, CLASSES = 64, 10
KERAS_LEARNING_RATE = 0.05


def make_dataframe(spark: Any, rows: int, cached: bool = True) -> Any:
    """A frame of ``features: array<float>`` and ``label: int`` in 4 partitions, cached and
    computed unless not ``cached``; the label is a fixed linear teacher's argmax, so the task is
    learnable."""
    from pyspark.sql import functions as F

    teacher = np.random.default_rng(7).normal(size=(CLASSES, FEATURES))
    features = F.array(*[(F.rand(seed=i) * 2 - 1).cast("float") for i in range(FEATURES)])
    frame = spark.range(rows, numPartitions=4).select(features.alias("features"))
    scores = [sum(F.col("features")[j] * float(teacher[c, j]) for j in range(FEATURES)) for c in range(CLASSES)]
    best = F.greatest(*scores)
    label = F.coalesce(*[F.when(scores[c] == best, F.lit(c)) for c in range(CLASSES)]).cast("int")
    frame = frame.select("features", label.alias("label"))
    if cached:
        frame = frame.cache()
        frame.count()
    return frame


def frame_arrays(frame: Any) -> tuple[np.ndarray, np.ndarray]:
    """The frame's rows on the driver: ``x`` (float32, rows x FEATURES) and ``y`` (int64)."""
    table = frame.toArrow()
    x = table.column("features").combine_chunks().flatten().to_numpy().reshape(-1, FEATURES)
    return x.astype(np.float32), table.column("label").to_numpy().astype(np.int64)


def make_keras_mlp() -> Any:
    """The compiled Keras MLP FEATURES-128-128-CLASSES (SGD with momentum 0.9, sparse cross-entropy
    on logits), with the same initial weights on every call."""
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.Input(shape=(FEATURES,)),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dense(CLASSES),
    ])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=KERAS_LEARNING_RATE, momentum=0.9),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
