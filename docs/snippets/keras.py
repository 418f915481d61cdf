"""Training with Keras 3, as docs/guides/keras.md shows it: every kind of input, callbacks,
checkpoints and resuming, metrics, evaluate, predict, save and load.
Tiny data, 1 epoch per fit, 2 workers."""

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from zoo_lite import OrcaContext, init_orca_context

workdir = Path(tempfile.mkdtemp(prefix="zoo_lite-keras-"))
init_orca_context(cluster_mode="local", cores=2)

# 400 rows of 4 features; the class is which side of a plane a row lies on
rng = np.random.default_rng(0)
features = rng.normal(size=(400, 4)).astype(np.float32)
labels = (features @ np.array([1.0, -2.0, 0.5, 1.5]) > 0).astype(np.int64)

# --8<-- [start:estimator]
# import it before keras: it keeps TensorFlow's start-up lines quiet
from zoo_lite.learn.tf2 import Estimator
import keras

model = keras.Sequential([
    keras.Input(shape=(4,)),
    keras.layers.Dense(16, activation="relu"),
    keras.layers.Dense(2),
])
model.compile(optimizer=keras.optimizers.Adam(0.05),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
est = Estimator.from_keras(
    model=model,
    num_workers=2,
    seed=0,
    model_dir=f"{workdir}/run",  # optional: a checkpoint after every epoch
)
# --8<-- [end:estimator]

# --8<-- [start:fit_xshards]
from zoo_lite.data import XShards

# dict shards of NumPy arrays
shards = XShards.partition({"x": features, "y": labels}, num_shards=2)
history = est.fit(shards, epochs=1, batch_size=32, verbose=0)
print(history["loss"])  # Keras' History form: one value per epoch
# --8<-- [end:fit_xshards]
assert len(history["loss"]) == 1 and len(history["accuracy"]) == 1, history

# --8<-- [start:fit_dataframe]
spark = OrcaContext.get_spark_session()
frame = pd.DataFrame({"features": list(features.astype(np.float64)), "label": labels})
train_df, test_df = spark.createDataFrame(frame).randomSplit([0.8, 0.2], seed=0)

# epochs initial_epoch .. epochs - 1, as in Keras
history = est.fit(train_df, epochs=2, initial_epoch=1, batch_size=32,
                  feature_cols=["features"], label_cols=["label"],
                  validation_data=test_df, verbose=0)
print(history["val_accuracy"])
# --8<-- [end:fit_dataframe]
assert set(history) == {"loss", "accuracy", "val_loss", "val_accuracy"}, history

# --8<-- [start:fit_dataset]
import tensorflow as tf

# unbatched: zoo_lite batches it and gives each worker its share
dataset = tf.data.Dataset.from_tensor_slices((features, labels)).shuffle(400)
est.fit(dataset, epochs=3, initial_epoch=2, batch_size=32, verbose=0)


def dataset_creator(config, batch_size):
    # runs on every worker; each must build the same dataset
    dataset = tf.data.Dataset.from_tensor_slices((features, labels))
    return dataset.shuffle(400).batch(batch_size)


est.fit(dataset_creator, epochs=4, initial_epoch=3, batch_size=32, verbose=0)
# --8<-- [end:fit_dataset]

# --8<-- [start:evaluate_predict]
scores = est.evaluate(test_df, batch_size=64, verbose=0,
                      feature_cols=["features"], label_cols=["label"])
print(scores["accuracy"], scores["loss"])

# test_df's columns, and prediction: array<float>
predicted = est.predict(test_df, batch_size=64, feature_cols=["features"])
print(predicted.select("label", "prediction").toPandas().head())
# --8<-- [end:evaluate_predict]
assert scores["accuracy"] > 0.8, scores
assert predicted.columns == ["features", "label", "prediction"]

# --8<-- [start:callbacks]
callbacks = [
    # steers training: runs on every worker
    keras.callbacks.EarlyStopping(patience=2, restore_best_weights=True),
    # write files: run on rank 0, the files land on the driver's host
    keras.callbacks.CSVLogger(f"{workdir}/log.csv"),
    keras.callbacks.ModelCheckpoint(f"{workdir}/best.keras", save_best_only=True),
]
history = est.fit(train_df, epochs=6, initial_epoch=4, batch_size=32,
                  feature_cols=["features"], label_cols=["label"],
                  validation_data=test_df, callbacks=callbacks, verbose=0)
# --8<-- [end:callbacks]
assert len(Path(workdir, "log.csv").read_text().splitlines()) == 1 + len(history["loss"])
assert Path(workdir, "best.keras").is_file()

# --8<-- [start:resume]
# the last epoch=<n>.ckpt in the folder: the model, its optimizer and the epoch
est.load_checkpoint(Estimator.latest_checkpoint(f"{workdir}/run"))
est.fit(shards, epochs=7, initial_epoch=6, batch_size=32, verbose=0)
# --8<-- [end:resume]

# --8<-- [start:save_load]
# Keras' .keras file: the model, its compile config and optimizer state
est.save(f"{workdir}/model.keras")
# ends the workers; predict, save and load still work
est.shutdown()

again = Estimator.from_keras(model=model, num_workers=2)
again.load(f"{workdir}/model.keras")  # the workers rebuild it at their next use
# --8<-- [end:save_load]
for mine, theirs in zip(est.get_model().get_weights(), again.get_model().get_weights()):
    np.testing.assert_array_equal(mine, theirs)
again.shutdown()
