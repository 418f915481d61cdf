"""Data inputs shared by the Estimators: XShards and Spark DataFrames become rows held by the workers.

An input is turned into *model arrays* (``{"x": (ndarray, ...), "y": ndarray}``, see
:mod:`zoo_lite.data.convert`) on the executors, put into Ray from there
(:meth:`SparkXShards.to_ray`), and spread over the workers, local partitions first. Column
errors on a Spark DataFrame are found on the driver from its schema, before any job runs.
Framework-specific inputs (DataLoader, tf.data, creator functions) are the framework's own.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from zoo_lite.data.convert import Columns, is_spark_df
from zoo_lite.data.ray_xshards.transfer import spark_to_ray
from zoo_lite.data.shard import SparkXShards, model_arrays_from_spark_df, model_arrays_of
from zoo_lite.errors import InvalidArgumentError

if TYPE_CHECKING:
    from pyspark import SparkContext

    from zoo_lite.data.ray_xshards import RayXShards

__all__ = ["is_rows_input", "feed_arrays", "rows_in_ray", "RowsInRayAhead", "check_has_rows"]


def is_rows_input(data: Any) -> bool:
    """True for the inputs this module turns into worker rows: XShards and Spark DataFrames."""
    return isinstance(data, SparkXShards) or is_spark_df(data)


def rows_in_ray(data: Any, columns: Columns, *, need_labels: bool = True, argument: str = "data") -> "RayXShards":
    """Model arrays of ``data`` (:func:`feed_arrays`) in Ray's object store, put there by the executors.

    Parameters
    ----------
    data, columns, need_labels, argument
        As for :func:`feed_arrays`.

    Returns
    -------
    RayXShards
        One object per piece of each partition of :func:`feed_arrays`, on the Ray node of the
        executor that computed it.

    Raises
    ------
    InvalidArgumentError
        ``data`` has no rows, or its columns do not fit (see :func:`~zoo_lite.data.shard.model_arrays_of`).

    Examples
    --------
    >>> import numpy as np
    >>> from zoo_lite import init_orca_context
    >>> from zoo_lite.data import XShards
    >>> _ = init_orca_context(cores=2, init_ray_on_spark=True)
    >>> shards = XShards.partition({"x": np.zeros((4, 2)), "y": np.arange(4)}, num_shards=2)
    >>> rows_in_ray(shards, Columns.of()).partition_rows()
    [2, 2]
    """
    return _put_in_ray(feed_arrays(data, columns, need_labels, argument), argument)


#: the rows of a fit or an evaluation are read, and go into Ray, in pieces of about this many bytes:
#: what one Spark task holds at once
FEED_PIECE_BYTES = 64 * 2**20


def feed_arrays(data: Any, columns: Columns, need_labels: bool = True, argument: str = "data") -> SparkXShards:
    """The model arrays of ``data`` as the workers of either backend are fed: in one partition per
    task slot at most, read in pieces of about :data:`FEED_PIECE_BYTES`; lazy.

    The workers take row ranges, not partitions, so the partitions need not be kept: a PySpark
    task costs about 25 ms here against about 4 ms for a JVM one (40 small partitions of a cached
    DataFrame: 0.9 s read by one Python task each, 0.1 s joined in the JVM first), and a
    DataFrame after a shuffle has 200 partitions. The partitions are joined by Spark's
    ``coalesce``, without a shuffle: each task reads its partitions one after another (where they
    are cached, if they are). Both backends read the same partitions, so they give the workers the
    same rows while a task's share is one piece.

    Parameters
    ----------
    data : SparkXShards or pyspark.sql.DataFrame
        The rows (see :func:`zoo_lite.data.shard.model_arrays_of`).
    columns : Columns
        The feature and label columns, from :meth:`Columns.of`.
    need_labels : bool, default True
        True to train or evaluate, False to predict.
    argument : str, default "data"
        The argument ``data`` was passed as, for error messages.

    Returns
    -------
    SparkXShards
        Model-arrays shards, in ``defaultParallelism`` partitions at most.

    Examples
    --------
    >>> import numpy as np
    >>> from zoo_lite import init_orca_context
    >>> from zoo_lite.data import XShards
    >>> sc = init_orca_context(cores=2)
    >>> shards = XShards.partition({"x": np.zeros((10, 2)), "y": np.arange(10)}, num_shards=5)
    >>> feed_arrays(shards, Columns.of()).num_partitions() == sc.defaultParallelism
    True
    """
    if is_spark_df(data):
        return model_arrays_from_spark_df(data, columns, need_labels, argument=argument, piece_bytes=FEED_PIECE_BYTES,
                                          max_partitions=_task_slots(data.sparkSession.sparkContext))
    if isinstance(data, SparkXShards):
        slots = _task_slots(data.rdd.context)
        if data.num_partitions() > slots:
            data = data._derived(data.rdd.coalesce(slots), transient=True)
    return model_arrays_of(data, columns, need_labels=need_labels, argument=argument)


def _task_slots(sc: "SparkContext") -> int:
    return max(1, sc.defaultParallelism)


def _put_in_ray(arrays: SparkXShards, argument: str) -> "RayXShards":
    in_ray = spark_to_ray(arrays.rdd, arrays._new_collection, piece_bytes=FEED_PIECE_BYTES)
    try:
        check_has_rows(len(in_ray), argument)
    except InvalidArgumentError:
        in_ray.release()
        raise
    return in_ray


class RowsInRayAhead:
    """:func:`rows_in_ray` with its Spark job run in a thread of its own, so that the caller can
    do something else meanwhile: an Estimator starts its worker group while the executors put the
    rows into Ray (each took 0.1 to 0.7 s on 2 cores, one after the other before). The column
    checks (:func:`~zoo_lite.data.shard.model_arrays_of`) run at once, in the caller's thread,
    so a bad column is reported before anything starts.

    Parameters
    ----------
    data, columns, need_labels, argument
        As for :func:`feed_arrays`.

    Examples
    --------
    >>> import numpy as np
    >>> from zoo_lite import init_orca_context
    >>> from zoo_lite.data import XShards
    >>> _ = init_orca_context(cores=2, init_ray_on_spark=True)
    >>> shards = XShards.partition({"x": np.zeros((4, 2)), "y": np.arange(4)}, num_shards=2)
    >>> ahead = RowsInRayAhead(shards, Columns.of())
    >>> in_ray = ahead.result()
    >>> in_ray.partition_rows()
    [2, 2]
    >>> in_ray.release()
    """

    def __init__(self, data: Any, columns: Columns, *, need_labels: bool = True, argument: str = "data") -> None:
        arrays = feed_arrays(data, columns, need_labels, argument)
        self._put: Future = Future()
        threading.Thread(target=self._run, args=(arrays, argument), name="zoo_lite-rows-in-ray", daemon=True).start()

    def _run(self, arrays: SparkXShards, argument: str) -> None:
        try:
            self._put.set_result(_put_in_ray(arrays, argument))
        except BaseException as error:  # noqa: BLE001 - handed to the caller by result()
            self._put.set_exception(error)

    def result(self) -> "RayXShards":
        """The rows in Ray, once the job is done (a Spark job: no bound of zoo_lite's, as any
        XShards action), or the error it raised. The caller releases them."""
        return self._put.result()

    def discard(self) -> None:
        """The rows are not wanted after all: released as soon as the job is done, without
        waiting for it."""
        self._put.add_done_callback(_release_if_put)


def _release_if_put(put: Future) -> None:
    if put.exception() is None:
        put.result().release()


def check_has_rows(total_rows: int, argument: str = "data") -> None:
    """The one "no rows" error, for every kind of input.

    Examples
    --------
    >>> check_has_rows(0)
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: data has no rows; training, evaluation and prediction need at least one row
    """
    if total_rows == 0:
        raise InvalidArgumentError(f"{argument} has no rows; training, evaluation and prediction need at least one row")
