"""tf.data inputs: a ``tf.data.Dataset`` object sent to the workers as its graph, or a creator every
worker runs.

Every worker builds the whole pipeline, unbatches it if it was batched, cuts it into global
batches of ``batch_size`` and keeps its own slice of each (``rank * n // workers`` to
``(rank + 1) * n // workers`` of a batch of ``n`` rows). So all workers take the same number of
steps, each element is used once per epoch, and the union of the slices is the global batch,
whatever the dataset's length. This needs every worker to see the elements in the same order:
``shuffle`` ops get fixed seeds derived from ``seed`` and the epoch (a different order each epoch,
the same on every worker), and the pipeline runs deterministically (parallel ops that ask for
any order, as ``tfds.load(..., shuffle_files=True)`` reads its files, are set to keep order).

A dataset that repeats forever (``.repeat()`` without a count) needs ``steps_per_epoch`` (and
``validation_steps`` / ``num_steps`` where it is validation or evaluation data). A step is one
global batch of ``batch_size`` rows, split over the workers as above, so an epoch is
``steps_per_epoch`` global steps, as Orca's ``fit`` under ``MultiWorkerMirroredStrategy`` meant,
whatever the number of workers. As Keras' iterator does, each epoch of a fit goes on where the
last one stopped (the pipeline is built once per fit, with the shuffle seeds of the fit's first
epoch); each fit starts it anew, as a new ``model.fit`` call does. Validation data goes on across
a fit's epochs the same way (``validation_steps`` global batches each time), and ``evaluate``
reads the first ``num_steps`` global batches, as Keras' ``fit`` and ``evaluate`` do.

A Dataset object travels as its serialized graph (``Dataset._as_serialized_graph``, TensorFlow's
own mechanism for tf.data service). Python functions (``py_function``, ``numpy_function``,
``from_generator``) cannot travel in a graph: such datasets get an error suggesting a creator.

``fit`` and ``evaluate`` take elements of ``(features, labels)``; elements without labels (the
dicts of ``tfds.load`` without ``as_supervised=True``) are refused, saying how to map them
(:func:`check_labelled`). ``predict`` cuts the dataset into contiguous slices of rows, one per
Spark task, each task reading the pipeline up to its slice (:func:`predict_slice`), so that the
predictions come back in the dataset's order; labels, when there are any, are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.base.creators import call_data_creator, creator_takes_batch_size

if TYPE_CHECKING:
    import tensorflow as tf

__all__ = ["DatasetGraph", "is_input", "shippable", "training_input", "is_dataset_input", "dataset_graph", "global_batch_size", "worker_dataset",
           "count_rows", "epoch_datasets", "check_labelled", "predict_slice_checks", "predict_slice", "row_features_spec"]

#: ops that run Python, by what the user wrote
_PYTHON_OPS = {"GeneratorDataset": "Dataset.from_generator", "EagerPyFunc": "tf.py_function",
               "PyFunc": "tf.numpy_function", "PyFuncStateless": "tf.numpy_function"}
_BATCH_OPS = ("BatchDataset", "BatchDatasetV2", "PaddedBatchDataset", "PaddedBatchDatasetV2", "ParallelBatchDataset")
_SHUFFLE_OPS = ("ShuffleDataset", "ShuffleDatasetV2", "ShuffleDatasetV3", "ShuffleAndRepeatDataset", "ShuffleAndRepeatDatasetV2")


def is_dataset_input(data: Any) -> bool:
    """True for a ``tf.data.Dataset`` or a creator function (a callable that is not a collection)."""
    from zoo_lite.learn.base.data_inputs import is_rows_input

    return _is_tf_dataset(data) or (callable(data) and not is_rows_input(data))


def is_input(data: Any) -> bool:
    """True for what the Keras Estimator takes as its own input: a tf.data pipeline (object,
    creator, or its shipped graph)."""
    return isinstance(data, DatasetGraph) or is_dataset_input(data)


def shippable(data: Any) -> Any:
    """A tf.data.Dataset object as the graph the workers rebuild it from; a creator as it is."""
    return dataset_graph(data) if is_dataset_input(data) and not callable(data) else data


def training_input(data: Any) -> Any:
    """:func:`shippable` for ``fit`` and ``evaluate``: a Dataset object's elements are checked for
    labels here on the driver (:func:`check_labelled`); a creator's on the workers, which run it."""
    shipped = shippable(data)
    if isinstance(shipped, DatasetGraph):
        check_labelled(shipped.element_spec)
    return shipped


def _is_tf_dataset(data: Any) -> bool:
    module = type(data).__module__
    if not module.startswith("tensorflow."):
        return False
    import tensorflow as tf

    return isinstance(data, tf.data.Dataset)


@dataclass(frozen=True)
class DatasetGraph:
    """A Dataset object in a form that pickles: its graph, its element structure and its batch size
    (None when it is not batched)."""

    graph: bytes
    element_spec: Any
    batch_size: Optional[int]

    def dataset(self, seed: int, epoch: int) -> "tf.data.Dataset":
        """The pipeline rebuilt, with this epoch's shuffle seeds, unbatched."""
        import tensorflow as tf

        graph = _seeded_graph(self.graph, seed, epoch)
        dataset = tf.data.experimental.from_variant(tf.raw_ops.DatasetFromGraph(graph_def=graph), structure=self.element_spec)
        return dataset.unbatch() if self.batch_size is not None else dataset


def _graph_def(blob: bytes) -> Any:
    from tensorflow.core.framework import graph_pb2

    return graph_pb2.GraphDef.FromString(blob)


def _all_ops(graph: Any) -> set[str]:
    ops = {node.op for node in graph.node}
    for function in graph.library.function:
        ops.update(node.op for node in function.node_def)
    return ops


def _python_ops_error(dataset: "tf.data.Dataset", error: Exception) -> InvalidArgumentError:
    import tensorflow as tf

    try:
        blob = dataset._as_serialized_graph(external_state_policy=tf.data.experimental.ExternalStatePolicy.IGNORE).numpy()
        found = sorted({name for op, name in _PYTHON_OPS.items() if op in _all_ops(_graph_def(blob))})
    except Exception:  # noqa: BLE001 - only to name the op; the original error is kept below
        found = []
    named = " and ".join(found) or "a stateful Python op"
    return InvalidArgumentError(
        f"data: the tf.data.Dataset uses {named}, which runs Python and cannot be sent to the workers "
        f"({str(error).strip().splitlines()[-1][:200]}); pass a creator instead: def data_creator(config, batch_size): "
        "... return dataset, which every worker runs itself"
    )


def _final_batch_size(graph: Any) -> Optional[int]:
    """The batch size of the last batch op on the dataset's output chain, None if there is none."""
    nodes = {node.name: node for node in graph.node}
    output = next((node for node in graph.node if node.op == "_Retval"), None)
    current = nodes.get(output.input[0].split(":")[0]) if output is not None and output.input else None
    while current is not None:
        if current.op in _BATCH_OPS:
            size = nodes[current.input[1].split(":")[0]]
            values = size.attr["value"].tensor.int64_val if size.op == "Const" else []
            if not values:
                raise InvalidArgumentError("data: the tf.data.Dataset's batch size is not a constant; batch it with a fixed "
                                           "size, or pass it unbatched and give fit a batch_size")
            return int(values[0])
        dataset_inputs = [name for name in current.input if not name.startswith("^")]
        current = nodes.get(dataset_inputs[0].split(":")[0]) if dataset_inputs else None
    return None


def dataset_graph(dataset: "tf.data.Dataset") -> DatasetGraph:
    """Serialize ``dataset`` on the driver (errors for datasets that cannot travel).

    Examples
    --------
    >>> import numpy as np, tensorflow as tf
    >>> ds = tf.data.Dataset.from_tensor_slices((np.arange(6.0), np.arange(6))).batch(4)
    >>> shipped = dataset_graph(ds)
    >>> shipped.batch_size, [int(y) for _, y in shipped.dataset(seed=0, epoch=0)]
    (4, [0, 1, 2, 3, 4, 5])
    """
    import tensorflow as tf

    try:
        blob = dataset._as_serialized_graph(external_state_policy=tf.data.experimental.ExternalStatePolicy.FAIL).numpy()
    except tf.errors.FailedPreconditionError as error:
        raise _python_ops_error(dataset, error) from error
    return DatasetGraph(blob, dataset.element_spec, _final_batch_size(_graph_def(blob)))


def _seeded_graph(blob: bytes, seed: int, epoch: int) -> bytes:
    """The graph as every worker runs it in ``epoch``: its shuffles seeded alike
    (:func:`_seed_shuffles`) and its parallel ops in order (:func:`_make_deterministic`)."""
    graph = _graph_def(blob)
    _seed_shuffles(graph, seed, epoch)
    _make_deterministic(graph)
    return graph.SerializeToString()


def _make_deterministic(graph: Any) -> None:
    """Turn ``deterministic=False`` into True on every parallel op (interleave, map, batch), in the
    graph and its functions. An op's own setting wins over ``tf.data.Options.deterministic``, and
    ``tfds.load(..., shuffle_files=True)`` without a shuffle seed reads its files with
    ``deterministic=False``: each worker would then see the rows in its own order, and the slices
    of a global batch would repeat some rows and lose others."""
    nodes = list(graph.node) + [node for function in graph.library.function for node in function.node_def]
    for node in nodes:
        if "deterministic" in node.attr and node.attr["deterministic"].s == b"false":
            node.attr["deterministic"].s = b"true"


def _seed_shuffles(graph: Any, seed: int, epoch: int) -> None:
    """Seed every shuffle op from (seed, epoch, op index), reshuffling off: the same order on
    every worker, a new one each epoch. A shuffle with its own seed keeps it and still varies by
    epoch."""
    nodes = {node.name: node for node in graph.node}
    for index, node in enumerate(n for n in graph.node if n.op in _SHUFFLE_OPS):
        if node.op == "ShuffleDatasetV3":   # V3 draws from a seed-generator resource; V1 uses the seeds as given
            node.op = "ShuffleDataset"
            del node.input[4]
        elif node.op == "ShuffleAndRepeatDatasetV2":
            node.op = "ShuffleAndRepeatDataset"
            del node.input[5]
        if "reshuffle_each_iteration" in node.attr:
            node.attr["reshuffle_each_iteration"].b = False
        for position, offset in ((2, 0), (3, 1)):
            const = nodes[node.input[position].split(":")[0]]
            values = const.attr["value"].tensor.int64_val
            own = int(values[0]) if values else 0
            const.attr["value"].tensor.int64_val[:] = [(own * 1_000_003 + seed * 7919 + epoch * 104_729 + index * 31 + offset)
                                                       % (2**62) + 1]


def global_batch_size(data: Any, config: dict[str, Any], batch_size: int) -> int:
    """The global batch of a tf.data input: a batched Dataset's own batch size; for a creator that
    takes only ``config``, ``config["batch_size"]`` when set; else ``fit``'s ``batch_size``."""
    if isinstance(data, DatasetGraph):
        return data.batch_size or batch_size
    if not creator_takes_batch_size(data) and "batch_size" in config:
        return int(config["batch_size"])
    return batch_size


def run_creator(creator: Callable[..., Any], config: dict[str, Any], batch_size: int, seed: int) -> "tf.data.Dataset":
    """Call a data creator on a worker, with TensorFlow's global seed set so that its shuffle ops
    get the same seeds on every worker."""
    import tensorflow as tf

    tf.random.set_seed(seed)
    return _created_dataset(creator, config, batch_size)


def _created_dataset(creator: Callable[..., Any], config: dict[str, Any], batch_size: int) -> "tf.data.Dataset":
    """The Dataset a data creator returns (an error for anything else)."""
    import tensorflow as tf

    dataset = call_data_creator(creator, config, batch_size)
    if not isinstance(dataset, tf.data.Dataset):
        raise InvalidArgumentError(
            f"data: the data creator {getattr(creator, '__name__', creator)!r} returned a {type(dataset).__name__}; "
            "it must return a tf.data.Dataset"
        )
    return dataset


def creator_graph(creator: Callable[..., Any], config: dict[str, Any], batch_size: int, seed: int) -> Optional[DatasetGraph]:
    """The creator's dataset as a graph, when it can be serialized (then it gets per-epoch shuffle
    seeds like a Dataset object); None for a pipeline with Python ops, which is used as built."""
    dataset = run_creator(creator, config, batch_size, seed)
    try:
        return dataset_graph(dataset)
    except InvalidArgumentError:
        return None


def row_features_spec(data: Any, config: dict[str, Any], batch_size: int) -> Any:
    """The ``tf.TensorSpec`` of one row's features (labels left out) of a tf.data input: a Dataset
    object, its :class:`DatasetGraph`, or a creator, which is run here (its pipeline is only
    built, not read). What an unbuilt model is built from on the driver.

    Examples
    --------
    >>> import numpy as np, tensorflow as tf
    >>> batched = tf.data.Dataset.from_tensor_slices((np.zeros((6, 3), "float32"), np.arange(6))).batch(4)
    >>> row_features_spec(batched, {}, 32)
    TensorSpec(shape=(3,), dtype=tf.float32, name=None)
    """
    if isinstance(data, DatasetGraph):
        rows = data.dataset(seed=0, epoch=0)
    elif callable(data):
        rows = unbatched(_created_dataset(data, config, batch_size))
    else:
        rows = unbatched(data)
    element = rows.element_spec
    return split_element(element if isinstance(element, tuple) else (element,))[0]


def epoch_datasets(data: Any, config: dict[str, Any], batch_size: int, seed: int) -> Callable[[int], "tf.data.Dataset"]:
    """``epoch -> the unbatched dataset of that epoch`` for a shipped Dataset (a :class:`DatasetGraph`)
    or a creator, with the same shuffle order on every worker and task (see the module's text)."""
    shipped = data if isinstance(data, DatasetGraph) else creator_graph(data, config, batch_size, seed)
    if shipped is not None:
        return lambda epoch: shipped.dataset(seed, epoch)
    # a creator with Python ops: run again each epoch, with the same global seed everywhere
    return lambda epoch: unbatched(run_creator(data, config, batch_size, seed + epoch))


def unbatched(dataset: "tf.data.Dataset") -> "tf.data.Dataset":
    """``dataset`` one element per row: unbatched when its last batch op says it is batched (read
    from its graph, Python ops left out)."""
    import tensorflow as tf

    blob = dataset._as_serialized_graph(external_state_policy=tf.data.experimental.ExternalStatePolicy.IGNORE).numpy()
    return dataset.unbatch() if _final_batch_size(_graph_def(blob)) is not None else dataset


def worker_dataset(unbatched: "tf.data.Dataset", batch_size: int, rank: int, world_size: int,
                   steps: Optional[int]) -> "tf.data.Dataset":
    """This worker's slice of each global batch, with the global batch's row count:
    elements ``(x, y, global_rows)`` (or ``(x, None, global_rows)`` without labels)."""
    import tensorflow as tf

    options = tf.data.Options()
    options.deterministic = True
    batches = unbatched.batch(batch_size).with_options(options)
    if steps is not None:
        batches = batches.take(steps)

    def my_slice(*element: Any) -> Any:
        features, labels = split_element(element)
        rows = tf.shape(tf.nest.flatten(features)[0])[0]
        start, stop = rank * rows // world_size, (rank + 1) * rows // world_size
        cut = lambda tensor: tensor[start:stop]  # noqa: E731
        return tf.nest.map_structure(cut, features), tf.nest.map_structure(cut, labels), rows

    return batches.map(my_slice)


def split_element(element: tuple[Any, ...]) -> tuple[Any, Any]:
    """(features, labels) of a dataset element: ``(x, y)`` pairs, or ``x`` alone (labels None)."""
    if len(element) == 1:
        element = element[0] if isinstance(element[0], tuple) else (element[0],)
    if len(element) == 2:
        return element[0], element[1]
    if len(element) == 1:
        return element[0], ()
    raise InvalidArgumentError(
        f"data: a dataset element has {len(element)} parts; zoo_lite takes (features, labels) pairs "
        "(sample weights are not supported: use fit's class_weight)"
    )


def _element_kind(element_spec: Any) -> Optional[str]:
    """What an element without labels is, in words (None for an element with labels, or with
    more parts, which :func:`split_element` refuses)."""
    from collections.abc import Mapping

    if isinstance(element_spec, Mapping):
        return f"dicts with keys {sorted(element_spec)}"
    if isinstance(element_spec, tuple) and len(element_spec) != 1:
        return None
    return "features alone"


def check_labelled(element_spec: Any) -> None:
    """Refuse, for ``fit`` and ``evaluate``, a dataset whose elements carry no labels apart (a
    dict, as ``tfds.load`` gives without ``as_supervised=True``, or features alone): Keras would
    fail later with a message about the model's inputs or a ``None``.

    Examples
    --------
    >>> import tensorflow as tf
    >>> check_labelled(tf.data.Dataset.from_tensor_slices(([1.0], [0])).element_spec)
    >>> check_labelled(tf.data.Dataset.from_tensor_slices({"image": [1.0], "label": [0]}).element_spec)
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: data: the tf.data.Dataset's elements are dicts with keys ['image', 'label'], with no labels apart; ...
    """
    kind = _element_kind(element_spec)
    if kind is not None:
        raise InvalidArgumentError(
            f"data: the tf.data.Dataset's elements are {kind}, with no labels apart; fit and evaluate take "
            "(features, labels) pairs: map them, e.g. dataset.map(lambda d: (d['image'], d['label'])), or load "
            "pairs with tfds.load(..., as_supervised=True)"
        )


def predict_slice_checks(dataset: "tf.data.Dataset") -> None:
    """Refuse, for ``predict``, an endless dataset and elements that are dicts (a model takes one
    tensor per input, in order)."""
    import tensorflow as tf

    if int(dataset.cardinality()) == tf.data.INFINITE_CARDINALITY:
        raise InvalidArgumentError("predict: the tf.data.Dataset repeats forever; predict reads every element: "
                                   "pass a finite dataset, e.g. dataset.take(<rows>)")
    kind = _element_kind(dataset.element_spec)
    if kind is not None and kind != "features alone":
        raise InvalidArgumentError(
            f"predict: the tf.data.Dataset's elements are {kind}; predict takes features (one tensor, or a tuple "
            "with one per model input) or (features, labels) pairs: map them, e.g. dataset.map(lambda d: d['image'])"
        )


def predict_slice(index: int, *, data: Any, slices: int, config: dict[str, Any], batch_size: int,
                  seed: int) -> dict[str, Any]:
    """The features of slice ``index`` of ``slices`` contiguous slices of a tf.data input (a
    :class:`DatasetGraph` or a creator), as the dict shard predict takes: ``{"x": array or tuple
    of arrays}``, rows in the dataset's order, labels left out.

    Examples
    --------
    >>> import numpy as np, tensorflow as tf
    >>> shipped = dataset_graph(tf.data.Dataset.from_tensor_slices((np.arange(5.0), np.arange(5))).batch(2))
    >>> [predict_slice(i, data=shipped, slices=2, config={}, batch_size=2, seed=0)["x"].tolist() for i in range(2)]
    [[0.0, 1.0], [2.0, 3.0, 4.0]]
    """
    import numpy as np
    import tensorflow as tf

    dataset = epoch_datasets(data, config, batch_size, seed)(0)
    predict_slice_checks(dataset)
    total = count_rows(dataset)
    start, stop = index * total // slices, (index + 1) * total // slices
    options = tf.data.Options()
    options.deterministic = True   # every task must see the rows in the same order
    features = dataset.skip(start).take(stop - start).map(lambda *element: split_element(element)[0]).with_options(options)
    rows = next(iter(features.batch(stop - start).as_numpy_iterator()), None) if stop > start else None
    if rows is None:   # an empty slice: arrays with no rows, of the features' shapes
        rows = tf.nest.map_structure(lambda spec: np.zeros((0, *[d or 0 for d in spec.shape]), spec.dtype.as_numpy_dtype),
                                     features.element_spec)
    return {"x": tuple(rows) if isinstance(rows, (tuple, list)) else rows}


def count_rows(unbatched: "tf.data.Dataset") -> int:
    """The number of elements: the cardinality when TensorFlow knows it, else one pass;
    :data:`~zoo_lite.learn.base.steps.UNBOUNDED_ROWS` for a dataset that repeats forever (its
    epochs then end after ``steps_per_epoch`` steps, which the driver requires).

    Examples
    --------
    >>> import tensorflow as tf
    >>> count_rows(tf.data.Dataset.range(5)), count_rows(tf.data.Dataset.range(5).repeat())
    (5, -1)
    """
    import tensorflow as tf

    from zoo_lite.learn.base.steps import UNBOUNDED_ROWS

    cardinality = int(unbatched.cardinality())
    if cardinality == tf.data.INFINITE_CARDINALITY:
        return UNBOUNDED_ROWS
    if cardinality >= 0:
        return cardinality
    return int(unbatched.reduce(tf.constant(0, tf.int64), lambda count, _: count + 1))
