"""Model arrays, the per-shard form the Estimators train on, and their making from Arrow.

``{"x": (ndarray, ...), "y": ndarray}``: one array per model input, ``"y"`` absent for prediction.
The columns they are made of are normalised once, into :class:`Columns`. An Arrow column becomes
one ndarray without per-row work (numbers, nested fixed-width lists, Spark ML Vectors; strings on
request); the shards of a worker are joined by :func:`concat_model_arrays`.

Siblings: :mod:`~zoo_lite.data.convert.from_spark` makes model arrays from a Spark DataFrame
through this module; :mod:`~zoo_lite.data.convert.shard_model_arrays` from pandas and dict
shards, with :mod:`~zoo_lite.data.convert.tensor_cells` for pandas columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Hashable, Optional, Sequence, Union

import numpy as np

from zoo_lite.errors import InvalidArgumentError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "Columns",
    "arrow_column_to_numpy",
    "dense_vectors_of_arrow",
    "label_block",
    "assemble_model_arrays",
    "table_to_model_arrays",
    "arrow_to_model_arrays",
    "model_arrays_rows",
    "concat_model_arrays",
]


def _column_tuple(cols: Union[None, Hashable, Sequence[Hashable]], argument: str) -> Optional[tuple[Hashable, ...]]:
    if cols is None:
        return None
    if isinstance(cols, str):
        return (cols,)
    if isinstance(cols, (list, tuple)) and cols:
        return tuple(cols)
    raise InvalidArgumentError(
        f"{argument}={cols!r} must be a column name or a non-empty list of column names; "
        f"pass e.g. {argument}='a' or {argument}=['a', 'b'], or leave it out"
    )


@dataclass(frozen=True)
class Columns:
    """The feature and label columns (or dict keys) of the data a model is fed, normalised once.

    Build it with :meth:`of`; ``None`` means "not given".

    Attributes
    ----------
    features : tuple or None
        The model's inputs, in order: one input per column (or dict key).
    labels : tuple or None
        The label columns (or keys), which become ``"y"``.

    Examples
    --------
    >>> Columns.of("a", ["t"])
    Columns(features=('a',), labels=('t',))
    >>> Columns()
    Columns(features=None, labels=None)
    """

    features: Optional[tuple[Hashable, ...]] = None
    labels: Optional[tuple[Hashable, ...]] = None

    def __post_init__(self) -> None:
        for argument, cols in (("features", self.features), ("labels", self.labels)):
            if cols is not None and not (isinstance(cols, tuple) and cols):
                raise InvalidArgumentError(
                    f"Columns({argument}={cols!r}): give None or a non-empty tuple of names; "
                    "Columns.of(feature_cols, label_cols) normalises a name or a list"
                )

    @classmethod
    def of(cls, feature_cols: Union[None, Hashable, Sequence[Hashable]] = None,
           label_cols: Union[None, Hashable, Sequence[Hashable]] = None) -> "Columns":
        """Normalise a user's ``feature_cols`` and ``label_cols``: a name becomes a 1-tuple, a
        non-empty list or tuple a tuple, None stays None.

        Parameters
        ----------
        feature_cols : str, list or tuple of names, or None
            The model's input columns (or dict keys).
        label_cols : str, list or tuple of names, or None
            The label columns (or dict keys).

        Returns
        -------
        Columns
            The normalised pair.

        Raises
        ------
        InvalidArgumentError
            An argument is neither None, a string, nor a non-empty list or tuple; the message names
            the argument (``feature_cols=`` or ``label_cols=``) and the value.

        Examples
        --------
        >>> Columns.of(["a", "b"], "t")
        Columns(features=('a', 'b'), labels=('t',))
        >>> Columns.of([])
        Traceback (most recent call last):
        ...
        zoo_lite.errors.InvalidArgumentError: feature_cols=[] must be a column name or a non-empty list of column names; pass e.g. feature_cols='a' or feature_cols=['a', 'b'], or leave it out
        """
        return cls(_column_tuple(feature_cols, "feature_cols"), _column_tuple(label_cols, "label_cols"))


def arrow_column_to_numpy(column: "pa.ChunkedArray", name: Hashable, argument: str, strings: bool = False) -> np.ndarray:
    """A numeric or (nested) fixed-width list column as one ndarray, vectorised (no per-row work);
    with ``strings``, string columns too, as object arrays of ``str``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if array.null_count:
        raise InvalidArgumentError(f"{argument}: column {name!r} has {array.null_count} null value(s); fill or drop them first")
    shape = [len(array)]
    while pa.types.is_list(array.type) or pa.types.is_large_list(array.type) or pa.types.is_fixed_size_list(array.type):
        lengths = pc.list_value_length(array).to_numpy(zero_copy_only=False)
        width = int(lengths[0]) if len(lengths) else 0
        if len(lengths) and not (lengths == width).all():
            # error path only: the levels above are regular, so element i of this level is in row i // per_row
            level, odd = len(shape), int(np.argmax(lengths != width))
            per_row = int(np.prod(shape[1:], dtype=np.int64))
            raise InvalidArgumentError(
                f"{argument}: column {name!r} holds arrays of different lengths ({int(lengths.min())} to "
                f"{int(lengths.max())}) at nesting level {level}: length {width} in row 0 and length {int(lengths[odd])} in "
                f"row {odd // per_row}; every row of a column must have the same shape"
            )
        shape.append(width)
        array = array.flatten()
        if array.null_count:
            raise InvalidArgumentError(f"{argument}: column {name!r} has null elements inside its arrays; fill them first")
    if strings and (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        return array.to_numpy(zero_copy_only=False).reshape(shape)   # object array of str: Keras makes a string tensor
    if not (pa.types.is_integer(array.type) or pa.types.is_floating(array.type) or pa.types.is_boolean(array.type)):
        raise InvalidArgumentError(
            f"{argument}: column {name!r} has type {column.type}, which is not numeric; the model is fed numeric, "
            "array-of-numeric or Vector columns: encode it first (e.g. StringIndexer, or a numeric cast)"
        )
    return array.to_numpy(zero_copy_only=False).reshape(shape)


def _vector_struct_to_numpy(array: "pa.StructArray") -> np.ndarray:
    """A Spark ML Vector column as it reaches an Arrow UDF (a struct of type, size, indices and
    values; type 1 is dense, 0 sparse) as a dense ``(rows, size)`` float64 array, vectorised."""
    import pyarrow.compute as pc

    rows = len(array)
    fields = dict(zip([field.name for field in array.type], array.flatten()))   # flatten() honours a slice's offset
    kinds = fields["type"].to_numpy(zero_copy_only=False)
    values = fields["values"]
    counts = pc.list_value_length(values).fill_null(0).to_numpy(zero_copy_only=False)
    sizes = np.where(kinds == 1, counts, fields["size"].fill_null(0).to_numpy(zero_copy_only=False))
    if rows and not (sizes == sizes[0]).all():
        raise InvalidArgumentError(f"a Vector column holds vectors of different sizes ({int(sizes.min())} to {int(sizes.max())})")
    out = np.zeros((rows, int(sizes[0]) if rows else 0), dtype=np.float64)
    flat_values = values.flatten().to_numpy(zero_copy_only=False)
    row_of_value = np.repeat(np.arange(rows), counts)
    # a dense vector's values fill its row in order; a sparse one's go where its indices say
    starts = np.cumsum(counts) - counts
    column_of_value = np.arange(len(flat_values)) - np.repeat(starts, counts)
    sparse_values = np.repeat(kinds != 1, counts)
    column_of_value[sparse_values] = fields["indices"].flatten().to_numpy(zero_copy_only=False)
    out[row_of_value, column_of_value] = flat_values
    return out


def _fixed_width(values: np.ndarray) -> "pa.Array":
    import pyarrow as pa

    return pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), values.shape[1])


def _is_vector_struct(array: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_struct(array.type) and {field.name for field in array.type} == {"type", "size", "indices", "values"}


def dense_vectors_of_arrow(column: "pa.Array") -> "pa.Array":
    """``column`` as a model input: a Spark ML Vector column as it reaches an Arrow UDF (a struct of
    type, size, indices and values) becomes fixed-width lists of its dense values; any other
    column is returned as it is.

    Examples
    --------
    >>> import pyarrow as pa
    >>> sparse_and_dense = pa.array([{"type": 0, "size": 3, "indices": [2], "values": [5.0]},
    ...                              {"type": 1, "size": None, "indices": None, "values": [1.0, 2.0, 3.0]}])
    >>> dense_vectors_of_arrow(sparse_and_dense).to_pylist()
    [[0.0, 0.0, 5.0], [1.0, 2.0, 3.0]]
    """
    return _fixed_width(_vector_struct_to_numpy(column)) if _is_vector_struct(column) else column


def label_block(blocks: list[np.ndarray]) -> np.ndarray:
    """One label column as it is; several as one 2-D block."""
    if len(blocks) == 1:
        return blocks[0]
    return np.concatenate([block.reshape(len(block), -1) for block in blocks], axis=1)


def table_to_model_arrays(table: "pa.Table", feature_cols: Sequence[Hashable],
                           label_cols: Optional[Sequence[Hashable]], strings: bool = False) -> dict[str, Any]:
    """Model arrays of a table whose columns were checked already (by name: ``str(column)``);
    ``strings`` takes string feature columns (labels stay numeric)."""
    return assemble_model_arrays(
        lambda c, argument: arrow_column_to_numpy(table.column(str(c)), c, argument, strings and argument == "feature_cols"),
        feature_cols, label_cols)


def assemble_model_arrays(column_array: Callable[[Hashable, str], np.ndarray], feature_cols: Sequence[Hashable],
                           label_cols: Optional[Sequence[Hashable]]) -> dict[str, Any]:
    """``{"x": one array per feature column, "y": the labels}``; ``column_array(column, argument)``
    converts one column, ``argument`` naming it in errors."""
    arrays: dict[str, Any] = {"x": tuple(column_array(c, "feature_cols") for c in feature_cols)}
    if label_cols:
        arrays["y"] = label_block([column_array(c, "label_cols") for c in label_cols])
    return arrays


def arrow_to_model_arrays(table: "pa.Table", feature_cols: Sequence[Hashable],
                          label_cols: Optional[Sequence[Hashable]], *, strings: bool = False) -> dict[str, Any]:
    """Model arrays from an Arrow table: one input per name in ``feature_cols`` (an array column is
    one input of that width) and the label columns as ``"y"``. With ``strings``, string and
    (nested, fixed-length) list<string> feature columns become object arrays of ``str`` (for a
    Keras model that takes string tensors); otherwise they are refused.

    Examples
    --------
    >>> import pyarrow as pa
    >>> table = pa.table({"a": [1.0, 2.0], "v": [[1, 2], [3, 4]], "t": [0, 1]})
    >>> arrays = arrow_to_model_arrays(table, ["a", "v"], ["t"])
    >>> [x.shape for x in arrays["x"]], arrays["y"].tolist()
    ([(2,), (2, 2)], [0, 1])
    >>> words = arrow_to_model_arrays(pa.table({"w": [["a", "b"], ["c", "d"]]}), ["w"], None, strings=True)["x"][0]
    >>> words.shape, words.dtype, words[1, 0]
    ((2, 2), dtype('O'), 'c')
    """
    _check_table_columns(table, feature_cols, "feature_cols")
    _check_table_columns(table, list(label_cols or []), "label_cols")
    return table_to_model_arrays(table, feature_cols, label_cols, strings)


def _check_table_columns(table: "pa.Table", columns: Sequence[Hashable], argument: str) -> None:
    from zoo_lite.data.partition_ops import require_columns

    require_columns(table.column_names, [str(column) for column in columns], argument, "the data has")


def model_arrays_rows(arrays: dict[str, Any]) -> int:
    """Rows of a model-arrays shard."""
    return len(arrays["x"][0])


def concat_model_arrays(shards: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Join model-arrays shards into one (each array concatenated along rows; always a copy, so
    the result is writable even when the shards were read-only views of Ray's object store).

    Examples
    --------
    >>> one = {"x": (np.zeros((2, 3)),), "y": np.zeros(2)}
    >>> joined = concat_model_arrays([one, one])
    >>> joined["x"][0].shape, joined["y"].shape
    ((4, 3), (4,))
    """
    if not shards:
        raise InvalidArgumentError("concat_model_arrays needs at least one shard")
    # an empty shard's array columns have width 0, which would not concatenate with the others
    shards = [shard for shard in shards if model_arrays_rows(shard)] or list(shards[:1])
    widths = {len(shard["x"]) for shard in shards}
    if len(widths) > 1:
        raise InvalidArgumentError(f"shards have different numbers of model inputs {sorted(widths)}; give every shard the same 'x' form")
    with_labels = sum("y" in shard for shard in shards)
    if 0 < with_labels < len(shards):
        raise InvalidArgumentError(
            f"{with_labels} of {len(shards)} shards have labels ('y'); give every shard a 'y' entry, or none of them"
        )
    joined: dict[str, Any] = {"x": tuple(np.concatenate([shard["x"][i] for shard in shards]) for i in range(widths.pop()))}
    if with_labels:
        joined["y"] = np.concatenate([shard["y"] for shard in shards])
    return joined
