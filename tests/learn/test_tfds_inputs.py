"""The Keras Estimator on what ``tfds.load`` returns, on real Spark (local-cluster, two executors),
real Ray and TensorFlow Datasets: a dataset built offline by tfds' own builder API
(:mod:`tests.learn.tfds_digits`), read as dicts, as ``(image, label)`` pairs, and by data creators
that call ``tfds.load`` on every worker.

Each worker builds the whole pipeline and keeps its slice of every global batch; the metrics below
count the rows the workers fed, summed over the workers, so an epoch that lost or repeated rows
on some worker shows in the fit's history.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from tests.learn import tfds_digits
from zoo_lite.data import SparkXShards
from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.tf2 import Estimator

pytestmark = pytest.mark.timeout(300)


class SampleCount(keras.metrics.Sum):
    """The rows fed: a sum, and zoo_lite sums metric states over the workers, so an epoch's value
    is the rows all workers fed together."""

    def __init__(self, name: str = "num_samples", **kwargs) -> None:
        super().__init__(name=name, **kwargs)

    def update_state(self, y_true, y_pred, sample_weight=None):
        return super().update_state(tf.ones_like(tf.cast(y_true, self.dtype)))


class LabelSum(keras.metrics.Sum):
    """The labels fed, summed: a row repeated on one worker while another is lost changes it."""

    def __init__(self, name: str = "label_sum", **kwargs) -> None:
        super().__init__(name=name, **kwargs)

    def update_state(self, y_true, y_pred, sample_weight=None):
        return super().update_state(tf.cast(y_true, self.dtype))


def digits_classifier(config: dict):
    """Softmax regression on the uint8 images (scaled inside the model), with the counting metrics."""
    model = keras.Sequential([keras.Input(shape=(8, 8, 1)), keras.layers.Rescaling(1 / 255.0), keras.layers.Flatten(),
                              keras.layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy", SampleCount(), LabelSum()])
    return model


def supervised_creator(config: dict, batch_size: int):
    """Run on every Ray worker: the builder module is imported there (registering ``digits_mnist``;
    the workers find the tests package as the driver does) and tfds reads the files under
    ``config["data_dir"]``, in an order shuffled by file."""
    import tensorflow_datasets as tfds

    from tests.learn import tfds_digits

    dataset = tfds.load(name=tfds_digits.NAME, split=config.get("split", "train"), data_dir=config["data_dir"],
                        as_supervised=True, shuffle_files=True)
    return dataset.batch(batch_size)


def prepared_files_creator(config: dict, batch_size: int):
    """For predict, run in the Spark tasks, where the tests package is not on the path: tfds reads
    a prepared dataset from its files alone (``dataset_info.json``), no builder class needed."""
    import tensorflow_datasets as tfds

    return tfds.load(name="digits_mnist", split="train", data_dir=config["data_dir"], as_supervised=True,
                     shuffle_files=True).batch(batch_size)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> str:
    """``digits_mnist`` prepared in three files per split (so that ``shuffle_files`` shuffles)."""
    return tfds_digits.build(str(tmp_path_factory.mktemp("tensorflow_datasets")), num_shards=3)


@pytest.fixture(scope="module")
def labels(data_dir) -> dict[str, np.ndarray]:
    """Each split's labels in tfds' order, read on the driver."""
    return {split: np.array([int(y) for _, y in tfds.load(name=tfds_digits.NAME, split=split, data_dir=data_dir,
                                                           as_supervised=True)]) for split in ("train", "test")}


def test_files_shuffled_by_tfds_are_read_in_one_order_on_every_worker(data_dir) -> None:
    """``shuffle_files=True`` without a seed reads the files with a non-deterministic interleave,
    which tf.data.Options cannot override (4 orders in 10 reads when measured): the shipped graph
    is made deterministic, so every worker's slices come from one order."""
    from zoo_lite.learn.tf2.datasets import _graph_def, dataset_graph

    shipped = dataset_graph(tfds.load(name=tfds_digits.NAME, split="train", data_dir=data_dir, as_supervised=True,
                                      shuffle_files=True))
    assert b"false" in [node.attr["deterministic"].s for node in _graph_def(shipped.graph).node]
    orders = {tuple(int(y) for _, y in shipped.dataset(seed=0, epoch=0)) for _ in range(5)}
    assert len(orders) == 1 and len(next(iter(orders))) == tfds_digits.TRAIN_ROWS
    assert orders != {tuple(int(y) for _, y in shipped.dataset(seed=0, epoch=1))}   # still a new order each epoch


def predictions(shards: SparkXShards) -> np.ndarray:
    assert isinstance(shards, SparkXShards)
    return np.concatenate([shard["prediction"] for shard in shards.collect()])


def test_tfds_pairs_and_mapped_dicts_fit_evaluate_and_predict(two_workers, data_dir, labels) -> None:
    pairs = tfds.load(name=tfds_digits.NAME, split="train", data_dir=data_dir, as_supervised=True)
    mapped = tfds.load(name=tfds_digits.NAME, split="train", data_dir=data_dir).map(lambda d: (d["image"], d["label"]))
    test = tfds.load(name=tfds_digits.NAME, split="test", data_dir=data_dir, as_supervised=True)
    est = Estimator.from_keras(model_creator=digits_classifier, seed=0)
    try:
        first = est.fit(pairs.shuffle(1000), epochs=2, batch_size=64, verbose=0)
        then = est.fit(mapped, epochs=1, batch_size=50, verbose=0)
        # every row once per epoch over the two workers: 1437 rows is 22 batches of 64 and one of 29
        assert first["num_samples"] + then["num_samples"] == [tfds_digits.TRAIN_ROWS] * 3
        assert first["label_sum"] + then["label_sum"] == [labels["train"].sum()] * 3
        # about 2.3 (ten classes, no training) at the start; 0.39 after three epochs when measured
        assert then["loss"][-1] < 0.5 * first["loss"][0], (first, then)

        evaluated = est.evaluate(test, batch_size=64)
        assert evaluated["num_samples"] == tfds_digits.TEST_ROWS and evaluated["accuracy"] > 0.8, evaluated
        predicted = predictions(est.predict(test, batch_size=64))
        assert predicted.shape == (tfds_digits.TEST_ROWS, 10)
        # in tfds' order: the predicted classes score the evaluated accuracy against the labels read here
        assert np.mean(predicted.argmax(axis=1) == labels["test"]) == pytest.approx(evaluated["accuracy"], abs=1e-6)
        images = np.stack([image for image, _ in tfds.as_numpy(test)])
        np.testing.assert_allclose(predicted, est.get_model().predict(images, verbose=0), rtol=1e-4, atol=1e-5)
    finally:
        est.shutdown()


def test_creators_calling_tfds_load_on_every_worker_read_each_row_once(two_workers, data_dir, labels) -> None:
    est = Estimator.from_keras(model_creator=digits_classifier, config={"data_dir": data_dir}, seed=0)
    try:
        history = est.fit(supervised_creator, epochs=2, batch_size=64, verbose=0)
        assert history["num_samples"] == [tfds_digits.TRAIN_ROWS] * 2
        assert history["label_sum"] == [labels["train"].sum()] * 2
        assert history["loss"][-1] < history["loss"][0], history

        # the guide's creator form, on the test split through config
        def guide_form(config):
            return supervised_creator({**config, "split": "test"}, config["batch_size"])

        evaluated = est.evaluate(guide_form, batch_size=32)
        assert evaluated["num_samples"] == tfds_digits.TEST_ROWS and evaluated["label_sum"] == labels["test"].sum()

        # predict runs the creator in the Spark tasks, each keeping its slice: every row once, in
        # the creator's (file-shuffled) order, so compared as sorted rows
        predicted = predictions(est.predict(prepared_files_creator, batch_size=64))
        images = np.stack([image for image, _ in tfds.as_numpy(tfds.load(name=tfds_digits.NAME, split="train", data_dir=data_dir,
                                                                          as_supervised=True))])
        expected = est.get_model().predict(images, verbose=0)
        assert predicted.shape == expected.shape
        np.testing.assert_allclose(np.sort(predicted, axis=0), np.sort(expected, axis=0), rtol=1e-4, atol=1e-5)
    finally:
        est.shutdown()


def test_tfds_dicts_without_labels_and_endless_datasets_get_clear_errors(two_workers, data_dir) -> None:
    dicts = tfds.load(name=tfds_digits.NAME, split="test", data_dir=data_dir)
    est = Estimator.from_keras(model_creator=digits_classifier, seed=0)
    try:
        no_labels = r"data: the tf.data.Dataset's elements are dicts with keys \['image', 'label'\], with no labels apart; " \
                    r"fit and evaluate take \(features, labels\) pairs: .*tfds.load\(..., as_supervised=True\)"
        with pytest.raises(InvalidArgumentError, match=no_labels):
            est.fit(dicts, verbose=0)
        with pytest.raises(InvalidArgumentError, match=no_labels):
            est.evaluate(dicts)
        with pytest.raises(InvalidArgumentError, match=no_labels):   # a creator's dataset, checked on the workers
            est.evaluate(lambda config, batch_size: tfds.load(name="digits_mnist", split="test", data_dir=data_dir))
        with pytest.raises(InvalidArgumentError, match=r"elements are features alone, with no labels apart"):
            est.fit(dicts.map(lambda d: d["image"]), verbose=0)
        with pytest.raises(InvalidArgumentError, match=r"predict: the tf.data.Dataset's elements are dicts with keys "
                                                       r"\['image', 'label'\]; .* dataset.map\(lambda d: d\['image'\]\)"):
            est.predict(dicts)
        with pytest.raises(InvalidArgumentError, match=r"predict: the tf.data.Dataset repeats forever"):
            est.predict(dicts.map(lambda d: d["image"]).repeat())
        # features alone are what predict takes
        assert len(predictions(est.predict(dicts.map(lambda d: d["image"])))) == tfds_digits.TEST_ROWS
    finally:
        est.shutdown()
