"""What every Estimator does around its worker group, whatever the framework.

The driver holds the model's latest state; the worker group (:mod:`zoo_lite.learn.base.worker_group`)
is started on first use, given that state, and kept across ``fit`` / ``evaluate`` calls. Data put
into the workers is kept under a key (train, validation, evaluation) and reused while the same input
object comes back. If a worker fails, the group is dropped and the next call starts a new one from
the driver's state. A framework fills in the runner, its state bytes and its own data inputs.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Optional, Sequence, Union

from zoo_lite.errors import InvalidArgumentError, kind_of
from zoo_lite.learn.base.data_inputs import is_rows_input, normalize_cols, rows_in_ray
from zoo_lite.learn.base.worker_group import WorkerGroup, WorkerInfo

__all__ = ["GroupEstimator", "Cols", "TRAIN", "VALIDATION", "EVALUATION"]

Cols = Union[None, str, Sequence[Hashable]]
TRAIN, VALIDATION, EVALUATION = "train", "validation", "evaluation"


@dataclass
class _LoadedFeed:
    """What a worker group holds under one key, to reuse it for the same input."""

    source: Callable[[], Any]   # weak reference to the input object
    columns: tuple[Any, ...]
    total_rows: int
    batch_size: int


class GroupEstimator:
    """The worker-group half of an Estimator; a framework subclass provides the hooks below."""

    #: what the framework's own inputs are called in errors, e.g. "a torch DataLoader"
    framework_inputs = ""

    def __init__(self, workers_per_node: int, start_timeout_s: float) -> None:
        self.workers_per_node = workers_per_node
        self.start_timeout_s = start_timeout_s
        self._group: Optional[WorkerGroup] = None
        self._workers_have_driver_state = False
        self._feeds: dict[str, _LoadedFeed] = {}

    # -- hooks ----------------------------------------------------------------------------------------

    def _runner_factory(self) -> Callable[[WorkerInfo], Any]:
        """A picklable ``WorkerInfo -> runner``."""
        raise NotImplementedError

    def _driver_state_bytes(self) -> bytes:
        """The driver's model state, as the runners' ``set_state`` takes it."""
        raise NotImplementedError

    def _is_framework_input(self, data: Any) -> bool:
        """True for the framework's own inputs (a DataLoader, a tf.data.Dataset, a creator)."""
        raise NotImplementedError

    def _framework_batch_size(self, data: Any, batch_size: int) -> int:
        """The global batch of a framework input (its own batch size, when it has one)."""
        return batch_size

    # -- worker group -------------------------------------------------------------------------------

    def _workers(self) -> WorkerGroup:
        """The live worker group, started (with Ray, on demand) if there is none."""
        if self._group is not None and not self._group.is_alive_in_current_ray():
            self._group.kill()
            self._group = None
        if self._group is None:
            self._group = WorkerGroup(self._runner_factory(), self.workers_per_node, self.start_timeout_s)
            self._feeds = {}
            self._workers_have_driver_state = False
        if not self._workers_have_driver_state:
            self._call("set_state", self._driver_state_bytes())
            self._workers_have_driver_state = True
        return self._group

    def _call(self, method: str, *args: Any, on_poll: Optional[Callable[[], None]] = None) -> list[Any]:
        return self._guarded(lambda group: group.call(method, *args, on_poll=on_poll))

    def _call_rank0(self, method: str, *args: Any) -> Any:
        return self._guarded(lambda group: group.call_one(0, method, *args))

    def _guarded(self, action: Callable[[WorkerGroup], Any]) -> Any:
        """Run ``action`` on the group; a failed group is dropped so that the next call starts afresh."""
        assert self._group is not None
        try:
            return action(self._group)
        except BaseException:
            if not self._group.actors:
                self._group, self._feeds = None, {}
            raise

    @property
    def num_workers(self) -> int:
        """Workers in the group (starts it if needed)."""
        return self._workers().num_workers

    def shutdown(self, force: bool = False) -> None:
        """End the worker group (the Estimator can still ``predict``, ``save`` and start a new group)."""
        if self._group is not None:
            (self._group.kill if force else self._group.shutdown)()
        self._group, self._feeds = None, {}

    # -- data -----------------------------------------------------------------------------------------

    def _load(self, key: str, data: Any, feature_cols: Cols, label_cols: Cols, batch_size: int,
              need_labels: bool = True) -> tuple[int, int]:
        """Put ``data`` into the workers under ``key``; returns (total rows, global batch size)."""
        group = self._workers()
        columns = (tuple(normalize_cols(feature_cols, "feature_cols") or ()), tuple(normalize_cols(label_cols, "label_cols") or ()))
        loaded = self._feeds.get(key)
        rows_input = is_rows_input(data)
        if loaded is not None and loaded.source() is data and loaded.columns == columns and rows_input:
            return loaded.total_rows, batch_size
        self._feeds.pop(key, None)
        if not rows_input and not self._is_framework_input(data):
            raise InvalidArgumentError(
                f"data is a {kind_of(data)}; pass an XShards, a Spark DataFrame (with feature_cols and label_cols), "
                f"{self.framework_inputs}"
            )
        if not rows_input:
            batch_size = self._framework_batch_size(data, batch_size)
        if batch_size < group.num_workers:
            raise InvalidArgumentError(
                f"batch_size={batch_size} is smaller than the number of workers ({group.num_workers}); batch_size is the "
                f"global batch, split over the workers: use at least {group.num_workers}, or fewer workers_per_node"
            )
        if rows_input:
            total_rows = self._load_rows(key, data, feature_cols, label_cols, need_labels)
        else:
            total_rows = self._guarded(lambda g: g.call("load_dataset", key, data, batch_size, None))[0]
        if total_rows == 0:
            raise InvalidArgumentError("data has no rows; training and evaluation need at least one row")
        try:
            self._feeds[key] = _LoadedFeed(weakref.ref(data), columns, total_rows, batch_size)
        except TypeError:
            pass  # an input that cannot be weakly referenced is simply loaded again next time
        return total_rows, batch_size

    def _load_rows(self, key: str, data: Any, feature_cols: Cols, label_cols: Cols, need_labels: bool) -> int:
        """Spread the rows of an XShards or DataFrame over the workers, local partitions first."""
        assert self._group is not None
        in_ray = rows_in_ray(data, feature_cols, label_cols, need_labels=need_labels)
        try:
            partition_rows = in_ray.partition_rows()
            held = in_ray.assign_partition_ranges(self._group.actors)
            # one row a worker without rows can read its arrays' shapes from
            ref, partition, start, _ = next(r for mine in held for r in mine)
            one_row = (ref, partition, start, start + 1)
            self._guarded(lambda g: g.call_each("load_rows", [(key, mine, partition_rows, one_row) for mine in held]))
        finally:
            in_ray.release()   # the workers hold their own copies now
        return sum(partition_rows)
