"""The per-worker Keras runner: a distributed training loop over the model's own layers, optimizer,
loss and metrics.

Keras 3's ``model.fit`` fails under ``MultiWorkerMirroredStrategy`` (keras-team/keras#20585), so
the runner has its own loop. Each step is compiled (``tf.function`` without autograph, as Keras
3's own steps are; one trace for any share size): the worker's loss is the *sum* of its rows'
losses divided by the global batch's rows; its gradients go into one flat buffer, which is summed
over the workers and applied by the model's optimizer. The sum is the global batch's mean
gradient, so every worker takes exactly the step one process would take, whatever each worker's
share.

The buffer is summed through shared memory when every worker runs on one host
(:mod:`zoo_lite.learn.base.host_exchange`, bit-identical on every worker), else by the ring
all-reduce of TensorFlow's ``MultiWorkerMirroredStrategy``, whose ``TF_CONFIG`` comes from the
addresses the workers' actors reported. On 2 cores the strategy's all-reduce (gRPC over loopback)
cost about 7 ms per step, more than the step's compute at 1 thread with half of a batch of 8192
(measured in issue 5); the shared-memory sum costs well under 1 ms. The small sums (agreement,
metrics) go through the strategy across hosts, and through rank 0 over TCP on one host
(:mod:`zoo_lite.learn.base.star_sum`): such a group never sets up TensorFlow's collective, which a
process can do only before its runtime starts, so its processes may serve a later group.

Metrics are Keras' compiled metrics, summed over the workers at the end of an epoch, which is
exact for Keras' metrics (their states are totals and counts). Keras callbacks run here with the
aggregated logs; see :mod:`zoo_lite.learn.tf2.callbacks`.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from typing import Any, Callable, Optional, Sequence

import numpy as np

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.base.callbacks import restore_callback_states
from zoo_lite.learn.base.framework import Framework
from zoo_lite.learn.base.host_exchange import HostSum
from zoo_lite.learn.base.runner import EpochPlan, FitPlan, RunnerBase
from zoo_lite.learn.base.star_sum import StarSum
from zoo_lite.learn.base.worker_group import WorkerInfo
from zoo_lite.learn.tf2.callbacks import callbacks_for_rank, wants_batch_logs
from zoo_lite.learn.tf2.feeds import DatasetFeed, HeldRowsFeed
from zoo_lite.learn.tf2.predict import remove_autograph_files
from zoo_lite.learn.tf2.specs import KerasSpec, lookup_layers

__all__ = ["KerasRunner", "per_row_loss"]

_logger = logging.getLogger("zoo_lite.learn")


def per_row_loss(model: Any) -> tuple[Callable[[Any, Any], Any], bool, str]:
    """The compiled loss as a function giving one value per row (or per element), whether it is a
    sum rather than a mean (a Loss with ``reduction="sum"``), and its name."""
    import keras

    loss = model.loss
    if isinstance(loss, (list, tuple)) and len(loss) == 1:
        loss = loss[0]
    if isinstance(loss, (list, tuple, dict)):
        raise InvalidArgumentError(
            f"the model is compiled with {len(loss)} losses; zoo_lite's Keras Estimator trains models with one output "
            "and one loss"
        )
    name = loss if isinstance(loss, str) else getattr(loss, "name", None) or getattr(loss, "__name__", type(loss).__name__)
    if isinstance(loss, str):
        loss = keras.losses.get(loss)
    if not isinstance(loss, keras.losses.Loss):
        if not callable(loss):
            raise InvalidArgumentError(f"the model's loss {loss!r} is not a Keras loss, a loss name or a function (y_true, y_pred)")
        # as compile() does: a function is wrapped so that labels get the output's rank (not public API)
        from keras.src.losses.losses import LossFunctionWrapper

        loss = LossFunctionWrapper(loss, name=name)

    def per_row(y_true: Any, y_pred: Any) -> Any:
        # Loss.__call__ without its reduction: the same dtype handling, one value per row
        return loss.call(keras.ops.convert_to_tensor(y_true, dtype=loss.dtype), keras.ops.convert_to_tensor(y_pred, dtype=loss.dtype))

    return per_row, loss.reduction == "sum", name


def _removes_autograph_files(method: Callable[..., Any]) -> Callable[..., Any]:
    """A runner method after which the files autograph wrote for what it compiled are deleted
    (see :func:`~zoo_lite.learn.tf2.predict.remove_autograph_files`): Ray kills its worker
    processes, so autograph's own clean-up at exit never runs there."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        finally:
            remove_autograph_files()

    return wrapper


def _check_label_shape(labels: Any, output: Any, loss_name: str) -> None:
    """Labels must match the model's output per row, except class indices for a sparse loss."""
    label_width = int(np.prod(labels.shape[1:])) if len(labels.shape) > 1 else 1
    output_width = int(np.prod(output.shape[1:])) if len(output.shape) > 1 else 1
    if label_width == output_width or (label_width == 1 and "sparse" in loss_name.lower()):
        return
    raise InvalidArgumentError(
        f"label_cols: the labels have shape {tuple(labels.shape[1:])} per row but the model's output has "
        f"{tuple(output.shape[1:])}; give as many label columns (or an array column of that width) as the model has "
        "outputs, or use a sparse loss for class indices"
    )


class KerasRunner(RunnerBase):
    """One training worker (see :class:`~zoo_lite.learn.base.runner.Runner`)."""

    def __init__(self, framework: Framework, spec: KerasSpec, info: WorkerInfo) -> None:
        import tensorflow as tf

        super().__init__(framework, spec, info)
        # thread pools can only be sized before TensorFlow's runtime starts (the spec's user objects,
        # which may start it, are unpickled later: see KerasSpec)
        try:
            tf.config.threading.set_intra_op_parallelism_threads(info.num_threads)
            tf.config.threading.set_inter_op_parallelism_threads(min(2, info.num_threads))
        except RuntimeError:   # a process that served an earlier group keeps that group's pools
            _logger.debug("worker %d keeps %d intra-op threads (wanted %d): TensorFlow's runtime is running",
                         info.rank, tf.config.threading.get_intra_op_parallelism_threads(), info.num_threads)
        self.spec = spec
        self.strategy: Any = None
        self.model: Any = None
        self.callbacks: Any = None
        self._class_weight: Optional[dict[int, float]] = None
        self._current_step: Callable[..., Any] = lambda *batch: None   # the compiled step of the running loop
        self._steps: dict[str, Any] = {}
        self._batch_logs_wanted = False
        self.host_sum: Optional[HostSum] = None
        self.star_sum: Optional[StarSum] = None

    # -- group plumbing ---------------------------------------------------------------------------

    @_removes_autograph_files
    def connect(self, addresses: list[tuple[str, int]]) -> None:
        """Set up the group's sums (see :meth:`exchange_kind`), build the model and its optimizer."""
        import tensorflow as tf

        self.star_sum = self._open_star_sum(addresses)
        self.release_port()   # TensorFlow's gRPC server binds it below
        if self.world_size > 1 and self.star_sum is None:
            os.environ["TF_CONFIG"] = json.dumps({
                "cluster": {"worker": [f"{host}:{port}" for host, port in addresses]},
                "task": {"type": "worker", "index": self.rank},
            })
            options = tf.distribute.experimental.CommunicationOptions(
                implementation=tf.distribute.experimental.CommunicationImplementation.RING,
                timeout_seconds=self.timeout_s)
            self.strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
        # TensorFlow sets its collectives up once per process: only a process that did not may serve again
        self.process_serves_again = self.strategy is None
        # the variables are plain: gradients are summed explicitly, one flat buffer per step
        self.model = self.spec.build_model()
        self.model.optimizer.build(self.model.trainable_variables)
        self.loss_fn, self.loss_is_sum, self.loss_name = per_row_loss(self.model)
        self.metrics = self.model._compile_metrics   # Keras' own container of the compiled metrics
        self.float_dtype = str(self.model.compute_dtype)
        self.label_rule = self.float_dtype
        self._totals = tf.Variable(tf.zeros(2, tf.float64), trainable=False)   # (loss sum, rows) of this worker
        self.host_sum = self._open_gradient_sum()

    @staticmethod
    def needs_tensorflows_collective(spec: KerasSpec, hosts: list[str]) -> bool:
        """Whether a group of workers on ``hosts`` (one address per rank) sums through
        TensorFlow's collective: when the workers are several and do not all share a host, or
        are told not to exchange through shared memory. Otherwise the small sums go through
        rank 0 (:mod:`~zoo_lite.learn.base.star_sum`) and the gradients through shared memory."""
        return len(hosts) > 1 and (not spec.worker_config.shared_memory_exchange or len(set(hosts)) > 1)

    @classmethod
    def used_process_serves(cls, spec: KerasSpec, hosts: list[str]) -> bool:
        # TensorFlow sets its collective up only before its runtime starts, which a used process's did
        return not cls.needs_tensorflows_collective(spec, hosts)

    def _open_star_sum(self, addresses: list[tuple[str, int]]) -> Optional[StarSum]:
        """The small sums through rank 0 when the group needs neither one worker nor TensorFlow's
        collective (see :meth:`needs_tensorflows_collective`); else None."""
        if self.world_size == 1 or self.needs_tensorflows_collective(self.spec, [host for host, _ in addresses]):
            return None
        if self.rank == 0:
            listener, self._held_port = self._held_port, None   # the star closes it once every peer is in
        else:
            listener = None
        return StarSum(self.rank, self.world_size, addresses[0], listener, self.timeout_s)

    @property
    def config(self) -> dict[str, Any]:
        """The user's config (read once the collectives are set up: see :class:`KerasSpec`)."""
        return self.spec.config

    @property
    def timeout_s(self) -> float:
        return self.spec.worker_config.collective_timeout_s

    def _open_gradient_sum(self) -> Optional[HostSum]:
        """A shared-memory sum of the gradient buffer when every worker runs on this host (a collective)."""
        variables = self.model.trainable_variables
        dtypes = {np.dtype(v.dtype) for v in variables}
        return self.open_host_sum(sum(int(np.prod(v.shape)) for v in variables), dtypes.pop()) if len(dtypes) == 1 else None

    def exchange_kind(self) -> str:
        """How gradients are summed: "none" (one worker), "shared_memory" (every worker on this
        host), "star" (every worker on this host, but the gradients do not fit ``/dev/shm`` or
        mix dtypes: through rank 0, see :meth:`_open_star_sum`) or "collective" (TensorFlow's
        ring all-reduce between the workers)."""
        if self.world_size == 1:
            return "none"
        if self.host_sum is not None:
            return "shared_memory"
        return "star" if self.star_sum is not None else "collective"

    def _numpy_gradient_sum(self) -> Optional[Callable[[np.ndarray], np.ndarray]]:
        """The sum of the flat gradient over the workers outside TensorFlow, or None where it is
        in the compiled step (one worker, or TensorFlow's collective)."""
        if self.host_sum is not None:
            return self.host_sum.sum
        if self.star_sum is not None:
            star_sum = self.star_sum
            return lambda flat: star_sum.sum(flat).astype(flat.dtype)
        return None

    @_removes_autograph_files
    def close(self) -> None:
        self.release_port()
        self.feeds.clear()
        if self.host_sum is not None:
            self.host_sum.close()
        if self.star_sum is not None:
            self.star_sum.close()
        if self.process_serves_again:
            import keras

            # the next group's runner in this process starts from Keras' defaults (layer names,
            # dtype policy), as in a new process (the pool collects the garbage after this)
            keras.backend.clear_session(free_memory=False)

    # -- state ------------------------------------------------------------------------------------

    def set_state(self, blob: bytes) -> None:
        super().set_state(blob)
        if lookup_layers(self.model):
            self._steps.clear()   # a new vocabulary is a new lookup table: the steps compiled before hold the old one

    def state_extras(self) -> dict[str, Any]:
        return {"epoch": self.epoch}

    def take_extras(self, extras: dict[str, Any]) -> None:
        self.epoch = int(extras["epoch"])

    # -- data -------------------------------------------------------------------------------------

    def held_feed(self, arrays: dict[str, Any], partition_rows: Sequence[int],
                  held: Sequence[tuple[int, int, int]]) -> HeldRowsFeed:
        feed = HeldRowsFeed(arrays, partition_rows, held, self.world_size, self.float_dtype)
        self._check_feed(feed)
        return feed

    load_rows = _removes_autograph_files(RunnerBase.load_rows)

    load_dataset = _removes_autograph_files(RunnerBase.load_dataset)

    def dataset_feed(self, data: Any, batch_size: int) -> DatasetFeed:
        """A tf.data pipeline (a :class:`DatasetGraph` or a creator) every worker builds."""
        from zoo_lite.learn.tf2 import datasets

        build = datasets.epoch_datasets(data, self.config, batch_size, self.spec.seed)
        first = build(0)
        datasets.check_labelled(first.element_spec)   # fit and evaluate need labels
        feed = DatasetFeed(build, datasets.count_rows(first), self.rank, self.world_size)
        if feed.total_rows:
            self._check_feed(feed)
        return feed

    def _check_feed(self, feed: Any) -> None:
        """Build the metrics and check the labels' shape on one row (before any collective step)."""
        features, labels, _ = feed.sample()
        output = self.model(features, training=False)
        if labels is not None and isinstance(output, (list, tuple, dict)):
            raise InvalidArgumentError(
                f"the model has {len(output)} outputs; zoo_lite's Keras Estimator trains and evaluates models with one "
                "output (predict takes several): join the outputs into one tensor, or train a single-output model"
            )
        if labels is not None:
            _check_label_shape(labels, output, self.loss_name)
            if self.metrics is not None and not self.metrics.built:
                self.metrics.build(labels, output)

    # -- the compiled steps -----------------------------------------------------------------------

    def _row_losses(self, labels: Any, output: Any, class_weights: Any) -> tuple[Any, Any]:
        """(summed loss of these rows, elements per row) for the loss function."""
        import tensorflow as tf

        values = self.loss_fn(labels, output)
        values = tf.cast(values, tf.float32)
        if values.shape.rank == 0:   # a function that already took the mean over its rows
            return values * tf.cast(tf.shape(output)[0], tf.float32), 1.0
        if class_weights is not None:
            values = values * _row_weights(labels, class_weights)
        per_row = 1.0 if values.shape.rank == 1 else float(np.prod(values.shape[1:]))
        return tf.reduce_sum(values), per_row

    def _train_step(self, class_weights: Any, signature: list[Any]) -> Callable[..., None]:
        """One training step ``(features, labels, global_rows)``: this worker's gradient of its
        rows' summed loss over the global batch's rows, summed over the workers, applied."""
        import tensorflow as tf

        model, world = self.model, float(self.world_size)
        variables = model.trainable_variables
        if not variables:
            # as Keras' own train_step on such a model: loss and metrics, no gradient, no update (the driver warns)
            def forward_only(features: Any, labels: Any, global_rows: Any) -> None:
                output = model(features, training=True)
                summed, per_row = self._row_losses(labels, output, class_weights)
                self._update_totals(labels, output, summed / per_row)

            return _compiled(forward_only, input_signature=signature)

        chunk_rows = self._gradient_chunk_rows()

        def rows_gradients(features: Any, labels: Any, global_rows: Any, share: Any) -> Any:
            """The flat gradient of these rows' summed loss over the global batch's rows, plus
            ``share`` of this worker's part of the regularisation (each worker adds 1 / workers of
            it, so the sum over the workers is one copy)."""
            with tf.GradientTape() as tape:
                output = model(features, training=True)
                summed, per_row = self._row_losses(labels, output, class_weights)
                denominator = 1.0 if self.loss_is_sum else tf.cast(global_rows, tf.float32) * per_row
                loss = summed / denominator
                if model.losses:
                    loss += tf.add_n(model.losses) * share / world
            gradients = tape.gradient(loss, variables)
            self._update_totals(labels, output, summed / per_row)
            return tf.concat([tf.reshape(g if g is not None else tf.zeros_like(v), [-1]) for g, v in zip(gradients, variables)], 0)

        sizes = [int(np.prod(v.shape)) for v in variables]   # each variable's part of the flat gradient

        def local_gradients(features: Any, labels: Any, global_rows: Any) -> Any:
            if chunk_rows is None:
                return rows_gradients(features, labels, global_rows, 1.0)
            # the same sum, taken over slices of chunk_rows rows (see _gradient_chunk_rows)
            rows = tf.shape(labels)[0]

            def add_slice(start: Any, total: Any) -> tuple[Any, Any]:
                cut = lambda tensor: tensor[start:start + chunk_rows]  # noqa: E731
                share = tf.cast(tf.minimum(chunk_rows, rows - start), tf.float32) / tf.cast(rows, tf.float32)
                return start + chunk_rows, total + rows_gradients(tf.nest.map_structure(cut, features), cut(labels), global_rows, share)

            total = tf.zeros([sum(sizes)], variables[0].dtype)
            return tf.while_loop(lambda start, _: start < rows, add_slice, (tf.constant(0), total),
                                 maximum_iterations=(rows + chunk_rows - 1) // chunk_rows)[1]

        def apply(flat: Any) -> None:
            parts = tf.split(flat, sizes)
            model.optimizer.apply_gradients([(tf.reshape(g, v.shape), v) for g, v in zip(parts, variables)])

        numpy_sum = self._numpy_gradient_sum()
        if numpy_sum is not None:   # the sum happens in NumPy, between two compiled halves
            gradients_of = _compiled(local_gradients, input_signature=signature,
                                    jit_compile=model.jit_compile is True)   # as model.fit honours compile(jit_compile=True)
            apply_sum = _compiled(apply)
            return lambda features, labels, rows: apply_sum(numpy_sum(gradients_of(features, labels, rows).numpy()))

        def whole_step(features: Any, labels: Any, global_rows: Any) -> None:
            flat = local_gradients(features, labels, global_rows)
            apply(self._all_reduce(flat) if self.strategy is not None else flat)

        return _compiled(whole_step, input_signature=signature)

    def _gradient_chunk_rows(self) -> Optional[int]:
        """Rows per slice when a worker's share is differentiated slice by slice, or None for all at
        once. The gradient is the same sum; slices of 1024 rows keep the activations in the CPU's
        cache: half a batch of 8192 of the benchmark MLP took 10 ms instead of 13.5 ms per step on
        one thread (issue 5). Not for models whose batch statistics depend on the rows seen
        together (batch normalisation), nor with ``WorkerConfig(gradient_chunk_rows=0)``."""
        import keras

        chunk_rows = self.spec.worker_config.gradient_chunk_rows
        batch_dependent = any(isinstance(layer, keras.layers.BatchNormalization) for layer in self.model._flatten_layers())
        return chunk_rows if chunk_rows > 0 and not batch_dependent else None

    def _all_reduce(self, values: Any) -> Any:
        """``values`` summed over the workers by the strategy's collective (inside a tf.function)."""
        import tensorflow as tf

        reduced = self.strategy.run(lambda v: tf.distribute.get_replica_context().all_reduce("sum", tf.identity(v)),
                                    args=(values,))
        return self.strategy.experimental_local_results(reduced)[0]

    def _update_totals(self, labels: Any, output: Any, row_losses_sum: Any) -> None:
        """Add a batch to the epoch's metrics and loss totals. ``row_losses_sum`` sums each row's
        loss averaged over the values the loss gives per row, so that the logged loss is Keras'
        mean over every value."""
        import tensorflow as tf

        if self.metrics is not None:
            self.metrics.update_state(labels, output)
        rows = tf.cast(tf.shape(output)[0], tf.float64)
        self._totals.assign_add(tf.stack([tf.cast(row_losses_sum, tf.float64), rows]))

    def _eval_step(self, signature: list[Any]) -> Callable[..., None]:
        def eval_step(features: Any, labels: Any) -> None:
            output = self.model(features, training=False)
            summed, per_row = self._row_losses(labels, output, None)
            self._update_totals(labels, output, summed / per_row)

        return _compiled(eval_step, input_signature=signature)

    def _step(self, name: str, make: Callable[[list[Any]], Callable[..., Any]], *example: Any) -> Callable[..., Any]:
        """``make(signature)``, compiled for arguments shaped like ``example`` with any number of
        rows (one trace, whatever the size of each worker's share of a step), kept by signature."""
        import tensorflow as tf

        signature = [tf.nest.map_structure(_any_rows_spec, argument) for argument in example]
        key = f"{name} {signature!r}"
        if key not in self._steps:
            self._steps[key] = make(signature)
        return self._steps[key]

    def sum_floats(self, values: np.ndarray) -> np.ndarray:
        """Element-wise sum over the workers (a collective: every worker must call it)."""
        if self.world_size == 1:
            return values
        if self.star_sum is not None:
            return self.star_sum.sum(values)
        summed = self._step("sum", lambda signature: _compiled(self._all_reduce, input_signature=signature), values)
        return summed(values).numpy()

    def _sum_variables(self, variables: list[Any], divide_by: float = 1.0) -> np.ndarray:
        """Replace each variable by its sum over the workers (divided by ``divide_by``), all in one
        collective; returns the last variable's new values."""
        local = [np.asarray(v.numpy(), dtype=np.float64).ravel() for v in variables]
        summed = self.sum_floats(np.concatenate(local)) / divide_by
        offset = 0
        for variable, values in zip(variables, local):
            dtype = getattr(variable.dtype, "as_numpy_dtype", variable.dtype)   # a tf.Variable's DType or Keras' name
            variable.assign(summed[offset:offset + values.size].reshape(variable.shape).astype(dtype))
            offset += values.size
        return summed[-local[-1].size:]

    def _reset_totals(self) -> None:
        self._totals.assign(np.zeros(2))
        if self.metrics is not None:
            self.metrics.reset_state()

    def _aggregated_logs(self, prefix: str = "") -> dict[str, float]:
        """Loss and metrics over every worker's rows since the last reset (a collective)."""
        variables = list(self.metrics.variables) if self.metrics is not None and self.metrics.built else []
        loss_sum, rows = self._sum_variables([*variables, self._totals])
        logs = {f"{prefix}loss": float(loss_sum / max(rows, 1.0))}
        if variables:
            logs.update({f"{prefix}{name}": float(value) for name, value in self.metrics.result().items()})
        return logs

    # -- training ---------------------------------------------------------------------------------

    @_removes_autograph_files
    def begin_fit(self, plan: FitPlan) -> None:
        """Start a fit's callbacks; ``plan.resumed_states`` (from :meth:`callback_states`) continues
        a fit that lost a worker: file-writing loggers append instead of starting their file again."""
        import keras

        self.start_fit(plan)
        self.model.stop_training = False
        self.fit_callbacks = list(plan.callbacks)
        mine = callbacks_for_rank(self.fit_callbacks, self.rank)
        self._batch_logs_wanted = wants_batch_logs(mine)
        self.callbacks = keras.callbacks.CallbackList(mine, add_history=False, add_progbar=False, model=self.model,
                                                      verbose=0, epochs=plan.epochs, steps=plan.steps_per_epoch)
        resumed_states = plan.resumed_states
        if resumed_states is not None:
            for callback in mine:
                if isinstance(callback, keras.callbacks.CSVLogger):
                    callback.append = True   # the rows of the epochs before the loss stay
        self.callbacks.on_train_begin()
        if resumed_states is not None:
            restore_callback_states(self.fit_callbacks, resumed_states)
            for callback in mine:
                if isinstance(callback, keras.callbacks.CSVLogger):
                    callback.append_header = False   # the file has it, above the epochs before the loss

    @_removes_autograph_files
    def end_fit(self, logs: dict[str, Any]) -> None:
        self.callbacks.on_train_end(logs)
        self.callbacks = None

    train_epoch = _removes_autograph_files(RunnerBase.train_epoch)
    validate = _removes_autograph_files(RunnerBase.validate)

    # -- the epoch loop's hooks (see RunnerBase.train_epoch) --------------------------------------

    def epoch_begins(self, plan: EpochPlan) -> None:
        self._class_weight = plan.options.get("class_weight")
        self._reset_totals()
        self.callbacks.on_epoch_begin(plan.epoch_index)

    def train_step(self, index: int, batch: Any, plan: EpochPlan) -> None:
        features, labels, global_rows = batch
        self.callbacks.on_train_batch_begin(index)
        if index == 0:   # every batch of a feed has the same signature
            train_step = functools.partial(self._train_step, _class_weight_table(self._class_weight))
            self._current_step = self._step(f"train {self._class_weight!r}", train_step, features, labels, np.int64(global_rows))
        self._current_step(features, labels, np.int64(global_rows))
        self.callbacks.on_train_batch_end(index, {"loss": self.running_totals()[0]} if self._batch_logs_wanted else {})

    def running_totals(self) -> tuple[float, float]:
        loss_sum, rows = self._totals.numpy()
        return float(loss_sum / max(rows, 1.0)), float(rows)

    def epoch_logs(self) -> dict[str, Any]:
        self._average_model_statistics()
        return self._aggregated_logs()

    def epoch_ends(self, plan: EpochPlan, logs: dict[str, Any], elapsed_s: float) -> bool:
        self.callbacks.on_epoch_end(plan.epoch_index, logs)
        return bool(self.model.stop_training)

    def _average_model_statistics(self) -> None:
        """Average the model's floating non-trainable variables (BatchNormalization's moving mean
        and variance) over the workers (a collective). Each worker updates them from its own share
        of the rows; averaged, as ``tf.distribute`` aggregates them (sync-on-read, MEAN), every
        worker holds the same model again before validation, callbacks and checkpoints. Integer
        state (seed generators) is left alone."""
        if self.world_size == 1:
            return
        statistics = [v for v in self.model.non_trainable_variables if np.dtype(v.dtype).kind == "f"]
        if statistics:
            self._sum_variables(statistics, divide_by=self.world_size)

    # -- the validation loop's hooks --------------------------------------------------------------

    def validation_begins(self, prefix: str) -> None:
        self._reset_totals()
        if prefix:   # inside a fit
            self.callbacks.on_test_begin()

    def eval_step(self, index: int, batch: Any) -> None:
        features, labels, _ = batch
        if labels is None:
            raise InvalidArgumentError("evaluate: the data has no labels; give label_cols, or (features, labels) elements")
        if index == 0:
            self._current_step = self._step("eval", self._eval_step, features, labels)
        self._current_step(features, labels)

    def validation_logs(self, prefix: str) -> dict[str, Any]:
        logs = self._aggregated_logs(prefix)
        if prefix:
            self.callbacks.on_test_end(logs)
        return logs


def _any_rows_spec(value: Any) -> Any:
    """The TensorSpec of ``value`` with its first (row) dimension left open."""
    import tensorflow as tf

    value = value if hasattr(value, "dtype") else np.asarray(value)
    shape, dtype = list(value.shape), tf.as_dtype(value.dtype)
    return tf.TensorSpec([None, *shape[1:]] if shape else [], dtype)


def _class_weight_table(class_weight: Optional[dict[int, float]]) -> Optional[np.ndarray]:
    """``{class: weight}`` as a lookup table indexed by class (missing classes weigh 1)."""
    if not class_weight:
        return None
    table = np.ones(max(int(k) for k in class_weight) + 1, dtype=np.float32)
    for label, weight in class_weight.items():
        table[int(label)] = float(weight)
    return table


def _compiled(function: Callable[..., Any], **options: Any) -> Any:
    """``tf.function(function)`` without autograph, as Keras 3's own ``fit`` compiles its steps
    (``do_not_convert``): the steps hold no Python control flow on tensors, and autograph's
    rewrite of their source (and of the Keras code they call) took about 1 s of a new worker's
    first step (py-spy, 2 cores)."""
    import tensorflow as tf

    return tf.function(function, autograph=False, **options)


def _row_weights(labels: Any, table: np.ndarray) -> Any:
    """Each row's class weight: its class is the label, or the largest entry of a one-hot label."""
    import tensorflow as tf

    classes = tf.argmax(labels, axis=-1) if labels.shape.rank > 1 and labels.shape[-1] > 1 else tf.reshape(labels, [-1])
    classes = tf.clip_by_value(tf.cast(classes, tf.int32), 0, len(table) - 1)
    return tf.gather(tf.constant(table), classes)
