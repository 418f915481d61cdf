"""The framework seam on the workers: the typed :class:`Runner` protocol and what every runner shares.

A runner lives in one Ray actor of the worker group (:mod:`zoo_lite.learn.base.worker_group`).
The Estimator calls it with a function of the runner (``group.call(lambda r: r.train_epoch(plan))``),
never a method name, so each call is checked against this protocol. Every framework's runner has
the same methods with the same signatures; what differs between frameworks travels in the plans'
``options``.

:class:`RunnerBase` holds what is not framework-specific: the worker's place in the group, its
feeds by key, the rows taken out of Ray's object store, and the progress snapshots sent to the
driver. A framework adds its step, its state format and its tensor exchange.
"""

from __future__ import annotations

import itertools
import socket
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Protocol, Sequence

import numpy as np

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.base.callbacks import callback_states
from zoo_lite.learn.base.file_relay import RelayPlan, StagedFiles
from zoo_lite.learn.base.host_exchange import HostSum, host_sum_if_one_host
from zoo_lite.learn.base.ports import reserve_port

if TYPE_CHECKING:
    from zoo_lite.learn.base.framework import Framework
    from zoo_lite.learn.base.worker_group import WorkerInfo

__all__ = ["Runner", "RunnerBase", "FitPlan", "EpochPlan", "RowRange"]

#: ``(object ref, partition index, start row, stop row)``: rows of one partition in Ray's object store
RowRange = tuple[Any, int, int, int]

#: seconds between progress snapshots sent to the driver
PUBLISH_INTERVAL_S = 0.2


@dataclass(frozen=True)
class FitPlan:
    """What a runner's ``begin_fit`` gets: the fit's callbacks and its extent.

    ``relays`` says where the callbacks write files and how rank 0 tells whether it sees those
    paths (:mod:`zoo_lite.learn.base.file_relay`); ``resumed_states`` (from
    :meth:`Runner.callback_states`) continues a fit that lost a worker.

    Examples
    --------
    >>> FitPlan(callbacks=[], epochs=3, steps_per_epoch=10).epochs
    3
    """

    callbacks: Sequence[Any]
    epochs: int
    steps_per_epoch: int
    relays: Optional[RelayPlan] = None
    resumed_states: Optional[list[dict[str, Any]]] = None


@dataclass(frozen=True)
class EpochPlan:
    """What a runner's ``train_epoch`` gets: the feed to train on and how.

    ``epoch_index`` is the epoch as the user's callbacks count it; ``max_steps`` /
    ``val_max_steps`` cap the steps (None: one pass); ``options`` holds a framework's own settings
    (e.g. Keras' ``class_weight``).

    Examples
    --------
    >>> plan = EpochPlan(key="train", batch_size=32, val_key=None, epoch_index=0)
    >>> plan.shuffle, dict(plan.options)
    (True, {})
    """

    key: str
    batch_size: int
    val_key: Optional[str]
    epoch_index: int
    shuffle: bool = True
    max_steps: Optional[int] = None
    val_max_steps: Optional[int] = None
    options: Mapping[str, Any] = field(default_factory=dict)


class Runner(Protocol):
    """One training worker, whatever the framework. Results are equal on every worker where the
    method is a collective (``connect``, ``load_*``, ``train_epoch``, ``validate``).

    Two hooks are optional: ``listen(host) -> port``, the worker's rendezvous port, which the
    runner binds itself before ``connect`` where its framework allows (without it the worker
    group picks a free port, which the framework binds later); and a static ``warm_up()``, the
    imports a standby worker makes ahead of its use.
    """

    def connect(self, addresses: list[tuple[str, int]]) -> None:
        """Join the group's collective runtime; ``addresses`` are every worker's, by rank."""

    def close(self) -> None:
        """Release what the runner holds (process group, shared memory, files)."""

    def exchange_kind(self) -> str:
        """How gradients are summed: "none", "shared_memory", or the framework's network collective."""

    def get_state(self) -> bytes:
        """Model, optimizer and epoch state, in the framework's state codec."""

    def set_state(self, blob: bytes) -> None:
        """Take the state :meth:`get_state` (or the driver's codec) gave."""

    def load_rows(self, key: str, held: list[RowRange], partition_rows: list[int], one_row: RowRange) -> int:
        """Take this worker's rows out of Ray's object store as the feed ``key``; its row count."""

    def load_shards(self, key: str, shards: list[Any], partition_rows: Sequence[int],
                    ranges: Sequence[tuple[int, int, int]]) -> int:
        """This worker's rows, read by itself (a Spark task), as the feed ``key``; its row count."""

    def load_dataset(self, key: str, data: Any, batch_size: int) -> int:
        """A framework input (DataLoader, tf.data, creator) as the feed ``key``; its total rows."""

    def begin_fit(self, plan: FitPlan) -> None:
        """Start a fit: callbacks, progress."""

    def train_epoch(self, plan: EpochPlan) -> dict[str, Any]:
        """One epoch; the logs, equal on every worker (``stop_training`` when a callback stopped it)."""

    def validate(self, key: str, batch_size: int, max_steps: Optional[int] = None) -> dict[str, Any]:
        """Loss and metrics over the feed ``key``, aggregated exactly over the workers."""

    def end_fit(self, logs: dict[str, Any]) -> None:
        """End a fit's callbacks."""

    def relayed_files(self, final: bool) -> list[tuple[str, bytes]]:
        """``(driver path, bytes)`` of the files the callbacks wrote into the staging folder since
        the last call (rank 0); ``final`` deletes the folder after."""

    def callback_states(self) -> list[dict[str, Any]]:
        """The fit's callbacks' state, for a resumed fit."""

    def first_step_at(self) -> Optional[float]:
        """Wall-clock time of the current fit's first step (None before it)."""


class RunnerBase:
    """What every framework's runner shares: place in the group, state through the framework's
    codec, feeds, rows with their labels cast, the epoch and validation loops, progress, and the
    files its callbacks write.

    A subclass sets ``model`` and ``label_rule`` (what ``framework.cast_labels`` takes) and fills
    in the hooks: :meth:`held_feed`, :meth:`state_extras` / :meth:`take_extras`, the training
    hooks (:meth:`epoch_begins`, :meth:`train_step`, :meth:`running_totals`, :meth:`epoch_logs`,
    :meth:`epoch_ends`) and the validation hooks (:meth:`validation_begins`, :meth:`eval_step`,
    :meth:`validation_logs`), plus the group plumbing of :class:`Runner`. A feed gives
    ``train_batches(batch_size, shuffle, seed, epoch, max_steps)`` and ``eval_batches(batch_size)``.
    """

    model: Any
    label_rule: Any
    #: whether the process may build a later group's runner once this one closed (the warm pool
    #: takes it back); a framework that sets up process-wide state once says no (or says so in
    #: ``connect``, per group, and answers :meth:`used_process_serves` to match)
    process_serves_again: bool = False

    @classmethod
    def used_process_serves(cls, spec: Any, hosts: list[str]) -> bool:
        """Whether a process that served an earlier group may run this group's runner, given the
        group's ``spec`` and the address of each rank's host (the warm pool asks before it gives
        out a process handed back to it)."""
        return cls.process_serves_again

    def __init__(self, framework: "Framework", spec: Any, info: "WorkerInfo") -> None:
        self.framework = framework
        self.spec = spec
        self.info = info
        self.rank = info.rank
        self.world_size = info.world_size
        self.feeds: dict[str, Any] = {}
        self.progress: dict[str, Any] = {}
        self.staged_files = StagedFiles(None)
        self.epoch = 0   # epochs trained, over every fit: seeds the shuffle and names checkpoints
        self.fit_callbacks: list[Any] = []   # the running fit's callbacks, as the user gave them
        self._published_at = 0.0
        self._held_port: Optional[socket.socket] = None   # holds listen()'s port until the framework binds it

    def listen(self, host: str) -> int:
        """A port free on ``host``, in ``WorkerConfig(rendezvous_ports=...)`` if set, held by this
        worker until :meth:`release_port`, just before the framework binds it in ``connect`` (a
        framework that can bind it at once overrides this)."""
        self.release_port()
        self._held_port = reserve_port(host, self.spec.worker_config.rendezvous_ports)
        return int(self._held_port.getsockname()[1])

    def release_port(self) -> None:
        """Let go of the port :meth:`listen` holds, for the framework to bind it now."""
        if self._held_port is not None:
            self._held_port.close()
            self._held_port = None

    # -- state ------------------------------------------------------------------------------------

    def state_extras(self) -> dict[str, Any]:
        """The training state beside the model's weights: ``epoch`` and the framework's own."""
        raise NotImplementedError

    def take_extras(self, extras: dict[str, Any]) -> None:
        """Take back what :meth:`state_extras` gave (after the weights are loaded)."""
        raise NotImplementedError

    def get_state(self) -> bytes:
        return self.framework.state.encode(self.model, self.state_extras())

    def set_state(self, blob: bytes) -> None:
        self.take_extras(self.framework.state.decode_into(self.model, blob))

    # -- rows -------------------------------------------------------------------------------------

    def held_feed(self, arrays: dict[str, Any], partition_rows: Sequence[int],
                  held: Sequence[tuple[int, int, int]]) -> Any:
        """The framework's feed over ``arrays`` (model arrays of the rows this worker holds)."""
        raise NotImplementedError

    def load_rows(self, key: str, held: list[RowRange], partition_rows: list[int], one_row: RowRange) -> int:
        """Take this worker's rows out of Ray's object store: ``held`` ranges of every partition
        whose row counts are ``partition_rows``. A worker without rows reads ``one_row`` for the
        arrays' shapes: it still runs every step, with an empty share."""
        from zoo_lite.data.ray_xshards import shards_of_ranges

        shards = shards_of_ranges(held if held else [one_row])
        return self.load_shards(key, shards, partition_rows, [(partition, start, stop) for _, partition, start, stop in held])

    def load_shards(self, key: str, shards: list[Any], partition_rows: Sequence[int],
                    ranges: Sequence[tuple[int, int, int]]) -> int:
        """This worker's rows as the feed ``key``: model-array ``shards`` of its ``ranges``
        (``(partition, start, stop)``, in order) of partitions whose row counts are
        ``partition_rows``. With no ranges, ``shards`` only show the arrays' shapes (the worker
        still runs every step, with an empty share). Returns the worker's row count."""
        from zoo_lite.data import convert

        arrays = convert.concat_model_arrays(shards)
        if not ranges:
            arrays = {"x": tuple(x[:0] for x in arrays["x"]), **({"y": arrays["y"][:0]} if "y" in arrays else {})}
        if "y" in arrays:
            arrays = {**arrays, "y": self.framework.cast_labels(arrays["y"], self.label_rule)}
        self.feeds[key] = self.held_feed(arrays, partition_rows, list(ranges))
        return self.feeds[key].local_rows

    def dataset_feed(self, data: Any, batch_size: int) -> Any:
        """The framework's feed over its own input (DataLoader, tf.data, creator), built in full by
        every worker (each takes its share of every step); with ``total_rows``."""
        raise NotImplementedError

    def load_dataset(self, key: str, data: Any, batch_size: int) -> int:
        """A framework input as the feed ``key``; its rows, checked to be the same on every worker
        (a creator must build the same data everywhere: zoo_lite shards it), or
        :data:`~zoo_lite.learn.base.steps.UNBOUNDED_ROWS` for a dataset that repeats forever."""
        feed = self.dataset_feed(data, batch_size)
        counts = self.sum_floats(np.array([float(feed.total_rows) if r == self.rank else 0.0 for r in range(self.world_size)]))
        if len(set(counts.tolist())) > 1:
            raise InvalidArgumentError(
                f"data: the data creator gave datasets of different lengths on the workers ({[int(n) for n in counts]}); "
                "it must build the same dataset on every worker (zoo_lite shards it)"
            )
        self.feeds[key] = feed
        return int(feed.total_rows)

    def sum_floats(self, values: np.ndarray) -> np.ndarray:
        """``values`` summed element-wise over the workers, in float64 (a collective: every worker
        calls it), through the framework's collective."""
        raise NotImplementedError

    def open_host_sum(self, size: int, dtype: np.dtype) -> Optional["HostSum"]:
        """A shared-memory sum of ``size`` elements of ``dtype`` when there are several workers,
        all on this host, and the worker config allows it; else None, the same on every worker (a
        collective: see :func:`~zoo_lite.learn.base.host_exchange.host_sum_if_one_host`)."""
        settings = self.spec.worker_config
        if self.world_size == 1 or not settings.shared_memory_exchange:
            return None
        return host_sum_if_one_host(size, dtype, self.rank, self.world_size, settings.collective_timeout_s, self.sum_floats)

    # -- the epoch and validation loops --------------------------------------------------------------

    def train_epoch(self, plan: EpochPlan) -> dict[str, Any]:
        """One epoch over the feed ``plan.key`` (and validation on ``plan.val_key``); the logs are
        equal on every worker, with ``epoch_time_s``, and ``stop_training`` when a callback asked
        to stop."""
        started = time.monotonic()
        self.epoch_begins(plan)
        fit_steps = self.steps_before_epoch()
        batches = self.feeds[plan.key].train_batches(plan.batch_size, plan.shuffle, self.spec.seed, self.epoch, plan.max_steps)
        for index, batch in enumerate(batches):
            self.train_step(index, batch, plan)
            self.record_step(fit_steps + index + 1, started, self.running_totals)
        self.epoch += 1
        logs = self.epoch_logs()
        if plan.val_key is not None:
            logs.update(self.evaluate_feed(plan.val_key, plan.batch_size, plan.val_max_steps, prefix="val_"))
        elapsed = time.monotonic() - started
        stop = self.epoch_ends(plan, logs, elapsed)
        return {**logs, "epoch_time_s": elapsed, "stop_training": stop}

    def validate(self, key: str, batch_size: int, max_steps: Optional[int] = None) -> dict[str, Any]:
        """Loss and metrics over the feed ``key``, aggregated over all workers."""
        return self.evaluate_feed(key, batch_size, max_steps, prefix="")

    def evaluate_feed(self, key: str, batch_size: int, max_steps: Optional[int], prefix: str) -> dict[str, Any]:
        """:meth:`validate`, with the logs named for ``prefix`` ("val_" inside a fit)."""
        self.validation_begins(prefix)
        # islice takes no batch past max_steps: a feed over a dataset that repeats forever goes on from there next time
        for index, batch in enumerate(itertools.islice(self.feeds[key].eval_batches(batch_size), max_steps)):
            self.eval_step(index, batch)
        return self.validation_logs(prefix)

    def epoch_begins(self, plan: EpochPlan) -> None:
        """Reset the epoch's totals; the callbacks' epoch start."""
        raise NotImplementedError

    def train_step(self, index: int, batch: Any, plan: EpochPlan) -> None:
        """One step over this worker's share of a global batch (with the callbacks' step hooks)."""
        raise NotImplementedError

    def running_totals(self) -> tuple[float, float]:
        """(the epoch's running loss, its local rows so far)."""
        raise NotImplementedError

    def epoch_logs(self) -> dict[str, Any]:
        """The epoch's aggregated logs, after the workers' models are made equal (a collective)."""
        raise NotImplementedError

    def epoch_ends(self, plan: EpochPlan, logs: dict[str, Any], elapsed_s: float) -> bool:
        """The callbacks' epoch end, with the logs; True when one asked to stop training."""
        raise NotImplementedError

    def validation_begins(self, prefix: str) -> None:
        """Reset the validation totals; the callbacks' validation start."""
        raise NotImplementedError

    def eval_step(self, index: int, batch: Any) -> None:
        """Add one batch to the validation totals."""
        raise NotImplementedError

    def validation_logs(self, prefix: str) -> dict[str, Any]:
        """The aggregated validation logs, named for ``prefix`` (a collective)."""
        raise NotImplementedError

    # -- progress ---------------------------------------------------------------------------------

    def start_fit(self, plan: FitPlan) -> None:
        """A new fit: rank 0's callbacks write where it sees the driver's paths and into a staging
        folder elsewhere, and no steps yet (the driver's display must not show the previous fit's)."""
        self.staged_files.close()
        self.staged_files = StagedFiles.redirect(plan.callbacks, plan.relays if self.rank == 0 else None)
        self.progress = {}
        self.info.publish_progress({})
        self._published_at = 0.0

    def record_step(self, step: int, started: float, running: Callable[[], tuple[float, float]]) -> None:
        """Note the fit's ``step``-th step of an epoch ``started`` then; send the snapshot to the
        driver at most a few times a second, with ``running()`` = (the epoch's running loss, its
        local rows so far), read only then: reading it can wait for the step to finish."""
        now = time.monotonic()
        self.progress["fit_step"] = step
        self.progress.setdefault("first_step_at", time.time())
        if self.info.publishes_progress and now - self._published_at >= PUBLISH_INTERVAL_S:
            self._published_at = now
            loss, rows = running()
            self.progress.update(step=step, loss=loss, samples_per_s=rows * self.world_size / max(now - started, 1e-9))
            self.info.publish_progress(dict(self.progress))

    def steps_before_epoch(self) -> int:
        """Steps of the current fit before this epoch."""
        return int(self.progress.get("fit_step", 0))

    def first_step_at(self) -> Optional[float]:
        return self.progress.get("first_step_at")

    def relayed_files(self, final: bool) -> list[tuple[str, bytes]]:
        files = self.staged_files.changed_files()
        if final:
            self.staged_files.close()
        return files

    def callback_states(self) -> list[dict[str, Any]]:
        """The fit's callbacks' state, for a fit resumed after a lost worker (rank 0's callbacks
        include every callback)."""
        return callback_states(self.fit_callbacks)
