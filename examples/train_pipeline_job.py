"""A training job: preprocess → hand over in memory → PyTorch data-parallel training → test accuracy.

Written as a ``spark-submit`` job. It:

1. writes a synthetic classification data set (scikit-learn's ``make_classification``: 20
   features, 4 classes) as parquet files, standing in for an upstream table;
2. reads it as a Spark DataFrame and preprocesses it in Spark: a train/test split and
   standardised features (means and deviations from the training rows only), assembled into one
   array column;
3. hands the DataFrames straight to ``Estimator.from_torch(..., num_workers=2)``: the rows go
   from the executors to the Ray workers in memory, with no file in between, and the job trains
   on exactly two workers whatever the cluster looks like;
4. evaluates on the test rows and prints the accuracy.

Run: ``scripts/spark-submit --master local[2] examples/train_pipeline_job.py --cluster-mode spark-submit``,
or ``python examples/train_pipeline_job.py`` (local Spark).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pandas as pd
import torch
from torch import nn
from torchmetrics.classification import MulticlassAccuracy

from zoo_lite import OrcaContext, init_orca_context, stop_orca_context
from zoo_lite.learn.pytorch import Estimator

SEED = 0
FEATURES = 20
CLASSES = 4


def write_table(folder: Path, rows: int) -> None:
    """The upstream table: ``f0`` … ``f19`` and ``label``, as parquet."""
    from sklearn.datasets import make_classification

    x, y = make_classification(n_samples=rows, n_features=FEATURES, n_informative=12, n_classes=CLASSES,
                               class_sep=1.5, random_state=SEED)
    shutil.rmtree(folder, ignore_errors=True)
    frame = pd.DataFrame(x * 10 + 3, columns=[f"f{i}" for i in range(FEATURES)]).assign(label=y)
    OrcaContext.get_spark_session().createDataFrame(frame).repartition(4).write.parquet(str(folder))


def preprocess(folder: Path) -> tuple:
    """Train and test DataFrames with standardised ``features`` (array<double>) and ``label``."""
    from pyspark.sql import functions as F

    table = OrcaContext.get_spark_session().read.parquet(str(folder))
    train, test = table.randomSplit([0.8, 0.2], seed=SEED)
    names = [f"f{i}" for i in range(FEATURES)]
    stats = train.select(*[F.mean(c).alias(f"mean_{c}") for c in names], *[F.stddev(c).alias(f"std_{c}") for c in names]).first()

    def standardised(df):
        return df.select(F.array(*[(F.col(c) - stats[f"mean_{c}"]) / stats[f"std_{c}"] for c in names]).alias("features"),
                         "label")

    return standardised(train).cache(), standardised(test).cache()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="/tmp/zoo_lite_train_pipeline_job", help="folder for the upstream table")
    parser.add_argument("--cluster-mode", default="local", help="local, local-cluster, standalone or spark-submit")
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()

    init_orca_context(cluster_mode=args.cluster_mode, cores=2, init_ray_on_spark=True)
    try:
        write_table(Path(args.output) / "table", args.rows)
        train, test = preprocess(Path(args.output) / "table")
        torch.manual_seed(SEED)
        model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, CLASSES))
        est = Estimator.from_torch(model=model, optimizer=torch.optim.Adam(model.parameters(), lr=0.003),
                                   loss=nn.CrossEntropyLoss(), metrics=[MulticlassAccuracy(num_classes=CLASSES, average="micro")],
                                   seed=SEED, num_workers=2)
        history = est.fit(train, epochs=args.epochs, batch_size=128, feature_cols=["features"], label_cols=["label"])
        result = est.evaluate(test, batch_size=256, feature_cols=["features"], label_cols=["label"])
        print(f"trained on {est.num_workers} worker(s), {history[-1]['num_samples']} rows per epoch")
        print(f"final training loss: {history[-1]['train_loss']:.4f}")
        print(f"test accuracy: {result['MulticlassAccuracy']:.3f} on {result['num_samples']} rows")
        est.shutdown()
    finally:
        stop_orca_context()


if __name__ == "__main__":
    main()
