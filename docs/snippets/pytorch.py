"""Training with PyTorch, as docs/guides/pytorch.md shows it: every kind of input, callbacks,
checkpoints and resuming, metrics, evaluate, predict, save and load, and backend="spark".
Tiny data, 1 epoch per fit, 2 workers."""

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn
from torchmetrics.classification import MulticlassAccuracy

from zoo_lite import OrcaContext, init_orca_context

workdir = Path(tempfile.mkdtemp(prefix="zoo_lite-pytorch-"))
init_orca_context(cluster_mode="local", cores=2)

# 400 rows of 4 features; the class is which side of a plane a row lies on
rng = np.random.default_rng(0)
features = rng.normal(size=(400, 4)).astype(np.float32)
labels = (features @ np.array([1.0, -2.0, 0.5, 1.5]) > 0).astype(np.int64)

# --8<-- [start:estimator]
from zoo_lite.learn.pytorch import Estimator


def model_creator(config):  # an nn.Module instance works too
    hidden = config["hidden"]
    return nn.Sequential(nn.Linear(4, hidden), nn.ReLU(), nn.Linear(hidden, 2))


def optimizer_creator(model, config):  # or an optimizer instance
    return torch.optim.Adam(model.parameters(), lr=config["lr"])


est = Estimator.from_torch(
    model=model_creator,
    optimizer=optimizer_creator,
    loss=nn.CrossEntropyLoss(),
    metrics=[MulticlassAccuracy(num_classes=2, average="micro")],
    config={"hidden": 16, "lr": 0.05},
    num_workers=2,
    seed=0,
    model_dir=f"{workdir}/run",  # optional: a checkpoint after every epoch
)
# --8<-- [end:estimator]

# --8<-- [start:fit_xshards]
from zoo_lite.data import XShards

# dict shards of NumPy arrays
shards = XShards.partition({"x": features, "y": labels}, num_shards=2)
history = est.fit(shards, epochs=1, batch_size=32)
print(history[-1]["train_loss"])
# --8<-- [end:fit_xshards]
assert [stats["num_samples"] for stats in history] == [400]

# --8<-- [start:fit_dataframe]
spark = OrcaContext.get_spark_session()
frame = pd.DataFrame({"features": list(features.astype(np.float64)), "label": labels})
train_df, test_df = spark.createDataFrame(frame).randomSplit([0.8, 0.2], seed=0)

history = est.fit(train_df, epochs=1, batch_size=32,
                  feature_cols=["features"], label_cols=["label"],
                  validation_data=test_df)
# also: epoch, num_samples, train_loss, val_loss, epoch_time_s
print(history[-1]["val_MulticlassAccuracy"])
# --8<-- [end:fit_dataframe]
assert history[-1]["epoch"] == 2, history
assert {"train_loss", "val_loss", "val_MulticlassAccuracy", "epoch_time_s"} <= set(history[-1])

# --8<-- [start:fit_dataloader]
from torch.utils.data import DataLoader, TensorDataset

dataset = TensorDataset(torch.from_numpy(features), torch.from_numpy(labels))
# the loader's batch_size is the global batch
est.fit(DataLoader(dataset, batch_size=32, shuffle=True), epochs=1)


def train_loader_creator(config, batch_size):
    # runs on every worker; each must build the same dataset
    return DataLoader(dataset, batch_size=batch_size, shuffle=True)


est.fit(train_loader_creator, epochs=1, batch_size=32)
# --8<-- [end:fit_dataloader]

# --8<-- [start:evaluate_predict]
scores = est.evaluate(test_df, batch_size=64,
                      feature_cols=["features"], label_cols=["label"])
print(scores["MulticlassAccuracy"], scores["val_loss"])

# test_df's columns, and prediction: array<float>
predicted = est.predict(test_df, batch_size=64, feature_cols=["features"])
print(predicted.select("label", "prediction").toPandas().head())
# --8<-- [end:evaluate_predict]
assert scores["MulticlassAccuracy"] > 0.8, scores
assert predicted.columns == ["features", "label", "prediction"] and predicted.count() == test_df.count()


# --8<-- [start:callbacks]
from zoo_lite.learn.pytorch import Callback, ModelCheckpoint


class LossLog(Callback):
    """Appends each epoch's loss to a file: runs on every worker, writes on rank 0."""

    output_paths = ("path",)  # so the file lands at this path on the driver's host

    def __init__(self, path):
        self.path = path

    def after_train_epoch(self, runner):
        if runner.rank == 0:
            with open(self.path, "a") as log:
                log.write(f"{runner.epoch} {runner.epoch_stats['train_loss']:.4f}\n")


callbacks = [LossLog(f"{workdir}/losses.txt"), ModelCheckpoint(f"{workdir}/checkpoints")]
est.fit(shards, epochs=2, batch_size=32, callbacks=callbacks)
# --8<-- [end:callbacks]
assert len(Path(workdir, "losses.txt").read_text().splitlines()) == 2
assert Estimator.latest_checkpoint(f"{workdir}/checkpoints").endswith("epoch=6.ckpt")

# --8<-- [start:resume]
# the last epoch=<n>.ckpt in the folder
est.load_checkpoint(Estimator.latest_checkpoint(f"{workdir}/run"))
# goes on at the following epoch
history = est.fit(shards, epochs=1, batch_size=32)
# --8<-- [end:resume]
assert history[-1]["epoch"] == 7, history

# --8<-- [start:save_load]
# model, optimizer and epoch, written by the driver
path = est.save(f"{workdir}/model.pt")
# ends the workers; predict, save and load still work
est.shutdown()

again = Estimator.from_torch(model=model_creator, optimizer=optimizer_creator,
                             loss=nn.CrossEntropyLoss(), config={"hidden": 16, "lr": 0.05},
                             num_workers=2)
again.load(path)  # the workers get it when they start, at the next fit
# --8<-- [end:save_load]
for name, weights in est.get_model().state_dict().items():
    assert torch.equal(weights, again.get_model().state_dict()[name]), name
again.shutdown()

# --8<-- [start:backend_spark]
est = Estimator.from_torch(model=model_creator, optimizer=optimizer_creator,
                           loss=nn.CrossEntropyLoss(), config={"hidden": 16, "lr": 0.05},
                           backend="spark", num_workers=2, seed=0)
history = est.fit(train_df, epochs=1, batch_size=32,
                  feature_cols=["features"], label_cols=["label"])
# --8<-- [end:backend_spark]
assert history[-1]["num_samples"] == train_df.count(), history
est.shutdown()
