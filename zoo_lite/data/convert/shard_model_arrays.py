"""One shard of an XShards (a pandas frame, or a dict of arrays) → model arrays, the columns (or
keys) checked once per shard; and Orca's assembled ``{"x", "y"}`` 2-D form of a pandas shard.

A pandas column becomes one model input through :mod:`~zoo_lite.data.convert.tensor_cells`;
the model-arrays form and :class:`~zoo_lite.data.convert.model_arrays.Columns` are those of
:mod:`~zoo_lite.data.convert.model_arrays`.
"""

from __future__ import annotations

from typing import Any, Hashable, Optional, Sequence

import numpy as np
import pandas as pd

from zoo_lite.data.convert.model_arrays import Columns, assemble_model_arrays, label_block
from zoo_lite.data.convert.tensor_cells import pandas_column_to_numpy
from zoo_lite.errors import ColumnNotFoundError, InvalidArgumentError

__all__ = ["pandas_to_model_arrays", "dict_to_model_arrays", "shard_to_model_arrays", "pandas_to_feature_label"]


def pandas_to_model_arrays(df: pd.DataFrame, feature_cols: Sequence[Hashable],
                           label_cols: Optional[Sequence[Hashable]]) -> dict[str, Any]:
    """Model arrays from a pandas shard (see :func:`arrow_to_model_arrays`).

    A column whose cells are arrays (ndarrays of any number of dimensions, or nested lists) is
    one model input of shape ``(rows, *cell_shape)``, in the cells' dtype; label columns too.

    Parameters
    ----------
    df : pandas.DataFrame
        The shard.
    feature_cols : sequence of column labels
        The model's inputs, one per column, in order.
    label_cols : sequence of column labels or None
        The label columns, which become ``"y"``; None for none.

    Returns
    -------
    dict
        ``{"x": (ndarray, ...), "y": ndarray}``, ``"y"`` absent without ``label_cols``.

    Raises
    ------
    ColumnNotFoundError
        A column is not in ``df``.
    InvalidArgumentError
        A column is not numeric, has missing values (None, NaN), or holds cells of different
        shapes; the message names the argument, the column and the offending row(s).

    Examples
    --------
    >>> frame = pd.DataFrame({"a": [1.0, 2.0], "b": [3, 4], "t": [0.5, 1.5]})
    >>> arrays = pandas_to_model_arrays(frame, ["a", "b"], ["t"])
    >>> len(arrays["x"]), arrays["y"].tolist()
    (2, [0.5, 1.5])
    >>> images = pd.DataFrame({"img": [np.zeros((2, 3), np.float32), np.ones((2, 3), np.float32)], "t": [0, 1]})
    >>> x = pandas_to_model_arrays(images, ["img"], ["t"])["x"][0]
    >>> x.shape, x.dtype
    ((2, 2, 3), dtype('float32'))
    >>> ragged = pd.DataFrame({"img": [np.zeros((2, 3)), np.zeros((1, 3))]})
    >>> pandas_to_model_arrays(ragged, ["img"], None)
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: feature_cols: column 'img' holds cells of different shapes: (2, 3) in row 0 and (1, 3) in row 1; every row of a column must have the same shape
    """
    from zoo_lite.data.partition_ops import check_columns

    check_columns(df, feature_cols, "feature_cols")
    check_columns(df, list(label_cols or []), "label_cols")
    converted: dict[Hashable, np.ndarray] = {}

    def column_array(column: Hashable, argument: str) -> np.ndarray:
        # a column that is both a feature and a label is converted once
        if column not in converted:
            converted[column] = pandas_column_to_numpy(df[column], column, argument)
        return converted[column]

    return assemble_model_arrays(column_array, feature_cols, label_cols)


def dict_to_model_arrays(shard: Any, columns: Optional[Columns] = None) -> dict[str, Any]:
    """Check an ``{"x": ndarray | tuple of ndarrays, "y": ndarray}`` shard and give it the normal
    form (``"x"`` always a tuple). With ``columns.features``, the shard's entries of those keys
    are the inputs instead, in that order, and its ``columns.labels`` entries are ``"y"``.

    Examples
    --------
    >>> arrays = dict_to_model_arrays({"x": np.zeros((3, 2)), "y": np.ones(3)})
    >>> len(arrays["x"]), arrays["y"].shape
    (1, (3,))
    """
    if columns is not None and columns.features is not None:
        inputs = _dict_entries(shard, columns.features, "feature_cols")
        labels = _dict_entries(shard, columns.labels or (), "label_cols")
    else:
        if not isinstance(shard, dict) or "x" not in shard:
            raise InvalidArgumentError(
                f"a shard is a {type(shard).__name__} with keys {sorted(map(str, shard)) if isinstance(shard, dict) else '-'}; "
                "the Estimators take XShards of {'x': ndarray or tuple of ndarrays, 'y': ndarray}, or pandas shards with "
                "feature_cols and label_cols"
            )
        several = isinstance(shard["x"], (tuple, list))
        values = tuple(shard["x"]) if several else (shard["x"],)
        inputs = list(zip([f"x[{i}]" for i in range(len(values))] if several else ["x"], values))
        labels = [("y", shard["y"])] if shard.get("y") is not None else []
    features = [(key, _as_numeric_array(value, key)) for key, value in inputs]
    targets = [(key, _as_numeric_array(value, key)) for key, value in labels]
    rows = {key: len(array) for key, array in (*features, *targets)}
    if len(set(rows.values())) > 1:
        raise InvalidArgumentError(f"a shard's features and labels have different row counts {rows}; every entry needs one row per sample")
    arrays: dict[str, Any] = {"x": tuple(array for _, array in features)}
    if targets:
        arrays["y"] = label_block([array for _, array in targets])
    return arrays


def _dict_entries(shard: Any, keys: Sequence[Hashable], argument: str) -> list[tuple[Hashable, Any]]:
    """The entries of ``keys`` of a dict shard, in that order."""
    if not isinstance(shard, dict):
        raise InvalidArgumentError(
            f"{argument}={list(keys)!r} names columns of pandas shards or keys of dict shards, but a shard is a "
            f"{type(shard).__name__}; pass XShards of pandas frames or dicts of ndarrays"
        )
    missing = [key for key in keys if key not in shard]
    if missing:
        raise ColumnNotFoundError(
            f"{argument}={list(keys)!r}: key(s) {missing} not in a dict shard, whose keys are {list(shard)}; "
            f"name keys every shard has in {argument}"
        )
    return [(key, shard[key]) for key in keys]


def shard_to_model_arrays(shard: Any, columns: Columns, need_labels: bool = True) -> dict[str, Any]:
    """Model arrays of one shard of an XShards: a pandas frame (columns ``columns.features``,
    labels ``columns.labels``), or a dict (its ``columns`` keys, or ``{"x": ..., "y": ...}``
    without ``columns.features``). The columns are checked here, once per shard.

    Parameters
    ----------
    shard : pandas.DataFrame or dict
        One shard.
    columns : Columns
        The feature and label columns (or dict keys).
    need_labels : bool, default True
        True to train or evaluate: the result must have ``"y"``. False to predict: labels are
        left out of pandas shards and selected dict entries.

    Returns
    -------
    dict
        ``{"x": (ndarray, ...), "y": ndarray}``, ``"y"`` absent without labels.

    Raises
    ------
    InvalidArgumentError
        A pandas shard without ``columns.features``; a dict shard neither of the ``{"x", "y"}``
        form nor with the keys named; non-numeric data, entries of different row counts; no
        labels with ``need_labels``.
    ColumnNotFoundError
        A column (or dict key) of ``columns`` is not in the shard.

    Examples
    --------
    >>> shard = {"age": np.array([30.0, 40.0]), "height": np.array([1.7, 1.8]), "label": np.array([0, 1])}
    >>> arrays = shard_to_model_arrays(shard, Columns.of(["height", "age"], "label"))
    >>> [x.tolist() for x in arrays["x"]], arrays["y"].tolist()
    ([[1.7, 1.8], [30.0, 40.0]], [0, 1])
    >>> shard_to_model_arrays(shard, Columns.of(["age", "weight"], "label"))
    Traceback (most recent call last):
    ...
    zoo_lite.errors.ColumnNotFoundError: feature_cols=['age', 'weight']: key(s) ['weight'] not in a dict shard, whose keys are ['age', 'height', 'label']; name keys every shard has in feature_cols
    """
    labels = columns.labels if need_labels else None
    if isinstance(shard, pd.DataFrame):
        if columns.features is None:
            raise InvalidArgumentError("the XShards holds pandas DataFrames: pass feature_cols (and label_cols to train or evaluate)")
        arrays = pandas_to_model_arrays(shard, columns.features, labels)
    else:
        arrays = dict_to_model_arrays(shard, Columns(columns.features, labels))
    if need_labels and "y" not in arrays:
        if columns.features is None:
            raise InvalidArgumentError("a shard has no 'y' entry; training and evaluation need {'x': ..., 'y': ...} shards")
        raise InvalidArgumentError(
            f"feature_cols={list(columns.features)!r} was given without label_cols; training and evaluation need "
            "label_cols=[...] too"
        )
    return arrays


def _as_numeric_array(value: Any, key: Hashable) -> np.ndarray:
    array = np.asarray(value)
    if array.ndim == 0 or array.dtype.kind not in "biuf":
        raise InvalidArgumentError(
            f"shard entry {key!r} is {type(value).__name__} of dtype {array.dtype} with shape {array.shape}; "
            "it must be a numeric ndarray with one row per sample"
        )
    return array


def _column_block(df: pd.DataFrame, columns: Sequence[Hashable], argument: str) -> np.ndarray:
    """Stack columns into a 2-D array; a column holding arrays (list/Vector) is expanded in place."""
    blocks = []
    for column in columns:
        values = df[column].to_numpy()
        if values.dtype == object and len(values) and isinstance(values[0], (list, tuple, np.ndarray)):
            try:
                values = np.stack([np.asarray(v) for v in values])
            except ValueError as error:
                raise InvalidArgumentError(f"{argument}: column {column!r} holds arrays of different lengths") from error
        blocks.append(values.reshape(len(df), int(np.prod(values.shape[1:], dtype=np.int64))))
    return np.concatenate(blocks, axis=1) if len(blocks) > 1 else blocks[0]


def pandas_to_feature_label(df: pd.DataFrame, feature_cols: Sequence[Hashable], label_cols: Sequence[Hashable]) -> dict[str, np.ndarray]:
    """Orca's assembled form of a pandas shard: ``{"x": features, "y": labels}`` as 2-D arrays.

    Examples
    --------
    >>> frame = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0], "t": [0, 1]})
    >>> pandas_to_feature_label(frame, ["a", "b"], ["t"])["x"].shape
    (2, 2)
    """
    from zoo_lite.data.partition_ops import check_columns

    check_columns(df, feature_cols, "feature_cols")
    check_columns(df, label_cols, "label_cols")
    return {"x": _column_block(df, feature_cols, "feature_cols"), "y": _column_block(df, label_cols, "label_cols")}
