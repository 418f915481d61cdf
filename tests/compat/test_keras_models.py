"""Keras models and inputs that Orca code used with ``zoo.orca.learn.tf2.Estimator``, in Orca's call
style (only the import changed): repeating tf.data pipelines with ``steps_per_epoch``, ``Lambda``
layers, models without trainable weights, and string feature columns. Real Spark and Ray (one
local Ray-on-Spark node, two workers where the split of a step matters), no mocks."""

from __future__ import annotations

import os
import tempfile

import keras
import numpy as np
import pytest
import tensorflow as tf

from zoo_lite import OrcaContext
from zoo_lite.data import XShards
from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn import spark_udf
from zoo_lite.learn.tf2 import Estimator

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module", autouse=True)
def orca_context(local_ray_spark):
    """A local Ray-on-Spark context, as an Orca script starts it (the session's shared one)."""
    return local_ray_spark


def rows(n: int = 8, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 3)).astype(np.float32), rng.normal(size=(n, 1)).astype(np.float32)


def bias_free_model() -> keras.Model:
    model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(1, use_bias=False, kernel_initializer="ones")])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    return model


# -- 1. a repeating tf.data pipeline with steps_per_epoch ---------------------------------------------

def test_a_repeating_dataset_trains_steps_per_epoch_global_steps_per_epoch_as_keras_fit_does() -> None:
    """Eight rows, ``.repeat().batch(4)``, two epochs of one step: Keras trains on rows 0-3, then
    4-7 (its iterator goes on across epochs). Two workers, each with half of every global batch,
    give Keras' weights."""
    x, y = rows()
    keras_model = bias_free_model()
    keras_model.fit(tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(4), epochs=2, steps_per_epoch=1, verbose=0)

    def data_creator(config, batch_size):
        import tensorflow as tf

        return tf.data.Dataset.from_tensor_slices((config["x"], config["y"])).repeat().batch(batch_size)

    est = Estimator.from_keras(model=bias_free_model(), config={"x": x, "y": y}, workers_per_node=2)
    assert est.num_workers == 2
    history = est.fit(data_creator, epochs=2, batch_size=4, steps_per_epoch=1, verbose=0)
    assert len(history["loss"]) == 2
    model = est.get_model()
    assert int(model.optimizer.iterations.numpy()) == 2   # steps_per_epoch global steps per epoch, not per worker
    np.testing.assert_allclose(model.get_weights()[0], keras_model.get_weights()[0], rtol=0, atol=1e-6)
    est.shutdown()


def test_a_repeating_creator_trains_and_validates_for_the_steps_given_and_is_refused_without_them() -> None:
    """Orca's pattern (test_save_and_load): ``repeat().shuffle().batch()`` in a creator, and a
    repeating validation set read for ``validation_steps``; evaluate reads ``num_steps`` global
    batches of a batched Dataset object (its own batch size). Without the step count, the error
    names the argument to give."""
    x, y = rows(32)

    def train_creator(config, batch_size):
        import tensorflow as tf

        return tf.data.Dataset.from_tensor_slices((config["x"], config["y"])).repeat().shuffle(64).batch(batch_size)

    validation = tf.data.Dataset.from_tensor_slices((x, y)).repeat()
    est = Estimator.from_keras(model=bias_free_model(), config={"x": x, "y": y}, workers_per_node=2, seed=0)
    history = est.fit(train_creator, epochs=2, batch_size=8, steps_per_epoch=3, validation_data=validation,
                      validation_steps=2, verbose=0)
    assert sorted(history) == ["loss", "val_loss"] and len(history["val_loss"]) == 2
    assert int(est.get_model().optimizer.iterations.numpy()) == 6
    # as Keras' evaluate(steps=5): rows 0-31, then 0-7 again
    infinite = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(8)
    expected = est.get_model().evaluate(infinite, steps=5, verbose=0)
    assert est.evaluate(infinite, num_steps=5, verbose=0)["loss"] == pytest.approx(expected, rel=1e-5)

    finite = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
    with pytest.raises(InvalidArgumentError, match=r"^data: the dataset repeats forever.*pass steps_per_epoch="):
        est.fit(infinite, epochs=1, verbose=0)
    with pytest.raises(InvalidArgumentError, match=r"^validation_data: the dataset repeats forever.*pass validation_steps="):
        est.fit(finite, epochs=1, validation_data=infinite, verbose=0)
    with pytest.raises(InvalidArgumentError, match=r"^data: the dataset repeats forever.*pass num_steps="):
        est.evaluate(infinite, verbose=0)
    # fit feeds numbers only (its steps are compiled for numeric rows); predict takes strings (below)
    frame = OrcaContext.get_spark_session().createDataFrame([("a", 1.0), ("b", 0.0)], "s string, y double")
    with pytest.raises(InvalidArgumentError, match="feature_cols: column 's' has type string, which is not numeric"):
        est.fit(frame, feature_cols=["s"], label_cols=["y"], verbose=0)
    assert est.evaluate(finite, verbose=0)["loss"] > 0   # still usable after the errors
    est.shutdown()


# -- 2. Lambda layers ----------------------------------------------------------------------------------

def test_a_model_with_a_lambda_layer_trains_and_predicts_on_the_executors() -> None:
    x, y = rows(16)
    model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Lambda(lambda t: keras.ops.multiply(t, 2.0)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    est = Estimator.from_keras(model=model)
    shards = XShards.partition({"x": x, "y": y}, num_shards=2)
    assert len(est.fit(shards, epochs=1, batch_size=4, verbose=0)["loss"]) == 1
    predicted = np.concatenate([shard["prediction"] for shard in est.predict(shards, batch_size=4).collect()])
    np.testing.assert_allclose(predicted, est.get_model().predict(x, verbose=0), rtol=1e-5, atol=1e-6, strict=True)
    est.shutdown()


def test_orca_identity_lambda_model_creator_predicts_its_input() -> None:
    """Orca's identity_model_creator: a Lambda model compiled with no loss, used for predict."""

    def identity_model_creator(config):
        import keras
        import tensorflow as tf

        model = keras.Sequential([keras.Input(shape=(1,)), keras.layers.Lambda(lambda x: tf.identity(x))])
        model.compile()
        return model

    x = np.random.default_rng(0).normal(size=(20, 1))
    shards = XShards.partition({"x": x, "y": np.zeros(20)}, num_shards=2)
    est = Estimator.from_keras(model_creator=identity_model_creator, workers_per_node=2)
    predicted = np.concatenate([shard["prediction"] for shard in est.predict(shards, batch_size=10).collect()])
    assert predicted.shape == x.shape   # (n, 1), as model.predict gives it
    np.testing.assert_allclose(predicted, x, rtol=1e-6)


def test_a_saved_lambda_model_loaded_from_disk_stays_under_keras_safe_mode() -> None:
    """spark_udf(path) loads a file, which may come from anyone: Keras' safe mode stays on there."""
    model = keras.Sequential([keras.Input(shape=(1,)), keras.layers.Lambda(lambda t: t + 1.0)])
    path = os.path.join(tempfile.mkdtemp(), "lambda.keras")
    model.save(path)
    with pytest.raises(ValueError, match="safe_mode"):
        spark_udf(path)
    # a checkpoint carries the lambda pickled (as zoo_lite ships it); from disk, it is refused too
    model.compile(optimizer="sgd", loss="mse")
    checkpoint = Estimator.from_keras(model=model).save_checkpoint(os.path.join(os.path.dirname(path), "lambda.ckpt"))
    with pytest.raises(TypeError, match="could not be deserialized"):
        spark_udf(checkpoint)


# -- 3. no trainable weights ---------------------------------------------------------------------------

def test_a_model_without_trainable_weights_fits_as_keras_does_evaluates_and_predicts() -> None:
    """Keras' fit on such a model warns, computes loss and metrics, and changes nothing."""
    x, y = rows(16)
    model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(1, trainable=False)])
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    weights = model.get_weights()
    expected_loss = float(np.mean((x @ weights[0] + weights[1] - y) ** 2))
    shards = XShards.partition({"x": x, "y": y}, num_shards=2)
    est = Estimator.from_keras(model=model, workers_per_node=2)
    with pytest.warns(UserWarning, match="no trainable weights"):
        history = est.fit(shards, epochs=1, batch_size=8, verbose=0)
    assert history["loss"][0] == pytest.approx(expected_loss, rel=1e-5)
    for before, after in zip(weights, est.get_model().get_weights()):
        np.testing.assert_array_equal(before, after)
    results = est.evaluate(shards, batch_size=8, verbose=0)
    assert results["loss"] == pytest.approx(expected_loss, rel=1e-5)
    assert results["validation_loss"] == results["loss"] and results["validation_mae"] == results["mae"]  # Orca's names
    predicted = np.concatenate([shard["prediction"] for shard in est.predict(shards).collect()])
    np.testing.assert_allclose(predicted, x @ weights[0] + weights[1], rtol=1e-5, strict=True)
    est.shutdown()


# -- 4. string feature columns -------------------------------------------------------------------------

def test_string_and_array_of_string_columns_are_predicted_as_tf_strings() -> None:
    """Orca's test_string_input / test_array_string_input (with a vocabulary: Keras 3 refuses an
    unadapted TextVectorization)."""
    spark = OrcaContext.get_spark_session()

    def text_model_creator(config):
        import keras

        return keras.Sequential([keras.Input(shape=(1,), dtype="string"),
                                 keras.layers.TextVectorization(vocabulary=config["vocabulary"], output_mode="int",
                                                                output_sequence_length=4)])

    def lookup_model_creator(config):
        import keras

        return keras.Sequential([keras.Input(shape=(None,), dtype="string"),
                                 keras.layers.StringLookup(vocabulary=config["vocabulary"])])

    config = {"vocabulary": ["foo", "qux", "bar", "baz"]}
    text = spark.createDataFrame([("foo qux bar",), ("qux baz",)], "input string")
    est = Estimator.from_keras(model_creator=text_model_creator, config=config)
    out = est.predict(text, batch_size=1, feature_cols=["input"]).collect()
    expected = text_model_creator(config)(tf.constant([["foo qux bar"], ["qux baz"]])).numpy()
    assert [row.input for row in out] == ["foo qux bar", "qux baz"]
    np.testing.assert_array_equal(np.array([row.prediction for row in out]), expected)

    lists = spark.createDataFrame([(0, ["foo", "qux", "bar"]), (1, ["qux", "baz", "baz"])], "id int, input array<string>")
    est = Estimator.from_keras(model_creator=lookup_model_creator, config=config)
    out = sorted(est.predict(lists, batch_size=1, feature_cols=["input"]).collect(), key=lambda row: row.id)
    np.testing.assert_array_equal(np.array([row.prediction for row in out]), [[1, 2, 3], [2, 4, 4]])
