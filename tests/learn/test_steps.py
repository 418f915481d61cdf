"""Step arithmetic: every row once per epoch, equal steps on every worker, no empty global step."""

from __future__ import annotations

import numpy as np
import pytest

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.base.steps import apportion_batches, held_rows_batches, shared_dataset_batches, steps_per_epoch

CASES = [([3, 5], 8), ([3, 5], 3), ([0, 7], 2), ([1, 0, 0], 1), ([10, 2, 2, 10], 5), ([4, 4], 100), ([1, 1], 2),
         ([2, 1], 1), ([1000, 999], 64)]

PARTITIONS = [7, 0, 4, 9]
#: ways Spark and Ray may place the partitions above on workers: (partition, start, stop) per worker
PLACEMENTS = {
    "one partition set each": [[(0, 0, 7), (1, 0, 0)], [(2, 0, 4), (3, 0, 9)]],
    "swapped": [[(2, 0, 4), (3, 0, 9)], [(0, 0, 7), (1, 0, 0)]],
    "a partition cut in two": [[(0, 0, 7), (3, 0, 2)], [(2, 0, 4), (3, 2, 9)]],
    "one worker": [[(0, 0, 7), (2, 0, 4), (3, 0, 9)]],
    "a worker with nothing": [[], [(3, 0, 9), (0, 0, 7), (2, 0, 4)]],
}
BATCH = 6


@pytest.mark.parametrize("holder_rows,batch_size", CASES)
def test_apportioned_batches_cover_every_row_once_with_full_global_batches(holder_rows, batch_size) -> None:
    plan = apportion_batches(holder_rows, batch_size)
    total = sum(holder_rows)
    assert plan.shape == (steps_per_epoch(total, batch_size), len(holder_rows))
    assert plan.sum(axis=0).tolist() == holder_rows
    expected_sizes = [batch_size] * (plan.shape[0] - 1) + [total - batch_size * (plan.shape[0] - 1)]
    assert plan.sum(axis=1).tolist() == expected_sizes
    assert (plan >= 0).all()


def _global_batches(placement: list, shuffle: bool, seed: int = 1, epoch: int = 0) -> list[list[tuple[int, int]]]:
    """Each step's global batch as sorted (partition, row) pairs, from every worker's local positions."""
    per_worker = []
    for held in placement:
        rows_held = [(partition, row) for partition, start, stop in held for row in range(start, stop)]
        batches = held_rows_batches(PARTITIONS, held, BATCH, shuffle, seed, epoch)
        per_worker.append([[rows_held[i] for i in batch] for batch in batches])
    assert len({len(batches) for batches in per_worker}) == 1, "every worker runs the same number of steps"
    return [sorted(pair for batches in per_worker for pair in batches[step]) for step in range(len(per_worker[0]))]


@pytest.mark.parametrize("shuffle", [False, True])
def test_global_batches_do_not_depend_on_where_the_rows_are(shuffle) -> None:
    results = {name: _global_batches(placement, shuffle) for name, placement in PLACEMENTS.items()}
    reference = results.pop("one partition set each")
    for name, batches in results.items():
        assert batches == reference, name


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("placement", list(PLACEMENTS))
def test_every_row_is_used_once_per_epoch_in_full_global_batches(shuffle, placement) -> None:
    batches = _global_batches(PLACEMENTS[placement], shuffle)
    assert len(batches) == steps_per_epoch(sum(PARTITIONS), BATCH)
    assert [len(batch) for batch in batches] == [6, 6, 6, 2]
    used = [pair for batch in batches for pair in batch]
    assert sorted(used) == [(p, r) for p, rows in enumerate(PARTITIONS) for r in range(rows)]


def test_shuffling_is_seeded_and_changes_with_the_epoch() -> None:
    placement = PLACEMENTS["a partition cut in two"]
    first = _global_batches(placement, True, seed=3, epoch=0)
    assert first == _global_batches(placement, True, seed=3, epoch=0)
    assert first != _global_batches(placement, True, seed=3, epoch=1)
    assert first != _global_batches(placement, True, seed=4, epoch=0)
    assert first != _global_batches(placement, False)


@pytest.mark.parametrize("shuffle", [False, True])
def test_shared_dataset_batches_split_each_global_batch_over_the_workers(shuffle) -> None:
    total, batch, workers = 23, 5, 3
    per_worker = [shared_dataset_batches(total, batch, workers, rank, shuffle, 0, 0) for rank in range(workers)]
    assert {len(batches) for batches in per_worker} == {steps_per_epoch(total, batch)}
    for step in range(len(per_worker[0])):
        union = np.concatenate([per_worker[rank][step] for rank in range(workers)])
        assert len(union) == min(batch, total - step * batch)
    everything = np.concatenate([b for batches in per_worker for b in batches])
    assert sorted(everything.tolist()) == list(range(total))


def test_no_rows_is_a_clear_error() -> None:
    with pytest.raises(InvalidArgumentError, match="data has 0 rows"):
        apportion_batches([0, 0], 4)
    with pytest.raises(InvalidArgumentError, match="data has 0 rows"):
        held_rows_batches([0], [(0, 0, 0)], 4, False, 0, 0)
