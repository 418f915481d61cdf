"""``Estimator.from_torch``: data-parallel training of a PyTorch model on the Ray-on-Spark workers.

The driver keeps the model (for ``get_model``, ``save`` and ``predict``) and the last known
optimizer state; the worker group (:mod:`zoo_lite.learn.base.worker_group`) trains copies of it,
which end every step identical, and rank 0's state comes back at the end of each ``fit``. If a
worker fails, the group is ended, and the next call starts a new one from the driver's state.
"""

from __future__ import annotations

import functools
import logging
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Optional, Sequence, Union

import numpy as np
import torch
from torch import nn

from zoo_lite.errors import InvalidArgumentError, check_positive_int
from zoo_lite.learn.base import checkpoints, steps
from zoo_lite.learn.base.callbacks import CallbackList
from zoo_lite.learn.base.data_inputs import is_rows_input, is_spark_df, normalize_cols, rows_in_ray
from zoo_lite.learn.base.progress import ProgressReporter, learn_logger
from zoo_lite.learn.base.worker_group import WorkerGroup
from zoo_lite.learn.pytorch import data as torch_data
from zoo_lite.learn.pytorch.callbacks import Callback, ModelCheckpoint
from zoo_lite.learn.pytorch.predict import predict_spark_df, predict_xshards
from zoo_lite.learn.pytorch.runner import TorchRunner, state_from_bytes, state_to_bytes
from zoo_lite.learn.pytorch.specs import TorchSpec, build_model

__all__ = ["Estimator", "TorchEstimator"]

Cols = Union[None, str, Sequence[Hashable]]
_TRAIN, _VALIDATION, _EVALUATION = "train", "validation", "evaluation"


@dataclass
class _LoadedFeed:
    """What a worker group holds under one key, to reuse it for the same input."""

    source: Callable[[], Any]   # weak reference to the input object
    columns: tuple[Any, ...]
    total_rows: int
    batch_size: int


class TorchEstimator:
    """A PyTorch model trained data-parallel on Ray workers inside the Spark executors.

    Built by :meth:`Estimator.from_torch`; see there for the arguments.
    """

    def __init__(self, spec: TorchSpec, workers_per_node: int, use_tqdm: bool, model_dir: Optional[str],
                 log_level: int, start_timeout_s: float) -> None:
        self.spec = spec
        self.workers_per_node = workers_per_node
        self.use_tqdm = use_tqdm
        self.model_dir = model_dir
        self.start_timeout_s = start_timeout_s
        self.logger = learn_logger(log_level)
        torch.manual_seed(spec.seed)
        self._model = build_model(spec.model, spec.config)
        self._check_optimizer_creator()
        self._state: dict[str, Any] = {"optimizer_state": None, "scheduler_state": None, "epoch": 0, "global_step": 0}
        self._group: Optional[WorkerGroup] = None
        self._workers_have_driver_state = False
        self._feeds: dict[str, _LoadedFeed] = {}

    def _check_optimizer_creator(self) -> None:
        """Run the optimizer creator once on the driver's model, for a clear error before any worker starts."""
        self.spec.build_optimizer(self._model)

    # -- worker group -------------------------------------------------------------------------------

    def _workers(self) -> WorkerGroup:
        """The live worker group, started (with Ray, on demand) if there is none."""
        if self._group is not None and not self._group.is_alive_in_current_ray():
            self._group.kill()
            self._group = None
        if self._group is None:
            self._group = WorkerGroup(functools.partial(TorchRunner, self.spec), self.workers_per_node, self.start_timeout_s)
            self._feeds = {}
            self._workers_have_driver_state = False
        if not self._workers_have_driver_state:
            self._call("set_state", self._driver_state_bytes())
            self._workers_have_driver_state = True
        return self._group

    def _call(self, method: str, *args: Any, on_poll: Optional[Callable[[], None]] = None) -> list[Any]:
        return self._guarded(lambda group: group.call(method, *args, on_poll=on_poll))

    def _guarded(self, action: Callable[[WorkerGroup], Any]) -> Any:
        """Run ``action`` on the group; a failed group is dropped so that the next call starts afresh."""
        assert self._group is not None
        try:
            return action(self._group)
        except BaseException:
            if not self._group.actors:
                self._group, self._feeds = None, {}
            raise

    def _driver_state_bytes(self) -> bytes:
        return state_to_bytes({"model_state": self._model.state_dict(), **self._state})

    def _pull_state(self) -> None:
        state = state_from_bytes(self._guarded(lambda group: group.call_one(0, "get_state")))
        self._model.load_state_dict(state.pop("model_state"))
        self._state = state

    @property
    def num_workers(self) -> int:
        """Workers in the group (starts it if needed)."""
        return self._workers().num_workers

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
        if not rows_input and not torch_data.is_loader_input(data):
            raise InvalidArgumentError(
                f"data is a {type(data).__name__}; pass an XShards, a Spark DataFrame (with feature_cols and label_cols), "
                "a torch DataLoader, or a creator (config, batch_size) -> DataLoader"
            )
        if not rows_input:
            batch_size = torch_data.global_batch_size(data, self.spec.config, batch_size)
        if batch_size < group.num_workers:
            raise InvalidArgumentError(
                f"batch_size={batch_size} is smaller than the number of workers ({group.num_workers}); batch_size is the "
                f"global batch, split over the workers: use at least {group.num_workers}, or fewer workers_per_node"
            )
        if rows_input:
            total_rows = self._load_rows(group, key, data, feature_cols, label_cols, need_labels)
        else:
            total_rows = self._guarded(lambda g: g.call("load_dataset", key, data, batch_size, None))[0]
        if total_rows == 0:
            raise InvalidArgumentError("data has no rows; training and evaluation need at least one row")
        try:
            self._feeds[key] = _LoadedFeed(weakref.ref(data), columns, total_rows, batch_size)
        except TypeError:
            pass  # an input that cannot be weakly referenced is simply loaded again next time
        return total_rows, batch_size

    def _load_rows(self, group: WorkerGroup, key: str, data: Any, feature_cols: Cols, label_cols: Cols,
                   need_labels: bool) -> int:
        in_ray = rows_in_ray(data, feature_cols, label_cols, need_labels=need_labels)
        try:
            partition_rows = in_ray.partition_rows()
            held = in_ray.assign_partition_ranges(group.actors)
            self._guarded(lambda g: g.call_each("load_rows", [(key, mine, partition_rows) for mine in held]))
        finally:
            in_ray.release()   # the workers hold their own copies now
        return sum(partition_rows)

    # -- the user's API ---------------------------------------------------------------------------------

    def fit(self, data: Any, epochs: int = 1, batch_size: int = 32, feature_cols: Cols = None, label_cols: Cols = None,
            validation_data: Any = None, callbacks: Optional[Sequence[Callback]] = None, max_steps: Optional[int] = None,
            profile: bool = False, reduce_results: bool = True) -> list[dict[str, Any]]:
        """Train for ``epochs`` epochs; one stats dict per epoch.

        Parameters
        ----------
        data
            An XShards of ``{"x": ndarray | tuple, "y": ndarray}`` or of pandas frames (with
            ``feature_cols`` / ``label_cols``), a Spark DataFrame (with ``feature_cols`` /
            ``label_cols``; numeric, array or Vector columns, one model input per name), a
            ``DataLoader`` (its own batch size and shuffle are used) or a creator
            ``(config, batch_size) -> DataLoader`` (or Orca's ``(config)`` form).
        epochs : int, default 1
        batch_size : int, default 32
            The global batch, split over the workers.
        validation_data
            Same kinds as ``data``; evaluated after every epoch.
        callbacks : list of Callback, optional
            Run on the workers (see :mod:`zoo_lite.learn.pytorch.callbacks`).
        max_steps, profile, reduce_results
            Orca's arguments; only their defaults are supported.

        Returns
        -------
        list of dict
            Per epoch: ``epoch``, ``num_samples``, ``train_loss``, ``val_loss`` and ``val_<metric>``
            with validation data, and ``epoch_time_s``.
        """
        check_positive_int(epochs, "epochs")
        check_positive_int(batch_size, "batch_size")
        if max_steps is not None or not reduce_results:
            raise InvalidArgumentError("fit: max_steps and reduce_results=False are not supported; stop by epochs instead")
        callback_list = list(callbacks or []) + ([ModelCheckpoint(self.model_dir)] if self.model_dir else [])
        CallbackList(callback_list)   # type check on the driver
        train_rows, batch_size = self._load(_TRAIN, data, feature_cols, label_cols, batch_size)
        if validation_data is not None:
            self._load(_VALIDATION, validation_data, feature_cols, label_cols, batch_size)
        steps_each = steps.steps_per_epoch(train_rows, batch_size)
        reporter = ProgressReporter(self.use_tqdm, steps_each * epochs, lambda: self._group.progress() if self._group else {}, self.logger)
        history = []
        try:
            self._call("begin_fit", callback_list)
            for epoch in range(epochs):
                stats = self._call("train_epoch", _TRAIN, batch_size, True,
                                   _VALIDATION if validation_data is not None else None, on_poll=reporter.poll)[0]
                reporter.epoch_done(stats, steps_each * (epoch + 1))
                history.append(stats)
            self._call("end_fit")
        finally:
            reporter.close()
        self._pull_state()
        return history

    def evaluate(self, data: Any, batch_size: int = 32, num_steps: Optional[int] = None, profile: bool = False,
                 reduce_results: bool = True, feature_cols: Cols = None, label_cols: Cols = None) -> dict[str, Any]:
        """Loss and metrics over ``data`` (same kinds as :meth:`fit`), aggregated exactly over the workers.

        Returns
        -------
        dict
            ``num_samples``, ``val_loss`` (when the Estimator has a loss) and each metric by name.
        """
        check_positive_int(batch_size, "batch_size")
        if num_steps is not None or not reduce_results:
            raise InvalidArgumentError("evaluate: num_steps and reduce_results=False are not supported")
        _, batch_size = self._load(_EVALUATION, data, feature_cols, label_cols, batch_size)
        return self._call("validate", _EVALUATION, batch_size)[0]

    def predict(self, data: Any, batch_size: int = 32, feature_cols: Cols = None, profile: bool = False) -> Any:
        """Predictions of the trained model, next to the input and in its order.

        A Spark DataFrame comes back with every column plus ``prediction`` (float, or
        array<float> for a wider output); an XShards with ``"prediction"`` in each dict shard
        or a ``prediction`` column in each pandas shard. Runs in the Spark tasks that hold the
        data (see :mod:`zoo_lite.learn.pytorch.predict`).
        """
        from zoo_lite.data.shard import SparkXShards

        check_positive_int(batch_size, "batch_size")
        features = normalize_cols(feature_cols, "feature_cols")
        if is_spark_df(data):
            if features is None:
                raise InvalidArgumentError("predict: data is a Spark DataFrame; pass feature_cols=[...]")
            return predict_spark_df(data, self._model, features, batch_size)
        if isinstance(data, SparkXShards):
            return predict_xshards(data, self._model, features, batch_size)
        raise InvalidArgumentError(f"predict: data is a {type(data).__name__}; pass an XShards or a Spark DataFrame")

    def get_model(self) -> nn.Module:
        """The trained model on the driver."""
        return self._model

    # -- persistence ----------------------------------------------------------------------------------

    def save(self, path: str) -> str:
        """Save model, optimizer and scheduler state and the epoch counter to ``path``."""
        torch.save({"model_state": self._model.state_dict(), **self._state}, path)
        return path

    def load(self, path: str) -> None:
        """Load what :meth:`save` (or a ``ModelCheckpoint``) wrote; the workers get it on next use."""
        try:
            state = torch.load(path, weights_only=False)
        except FileNotFoundError as error:
            raise InvalidArgumentError(f"load: no checkpoint at path={path!r}") from error
        if not isinstance(state, dict) or "model_state" not in state:
            state = {"model_state": state}   # a weights-only file
        self._model.load_state_dict(state["model_state"])
        self._state = {"optimizer_state": state.get("optimizer_state"), "scheduler_state": state.get("scheduler_state"),
                       "epoch": int(state.get("epoch", 0)), "global_step": int(state.get("global_step", 0))}
        self._workers_have_driver_state = False

    def save_checkpoint(self, path: str) -> str:
        """Same as :meth:`save`: everything needed to resume training at the next epoch."""
        return self.save(path)

    def load_checkpoint(self, path: str) -> None:
        """Resume from a checkpoint: the next ``fit`` continues at the epoch after it."""
        self.load(path)

    def shutdown(self, force: bool = False) -> None:
        """End the worker group (the Estimator can still ``predict``, ``save`` and start a new group)."""
        if self._group is not None:
            (self._group.kill if force else self._group.shutdown)()
        self._group, self._feeds = None, {}


class Estimator:
    """Orca's entry point: ``Estimator.from_torch(...)`` (import from ``zoo_lite.learn.pytorch``)."""

    @staticmethod
    def from_torch(model: Any, optimizer: Any = None, loss: Any = None, metrics: Any = None, backend: str = "ray",
                   config: Optional[dict[str, Any]] = None, workers_per_node: int = 1,
                   scheduler_creator: Optional[Callable[..., Any]] = None, use_tqdm: bool = False,
                   model_dir: Optional[str] = None, seed: Optional[int] = None, sync_stats: bool = True,
                   log_level: int = logging.INFO, start_timeout_s: float = 180.0) -> TorchEstimator:
        """A PyTorch Estimator trained on ``num_ray_nodes × workers_per_node`` Ray workers.

        Parameters
        ----------
        model : nn.Module or callable
            A model instance, or a creator ``config -> nn.Module``.
        optimizer : torch.optim.Optimizer or callable
            An instance (rebuilt on each worker with the same class and hyper-parameters) or a
            creator ``(model, config) -> Optimizer``.
        loss : nn.Module, loss class, callable, optional
            A loss instance or function ``(output, target)``, or a creator ``config -> loss``;
            taken as a per-row mean unless its ``reduction`` is ``"sum"``.
        metrics : list or dict, optional
            torchmetrics objects or callables ``(preds, target) -> tensor`` (a per-row mean),
            aggregated exactly over all workers.
        backend : {"ray", "spark"}
            Both run on zoo_lite's Ray-on-Spark worker group.
        config : dict, optional
            Passed to the creators. zoo_lite reads two keys: ``collective_timeout_s`` bounds a
            gradient exchange (1800), and ``shared_memory_exchange=False`` makes workers on one
            host exchange gradients over gloo instead of shared memory.
        workers_per_node : int, default 1
        scheduler_creator : callable, optional
            ``(optimizer, config) -> scheduler``, stepped after every epoch.
        use_tqdm : bool, default False
            A progress bar on the driver; otherwise one log line per epoch.
        model_dir : str, optional
            When set, every epoch writes a checkpoint there (``epoch=<n>.ckpt``).
        seed : int, optional
            Seeds the model creator, shuffling and workers: the same call twice gives the same model.

        Examples
        --------
        >>> import numpy as np, torch
        >>> from zoo_lite import init_orca_context, stop_orca_context
        >>> from zoo_lite.data import XShards
        >>> from zoo_lite.learn.pytorch import Estimator
        >>> _ = init_orca_context(cores=2)
        >>> x = np.random.default_rng(0).normal(size=(64, 2)).astype("float32")
        >>> shards = XShards.partition({"x": x, "y": x @ np.array([1.0, -1.0], dtype="float32")}, num_shards=2)
        >>> model = torch.nn.Linear(2, 1)
        >>> est = Estimator.from_torch(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        ...                            loss=torch.nn.MSELoss(), seed=0)
        >>> history = est.fit(shards, epochs=20, batch_size=16)
        >>> history[-1]["train_loss"] < 0.01
        True
        >>> est.shutdown(); stop_orca_context()
        """
        if backend not in ("ray", "spark"):
            raise InvalidArgumentError(f"backend={backend!r} is not supported; use 'ray' (or 'spark', which runs the same way)")
        workers_per_node = check_positive_int(workers_per_node, "workers_per_node")
        if seed is None:
            seed = int(np.random.SeedSequence().entropy % (2**31))
        spec = TorchSpec.from_user(model, optimizer, loss, metrics, scheduler_creator, config, int(seed), sync_stats)
        return TorchEstimator(spec, workers_per_node, use_tqdm, model_dir, log_level, start_timeout_s)

    @staticmethod
    def latest_checkpoint(checkpoint_dir: str) -> Optional[str]:
        """The newest ``epoch=<n>.ckpt`` in ``checkpoint_dir`` (None if there is none)."""
        return checkpoints.latest_checkpoint(checkpoint_dir)
