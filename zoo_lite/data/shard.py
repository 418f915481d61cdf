"""XShards: a distributed collection of shards (pandas frames, dicts of ndarrays, any object).

:class:`SparkXShards` holds a Spark RDD whose elements are the shards, and little else. Every
method is a short call into :mod:`zoo_lite.data.partition_ops` (pure per-shard work) or
:mod:`zoo_lite.data.convert` (format changes) and returns a new collection. Transformations are
lazy, as in Spark: errors inside them surface at the next action (``collect``, ``len``, ...) as
the zoo_lite error raised on the executor, with the partition index where it matters.

Because they are lazy, a collection may read from something that must outlive it, e.g. the Ray
objects of the :class:`~zoo_lite.data.ray_xshards.RayXShards` that ``to_spark_xshards()`` came
from. Such objects are kept in the collection's ``_keep_alive``, and every collection a method
returns keeps what its inputs keep: :meth:`XShards.__init_subclass__` wraps the methods of every
XShards class once, so no method has to pass it on itself.
"""

from __future__ import annotations

import functools
import inspect
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterator, Optional, Sequence, TypeVar, Union

import numpy as np
import pandas as pd

from zoo_lite.data import convert, partition_ops
from zoo_lite.data.convert import Columns
from zoo_lite.data.spark_jobs import ensure_alive, run_job
from zoo_lite.errors import (
    ColumnNotFoundError,
    InvalidArgumentError,
    ShardFunctionError,
    ShardMismatchError,
    check_positive_int,
    raising_transportably,
)
from zoo_lite.keywords import suggest_keywords
from zoo_lite.user_code import by_value

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import RDD, SparkContext
    from pyspark.sql import DataFrame as SparkDataFrame

    from zoo_lite.data.ray_xshards import RayXShards

__all__ = ["XShards", "SparkXShards", "model_arrays_of", "model_arrays_from_spark_df"]

T = TypeVar("T")
XS = TypeVar("XS", bound="XShards")


def _per_shard(func: Callable[..., Any], *, with_index: bool = False) -> Callable[[int, Iterator[Any]], list[Any]]:
    """A mapPartitionsWithIndex function applying a zoo_lite function to every shard; ``func`` and
    what it holds (the user's function and arguments) travel by value."""
    func = by_value(func, "func")

    @raising_transportably
    def run(index: int, shards: Iterator[Any]) -> list[Any]:
        return [func(shard, index) if with_index else func(shard) for shard in shards]

    return run


def _call_user_function(shard: Any, partition_index: int, func: Callable[..., Any], args: tuple[Any, ...], name: str) -> Any:
    """``func(shard, *args)``; an error of the user's function becomes ShardFunctionError naming
    it and the partition."""
    try:
        return func(shard, *args)
    except Exception as error:  # noqa: BLE001 - any user error is reported with its partition
        raise ShardFunctionError(partition_index, name, error) from error


def _shuffle(rdd: "RDD", make_pieces: Callable[[Any, int], list[tuple[int, Any]]], num_partitions: int) -> "RDD":
    """Cut every shard into ``(target, piece)`` pairs, move each piece to its target partition and
    join the pieces there into one shard."""

    ensure_alive(rdd.context)

    @raising_transportably
    def cut(index: int, shards: Iterator[Any]) -> list[tuple[int, Any]]:
        return [pair for shard in shards for pair in make_pieces(shard, index)]

    @raising_transportably
    def join(pairs: Iterator[tuple[int, Any]]) -> list[Any]:
        return partition_ops.concat_shards([piece for _, piece in pairs])

    pairs = rdd.mapPartitionsWithIndex(cut)
    return pairs.partitionBy(num_partitions, _identity_partition).mapPartitions(join, preservesPartitioning=True)


def _identity_partition(target: int) -> int:
    return target


def _as_list(columns: Union[Hashable, Sequence[Hashable]]) -> list[Hashable]:
    return list(columns) if isinstance(columns, (list, tuple)) else [columns]


def _eager_mode() -> bool:
    from zoo_lite.context import OrcaContext  # here: zoo_lite.context imports the data package

    return OrcaContext._eager_mode


def _active_spark_context() -> "SparkContext":
    from zoo_lite.context import OrcaContext

    return OrcaContext.get_spark_context()


def model_arrays_from_spark_df(df: "SparkDataFrame", columns: Columns, need_labels: bool = True, *,
                               argument: str = "data") -> "SparkXShards":
    """An XShards of model arrays (``{"x": (ndarray, ...), "y": ndarray}``, one shard per partition)
    from a Spark DataFrame, converted on the executors through Arrow; lazy.

    The columns are checked once, on the driver, from the DataFrame's schema (see
    :func:`zoo_lite.data.convert.spark_df_to_model_arrays_rdd`).

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The data.
    columns : Columns
        ``features`` (required) name the model's inputs, one input per column (a Vector or
        array column is one input of its width); ``labels`` become ``"y"``.
    need_labels : bool, default True
        False for prediction: no ``"y"``, and ``columns.labels`` may be None.
    argument : str, default "data"
        The argument ``df`` was passed as, for error messages.

    Returns
    -------
    SparkXShards
        One model-arrays shard per partition of ``df``.

    Raises
    ------
    InvalidArgumentError
        No feature columns, or no label columns with ``need_labels``; a column that is not
        numeric, an array of numbers or a Vector.
    ColumnNotFoundError
        A named column is not in ``df``.

    Examples
    --------
    >>> from zoo_lite import init_orca_context, OrcaContext
    >>> _ = init_orca_context(cores=2)
    >>> df = OrcaContext.get_spark_session().createDataFrame([(1.0, 0), (2.0, 1)], "a double, t long")
    >>> arrays = model_arrays_from_spark_df(df, Columns.of("a", "t")).collect()
    >>> sum(len(shard["y"]) for shard in arrays)
    2
    """
    return SparkXShards(convert.spark_df_to_model_arrays_rdd(df, columns, need_labels, argument=argument))


def model_arrays_of(data: Any, columns: Columns, *, need_labels: bool = True, argument: str = "data") -> "SparkXShards":
    """An XShards of model arrays from an XShards or a Spark DataFrame, lazily; what can be checked
    on the driver is checked there first.

    Parameters
    ----------
    data : SparkXShards or pyspark.sql.DataFrame
        The data: pandas shards (with ``columns.features``), dict shards (``{"x": ..., "y": ...}``,
        or any keys named by ``columns``), or a Spark DataFrame (with ``columns.features``).
    columns : Columns
        The feature and label columns (or dict keys), from :meth:`Columns.of`.
    need_labels : bool, default True
        True to train or evaluate (every shard needs labels), False to predict.
    argument : str, default "data"
        The argument ``data`` was passed as, for error messages.

    Returns
    -------
    SparkXShards
        One model-arrays shard (``{"x": (ndarray, ...), "y": ndarray}``) per input shard.

    Raises
    ------
    InvalidArgumentError
        ``data`` is neither an XShards nor a Spark DataFrame; a Spark DataFrame without feature
        columns (or label columns with ``need_labels``); feature columns without label columns
        with ``need_labels``. Column errors inside the shards surface at the next action.

    Examples
    --------
    >>> import pandas as pd
    >>> from zoo_lite import init_orca_context
    >>> from zoo_lite.data import XShards
    >>> _ = init_orca_context(cores=2)
    >>> shards = XShards.partition(pd.DataFrame({"a": [1.0, 2.0, 3.0], "t": [0, 1, 0]}), num_shards=2)
    >>> [s["y"].tolist() for s in model_arrays_of(shards, Columns.of("a", "t")).collect()]
    [[0], [1, 0]]
    >>> model_arrays_of([1, 2], Columns.of("a", "t"))
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: data is a list; expected an XShards or a Spark DataFrame here
    """
    if convert.is_spark_df(data):
        return model_arrays_from_spark_df(data, columns, need_labels, argument=argument)
    if isinstance(data, SparkXShards):
        if need_labels and columns.features is not None and columns.labels is None:
            raise InvalidArgumentError(f"{argument}: feature_cols was given without label_cols; pass label_cols=[...] too")
        return data.to_model_arrays(columns, need_labels)
    raise InvalidArgumentError(f"{argument} is a {type(data).__name__}; expected an XShards or a Spark DataFrame here")


def _collection_keeping(rdd: "RDD", objects: Sequence[Any]) -> "SparkXShards":
    """A SparkXShards of ``rdd`` that keeps ``objects`` alive: how a RayXShards builds its
    SparkXShards without importing this module (which would make an import cycle)."""
    return keeping_alive(SparkXShards(rdd), objects)


# -- keeping alive what a lazy collection reads -------------------------------------------------------

def keeping_alive(shards: XS, objects: Sequence[Any]) -> XS:
    """``shards``, which from now on also keeps ``objects`` referenced (once each), and so does
    every collection derived from it through its methods."""
    kept = shards._keep_alive
    added = tuple(obj for i, obj in enumerate(objects)
                  if not any(obj is other for other in (*kept, *objects[:i])))
    if added:
        shards._keep_alive = kept + added
    return shards


#: dunder methods that return a derived collection (the others never do)
_DERIVING_DUNDERS = frozenset({"__getitem__"})


def _passing_keep_alive(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` of an XShards class, changed so that every XShards it returns (alone, or in a
    list or tuple) keeps alive what ``self`` and its XShards arguments keep alive."""

    @functools.wraps(method)
    def derive(self: "XShards", *args: Any, **kwargs: Any) -> Any:
        result = method(self, *args, **kwargs)
        inputs = (self, *args, *kwargs.values())
        kept = [obj for value in inputs if isinstance(value, XShards) for obj in value._keep_alive]
        if kept:
            for item in result if isinstance(result, (list, tuple)) else (result,):
                if isinstance(item, XShards):
                    keeping_alive(item, kept)
        return result

    derive._passes_keep_alive = True  # type: ignore[attr-defined]
    return derive


def _pass_keep_alive_on(cls: type) -> None:
    """Wrap, once, every method defined in ``cls`` that may return a derived collection (static
    methods build new collections from nothing; properties and most dunders never derive)."""
    for name, member in list(vars(cls).items()):
        if not inspect.isfunction(member) or getattr(member, "_passes_keep_alive", False):
            continue
        if not name.startswith("__") or name in _DERIVING_DUNDERS:
            setattr(cls, name, _passing_keep_alive(member))


@suggest_keywords
class XShards(ABC):
    """A distributed collection of shards. Build one with :meth:`partition`, the readers in
    :mod:`zoo_lite.data.pandas`, :meth:`SparkXShards.from_spark_df` or ``SparkXShards(rdd)``.

    Examples
    --------
    >>> import numpy as np
    >>> from zoo_lite import init_orca_context
    >>> from zoo_lite.data import XShards
    >>> _ = init_orca_context(cores=2)
    >>> shards = XShards.partition({"x": np.arange(10).reshape(5, 2), "y": np.arange(5)}, num_shards=2)
    >>> len(shards), shards.num_partitions()
    (5, 2)
    """

    #: what this collection's lazy data reads from and must outlive it (e.g. a RayXShards' lease);
    #: passed on to every collection derived from it (see __init_subclass__)
    _keep_alive: tuple[Any, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Make every method of ``cls`` pass ``_keep_alive`` on to the collections it returns.

        Done here, once per class (subclasses of SparkXShards included), rather than in each
        method: a method added later cannot forget it. A collection built directly from another's
        RDD (``SparkXShards(shards.rdd.map(f))``) is not derived through a method and keeps
        nothing alive.
        """
        super().__init_subclass__(**kwargs)
        _pass_keep_alive_on(cls)

    @staticmethod
    def partition(data: Any, num_shards: Optional[int] = None) -> "SparkXShards":
        """Split local data along its first axis into ``num_shards`` shards of the same structure.

        Parameters
        ----------
        data : ndarray, pandas object, or nested dict / list / tuple of them
            Every leaf must have the same number of rows.
        num_shards : int, optional
            Number of shards (and partitions); defaults to Spark's default parallelism.

        Returns
        -------
        SparkXShards
            ``num_shards`` partitions of one shard each, contiguous in row order, whose sizes
            differ by at most one row.

        Raises
        ------
        InvalidArgumentError
            Fewer rows than ``num_shards``, or ``data`` is not array-like.
        ShardMismatchError
            Leaves with different numbers of rows.
        ContextStoppedError
            No context is active: call :func:`~zoo_lite.init_orca_context` first.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition([np.zeros((5, 3)), np.ones(5)], num_shards=2)
        >>> [pair[0].shape for pair in shards.collect()]
        [(2, 3), (3, 3)]
        """
        sc = _active_spark_context()
        count = sc.defaultParallelism if num_shards is None else check_positive_int(num_shards, "num_shards")
        pieces = partition_ops.split_into_shards(data, count)
        return SparkXShards(sc.parallelize(pieces, count))

    @staticmethod
    def load_pickle(path: str, minPartitions: Optional[int] = None) -> "SparkXShards":
        """Load shards saved by :meth:`SparkXShards.save_pickle`.

        Parameters
        ----------
        path : str
            The folder ``save_pickle`` wrote; local, ``file://``, ``hdfs://`` or ``s3://``.
        minPartitions : int, optional
            The least number of partitions to read into (a hint passed to Spark's
            ``pickleFile``); by default Spark decides.

        Returns
        -------
        SparkXShards
            The saved shards, as they were saved.

        Raises
        ------
        DataReadError
            ``path`` does not exist or is an empty folder.
        InvalidArgumentError
            ``minPartitions`` is not a positive integer.
        ContextStoppedError
            No context is active: call :func:`~zoo_lite.init_orca_context` first.

        Examples
        --------
        >>> import tempfile, numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> path = tempfile.mkdtemp() + "/shards"
        >>> _ = XShards.partition(np.arange(6), num_shards=3).save_pickle(path)
        >>> loaded = XShards.load_pickle(path)
        >>> len(loaded), sorted(int(shard.sum()) for shard in loaded.collect())
        (6, [1, 5, 9])
        """
        from zoo_lite.data.filesystems import as_spark_path, check_spark_reads
        from zoo_lite.data.paths import expand_paths

        sc = _active_spark_context()
        check_spark_reads(sc, path, "path")   # Spark's pickleFile reads it: s3a:// only
        expand_paths(path, argument="path")
        path = as_spark_path(path)
        if minPartitions is not None:
            check_positive_int(minPartitions, "minPartitions")
        return SparkXShards(sc.pickleFile(path, minPartitions))

    @abstractmethod
    def transform_shard(self, func: Callable[..., Any], *args: Any) -> "XShards":
        """Apply ``func(shard, *args)`` to every shard (see :meth:`SparkXShards.transform_shard`).

        Parameters
        ----------
        func : callable
            Called as ``func(shard, *args)``; its return value is the new shard.
        *args
            Extra positional arguments passed to ``func`` after the shard.

        Returns
        -------
        XShards
            A new collection of the results, with the same partitions.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> XShards.partition(np.arange(4), 2).transform_shard(np.add, 1).collect()
        [array([1, 2]), array([3, 4])]
        """

    @abstractmethod
    def collect(self) -> list[Any]:
        """All shards, in partition order, on the driver (see :meth:`SparkXShards.collect`).

        Returns
        -------
        list
            One item per shard.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> XShards.partition(np.arange(4), 2).collect()
        [array([0, 1]), array([2, 3])]
        """

    @abstractmethod
    def num_partitions(self) -> int:
        """Number of partitions (see :meth:`SparkXShards.num_partitions`).

        Returns
        -------
        int

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> XShards.partition(np.arange(4), 2).num_partitions()
        2
        """


@suggest_keywords
class SparkXShards(XShards):
    """XShards backed by a Spark RDD whose elements are shards.

    Parameters
    ----------
    rdd : pyspark.RDD
        Each element is one shard.
    transient : bool, default False
        Never cache nor compute at creation, even in Orca's eager mode
        (``OrcaContext._eager_mode``, off by default: zoo_lite's collections are lazy).
    class_name : str, optional
        Kept for Orca compatibility.

    Raises
    ------
    InvalidArgumentError
        ``rdd`` is not a pyspark RDD.
    ContextStoppedError
        The SparkContext of ``rdd`` has been stopped.

    Notes
    -----
    Every method that returns a collection returns a new one (or ``self``), which keeps alive
    whatever its inputs read lazily: a SparkXShards from
    :meth:`~zoo_lite.data.ray_xshards.RayXShards.to_spark_xshards`, and every SparkXShards derived
    from it (``transform_shard``, ``repartition``, ``zip``, ...), keeps that RayXShards' objects
    in Ray until the last of them is garbage-collected, so that
    ``XShards.partition(data).to_ray().to_spark_xshards().collect()`` works. An RDD taken out
    with ``.rdd`` does not keep them alive: use it (or a SparkXShards built on it) only while the
    collection it came from is referenced.

    Examples
    --------
    >>> import pandas as pd
    >>> from zoo_lite import init_orca_context
    >>> from zoo_lite.data import SparkXShards
    >>> sc = init_orca_context(cores=2)
    >>> rdd = sc.parallelize([pd.DataFrame({"a": [1, 2]}), pd.DataFrame({"a": [3]})], 2)
    >>> SparkXShards(rdd).transform_shard(lambda df: df * 10).concat_to_pdf()["a"].tolist()
    [10, 20, 30]
    """

    def __init__(self, rdd: "RDD", transient: bool = False, class_name: Optional[str] = None) -> None:
        from pyspark import RDD

        if not isinstance(rdd, RDD):
            raise InvalidArgumentError(f"rdd={rdd!r} must be a pyspark RDD whose elements are shards")
        ensure_alive(rdd.context)
        self.rdd = rdd
        self.transient = transient
        self.class_name = class_name
        self._cached = False  # cache() called by the user
        self._eager_cached = False  # cached at creation by OrcaContext._eager_mode
        if not transient and _eager_mode():
            self._compute_and_keep()

    def _compute_and_keep(self) -> None:
        """Orca's eager mode: cache the shards and compute them now, so that an error surfaces at
        the call that made them and later actions reuse them."""
        self.rdd.cache()
        self._eager_cached = True
        run_job(self._sc, self.rdd.count)

    def _derived(self, rdd: "RDD", transient: bool = False) -> "SparkXShards":
        """A new collection made from this one. In eager mode it is computed now, and this one's
        eager cache is dropped unless the user cached it (Orca's rule: a pipeline keeps one
        step in memory, not every step)."""
        child = SparkXShards(rdd, transient=transient)
        if not transient:
            self._release_eager_cache()
        return child

    def _release_eager_cache(self) -> None:
        if self._eager_cached and not self._cached:
            self.rdd.unpersist()
            self._eager_cached = False

    # -- plumbing ---------------------------------------------------------------------------------

    @property
    def _sc(self) -> "SparkContext":
        return self.rdd.context

    def map_partitions(self, func: Callable[..., Any], *, with_index: bool = False) -> "SparkXShards":
        """``func`` applied to every shard, lazily, on the executors that hold them: the primitive
        every per-shard method of this collection is one call of (as ``dask.bag.map_partitions``;
        a shard is most often its partition's only element).

        Parameters
        ----------
        func : callable
            ``func(shard)``, or ``func(shard, partition_index)`` with ``with_index=True``; its
            return value is the new shard. It must be picklable (a module-level function, a
            lambda, a partial).
        with_index : bool, default False
            Also pass the index of the shard's partition.

        Returns
        -------
        SparkXShards
            The results, in the same partitions.

        Raises
        ------
        InvalidArgumentError
            ``func`` is not callable.
        ZooLiteError
            At the next action: the error ``func`` raised on an executor, as it was raised there
            (:meth:`transform_shard` also names the user function and the partition).

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(np.arange(4), num_shards=2)
        >>> shards.map_partitions(lambda shard, index: shard + 10 * index, with_index=True).collect()
        [array([0, 1]), array([12, 13])]
        """
        if not callable(func):
            raise InvalidArgumentError(f"func={func!r} is not callable; pass a function taking a shard")
        return self._mapped(func, with_index=with_index)

    def _mapped(self, func: Callable[..., Any], *, with_index: bool = False, transient: bool = False) -> "SparkXShards":
        return self._derived(self.rdd.mapPartitionsWithIndex(_per_shard(func, with_index=with_index), preservesPartitioning=True),
                             transient=transient)

    def _gather(self, func: Callable[[Any], T]) -> list[T]:
        """``func`` of every shard, collected in partition order."""
        return run_job(self._sc, self.rdd.mapPartitionsWithIndex(_per_shard(func)).collect)

    def _for_each(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> "RDD":
        """Orca's probe: a lazy RDD whose elements are ``func(shard, *args, **kwargs)`` of every
        shard, or the exception it raised on that shard (returned, not raised).

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> XShards.partition({"x": np.arange(4)}, 2)._for_each(lambda shard, key: shard[key], "y").first()
        KeyError('y')
        """
        return self.rdd.map(by_value(functools.partial(_result_or_error, func=func, args=args, kwargs=kwargs), "func"))

    # -- construction and conversion ----------------------------------------------------------------

    @staticmethod
    def from_spark_df(df: "SparkDataFrame") -> "SparkXShards":
        """One pandas shard per partition of a Spark DataFrame, converted on the executors via Arrow.

        Parameters
        ----------
        df : pyspark.sql.DataFrame
            The DataFrame to convert; its rows never pass through the driver.

        Returns
        -------
        SparkXShards
            One pandas DataFrame shard per partition of ``df`` (lazy: converted at the next action).

        Examples
        --------
        >>> from zoo_lite import init_orca_context, OrcaContext
        >>> from zoo_lite.data import SparkXShards
        >>> _ = init_orca_context(cores=2)
        >>> df = OrcaContext.get_spark_session().range(6, numPartitions=3)
        >>> [len(shard) for shard in SparkXShards.from_spark_df(df).collect()]
        [2, 2, 2]
        """
        return SparkXShards(convert.spark_df_to_pandas_rdd(df))

    def to_spark_df(self, schema: Optional["pa.Schema"] = None) -> "SparkDataFrame":
        """A Spark DataFrame of the pandas shards (or of dict shards of arrays: one column per key,
        an N-d array's rows as nested arrays), built on the executors via Arrow.

        The shards are computed once, here: without ``schema`` their Arrow form is cached on the
        executors' local disk and the DataFrame reads that cache, so its actions do not recompute
        the shards; the cache is released when the DataFrame object is garbage-collected.

        Parameters
        ----------
        schema : pyarrow.Schema, optional
            The columns' types. By default the non-empty shards' types unified (a column that is
            all-missing in one shard takes the other shards' type, int and float give float); a
            column whose types cannot be unified raises an error naming it and the partitions.

        Returns
        -------
        pyspark.sql.DataFrame
            One partition per partition of this collection, its rows in shard order.

        Raises
        ------
        InvalidArgumentError
            A shard is neither a pandas DataFrame nor a dict of equal-length arrays, the shards'
            column types cannot be unified, or there are no shards and no ``schema``.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"a": range(4), "b": list("wxyz")}), num_shards=2)
        >>> df = shards.to_spark_df()
        >>> df.count(), df.columns
        (4, ['a', 'b'])
        """
        from zoo_lite.context import OrcaContext

        ensure_alive(self._sc)
        return convert.pandas_rdd_to_spark_df(self.rdd, OrcaContext.get_spark_session(), schema)

    def to_ray(self) -> "RayXShards":
        """Put every partition into Ray's object store from the executors, never through the driver.

        Ray on Spark is started with the context's Ray options if it is not running yet. See
        :class:`~zoo_lite.data.ray_xshards.RayXShards`.

        Returns
        -------
        RayXShards
            One Ray object per partition, each on the Ray node of the executor that computed it.

        Raises
        ------
        ObjectStoreFullError
            A partition does not fit into its node's object store: raise ``object_store_memory``
            in :func:`~zoo_lite.init_orca_context`, or :meth:`repartition` into more partitions.
        NoRayNodeError
            An executor has no Ray node (fewer ``num_ray_nodes`` than executors).
        ContextStoppedError
            The context of this collection has been stopped.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2, init_ray_on_spark=True)
        >>> in_ray = XShards.partition({"x": np.arange(6)}, num_shards=2).to_ray()
        >>> in_ray.num_partitions(), in_ray.partition_rows()
        (2, [3, 3])
        """
        from zoo_lite.data.ray_xshards import spark_to_ray

        return spark_to_ray(self.rdd, _collection_keeping)

    def to_model_arrays(self, columns: Columns, need_labels: bool = True) -> "SparkXShards":
        """Each shard as model arrays, ``{"x": (ndarray, ...), "y": ndarray}``: one array per model
        input, the labels as ``"y"``; lazy.

        A pandas shard gives one input per column of ``columns.features`` (an array column is one
        input of its width). A dict shard with ``columns.features`` gives its entries of those keys,
        in that order, and its ``columns.labels`` entries as ``"y"``; without, it must be
        ``{"x": ndarray or tuple of ndarrays, "y": ndarray}``.

        Parameters
        ----------
        columns : Columns
            The feature and label columns (or dict keys), from :meth:`Columns.of`.
        need_labels : bool, default True
            True to train or evaluate (a shard without labels is an error), False to predict
            (labels are left out of pandas shards and selected dict entries).

        Returns
        -------
        SparkXShards
            One model-arrays shard per shard.

        Raises
        ------
        InvalidArgumentError
            At the next action: a pandas shard without ``columns.features``, a dict key that is not
            in a shard, a non-numeric column or entry, entries of different row counts, or no
            labels with ``need_labels``.
        ColumnNotFoundError
            At the next action: a column of ``columns`` is not in a pandas shard.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import Columns, XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition({"age": np.arange(4.0), "height": np.ones(4), "y": np.arange(4)}, num_shards=2)
        >>> first = shards.to_model_arrays(Columns.of(["age", "height"], "y")).first()
        >>> [x.tolist() for x in first["x"]], first["y"].tolist()
        ([[0.0, 1.0], [1.0, 1.0]], [0, 1])
        """
        return self.map_partitions(functools.partial(convert.shard_to_model_arrays, columns=columns, need_labels=need_labels))

    # -- transformations ----------------------------------------------------------------------------

    def transform_shard(self, func: Callable[..., Any], *args: Any) -> "SparkXShards":
        """Apply ``func(shard, *args)`` to every shard, lazily.

        An exception in ``func`` surfaces at the next action as :class:`ShardFunctionError`
        with the partition index; the original exception is its ``__cause__``.

        Parameters
        ----------
        func : callable
            Called on the executors as ``func(shard, *args)``; its return value is the new
            shard. It must be picklable (a module-level function, a lambda, a partial).
        *args
            Extra positional arguments passed to ``func`` after the shard.

        Returns
        -------
        SparkXShards
            The results, one per shard, in the same partitions.

        Raises
        ------
        InvalidArgumentError
            ``func`` is not callable.
        ShardFunctionError
            At the next action: ``func`` raised on a shard.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(np.arange(4), 2)
        >>> shards.transform_shard(np.multiply, 3).collect()
        [array([0, 3]), array([6, 9])]
        >>> shards.transform_shard(lambda a: a["price"]).collect()
        Traceback (most recent call last):
        ...
        zoo_lite.errors.ShardFunctionError: function '<lambda>' failed on partition ...
        """
        if not callable(func):
            raise InvalidArgumentError(f"func={func!r} is not callable; pass a function taking a shard")
        shipped = by_value(func, "func")   # an error that names the user's function, if it cannot travel
        return self.map_partitions(functools.partial(_call_user_function, func=shipped, args=args, name=shipped.name),
                                   with_index=True)

    def repartition(self, num_partitions: int) -> "SparkXShards":
        """``num_partitions`` shards with rows spread evenly (row trees are cut into pieces, and so
        are lists of plain values, whose rows are their elements, as in Orca; other objects move
        whole). Row order is not kept.

        Parameters
        ----------
        num_partitions : int
            Number of partitions (and shards) of the result.

        Returns
        -------
        SparkXShards
            The same rows in ``num_partitions`` partitions.

        Raises
        ------
        InvalidArgumentError
            ``num_partitions`` is not a positive integer.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(np.arange(10), 2).repartition(5)
        >>> shards.num_partitions(), len(shards)
        (5, 10)
        """
        count = check_positive_int(num_partitions, "num_partitions")
        pieces = functools.partial(_even_pieces, num_partitions=count)
        return self._derived(_shuffle(self.rdd, pieces, count))

    def partition_by(self, cols: Union[Hashable, Sequence[Hashable]], num_partitions: Optional[int] = None) -> "SparkXShards":
        """Hash-partition pandas shards by ``cols``: afterwards all rows with equal keys are in one
        shard. Vectorised: each shard is hashed and cut once, pieces move in one shuffle.

        Parameters
        ----------
        cols : column label or list of them
            The key column(s).
        num_partitions : int, optional
            Partitions of the result; by default as many as this collection has.

        Returns
        -------
        SparkXShards
            One pandas shard per partition (possibly empty, with the columns kept).

        Raises
        ------
        InvalidArgumentError
            ``cols`` is empty or ``num_partitions`` is not a positive integer; at the next
            action, a shard is not a pandas DataFrame.
        ColumnNotFoundError
            At the next action: a key column is not in the shards.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> frame = pd.DataFrame({"k": [1, 2, 1, 2, 3], "v": range(5)})
        >>> parts = XShards.partition(frame, 2).partition_by("k", num_partitions=3).collect()
        >>> [sum(key in set(p["k"]) for p in parts) for key in (1, 2, 3)]  # each key in one shard
        [1, 1, 1]
        """
        columns = _as_list(cols)
        if not columns:
            raise InvalidArgumentError(f"cols={cols!r}: name at least one key column to partition by")
        count = self.num_partitions() if num_partitions is None else check_positive_int(num_partitions, "num_partitions")
        pieces = functools.partial(_hash_pieces, columns=columns, num_partitions=count)
        return self._derived(_shuffle(self.rdd, pieces, count))

    def __getitem__(self, key: Any) -> "SparkXShards":
        """``shard[key]`` of every shard, e.g. a column of pandas shards as Series shards.

        Parameters
        ----------
        key : object
            A column label of pandas shards, a key of dict shards, a position of tuple shards.

        Returns
        -------
        SparkXShards
            ``shard[key]`` of every shard, in the same partitions.

        Raises
        ------
        ColumnNotFoundError
            At the next action: ``key`` is not a column of a pandas shard.
        InvalidArgumentError
            At the next action: ``key`` is not in a shard of another kind.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"a": [1, 2, 3, 4], "b": [5, 6, 7, 8]}), 2)
        >>> [series.tolist() for series in shards["b"].collect()]
        [[5, 6], [7, 8]]
        """
        return self._mapped(functools.partial(_select_key, key=key), transient=True)  # a view, as in Orca

    def select(self, cols: Union[Hashable, Sequence[Hashable]]) -> "SparkXShards":
        """Only the columns ``cols`` of pandas shards.

        Parameters
        ----------
        cols : column label or list of them
            The columns to keep, in this order.

        Returns
        -------
        SparkXShards
            pandas shards with only ``cols``, in the same partitions.

        Raises
        ------
        ColumnNotFoundError
            At the next action: a column is not in the shards.
        InvalidArgumentError
            At the next action: a shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"a": [1, 2], "b": [3, 4], "c": [5, 6]}), 2)
        >>> list(shards.select(["c", "a"]).first().columns)
        ['c', 'a']
        """
        return self.map_partitions(functools.partial(_select_columns, columns=_as_list(cols)))

    def sort_values(self, col_names: Union[Hashable, Sequence[Hashable]], ascending: bool = True) -> "SparkXShards":
        """Sort the rows of each pandas shard (Orca's per-shard semantics): rows do not move
        between shards, so the collection as a whole is not sorted.

        Parameters
        ----------
        col_names : column label or list of them
            The columns to sort by.
        ascending : bool, default True
            Sort in ascending order; False for descending.

        Returns
        -------
        SparkXShards
            Each shard sorted, in the same partitions.

        Raises
        ------
        ColumnNotFoundError
            At the next action: a column is not in the shards.
        InvalidArgumentError
            At the next action: a shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"v": [1, 2, 3, 4]}), 2)
        >>> [shard["v"].tolist() for shard in shards.sort_values("v", ascending=False).collect()]
        [[2, 1], [4, 3]]
        """
        return self.map_partitions(functools.partial(_sort_values, columns=_as_list(col_names), ascending=ascending))

    def drop_missing_value(self) -> "SparkXShards":
        """Drop rows with a missing value from each pandas shard.

        Returns
        -------
        SparkXShards
            The shards without their rows that hold a missing value (NaN, None, NaT).

        Raises
        ------
        InvalidArgumentError
            At the next action: a shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"a": [1.0, None, 3.0, 4.0]}), 2)
        >>> shards.drop_missing_value().concat_to_pdf()["a"].tolist()
        [1.0, 3.0, 4.0]
        """
        return self.map_partitions(_drop_missing)

    def sample(self, frac: float, replace: bool = False, random_state: Optional[int] = None) -> "SparkXShards":
        """A fraction ``frac`` of each shard's rows; with ``random_state`` the same every time.

        Parameters
        ----------
        frac : float
            The fraction of rows to draw from each shard, in [0, 1] (any non-negative value
            with ``replace=True``).
        replace : bool, default False
            Draw with replacement.
        random_state : int, optional
            Seed; each partition draws from its own stream derived from it.

        Returns
        -------
        SparkXShards
            The sampled pandas shards, in the same partitions.

        Raises
        ------
        InvalidArgumentError
            ``frac`` is out of range; at the next action, a shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"v": range(8)}), 2)
        >>> half = shards.sample(0.5, random_state=7)
        >>> len(half), half.concat_to_pdf().equals(shards.sample(0.5, random_state=7).concat_to_pdf())
        (4, True)
        """
        if not 0 <= frac <= (float("inf") if replace else 1):
            raise InvalidArgumentError(f"frac={frac!r} must be in [0, 1] without replace")
        return self.map_partitions(functools.partial(_sample, frac=frac, replace=replace, seed=random_state), with_index=True)

    def assembleFeatureLabelCols(self, featureCols: Sequence[Hashable], labelCols: Sequence[Hashable]) -> "SparkXShards":
        """Each pandas shard as ``{"x": features, "y": labels}`` (2-D arrays), Orca's training form.

        Parameters
        ----------
        featureCols : list of column labels
            Columns stacked, in this order, into ``x`` of shape ``(rows, len(featureCols))``.
        labelCols : list of column labels
            Columns stacked into ``y`` of shape ``(rows, len(labelCols))``.

        Returns
        -------
        SparkXShards
            One ``{"x": ndarray, "y": ndarray}`` dict per shard.

        Raises
        ------
        ColumnNotFoundError
            At the next action: a feature or label column is not in the shards.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> frame = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [0.5] * 4, "t": [0, 1, 0, 1]})
        >>> first = XShards.partition(frame, 2).assembleFeatureLabelCols(["a", "b"], ["t"]).first()
        >>> first["x"].shape, first["y"].ravel().tolist()
        ((2, 2), [0, 1])
        """
        return self.map_partitions(functools.partial(convert.pandas_to_feature_label, feature_cols=_as_list(featureCols), label_cols=_as_list(labelCols)))

    def group_by(self, columns: Union[Hashable, Sequence[Hashable]], agg: Any, join: bool = False) -> "SparkXShards":
        """Aggregate rows by ``columns`` (pandas ``groupby(...).agg(agg)``), exactly across shards;
        with ``join=True`` the aggregates are joined back onto every row.

        The collection is first hash-partitioned by ``columns`` (:meth:`partition_by`), so every
        group is aggregated in one shard.

        Parameters
        ----------
        columns : column label or list of them
            The group keys. Missing keys form a group of their own.
        agg : str, callable, list or dict
            What pandas' ``DataFrameGroupBy.agg`` takes, e.g. ``"sum"`` or ``{"v": ["min", "max"]}``;
            with several functions per column the result's columns are named ``v_min``, ``v_max``.
        join : bool, default False
            Return every row with its group's aggregates added (suffix ``_agg`` on a name clash)
            instead of one row per group.

        Returns
        -------
        SparkXShards
            pandas shards of the groups (or of the joined rows), as many partitions as before.

        Raises
        ------
        ColumnNotFoundError
            At the next action: a key column is not in the shards.
        InvalidArgumentError
            At the next action: a shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"k": ["a", "b", "a", "c"], "v": [1, 2, 3, 4]}), 2)
        >>> totals = shards.group_by("k", agg="sum").concat_to_pdf().sort_values("k")
        >>> totals.to_dict("list")
        {'k': ['a', 'b', 'c'], 'v': [4, 2, 4]}
        >>> joined = shards.group_by("k", agg={"v": "sum"}, join=True).concat_to_pdf().sort_values("v")
        >>> joined["v_agg"].tolist()
        [4, 2, 4, 4]
        """
        keys = _as_list(columns)
        grouped = functools.partial(partition_ops.group_aggregate, columns=keys, agg=agg, join=join)
        return self.partition_by(keys).map_partitions(grouped)

    def merge(self, right: "SparkXShards", how: str = "inner", on: Union[Hashable, Sequence[Hashable], None] = None) -> "SparkXShards":
        """``pd.merge`` of two pandas collections on the key columns ``on``, exactly across shards.

        Both sides are hash-partitioned by ``on`` into the larger of their partition counts, then
        merged partition by partition.

        Parameters
        ----------
        right : SparkXShards
            The other pandas collection.
        how : {"inner", "left", "right", "outer"}, default "inner"
            The kind of join, as in ``pd.merge``.
        on : column label or list of them
            Key column(s) present on both sides; required.

        Returns
        -------
        SparkXShards
            pandas shards of the merged rows.

        Raises
        ------
        InvalidArgumentError
            ``on`` is missing or ``how`` is not a merge type.
        ColumnNotFoundError
            At the next action: a key column is missing on one side.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> left = XShards.partition(pd.DataFrame({"k": ["a", "b", "a", "c"], "v": [1, 2, 3, 4]}), 2)
        >>> right = XShards.partition(pd.DataFrame({"k": ["a", "b"], "w": [10, 20]}), 2)
        >>> merged = left.merge(right, on="k").concat_to_pdf().sort_values("v")
        >>> merged.to_dict("list")
        {'k': ['a', 'b', 'a'], 'v': [1, 2, 3], 'w': [10, 20, 10]}
        """
        if on is None:
            raise InvalidArgumentError("merge needs on=<column or list of columns> shared by both sides")
        if how not in ("inner", "left", "right", "outer"):
            raise InvalidArgumentError(f"how={how!r} is not a merge type; use 'inner', 'left', 'right' or 'outer'")
        keys = _as_list(on)
        count = max(self.num_partitions(), right.num_partitions())
        left_parts, right_parts = self.partition_by(keys, count), right.partition_by(keys, count)
        pairs = left_parts.rdd.glom().zip(right_parts.rdd.glom())
        merged = functools.partial(_merge_pair, how=how, on=keys)
        return SparkXShards(pairs.mapPartitionsWithIndex(_per_shard(merged, with_index=True)).flatMap(_identity_list))

    def deduplicates(self) -> "SparkXShards":
        """Drop duplicate rows across all shards.

        Rows are first hash-partitioned by every column (:meth:`partition_by_all_columns`), so
        all copies of a row meet in one shard; one copy of each is kept.

        Returns
        -------
        SparkXShards
            pandas shards without duplicate rows, as many partitions as before.

        Raises
        ------
        InvalidArgumentError
            The collection has no shards, or a shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> frame = pd.DataFrame({"k": ["a", "a", "b", "b"], "v": [1, 1, 2, 3]})
        >>> XShards.partition(frame, 2).deduplicates().concat_to_pdf().sort_values("v")["v"].tolist()
        [1, 2, 3]
        """
        return self.partition_by_all_columns().map_partitions(partition_ops.deduplicate)

    def partition_by_all_columns(self) -> "SparkXShards":
        """Hash-partition pandas shards by every column (used to find duplicates).

        The columns are those of the first shard (:meth:`get_schema`).

        Returns
        -------
        SparkXShards
            pandas shards in which equal rows are in the same shard, as many partitions as before.

        Raises
        ------
        InvalidArgumentError
            The collection has no shards, or a shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> frame = pd.DataFrame({"k": ["a", "b", "a", "b"], "v": [1, 2, 1, 2]})
        >>> parts = XShards.partition(frame, 2).partition_by_all_columns().collect()
        >>> sorted(len(part) for part in parts)  # both copies of each row in one shard
        [0, 4]
        """
        columns = list(self.get_schema()["columns"])
        return self.partition_by(columns)

    def split(self) -> list["SparkXShards"]:
        """For shards that are tuples/lists of k items: k collections, one per position.

        Returns
        -------
        list of SparkXShards
            ``k`` collections; the i-th holds item i of every shard, in the same partitions.

        Raises
        ------
        InvalidArgumentError
            The first shard is not a list or tuple (checked at once, with one small job); at the
            next action, another shard is not.
        ShardMismatchError
            At the next action: shards hold different numbers of items.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> features, labels = XShards.partition((np.arange(4), np.arange(4) * 10), 2).split()
        >>> labels.collect()
        [array([ 0, 10]), array([20, 30])]
        """
        first = self.first()
        if not isinstance(first, (list, tuple)):
            raise InvalidArgumentError(f"split() needs list or tuple shards, but a shard is a {type(first).__name__}")
        checked = self._mapped(functools.partial(partition_ops.split_tuple_shard, expected_length=len(first)), transient=True)
        parts = [checked.map_partitions(functools.partial(_item, position=i)) for i in range(len(first))]
        self._release_eager_cache()
        return parts

    def zip(self, other: "SparkXShards") -> "SparkXShards":
        """Pair shards position by position: shards become ``(self_shard, other_shard)`` tuples.

        Parameters
        ----------
        other : SparkXShards
            A collection with the same partitioning: as many partitions, as many shards in each,
            and as many rows in each pair of shards (e.g. one made from the other by
            :meth:`transform_shard`).

        Returns
        -------
        SparkXShards
            ``(self_shard, other_shard)`` tuples, in the same partitions.

        Raises
        ------
        InvalidArgumentError
            ``other`` is not a SparkXShards.
        ShardMismatchError
            Different partition counts (at once), or different shard or row counts in a
            partition (at the next action).

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> x = XShards.partition(np.arange(4), 2)
        >>> x.zip(x.transform_shard(np.square)).collect()
        [(array([0, 1]), array([0, 1])), (array([2, 3]), array([4, 9]))]
        >>> x.zip(XShards.partition(np.arange(4), 4))
        Traceback (most recent call last):
        ...
        zoo_lite.errors.ShardMismatchError: The two SparkXShards should have the same number of partitions: zip: this XShards has 2 partitions and other has 4; repartition one of them to match
        """
        if not isinstance(other, SparkXShards):
            raise InvalidArgumentError(f"other should be a SparkXShards: other={other!r} must be a SparkXShards")
        if self.num_partitions() != other.num_partitions():
            raise ShardMismatchError(
                f"The two SparkXShards should have the same number of partitions: zip: this XShards has "
                f"{self.num_partitions()} partitions and other has {other.num_partitions()}; repartition one of them to match"
            )
        pairs = self.rdd.glom().zip(other.rdd.glom())
        zipped = self._derived(pairs.mapPartitionsWithIndex(_per_shard(_zip_pair, with_index=True)).flatMap(_identity_list))
        other._release_eager_cache()
        return zipped

    # -- caching ------------------------------------------------------------------------------------

    def cache(self) -> "SparkXShards":
        """Keep the shards in memory after the next action computes them.

        Returns
        -------
        SparkXShards
            ``self``, marked as cached.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(np.arange(4), 2).transform_shard(np.sqrt).cache()
        >>> shards.is_cached(), len(shards)  # the first action computes and keeps the shards
        (True, 4)
        >>> shards.uncache().is_cached()
        False
        """
        self.rdd.cache()
        self._cached = True
        return self

    def uncache(self) -> "SparkXShards":
        """Drop the shards from memory; the next action computes them again.

        Returns
        -------
        SparkXShards
            ``self``, no longer cached.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(np.arange(4), 2).cache()
        >>> shards.uncache() is shards, shards.is_cached()
        (True, False)
        """
        self.rdd.unpersist()
        self._cached = self._eager_cached = False
        return self

    def is_cached(self) -> bool:
        """Whether the shards are kept in memory: after :meth:`cache`, or, in Orca's eager mode
        (``OrcaContext._eager_mode = True``), from creation until a collection is made from them.

        Returns
        -------
        bool
            True after :meth:`cache` or while eagerly cached, False after :meth:`uncache` or
            when never cached.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(np.arange(4), 2)
        >>> shards.is_cached(), shards.cache().is_cached()
        (False, True)
        """
        return self._cached or self._eager_cached

    def compute(self) -> "SparkXShards":
        """Compute the shards now (one job counting them), as Orca's ``compute()``: pending
        transformations run and their errors surface here. Nothing is kept unless :meth:`cache`
        was called first.

        Returns
        -------
        SparkXShards
            ``self``.

        Raises
        ------
        ZooLiteError
            The error a pending transformation raised on an executor.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(np.arange(4), 2).transform_shard(np.sqrt).cache().compute()
        >>> shards.is_cached(), len(shards)
        (True, 4)
        """
        run_job(self._sc, self.rdd.count)
        return self

    # -- actions ------------------------------------------------------------------------------------

    def collect(self) -> list[Any]:
        """All shards on the driver, in partition order.

        Runs every pending transformation; use it for small results only (everything is
        copied to the driver).

        Returns
        -------
        list
            One item per shard.

        Raises
        ------
        ShardFunctionError
            A function given to :meth:`transform_shard` raised on an executor.
        ZooLiteError
            Any other zoo_lite error a pending transformation raised on an executor, as
            itself (e.g. ColumnNotFoundError).
        ContextStoppedError
            The context of this collection has been stopped.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"a": [1, 2, 3]}), 2)
        >>> [shard["a"].tolist() for shard in shards.collect()]
        [[1], [2, 3]]
        """
        return run_job(self._sc, self.rdd.collect)

    def take(self, n: int) -> list[Any]:
        """The first ``n`` shards (scanning as few partitions as it can).

        Parameters
        ----------
        n : int
            Number of shards (not rows) to return.

        Returns
        -------
        list
            At most ``n`` shards, in partition order.

        Raises
        ------
        InvalidArgumentError
            ``n`` is not a positive integer.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> XShards.partition(np.arange(6), 3).take(2)
        [array([0, 1]), array([2, 3])]
        """
        return run_job(self._sc, functools.partial(self.rdd.take, check_positive_int(n, "n")))

    def first(self) -> Any:
        """The first shard.

        Returns
        -------
        object
            The first shard of the first non-empty partition.

        Raises
        ------
        InvalidArgumentError
            The collection has no shards.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> XShards.partition(pd.DataFrame({"a": [1, 2, 3, 4]}), 2).first()["a"].tolist()
        [1, 2]
        """
        shards = self.take(1)
        if not shards:
            raise InvalidArgumentError("first() of an XShards with no shards")
        return shards[0]

    def num_partitions(self) -> int:
        """Number of partitions of the underlying RDD (no job runs).

        Returns
        -------
        int

        Raises
        ------
        ContextStoppedError
            The context of this collection has been stopped.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> XShards.partition(np.arange(6), 3).repartition(2).num_partitions()
        2
        """
        ensure_alive(self._sc)
        return self.rdd.getNumPartitions()

    def __len__(self) -> int:
        """Total rows of row-tree shards (pandas, ndarray, dicts of them); ``len`` or 1 of others
        (so a list shard counts its elements, as in Orca).

        Returns
        -------
        int
            The sum over all shards, computed with one job.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> len(XShards.partition({"x": np.zeros((5, 3)), "y": np.ones(5)}, 2))
        5
        """
        return int(sum(self._gather(partition_ops.shard_length)))

    def get_schema(self) -> dict[str, Any]:
        """Layout of the first shard: columns and dtypes for pandas shards, leaf dtypes and shapes
        for array shards.

        Returns
        -------
        dict
            ``{"type": "pandas", "columns": [...], "dtypes": {column: dtype}}`` for pandas
            shards; ``{"type": "series", "name": ..., "dtype": ...}`` for Series shards;
            ``{"type": "ndarray", "leaves": {path: {"dtype": ..., "shape": (None, ...)}}}`` for
            arrays and dicts/lists/tuples of them (``None`` stands for the rows); else
            ``{"type": <type name>}``.

        Raises
        ------
        InvalidArgumentError
            The collection has no shards.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> XShards.partition(pd.DataFrame({"k": ["a", "b"], "v": [1, 2]}), 2).get_schema()
        {'type': 'pandas', 'columns': ['k', 'v'], 'dtypes': {'k': 'object', 'v': 'int64'}}
        """
        return partition_ops.schema_of(self.first())

    def unique(self) -> np.ndarray:
        """Distinct values of Series shards, in order of first appearance.

        Returns
        -------
        numpy.ndarray
            The distinct values over all shards (empty when there are no shards).

        Raises
        ------
        InvalidArgumentError
            A shard is not a pandas Series: select a column first, as in ``shards["col"].unique()``.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> frame = pd.DataFrame({"city": ["a", "b", "a", "c"]})
        >>> XShards.partition(frame, 2)["city"].unique().tolist()
        ['a', 'b', 'c']
        """
        return partition_ops.combine_unique(self._gather(partition_ops.unique_values))

    def max_values(self, col_name: Hashable) -> Any:
        """Largest value of a column across pandas shards.

        Parameters
        ----------
        col_name : column label
            The column.

        Returns
        -------
        scalar
            The largest non-missing value; NaN when the column holds no value at all.

        Raises
        ------
        ColumnNotFoundError
            ``col_name`` is not a column of the shards.
        InvalidArgumentError
            A shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"v": [3.5, None, 9.0, 1.0]}), 2)
        >>> float(shards.max_values("v"))
        9.0
        """
        return self._column_extreme(col_name, "max")

    def min_values(self, col_name: Hashable) -> Any:
        """Smallest value of a column across pandas shards (the counterpart of :meth:`max_values`).

        Parameters
        ----------
        col_name : column label
            The column.

        Returns
        -------
        scalar
            The smallest non-missing value; NaN when the column holds no value at all.

        Raises
        ------
        ColumnNotFoundError
            ``col_name`` is not a column of the shards.
        InvalidArgumentError
            A shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"v": [3.5, None, 9.0, 1.0]}), 2)
        >>> float(shards.min_values("v"))
        1.0
        """
        return self._column_extreme(col_name, "min")

    def _column_extreme(self, col_name: Hashable, operation: str) -> Any:
        """``max`` or ``min`` of a column's non-missing values over all shards (NaN if none)."""
        values = self._gather(functools.partial(_column_extreme, column=col_name, operation=operation))
        present = [value for value in values if pd.notna(value)]
        return (max if operation == "max" else min)(present) if present else np.nan

    # -- column reductions: one vectorised pass per shard, combined on the driver -------------------

    def _reduce(self, operation: str, skipna: bool) -> Any:
        parts = self._gather(functools.partial(_reduction_part, operation=operation, skipna=skipna))
        result = partition_ops.combine_reduction([part for _, part in parts], operation, skipna)
        if parts and all(is_series for is_series, _ in parts):  # Series shards reduce to one value, as a Series does
            return result.iloc[0] if len(result) else result.dtype.type(np.nan if operation in ("max", "min", "mean") else 0)
        return result

    def max(self, skipna: bool = True) -> Any:
        """Largest value of Series shards (``shards["col"].max()``), or of each column of
        DataFrame shards, as pandas' ``max`` of all the rows together.

        Parameters
        ----------
        skipna : bool, default True
            Leave missing values out; with False a missing value makes the result NaN.

        Returns
        -------
        scalar or pandas.Series
            One value for Series shards; a Series by column for DataFrame shards. NaN where
            there is no value.

        Raises
        ------
        InvalidArgumentError
            A shard is not a pandas Series or DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"high": [3.5, None, 9.0, 1.0]}), 2)
        >>> float(shards["high"].max()), float(shards["high"].min())
        (9.0, 1.0)
        """
        return self._reduce("max", skipna)

    def min(self, skipna: bool = True) -> Any:
        """Smallest value of Series shards, or of each column of DataFrame shards (see :meth:`max`).

        Parameters
        ----------
        skipna : bool, default True
            Leave missing values out; with False a missing value makes the result NaN.

        Returns
        -------
        scalar or pandas.Series
            One value for Series shards; a Series by column for DataFrame shards.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> lowest = XShards.partition(pd.DataFrame({"a": [3, 1], "b": ["x", "w"]}), 2).min()
        >>> int(lowest["a"]), lowest["b"]
        (1, 'w')
        """
        return self._reduce("min", skipna)

    def sum(self, skipna: bool = True) -> Any:
        """Sum of Series shards, or of each column of DataFrame shards (0 for no rows, as pandas).

        Parameters
        ----------
        skipna : bool, default True
            Leave missing values out; with False a missing value makes the result NaN.

        Returns
        -------
        scalar or pandas.Series
            One value for Series shards; a Series by column for DataFrame shards.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> int(XShards.partition(pd.DataFrame({"n": [1, 2, 3, 4]}), 2)["n"].sum())
        10
        """
        return self._reduce("sum", skipna)

    def mean(self, skipna: bool = True) -> Any:
        """Mean of Series shards, or of each numeric column of DataFrame shards, over all rows
        (exact: the sums and counts of the shards are combined, not their means).

        Parameters
        ----------
        skipna : bool, default True
            Leave missing values out; with False a missing value makes the result NaN.

        Returns
        -------
        float or pandas.Series
            One value for Series shards; a Series by numeric column for DataFrame shards. NaN
            where there is no value.

        Raises
        ------
        InvalidArgumentError
            Series shards that do not hold numbers, or shards that are not pandas.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> float(XShards.partition(pd.DataFrame({"v": [1.0, 2.0, 3.0, None, 9.0]}), 2)["v"].mean())
        3.75
        """
        return self._reduce("mean", skipna)

    def count(self) -> Any:
        """Number of non-missing values of Series shards, or of each column of DataFrame shards.

        Returns
        -------
        int or pandas.Series
            One count for Series shards; a Series by column for DataFrame shards.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> int(XShards.partition(pd.DataFrame({"v": [1.0, None, 3.0]}), 2)["v"].count())
        2
        """
        return self._reduce("count", True)

    def nunique(self, dropna: bool = True) -> Any:
        """Number of distinct values of Series shards, or of each column of DataFrame shards.

        Parameters
        ----------
        dropna : bool, default True
            Leave missing values out; with False a missing value counts as one value.

        Returns
        -------
        int or pandas.Series
            One count for Series shards; a Series by column for DataFrame shards.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"city": ["a", "b", None, "a"]}), 2)
        >>> int(shards["city"].nunique()), int(shards["city"].nunique(dropna=False))
        (2, 3)
        """
        return self._reduce("nunique", dropna)

    def get_null_sum(self) -> pd.Series:
        """Missing values per column across pandas shards.

        Returns
        -------
        pandas.Series
            The count of missing values (NaN, None, NaT) of each column, indexed by column.

        Raises
        ------
        InvalidArgumentError
            A shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> frame = pd.DataFrame({"a": [1.0, None, None, 4.0], "b": ["x", None, "y", "z"]})
        >>> XShards.partition(frame, 2).get_null_sum().to_dict()
        {'a': 2, 'b': 1}
        """
        counts = self._gather(partition_ops.null_counts)
        return functools.reduce(lambda a, b: a.add(b, fill_value=0), counts) if counts else pd.Series(dtype="int64")

    def describe(self, cols: Optional[Sequence[Hashable]] = None) -> pd.DataFrame:
        """Exact count, mean, std, min and max of numeric columns across pandas shards.

        Each shard contributes its count, mean and sum of squared deviations, which are merged
        exactly on the driver; no rows move.

        Parameters
        ----------
        cols : column label or list of them, optional
            The columns to describe; by default every numeric column.

        Returns
        -------
        pandas.DataFrame
            Rows ``count``, ``mean``, ``std`` (sample standard deviation), ``min`` and ``max``;
            one column per described column.

        Raises
        ------
        ColumnNotFoundError
            A column of ``cols`` is not in the shards.
        InvalidArgumentError
            A shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"v": [1.0, 2.0, 3.0, 4.0], "k": list("abcd")}), 2)
        >>> shards.describe()["v"].round(3).to_dict()
        {'count': 4.0, 'mean': 2.5, 'std': 1.291, 'min': 1.0, 'max': 4.0}
        """
        columns = None if cols is None else _as_list(cols)
        return partition_ops.combine_moments(self._gather(functools.partial(partition_ops.moments, columns=columns)))

    def head(self, n: int = 5) -> pd.DataFrame:
        """The first ``n`` rows across pandas shards, in order, as one pandas frame.

        Partitions are read one at a time until ``n`` rows are found.

        Parameters
        ----------
        n : int, default 5
            Number of rows.

        Returns
        -------
        pandas.DataFrame
            At most ``n`` rows; an empty frame when there are no shards.

        Raises
        ------
        InvalidArgumentError
            ``n`` is not a positive integer, or a shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> XShards.partition(pd.DataFrame({"v": range(6)}), 3).head(3)["v"].tolist()
        [0, 1, 2]
        """
        count = check_positive_int(n, "n")
        heads = self.rdd.mapPartitionsWithIndex(_per_shard(functools.partial(_head, n=count)))

        def first_frames() -> list[pd.DataFrame]:
            frames: list[pd.DataFrame] = []
            for frame in heads.toLocalIterator(prefetchPartitions=False):   # errors surface while iterating
                frames.append(frame)
                if sum(len(f) for f in frames) >= count:
                    break
            return frames

        frames = run_job(self._sc, first_frames)
        return pd.concat(frames).head(count) if frames else pd.DataFrame()

    def concat_to_pdf(self) -> pd.DataFrame:
        """All pandas shards as one frame on the driver.

        Returns
        -------
        pandas.DataFrame
            The shards concatenated in partition order (a default index is renumbered); an
            empty frame when there are no shards.

        Raises
        ------
        InvalidArgumentError
            A shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> frame = XShards.partition(pd.DataFrame({"v": [1, 2, 3]}), 2).concat_to_pdf()
        >>> frame["v"].tolist(), len(frame)
        ([1, 2, 3], 3)
        """
        frames = [partition_ops.require_pandas(shard, "concat_to_pdf") for shard in self.collect()]
        return partition_ops.concat_shards(frames)[0] if frames else pd.DataFrame()

    def save_pickle(self, path: str, batchSize: int = 10) -> "SparkXShards":
        """Save the shards as pickle files under ``path`` (must not exist); see :meth:`XShards.load_pickle`.

        Parameters
        ----------
        path : str
            A folder to create; local, ``file://``, ``hdfs://`` or ``s3://``.
        batchSize : int, default 10
            Shards pickled together in one record (Spark's ``saveAsPickleFile`` batch size).

        Returns
        -------
        SparkXShards
            ``self``.

        Raises
        ------
        InvalidArgumentError
            ``path`` exists already, ``batchSize`` is not a positive integer, or ``path`` is a
            folder on the driver's host that executors on other hosts do not see (each would write
            its part to its own disk): on a cluster, save to a shared file system, HDFS or S3.

        Examples
        --------
        >>> import tempfile, numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> path = tempfile.mkdtemp() + "/saved"
        >>> shards = XShards.partition(np.arange(4), 2)
        >>> shards.save_pickle(path) is shards
        True
        >>> shards.save_pickle(path)
        Traceback (most recent call last):
        ...
        zoo_lite.errors.InvalidArgumentError: path=... already exists; remove it or choose a new path
        """
        from zoo_lite.data.filesystems import as_spark_path, check_spark_reads
        from zoo_lite.data.paths import check_every_host_sees, path_exists

        check_spark_reads(self._sc, path, "path")   # Spark's saveAsPickleFile writes it: s3a:// only
        if path_exists(path):
            raise InvalidArgumentError(f"path={path!r} already exists; remove it or choose a new path")
        check_every_host_sees(self._sc, path, "path")
        run_job(self._sc, functools.partial(self.rdd.saveAsPickleFile, as_spark_path(path), check_positive_int(batchSize, "batchSize")))
        return self

    def __repr__(self) -> str:
        return f"SparkXShards(num_partitions={self.rdd.getNumPartitions()}, cached={self._cached})"


# Module-level shard functions (shipped to executors; they capture plain values only).

def _result_or_error(shard: Any, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        return func(shard, *args, **kwargs)
    except Exception as error:  # noqa: BLE001 - Orca's _for_each hands the error back as the result
        return error


def _even_pieces(shard: Any, partition_index: int, num_partitions: int) -> list[tuple[int, Any]]:
    return partition_ops.even_pieces(shard, num_partitions, partition_index)


def _hash_pieces(shard: Any, partition_index: int, columns: list[Hashable], num_partitions: int) -> list[tuple[int, Any]]:
    return partition_ops.hash_pieces(shard, columns, num_partitions)


def _select_key(shard: Any, key: Any) -> Any:
    # the messages start with Orca's words, which Orca code matches
    try:
        return shard[key]
    except (KeyError, IndexError) as error:
        if isinstance(shard, pd.DataFrame):
            raise ColumnNotFoundError(
                f"Invalid key for this XShards: key={key!r} is not a column; the shards have columns {list(shard.columns)}"
            ) from error
        keys = f" (its keys are {list(shard)})" if isinstance(shard, dict) else ""
        raise InvalidArgumentError(f"Invalid key for this XShards: key={key!r} is not in a shard of type "
                                   f"{type(shard).__name__}{keys}") from error
    except TypeError as error:
        raise InvalidArgumentError(
            f"No selection operation available for this XShards: its shards are {type(shard).__name__}, which "
            f"cannot be indexed by key={key!r}; select from pandas, dict, list or tuple shards"
        ) from error


def _select_columns(shard: Any, columns: list[Hashable]) -> pd.DataFrame:
    frame = partition_ops.require_pandas(shard, "select")
    partition_ops.check_columns(frame, columns, "cols")
    return frame[columns]


def _sort_values(shard: Any, columns: list[Hashable], ascending: bool) -> pd.DataFrame:
    frame = partition_ops.require_pandas(shard, "sort_values")
    partition_ops.check_columns(frame, columns, "col_names")
    return frame.sort_values(columns, ascending=ascending)


def _drop_missing(shard: Any) -> pd.DataFrame:
    return partition_ops.require_pandas(shard, "drop_missing_value").dropna()


def _sample(shard: Any, partition_index: int, frac: float, replace: bool, seed: Optional[int]) -> pd.DataFrame:
    return partition_ops.sample_shard(shard, frac, replace, seed, partition_index)


def _column_extreme(shard: Any, column: Hashable, operation: str) -> Any:
    frame = partition_ops.require_pandas(shard, f"{operation}_values")
    partition_ops.check_columns(frame, [column], "col_name")
    return getattr(frame[column], operation)()


def _reduction_part(shard: Any, operation: str, skipna: bool) -> tuple[bool, Any]:
    return isinstance(shard, pd.Series), partition_ops.reduction_partial(shard, operation, skipna)


def _head(shard: Any, n: int) -> pd.DataFrame:
    return partition_ops.require_pandas(shard, "head").head(n)


def _item(shard: Any, position: int) -> Any:
    return shard[position]


def _zip_pair(pair: tuple[list[Any], list[Any]], partition_index: int) -> list[tuple[Any, Any]]:
    return partition_ops.zip_shard_lists(partition_index, pair[0], pair[1])


def _merge_pair(pair: tuple[list[Any], list[Any]], partition_index: int, how: str, on: list[Hashable]) -> list[pd.DataFrame]:
    return partition_ops.merge_shards(partition_index, pair[0], pair[1], how, on)


def _identity_list(items: list[Any]) -> list[Any]:
    return items
