"""Orca's TFRecord functions: importable, so that Orca programs load, and refused when called.

zoo_lite keeps images in Parquet instead (:mod:`~zoo_lite.data.image.readers`).
"""

from __future__ import annotations

from typing import Any

from zoo_lite.errors import InvalidArgumentError

__all__ = ["write_tfrecord", "read_tfrecord"]

def write_tfrecord(format: str, output_path: str, *args: Any, **kwargs: Any) -> None:
    """Not provided: Orca wrote ImageNet-style TFRecords; zoo_lite keeps images in Parquet.

    Raises
    ------
    InvalidArgumentError
        Always, saying what to use instead.

    Examples
    --------
    >>> from zoo_lite.data.image import write_tfrecord
    >>> write_tfrecord("imagenet", "/tmp/out", imagenet_path="/data")
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: write_tfrecord is not provided by zoo_lite: keep images with their labels in a Parquet table with write_parquet('image', output_path, path), and read them back with read_parquet('image', ...) or read_images(path, size)
    """
    raise InvalidArgumentError(
        "write_tfrecord is not provided by zoo_lite: keep images with their labels in a Parquet table with "
        "write_parquet('image', output_path, path), and read them back with read_parquet('image', ...) or read_images(path, size)"
    )


def read_tfrecord(format: str, path: str, *args: Any, **kwargs: Any) -> Any:
    """Not provided: read TFRecord files with ``tf.data.TFRecordDataset`` in a data creator.

    Raises
    ------
    InvalidArgumentError
        Always, saying what to use instead.

    Examples
    --------
    >>> from zoo_lite.data.image import read_tfrecord
    >>> read_tfrecord("imagenet", "/data/records")
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: read_tfrecord is not provided by zoo_lite: read TFRecord files with tf.data.TFRecordDataset inside a data creator passed to Estimator.from_keras(...).fit, or keep images in Parquet with write_parquet('image', ...)
    """
    raise InvalidArgumentError(
        "read_tfrecord is not provided by zoo_lite: read TFRecord files with tf.data.TFRecordDataset inside a data "
        "creator passed to Estimator.from_keras(...).fit, or keep images in Parquet with write_parquet('image', ...)"
    )
