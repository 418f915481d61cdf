"""``digits_mnist``: a TensorFlow Datasets builder of scikit-learn's 8x8 digits, built offline.

tfds' own datasets download their files, which this machine cannot; this builder makes a real
tfds dataset (TFRecord files, ``dataset_info.json``, PNG-encoded images) from the digits that ship
with scikit-learn, in MNIST's form: ``{"image": uint8 (8, 8, 1), "label": ClassLabel(10)}``, with
a ``train`` and a ``test`` split. Once :func:`build` has prepared it in a ``data_dir``,
``tfds.load(name="digits_mnist", split="train", data_dir=data_dir)`` works as for MNIST.

Importing this module registers the builder with tfds; the Ray and Spark workers import it by
name (``tests.learn.tfds_digits``), as a data creator calling ``tfds.load`` on them does.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any, Iterator, Optional

import numpy as np
import tensorflow_datasets as tfds

__all__ = ["DigitsMnist", "NAME", "TRAIN_ROWS", "TEST_ROWS", "build", "digits"]

NAME = "digits_mnist"
#: every fifth digit is in ``test``, the others in ``train``
TRAIN_ROWS, TEST_ROWS = 1437, 360


def digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 1797 digits as MNIST-like uint8 images ``(n, 8, 8, 1)`` (0-16 scaled to
    0-255) and int64 labels."""
    from sklearn.datasets import load_digits

    loaded = load_digits()
    images = (loaded.images * 16).clip(0, 255).astype(np.uint8)[..., None]
    return images, loaded.target.astype(np.int64)


class DigitsMnist(tfds.core.GeneratorBasedBuilder):
    """scikit-learn's digits as a tfds dataset named ``digits_mnist`` (the class name in snake case)."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "scikit-learn's load_digits, every fifth row in test."}
    # tfds looks for the file of a builder defined in a package (for its download checksums) with
    # importlib_resources, which tensorflow-datasets 4.9.10 requires only on Python < 3.9 (the tfds
    # extra installs it); this builder downloads nothing, so it has no checksums and needs no path
    code_path = None

    def _info(self) -> tfds.core.DatasetInfo:
        return tfds.core.DatasetInfo(
            builder=self,
            description="scikit-learn's 8x8 digits in MNIST's form, built offline.",
            features=tfds.features.FeaturesDict({
                "image": tfds.features.Image(shape=(8, 8, 1)),
                "label": tfds.features.ClassLabel(num_classes=10),
            }),
            supervised_keys=("image", "label"),   # what as_supervised=True gives
        )

    def _split_generators(self, dl_manager: Any) -> dict[str, Iterator[tuple[int, dict[str, Any]]]]:
        del dl_manager   # nothing to download
        return {"train": self._generate_examples(test=False), "test": self._generate_examples(test=True)}

    def _generate_examples(self, test: bool) -> Iterator[tuple[int, dict[str, Any]]]:
        images, labels = digits()
        for index in range(len(labels)):
            if (index % 5 == 0) == test:
                yield index, {"image": images[index], "label": int(labels[index])}


def build(data_dir: str, num_shards: Optional[int] = None) -> str:
    """Prepare ``digits_mnist`` in ``data_dir`` (a few seconds; nothing is downloaded) and return
    ``data_dir``; a dataset already prepared there is kept. ``num_shards`` files per split
    (tfds' choice, one here, when None) give ``shuffle_files=True`` something to shuffle.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     info = tfds.builder(NAME, data_dir=build(folder, num_shards=3)).info
    >>> info.splits["train"].num_examples, info.splits["test"].num_examples, info.splits["train"].num_shards
    (1437, 360, 3)
    """
    tfds.disable_progress_bar()
    # no look-up of a prepared copy on Google's storage: the machine may have no network
    config = tfds.download.DownloadConfig(num_shards=num_shards, try_download_gcs=False)
    with contextlib.redirect_stdout(io.StringIO()):   # tfds prints "Downloading and preparing", which is not so here
        DigitsMnist(data_dir=data_dir).download_and_prepare(download_config=config)
    return data_dir
