"""Streaming inference: a stream of parquet files scored by a saved model, as a Spark SQL function.

1. trains a small PyTorch MLP on scikit-learn's digits (1797 8×8 images, 10 classes) with
   ``Estimator.from_torch`` and saves it with ``est.save`` (the model goes into the file by value);
2. builds the scoring function from the file alone, ``zoo_lite.learn.spark_udf(path, ...)``, as
   an inference job without the training code would;
3. writes the test rows as several parquet files into a folder, the way an upstream job drops
   files, and scores them with Structured Streaming: ``readStream`` → ``select(udf(...))`` →
   ``writeStream`` with a checkpoint (``trigger(availableNow=True)`` processes what is there and
   stops; drop ``trigger`` for a query that keeps running);
4. reads the scored files back and prints the accuracy.

Run: ``python examples/streaming_inference.py --output /tmp/stream`` (local Spark), or on a
cluster by changing one argument, e.g. ``--cluster-mode local-cluster``, or under spark-submit:
``scripts/spark-submit --master local[2] examples/streaming_inference.py --cluster-mode spark-submit``.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

from zoo_lite import OrcaContext, init_orca_context, stop_orca_context
from zoo_lite.data import XShards
from zoo_lite.learn import spark_udf
from zoo_lite.learn.pytorch import Estimator

SEED = 0


def digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The digits as float32 rows of 64 pixels in [0, 1], split 75/25."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    data = load_digits()
    x = (data.data / 16.0).astype(np.float32)
    return tuple(train_test_split(x, data.target, test_size=0.25, random_state=SEED))  # type: ignore[return-value]


def train_and_save(x: np.ndarray, y: np.ndarray, path: Path, epochs: int) -> str:
    """A small MLP trained data-parallel on the Ray workers, saved with its class by value."""
    torch.manual_seed(SEED)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    est = Estimator.from_torch(model=model, optimizer=torch.optim.Adam(model.parameters(), lr=0.01),
                               loss=nn.CrossEntropyLoss(), seed=SEED)
    est.fit(XShards.partition({"x": x, "y": y}, num_shards=2), epochs=epochs, batch_size=64)
    saved = est.save(str(path))
    est.shutdown()
    return saved


def drop_files(x: np.ndarray, y: np.ndarray, folder: Path, num_files: int) -> None:
    """The test rows as ``num_files`` parquet files, as an upstream job would drop them."""
    spark = OrcaContext.get_spark_session()
    frame = pd.DataFrame({"id": np.arange(len(y)), "pixels": list(x.astype(np.float64)), "label": y})
    for index, rows in enumerate(np.array_split(np.arange(len(frame)), num_files)):
        spark.createDataFrame(frame.iloc[rows]).coalesce(1).write.parquet(str(folder / f"batch-{index:02d}"))


def score_stream(model_path: str, source: Path, sink: Path, checkpoint: Path, timeout_s: float) -> None:
    """Score every file in ``source`` with the saved model; the results go to ``sink``."""
    spark = OrcaContext.get_spark_session()
    predict = spark_udf(model_path, batch_size=256, input_shapes=[(64,)])
    schema = spark.read.parquet(str(source / "batch-00")).schema
    stream = spark.readStream.schema(schema).option("recursiveFileLookup", "true").parquet(str(source))
    query = (stream.select("id", "label", predict("pixels").alias("scores"))
             .writeStream.format("parquet").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start(str(sink)))
    if not query.awaitTermination(timeout_s):
        query.stop()
        raise TimeoutError(f"the streaming query did not finish within {timeout_s:.0f} s")


def accuracy_of(sink: Path) -> tuple[int, float]:
    """Rows scored and the share whose highest score is the label, computed in Spark."""
    from pyspark.sql import functions as F

    scored = OrcaContext.get_spark_session().read.parquet(str(sink))
    predicted = F.array_position("scores", F.array_max("scores")) - 1
    row = scored.select(F.count("*").alias("rows"), F.avg((predicted == F.col("label")).cast("double")).alias("accuracy")).first()
    return int(row["rows"]), float(row["accuracy"])


def clear_previous_run(output: Path) -> None:
    """Remove what an earlier run of this example left in ``output`` (its own files only)."""
    output.mkdir(parents=True, exist_ok=True)
    (output / "digits_mlp.pt").unlink(missing_ok=True)
    for folder in ("incoming", "scored", "checkpoint"):
        shutil.rmtree(output / folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="/tmp/zoo_lite_streaming_inference", help="folder for the model, stream and results")
    parser.add_argument("--cluster-mode", default="local", help="local, local-cluster, standalone or spark-submit")
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--files", type=int, default=4, help="parquet files dropped into the stream's folder")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds the streaming query may take")
    args = parser.parse_args()
    output = Path(args.output).resolve()
    clear_previous_run(output)

    init_orca_context(cluster_mode=args.cluster_mode, cores=2, init_ray_on_spark=True)
    try:
        x_train, x_test, y_train, y_test = digits()
        model_path = train_and_save(x_train, y_train, output / "digits_mlp.pt", args.epochs)
        drop_files(x_test, y_test, output / "incoming", args.files)
        score_stream(model_path, output / "incoming", output / "scored", output / "checkpoint", args.timeout)
        rows, accuracy = accuracy_of(output / "scored")
        print(f"rows scored by the stream: {rows} of {len(y_test)}")
        print(f"stream accuracy: {accuracy:.3f}")
    finally:
        stop_orca_context()


if __name__ == "__main__":
    main()
