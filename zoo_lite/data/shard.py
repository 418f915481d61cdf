"""XShards: a distributed collection of shards (pandas frames, dicts of ndarrays, any object).

:class:`SparkXShards` holds a Spark RDD whose elements are the shards, and little else. Every
method is a short call into :mod:`zoo_lite.data.partition_ops` (pure per-shard work) or
:mod:`zoo_lite.data.convert` (format changes) and returns a new collection. Transformations are
lazy, as in Spark: errors inside them surface at the next action (``collect``, ``len``, ...) as
the zoo_lite error raised on the executor, with the partition index where it matters.

The collection and its families of methods
------------------------------------------
As dask's Bag and pandas' DataFrame are, SparkXShards is a thin collection class whose methods
are grouped by what a user would call them. Each family is a module of
:mod:`zoo_lite.data.shard_methods` holding one mixin class (the family's public methods, with
their docstrings and examples) and the functions those methods ship to the executors:

- ``elementwise``: each shard on its own: transform_shard, ``[key]``, select, sort_values,
  drop_missing_value, sample, assembleFeatureLabelCols, split;
- ``shuffles``: rows moved between partitions: repartition, partition_by,
  partition_by_all_columns, group_by, deduplicates;
- ``joins``: two collections into one: merge, zip;
- ``reductions``: one answer from all shards: len, get_schema, unique, max, min, sum, mean,
  count, nunique, max_values, min_values, get_null_sum, describe;
- ``conversions``: the shards handed on: to_spark_df, to_ray, to_model_arrays;
- ``actions``: computing and collecting: cache, uncache, is_cached, compute, collect, take,
  first, head, concat_to_pdf, save_pickle.

SparkXShards lists the mixins as its bases, so every method is called, shown by ``help`` and
documented (the reference's ``inherited_members``) as ``SparkXShards.<method>``; and
:meth:`XShards.__init_subclass__` sets each family method on SparkXShards itself, wrapped (see
below), so that it is SparkXShards' own to its class decorator as well (an unknown keyword is
reported for ``SparkXShards.partition_by()``). This module holds the collection itself:
:class:`XShards` (the abstract collection, with ``partition`` and ``load_pickle``),
SparkXShards' construction and Orca's eager mode, the primitive
:meth:`SparkXShards.map_partitions` and the plumbing the families reach through ``self``
(``rdd``, ``_mapped``, ``_gather``, ``_derived``, ``_release_eager_cache``, and
``_new_collection`` where a family builds a collection from nothing), the ways in from Spark
(``from_spark_df``, :func:`model_arrays_from_spark_df`, :func:`model_arrays_of`), and the
keep-alive bookkeeping below. The family modules never import this one (it imports them, and
zoo_lite has no import cycle): whatever must name the class SparkXShards stays here.

Keeping alive what a lazy collection reads
------------------------------------------
Because they are lazy, a collection may read from something that must outlive it, e.g. the Ray
objects of the :class:`~zoo_lite.data.ray_xshards.RayXShards` that ``to_spark_xshards()`` came
from. Such objects are kept in the collection's ``_keep_alive``, and every collection a method
returns keeps what its inputs keep: :meth:`XShards.__init_subclass__` wraps the methods of every
XShards class once (those it takes from its families included), so no method has to pass it on
itself.
"""

from __future__ import annotations

import functools
import inspect
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, TypeVar

from zoo_lite.data import convert, partition_ops
from zoo_lite.data.convert import Columns
from zoo_lite.data.shard_methods.actions import ActionMethods
from zoo_lite.data.shard_methods.conversions import ConversionMethods
from zoo_lite.data.shard_methods.elementwise import ElementwiseMethods
from zoo_lite.data.shard_methods.joins import JoinMethods
from zoo_lite.data.shard_methods.reductions import ReductionMethods
from zoo_lite.data.shard_methods.shuffles import ShuffleMethods
from zoo_lite.data.shard_methods.tasks import per_shard
from zoo_lite.data.spark_jobs import ensure_alive, run_job
from zoo_lite.errors import InvalidArgumentError, check_positive_int
from zoo_lite.keywords import suggest_keywords
from zoo_lite.user_code import by_value

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext
    from pyspark.sql import DataFrame as SparkDataFrame


__all__ = ["XShards", "SparkXShards", "model_arrays_of", "model_arrays_from_spark_df"]

T = TypeVar("T")
XS = TypeVar("XS", bound="XShards")


def _eager_mode() -> bool:
    from zoo_lite.context import OrcaContext  # here: zoo_lite.context imports the data package

    return OrcaContext._eager_mode


def _active_spark_context() -> "SparkContext":
    from zoo_lite.context import require_classic_session

    return require_classic_session("XShards").sparkContext


def model_arrays_from_spark_df(df: "SparkDataFrame", columns: Columns, need_labels: bool = True, *,
                               argument: str = "data", piece_bytes: Optional[int] = None,
                               max_partitions: Optional[int] = None) -> "SparkXShards":
    """An XShards of model arrays (``{"x": (ndarray, ...), "y": ndarray}``, one shard per partition,
    or per piece of about ``piece_bytes`` of Arrow data; in ``max_partitions`` partitions at most)
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
    piece_bytes : int, optional
        Read each partition in pieces of about this many bytes, one shard each.
    max_partitions : int, optional
        Join ``df``'s partitions into this many at most first, without a shuffle.

    Returns
    -------
    SparkXShards
        One model-arrays shard per partition of ``df`` (per piece, with ``piece_bytes``).

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
    return SparkXShards(convert.spark_df_to_model_arrays_rdd(df, columns, need_labels, argument=argument,
                                                             piece_bytes=piece_bytes, max_partitions=max_partitions))


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


def _passing_keep_alive(method: Callable[..., Any], owner: type) -> Callable[..., Any]:
    """``method`` of the XShards class ``owner``, changed so that every XShards it returns (alone,
    or in a list or tuple) keeps alive what ``self`` and its XShards arguments keep alive; named
    as a method of ``owner`` (``SparkXShards.partition_by``, wherever a family defined it)."""

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
    derive.__qualname__ = f"{owner.__qualname__}.{method.__name__}"
    return derive


def _pass_keep_alive_on(cls: type) -> None:
    """Wrap, once, every method of ``cls`` that may return a derived collection (static methods
    build new collections from nothing; properties and most dunders never derive).

    Those ``cls`` takes from its families (see the module docstring) are set, wrapped, on ``cls``
    itself, as if defined there: class decorators such as
    :func:`~zoo_lite.keywords.suggest_keywords` then see them as its own methods.
    """
    for name, member in _own_and_family_methods(cls).items():
        if not inspect.isfunction(member) or getattr(member, "_passes_keep_alive", False):
            continue
        if not name.startswith("__") or name in _DERIVING_DUNDERS:
            setattr(cls, name, _passing_keep_alive(member, cls))


def _own_and_family_methods(cls: type) -> dict[str, Any]:
    """What ``cls`` defines, and the methods of its bases that are not XShards classes (its
    families) that it does not override."""
    family = {name: member for base in cls.__bases__ if not issubclass(base, XShards)
              for name, member in vars(base).items()
              if inspect.isfunction(member) and inspect.getattr_static(cls, name) is member}
    return {**family, **vars(cls)}



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
        """Make every method of ``cls``, its families' included, pass ``_keep_alive`` on to the
        collections it returns.

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
class SparkXShards(ElementwiseMethods, ShuffleMethods, JoinMethods, ReductionMethods, ConversionMethods, ActionMethods,
                   XShards):
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

    # -- plumbing: what the families of methods call through self ------------------------------

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
        return self._derived(self.rdd.mapPartitionsWithIndex(per_shard(func, with_index=with_index), preservesPartitioning=True),
                             transient=transient)

    def _gather(self, func: Callable[[Any], T]) -> list[T]:
        """``func`` of every shard, collected in partition order."""
        return run_job(self._sc, self.rdd.mapPartitionsWithIndex(per_shard(func)).collect)

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

    @staticmethod
    def _new_collection(rdd: "RDD", keep_alive: Sequence[Any] = ()) -> "SparkXShards":
        """A SparkXShards of ``rdd`` that keeps ``keep_alive`` referenced: how a family that makes
        a collection from nothing (``merge``) and a RayXShards (``to_ray`` hands it this) build
        one without importing this module (which would make an import cycle)."""
        return keeping_alive(SparkXShards(rdd), keep_alive)

    # -- construction and layout ----------------------------------------------------------------

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

    def __repr__(self) -> str:
        return f"SparkXShards(num_partitions={self.rdd.getNumPartitions()}, cached={self._cached})"


# Module-level shard functions (shipped to executors; they capture plain values only).

def _result_or_error(shard: Any, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        return func(shard, *args, **kwargs)
    except Exception as error:  # noqa: BLE001 - Orca's _for_each hands the error back as the result
        return error
