"""Step arithmetic of data-parallel training: which rows each worker uses at each step.

Pure NumPy, the same on every worker, so that all workers agree without talking:

- ``batch_size`` is the global batch. An epoch has ``ceil(total_rows / batch_size)`` steps on
  every worker, and every step's global batch has ``batch_size`` rows (the last one the rest).
- Rows held by workers (XShards, DataFrames): every global batch takes from each *partition* a
  share proportional to its size, in an order seeded per partition and epoch. Which worker holds
  which rows depends on where Spark and Ray placed them; the batches do not, so a fixed seed gives
  the same training whatever the placement, each row is used once per epoch, no global batch is
  empty, and a worker's share of a step follows the rows it holds.
- Rows every worker can index (a dataset from a DataLoader): one global order per epoch, cut into
  global batches, each split over the workers.
"""

from __future__ import annotations

import math
from typing import Any, Iterator, Optional, Sequence

import numpy as np

from zoo_lite.errors import InvalidArgumentError

__all__ = ["UNBOUNDED_ROWS", "contiguous_run", "steps_per_epoch", "steps_of_pass", "apportion_batches", "held_rows_batches",
           "shared_dataset_batches", "epoch_rng", "HeldRows"]

#: the row count of a dataset that repeats forever (tf.data's ``INFINITE_CARDINALITY``): its
#: epochs and evaluations end after the steps the user gives, never by running out of rows
UNBOUNDED_ROWS = -1


def contiguous_run(positions: np.ndarray) -> Optional[slice]:
    """The slice of ``positions`` when they are one increasing run (taken as a view, without a
    copy), else None.

    Examples
    --------
    >>> contiguous_run(np.array([3, 4, 5])), contiguous_run(np.array([3, 5])), contiguous_run(np.array([], int))
    (slice(3, 6, None), None, None)
    """
    if not len(positions):
        return None
    start, stop = int(positions[0]), int(positions[-1]) + 1
    return slice(start, stop) if stop - start == len(positions) and bool((np.diff(positions) == 1).all()) else None


def steps_per_epoch(total_rows: int, batch_size: int) -> int:
    """Steps that cover ``total_rows`` once with global batches of ``batch_size``.

    Examples
    --------
    >>> steps_per_epoch(10, 4)
    3
    """
    if total_rows <= 0:
        raise InvalidArgumentError(f"data has {total_rows} rows; training and evaluation need at least one row")
    return math.ceil(total_rows / batch_size)


def steps_of_pass(total_rows: int, batch_size: int, max_steps: Optional[int], argument: str, steps_argument: str) -> int:
    """Global steps of one epoch (or evaluation) over ``total_rows``: one pass, cut short at
    ``max_steps``; for a dataset that repeats forever (:data:`UNBOUNDED_ROWS`), ``max_steps``,
    which must then be given. ``argument`` names the data and ``steps_argument`` the step count
    in the error.

    Examples
    --------
    >>> steps_of_pass(10, 4, None, "data", "steps_per_epoch"), steps_of_pass(10, 4, 2, "data", "steps_per_epoch")
    (3, 2)
    >>> steps_of_pass(UNBOUNDED_ROWS, 4, 7, "data", "steps_per_epoch")
    7
    >>> steps_of_pass(UNBOUNDED_ROWS, 4, None, "data", "steps_per_epoch")
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: data: the dataset repeats forever (e.g. tf.data's .repeat() without a count), so a pass over it never ends; pass steps_per_epoch=<global steps> (each step is one global batch, split over the workers), or give the dataset an end
    """
    if total_rows == UNBOUNDED_ROWS:
        if max_steps is None:
            raise InvalidArgumentError(
                f"{argument}: the dataset repeats forever (e.g. tf.data's .repeat() without a count), so a pass over it never "
                f"ends; pass {steps_argument}=<global steps> (each step is one global batch, split over the workers), or give "
                "the dataset an end"
            )
        return max_steps
    full = steps_per_epoch(total_rows, batch_size)
    return full if max_steps is None else min(full, max_steps)


def apportion_batches(holder_rows: Sequence[int], batch_size: int) -> np.ndarray:
    """Rows each holder (a partition) gives to each global batch: a ``(steps, holders)`` int array.

    Each row sums to the global batch size (the last to the remainder) and each column to that
    holder's rows. A step's rows come from the holders in proportion to the rows they have left;
    the remainder from the largest fractional shares.

    Examples
    --------
    >>> apportion_batches([3, 5], 8).tolist()
    [[3, 5]]
    >>> apportion_batches([5, 5], 4).tolist()
    [[2, 2], [2, 2], [1, 1]]
    """
    remaining = np.asarray(holder_rows, dtype=np.int64).copy()
    total = int(remaining.sum())
    plan = np.zeros((steps_per_epoch(total, batch_size), len(remaining)), dtype=np.int64)
    for step in range(plan.shape[0]):
        left = int(remaining.sum())
        size = min(batch_size, left)
        shares = remaining * size / left
        counts = np.floor(shares).astype(np.int64)
        shortfall = size - int(counts.sum())
        if shortfall:
            # a positive fractional share implies rows left beyond the floor, so these stay valid
            order = np.argsort(-(shares - counts), kind="stable")[:shortfall]
            counts[order] += 1
        plan[step] = counts
        remaining -= counts
    return plan


def epoch_rng(seed: int, epoch: int, rank: Optional[int] = None) -> np.random.Generator:
    """The random generator of one epoch (and one worker, when ``rank`` is given)."""
    key = [seed, epoch] if rank is None else [seed, epoch, rank]
    return np.random.default_rng(key)


def held_rows_batches(partition_rows: Sequence[int], held: Sequence[tuple[int, int, int]], batch_size: int,
                      shuffle: bool, seed: int, epoch: int) -> list[np.ndarray]:
    """For each step of an epoch, the positions of the rows this worker uses, where ``held`` lists
    the ``(partition, start, stop)`` row ranges it holds, concatenated in that order.

    Examples
    --------
    >>> [b.tolist() for b in held_rows_batches([4, 4], [(1, 0, 4)], 4, False, 0, 0)]
    [[0, 1], [2, 3]]
    """
    plan = apportion_batches(partition_rows, batch_size)
    steps = plan.shape[0]
    # where each held row sits in this worker's arrays, per partition (-1: held by another worker)
    local_position: dict[int, np.ndarray] = {}
    offset = 0
    for partition, start, stop in held:
        positions = local_position.setdefault(partition, np.full(partition_rows[partition], -1, dtype=np.int64))
        positions[start:stop] = np.arange(offset, offset + stop - start)
        offset += stop - start
    # a partition's rows in this epoch's order, cut into its share of each step; keep the held ones
    per_step: list[list[np.ndarray]] = [[] for _ in range(steps)]
    for partition in sorted(local_position):
        rows = partition_rows[partition]
        order = epoch_rng(seed, epoch, partition).permutation(rows) if shuffle else np.arange(rows)
        in_order = local_position[partition][order]
        bounds = np.concatenate([[0], np.cumsum(plan[:, partition])])
        for step in range(steps):
            chunk = in_order[bounds[step]:bounds[step + 1]]
            per_step[step].append(chunk[chunk >= 0])
    empty = np.zeros(0, dtype=np.int64)
    return [np.concatenate(parts) if parts else empty for parts in per_step]


def shared_dataset_batches(total_rows: int, batch_size: int, num_workers: int, rank: int,
                           shuffle: bool, seed: int, epoch: int) -> list[np.ndarray]:
    """This worker's indices for each step when every worker holds the whole dataset.

    One global order per epoch (the same on every worker), global batches of ``batch_size``, each
    split into ``num_workers`` near-equal parts; this worker takes part ``rank``.

    Examples
    --------
    >>> [b.tolist() for b in shared_dataset_batches(5, 4, 2, 0, False, 0, 0)]
    [[0, 1], [4]]
    """
    order = epoch_rng(seed, epoch).permutation(total_rows) if shuffle else np.arange(total_rows)
    steps = steps_per_epoch(total_rows, batch_size)
    return [np.array_split(order[step * batch_size:(step + 1) * batch_size], num_workers)[rank] for step in range(steps)]


class HeldRows:
    """The rows one worker holds of data in partitions, and the positions of each batch in them.

    ``partition_rows`` are the row counts of every partition of the data; ``held`` lists the
    ``(partition, start, stop)`` ranges this worker holds, in the order its arrays concatenate them.
    A framework's feed subclasses it with ``batch(positions, global_rows)``: this worker's rows
    at ``positions`` as the framework's batch, where ``global_rows`` is the step's global row count.

    Examples
    --------
    >>> rows = HeldRows([4, 4], [(1, 0, 4)], world_size=2)
    >>> rows.total_rows, rows.local_rows, [p.tolist() for p in rows.eval_positions(4)]
    (8, 4, [[0, 1], [2, 3]])
    """

    def __init__(self, partition_rows: Sequence[int], held: Sequence[tuple[int, int, int]], world_size: int) -> None:
        self.partition_rows = list(partition_rows)
        self.held = list(held)
        self.world_size = world_size

    @property
    def total_rows(self) -> int:
        return sum(self.partition_rows)

    @property
    def local_rows(self) -> int:
        return sum(stop - start for _, start, stop in self.held)

    def train_positions(self, batch_size: int, shuffle: bool, seed: int, epoch: int) -> list[np.ndarray]:
        """This worker's share of every global batch of an epoch (see :func:`held_rows_batches`)."""
        return held_rows_batches(self.partition_rows, self.held, batch_size, shuffle, seed, epoch)

    def eval_positions(self, batch_size: int) -> Iterator[np.ndarray]:
        """This worker's rows in order, in local batches (no step is shared, so sizes may differ)."""
        local = max(1, batch_size // self.world_size)
        for start in range(0, self.local_rows, local):
            yield np.arange(start, min(start + local, self.local_rows))

    def batch(self, positions: np.ndarray, global_rows: int) -> Any:
        """This worker's rows at ``positions`` as the framework's batch."""
        raise NotImplementedError

    def train_batches(self, batch_size: int, shuffle: bool, seed: int, epoch: int,
                      max_steps: Optional[int] = None) -> Iterator[Any]:
        """This worker's batch of every step of an epoch (at most ``max_steps``)."""
        for step, positions in enumerate(self.train_positions(batch_size, shuffle, seed, epoch)[:max_steps]):
            yield self.batch(positions, min(batch_size, self.total_rows - step * batch_size))

    def eval_batches(self, batch_size: int) -> Iterator[Any]:
        """This worker's rows in order, in local batches."""
        for positions in self.eval_positions(batch_size):
            yield self.batch(positions, len(positions))
