"""MNIST's files, written offline from scikit-learn's digits, for ``torchvision.datasets.MNIST``.

torchvision's MNIST downloads its four idx files, which this machine cannot; with
``download=False`` it reads them from ``root/MNIST/raw``. :func:`write_mnist` writes them there in
MNIST's format (big-endian idx headers, uint8 pixels, 28x28 images) from the 1797 8x8 digits that
ship with scikit-learn, each scaled to 0-255, enlarged 3x to 24x24 and centred in 28x28 as
MNIST centres its 20x20 digits. The first :data:`TRAIN_ROWS` are the ``train`` split, the rest
``test`` (``t10k``). Only NumPy and scikit-learn are needed, so Spark executors and Ray workers
can import this module too.
"""

from __future__ import annotations

import os
import struct

import numpy as np

__all__ = ["write_mnist", "digit_images", "write_idx", "TRAIN_ROWS", "TEST_ROWS", "FILES"]

TRAIN_ROWS, TEST_ROWS = 1500, 297
#: split -> (images file, labels file), as torchvision's MNIST names them in ``root/MNIST/raw``
FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
         "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
_UBYTE = 0x08   # the idx type code of unsigned bytes


def digit_images() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits as MNIST-like images: uint8 ``(1797, 28, 28)`` and uint8 labels."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    small = np.round(digits.images * (255 / 16)).astype(np.uint8)          # 0-16 -> 0-255
    enlarged = np.kron(small, np.ones((3, 3), dtype=np.uint8))             # 8x8 -> 24x24
    return np.pad(enlarged, ((0, 0), (2, 2), (2, 2))), digits.target.astype(np.uint8)


def write_idx(path: str, array: np.ndarray) -> None:
    """Write a uint8 array as an idx file: 0, 0, type, rank, then each dimension as a big-endian
    int32 (images: magic 2051, labels: 2049), then the bytes."""
    header = struct.pack(">BBBB", 0, 0, _UBYTE, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    with open(path, "wb") as file:
        file.write(header + np.ascontiguousarray(array, dtype=np.uint8).tobytes())


def write_mnist(root: str) -> str:
    """Write the four MNIST files into ``root/MNIST/raw`` and return ``root``, the argument
    ``torchvision.datasets.MNIST(root, download=False)`` takes.

    Examples
    --------
    >>> import tempfile
    >>> from torchvision.datasets import MNIST
    >>> root = write_mnist(tempfile.mkdtemp())
    >>> train, test = MNIST(root, train=True, download=False), MNIST(root, train=False, download=False)
    >>> len(train), len(test), train[0][0].size, train[0][1]
    (1500, 297, (28, 28), 0)
    """
    images, labels = digit_images()
    raw = os.path.join(root, "MNIST", "raw")
    os.makedirs(raw, exist_ok=True)
    for (images_file, labels_file), rows in zip(FILES.values(), (slice(0, TRAIN_ROWS), slice(TRAIN_ROWS, None))):
        write_idx(os.path.join(raw, images_file), images[rows])
        write_idx(os.path.join(raw, labels_file), labels[rows])
    return root
