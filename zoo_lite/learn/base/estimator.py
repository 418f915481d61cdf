"""What every Estimator does around its worker group, whatever the framework.

The driver holds the model's latest state; the worker group (:mod:`zoo_lite.learn.base.worker_group`)
is started on first use, given that state, and kept across ``fit`` / ``evaluate`` calls. Data put
into the workers is kept under a key (train, validation, evaluation) and reused while the same input
object comes back. If a worker fails, the group is dropped and the next call starts a new one from
the driver's state. A framework fills in the runner, its state bytes and its own data inputs.
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Optional, Sequence, TypeVar, Union

from zoo_lite.context import ray_context_started_on_demand
from zoo_lite.errors import InvalidArgumentError, WorkerError, check_non_negative_int, kind_of
from zoo_lite.learn.base.data_inputs import is_rows_input, normalize_cols, rows_in_ray
from zoo_lite.learn.base.worker_group import WorkerGroup, WorkerInfo, wait_for_free_cpus

__all__ = ["GroupEstimator", "FitRecovery", "Cols", "TRAIN", "VALIDATION", "EVALUATION"]

Cols = Union[None, str, Sequence[Hashable]]
TRAIN, VALIDATION, EVALUATION = "train", "validation", "evaluation"
T = TypeVar("T")

_logger = logging.getLogger("zoo_lite.learn")
#: every Estimator of this process, so that a new worker group can ask idle ones for their CPUs
_live_estimators: "weakref.WeakSet[GroupEstimator]" = weakref.WeakSet()


@dataclass
class FitRecovery:
    """How one ``fit`` resumes after a lost worker: the Estimator rebuilds its group on the Ray
    nodes alive, from the state the driver kept after the last completed epoch.

    ``restart`` reloads the data from its source and begins the fit again on the new group; the
    failures seen so far are kept for the final error.
    """

    max_failures: int
    restart: Callable[[], None]
    failures: list[WorkerError] = field(default_factory=list)

    def give_up_error(self) -> WorkerError:
        """The last failure, with every attempt's cause, once ``max_failures`` is used up."""
        last = self.failures[-1]
        causes = "; ".join(f"attempt {n}: worker {e.rank}: {e.message}" for n, e in enumerate(self.failures, 1))
        return WorkerError(last.rank, f"fit gave up after {len(self.failures)} lost worker(s), more than "
                                      f"max_failures={self.max_failures} (raise max_failures to retry more). "
                                      f"Causes: {causes}", last.remote_traceback, lost=True)


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

    def __init__(self, workers_per_node: int, start_timeout_s: float, max_failures: int = 3) -> None:
        self.workers_per_node = workers_per_node
        self.start_timeout_s = start_timeout_s
        self.max_failures = check_non_negative_int(max_failures, "max_failures")
        self._group: Optional[WorkerGroup] = None
        self._workers_have_driver_state = False
        self._feeds: dict[str, _LoadedFeed] = {}
        self._busy = False
        self._kept_fit_extras: Any = None   # what _fit_extras gave after the last completed epoch
        _live_estimators.add(self)

    # -- hooks ----------------------------------------------------------------------------------------

    def _runner_factory(self) -> Callable[[WorkerInfo], Any]:
        """A picklable ``WorkerInfo -> runner``."""
        raise NotImplementedError

    def _driver_state_bytes(self) -> bytes:
        """The driver's model state, as the runners' ``set_state`` takes it."""
        raise NotImplementedError

    def _pull_state(self) -> None:
        """Bring rank 0's state (model, optimizer, scheduler, epoch) to the driver."""
        raise NotImplementedError

    def _fit_extras(self) -> Any:
        """What else a resumed fit needs besides the model state (e.g. Keras callbacks' state), kept
        after every epoch as ``_kept_fit_extras`` for the framework's ``restart``."""
        return None

    def _is_framework_input(self, data: Any) -> bool:
        """True for the framework's own inputs (a DataLoader, a tf.data.Dataset, a creator)."""
        raise NotImplementedError

    def _framework_batch_size(self, data: Any, batch_size: int) -> int:
        """The global batch of a framework input (its own batch size, when it has one)."""
        return batch_size

    # -- worker group -------------------------------------------------------------------------------

    def _workers(self) -> WorkerGroup:
        """The live worker group, started (with Ray, on demand) if there is none."""
        ray_context_started_on_demand()   # first, so that a Ray that lost a node is restarted
        if self._group is not None and not self._group.is_alive_in_current_ray():
            self._group.kill()
            self._group = None
        if self._group is None:
            self._feeds = {}
            self._workers_have_driver_state = False
            self._release_idle_groups()
            self._group = WorkerGroup(self._runner_factory(), self.workers_per_node, self.start_timeout_s)
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
        self._busy = True
        try:
            return action(self._group)
        except BaseException:
            if self._group is not None and not self._group.actors:
                self._group, self._feeds = None, {}
            raise
        finally:
            self._busy = False

    def _release_idle_groups(self) -> None:
        """Free the CPUs a new group needs: the other Estimators' idle groups give theirs back (their
        state is on the driver, and they restart on their next call); then wait briefly for Ray to
        see the CPUs free, or say what holds them."""
        others = [e for e in list(_live_estimators) if e is not self and e._group is not None]
        for other in others:
            if not other._group.is_alive_in_current_ray():   # ended with a Ray that was restarted
                other._group.kill()
                other._group, other._feeds = None, {}
            elif not other._busy:
                _logger.info("releasing the idle workers of another Estimator to free their CPUs for this one "
                             "(it restarts them on its next call)")
                other.shutdown()   # the driver holds its latest state: fit brings it back every epoch
        busy = sum(1 for other in others if other._busy)
        wait_for_free_cpus(f"{busy} other Estimator(s) of this process in a call" if busy else "")

    def _with_recovery(self, action: Callable[[], T], recovery: FitRecovery, where: str) -> T:
        """Run ``action``; when a worker is lost, rebuild the group from the driver's state with
        ``recovery.restart`` and run it again, at most ``recovery.max_failures`` times per fit."""
        while True:
            try:
                return action()
            except WorkerError as error:
                if not error.lost:
                    raise
                self._recover(error, recovery, where)

    def _recover(self, error: WorkerError, recovery: FitRecovery, where: str) -> None:
        """A new group resumed from the driver's state; a loss during the restart counts as a failure too."""
        while True:
            recovery.failures.append(error)
            if len(recovery.failures) > recovery.max_failures:
                raise recovery.give_up_error() from error
            _logger.warning("worker %d lost in %s (%s); starting a new worker group", error.rank, where, error.message)
            self.shutdown(force=True)
            try:
                self._workers()   # a new group on the nodes alive, given the driver's state
                _logger.warning("worker %d lost in %s; resuming from %s on %d workers (failure %d of at most %d)",
                                error.rank, where, self._resume_point(), self.num_workers, len(recovery.failures),
                                recovery.max_failures)
                self._reload(recovery, error)
                return
            except WorkerError as again:
                if not again.lost:
                    raise
                error = again

    @staticmethod
    def _reload(recovery: FitRecovery, error: WorkerError) -> None:
        try:
            recovery.restart()
        except WorkerError as lost_again:
            if lost_again.lost:
                raise   # another loss: counted, and retried, by the caller
            raise _unreadable(error, lost_again) from lost_again
        except Exception as cause:  # noqa: BLE001 - whatever the source raised is named in the error
            raise _unreadable(error, cause) from cause

    def _trained_epochs(self) -> int:
        """Epochs the driver's state has been trained for (over every fit)."""
        raise NotImplementedError

    def _resume_point(self) -> str:
        """Where a resumed fit starts, for the log line."""
        done = self._trained_epochs()
        return f"epoch {done}" if done else "the start"

    def _fit_recovery(self, restart: Callable[[], None]) -> FitRecovery:
        """The recovery plan of a new ``fit`` (nothing kept from an earlier fit's callbacks)."""
        self._kept_fit_extras = None
        return FitRecovery(self.max_failures, restart)

    def _keep_epoch_state(self) -> None:
        """After each completed epoch: the state (and fit extras) a resumed fit starts from."""
        self._pull_state()
        self._kept_fit_extras = self._fit_extras()

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

    def _put(self, key: str, data: Any, feature_cols: Cols, label_cols: Cols, batch_size: int,
             need_labels: bool = True) -> tuple[int, int]:
        """:meth:`_load`, after the framework's own preparation of an input (none by default)."""
        return self._load(key, data, feature_cols, label_cols, batch_size, need_labels)

    def _load_for_fit(self, data: Any, validation_data: Any, feature_cols: Cols, label_cols: Cols,
                      batch_size: int) -> tuple[int, int]:
        """Put the training (and validation) data into the workers; (training rows, global batch)."""
        rows, global_batch = self._put(TRAIN, data, feature_cols, label_cols, batch_size)
        if validation_data is not None:
            self._put(VALIDATION, validation_data, feature_cols, label_cols, global_batch)
        return rows, global_batch

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


def _unreadable(error: WorkerError, cause: BaseException) -> WorkerError:
    """A lost worker's fit that could not resume: its data could not be read again from the source."""
    return WorkerError(error.rank, f"{error.message}; fit could not resume because its data could not be read again "
                                   f"from the source ({type(cause).__name__}: {str(cause)[:1000]}); pass data that can be "
                                   "read again (files that stay in place, an XShards, a creator function)")
