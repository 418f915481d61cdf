"""zoo_lite quickstart: distributed pandas preprocessing, PyTorch and Keras training on Spark, offline.

The pandas part:

1. writes a few CSV files built from scikit-learn's wine data set (178 wines, 3 cultivars);
2. reads them back with ``read_csv`` as pandas XShards;
3. adds derived columns with ``transform_shard``, partitions by cultivar, finds the unique
   cultivars and aggregates per cultivar;
4. prints a readable summary.

The PyTorch part:

5. splits scikit-learn's digits data set (1797 8×8 images, 10 classes) into training and test
   sets and makes the training set an XShards of ``{"x": ..., "y": ...}``;
6. trains a small MLP with ``Estimator.from_torch`` (Ray starts inside the Spark executors on
   first use), validating on the test set after every epoch;
7. predicts the test set held in a Spark DataFrame (which comes back with a ``prediction``
   column), computes the accuracy in Spark, and plots the loss per epoch to
   ``<output>/digits_loss.png``.

The Keras part:

8. trains the same kind of MLP, written in Keras 3, with ``Estimator.from_keras`` on the
   training set held in a Spark DataFrame (``feature_cols`` / ``label_cols``), validating on the
   test DataFrame;
9. predicts the test DataFrame and computes the accuracy in Spark, as for PyTorch.

Run it with ``scripts/demo.sh`` (local Spark), or on a cluster by changing one argument:
``python examples/quickstart.py --cluster-mode local-cluster`` or, under spark-submit,
``spark-submit examples/quickstart.py --cluster-mode spark-submit``.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from pyspark.sql import DataFrame
from torch import nn
from torchmetrics.classification import MulticlassAccuracy

from zoo_lite import OrcaContext, init_orca_context, stop_orca_context
from zoo_lite.data import XShards
from zoo_lite.data.pandas import read_csv
from zoo_lite.learn.pytorch import Estimator, TorchEstimator

CULTIVARS = np.array(["barolo", "grignolino", "barbera"])
SEED = 0
MIN_ACCURACY = 0.9


# -- pandas: the wine data -------------------------------------------------------------------------

def write_wine_csvs(folder: Path, num_files: int) -> int:
    """Write the wine data as ``num_files`` CSV files; return the number of rows written."""
    from sklearn.datasets import load_wine

    wine = load_wine(as_frame=True)
    frame = wine.frame.rename(columns={"od280/od315_of_diluted_wines": "od280_od315"})
    frame.insert(0, "cultivar", CULTIVARS[frame.pop("target").to_numpy()])
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    bounds = np.linspace(0, len(frame), num_files + 1).astype(int)
    for index in range(num_files):
        frame.iloc[bounds[index]:bounds[index + 1]].to_csv(folder / f"wine-{index:02d}.csv", index=False)
    return len(frame)


def add_features(df: pd.DataFrame, strong_alcohol: float) -> pd.DataFrame:
    """Two derived columns: a phenol ratio and whether the wine is strong."""
    df["phenol_ratio"] = df["flavanoids"] / df["total_phenols"]
    df["strong"] = df["alcohol"] >= strong_alcohol
    return df


def run_pandas_part(args: argparse.Namespace) -> None:
    """Read, transform, partition and aggregate the wine CSVs; print a summary."""
    started = time.perf_counter()
    csv_folder = args.output / "wine_csv"
    rows_written = write_wine_csvs(csv_folder, args.files)

    # --8<-- [start:pandas]
    shards = read_csv(str(csv_folder))
    shards = shards.transform_shard(add_features, 13.0)
    by_cultivar = shards.partition_by(cols="cultivar", num_partitions=3).cache()
    cultivars = sorted(by_cultivar["cultivar"].unique())
    summary = by_cultivar.group_by("cultivar", {"alcohol": "mean", "phenol_ratio": "mean", "strong": "sum"}).concat_to_pdf()
    rows_in_spark = by_cultivar.to_spark_df().count()
    # --8<-- [end:pandas]

    print("zoo_lite quickstart: pandas")
    print(f"  Spark master          : {OrcaContext.get_spark_context().master}")
    print(f"  CSV files read        : {args.files} ({rows_written} rows written)")
    print(f"  rows after transform  : {len(by_cultivar)} in {by_cultivar.num_partitions()} shards")
    print(f"  rows per shard        : {[len(shard) for shard in by_cultivar.collect()]}")
    print(f"  unique cultivars      : {cultivars}")
    print(f"  rows in Spark DataFrame: {rows_in_spark}")
    print("  per cultivar:")
    print(summary.sort_values("cultivar").round(3).to_string(index=False).replace("\n", "\n    ").join(["    ", ""]))
    print(f"  took {time.perf_counter() - started:.1f} s")
    by_cultivar.uncache()   # free the executors' memory before the training part
    if rows_in_spark != rows_written or len(cultivars) != len(CULTIVARS):
        raise SystemExit("quickstart: rows or cultivars were lost on the way")


# -- PyTorch: the digits data ----------------------------------------------------------------------

def digits_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``x_train, x_test, y_train, y_test``: pixels scaled to [0, 1] (float64), 25 % held out, stratified."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    pixels = digits.data / 16.0   # grey levels 0..16; inputs near [0, 1] train faster
    return train_test_split(pixels, digits.target, test_size=0.25, random_state=SEED, stratify=digits.target)


def digits_mlp() -> nn.Module:
    """64 pixels -> 64 hidden units -> 10 class scores (logits, as CrossEntropyLoss wants)."""
    return nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))


def digits_estimator() -> TorchEstimator:
    """The Estimator: Adam, cross-entropy, and accuracy aggregated over all workers."""
    # --8<-- [start:torch_estimator]
    torch.manual_seed(SEED)   # from_torch's seed seeds a model *creator*; this model is built here
    model = digits_mlp()
    return Estimator.from_torch(
        model=model,
        optimizer=torch.optim.Adam(model.parameters(), lr=0.01),
        loss=nn.CrossEntropyLoss(),
        # micro: the share of rows classified right (torchmetrics' default, macro, averages per class)
        metrics=[MulticlassAccuracy(num_classes=10, average="micro")],
        seed=SEED,
    )
    # --8<-- [end:torch_estimator]


def prediction_accuracy(predicted: DataFrame) -> float:
    """Share of rows whose highest class score is at the label's position, computed in Spark."""
    from pyspark.sql import functions as F

    # array_position is 1-based, class labels are 0-based
    predicted_class = F.expr("array_position(prediction, array_max(prediction)) - 1")
    return float(predicted.select(F.avg((predicted_class == F.col("label")).cast("double"))).first()[0])


def plot_losses(history: list[dict[str, Any]], path: Path) -> Path:
    """Save training and validation loss per epoch as a PNG; return its path."""
    import matplotlib

    matplotlib.use("Agg")   # no display needed (servers, CI); set before pyplot is imported
    from matplotlib import pyplot as plt

    epochs = [stats["epoch"] for stats in history]
    figure, axes = plt.subplots(figsize=(6, 4))
    axes.plot(epochs, [stats["train_loss"] for stats in history], marker="o", label="train")
    axes.plot(epochs, [stats["val_loss"] for stats in history], marker="o", label="validation")
    axes.set(xlabel="epoch", ylabel="cross-entropy loss", title="digits MLP on zoo_lite")
    axes.legend()
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def run_torch_part(args: argparse.Namespace) -> None:
    """Train the digits MLP on XShards, predict a Spark DataFrame, check the accuracy, plot the loss."""
    started = time.perf_counter()
    x_train, x_test, y_train, y_test = digits_split()
    # --8<-- [start:torch_data]
    train = XShards.partition({"x": x_train.astype(np.float32), "y": y_train})
    test = XShards.partition({"x": x_test.astype(np.float32), "y": y_test})
    # array<double> features, as Spark usually holds them; the Estimator casts them to the model's float32
    test_df = OrcaContext.get_spark_session().createDataFrame(pd.DataFrame({"pixels": list(x_test), "label": y_test}))
    # --8<-- [end:torch_data]

    est = digits_estimator()
    try:
        # --8<-- [start:torch_fit]
        history = est.fit(train, epochs=args.epochs, batch_size=64, validation_data=test)
        predicted = est.predict(test_df, batch_size=256, feature_cols=["pixels"])
        # --8<-- [end:torch_fit]
        accuracy = prediction_accuracy(predicted)
        workers = est.num_workers
    finally:
        est.shutdown()
    plot = plot_losses(history, args.output / "digits_loss.png")

    first, last = history[0], history[-1]
    print("zoo_lite quickstart: PyTorch")
    print(f"  training rows         : {len(x_train)} in {train.num_partitions()} shards, {workers} worker(s)")
    print(f"  epochs                : {len(history)} (global batch 64)")
    print(f"  train loss            : {first['train_loss']:.3f} -> {last['train_loss']:.3f}")
    print(f"  validation loss       : {first['val_loss']:.3f} -> {last['val_loss']:.3f}")
    print(f"  validation accuracy   : {last['val_MulticlassAccuracy']:.3f}")
    print(f"  predict columns       : {predicted.columns}")
    print(f"  test accuracy         : {accuracy:.3f} ({len(x_test)} rows, from the prediction column)")
    print(f"  loss plot             : {plot}")
    print(f"  took {time.perf_counter() - started:.1f} s")
    if accuracy < MIN_ACCURACY:
        raise SystemExit(f"quickstart: test accuracy {accuracy:.3f} is below {MIN_ACCURACY}")


# -- Keras: the same digits, from a Spark DataFrame -----------------------------------------------

def keras_digits_mlp() -> Any:
    """The Keras twin of :func:`digits_mlp`, compiled with Adam, cross-entropy on logits and accuracy."""
    import keras

    # --8<-- [start:keras_model]
    keras.utils.set_random_seed(SEED)
    model = keras.Sequential([keras.Input(shape=(64,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.Adam(0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    # --8<-- [end:keras_model]
    return model


def run_keras_part(args: argparse.Namespace) -> None:
    """Train the Keras MLP on a Spark DataFrame, predict the test DataFrame, check the accuracy."""
    from zoo_lite.learn.tf2 import Estimator as KerasEstimator

    started = time.perf_counter()
    x_train, x_test, y_train, y_test = digits_split()
    spark = OrcaContext.get_spark_session()
    train_df = spark.createDataFrame(pd.DataFrame({"pixels": list(x_train), "label": y_train}))
    test_df = spark.createDataFrame(pd.DataFrame({"pixels": list(x_test), "label": y_test}))

    est = KerasEstimator.from_keras(model=keras_digits_mlp(), seed=SEED)
    try:
        # --8<-- [start:keras_fit]
        history = est.fit(train_df, epochs=args.epochs, batch_size=64, feature_cols=["pixels"], label_cols=["label"],
                          validation_data=test_df, verbose=0)
        predicted = est.predict(test_df, batch_size=256, feature_cols=["pixels"])
        # --8<-- [end:keras_fit]
        accuracy = prediction_accuracy(predicted)
        workers = est.num_workers
    finally:
        est.shutdown()

    print("zoo_lite quickstart: Keras")
    print(f"  training rows         : {len(x_train)} in a Spark DataFrame, {workers} worker(s)")
    print(f"  epochs                : {len(history['loss'])} (global batch 64)")
    print(f"  train loss            : {history['loss'][0]:.3f} -> {history['loss'][-1]:.3f}")
    print(f"  validation accuracy   : {history['val_accuracy'][-1]:.3f}")
    print(f"  Keras test accuracy   : {accuracy:.3f} ({len(x_test)} rows, from the prediction column)")
    print(f"  took {time.perf_counter() - started:.1f} s")
    if accuracy < MIN_ACCURACY:
        raise SystemExit(f"quickstart: Keras test accuracy {accuracy:.3f} is below {MIN_ACCURACY}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster-mode", default="local", help="local, local-cluster, standalone, spark-submit, ...")
    parser.add_argument("--cores", type=int, default=None)
    parser.add_argument("--num-nodes", type=int, default=1)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "_output")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    started = time.perf_counter()
    # --8<-- [start:context]
    init_orca_context(cluster_mode=args.cluster_mode, cores=args.cores, num_nodes=args.num_nodes)
    # --8<-- [end:context]
    try:
        run_pandas_part(args)
        run_torch_part(args)
        run_keras_part(args)
        print(f"zoo_lite quickstart: done in {time.perf_counter() - started:.1f} s")
    finally:
        stop_orca_context()


if __name__ == "__main__":
    main()
