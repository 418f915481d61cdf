"""Per-worker batches for the Keras runner: rows the worker holds, or a tf.data pipeline.

A batch is ``(features, labels, global_rows)``: this worker's share of one global batch as NumPy
arrays or tensors (possibly with no rows), and the global batch's row count, which divides the
summed loss so that the workers' gradients add up to the global batch's mean gradient. The step
arithmetic is :mod:`zoo_lite.learn.base.steps`.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterator, Optional, Sequence

import numpy as np

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.base import steps

__all__ = ["KerasBatch", "HeldRowsFeed", "DatasetFeed", "model_inputs", "as_model_dtype"]

KerasBatch = tuple[Any, Any, int]


def model_inputs(arrays: Sequence[np.ndarray]) -> Any:
    """What a Keras model is called with: one array, or a list for a model with several inputs."""
    return arrays[0] if len(arrays) == 1 else list(arrays)


def as_model_dtype(array: np.ndarray, float_dtype: str) -> np.ndarray:
    """Floating columns take the model's float dtype (Spark's doubles become float32); how labels
    are cast for a Keras loss.

    Examples
    --------
    >>> as_model_dtype(np.array([1.0, 2.0]), "float32").dtype, as_model_dtype(np.array([1, 2]), "float32").dtype
    (dtype('float32'), dtype('int64'))
    """
    return array.astype(float_dtype, copy=False) if np.issubdtype(array.dtype, np.floating) else array


def _take(array: np.ndarray, positions: np.ndarray) -> np.ndarray:
    run = steps.contiguous_run(positions)
    return array[run] if run is not None else np.take(array, positions, axis=0)   # a run: a view, no copy


class HeldRowsFeed(steps.HeldRows):
    """Rows this worker holds (from an XShards or a Spark DataFrame), as NumPy arrays (see
    :class:`zoo_lite.learn.base.steps.HeldRows`); the labels come cast already (:func:`as_model_dtype`)."""

    def __init__(self, arrays: dict[str, Any], partition_rows: Sequence[int], held: Sequence[tuple[int, int, int]],
                 world_size: int, float_dtype: str) -> None:
        super().__init__(partition_rows, held, world_size)
        self.features = tuple(as_model_dtype(np.asarray(x), float_dtype) for x in arrays["x"])
        self.labels = arrays.get("y")

    def batch(self, positions: np.ndarray, global_rows: int) -> KerasBatch:
        labels = _take(self.labels, positions) if self.labels is not None else None
        return model_inputs([_take(x, positions) for x in self.features]), labels, global_rows

    def sample(self) -> KerasBatch:
        """A batch of at most one row, to build metrics and check shapes."""
        return self.batch(np.arange(min(1, self.local_rows)), 1)


class DatasetFeed:
    """A tf.data pipeline every worker builds in full and takes its slice of (see
    :mod:`zoo_lite.learn.tf2.datasets`); ``build(epoch)`` gives the unbatched dataset of an epoch.

    A pipeline that repeats forever (``total_rows`` is :data:`~zoo_lite.learn.base.steps.UNBOUNDED_ROWS`)
    is iterated once for the feed's life (one fit, or one evaluate): each epoch takes its
    ``max_steps`` global batches where the last one stopped, as Keras' iterator does.
    """

    def __init__(self, build: Any, total_rows: int, rank: int, world_size: int) -> None:
        self.build = build
        self.total_rows = total_rows
        self.rank = rank
        self.world_size = world_size
        self._streams: dict[tuple[str, int], Iterator[KerasBatch]] = {}   # (use, batch size) -> the endless batches

    @property
    def unbounded(self) -> bool:
        """Whether the pipeline repeats forever."""
        return self.total_rows == steps.UNBOUNDED_ROWS

    def _stream(self, use: str, batch_size: int, epoch: int) -> Iterator[KerasBatch]:
        """The one iterator of an endless pipeline for ``use`` ("train" or "eval"), built on first use."""
        key = (use, batch_size)
        if key not in self._streams:
            self._streams[key] = self._batches(batch_size, epoch, None, self.world_size, self.rank)
        return self._streams[key]

    def _batches(self, batch_size: int, epoch: int, max_steps: Optional[int], world_size: int, rank: int) -> Iterator[KerasBatch]:
        from zoo_lite.learn.tf2.datasets import worker_dataset

        for features, labels, rows in worker_dataset(self.build(epoch), batch_size, rank, world_size, max_steps):
            yield features, (labels if not isinstance(labels, tuple) or labels else None), int(rows)

    def train_batches(self, batch_size: int, shuffle: bool, seed: int, epoch: int,
                      max_steps: Optional[int]) -> Iterator[KerasBatch]:
        if not self.unbounded:
            return self._batches(batch_size, epoch, max_steps, self.world_size, self.rank)
        if max_steps is None:   # the driver asks for steps_per_epoch first; this guards the loop
            raise InvalidArgumentError("data: the tf.data.Dataset repeats forever; pass steps_per_epoch=<global steps>")
        return itertools.islice(self._stream("train", batch_size, epoch), max_steps)

    def eval_batches(self, batch_size: int) -> Iterator[KerasBatch]:
        # an endless pipeline: the caller takes validation_steps / num_steps batches, and the next call goes on
        batches = self._stream("eval", batch_size, 0) if self.unbounded else self._batches(batch_size, 0, None, self.world_size,
                                                                                             self.rank)
        for features, labels, _ in batches:
            yield features, labels, 0

    def sample(self) -> KerasBatch:
        for features, labels, _ in self._batches(1, 0, 1, 1, 0):
            return features, labels, 1
        raise AssertionError("an empty dataset is refused when it is loaded")
