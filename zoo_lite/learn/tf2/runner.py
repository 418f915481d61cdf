"""The per-worker Keras runner: a distributed training loop over the model's own layers, optimizer,
loss and metrics.

Keras 3's ``model.fit`` fails under ``MultiWorkerMirroredStrategy`` (keras-team/keras#20585), so
the runner has its own loop. Each step is compiled (``tf.function``, one trace for any share
size): the worker's loss is the *sum* of its rows' losses divided by the global batch's rows;
its gradients go into one flat buffer, which is summed over the workers and applied by the
model's optimizer. The sum is the global batch's mean gradient, so every worker takes exactly the
step one process would take, whatever each worker's share.

The buffer is summed through shared memory when every worker runs on one host
(:mod:`zoo_lite.learn.base.host_exchange`, bit-identical on every worker), else by the ring
all-reduce of TensorFlow's ``MultiWorkerMirroredStrategy``, whose ``TF_CONFIG`` comes from the
addresses the workers' actors reported. On 2 cores the strategy's all-reduce (gRPC over loopback)
cost about 7 ms per step, more than the step's compute at 1 thread with half of a batch of 8192
(measured in issue 5); the shared-memory sum costs well under 1 ms. The strategy also carries
the small sums (agreement, metrics) in every case.

Metrics are Keras' compiled metrics, summed over the workers at the end of an epoch, which is
exact for Keras' metrics (their states are totals and counts). Keras callbacks run here with the
aggregated logs; see :mod:`zoo_lite.learn.tf2.callbacks`.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import time
import zlib
from typing import Any, Callable, Optional

import numpy as np

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.base.checkpoints import checkpoint_path
from zoo_lite.learn.base.host_exchange import HostSum, host_key, open_host_sum, shared_memory_directory, slots_nbytes
from zoo_lite.learn.base.worker_group import WorkerInfo
from zoo_lite.learn.tf2.callbacks import callback_states, callbacks_for_rank, restore_callback_states, wants_batch_logs
from zoo_lite.learn.tf2.feeds import DatasetFeed, HeldRowsFeed
from zoo_lite.learn.tf2.predict import remove_autograph_files
from zoo_lite.learn.tf2.specs import KerasSpec, load_state_into, state_from_bytes, state_to_bytes

__all__ = ["KerasRunner", "per_row_loss"]

#: seconds between progress snapshots sent to the driver
_PUBLISH_INTERVAL_S = 0.2


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


class KerasRunner:
    """One training worker. The Estimator calls its methods through the worker group."""

    def __init__(self, spec: KerasSpec, info: WorkerInfo) -> None:
        import tensorflow as tf

        # thread pools can only be sized before TensorFlow's runtime starts
        tf.config.threading.set_intra_op_parallelism_threads(info.num_threads)
        tf.config.threading.set_inter_op_parallelism_threads(min(2, info.num_threads))
        self.spec = spec
        self.info = info
        self.rank = info.rank
        self.world_size = info.world_size
        self.config = spec.config
        self.strategy: Any = None
        self.model: Any = None
        self.epoch = 0
        self.feeds: dict[str, Any] = {}
        self.callbacks: Any = None
        self.model_dir: Optional[str] = None
        self.progress: dict[str, Any] = {}
        self._published_at = 0.0
        self._steps: dict[str, Any] = {}
        self._batch_logs_wanted = False
        self.host_sum: Optional[HostSum] = None

    # -- group plumbing ---------------------------------------------------------------------------

    @_removes_autograph_files
    def connect(self, addresses: list[tuple[str, int]]) -> None:
        """Start the collective runtime with every worker's address, build the model, and choose how
        gradients are summed (see :meth:`exchange_kind`)."""
        import tensorflow as tf

        if self.world_size > 1:
            os.environ["TF_CONFIG"] = json.dumps({
                "cluster": {"worker": [f"{host}:{port}" for host, port in addresses]},
                "task": {"type": "worker", "index": self.rank},
            })
            options = tf.distribute.experimental.CommunicationOptions(
                implementation=tf.distribute.experimental.CommunicationImplementation.RING,
                timeout_seconds=self.timeout_s)
            self.strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
        # the variables are plain: gradients are summed explicitly, one flat buffer per step
        self.model = self.spec.build_model()
        self.model.optimizer.build(self.model.trainable_variables)
        self.loss_fn, self.loss_is_sum, self.loss_name = per_row_loss(self.model)
        self.metrics = self.model._compile_metrics   # Keras' own container of the compiled metrics
        self.float_dtype = str(self.model.compute_dtype)
        self._totals = tf.Variable(tf.zeros(2, tf.float64), trainable=False)   # (loss sum, rows) of this worker
        if self.world_size > 1 and bool(self.config.get("shared_memory_exchange", True)):
            self.host_sum = self._open_host_sum()

    @property
    def timeout_s(self) -> float:
        return float(self.config.get("collective_timeout_s", 1800))

    def _open_host_sum(self) -> Optional[HostSum]:
        """A shared-memory sum of the gradient buffer when every worker runs on this host and
        ``/dev/shm`` has room, else None (the same answer everywhere; a collective)."""
        variables = self.model.trainable_variables
        dtypes = {np.dtype(v.dtype) for v in variables}
        if len(dtypes) != 1:
            return None
        dtype, size = dtypes.pop(), sum(int(np.prod(v.shape)) for v in variables)
        directory = shared_memory_directory(slots_nbytes(self.world_size, size, dtype))
        # equal keys everywhere, tested with sums only: n * sum(k^2) == sum(k)^2 holds exactly when all k are equal
        key = float(zlib.crc32(f"{host_key()}|{directory}".encode()) % (1 << 20) + 1)
        token = float(secrets.randbits(40)) if self.rank == 0 else 0.0
        keys, squares, shared_token, with_room = self._sum(np.array([key, key * key, token, float(directory is not None)]))
        if with_room < self.world_size or self.world_size * squares != keys * keys:
            return None
        all_agree = lambda ok: self._sum(np.array([0.0 if ok else 1.0]))[0] == 0.0  # noqa: E731
        return open_host_sum(directory, f"{int(shared_token):x}", self.rank, self.world_size, size, dtype,
                             self.timeout_s, all_agree)

    def exchange_kind(self) -> str:
        """How gradients are summed: "none" (one worker), "shared_memory" (every worker on this
        host) or "collective" (TensorFlow's ring all-reduce between the workers)."""
        if self.world_size == 1:
            return "none"
        return "shared_memory" if self.host_sum is not None else "collective"

    @_removes_autograph_files
    def close(self) -> None:
        self.feeds.clear()
        if self.host_sum is not None:
            self.host_sum.close()

    # -- state ------------------------------------------------------------------------------------

    def get_state(self) -> bytes:
        return state_to_bytes(self.model, self.epoch)

    def set_state(self, blob: bytes) -> None:
        keras_bytes, self.epoch = state_from_bytes(blob)
        load_state_into(self.model, keras_bytes)

    # -- data -------------------------------------------------------------------------------------

    @_removes_autograph_files
    def load_rows(self, key: str, held: list[tuple[Any, int, int, int]], partition_rows: list[int],
                  one_row: tuple[Any, int, int, int]) -> int:
        """Take this worker's rows out of Ray's object store: ``(object ref, partition, start, stop)``
        ranges, where ``partition_rows`` are the row counts of every partition of the data. A
        worker without rows reads ``one_row`` for the arrays' shapes: it still runs every step."""
        from zoo_lite.data import convert
        from zoo_lite.data.ray_xshards import shards_of_ranges

        if held:
            arrays = convert.concat_model_arrays(shards_of_ranges(held))
        else:
            first = convert.concat_model_arrays(shards_of_ranges([one_row]))
            arrays = {"x": tuple(x[:0] for x in first["x"]), **({"y": first["y"][:0]} if "y" in first else {})}
        ranges = [(partition, start, stop) for _, partition, start, stop in held]
        self.feeds[key] = HeldRowsFeed(arrays, partition_rows, ranges, self.world_size, self.float_dtype)
        self._check_feed(self.feeds[key])
        return self.feeds[key].local_rows

    @_removes_autograph_files
    def load_dataset(self, key: str, data: Any, batch_size: int, shuffle: Optional[bool]) -> int:
        """A tf.data pipeline (a :class:`DatasetGraph` or a creator) every worker builds; returns its rows."""
        from zoo_lite.learn.tf2 import datasets

        seed = self.spec.seed
        if isinstance(data, datasets.DatasetGraph):
            shipped: Optional[datasets.DatasetGraph] = data
        else:
            shipped = datasets.creator_graph(data, self.config, batch_size, seed)
        if shipped is not None:
            build = lambda epoch: shipped.dataset(seed, epoch)  # noqa: E731
        else:   # a creator with Python ops: run it again each epoch, with the same global seed everywhere
            build = lambda epoch: datasets.unbatched(datasets.run_creator(data, self.config, batch_size, seed + epoch))  # noqa: E731
        rows = datasets.count_rows(build(0))
        self.feeds[key] = DatasetFeed(build, rows, self.rank, self.world_size)
        if rows:
            self._check_feed(self.feeds[key])
        return rows

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

        def local_gradients(features: Any, labels: Any, global_rows: Any) -> Any:
            if chunk_rows is None:
                return rows_gradients(features, labels, global_rows, 1.0)
            # the same sum, taken over slices of chunk_rows rows (see _gradient_chunk_rows)
            rows = tf.shape(labels)[0]
            total = tf.zeros([sum(int(np.prod(v.shape)) for v in variables)], variables[0].dtype)
            for start in tf.range(0, rows, chunk_rows):
                cut = lambda tensor: tensor[start:start + chunk_rows]  # noqa: E731,B023
                share = tf.cast(tf.minimum(chunk_rows, rows - start), tf.float32) / tf.cast(rows, tf.float32)
                total += rows_gradients(tf.nest.map_structure(cut, features), cut(labels), global_rows, share)
            return total

        def apply(flat: Any) -> None:
            sizes = [int(np.prod(v.shape)) for v in variables]
            parts = tf.split(flat, sizes)
            model.optimizer.apply_gradients([(tf.reshape(g, v.shape), v) for g, v in zip(parts, variables)])

        if self.host_sum is not None:   # the sum happens in NumPy, between two compiled halves
            gradients_of = tf.function(local_gradients, input_signature=signature,
                                       jit_compile=model.jit_compile is True)   # as model.fit honours compile(jit_compile=True)
            apply_sum, host_sum = tf.function(apply), self.host_sum
            return lambda features, labels, rows: apply_sum(host_sum.sum(gradients_of(features, labels, rows).numpy()))

        def whole_step(features: Any, labels: Any, global_rows: Any) -> None:
            flat = local_gradients(features, labels, global_rows)
            apply(self._all_reduce(flat) if self.strategy is not None else flat)

        return tf.function(whole_step, input_signature=signature)

    def _gradient_chunk_rows(self) -> Optional[int]:
        """Rows per slice when a worker's share is differentiated slice by slice, or None for all at
        once. The gradient is the same sum; slices of 1024 rows keep the activations in the CPU's
        cache: half a batch of 8192 of the benchmark MLP took 10 ms instead of 13.5 ms per step on
        one thread (issue 5). Not for models whose batch statistics depend on the rows seen
        together (batch normalisation), nor with ``config["gradient_chunk_rows"]=0``."""
        import keras

        chunk_rows = int(self.config.get("gradient_chunk_rows", 1024))
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
        import tensorflow as tf

        def eval_step(features: Any, labels: Any) -> None:
            output = self.model(features, training=False)
            summed, per_row = self._row_losses(labels, output, None)
            self._update_totals(labels, output, summed / per_row)

        return tf.function(eval_step, input_signature=signature)

    def _step(self, name: str, make: Callable[[list[Any]], Callable[..., Any]], *example: Any) -> Callable[..., Any]:
        """``make(signature)``, compiled for arguments shaped like ``example`` with any number of
        rows (one trace, whatever the size of each worker's share of a step), kept by signature."""
        import tensorflow as tf

        signature = [tf.nest.map_structure(_any_rows_spec, argument) for argument in example]
        key = f"{name} {signature!r}"
        if key not in self._steps:
            self._steps[key] = make(signature)
        return self._steps[key]

    def _sum(self, values: np.ndarray) -> np.ndarray:
        """Element-wise sum over the workers (a collective: every worker must call it)."""
        if self.world_size == 1:
            return values
        import tensorflow as tf

        summed = self._step("sum", lambda signature: tf.function(self._all_reduce, input_signature=signature), values)
        return summed(values).numpy()

    def _sum_variables(self, variables: list[Any], divide_by: float = 1.0) -> np.ndarray:
        """Replace each variable by its sum over the workers (divided by ``divide_by``), all in one
        collective; returns the last variable's new values."""
        local = [np.asarray(v.numpy(), dtype=np.float64).ravel() for v in variables]
        summed = self._sum(np.concatenate(local)) / divide_by
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
    def begin_fit(self, callbacks: list[Any], epochs: int, steps: int, model_dir: Optional[str],
                  resumed_states: Optional[list[dict[str, Any]]] = None) -> None:
        """Start a fit's callbacks; ``resumed_states`` (from :meth:`callback_states`) continues a fit
        that lost a worker: file-writing loggers append instead of starting their file again."""
        import keras

        self.progress = {}
        self.info.publish_progress({})   # the driver's display must not show the previous fit
        self._published_at = 0.0
        self.model_dir = model_dir
        self.model.stop_training = False
        self.fit_callbacks = list(callbacks)
        mine = callbacks_for_rank(callbacks, self.rank)
        self._batch_logs_wanted = wants_batch_logs(mine)
        self.callbacks = keras.callbacks.CallbackList(mine, add_history=False, add_progbar=False, model=self.model,
                                                      verbose=0, epochs=epochs, steps=steps)
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

    def callback_states(self) -> list[dict[str, Any]]:
        """The fit's callbacks' state (rank 0 runs them all), for a resumed fit."""
        return callback_states(self.fit_callbacks)

    @_removes_autograph_files
    def end_fit(self, logs: dict[str, Any]) -> None:
        self.callbacks.on_train_end(logs)
        self.callbacks = None

    @_removes_autograph_files
    def train_epoch(self, key: str, batch_size: int, val_key: Optional[str], epoch_index: int,
                    class_weight: Optional[dict[int, float]], steps_per_epoch: Optional[int],
                    validation_steps: Optional[int]) -> dict[str, Any]:
        """One epoch over the feed ``key`` (and validation on ``val_key``); the logs are equal on all
        workers, with ``stop_training`` set when a callback asked to stop. ``epoch_index`` is the
        epoch as Keras callbacks count it; ``self.epoch`` counts every epoch trained (it seeds the
        shuffle and names checkpoints)."""
        feed = self.feeds[key]
        class_weights = _class_weight_table(class_weight)
        started = time.monotonic()
        self._reset_totals()
        self.callbacks.on_epoch_begin(epoch_index)
        fit_steps = self.progress.get("fit_step", 0)
        for batch_index, (features, labels, global_rows) in enumerate(
                feed.train_batches(batch_size, True, self.spec.seed, self.epoch, steps_per_epoch)):
            self.callbacks.on_train_batch_begin(batch_index)
            if batch_index == 0:   # every batch of a feed has the same signature
                step = self._step(f"train {class_weight!r}", functools.partial(self._train_step, class_weights),
                                  features, labels, np.int64(global_rows))
            step(features, labels, np.int64(global_rows))
            self._after_step(batch_index, fit_steps, started)
        self._average_model_statistics()
        logs = self._aggregated_logs()
        if val_key is not None:
            self.callbacks.on_test_begin()
            val_logs = self.validate(val_key, batch_size, validation_steps, prefix="val_")
            self.callbacks.on_test_end(val_logs)
            logs.update(val_logs)
        self.callbacks.on_epoch_end(epoch_index, logs)
        self.epoch += 1
        if self.rank == 0 and self.model_dir:
            self._write_checkpoint(checkpoint_path(self.model_dir, self.epoch))
        return {**logs, "stop_training": bool(self.model.stop_training), "epoch_time_s": time.monotonic() - started}

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

    def _after_step(self, batch_index: int, fit_steps: int, started: float) -> None:
        now = time.monotonic()
        publish = self.rank == 0 and now - self._published_at >= _PUBLISH_INTERVAL_S
        batch_logs: dict[str, Any] = {}
        if publish or self._batch_logs_wanted:
            loss_sum, rows = self._totals.numpy()
            batch_logs = {"loss": float(loss_sum / max(rows, 1.0))}
            if publish:
                self._published_at = now
                self.progress = {"step": fit_steps + batch_index + 1, "fit_step": fit_steps + batch_index + 1,
                                 "loss": batch_logs["loss"], "samples_per_s": rows * self.world_size / max(now - started, 1e-9)}
                self.info.publish_progress(dict(self.progress))
        self.progress["fit_step"] = fit_steps + batch_index + 1
        self.callbacks.on_train_batch_end(batch_index, batch_logs)

    def _write_checkpoint(self, path: str) -> None:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path + ".tmp", "wb") as file:
            file.write(self.get_state())
        os.replace(path + ".tmp", path)   # a reader never sees a half-written checkpoint

    # -- evaluation -------------------------------------------------------------------------------

    @_removes_autograph_files
    def validate(self, key: str, batch_size: int, max_steps: Optional[int] = None, prefix: str = "") -> dict[str, Any]:
        """Loss and metrics over the feed ``key``, aggregated over all workers."""
        feed = self.feeds[key]
        self._reset_totals()
        local_batches = feed.eval_batches(batch_size)
        for index, (features, labels, _) in enumerate(local_batches):
            if max_steps is not None and index >= max_steps:
                break
            if labels is None:
                raise InvalidArgumentError("evaluate: the data has no labels; give label_cols, or (features, labels) elements")
            if index == 0:
                step = self._step("eval", self._eval_step, features, labels)
            step(features, labels)
        return self._aggregated_logs(prefix)


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


def _row_weights(labels: Any, table: np.ndarray) -> Any:
    """Each row's class weight: its class is the label, or the largest entry of a one-hot label."""
    import tensorflow as tf

    classes = tf.argmax(labels, axis=-1) if labels.shape.rank > 1 and labels.shape[-1] > 1 else tf.reshape(labels, [-1])
    classes = tf.clip_by_value(tf.cast(classes, tf.int32), 0, len(table) - 1)
    return tf.gather(tf.constant(table), classes)
