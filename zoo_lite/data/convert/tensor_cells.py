"""One pandas column → one model input: numbers, 1-D array cells and nested lists through Arrow
(fastest), N-d ndarray cells ("tensor cells", one tensor per row) stacked with NumPy into
``(rows, *cell_shape)`` in the cells' dtype.

A cell that keeps a column from becoming one numeric array (missing, ragged, non-numeric, NaN
inside) is an error naming its row. Used by
:func:`~zoo_lite.data.convert.shard_model_arrays.pandas_to_model_arrays`; Arrow columns are
converted by :func:`~zoo_lite.data.convert.model_arrays.arrow_column_to_numpy`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Hashable, Optional

import numpy as np
import pandas as pd

from zoo_lite.data.convert.model_arrays import arrow_column_to_numpy
from zoo_lite.errors import InvalidArgumentError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["pandas_column_to_numpy"]


# Cells that make a pandas column of arrays (one tensor per row)
_ARRAY_CELLS = (np.ndarray, list, tuple)


def pandas_column_to_numpy(column: pd.Series, name: Hashable, argument: str) -> np.ndarray:
    """One pandas column as one model input: through Arrow, which is fastest for numbers, 1-D
    array cells and nested lists; cells Arrow refuses (N-d ndarrays) are stacked with NumPy."""
    if column.dtype != object:
        return arrow_column_to_numpy(_pandas_column_to_arrow(column, name, argument), name, argument)
    values = column.to_numpy()
    if not len(values):
        # an empty shard has no cell to take a shape or dtype from; concat_model_arrays skips it
        return np.empty(0)
    try:
        return arrow_column_to_numpy(_pandas_column_to_arrow(column, name, argument), name, argument)
    except InvalidArgumentError as error:
        if not any(isinstance(cell, _ARRAY_CELLS) for cell in values):
            raise  # strings, dicts, objects: Arrow's error is the clear one
        return _stack_cells(values, name, argument, error)


def _stack_cells(values: np.ndarray, name: Hashable, argument: str, arrow_error: InvalidArgumentError) -> np.ndarray:
    """Array cells as one ``(rows, *cell_shape)`` array; any cell that keeps them from stacking
    into one numeric array without NaN is an error naming its row."""
    try:
        stacked = np.stack(values)  # one pass over the cells, in C
    except (ValueError, TypeError):
        stacked = None
    # NaN is a missing value, as in a numeric column; min() propagates it and, unlike isnan().any(),
    # makes no temporary array (about 2.5x faster)
    if stacked is not None and stacked.dtype.kind in "biuf" and not (
            stacked.dtype.kind == "f" and stacked.size and np.isnan(stacked.min())):
        return stacked
    error = _bad_cell_error(values, name, argument)
    if error is None:
        raise arrow_error
    raise error from arrow_error


def _shape_text(shape: tuple[int, ...]) -> str:
    return f"{shape} (a scalar)" if shape == () else str(shape)


def _bad_cell_error(values: np.ndarray, name: Hashable, argument: str) -> Optional[InvalidArgumentError]:
    """The first cell of a column of array cells that cannot join the others, as an error naming
    its row (error path only: one Python pass over the cells)."""
    where = f"{argument}: column {name!r}"
    first: Optional[tuple[int, tuple[int, ...]]] = None
    for row, cell in enumerate(values):
        if pd.api.types.is_scalar(cell) and pd.isna(cell):
            return InvalidArgumentError(f"{where} has a missing cell ({cell!r}) in row {row}; fill or drop the rows with missing cells first")
        try:
            array = np.asarray(cell)
        except ValueError:
            return InvalidArgumentError(
                f"{where} holds a nested list whose sublists differ in length in row {row}; every cell must be a "
                "rectangular array"
            )
        if array.dtype == object and any(element is None for element in array.flat):
            return InvalidArgumentError(f"{where} has None elements inside its cell in row {row}; fill them first")
        if array.dtype.kind not in "biuf":
            return InvalidArgumentError(
                f"{where} holds a {type(cell).__name__} cell of dtype {array.dtype} in row {row}, which is not numeric; the "
                "model is fed numeric cells: encode or cast them first"
            )
        if array.dtype.kind == "f" and np.isnan(array).any():
            return InvalidArgumentError(f"{where} has NaN elements inside its cell in row {row}; fill them first")
        if first is None:
            first = (row, array.shape)
        elif array.shape != first[1]:
            return InvalidArgumentError(
                f"{where} holds cells of different shapes: {_shape_text(first[1])} in row {first[0]} and "
                f"{_shape_text(array.shape)} in row {row}; every row of a column must have the same shape"
            )
    return None


def _pandas_column_to_arrow(column: pd.Series, name: Hashable, argument: str) -> "pa.Array":
    import pyarrow as pa

    try:
        return pa.array(column, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
        raise InvalidArgumentError(
            f"{argument}: column {name!r} (pandas dtype {column.dtype}) cannot be fed to a model: {error}"
        ) from error
