"""Transfer learning: a featuriser predicts in parallel, its features stay cached, a head trains on them.

1. holds scikit-learn's digits (1797 8×8 images, 10 classes) as pandas XShards with one 2-D image
   per row (a *tensor cell*), split into training and test rows;
2. runs a Keras featuriser over every image with ``predict``, in the Spark tasks that hold the
   rows. The featuriser is used for predict only, so it is not compiled. Here it is a fixed,
   seeded convolution; in practice it is a pretrained network with its head cut off;
3. caches the features (``cache()``), so that training and evaluating the head read them from
   memory instead of running the featuriser again; a Spark accumulator counts the rows the
   featuriser saw, and the program prints it: each row once;
4. trains a small Keras head on the features with ``Estimator.from_keras`` on the Ray workers
   (``feature_cols=["prediction"]``) and prints its test accuracy.

Run: ``python examples/transfer_learning.py`` (local Spark), or on a cluster by changing one
argument, e.g. ``--cluster-mode local-cluster``, or under spark-submit:
``scripts/spark-submit --master local[2] examples/transfer_learning.py --cluster-mode spark-submit``.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import pandas as pd

from zoo_lite import OrcaContext, init_orca_context, stop_orca_context
from zoo_lite.data import SparkXShards, XShards
from zoo_lite.learn.tf2 import Estimator

SEED = 0


def image_shards(num_shards: int) -> tuple[SparkXShards, SparkXShards]:
    """Training and test digits as pandas shards: an ``image`` column of 8×8 arrays and ``label``."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)
    x_train, x_test, y_train, y_test = train_test_split(images, digits.target, test_size=0.25, random_state=SEED)

    def shards(x: np.ndarray, y: np.ndarray) -> SparkXShards:
        return XShards.partition(pd.DataFrame({"image": list(x), "label": y}), num_shards=num_shards)

    return shards(x_train, y_train), shards(x_test, y_test)


def featuriser() -> Any:
    """A fixed convolution and pooling over each image: 8×8 pixels in, 144 features out."""
    import keras

    keras.utils.set_random_seed(SEED)
    return keras.Sequential([
        keras.Input(shape=(8, 8)),
        keras.layers.Reshape((8, 8, 1)),
        keras.layers.Conv2D(16, 3, activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Flatten(),
    ], name="featuriser")


def head(features: int) -> Any:
    """The part that learns: one softmax layer over the features."""
    import keras

    model = keras.Sequential([keras.Input(shape=(features,)), keras.layers.Dense(10, activation="softmax")], name="head")
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def counted(shards: SparkXShards, counter: Any) -> SparkXShards:
    """``shards``, adding each shard's rows to ``counter`` whenever the shard is computed."""

    def count(shard: pd.DataFrame) -> pd.DataFrame:
        counter.add(len(shard))
        return shard

    return shards.transform_shard(count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster-mode", default="local", help="local, local-cluster, standalone or spark-submit")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--shards", type=int, default=4)
    args = parser.parse_args()

    init_orca_context(cluster_mode=args.cluster_mode, cores=2, init_ray_on_spark=True)
    try:
        train, test = image_shards(args.shards)
        featuriser_rows = OrcaContext.get_spark_context().accumulator(0)
        extract = Estimator.from_keras(model=featuriser())
        # the featuriser runs in the Spark tasks; the features are kept for every later use
        train_features = extract.predict(counted(train, featuriser_rows), batch_size=256, feature_cols=["image"]).cache()
        test_features = extract.predict(counted(test, featuriser_rows), batch_size=256, feature_cols=["image"]).cache()
        width = len(train_features.collect()[0]["prediction"].iloc[0])
        classifier = Estimator.from_keras(model=head(width), seed=SEED)
        classifier.fit(train_features, epochs=args.epochs, batch_size=64, feature_cols=["prediction"], label_cols=["label"],
                       verbose=0)
        result = classifier.evaluate(test_features, batch_size=64, feature_cols=["prediction"], label_cols=["label"], verbose=0)
        classifier.shutdown()
        rows = len(train_features) + len(test_features)
        print(f"featuriser rows: {featuriser_rows.value} of {rows}")
        print(f"features per image: {width}")
        print(f"head test accuracy: {result['accuracy']:.3f}")
    finally:
        stop_orca_context()


if __name__ == "__main__":
    main()
