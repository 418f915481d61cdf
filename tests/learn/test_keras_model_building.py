"""Keras models as Keras itself takes them, in the Keras Estimator: a ``Sequential`` with no input
shape, built from the first batch (as Keras' ``fit`` builds it), and lookup layers (a
``TextVectorization`` adapted on the driver) whose vocabulary reaches every worker. Real Spark
(``local[2]``), real Ray (two workers, started on demand) and CPU TensorFlow, no mocks."""

from __future__ import annotations

import os
import tempfile

import keras
import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from zoo_lite import OrcaContext
from zoo_lite.data import XShards
from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.tf2 import Estimator

pytestmark = pytest.mark.timeout(600)

WEIGHTS = np.array([[1.0], [-2.0], [0.5]], dtype=np.float32)


def regression(rows: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(seed).normal(size=(rows, 3)).astype(np.float32)
    return x, x @ WEIGHTS


def unbuilt_linear(config: dict) -> keras.Model:
    """No input shape: Keras builds it from the first batch. Its initial kernel is ones."""
    model = keras.Sequential([keras.layers.Dense(1, use_bias=False, kernel_initializer="ones")])
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    return model


def unbuilt_mlp(config: dict) -> keras.Model:
    model = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    return model


def full_batch_descent(x: np.ndarray, y: np.ndarray, lr: float, epochs: int) -> np.ndarray:
    """The kernel of ``unbuilt_linear`` after ``epochs`` full-batch SGD steps on the mean squared error (float64)."""
    w = np.ones((x.shape[1], 1))
    for _ in range(epochs):
        w = w - lr * 2.0 * x.T.astype(np.float64) @ (x @ w - y) / len(x)
    return w


def predictions_of(shards) -> np.ndarray:
    return np.concatenate([shard["prediction"] for shard in shards.collect()])


# -- a model without an input shape -------------------------------------------------------------------

def test_without_an_input_shape_backend_spark_builds_the_model_from_the_first_batch_and_trains_it(sc) -> None:
    """backend="spark" (two barrier tasks): the full-batch steps of one process."""
    x, y = regression()
    est = Estimator.from_keras(model_creator=unbuilt_linear, backend="spark", num_workers=2, seed=0)
    est.fit(XShards.partition({"x": x, "y": y}, num_shards=3), epochs=3, batch_size=len(x), verbose=0)
    np.testing.assert_allclose(est.get_model().get_weights()[0], full_batch_descent(x, y, 0.05, 3), atol=1e-5, rtol=0)
    assert not sc.statusTracker().getActiveJobsIds()


def test_without_an_input_shape_fit_on_xshards_builds_the_model_on_the_driver_and_trains_it_on_two_workers(sc) -> None:
    """As Keras' fit: built from the first batch's shapes, then the full-batch steps of one
    process; evaluate and predict on the workers and executors use the same model as the driver."""
    x, y = regression()
    shards = XShards.partition({"x": x, "y": y}, num_shards=3)
    est = Estimator.from_keras(model_creator=unbuilt_linear, workers_per_node=2, seed=0)
    assert not est.get_model().built
    history = est.fit(shards, epochs=3, batch_size=len(x), verbose=0)
    assert est.num_workers == 2 and len(history["loss"]) == 3
    model = est.get_model()
    assert model.built and tuple(model.inputs[0].shape) == (None, 3)
    np.testing.assert_allclose(model.get_weights()[0], full_batch_descent(x, y, 0.05, 3), atol=1e-5, rtol=0)
    assert est.evaluate(shards, batch_size=64, verbose=0)["loss"] == pytest.approx(model.evaluate(x, y, verbose=0), rel=1e-5)
    predicted = predictions_of(est.predict(shards)).reshape(-1)
    np.testing.assert_allclose(predicted, model.predict(x, verbose=0).reshape(-1), rtol=1e-5, atol=1e-6)
    est.shutdown()


def test_without_an_input_shape_fit_on_a_spark_dataframe_builds_the_model_from_its_feature_columns(sc) -> None:
    x, y = regression()
    frame = OrcaContext.get_spark_session().createDataFrame(
        pd.DataFrame({"features": list(x.astype(np.float64)), "label": y[:, 0].astype(np.float64)})).repartition(2)
    est = Estimator.from_keras(model_creator=unbuilt_mlp, workers_per_node=2, seed=0)
    history = est.fit(frame, epochs=2, batch_size=32, feature_cols=["features"], label_cols=["label"], verbose=0)
    assert sorted(history) == ["loss", "mae"]
    model = est.get_model()
    assert [tuple(w.shape) for w in model.weights] == [(3, 8), (8,), (8, 1), (1,)]
    expected = model.evaluate(x, y, verbose=0, return_dict=True)
    results = est.evaluate(frame, batch_size=32, feature_cols=["features"], label_cols=["label"], verbose=0)
    assert results["loss"] == pytest.approx(expected["loss"], rel=1e-5)
    assert results["mae"] == pytest.approx(expected["mae"], rel=1e-5)
    est.shutdown()


def test_without_an_input_shape_evaluate_first_builds_the_model_from_a_dataset_creator(sc) -> None:
    x, y = regression(64)

    def data_creator(config, batch_size):
        import tensorflow as tf

        return tf.data.Dataset.from_tensor_slices((config["x"], config["y"])).batch(batch_size)

    est = Estimator.from_keras(model_creator=unbuilt_mlp, config={"x": x, "y": y}, workers_per_node=2, seed=0)
    results = est.evaluate(data_creator, batch_size=16, verbose=0)
    model = est.get_model()
    assert model.built
    assert results["loss"] == pytest.approx(model.evaluate(x, y, verbose=0, return_dict=True)["loss"], rel=1e-5)
    assert len(est.fit(data_creator, epochs=1, batch_size=16, verbose=0)["loss"]) == 1
    est.shutdown()


def test_without_an_input_shape_predict_first_builds_the_model_from_a_dataset_or_xshards(sc) -> None:
    """predict runs in the Spark tasks (no worker starts): the model is built on the driver and
    shipped built; a batched Dataset object shows its rows' shapes."""
    x, _ = regression(20)
    model = keras.Sequential([keras.layers.Dense(4, activation="relu"), keras.layers.Dense(2)])   # not compiled: predict only
    est = Estimator.from_keras(model=model, seed=0)
    predicted = predictions_of(est.predict(tf.data.Dataset.from_tensor_slices(x).batch(8), batch_size=8))
    np.testing.assert_allclose(predicted, model.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    again = predictions_of(est.predict(XShards.partition({"x": x}, num_shards=2), batch_size=8))
    np.testing.assert_allclose(again, predicted, rtol=1e-6, atol=1e-6)

    other = Estimator.from_keras(model=keras.Sequential([keras.layers.Dense(2)]), seed=0)
    other.predict(XShards.partition({"x": x}, num_shards=2))
    assert [tuple(w.shape) for w in other.get_model().weights] == [(3, 2), (2,)]


def test_without_an_input_shape_and_nothing_to_build_it_from_the_error_says_to_give_one(sc) -> None:
    est = Estimator.from_keras(model_creator=unbuilt_linear, workers_per_node=2, seed=0)
    with pytest.raises(InvalidArgumentError, match=r"^spark_udf: the model 'sequential.*' is not built; give it an input "
                                                   r"shape \(keras.Input\(shape=...\).*or call fit, evaluate or predict first"):
        est.spark_udf()
    folded = keras.Sequential([keras.layers.Reshape((2, 2))])
    x, _ = regression(8)
    with pytest.raises(InvalidArgumentError, match=r"^predict: the model 'sequential.*' has no input shape, and building it "
                                                   r"for the first batch's inputs float32\[None, 3\] failed \(.*\); give it an "
                                                   r"input shape"):
        Estimator.from_keras(model=folded).predict(XShards.partition({"x": x}, num_shards=2))
    assert not folded.built


# -- lookup tables --------------------------------------------------------------------------------------

TEXTS = np.array(["the cat sat", "a dog ran", "the dog sat down", "a cat ran off", "dogs and cats", "the end"] * 40)
LABELS = np.array([1, 0, 1, 0, 1, 0] * 40, dtype=np.float32)


def text_model(vectorize: keras.layers.TextVectorization) -> keras.Model:
    inputs = keras.Input(shape=(1,), dtype="string")
    hidden = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(20, 4)(vectorize(inputs)))
    model = keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(hidden))
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss="binary_crossentropy")
    return model


def text_frame():
    return OrcaContext.get_spark_session().createDataFrame(pd.DataFrame({"text": TEXTS[:12]}), "text string").repartition(2)


def check_text_predictions(est, frame, model: keras.Model) -> None:
    """predict on the executors gives, for each row, what Keras' predict gives on the driver."""
    rows = est.predict(frame, batch_size=4, feature_cols=["text"]).collect()
    texts = np.array([row.text for row in rows], dtype=object)
    assert sorted(texts) == sorted(TEXTS[:12])
    expected = model.predict(tf.constant(texts[:, None]), verbose=0).reshape(-1)
    np.testing.assert_allclose([row.prediction for row in rows], expected, rtol=1e-5, atol=1e-6)


def test_a_text_vectorization_adapted_on_the_driver_reaches_the_workers_and_survives_save_and_load(sc) -> None:
    """The creator holds a layer adapted on the driver, as Keras code does: fit and evaluate on two
    workers, predict on the executors (the same predictions as Keras on the driver), and
    get_model, save and load keep the vocabulary."""
    vectorize = keras.layers.TextVectorization(max_tokens=20, output_mode="int", output_sequence_length=4, name="words")
    vectorize.adapt(TEXTS)
    vocabulary = vectorize.get_vocabulary()
    dataset = tf.data.Dataset.from_tensor_slices((TEXTS[:, None], LABELS))
    est = Estimator.from_keras(model_creator=lambda config: text_model(vectorize), workers_per_node=2, seed=0)
    history = est.fit(dataset, epochs=2, batch_size=24, verbose=0)
    model = est.get_model()
    assert model.get_layer("words").get_vocabulary() == vocabulary
    assert est.evaluate(dataset, batch_size=24, verbose=0)["loss"] == pytest.approx(
        model.evaluate(dataset.batch(24), verbose=0), rel=1e-5)
    assert history["loss"][-1] < history["loss"][0]
    frame = text_frame()
    check_text_predictions(est, frame, model)
    est.shutdown()

    with tempfile.TemporaryDirectory() as folder:
        path = est.save(os.path.join(folder, "text.keras"))
        assert keras.models.load_model(path).get_layer("words").get_vocabulary() == vocabulary
        loaded = Estimator.from_keras(model_creator=lambda config: text_model(vectorize), seed=1)
        loaded.load(path)
    assert loaded.get_model().get_layer("words").get_vocabulary() == vocabulary
    check_text_predictions(loaded, frame, model)


def unadapted_text_model(config: dict) -> keras.Model:
    return text_model(keras.layers.TextVectorization(max_tokens=20, output_mode="int", output_sequence_length=4, name="words"))


def test_a_vocabulary_learned_by_the_drivers_model_goes_with_its_state_to_the_workers_and_checkpoints(sc) -> None:
    """The driver's model adapted after from_keras: its lookup table goes to the workers with its
    weights (fit and evaluate there give Keras' loss on the driver), and a checkpoint restores
    it into a model whose creator learned none."""
    est = Estimator.from_keras(model_creator=unadapted_text_model, workers_per_node=2, seed=0)
    est.get_model().get_layer("words").adapt(TEXTS)
    vocabulary = est.get_model().get_layer("words").get_vocabulary()
    dataset = tf.data.Dataset.from_tensor_slices((TEXTS[:, None], LABELS))
    est.fit(dataset, epochs=1, batch_size=24, verbose=0)
    model = est.get_model()
    assert est.evaluate(dataset, batch_size=24, verbose=0)["loss"] == pytest.approx(
        model.evaluate(dataset.batch(24), verbose=0), rel=1e-5)
    est.shutdown()

    with tempfile.TemporaryDirectory() as folder:
        checkpoint = est.save_checkpoint(os.path.join(folder, "text.ckpt"))
        resumed = Estimator.from_keras(model_creator=unadapted_text_model, seed=1)
        resumed.load_checkpoint(checkpoint)
    assert resumed.get_model().get_layer("words").get_vocabulary() == vocabulary
    check_text_predictions(resumed, text_frame(), model)
