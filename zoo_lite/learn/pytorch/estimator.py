"""``Estimator.from_torch``: data-parallel training of a PyTorch model on the Ray-on-Spark workers.

Orca's signatures over :class:`~zoo_lite.learn.base.estimator.GroupEstimator`, which does the work;
:data:`TORCH` is what it needs of PyTorch.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Optional, Sequence

import torch

from zoo_lite.data import Columns
from zoo_lite.errors import InvalidArgumentError, check_positive_int
from zoo_lite.keywords import suggest_keywords
from zoo_lite.learn.base import checkpoints
from zoo_lite.learn.base.callbacks import CallbackList
from zoo_lite.learn.base.estimator import Cols, EstimatorEntry, FitRequest, GroupEstimator
from zoo_lite.learn.base.framework import Framework, StateCodec, WorkerConfig
from zoo_lite.learn.base.progress import learn_logger
from zoo_lite.learn.base.worker_group import Workers
from zoo_lite.learn.pytorch import data as torch_data
from zoo_lite.learn.pytorch.callbacks import Callback
from zoo_lite.learn.pytorch.feeds import held_target
from zoo_lite.learn.pytorch.predict import INPUT_SIGNATURE, MODEL_BY_VALUE, TORCH_PREDICT, model_bytes, stored_signature
from zoo_lite.learn.pytorch.runner import TorchRunner, decode_state_into, encode_state
from zoo_lite.learn.pytorch.specs import TorchSpec, build_model

__all__ = ["Estimator", "TorchEstimator", "TORCH"]

TORCH = Framework(
    name="PyTorch",
    inputs="a torch DataLoader, or a creator (config, batch_size) -> DataLoader",
    runner_factory=TorchRunner,
    state=StateCodec(encode=encode_state, decode_into=decode_state_into),
    predict=TORCH_PREDICT,
    model_payload=model_bytes,
    is_input=torch_data.is_loader_input,
    batch_size=torch_data.global_batch_size,
    cast_labels=held_target,
)


def _untrained_extras(spec: TorchSpec, model: torch.nn.Module) -> dict[str, Any]:
    """The optimizer's and scheduler's state before any step, with the counters at 0: the state a
    checkpoint saved before training restores (without them, a worker would keep the momentum of
    its last fit). Building them here also gives a clear error for a bad creator before any worker
    starts."""
    optimizer = spec.build_optimizer(model)
    scheduler = spec.build_scheduler(optimizer)
    return {"optimizer_state": optimizer.state_dict() if optimizer is not None else None,
            "scheduler_state": scheduler.state_dict() if scheduler is not None else None, "epoch": 0, "global_step": 0}


@suggest_keywords
class TorchEstimator(GroupEstimator):
    """A PyTorch model trained data-parallel on Ray workers inside the Spark executors.

    Built by :meth:`Estimator.from_torch`; see there for the arguments.
    """

    def __init__(self, spec: TorchSpec, workers: Workers, use_tqdm: bool, model_dir: Optional[str],
                 log_level: int, start_timeout_s: float, max_failures: int = 3) -> None:
        torch.manual_seed(spec.seed)
        model = build_model(spec.model, spec.config)
        extras = _untrained_extras(spec, model)
        super().__init__(TORCH, spec, model, extras, workers, start_timeout_s, max_failures, model_dir,
                         learn_logger(log_level))
        self.use_tqdm = use_tqdm

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
        feature_cols, label_cols : str or list of str, optional
            The columns (or dict-shard keys) of the model's inputs and of the label.
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

        Raises
        ------
        InvalidArgumentError
            A bad argument or input (named in the message).
        WorkerError
            A worker failed (its traceback is in the message), or more than ``max_failures``
            workers were lost.

        Examples
        --------
        >>> import numpy as np, torch
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> from zoo_lite.learn.pytorch import Estimator
        >>> _ = init_orca_context(cores=2)
        >>> x = np.arange(8, dtype="float32").reshape(4, 2)
        >>> shards = XShards.partition({"x": x, "y": x.sum(axis=1)}, num_shards=2)
        >>> net = torch.nn.Linear(2, 1)
        >>> est = Estimator.from_torch(model=net, optimizer=torch.optim.SGD(net.parameters(), lr=0.01),
        ...                            loss=torch.nn.MSELoss(), seed=0)
        >>> [sorted(stats) for stats in est.fit(shards, epochs=1, batch_size=2)]
        [['epoch', 'epoch_time_s', 'num_samples', 'train_loss']]
        >>> est.shutdown()
        """
        check_positive_int(epochs, "epochs")
        check_positive_int(batch_size, "batch_size")
        if max_steps is not None or not reduce_results:
            raise InvalidArgumentError("fit: max_steps and reduce_results=False are not supported; stop by epochs instead")
        CallbackList(callbacks)   # type check on the driver
        request = FitRequest(data, validation_data, Columns.of(feature_cols, label_cols), batch_size, range(epochs),
                             list(callbacks or []), verbose=1 if self.use_tqdm else 2)
        return self._fit(request)

    def evaluate(self, data: Any, batch_size: int = 32, num_steps: Optional[int] = None, profile: bool = False,
                 reduce_results: bool = True, feature_cols: Cols = None, label_cols: Cols = None) -> dict[str, Any]:
        """Loss and metrics over ``data`` (same kinds as :meth:`fit`), aggregated exactly over the workers.

        Returns
        -------
        dict
            ``num_samples``, ``val_loss`` (when the Estimator has a loss) and each metric by name.

        Raises
        ------
        InvalidArgumentError
            A bad argument or input; ``num_steps`` and ``reduce_results=False`` are not supported.

        Examples
        --------
        >>> import numpy as np, torch
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> from zoo_lite.learn.pytorch import Estimator
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition({"x": np.ones((4, 2), "float32"), "y": np.zeros(4, "float32")}, num_shards=2)
        >>> net = torch.nn.Linear(2, 1)
        >>> torch.nn.init.zeros_(net.weight), torch.nn.init.zeros_(net.bias)  # doctest: +ELLIPSIS
        (...)
        >>> est = Estimator.from_torch(model=net, loss=torch.nn.MSELoss())
        >>> est.evaluate(shards, batch_size=2)
        {'num_samples': 4, 'val_loss': 0.0}
        >>> est.shutdown()
        """
        if num_steps is not None or not reduce_results:
            raise InvalidArgumentError("evaluate: num_steps and reduce_results=False are not supported")
        return self._evaluate(data, Columns.of(feature_cols, label_cols), batch_size)

    def predict(self, data: Any, batch_size: int = 32, feature_cols: Cols = None, profile: bool = False) -> Any:
        """Predictions of the trained model, next to the input and in its order.

        A Spark DataFrame comes back with every column plus ``prediction`` (float, or
        array<float> for a wider output); an XShards with ``"prediction"`` in each dict shard
        or a ``prediction`` column in each pandas shard, with the model's output shape (a
        ``(rows, 1)`` output stays so; a shard without rows gets ``(0, k...)``). Runs in the
        Spark tasks that hold the data (see :mod:`zoo_lite.learn.base.predict`).

        Returns
        -------
        SparkXShards or pyspark.sql.DataFrame
            The input's kind, with the predictions added.

        Raises
        ------
        InvalidArgumentError
            ``data`` is neither an XShards nor a Spark DataFrame, or a DataFrame without ``feature_cols``.

        Examples
        --------
        >>> import numpy as np, torch
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> from zoo_lite.learn.pytorch import Estimator
        >>> _ = init_orca_context(cores=2)
        >>> net = torch.nn.Linear(2, 1)
        >>> est = Estimator.from_torch(model=net, loss=torch.nn.MSELoss())
        >>> shards = XShards.partition({"x": np.ones((4, 2), "float32")}, num_shards=2)
        >>> [shard["prediction"].shape for shard in est.predict(shards).collect()]
        [(2, 1), (2, 1)]
        """
        return self._predict(data, feature_cols, batch_size)

    def save(self, path: str) -> str:
        """Save model, optimizer and scheduler state and the epoch counter to ``path`` (a
        ``torch.save`` dict with ``model_state``, as :meth:`save_checkpoint` writes), plus the
        model itself pickled by value (``model_by_value``), so that
        :func:`zoo_lite.learn.spark_udf` rebuilds it in a job without the training code, and,
        once the Estimator has seen rows, each input's row shape and dtype
        (``input_signature``), so that it needs no ``input_shapes`` either."""
        state = {**self._extras, MODEL_BY_VALUE: model_bytes(self._model)}
        if self._seen_signature:
            state[INPUT_SIGNATURE] = stored_signature(self._seen_signature)
        checkpoints.write_atomically(path, self.framework.state.encode(self._model, state))
        return path

    def load(self, path: str) -> None:
        """Load what :meth:`save` (or a ``ModelCheckpoint``, or ``torch.save(model.state_dict())``)
        wrote; the workers get it on next use."""
        self.load_checkpoint(path)


@suggest_keywords
class Estimator(EstimatorEntry):
    """Orca's entry point: ``Estimator.from_torch(...)`` (import from ``zoo_lite.learn.pytorch``)."""

    @staticmethod
    def from_torch(model: Any, optimizer: Any = None, loss: Any = None, metrics: Any = None, backend: str = "ray",
                   config: Optional[dict[str, Any]] = None, workers_per_node: Optional[int] = None,
                   scheduler_creator: Optional[Callable[..., Any]] = None, use_tqdm: bool = False,
                   model_dir: Optional[str] = None, seed: Optional[int] = None, sync_stats: bool = True,
                   log_level: int = logging.INFO, start_timeout_s: float = 180.0, max_failures: int = 3,
                   worker_config: Optional[WorkerConfig] = None, num_workers: Optional[int] = None) -> TorchEstimator:
        """A PyTorch Estimator trained on ``num_workers`` Ray workers (by default one per Ray node).

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
            loss gets float labels in the model's dtype, and integer labels become floats for
            losses that only take floats (``MSELoss``, ``BCELoss``, ``BCEWithLogitsLoss``...).
        metrics : list or dict, optional
            torchmetrics objects or callables ``(preds, target) -> tensor`` (a per-row mean),
            aggregated exactly over all workers.
        backend : {"ray", "spark", "torch_distributed"}
            ``"ray"`` (and Orca's ``"torch_distributed"``) trains on Ray actors inside the Spark executors;
            ``"spark"`` trains in the tasks of a Spark barrier stage, with no Ray (for clusters that
            cannot run Ray, and short jobs: see docs/backends.md). ``"horovod"`` is not provided.
        config : dict, optional
            Passed to the creators; the user's own.
        workers_per_node : int, optional
            Orca's: this many workers on every Ray node (1 when neither this nor ``num_workers``
            is given).
        scheduler_creator : callable, optional
            ``(optimizer, config) -> scheduler``, stepped after every epoch.
        use_tqdm : bool, default False
            A progress bar on the driver; otherwise one log line per epoch.
        model_dir : str, optional
            When set, every epoch writes a checkpoint there (``epoch=<n>.ckpt``).
        seed : int, optional
            Seeds the model creator, shuffling and workers: the same call twice gives the same model.
        sync_stats : bool, default True
            Average the model's floating buffers (batch-norm statistics) over the workers after
            every epoch.
        log_level : int, default logging.INFO
            The level of the one line per epoch on the ``zoo_lite.learn`` logger.
        start_timeout_s : float, default 180.0
            How long starting and connecting the workers may take before ``WorkerTimeoutError``.
        max_failures : int, default 3
            Lost workers (a killed process, a lost node) a ``fit`` recovers from: the driver keeps
            the state after every epoch, and the fit resumes from the last completed epoch on a
            new group on the nodes alive. Past this many, the last ``WorkerError`` is raised with
            every attempt's cause. 0 turns recovery off.
        worker_config : WorkerConfig, optional
            zoo_lite's own worker settings (collective timeout, shared-memory exchange). The keys
            ``collective_timeout_s`` and ``shared_memory_exchange`` of ``config`` still work, with
            a ``DeprecationWarning``.
        num_workers : int, optional
            The total number of training workers, spread over the Ray nodes as evenly as they
            allow (the first nodes get one more), so a script trains on the same number of
            workers on a laptop and on a cluster. Give this or ``workers_per_node``, not both.

        Returns
        -------
        TorchEstimator

        Raises
        ------
        InvalidArgumentError
            A bad argument, named in the message.

        Examples
        --------
        >>> import numpy as np, torch
        >>> from zoo_lite import init_orca_context
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
        >>> est.shutdown()
        """
        workers, config, seed = EstimatorEntry._checked_common(backend, workers_per_node, config, seed, num_workers)
        settings = WorkerConfig.resolve(worker_config, config)
        spec = TorchSpec.from_user(model, optimizer, loss, metrics, scheduler_creator, config, seed, sync_stats, settings)
        return TorchEstimator(spec, workers, use_tqdm, model_dir, log_level, start_timeout_s, max_failures)
