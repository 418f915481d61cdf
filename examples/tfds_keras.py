"""TensorFlow Datasets to the Keras Estimator: Orca's guide code on a dataset tfds builds offline.

1. builds ``digits_mnist`` with tfds' own builder API (``tfds.core.GeneratorBasedBuilder``) from
   scikit-learn's digits (1797 8×8 images, 10 classes; every fifth in ``test``), into a
   ``data_dir``: TFRecord files and ``dataset_info.json``, as ``tfds.load`` leaves a downloaded
   MNIST. Nothing is downloaded;
2. runs the guide's code as written but for the dataset's name: ``tfds.load`` →
   ``map(preprocess)`` → ``shuffle`` → ``Estimator.from_keras(keras_model=model)`` → ``fit``,
   then trains a few more epochs. The Dataset goes to the Ray workers as its graph; each worker
   reads the files and keeps its share of every global batch;
3. evaluates the test split, and predicts it: the predictions come back as an XShards in the
   dataset's order, and their accuracy against tfds' labels is the evaluated one.

Needs the tfds extra: ``pip install "zoo_lite[tfds]"``. Run: ``python examples/tfds_keras.py``
(local Spark), or ``--cluster-mode local-cluster``; on a real cluster, give ``--data-dir`` a path
every host sees (the workers read the files there).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import tempfile
from typing import Any, Iterator

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from zoo_lite import init_orca_context, stop_orca_context


class DigitsMnist(tfds.core.GeneratorBasedBuilder):
    """scikit-learn's digits in MNIST's form, ``{"image": uint8 (8, 8, 1), "label": ClassLabel(10)}``;
    tfds names it ``digits_mnist`` after the class."""

    VERSION = tfds.core.Version("1.0.0")
    # tfds looks for a builder's file (for download checksums) with importlib_resources, which
    # tensorflow-datasets 4.9.10 requires only on Python < 3.9; this one downloads nothing
    code_path = None

    def _info(self) -> tfds.core.DatasetInfo:
        return tfds.core.DatasetInfo(
            builder=self,
            description="scikit-learn's 8x8 digits in MNIST's form, built offline.",
            features=tfds.features.FeaturesDict({"image": tfds.features.Image(shape=(8, 8, 1)),
                                                 "label": tfds.features.ClassLabel(num_classes=10)}),
            supervised_keys=("image", "label"),
        )

    def _split_generators(self, dl_manager: Any) -> dict[str, Iterator[tuple[int, dict[str, Any]]]]:
        return {"train": self._generate_examples(test=False), "test": self._generate_examples(test=True)}

    def _generate_examples(self, test: bool) -> Iterator[tuple[int, dict[str, Any]]]:
        from sklearn.datasets import load_digits

        digits = load_digits()
        images = (digits.images * 16).clip(0, 255).astype(np.uint8)[..., None]   # 0-16 -> 0-255, as MNIST's pixels
        for index, label in enumerate(digits.target):
            if (index % 5 == 0) == test:
                yield index, {"image": images[index], "label": int(label)}


def build_dataset(data_dir: str) -> None:
    """Prepare ``digits_mnist`` in ``data_dir`` (tfds' message about downloading left out: nothing is)."""
    tfds.disable_progress_bar()
    with contextlib.redirect_stdout(io.StringIO()):
        DigitsMnist(data_dir=data_dir).download_and_prepare(
            download_config=tfds.download.DownloadConfig(try_download_gcs=False))


def classifier() -> Any:
    import keras

    model = keras.Sequential([keras.Input(shape=(8, 8, 1)), keras.layers.Flatten(), keras.layers.Dense(64, activation="relu"),
                              keras.layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


def preprocess(data: dict[str, Any]) -> tuple[Any, Any]:
    """The guide's: the image scaled to [0, 1], and the label."""
    return tf.cast(data["image"], tf.float32) / 255., data["label"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster-mode", default="local", help="local, local-cluster, standalone or spark-submit")
    parser.add_argument("--epochs", type=int, default=5, help="epochs in all, the guide's first one included")
    parser.add_argument("--data-dir", default=None, help="where to build the dataset (a temporary folder when not given)")
    args = parser.parse_args()

    dataset_dir = args.data_dir or tempfile.mkdtemp(prefix="tensorflow_datasets-")
    build_dataset(dataset_dir)
    model = classifier()
    init_orca_context(cluster_mode=args.cluster_mode, cores=2, init_ray_on_spark=True)
    try:
        # --- Orca's guide, as written but for the dataset's name ---
        # --8<-- [start:guide]
        from zoo_lite.learn.tf.estimator import Estimator
        dataset = tfds.load(name="digits_mnist", split="train", data_dir=dataset_dir)
        dataset = dataset.map(preprocess)        # preprocess(data) -> (image / 255., label)
        dataset = dataset.shuffle(1000)          # unbatched; the Estimator batches and shards it
        est = Estimator.from_keras(keras_model=model)
        est.fit(data=dataset)                    # batch_size and epochs take their defaults
        # --8<-- [end:guide]
        # --- end of the guide's code ---
        if args.epochs > 1:
            est.fit(data=dataset, epochs=args.epochs, initial_epoch=1, verbose=0)

        # --8<-- [start:evaluate]
        test = tfds.load(name="digits_mnist", split="test", data_dir=dataset_dir).map(preprocess)
        result = est.evaluate(test, verbose=0)
        predicted = np.concatenate([shard["prediction"] for shard in est.predict(test).collect()])
        # --8<-- [end:evaluate]
        labels = np.array([int(label) for _, label in tfds.as_numpy(test)])
        est.shutdown()
        print(f"train rows: {int(dataset.cardinality())}, test rows: {len(labels)}")
        print(f"test accuracy: {result['accuracy']:.3f}")
        print(f"predicted rows: {len(predicted)} of {len(labels)}, accuracy of the predictions: "
              f"{np.mean(predicted.argmax(axis=1) == labels):.3f}")
    finally:
        stop_orca_context()
        if args.data_dir is None:
            shutil.rmtree(dataset_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
