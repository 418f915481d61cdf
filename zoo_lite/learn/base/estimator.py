"""What every Estimator does, whatever the framework: ``fit``, ``evaluate``, ``predict``,
checkpoints and recovery from a lost worker, implemented once.

The driver holds the model and its training state; the worker group
(:mod:`zoo_lite.learn.base.worker_group`) is started on first use, given that state, and kept across
``fit`` / ``evaluate`` calls. Data put into the workers is kept under a key (train, validation,
evaluation) and reused while the same input object comes back. If a worker fails, the group is
dropped and the next call starts a new one from the driver's state. Everything that depends on the
ML framework comes from the Estimator's :class:`~zoo_lite.learn.base.framework.Framework`; the
framework's Estimator class keeps only its user-facing signatures (Orca's) and its model format.
"""

from __future__ import annotations

import functools
import logging
import signal
import threading
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Hashable, Mapping, Optional, Sequence, TypeVar, Union

import numpy as np

from zoo_lite.context import OrcaContext, ray_context_started_on_demand, require_classic_session
from zoo_lite.data import Columns
from zoo_lite.errors import InvalidArgumentError, WorkerError, check_non_negative_int, check_positive_int, kind_of
from zoo_lite.keywords import suggest_keywords
from zoo_lite.learn.base import checkpoints, runner_calls, steps
from zoo_lite.learn.base.data_inputs import RowsInRayAhead, check_has_rows, feed_arrays, is_rows_input, rows_in_ray
from zoo_lite.learn.base.file_relay import FitFiles
from zoo_lite.learn.base.framework import Framework
from zoo_lite.learn.base.predict import InputSignature, predict_spark_df, predict_xshards, row_signature
from zoo_lite.learn.base.progress import ProgressReporter
from zoo_lite.learn.base.runner import EpochPlan, FitPlan, Runner
from zoo_lite.learn.base.spark_group import RowsFeed, SparkTaskGroup, check_task_slots, workers_on_executors
from zoo_lite.learn.base.udf import ModelUDF, model_udf
from zoo_lite.learn.base.worker_group import (Standby, WorkerGroup, Workers, planned_worker_count, start_worker_group,
                                              started_again_if_port_taken, wait_for_free_cpus)

if TYPE_CHECKING:
    from zoo_lite.data.ray_xshards import RayXShards

__all__ = ["GroupEstimator", "FitRequest", "FitRecovery", "EstimatorEntry", "Cols", "TRAIN", "VALIDATION", "EVALUATION"]

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
    columns: Columns
    total_rows: int
    batch_size: int


def _stage_per_call(method: Callable[..., T]) -> Callable[..., T]:
    """On the Spark backend, a call's barrier stage ends with the call (see :meth:`GroupEstimator._end_spark_call`)."""

    @functools.wraps(method)
    def one_stage(self: "GroupEstimator", *args: Any, **kwargs: Any) -> T:
        try:
            return method(self, *args, **kwargs)
        finally:
            self._end_spark_call()
    return one_stage


def _classic_session_only(call: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Refuse ``call`` at once on a Spark Connect session, before any data moves."""

    def decorate(method: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(method)
        def on_classic(self: "GroupEstimator", *args: Any, **kwargs: Any) -> T:
            require_classic_session(f"{type(self).__name__}.{call}")
            return method(self, *args, **kwargs)
        return on_classic
    return decorate


@dataclass
class _BoundRows:
    """Rows bound to the Spark backend's stages under one key, for as long as the same input comes back."""

    source: Callable[[], Any]   # weak reference to the input object
    columns: Columns
    feed: RowsFeed


@dataclass(frozen=True)
class FitRequest:
    """One ``fit``, in the terms every framework shares.

    ``epochs`` are the epoch indices to train, as the user's callbacks count them; ``verbose`` is
    0 (silent), 1 (a progress bar) or 2 (a line per epoch); ``options`` goes to the runners'
    ``train_epoch`` as the framework's own settings.
    """

    data: Any
    validation_data: Any
    columns: Columns
    batch_size: int
    epochs: range
    callbacks: Sequence[Any] = ()
    validation_freq: int = 1
    max_steps: Optional[int] = None
    val_max_steps: Optional[int] = None
    options: Mapping[str, Any] = field(default_factory=dict)
    verbose: int = 2


@suggest_keywords
class GroupEstimator:
    """An Estimator of any framework: the driver's model and state, the worker group, and the
    user's calls, with every framework-specific step taken from ``framework``.

    ``spec`` is the framework's picklable description of the model (what a runner is built
    from); ``extras`` is the training state beside the weights (``epoch`` and the framework's
    own), as ``framework.state`` encodes it.
    """

    def __init__(self, framework: Framework, spec: Any, model: Any, extras: dict[str, Any], workers: Workers,
                 start_timeout_s: float, max_failures: int, model_dir: Optional[str], logger: logging.Logger) -> None:
        self.framework = framework
        self.spec = spec
        self.workers = workers
        self.start_timeout_s = start_timeout_s
        self.max_failures = check_non_negative_int(max_failures, "max_failures")
        self.model_dir = model_dir
        self.logger = logger
        if workers.backend == "spark" and spec.worker_config.standby_workers:
            raise InvalidArgumentError(
                "WorkerConfig(standby_workers=True) keeps idle Ray workers beside the group, and backend='spark' has "
                "no Ray workers (each call runs its own Spark barrier stage): drop standby_workers, or use backend='ray'")
        self._model = model
        self._extras = extras
        self._group: Optional[Union[WorkerGroup, SparkTaskGroup]] = None
        #: backend="spark": the rows each input key is bound to, the keys the running call loaded,
        #: and the framework inputs it loaded (sent again to a stage started anew)
        self._bound_rows: dict[str, _BoundRows] = {}
        self._call_keys: set[str] = set()
        self._call_datasets: dict[str, tuple[Any, int]] = {}
        self._standby: Optional[Standby] = None   # a lost group's idle workers, for the next group
        self._workers_have_driver_state = False
        self._feeds: dict[str, _LoadedFeed] = {}
        self._busy = False
        self._kept_fit_extras: Any = None   # the callbacks' state after the last completed epoch
        #: the row shape and dtype of each model input, of the last rows fit, evaluate or predict saw (for spark_udf)
        self._seen_signature: Optional[InputSignature] = None
        _live_estimators.add(self)

    # -- state ----------------------------------------------------------------------------------------

    def _driver_state_bytes(self) -> bytes:
        return self.framework.state.encode(self._model, self._extras)

    def _take_state(self, blob: bytes) -> None:
        """Load state bytes into the driver's model; the workers get it on their next call."""
        self._extras = self.framework.state.decode_into(self._model, blob)
        self._workers_have_driver_state = False

    def _pull_state(self) -> bytes:
        """Bring rank 0's state (model, optimizer, scheduler, epoch) to the driver; its bytes."""
        blob = self._call_rank0(runner_calls.get_state)
        self._extras = self.framework.state.decode_into(self._model, blob)
        return blob

    def _trained_epochs(self) -> int:
        """Epochs the driver's state has been trained for (over every fit)."""
        return int(self._extras.get("epoch", 0))

    def get_model(self) -> Any:
        """The trained model on the driver."""
        return self._model

    def save_checkpoint(self, path: str) -> str:
        """Model, optimizer state and epoch counter in one file, to resume training from (written
        whole or not at all)."""
        checkpoints.write_atomically(path, self._driver_state_bytes())
        return path

    def load_checkpoint(self, path: str) -> None:
        """Resume from :meth:`save_checkpoint`'s file (or one that ``model_dir`` made): the next
        ``fit`` continues at the epoch after it."""
        self._take_state(checkpoints.read_file(path, "load_checkpoint"))

    # -- worker group -------------------------------------------------------------------------------

    @property
    def _on_spark(self) -> bool:
        """Whether the workers are the tasks of a Spark barrier stage (``backend="spark"``), not Ray actors."""
        return self.workers.backend == "spark"

    def _workers(self) -> Union[WorkerGroup, SparkTaskGroup]:
        """The live worker group, started (with Ray, on demand) if there is none."""
        if self._on_spark:
            return self._spark_stage()
        ray_context_started_on_demand()   # first, so that a Ray that lost a node is restarted
        if self._group is not None and not self._group_is_live():
            self._drop_group()
        if self._group is None:
            self._feeds = {}
            self._workers_have_driver_state = False
            factory = functools.partial(self.framework.runner_factory, self.framework, self.spec)
            standby, self._standby = self._standby, None
            self._group = start_worker_group(factory, self.workers.per_node, self.start_timeout_s, self.workers.total,
                                             standby=standby, keep_standby=self.spec.worker_config.standby_workers,
                                             free_cpus=self._release_idle_groups, use_warm_pool=True,
                                             heartbeat_timeout_s=self.spec.worker_config.heartbeat_timeout_s)
        if not self._workers_have_driver_state:
            blob = self._driver_state_bytes()
            self._call(lambda runner: runner.set_state(blob))
            self._workers_have_driver_state = True
        return self._group

    def _spark_stage(self) -> SparkTaskGroup:
        """The running barrier stage of this call, started with the rows it loaded if there is
        none (or it holds others); it is given the driver's state and the call's framework inputs."""
        wanted = [self._bound_rows[key].feed for key in sorted(self._call_keys) if key in self._bound_rows]
        group = self._group
        if group is not None and (not group.is_alive_in_current_ray() or group.feed_keys != {feed.key for feed in wanted}):
            self._drop_group()
        if self._group is None:
            self._workers_have_driver_state = False
            factory = functools.partial(self.framework.runner_factory, self.framework, self.spec)
            self._group = started_again_if_port_taken(lambda: SparkTaskGroup(
                factory, self._spark_worker_count(), wanted, self.start_timeout_s,
                self.spec.worker_config.heartbeat_timeout_s, self.framework.fresh_process_per_group))
            for key, (shipped, batch_size) in self._call_datasets.items():
                self._guarded(lambda group: group.call(functools.partial(runner_calls.load_dataset, key, shipped, batch_size)))
        if not self._workers_have_driver_state:
            blob = self._driver_state_bytes()
            self._guarded(lambda group: group.call(lambda runner: runner.set_state(blob)))
            self._workers_have_driver_state = True
        return self._group

    def _spark_worker_count(self) -> int:
        return workers_on_executors(OrcaContext.get_spark_session(), self.workers.per_node, self.workers.total)

    def _end_spark_call(self) -> None:
        """After a call on the Spark backend: its stage ends (it holds task slots), and the next
        call starts its own; the driver holds the state."""
        if self._on_spark:
            self._call_keys, self._call_datasets = set(), {}
            if self._group is not None:
                self._group.shutdown()
            self._group, self._feeds = None, {}

    def _call(self, call: Callable[[Runner], T], on_poll: Optional[Callable[[], None]] = None) -> list[T]:
        """``call(runner)`` on every worker; results in rank order. ``call`` is pickled to the
        workers: it must not capture the Estimator."""
        return self._guarded(lambda group: group.call(call, on_poll=on_poll))

    def _call_rank0(self, call: Callable[[Runner], T]) -> T:
        return self._guarded(lambda group: group.call_one(0, call))

    def _guarded(self, action: Callable[[WorkerGroup], Any]) -> Any:
        """Run ``action`` on the group; a failed group is dropped so that the next call starts afresh."""
        if self._group is None and self._on_spark:
            self._spark_stage()
        assert self._group is not None
        self._busy = True
        try:
            return action(self._group)
        except BaseException:
            if self._group is not None and not self._group.actors:
                self._drop_group()
            elif self._group is not None:   # every worker raised a clear error of its own: the group stays,
                self._workers_have_driver_state = False   # given the driver's state again before its next call
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
                other.shutdown(force=True)
            elif not other._busy:
                _logger.info("releasing the idle workers of another Estimator to free their CPUs for this one "
                             "(it restarts them on its next call)")
                other.shutdown()   # the driver holds its latest state: fit brings it back every epoch
        busy = sum(1 for other in others if other._busy)
        wait_for_free_cpus(f"{busy} other Estimator(s) of this process in a call" if busy else "")

    @property
    def num_workers(self) -> int:
        """Workers in the group, or in the group a call would start now (none is started for it);
        on the Spark backend, the tasks its stages run."""
        if self._on_spark:
            return self._spark_worker_count()
        return self._group.num_workers if self._group_is_live() else planned_worker_count(self.workers)

    @property
    def estimator(self) -> "GroupEstimator":
        """This Estimator. Orca's ``from_torch`` / ``from_keras`` returned a wrapper whose
        ``.estimator`` held the Ray workers, so Orca code reads ``est.estimator.num_workers``;
        zoo_lite has no wrapper (its worker handles are not public: compare weights with
        ``get_model()``)."""
        return self

    def shutdown(self, force: bool = False) -> None:
        """End the worker group and its standby (the Estimator can still ``predict``, ``save`` and
        start a new group)."""
        if self._group is not None:
            (self._group.kill if force else self._group.shutdown)()
            self._group.end_standby()
        if self._standby is not None:
            self._standby.end()
        self._group, self._feeds, self._standby = None, {}, None
        for bound in self._bound_rows.values():
            bound.feed.release()
        self._bound_rows = {}

    def _drop_group(self) -> None:
        """End a failed or stale group; its standby (``WorkerConfig(standby_workers=True)``) is
        kept for the next group to take over."""
        if self._group is not None:
            self._group.kill()
            standby = self._group.take_standby()
            if standby is not None:
                if self._standby is not None:
                    self._standby.end()
                self._standby = standby
        self._group, self._feeds = None, {}

    # -- recovery -------------------------------------------------------------------------------------

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
            self._drop_group()
            try:
                self._workers()   # a new group on the nodes alive, given the driver's state
                _logger.warning("worker %d lost in %s; resuming from %s on %d %sworkers (failure %d of at most %d)",
                                error.rank, where, self._resume_point(), self.num_workers,
                                "standby " if self._group is not None and self._group.from_standby else "",
                                len(recovery.failures), recovery.max_failures)
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

    def _nodes_added_back(self) -> bool:
        """Whether Ray on Spark has more nodes than the group runs on: Spark gave back executors
        after a loss, and the nodes started on them are up."""
        if self._on_spark:
            return False   # each stage runs on the executors Spark has then
        nodes = len(ray_context_started_on_demand(add_missing_nodes=True).nodes)
        return self._group is not None and nodes > self._group.nodes_used

    def _grow_group(self, recovery: FitRecovery) -> None:
        """Between epochs, once Ray on Spark has nodes again on executors Spark gave back after a
        loss: a new group over every node, resumed as after a loss (the batches do not depend on
        the number of workers, so the result is the same), not counted as a failure."""
        before = self._group.num_workers if self._group is not None else 0
        self.shutdown()
        self._workers()
        _logger.warning("Ray nodes were added back; the fit goes on from %s on %d workers (%d before)",
                        self._resume_point(), self.num_workers, before)
        recovery.restart()

    def _resume_point(self) -> str:
        """Where a resumed fit starts, for the log line."""
        done = self._trained_epochs()
        return f"epoch {done}" if done else "the start"

    def _keep_epoch_state(self, files: FitFiles) -> None:
        """After each completed epoch: the state (and the callbacks' state, when the fit has
        callbacks: one call fewer per epoch otherwise) a resumed fit starts from, written to
        ``model_dir`` by the driver, on its own host; the files rank 0's callbacks wrote where it
        does not see the driver's paths, copied to them."""
        blob = self._pull_state()
        if self.model_dir:
            checkpoints.write_atomically(checkpoints.checkpoint_path(self.model_dir, self._trained_epochs()), blob)
        self._kept_fit_extras = self._call_rank0(runner_calls.callback_states) if files.callbacks else None
        self._copy_relayed_files(files, final=False)

    def _copy_relayed_files(self, files: FitFiles, final: bool) -> None:
        if files.relaying:
            files.copy(self._call_rank0(functools.partial(runner_calls.relayed_files, final)))

    # -- data -----------------------------------------------------------------------------------------

    def _load(self, key: str, data: Any, columns: Columns, batch_size: int, need_labels: bool = True) -> tuple[int, int]:
        """Put ``data`` into the workers under ``key``; returns (total rows, global batch size)."""
        rows_input = is_rows_input(data)
        if self._on_spark:
            check_task_slots(OrcaContext.get_spark_context(), self._spark_worker_count())   # before any job runs
            self._call_keys.add(key)
            if rows_input:
                return self._bind_rows(key, data, columns, batch_size, need_labels), batch_size
        ahead = self._rows_ahead_of_a_group_start(data, columns, need_labels) if rows_input else None
        try:
            return self._load_started(key, data, columns, batch_size, need_labels, ahead)
        except BaseException:
            if ahead is not None:
                ahead.discard()
            raise

    def _group_is_live(self) -> bool:
        """Whether the worker group can take calls: it exists and runs in the current Ray (a
        :meth:`_workers` call starts one otherwise)."""
        return self._group is not None and self._group.is_alive_in_current_ray()

    def _rows_ahead_of_a_group_start(self, data: Any, columns: Columns, need_labels: bool) -> Optional[RowsInRayAhead]:
        """Where a Ray worker group is about to start, the rows' Spark job started now, to run
        beside the start; else None (they are put into Ray when needed). Not called on the Spark
        backend, whose rows stay in Spark."""
        if self._group_is_live():
            return None
        ray_context_started_on_demand()
        return RowsInRayAhead(data, columns, need_labels=need_labels)

    def _load_started(self, key: str, data: Any, columns: Columns, batch_size: int, need_labels: bool,
                      ahead: Optional[RowsInRayAhead]) -> tuple[int, int]:
        """:meth:`_load` once the rows' Spark job runs (``ahead``), if they are rows and a group starts."""
        rows_input = is_rows_input(data)
        if not rows_input and not self.framework.is_input(data):   # before a worker group starts for nothing
            raise InvalidArgumentError(
                f"data is a {kind_of(data)}; pass an XShards, a Spark DataFrame (with feature_cols and label_cols), "
                f"{self.framework.inputs}"
            )
        shipped = None if rows_input else self.framework.prepare_input(data)   # refuses what the workers cannot run
        if not rows_input:   # from the prepared input: a batched tf.data.Dataset object states its own batch size there
            batch_size = self.framework.batch_size(shipped, self.spec.config, batch_size)
        _check_batch_covers_workers(batch_size, self.num_workers)   # before a group starts for nothing
        self._workers()
        loaded = self._feeds.get(key)
        if loaded is not None and loaded.source() is data and loaded.columns == columns and rows_input:
            return loaded.total_rows, batch_size
        self._feeds.pop(key, None)
        if rows_input:
            in_ray = ahead.result() if ahead is not None else rows_in_ray(data, columns, need_labels=need_labels)
            total_rows = self._load_rows(key, in_ray)
        else:
            total_rows = self._call(functools.partial(runner_calls.load_dataset, key, shipped, batch_size))[0]
            check_has_rows(total_rows)
            if self._on_spark:   # loaded again by a stage started anew within this call
                self._call_datasets[key] = (shipped, batch_size)
        self._see_signature(self._call_rank0(functools.partial(runner_calls.feed_signature, self.framework.predict.feed_signature, key)))
        try:
            self._feeds[key] = _LoadedFeed(weakref.ref(data), columns, total_rows, batch_size)
        except TypeError:
            pass  # an input that cannot be weakly referenced is simply loaded again next time
        return total_rows, batch_size

    def _see_signature(self, signature: Optional[InputSignature]) -> None:
        """Keep the row signature of rows just seen (when known), for :meth:`spark_udf` and ``save``."""
        if signature:
            self._seen_signature = signature

    def _bind_rows(self, key: str, data: Any, columns: Columns, batch_size: int, need_labels: bool) -> int:
        """backend="spark": bind ``data``'s rows to ``key`` (counted and cut for the workers, read
        by the stage's tasks themselves); the same input again keeps its binding. Its row count."""
        bound = self._bound_rows.get(key)
        if bound is None or bound.source() is not data or bound.columns != columns:
            workers = self._spark_worker_count()
            _check_batch_covers_workers(batch_size, workers)
            if bound is not None:
                bound.feed.release()
                del self._bound_rows[key]
            if self._group is not None:   # a running stage holds the task slots the count needs; it restarts with these rows
                self._group.shutdown()
                self._group = None
            feed = RowsFeed.of(key, feed_arrays(data, columns, need_labels=need_labels).rdd, workers)
            if feed.total_rows == 0:
                feed.release()
                check_has_rows(0)
            try:
                bound = _BoundRows(weakref.ref(data), columns, feed)
            except TypeError:
                bound = _BoundRows(lambda: None, columns, feed)   # cannot be weakly referenced: bound anew next time
            self._bound_rows[key] = bound
            self._see_signature(row_signature(bound.feed.template["x"]))   # the one-row shard the driver holds
        return bound.feed.total_rows

    def _load_rows(self, key: str, in_ray: "RayXShards") -> int:
        """Spread rows in Ray (of an XShards or DataFrame) over the workers, local partitions first;
        they are released after."""
        assert self._group is not None
        try:
            partition_rows = in_ray.partition_rows()
            held = in_ray.assign_partition_ranges(self._group.actors)
            # one row a worker without rows can read its arrays' shapes from
            ref, partition, start, _ = next(r for mine in held for r in mine)
            one_row = (ref, partition, start, start + 1)
            calls = [functools.partial(runner_calls.load_rows, key, mine, partition_rows, one_row) for mine in held]
            self._guarded(lambda group: group.call_each(calls))
        finally:
            in_ray.release()   # the workers hold their own copies now
        return sum(partition_rows)

    # -- fit, evaluate, predict -----------------------------------------------------------------------

    @_classic_session_only("fit")
    @_stage_per_call
    def _fit(self, request: FitRequest, on_epoch: Callable[[int, dict[str, Any]], None] = lambda epoch, logs: None
             ) -> list[dict[str, Any]]:
        """Train as ``request`` says, resuming from the last completed epoch after a lost worker;
        each epoch's logs (equal on every worker), also handed to ``on_epoch(epoch, logs)``."""

        def load() -> tuple[int, int]:
            rows, batch = self._load(TRAIN, request.data, request.columns, request.batch_size)
            steps.steps_of_pass(rows, batch, request.max_steps, "data", "steps_per_epoch")   # a dataset that repeats forever needs it
            if request.validation_data is not None:
                val_rows, val_batch = self._load(VALIDATION, request.validation_data, request.columns, batch)
                steps.steps_of_pass(val_rows, val_batch, request.val_max_steps, "validation_data", "validation_steps")
            return rows, batch

        train_rows, batch_size = load()
        steps_each = steps.steps_of_pass(train_rows, batch_size, request.max_steps, "data", "steps_per_epoch")
        reporter = ProgressReporter(request.verbose == 1, steps_each * len(request.epochs), self._progress, self.logger,
                                    quiet=request.verbose == 0)
        history: list[dict[str, Any]] = []

        files = FitFiles(request.callbacks, self.framework.callback_output_paths)

        def begin(resumed_states: Optional[list[dict[str, Any]]] = None) -> None:
            group = self._workers()
            relays = files.plan(resumed=resumed_states is not None, staging_parent=group.node_temp_dir(0))
            plan = FitPlan(list(request.callbacks), request.epochs.stop, steps_each, relays, resumed_states)
            try:
                self._call(lambda runner: runner.begin_fit(plan))
            finally:
                relays.remove_markers()

        def restart() -> None:   # after a lost worker: the new group reloads the data and begins again
            load()
            reporter.resume_at(steps_each * len(history))
            begin(self._kept_fit_extras)

        self._kept_fit_extras = None
        recovery = FitRecovery(self.max_failures, restart)
        logs: dict[str, Any] = {}
        interrupts = _Interrupts()

        def poll() -> None:
            interrupts.check()
            reporter.poll()

        try:
            with interrupts:
                self._with_recovery(begin, recovery, "begin_fit")
                for done, epoch in enumerate(request.epochs, 1):
                    validate = request.validation_data is not None and done % request.validation_freq == 0
                    plan = EpochPlan(TRAIN, batch_size, VALIDATION if validate else None, epoch, True, request.max_steps,
                                     request.val_max_steps, request.options)
                    logs = self._with_recovery(lambda: self._call(lambda runner: runner.train_epoch(plan), poll)[0],
                                               recovery, f"epoch {self._trained_epochs() + 1}")
                    self._keep_epoch_state(files)
                    if self._group is not None:
                        self._group.start_standby()   # after a take-over: the next one, now that the fit runs again
                        self._group.refill_pool()
                    interrupts.check()
                    stop = logs.pop("stop_training", False)
                    reporter.epoch_done({"epoch": epoch + 1, **logs}, steps_each * done)
                    history.append(logs)
                    on_epoch(epoch, logs)
                    if stop:
                        break
                    if done < len(request.epochs) and self._nodes_added_back():
                        self._with_recovery(lambda: self._grow_group(recovery), recovery, "growing the worker group back")
                final = {name: value for name, value in logs.items() if name != "epoch_time_s"}
                self._with_recovery(lambda: self._call(lambda runner: runner.end_fit(final)), recovery, "end_fit")
                self._copy_relayed_files(files, final=True)
        finally:
            reporter.close()
        self._pull_state()
        return history

    def _progress(self) -> dict[str, Any]:
        return self._group.progress() if self._group else {}

    @_classic_session_only("evaluate")
    @_stage_per_call
    def _evaluate(self, data: Any, columns: Columns, batch_size: int, max_steps: Optional[int] = None) -> dict[str, Any]:
        """Loss and metrics over ``data``, aggregated exactly over the workers."""
        total_rows, batch_size = self._load(EVALUATION, data, columns, check_positive_int(batch_size, "batch_size"))
        steps.steps_of_pass(total_rows, batch_size, max_steps, "data", "num_steps")   # a dataset that repeats forever needs it
        result = self._call(lambda runner: runner.validate(EVALUATION, batch_size, max_steps))[0]
        if self._group is not None:
            self._group.refill_pool()
        return result

    def spark_udf(self, batch_size: int = 32, feature_cols: Cols = None, input_shapes: Any = None) -> ModelUDF:
        """The trained model as a PySpark function, for DataFrame jobs, SQL and Structured Streaming.

        Call it with the feature columns, one per model input and in order (numeric, array,
        nested-array or Vector columns, as ``predict`` takes); it gives what ``predict`` puts in
        its ``prediction`` column. It carries the model (sent once, loaded once per Python
        worker), so it keeps working after :meth:`shutdown`.

        Parameters
        ----------
        batch_size : int, default 32
            Rows the model runs on at a time, within each Arrow batch Spark sends
            (``spark.sql.execution.arrow.maxRecordsPerBatch`` rows, 10,000 by default).
        feature_cols : str or list of str, optional
            The columns the UDF takes when called with none (``udf()``); they also name the
            model inputs in errors.
        input_shapes : tuple or list of tuples, optional
            One row's shape per model input, e.g. ``[(4,)]``; it wins over what is known. A Keras
            model states its own. For a torch model the Estimator knows them from the rows it
            last fit, evaluated or predicted on (XShards, Spark DataFrames, DataLoaders and
            creators; not from an XShards ``predict`` alone, whose rows stay in the Spark tasks);
            pass them when it has seen none.

        Returns
        -------
        ModelUDF
            Call it with columns (``df.select(udf("features"))``), or register it for SQL
            (``spark.udf.register("model_predict", udf)``).

        Raises
        ------
        InvalidArgumentError
            Shapes unknown (a torch model whose Estimator has seen no rows, without
            ``input_shapes``) or wrong, or ``feature_cols`` not one per input. Called with the
            wrong number of columns, the UDF raises on the driver; a column whose rows do not
            have the input's shape fails the query with a message naming the column and input.

        Examples
        --------
        >>> import numpy as np, torch
        >>> from zoo_lite import init_orca_context, OrcaContext
        >>> from zoo_lite.learn.pytorch import Estimator
        >>> _ = init_orca_context(cores=2)
        >>> net = torch.nn.Linear(2, 1)
        >>> torch.nn.init.ones_(net.weight), torch.nn.init.zeros_(net.bias)  # doctest: +ELLIPSIS
        (...)
        >>> est = Estimator.from_torch(model=net, loss=torch.nn.MSELoss())
        >>> predict = est.spark_udf(input_shapes=[(2,)])
        >>> df = OrcaContext.get_spark_session().createDataFrame([([1.0, 2.0],), ([3.0, 4.0],)], "features array<double>")
        >>> [row.prediction for row in df.select(predict("features").alias("prediction")).collect()]
        [3.0, 7.0]

        Once the Estimator has seen rows (here a DataFrame ``predict``), the shapes are known:

        >>> _ = est.predict(df, feature_cols=["features"])
        >>> [row.p for row in df.select(est.spark_udf()("features").alias("p")).collect()]
        [3.0, 7.0]
        """
        return model_udf(self._model, self.framework.model_payload(self._model), self.framework.predict, batch_size,
                         feature_cols, input_shapes, seen=self._seen_signature)

    def _predict(self, data: Any, feature_cols: Cols, batch_size: int, output_cols: Optional[Sequence[str]] = None) -> Any:
        """Predictions next to the input, in its order, computed in the Spark tasks that hold it
        (see :mod:`zoo_lite.learn.base.predict`)."""
        from zoo_lite.data import SparkXShards, convert

        batch_size = check_positive_int(batch_size, "batch_size")
        features = Columns.of(feature_cols).features
        payload = self.framework.model_payload(self._model)
        if convert.is_spark_df(data):
            if features is None:
                raise InvalidArgumentError("predict: data is a Spark DataFrame; pass feature_cols=[...]")
            return predict_spark_df(data, self._model, payload, self.framework.predict, list(features), batch_size, output_cols,
                                    seen=self._see_signature)
        if isinstance(data, SparkXShards):
            return predict_xshards(data, payload, self.framework.predict, list(features) if features else None, batch_size,
                                   output_cols, known=self._seen_signature)
        raise InvalidArgumentError(f"predict: data is a {kind_of(data)}; pass an XShards or a Spark DataFrame")


class _Interrupts:
    """Ctrl-C always ends a fit. The SIGINT handler (pyspark's, which also cancels the running Spark
    jobs) raises ``KeyboardInterrupt`` in whatever the main thread is running; when that is a
    finaliser, such as py4j's weakref callback that frees a Java object, Python only prints it and
    the fit would go on (seen in a test: a 10,000-epoch fit ran to its end). So during a fit each
    SIGINT is also noted, and :meth:`check` raises ``KeyboardInterrupt`` at the fit's next poll."""

    def __init__(self) -> None:
        self.seen = False
        self._previous: Any = None

    def __enter__(self) -> "_Interrupts":
        if threading.current_thread() is threading.main_thread():   # only the main thread may set handlers
            self._previous = signal.getsignal(signal.SIGINT)
            if self._previous is not signal.SIG_IGN:
                signal.signal(signal.SIGINT, self._note)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if self._previous is not None and self._previous is not signal.SIG_IGN:
            signal.signal(signal.SIGINT, self._previous)

    def _note(self, signum: int, frame: Any) -> None:
        self.seen = True
        if callable(self._previous):
            self._previous(signum, frame)
        raise KeyboardInterrupt

    def check(self) -> None:
        if self.seen:
            self.seen = False
            raise KeyboardInterrupt("fit interrupted (SIGINT)")


@suggest_keywords
class EstimatorEntry:
    """What Orca's ``Estimator`` entry points share."""

    @staticmethod
    def latest_checkpoint(checkpoint_dir: str) -> Optional[str]:
        """The newest ``epoch=<n>.ckpt`` in ``checkpoint_dir`` (None if there is none).

        Examples
        --------
        >>> import tempfile
        >>> EstimatorEntry.latest_checkpoint(tempfile.mkdtemp()) is None
        True
        """
        return checkpoints.latest_checkpoint(checkpoint_dir)

    @staticmethod
    def _checked_common(backend: str, workers_per_node: Optional[int], config: Optional[dict[str, Any]],
                        seed: Optional[int], num_workers: Optional[int] = None) -> tuple[Workers, dict[str, Any], int]:
        """The workers asked for, the user's ``config`` (a copy) and the seed (drawn when None),
        after checking the arguments every ``from_*`` takes."""
        # Orca's backend names: "spark" trains in Spark barrier tasks, the others on Ray on Spark
        backends = ("ray", "spark", "tf2", "torch_distributed")
        if backend == "horovod":
            raise InvalidArgumentError(
                "backend='horovod' is not supported: zoo_lite does not provide Horovod (its workers average gradients "
                "themselves: gloo for PyTorch, a MultiWorkerMirroredStrategy loop for Keras); use backend='ray' (the "
                "default), or backend='spark' on a cluster that cannot run Ray"
            )
        if backend not in backends:
            raise InvalidArgumentError(
                f"backend={backend!r} is not supported; use one of {list(backends)} ('ray', the default, and Orca's "
                "'tf2' and 'torch_distributed' train on Ray on Spark; 'spark' trains in Spark barrier tasks, without Ray)"
            )
        if config is not None and not isinstance(config, dict):
            raise InvalidArgumentError(f"config={config!r} must be a dict")
        if seed is None:
            seed = int(np.random.SeedSequence().entropy % (2**31))
        return (Workers.of(workers_per_node, num_workers, "spark" if backend == "spark" else "ray"), dict(config or {}),
                int(seed))


def _check_batch_covers_workers(batch_size: int, workers: int) -> None:
    if batch_size < workers:
        raise InvalidArgumentError(
            f"batch_size={batch_size} is smaller than the number of workers ({workers}); batch_size is the global batch, "
            f"split over the workers: use at least {workers}, or fewer workers"
        )


def _unreadable(error: WorkerError, cause: BaseException) -> WorkerError:
    """A lost worker's fit that could not resume: its data could not be read again from the source."""
    return WorkerError(error.rank, f"{error.message}; fit could not resume because its data could not be read again "
                                   f"from the source ({type(cause).__name__}: {str(cause)[:1000]}); pass data that can be "
                                   "read again (files that stay in place, an XShards, a creator function)")
