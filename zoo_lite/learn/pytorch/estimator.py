"""``Estimator.from_torch``: data-parallel training of a PyTorch model on the Ray-on-Spark workers.

The driver keeps the model (for ``get_model``, ``save`` and ``predict``) and the last known
optimizer state; the worker group (:mod:`zoo_lite.learn.base.worker_group`) trains copies of it,
which end every step identical, and rank 0's state comes back at the end of each ``fit``. If a
worker fails, the group is ended, and the next call starts a new one from the driver's state.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Callable, Optional, Sequence

import numpy as np
import torch
from torch import nn

from zoo_lite.errors import InvalidArgumentError, check_positive_int, kind_of
from zoo_lite.learn.base import checkpoints, steps
from zoo_lite.learn.base.callbacks import CallbackList
from zoo_lite.learn.base.data_inputs import is_spark_df, normalize_cols
from zoo_lite.learn.base.estimator import EVALUATION, TRAIN, VALIDATION, Cols, GroupEstimator
from zoo_lite.learn.base.predict import predict_spark_df, predict_xshards
from zoo_lite.learn.base.progress import ProgressReporter, learn_logger
from zoo_lite.learn.base.worker_group import WorkerInfo
from zoo_lite.learn.pytorch import data as torch_data
from zoo_lite.learn.pytorch.callbacks import Callback, ModelCheckpoint
from zoo_lite.learn.pytorch.predict import TORCH_PREDICT, model_bytes
from zoo_lite.learn.pytorch.runner import TorchRunner, state_from_bytes, state_to_bytes
from zoo_lite.learn.pytorch.specs import TorchSpec, build_model

__all__ = ["Estimator", "TorchEstimator"]


class TorchEstimator(GroupEstimator):
    """A PyTorch model trained data-parallel on Ray workers inside the Spark executors.

    Built by :meth:`Estimator.from_torch`; see there for the arguments.
    """

    framework_inputs = "a torch DataLoader, or a creator (config, batch_size) -> DataLoader"

    def __init__(self, spec: TorchSpec, workers_per_node: int, use_tqdm: bool, model_dir: Optional[str],
                 log_level: int, start_timeout_s: float, max_failures: int = 3) -> None:
        super().__init__(workers_per_node, start_timeout_s, max_failures)
        self.spec = spec
        self.use_tqdm = use_tqdm
        self.model_dir = model_dir
        self.logger = learn_logger(log_level)
        torch.manual_seed(spec.seed)
        self._model = build_model(spec.model, spec.config)
        self._check_optimizer_creator()
        self._state: dict[str, Any] = {"optimizer_state": None, "scheduler_state": None, "epoch": 0, "global_step": 0}

    def _check_optimizer_creator(self) -> None:
        """Run the optimizer creator once on the driver's model, for a clear error before any worker starts."""
        self.spec.build_optimizer(self._model)

    # -- GroupEstimator hooks ---------------------------------------------------------------------------

    def _runner_factory(self) -> Callable[[WorkerInfo], Any]:
        return functools.partial(TorchRunner, self.spec)

    def _driver_state_bytes(self) -> bytes:
        return state_to_bytes({"model_state": self._model.state_dict(), **self._state})

    def _is_framework_input(self, data: Any) -> bool:
        return torch_data.is_loader_input(data)

    def _framework_batch_size(self, data: Any, batch_size: int) -> int:
        return torch_data.global_batch_size(data, self.spec.config, batch_size)

    def _pull_state(self) -> None:
        state = state_from_bytes(self._call_rank0("get_state"))
        self._model.load_state_dict(state.pop("model_state"))
        self._state = state

    def _trained_epochs(self) -> int:
        return int(self._state["epoch"])

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
        def load() -> tuple[int, int]:
            return self._load_for_fit(data, validation_data, feature_cols, label_cols, batch_size)

        train_rows, global_batch = load()
        steps_each = steps.steps_per_epoch(train_rows, global_batch)
        reporter = ProgressReporter(self.use_tqdm, steps_each * epochs, lambda: self._group.progress() if self._group else {}, self.logger)
        history: list[dict[str, Any]] = []

        def restart() -> None:   # after a lost worker: the new group reloads the data and begins again
            load()
            reporter.resume_at(steps_each * len(history))
            self._call("begin_fit", callback_list)

        recovery = self._fit_recovery(restart)
        val_key = VALIDATION if validation_data is not None else None
        try:
            self._with_recovery(lambda: self._call("begin_fit", callback_list), recovery, "begin_fit")
            for epoch in range(epochs):
                stats = self._with_recovery(
                    lambda: self._call("train_epoch", TRAIN, global_batch, True, val_key, on_poll=reporter.poll)[0],
                    recovery, f"epoch {self._trained_epochs() + 1}")
                self._keep_epoch_state()
                reporter.epoch_done(stats, steps_each * (epoch + 1))
                history.append(stats)
            self._with_recovery(lambda: self._call("end_fit"), recovery, "end_fit")
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
        _, batch_size = self._load(EVALUATION, data, feature_cols, label_cols, batch_size)
        return self._call("validate", EVALUATION, batch_size)[0]

    def predict(self, data: Any, batch_size: int = 32, feature_cols: Cols = None, profile: bool = False) -> Any:
        """Predictions of the trained model, next to the input and in its order.

        A Spark DataFrame comes back with every column plus ``prediction`` (float, or
        array<float> for a wider output); an XShards with ``"prediction"`` in each dict shard
        or a ``prediction`` column in each pandas shard. Runs in the Spark tasks that hold the
        data (see :mod:`zoo_lite.learn.base.predict`).
        """
        from zoo_lite.data.shard import SparkXShards

        check_positive_int(batch_size, "batch_size")
        features = normalize_cols(feature_cols, "feature_cols")
        if is_spark_df(data):
            if features is None:
                raise InvalidArgumentError("predict: data is a Spark DataFrame; pass feature_cols=[...]")
            return predict_spark_df(data, self._model, model_bytes(self._model), TORCH_PREDICT, features, batch_size)
        if isinstance(data, SparkXShards):
            return predict_xshards(data, model_bytes(self._model), TORCH_PREDICT, features, batch_size)
        raise InvalidArgumentError(f"predict: data is a {kind_of(data)}; pass an XShards or a Spark DataFrame")

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


class Estimator:
    """Orca's entry point: ``Estimator.from_torch(...)`` (import from ``zoo_lite.learn.pytorch``)."""

    @staticmethod
    def from_torch(model: Any, optimizer: Any = None, loss: Any = None, metrics: Any = None, backend: str = "ray",
                   config: Optional[dict[str, Any]] = None, workers_per_node: int = 1,
                   scheduler_creator: Optional[Callable[..., Any]] = None, use_tqdm: bool = False,
                   model_dir: Optional[str] = None, seed: Optional[int] = None, sync_stats: bool = True,
                   log_level: int = logging.INFO, start_timeout_s: float = 180.0, max_failures: int = 3) -> TorchEstimator:
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
            taken as a per-row mean unless its ``reduction`` is ``"sum"``. Labels are cast to
            what the loss takes: class indices (int64) for ``CrossEntropyLoss`` / ``NLLLoss``
            and ``F.cross_entropy`` / ``F.nll_loss`` (float labels, such as a ``StringIndexer``
            double column, must be whole numbers, else ``InvalidArgumentError``; a float target
            of the output's shape stays class probabilities for ``CrossEntropyLoss``); any other
            loss gets float labels in the model's dtype.
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
        max_failures : int, default 3
            Lost workers (a killed process, a lost node) a ``fit`` recovers from: the driver keeps
            the state after every epoch, and the fit resumes from the last completed epoch on a
            new group on the nodes alive. Past this many, the last ``WorkerError`` is raised with
            every attempt's cause. 0 turns recovery off.

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
        return TorchEstimator(spec, workers_per_node, use_tqdm, model_dir, log_level, start_timeout_s, max_failures)

    @staticmethod
    def latest_checkpoint(checkpoint_dir: str) -> Optional[str]:
        """The newest ``epoch=<n>.ckpt`` in ``checkpoint_dir`` (None if there is none)."""
        return checkpoints.latest_checkpoint(checkpoint_dir)
