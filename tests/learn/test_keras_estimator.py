"""The Keras 3 Estimator on real Spark (local-cluster, two executors), real Ray and CPU TensorFlow:
two workers under MultiWorkerMirroredStrategy."""

from __future__ import annotations

import csv
import glob
import os
import sys
import tempfile
import time

import keras
import numpy as np
import pandas as pd
import pytest
import ray
import tensorflow as tf

from tests.learn import keras_models
from tests.learn.conftest import shared_estimator_fixtures
from tests.learn.shards import checked_digit_predictions, shards_with_sizes
from zoo_lite.data import XShards
from zoo_lite.errors import ColumnNotFoundError, InvalidArgumentError, WorkerError
from zoo_lite.learn.base.steps import held_rows_batches
from zoo_lite.learn.tf2 import Estimator, WorkerConfig
from zoo_lite.learn.tf2.predict import autograph_modules, predict_arrays, remove_autograph_files
from zoo_lite.learn.tf2.specs import model_from_bytes, state_from_bytes

pytestmark = pytest.mark.timeout(600)


def linear_estimator(**options):
    return Estimator.from_keras(model_creator=keras_models.linear_model, seed=0, **options)


_shared_linear, linear = shared_estimator_fixtures(linear_estimator)


def regression_shards(rows: int, sizes: list[int]):
    x, y = keras_models.regression_rows(rows)
    return shards_with_sizes({"x": x, "y": y}, sizes)


# -- exact semantics ------------------------------------------------------------------------------

def bias_free_model(lr: float):
    model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(1, use_bias=False)])
    model.compile(optimizer=keras.optimizers.SGD(lr), loss="mse")
    return model


def one_process_descent(w: np.ndarray, x: np.ndarray, y: np.ndarray, lr: float, batches: list[np.ndarray]) -> np.ndarray:
    """Single-process SGD on the mean squared error over ``batches`` of row indices (float64)."""
    w = w.astype(np.float64)
    for rows in batches:
        residual = x[rows] @ w - y[rows]
        w = w - lr * 2.0 * x[rows].T @ residual / len(rows)
    return w


def full_batch_losses(w: np.ndarray, x: np.ndarray, y: np.ndarray, lr: float, epochs: int) -> list[float]:
    """The loss Keras logs for each epoch of full-batch descent: the mean squared error at the
    weights each epoch's one step starts from."""
    losses = []
    for _ in range(epochs):
        losses.append(float(np.mean((x.astype(np.float64) @ w.astype(np.float64) - y) ** 2)))
        w = one_process_descent(w, x, y, lr, [np.arange(len(x))])
    return losses


def exact_data(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(8, 3)).astype(np.float32), rng.normal(size=(8, 1)).astype(np.float32)


#: both ways of summing gradients between the two workers (on one host, shared memory is the default)
EXCHANGES = pytest.mark.parametrize("exchange", ["shared_memory", "collective"])


def exchange_config(exchange: str) -> WorkerConfig:
    return WorkerConfig(shared_memory_exchange=exchange == "shared_memory")


@EXCHANGES
def test_two_workers_on_uneven_partitions_equal_one_process_full_batch_descent(two_workers, exchange) -> None:
    x, y = exact_data(7)
    model = bias_free_model(0.05)
    start = model.get_weights()[0]
    est = Estimator.from_keras(model=model, seed=1, worker_config=exchange_config(exchange))
    assert est.num_workers == 2
    history = est.fit(shards_with_sizes({"x": x, "y": y}, [3, 5]), epochs=4, batch_size=8, verbose=0)
    assert est._group.call(lambda runner: runner.exchange_kind()) == [exchange, exchange]
    expected = one_process_descent(start, x, y, 0.05, [np.arange(8)] * 4)
    np.testing.assert_allclose(est.get_model().get_weights()[0], expected, atol=1e-5, rtol=0)
    # the logged losses are exactly those of the one process (a check that they fall can flip once converged)
    np.testing.assert_allclose(history["loss"], full_batch_losses(start, x, y, 0.05, 4), rtol=1e-5)
    est.shutdown()


def test_gradients_taken_slice_by_slice_equal_one_process_full_batch_descent(two_workers) -> None:
    """Shares of 3 and 5 rows differentiated in slices of 2 rows (as large batches are, in slices
    of 1024): the same steps as one process."""
    x, y = exact_data(8)
    model = bias_free_model(0.05)
    start = model.get_weights()[0]
    est = Estimator.from_keras(model=model, seed=1, worker_config=WorkerConfig(gradient_chunk_rows=2))
    est.fit(shards_with_sizes({"x": x, "y": y}, [3, 5]), epochs=4, batch_size=8, verbose=0)
    assert est._group.call(lambda runner: runner._gradient_chunk_rows()) == [2, 2]
    np.testing.assert_allclose(est.get_model().get_weights()[0], one_process_descent(start, x, y, 0.05, [np.arange(8)] * 4),
                               atol=1e-5, rtol=0)
    est.evaluate(shards_with_sizes({"x": x, "y": y}, [3, 5]), batch_size=8)
    # compiled without autograph, as Keras' own fit compiles its steps: its rewrite cost a new worker ~1 s
    assert est._group.call(lambda runner: autograph_converted_steps()) == [[], []]
    est.shutdown()


#: the runner's compiled functions, as autograph names them once it has rewritten them
RUNNER_STEPS = {f"tf__{name}" for name in ("local_gradients", "rows_gradients", "whole_step", "apply", "eval_step", "forward_only")}


def autograph_converted_steps() -> list[str]:
    """The runner's compiled functions that autograph rewrote in this process: the names of the
    code objects in the modules autograph generated (their files may be gone)."""
    def code_names(code) -> set[str]:
        nested = [const for const in code.co_consts if hasattr(const, "co_consts")]
        return {code.co_name}.union(*(code_names(const) for const in nested))

    found = set()
    for name in autograph_modules():
        for value in vars(sys.modules[name]).values():
            if hasattr(value, "__code__"):
                found |= code_names(value.__code__)
    return sorted(found & RUNNER_STEPS)


def worker_weights(est) -> list[list[np.ndarray]]:
    """Every worker's model weights, trainable and not (read from the state each worker sends)."""
    return [model_from_bytes(state_from_bytes(blob)[0]).get_weights() for blob in est._group.call(lambda runner: runner.get_state())]


def test_batch_normalisation_statistics_are_averaged_so_every_worker_holds_the_driver_model(two_workers) -> None:
    """A BatchNormalization model is differentiated whole (its batch statistics need the rows seen
    together). Each worker updates the moving statistics from its own share; they are averaged
    after every epoch, so the workers hold one model, the driver's, and evaluate on the workers
    gives what Keras gives with the driver's copy."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input(shape=(2,)), keras.layers.BatchNormalization(), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    est = Estimator.from_keras(model=model, seed=0, worker_config=WorkerConfig(gradient_chunk_rows=2))
    x, y = keras_models.regression_rows(200)
    data = shards_with_sizes({"x": x, "y": y}, [80, 120])
    history = est.fit(data, epochs=5, batch_size=40, verbose=0)
    assert est._group.call(lambda runner: runner._gradient_chunk_rows()) == [None, None]
    assert history["loss"][-1] < 0.5 * history["loss"][0]
    first, second = worker_weights(est)
    for mine, theirs, driver in zip(first, second, est.get_model().get_weights()):
        np.testing.assert_array_equal(mine, theirs)
        np.testing.assert_array_equal(mine, driver)
    expected = est.get_model().evaluate(x, y, batch_size=40, verbose=0, return_dict=True)["loss"]
    assert est.evaluate(data, batch_size=40)["loss"] == pytest.approx(expected, rel=1e-5)
    est.shutdown()


@EXCHANGES
def test_two_workers_on_shuffled_mini_batches_equal_one_process_on_the_same_global_batches(two_workers, exchange) -> None:
    """Steps of 2 rows over partitions of 1 and 7 rows: a worker's share is often empty."""
    x, y = exact_data(3)
    model = bias_free_model(0.1)
    start = model.get_weights()[0]
    est = Estimator.from_keras(model=model, seed=4, worker_config=exchange_config(exchange))
    est.fit(shards_with_sizes({"x": x, "y": y}, [1, 7]), epochs=3, batch_size=2, verbose=0)
    assert est._group.call(lambda runner: runner.exchange_kind()) == [exchange, exchange]
    batches = [rows for epoch in range(3) for rows in held_rows_batches([1, 7], [(0, 0, 1), (1, 0, 7)], 2, True, 4, epoch)]
    np.testing.assert_allclose(est.get_model().get_weights()[0], one_process_descent(start, x, y, 0.1, batches),
                               atol=1e-5, rtol=0)
    est.shutdown()


def test_a_shuffled_tf_data_dataset_object_is_split_so_each_element_is_used_once_per_epoch(two_workers) -> None:
    """Full-batch descent over a shuffled, mapped, batched Dataset object equals one process's:
    any element lost or used twice by the split over the workers would change the gradient."""
    x, y = exact_data(5)
    model = bias_free_model(0.05)
    start = model.get_weights()[0]
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(8).map(lambda a, b: (a * 2.0, b)).batch(8)
    est = Estimator.from_keras(model=model, seed=2)
    est.fit(dataset, epochs=3, verbose=0)
    expected = one_process_descent(start, x * 2.0, y, 0.05, [np.arange(8)] * 3)
    np.testing.assert_allclose(est.get_model().get_weights()[0], expected, atol=1e-5, rtol=0)
    est.shutdown()


def test_a_fixed_seed_gives_the_same_model_twice(two_workers) -> None:
    shards = regression_shards(40, [10, 30])
    weights = []
    for _ in range(2):
        est = linear_estimator()
        est.fit(shards, epochs=2, batch_size=8, verbose=0)
        weights.append(est.get_model().get_weights())
        est.shutdown()
    for first, second in zip(*weights):
        np.testing.assert_array_equal(first, second)


def test_a_loss_with_several_values_per_row_is_logged_as_keras_logs_it(two_workers) -> None:
    """Keras averages over every value a loss gives (here 3 per row). With a learning rate of 0 the
    weights stay put, so fit's training and validation logs and evaluate all equal Keras' own
    evaluate of the same model."""
    x, _ = keras_models.regression_rows(40)
    y = np.stack([x[:, 0], x[:, 1], x.sum(axis=1)], axis=1).astype(np.float32)
    est = Estimator.from_keras(model_creator=keras_models.three_wide_model, config={"lr": 0.0}, seed=0)
    data = shards_with_sizes({"x": x, "y": y}, [15, 25])
    history = est.fit(data, epochs=1, batch_size=8, validation_data=data, verbose=0)
    expected = est.get_model().evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
    evaluated = est.evaluate(data, batch_size=8)
    for name in ("loss", "mae"):
        assert history[name][0] == pytest.approx(expected[name], rel=1e-5), name
        assert history[f"val_{name}"][0] == pytest.approx(expected[name], rel=1e-5), name
        assert evaluated[name] == pytest.approx(expected[name], rel=1e-5), name
    est.shutdown()


# -- digits, end to end ---------------------------------------------------------------------------

def test_digits_from_a_spark_dataframe_reaches_90_percent_and_predicts_every_row_in_order(digits_frames) -> None:
    train, test = digits_frames
    est = Estimator.from_keras(model_creator=keras_models.digits_mlp, config={"lr": 0.2, "hidden": 64}, seed=0)
    history = est.fit(train, epochs=12, batch_size=64, feature_cols=["features"], label_cols=["label"],
                      validation_data=test, verbose=0)
    assert set(history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert history["loss"][-1] < 0.3 * history["loss"][0], history["loss"]   # 1.90 to 0.17 when measured

    accuracy = checked_digit_predictions(est.predict(test, batch_size=128, feature_cols=["features"]), test)
    # the metrics are summed exactly over both workers: they equal the accuracy of all predictions
    evaluated = est.evaluate(test, batch_size=64, feature_cols=["features"], label_cols=["label"])
    assert evaluated["accuracy"] == pytest.approx(accuracy, abs=1e-6)
    assert history["val_accuracy"][-1] == pytest.approx(accuracy, abs=1e-6)
    named = est.predict(test, feature_cols=["features"], output_cols=["logits"])
    assert named.columns == test.columns + ["logits"]
    est.shutdown()


def test_double_columns_feed_a_float32_model_and_predict_keeps_every_column(two_workers, linear) -> None:
    x, y = keras_models.regression_rows(60)
    pdf = pd.DataFrame({"a": x[:, 0].astype(np.float64), "b": x[:, 1].astype(np.float64), "y": y.astype(np.float64)})
    df = two_workers.createDataFrame(pdf.assign(x=list(x.astype(np.float64))))
    est = linear
    history = est.fit(df, epochs=30, batch_size=16, feature_cols=["x"], label_cols=["y"], verbose=0)
    assert history["loss"][-1] < 0.05 * history["loss"][0]
    predicted = est.predict(df, feature_cols=["x"])
    assert predicted.columns == df.columns + ["prediction"]
    assert predicted.schema["prediction"].dataType.simpleString() == "float"
    assert predicted.count() == 60


# -- every input kind -----------------------------------------------------------------------------

def _input_kinds(spark):
    x, y = keras_models.regression_rows(64)
    pdf = pd.DataFrame({"x": list(x), "y": y})
    return {
        "dict xshards": (shards_with_sizes({"x": x, "y": y}, [20, 44]), {}),
        "pandas xshards": (XShards.partition(pdf, num_shards=3), {"feature_cols": ["x"], "label_cols": "y"}),
        "spark dataframe": (spark.createDataFrame(pd.DataFrame({"x": list(x.astype(np.float64)), "y": y})),
                            {"feature_cols": ["x"], "label_cols": ["y"]}),
        "unbatched tf.data": (tf.data.Dataset.from_tensor_slices((x, y)).shuffle(64), {}),
        "batched tf.data": (tf.data.Dataset.from_tensor_slices((x, y)).batch(16).prefetch(2), {}),
        "creator (config, batch_size)": (keras_models.dataset_creator, {}),
        "creator (config)": (keras_models.dataset_creator_guide_form, {}),
        "creator with Python ops": (keras_models.python_dataset_creator, {}),
    }


def test_every_data_input_kind_trains_and_evaluates(two_workers, linear, tmp_path) -> None:
    est = linear
    start = str(tmp_path / "start.weights.h5")
    est.save_weights(start)
    for name, (data, columns) in _input_kinds(two_workers).items():
        est.load_weights(start)   # every kind trains from the same start
        before = est.evaluate(data, batch_size=16, **columns)["loss"]
        history = est.fit(data, epochs=8, batch_size=16, verbose=0, **columns)
        assert len(history["loss"]) == 8, name
        # far below where each kind starts (about 2.2 to 2e-4, and 3.4 to 7e-5, when measured), near y = 1.5 a - 2 b
        assert history["loss"][-1] < 1e-2 * history["loss"][0], (name, history["loss"])
        assert est.evaluate(data, batch_size=16, **columns)["loss"] < 1e-3 * before, name
        np.testing.assert_allclose(est.get_model().get_weights()[0][:, 0], [1.5, -2.0], atol=0.05, err_msg=name)


@pytest.mark.parametrize("sizes", [[30], [0, 30, 0], [29, 1]], ids=["one partition", "empty partitions", "a 1-row partition"])
def test_fewer_or_empty_partitions_than_workers_still_train(two_workers, linear, sizes) -> None:
    history = linear.fit(regression_shards(30, sizes), epochs=3, batch_size=4, verbose=0)
    assert history["loss"][-1] < 0.3 * history["loss"][0], history["loss"]   # about 1.2 to 0.08 when measured
    assert linear.evaluate(regression_shards(30, sizes), batch_size=4)["loss"] == pytest.approx(
        float(np.mean((linear.get_model().predict(keras_models.regression_rows(30)[0], verbose=0)[:, 0]
                       - keras_models.regression_rows(30)[1]) ** 2)), rel=1e-4)


def test_multi_input_models_take_one_input_per_feature_column(two_workers) -> None:
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(30, 2)).astype(np.float32), rng.normal(size=(30,)).astype(np.float32)
    y = (a.sum(axis=1) + b).astype(np.float32)
    first, second = keras.Input(shape=(2,)), keras.Input(shape=(1,))
    model = keras.Model([first, second], keras.layers.Dense(1)(keras.layers.Concatenate()([first, second])))
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    est = Estimator.from_keras(keras_model=model, seed=0)
    history = est.fit(shards_with_sizes({"x": (a, b[:, None]), "y": y}, [12, 18]), epochs=20, batch_size=10, verbose=0)
    assert history["loss"][-1] < 0.1 * history["loss"][0]
    df = two_workers.createDataFrame(pd.DataFrame({"a": list(a.astype(np.float64)), "b": b.astype(np.float64), "y": y}))
    history = est.fit(df, epochs=2, batch_size=10, feature_cols=["a", "b"], label_cols=["y"], verbose=0)
    assert len(history["loss"]) == 2
    assert est.predict(df, feature_cols=["a", "b"]).count() == 30
    est.shutdown()


# -- callbacks, progress, checkpoints ------------------------------------------------------------

def test_early_stopping_stops_every_worker_and_restores_the_best_weights(two_workers, _shared_linear) -> None:
    est, untrained = _shared_linear
    est.load_checkpoint(untrained)
    stop = keras.callbacks.EarlyStopping(monitor="loss", min_delta=1e9, patience=1, restore_best_weights=True)
    history = keras.callbacks.History()
    result = est.fit(regression_shards(40, [20, 20]), epochs=20, batch_size=8, callbacks=[stop, history], verbose=0)
    assert len(result["loss"]) == 2   # epoch 1 sets the baseline, epoch 2 does not improve by 1e9
    assert history.history["loss"] == result["loss"] and history.epoch == [0, 1]
    restored = est.get_model().get_weights()
    # the weights are those after the first epoch: the same as one epoch from the same start gives
    est.load_checkpoint(untrained)
    est.fit(regression_shards(40, [20, 20]), epochs=1, batch_size=8, verbose=0)
    for kept, expected in zip(restored, est.get_model().get_weights()):
        np.testing.assert_allclose(kept, expected, atol=1e-6, rtol=0)


def test_file_writing_callbacks_write_once_and_schedules_change_every_worker(two_workers, linear, tmp_path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    est = linear
    data = regression_shards(40, [15, 25])
    lambda_log = tmp_path / "lambda.log"
    callbacks = [
        keras.callbacks.ModelCheckpoint(str(tmp_path / "ckpt-{epoch}.keras")),
        keras.callbacks.TensorBoard(str(tmp_path / "tb")),
        keras.callbacks.CSVLogger(str(tmp_path / "log.csv")),
        keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.1 / (epoch + 1)),
        keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=0, min_delta=1e9),
        keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: open(lambda_log, "a").write(f"{epoch}\n")),
    ]
    history = est.fit(data, epochs=3, batch_size=10, validation_data=data, callbacks=callbacks, verbose=0)
    assert {f"ckpt-{n}.keras" for n in (1, 2, 3)} <= set(os.listdir(tmp_path))
    reloaded = keras.models.load_model(tmp_path / "ckpt-3.keras")
    for saved, trained in zip(reloaded.get_weights(), est.get_model().get_weights()):
        np.testing.assert_allclose(saved, trained, atol=1e-6)
    with open(tmp_path / "log.csv") as file:
        rows = list(csv.DictReader(file))
    assert [int(r["epoch"]) for r in rows] == [0, 1, 2]
    assert [float(r["loss"]) for r in rows] == pytest.approx(history["loss"], rel=1e-6)
    assert lambda_log.read_text().splitlines() == ["0", "1", "2"]   # rank 0 only: once per epoch
    events = glob.glob(str(tmp_path / "tb" / "train" / "events.out.tfevents*"))
    accumulator = EventAccumulator(events[0])
    accumulator.Reload()
    assert "epoch_loss" in accumulator.Tags()["tensors"] + accumulator.Tags()["scalars"]
    # the scheduler set 0.1 / 3 at epoch 2, then ReduceLROnPlateau halved it on every worker alike
    assert float(est.get_model().optimizer.learning_rate) == pytest.approx(0.1 / 3 / 2, rel=1e-5)


def test_model_dir_checkpoints_resume_at_the_next_epoch_exactly(two_workers, tmp_path) -> None:
    data = regression_shards(40, [10, 30])
    creator = keras_models.linear_model
    whole = Estimator.from_keras(model_creator=creator, config={"lr": 0.05}, seed=3, model_dir=str(tmp_path))
    whole.fit(data, epochs=3, batch_size=8, verbose=0)
    whole.shutdown()
    assert sorted(os.listdir(tmp_path)) == ["epoch=1.ckpt", "epoch=2.ckpt", "epoch=3.ckpt"]
    assert Estimator.latest_checkpoint(str(tmp_path)).endswith("epoch=3.ckpt")

    resumed = Estimator.from_keras(model_creator=creator, config={"lr": 0.05}, seed=3)
    resumed.load_checkpoint(str(tmp_path / "epoch=2.ckpt"))
    resumed.fit(data, epochs=1, batch_size=8, verbose=0)
    for mine, theirs in zip(resumed.get_model().get_weights(), whole.get_model().get_weights()):
        np.testing.assert_allclose(mine, theirs, atol=1e-6)
    resumed.shutdown()


def test_progress_bar_shows_steps_on_the_driver(two_workers, linear, capfd) -> None:
    linear.fit(regression_shards(40, [20, 20]), epochs=2, batch_size=10, verbose=1)
    assert "8/8" in capfd.readouterr().err   # 2 epochs × 4 steps


def test_save_load_and_weights_round_trips_give_equal_predictions(two_workers, linear, tmp_path) -> None:
    data = regression_shards(40, [20, 20])
    est = linear
    est.fit(data, epochs=3, batch_size=10, verbose=0)
    expected = np.concatenate([s["prediction"] for s in est.predict(data).collect()])
    est.save(str(tmp_path / "model.keras"))
    est.save_weights(str(tmp_path / "model.weights.h5"))

    restored = Estimator.from_keras(model_creator=keras_models.linear_model, seed=9)
    restored.load(str(tmp_path / "model.keras"))
    np.testing.assert_array_equal(np.concatenate([s["prediction"] for s in restored.predict(data).collect()]), expected)
    weights_only = Estimator.from_keras(model_creator=keras_models.linear_model, seed=9)
    weights_only.load_weights(str(tmp_path / "model.weights.h5"))
    np.testing.assert_array_equal(np.concatenate([s["prediction"] for s in weights_only.predict(data).collect()]), expected)
    assert len(weights_only.fit(data, epochs=1, batch_size=10, verbose=0)["loss"]) == 1   # workers get the loaded weights
    weights_only.shutdown()
    with pytest.raises(InvalidArgumentError, match="must end in '.keras'"):
        restored.save(str(tmp_path / "model.h5"))
    with pytest.raises(InvalidArgumentError, match="no checkpoint at path="):
        restored.load_checkpoint(str(tmp_path / "missing.ckpt"))


# -- temporary files ------------------------------------------------------------------------------

def autograph_files() -> set[str]:
    """The files of TensorFlow's autograph in the temp dir (sources, and bytecode an import cached)."""
    folder = tempfile.gettempdir()
    return {*glob.glob(os.path.join(folder, "__autograph_generated_file*.py")),
            *glob.glob(os.path.join(folder, "__pycache__", "__autograph_generated_file*"))}


def files_of_this_process() -> set[str]:
    """This (the driver's) process's own autograph files: TensorFlow deletes them when it exits."""
    modules = [sys.modules.get(name) for name in autograph_modules()]
    paths = {path for module in modules for path in (getattr(module, "__file__", None), getattr(module, "__cached__", None))}
    return {path for path in paths if path and os.path.exists(path)}


def test_no_autograph_files_are_left_in_the_temp_dir_by_the_workers(two_workers) -> None:
    """Autograph writes a file for every function it compiles and deletes it only at a normal exit
    of the process, which Ray's workers (killed) and Spark's Python workers (os._exit) never have:
    a run of fit, evaluate and predict left 16 files in the temp dir for good."""
    before = autograph_files()
    x, y = keras_models.regression_rows(40)
    data = shards_with_sizes({"x": x, "y": y}, [20, 20])
    est = linear_estimator()
    est.fit(data, epochs=2, batch_size=8, validation_data=data, verbose=0)
    est.fit(keras_models.python_dataset_creator, epochs=1, batch_size=8, verbose=0)   # its tf.data maps compile on the workers
    est.evaluate(data, batch_size=8)
    assert len(est.predict(data).collect()) == 2
    df = two_workers.createDataFrame(pd.DataFrame({"x": list(x.astype(np.float64)), "y": y}))
    assert est.predict(df, feature_cols=["x"]).count() == 40
    est.shutdown()

    # another process on this machine (a parallel test run) may hold a file of its own for a moment: wait for it
    deadline = time.monotonic() + 30
    while (left := autograph_files() - before - files_of_this_process()) and time.monotonic() < deadline:
        time.sleep(1)
    assert not left, f"autograph files left in {tempfile.gettempdir()}: {sorted(left)}"


def test_predicting_removes_the_autograph_files_of_its_own_run_and_only_those() -> None:
    """Pure (no cluster): predict_arrays runs on the driver too (to type the columns), where the
    user's own autograph files must stay until TensorFlow deletes them at exit."""

    @tf.function
    def users_own(values):
        for _ in tf.range(1):
            values = values + 1.0
        return values

    users_own(tf.constant([1.0]))
    users = files_of_this_process()
    assert users

    @tf.function
    def doubled(values):
        for _ in tf.range(1):
            values = values * 2.0
        return values

    class HelperLayer(keras.layers.Layer):
        """A layer whose call runs a compiled function of its own: autograph converts that
        function when a prediction first traces the model, in whatever process predicts."""

        def call(self, inputs):
            return doubled(inputs)

    model = keras.Sequential([HelperLayer(), keras.layers.Dense(1)])   # built by the first prediction
    modules_before = autograph_modules()
    (out,) = predict_arrays(model, (np.ones((5, 2), dtype=np.float64),), batch_size=2)
    assert out.shape == (5, 1)
    converted = autograph_modules() - modules_before
    assert converted, "the prediction compiled nothing with autograph: the test no longer tests anything"
    assert not any(os.path.exists(sys.modules[name].__file__) for name in converted)
    assert all(os.path.exists(path) for path in users)
    # the compiled functions keep working without their files, retraced for new shapes too
    (again,) = predict_arrays(model, (np.ones((3, 2), dtype=np.float64),), batch_size=3)
    np.testing.assert_allclose(again, out[:3], rtol=1e-6)
    np.testing.assert_allclose(doubled(tf.constant([[1.0, 2.0, 3.0]])).numpy(), [[2.0, 4.0, 6.0]])
    assert users_own(tf.constant([[1.0]])).numpy().tolist() == [[2.0]]
    assert remove_autograph_files() and not any(os.path.exists(path) for path in users)


# -- bad input and faults -------------------------------------------------------------------------

class NoConfig(keras.Model):
    """A subclassed model without get_config: Keras cannot rebuild it from its saved form."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.dense = keras.layers.Dense(width)

    def call(self, x):
        return self.dense(x)


def test_construction_errors_name_the_argument() -> None:
    compiled = keras_models.linear_model({})
    with pytest.raises(InvalidArgumentError, match="exactly one of model=.*got neither"):
        Estimator.from_keras()
    with pytest.raises(InvalidArgumentError, match="exactly one of model=.*got both"):
        Estimator.from_keras(compiled, model_creator=keras_models.linear_model)
    # an uncompiled model is taken (for predict and spark_udf); fit and evaluate say they need compile
    with pytest.raises(InvalidArgumentError, match="fit: the model .* is not compiled; call model.compile"):
        Estimator.from_keras(keras_models.uncompiled_linear_model({})).fit(None)
    with pytest.raises(InvalidArgumentError, match="evaluate: the model .* is not compiled; call model.compile"):
        Estimator.from_keras(model_creator=keras_models.uncompiled_linear_model).evaluate(None)
    subclassed = NoConfig(1)
    subclassed(np.zeros((1, 2), np.float32))
    subclassed.compile(optimizer="sgd", loss="mse")
    with pytest.raises(InvalidArgumentError, match="Keras cannot rebuild the model .* pass model_creator="):
        Estimator.from_keras(subclassed)
    with pytest.raises(InvalidArgumentError, match="model is a str; it must be a keras.Model"):
        Estimator.from_keras("model")
    with pytest.raises(InvalidArgumentError, match="backend='horovod' is not supported"):
        Estimator.from_keras(compiled, backend="horovod")
    # an uncompiled model with compile_args_creator is fine
    est = Estimator.from_keras(keras_models.uncompiled_linear_model({}),
                               compile_args_creator=lambda config: {"optimizer": "sgd", "loss": "mse"})
    assert est.get_model().compiled


def test_bad_inputs_get_clear_errors(two_workers, linear) -> None:
    spark = two_workers
    est = linear
    shards = regression_shards(10, [5, 5])
    df = spark.createDataFrame(pd.DataFrame({"a": [[1.0, 2.0], [0.0, 1.0]], "y": [0.0, 1.0]}))
    with pytest.raises(InvalidArgumentError, match=r"label_cols: the labels have shape \(2,\) per row but the model's output has \(1,\)"):
        est.fit(spark.createDataFrame(pd.DataFrame({"x": [[1.0, 2.0], [2.0, 1.0]], "y": [0.0, 1.0], "z": [1.0, 1.0]})),
                feature_cols=["x"], label_cols=["y", "z"], verbose=0)
    with pytest.raises(InvalidArgumentError, match="uses tf.py_function, which runs Python and cannot be sent to the workers"):
        est.fit(tf.data.Dataset.from_tensor_slices(np.zeros((4, 2), np.float32)).map(
            lambda a: (tf.py_function(lambda v: v, [a], tf.float32), 0.0)))
    with pytest.raises(InvalidArgumentError, match="uses tf.numpy_function, which runs Python .* pass a creator instead"):
        est.fit(tf.data.Dataset.from_tensor_slices(np.zeros((4, 2), np.float32)).map(
            lambda a: (tf.numpy_function(lambda v: v, [a], tf.float32), 0.0)))
    with pytest.raises(InvalidArgumentError, match="uses Dataset.from_generator"):
        est.fit(tf.data.Dataset.from_generator(lambda: iter([(np.zeros(2, np.float32), 0.0)]),
                                               output_signature=(tf.TensorSpec((2,), tf.float32), tf.TensorSpec((), tf.float32))))
    with pytest.raises(InvalidArgumentError, match="the data creator 'not_a_dataset_creator' returned a list"):
        est.fit(keras_models.not_a_dataset_creator)
    group = est._group
    assert group is not None and group.actors, "each worker raised the same clear error: the group stays"
    with pytest.raises(InvalidArgumentError, match="callbacks: 'stop' is a str; each callback must be a keras.callbacks.Callback"):
        est.fit(shards, callbacks=["stop"])
    with pytest.raises(InvalidArgumentError, match="batch_size=1 is smaller than the number of workers"):
        est.fit(shards, batch_size=1)
    with pytest.raises(InvalidArgumentError, match=r"workers_per_node=2 and num_workers=3 were both given"):
        linear_estimator(workers_per_node=2, num_workers=3)
    three = linear_estimator(num_workers=3)
    assert three.num_workers == 3 and three._group is None, "the planned count, without starting a group"
    assert linear_estimator(workers_per_node=2).num_workers == 4   # on each of the 2 nodes
    three.shutdown()
    with pytest.raises(InvalidArgumentError, match="data is a str"):
        est.fit("not data")
    with pytest.raises(InvalidArgumentError, match=r"data is a ray\.data\.dataset\.\w*Dataset; pass an XShards"):
        est.fit(ray.data.from_items([{"x": 1.0, "y": 0.0}]))
    with pytest.raises(InvalidArgumentError, match=r"predict: data is a numpy\.ndarray; pass an XShards or a Spark DataFrame"):
        est.predict(np.zeros((2, 2)))
    with pytest.raises(InvalidArgumentError, match=r"initial_epoch=3 must be an int in \[0, epochs=2\)"):
        est.fit(shards, epochs=2, initial_epoch=3)
    with pytest.raises(InvalidArgumentError, match=r"class_weight=\[1, 2\] must be a non-empty dict"):
        est.fit(shards, class_weight=[1, 2])
    with pytest.raises(InvalidArgumentError, match="verbose=3 must be 0"):
        est.fit(shards, verbose=3)
    with pytest.raises(InvalidArgumentError, match="data_config=.* is not supported"):
        est.fit(shards, data_config={"a": 1})
    with pytest.raises(InvalidArgumentError, match="repeats forever"):
        est.fit(tf.data.Dataset.from_tensor_slices((np.zeros((4, 2), np.float32), np.zeros(4, np.float32))).repeat())
    with pytest.raises(InvalidArgumentError, match=r"output_cols=\['a', 'b'\]: the model has 1 output"):
        est.predict(df, feature_cols=["a"], output_cols=["a", "b"])
    with pytest.raises(InvalidArgumentError, match=r"already has the column\(s\) \['y'\]"):
        est.predict(df, feature_cols=["a"], output_cols=["y"])
    # the checks shared with the PyTorch Estimator (zoo_lite.learn.base) hold here too
    frame = spark.createDataFrame(pd.DataFrame({"a": [1.0, 2.0, 3.0], "s": ["x", "y", "z"], "y": [0.0, 1.0, 0.0]}))
    with pytest.raises(ColumnNotFoundError, match=r"feature_cols=\['nope'\]: column\(s\) \['nope'\] not found"):
        est.fit(frame, feature_cols=["nope"], label_cols=["y"])
    with pytest.raises(InvalidArgumentError, match="feature_cols: column 's' has type string, which is not numeric"):
        est.fit(frame, feature_cols=["s"], label_cols=["y"])
    with pytest.raises(InvalidArgumentError, match="has no rows"):
        est.fit(frame.limit(0), feature_cols=["a"], label_cols=["y"])
    with pytest.raises(InvalidArgumentError, match="feature_cols was given without label_cols"):
        est.fit(XShards.partition(pd.DataFrame({"a": [1.0, 2.0]}), num_shards=1), feature_cols=["a"])
    with pytest.raises(InvalidArgumentError, match="epochs=0 must be a positive int"):
        est.fit(shards, epochs=0)
    # the estimator still works after all of these, on the same workers (no check above started a group)
    assert len(est.fit(shards, batch_size=4, verbose=0)["loss"]) == 1
    assert est._group is group


def test_a_two_output_model_is_refused_by_fit_and_predicted_into_two_columns(two_workers) -> None:
    inputs = keras.Input(shape=(2,))
    model = keras.Model(inputs, [keras.layers.Dense(1)(inputs), keras.layers.Dense(3)(inputs)])
    model.compile(optimizer="sgd", loss="mse")
    est = Estimator.from_keras(model=model, seed=0)
    with pytest.raises(InvalidArgumentError, match="the model has 2 outputs; zoo_lite's Keras Estimator trains"):
        est.fit(regression_shards(10, [5, 5]), batch_size=4, verbose=0)
    x, _ = keras_models.regression_rows(10)
    df = two_workers.createDataFrame(pd.DataFrame({"x": list(x.astype(np.float64))}))
    predicted = est.predict(df, feature_cols=["x"]).toPandas()
    assert list(predicted.columns) == ["x", "prediction_0", "prediction_1"]
    expected = model.predict(x, verbose=0)
    np.testing.assert_allclose(predicted["prediction_0"], expected[0][:, 0], rtol=1e-5)
    np.testing.assert_allclose(np.stack(predicted["prediction_1"]), expected[1], rtol=1e-5)


def test_class_weight_scales_each_rows_loss(two_workers) -> None:
    x, y = exact_data(11)
    labels = (np.arange(8) % 2).astype(np.float32)[:, None]
    weights = {0: 1.0, 1: 3.0}
    model = bias_free_model(0.05)
    start = model.get_weights()[0]
    est = Estimator.from_keras(model=model, seed=1)
    est.fit(shards_with_sizes({"x": x, "y": labels}, [3, 5]), epochs=1, batch_size=8, class_weight=weights, verbose=0)
    row_weight = np.where(labels[:, 0] == 1, 3.0, 1.0)[:, None]
    expected = start - 0.05 * 2.0 * x.T @ (row_weight * (x @ start - labels)) / 8
    np.testing.assert_allclose(est.get_model().get_weights()[0], expected, atol=1e-5, rtol=0)
    est.shutdown()


def test_a_worker_exception_reaches_the_driver_quickly_and_the_estimator_recovers(two_workers) -> None:
    x, y = keras_models.regression_rows(40)
    bad = x.copy()
    bad[35, 0] = 999   # only in the second partition, so only one worker fails
    est = Estimator.from_keras(model_creator=keras_models.fails_on_marker_model, seed=0)
    est.fit(shards_with_sizes({"x": x, "y": y}, [20, 20]), epochs=1, batch_size=8, verbose=0)
    started = time.monotonic()
    with pytest.raises(WorkerError, match="marker row reached the model") as failure:
        est.fit(shards_with_sizes({"x": bad, "y": y}, [20, 20]), epochs=2, batch_size=8, verbose=0)
    assert time.monotonic() - started < 30
    # the worker's traceback, down to the user's layer, in plain text
    assert "keras_models.py" in failure.value.remote_traceback and "in train_epoch" in failure.value.remote_traceback
    assert "\x1b" not in str(failure.value)
    history = est.fit(shards_with_sizes({"x": x, "y": y}, [20, 20]), epochs=1, batch_size=8, verbose=0)   # a fresh group
    assert len(history["loss"]) == 1
    est.shutdown()
