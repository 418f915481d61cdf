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
from zoo_lite.errors import (
    ContextStoppedError,
    DataReadError,
    InvalidArgumentError,
    ShardFunctionError,
    ShardMismatchError,
    check_positive_int,
    decode_remote_error,
    raising_transportably,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import RDD, SparkContext
    from pyspark.sql import DataFrame as SparkDataFrame

    from zoo_lite.data.ray_xshards import RayXShards

__all__ = ["XShards", "SparkXShards"]

T = TypeVar("T")
XS = TypeVar("XS", bound="XShards")


def _ensure_alive(sc: "SparkContext") -> None:
    if sc._jsc is None:
        raise ContextStoppedError(
            "this XShards belongs to a SparkContext that has been stopped (stop_orca_context()); "
            "call init_orca_context() and build the XShards again"
        )


def _run(sc: "SparkContext", action: Callable[[], T]) -> T:
    """Run a Spark action; re-raise an error from an executor as the error it was there."""
    _ensure_alive(sc)
    try:
        return action()
    except Exception as error:
        remote = decode_remote_error(str(error))
        if remote is None:
            _ensure_alive(sc)
            _raise_read_error_if_any(error)
            raise
        if remote.__cause__ is None:
            remote.__suppress_context__ = True
        raise remote


_SPARK_READ_ERRORS = ("FAILED_READ_FILE", "MALFORMED_RECORD_IN_PARSING", "FileNotFoundException")


def _raise_read_error_if_any(error: Exception) -> None:
    """Spark's own reader failures (a malformed file, a file gone since listing) as DataReadError."""
    text = str(error)
    if any(marker in text for marker in _SPARK_READ_ERRORS):
        summary = next((line.strip() for line in text.splitlines() if any(m in line for m in _SPARK_READ_ERRORS)), text[:500])
        raise DataReadError(f"Spark could not read an input file: {summary}") from error


def _per_shard(func: Callable[..., Any], *, with_index: bool = False) -> Callable[[int, Iterator[Any]], list[Any]]:
    """A mapPartitionsWithIndex function applying a zoo_lite function to every shard."""

    @raising_transportably
    def run(index: int, shards: Iterator[Any]) -> list[Any]:
        return [func(shard, index) if with_index else func(shard) for shard in shards]

    return run


def _user_per_shard(func: Callable[..., Any], args: tuple[Any, ...]) -> Callable[[int, Iterator[Any]], list[Any]]:
    """Like :func:`_per_shard` for a user function: its errors become ShardFunctionError."""
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)

    @raising_transportably
    def run(index: int, shards: Iterator[Any]) -> list[Any]:
        results = []
        for shard in shards:
            try:
                results.append(func(shard, *args))
            except Exception as error:  # noqa: BLE001 - any user error is reported with its partition
                raise ShardFunctionError(index, name, error) from error
        return results

    return run


def _shuffle(rdd: "RDD", make_pieces: Callable[[Any, int], list[tuple[int, Any]]], num_partitions: int) -> "RDD":
    """Cut every shard into ``(target, piece)`` pairs, move each piece to its target partition and
    join the pieces there into one shard."""

    _ensure_alive(rdd.context)

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


def _active_spark_context() -> "SparkContext":
    from zoo_lite.context import OrcaContext

    return OrcaContext.get_spark_context()


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


class XShards(ABC):
    """A distributed collection of shards. Build one with :meth:`partition`, the readers in
    :mod:`zoo_lite.data.pandas`, :meth:`SparkXShards.from_spark_df` or ``SparkXShards(rdd)``.

    Examples
    --------
    >>> import numpy as np
    >>> from zoo_lite import init_orca_context, stop_orca_context
    >>> from zoo_lite.data import XShards
    >>> _ = init_orca_context(cores=2)
    >>> shards = XShards.partition({"x": np.arange(10).reshape(5, 2), "y": np.arange(5)}, num_shards=2)
    >>> len(shards), shards.num_partitions()
    (5, 2)
    >>> stop_orca_context()
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

        Raises
        ------
        InvalidArgumentError
            Fewer rows than ``num_shards``, or ``data`` is not array-like.
        ShardMismatchError
            Leaves with different numbers of rows.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context, stop_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition([np.zeros((4, 3)), np.ones(4)], num_shards=2)
        >>> [pair[0].shape for pair in shards.collect()]
        [(2, 3), (2, 3)]
        >>> stop_orca_context()
        """
        sc = _active_spark_context()
        count = sc.defaultParallelism if num_shards is None else check_positive_int(num_shards, "num_shards")
        pieces = partition_ops.split_into_shards(data, count)
        return SparkXShards(sc.parallelize(pieces, count))

    @staticmethod
    def load_pickle(path: str, minPartitions: Optional[int] = None) -> "SparkXShards":
        """Load shards saved by :meth:`SparkXShards.save_pickle`.

        Examples
        --------
        >>> import tempfile, numpy as np
        >>> from zoo_lite import init_orca_context, stop_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> path = tempfile.mkdtemp() + "/shards"
        >>> _ = XShards.partition(np.arange(6), num_shards=3).save_pickle(path)
        >>> len(XShards.load_pickle(path))
        6
        >>> stop_orca_context()
        """
        from zoo_lite.data.paths import expand_paths

        sc = _active_spark_context()
        expand_paths(path, argument="path")
        if minPartitions is not None:
            check_positive_int(minPartitions, "minPartitions")
        return SparkXShards(sc.pickleFile(path, minPartitions))

    @abstractmethod
    def transform_shard(self, func: Callable[..., Any], *args: Any) -> "XShards":
        """Apply ``func(shard, *args)`` to every shard."""

    @abstractmethod
    def collect(self) -> list[Any]:
        """All shards, in partition order, on the driver."""

    @abstractmethod
    def num_partitions(self) -> int:
        """Number of partitions."""


class SparkXShards(XShards):
    """XShards backed by a Spark RDD whose elements are shards.

    Parameters
    ----------
    rdd : pyspark.RDD
        Each element is one shard.
    transient : bool, default False
        Kept for Orca compatibility; zoo_lite never caches implicitly (see :meth:`cache`).
    class_name : str, optional
        Kept for Orca compatibility.

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
    >>> from zoo_lite import init_orca_context, stop_orca_context
    >>> from zoo_lite.data import SparkXShards
    >>> sc = init_orca_context(cores=2)
    >>> rdd = sc.parallelize([pd.DataFrame({"a": [1, 2]}), pd.DataFrame({"a": [3]})], 2)
    >>> SparkXShards(rdd).transform_shard(lambda df: df * 10).concat_to_pdf()["a"].tolist()
    [10, 20, 30]
    >>> stop_orca_context()
    """

    def __init__(self, rdd: "RDD", transient: bool = False, class_name: Optional[str] = None) -> None:
        from pyspark import RDD

        if not isinstance(rdd, RDD):
            raise InvalidArgumentError(f"rdd={rdd!r} must be a pyspark RDD whose elements are shards")
        _ensure_alive(rdd.context)
        self.rdd = rdd
        self.transient = transient
        self.class_name = class_name
        self._cached = False

    # -- plumbing ---------------------------------------------------------------------------------

    @property
    def _sc(self) -> "SparkContext":
        return self.rdd.context

    def _map(self, func: Callable[..., Any], *, with_index: bool = False) -> "SparkXShards":
        return SparkXShards(self.rdd.mapPartitionsWithIndex(_per_shard(func, with_index=with_index), preservesPartitioning=True))

    def _gather(self, func: Callable[[Any], T]) -> list[T]:
        """``func`` of every shard, collected in partition order."""
        return _run(self._sc, self.rdd.mapPartitionsWithIndex(_per_shard(func)).collect)

    # -- construction and conversion ----------------------------------------------------------------

    @staticmethod
    def from_spark_df(df: "SparkDataFrame") -> "SparkXShards":
        """One pandas shard per partition of a Spark DataFrame, converted on the executors via Arrow.

        Examples
        --------
        >>> from zoo_lite import init_orca_context, stop_orca_context, OrcaContext
        >>> from zoo_lite.data import SparkXShards
        >>> _ = init_orca_context(cores=2)
        >>> df = OrcaContext.get_spark_session().range(6, numPartitions=3)
        >>> [len(shard) for shard in SparkXShards.from_spark_df(df).collect()]
        [2, 2, 2]
        >>> stop_orca_context()
        """
        return SparkXShards(convert.spark_df_to_pandas_rdd(df))

    def to_spark_df(self, schema: Optional["pa.Schema"] = None) -> "SparkDataFrame":
        """A Spark DataFrame of the pandas shards, built on the executors via Arrow.

        Parameters
        ----------
        schema : pyarrow.Schema, optional
            The columns' types. By default the non-empty shards' types unified (a column that is
            all-missing in one shard takes the other shards' type, int and float give float); a
            column whose types cannot be unified raises an error naming it and the partitions.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context, stop_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"a": range(4)}), num_shards=2)
        >>> shards.to_spark_df().count()
        4
        >>> stop_orca_context()
        """
        from zoo_lite.context import OrcaContext

        arrow_schema = schema if schema is not None else self._unified_arrow_schema()
        session = OrcaContext.get_spark_session()
        return convert.pandas_rdd_to_spark_df(self.rdd, session, arrow_schema)

    def _unified_arrow_schema(self) -> "pa.Schema":
        def schemas_of(index: int, shards: Iterator[Any]) -> list[Any]:
            frames = [partition_ops.require_pandas(shard, "to_spark_df") for shard in shards]
            return [(index, bool(len(frame)), convert.arrow_schema_of_pandas(frame)) for frame in frames]

        schemas = _run(self._sc, self.rdd.mapPartitionsWithIndex(raising_transportably(schemas_of)).collect)
        if not schemas:
            raise InvalidArgumentError("to_spark_df() on an XShards with no shards: pass schema= to build an empty DataFrame")
        non_empty = [(index, schema) for index, filled, schema in schemas if filled]
        return convert.unify_arrow_schemas(non_empty or [(index, schema) for index, _, schema in schemas[:1]])

    def to_ray(self) -> "RayXShards":
        """Put every partition into Ray's object store from the executors, never through the driver.

        Ray on Spark is started with the context's Ray options if it is not running yet. See
        :class:`~zoo_lite.data.ray_xshards.RayXShards`."""
        from zoo_lite.data.ray_xshards import spark_to_ray

        return spark_to_ray(self)

    # -- transformations ----------------------------------------------------------------------------

    def transform_shard(self, func: Callable[..., Any], *args: Any) -> "SparkXShards":
        """Apply ``func(shard, *args)`` to every shard, lazily.

        An exception in ``func`` surfaces at the next action as :class:`ShardFunctionError`
        with the partition index; the original exception is its ``__cause__``.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context, stop_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> XShards.partition(np.arange(4), 2).transform_shard(np.multiply, 3).collect()
        [array([0, 3]), array([6, 9])]
        >>> stop_orca_context()
        """
        if not callable(func):
            raise InvalidArgumentError(f"func={func!r} is not callable; pass a function taking a shard")
        return SparkXShards(self.rdd.mapPartitionsWithIndex(_user_per_shard(func, args), preservesPartitioning=True))

    def repartition(self, num_partitions: int) -> "SparkXShards":
        """``num_partitions`` shards with rows spread evenly (row trees are cut into pieces; other
        objects move whole). Row order is not kept.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context, stop_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(np.arange(10), 2).repartition(5)
        >>> shards.num_partitions(), len(shards)
        (5, 10)
        >>> stop_orca_context()
        """
        count = check_positive_int(num_partitions, "num_partitions")
        pieces = functools.partial(_even_pieces, num_partitions=count)
        return SparkXShards(_shuffle(self.rdd, pieces, count))

    def partition_by(self, cols: Union[Hashable, Sequence[Hashable]], num_partitions: Optional[int] = None) -> "SparkXShards":
        """Hash-partition pandas shards by ``cols``: afterwards all rows with equal keys are in one
        shard. Vectorised: each shard is hashed and cut once, pieces move in one shuffle.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context, stop_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> frame = pd.DataFrame({"k": [1, 2, 1, 2, 3], "v": range(5)})
        >>> parts = XShards.partition(frame, 2).partition_by("k", num_partitions=3).collect()
        >>> [sum(key in set(p["k"]) for p in parts) for key in (1, 2, 3)]  # each key in one shard
        [1, 1, 1]
        >>> stop_orca_context()
        """
        columns = _as_list(cols)
        if not columns:
            raise InvalidArgumentError(f"cols={cols!r}: name at least one key column to partition by")
        count = self.num_partitions() if num_partitions is None else check_positive_int(num_partitions, "num_partitions")
        pieces = functools.partial(_hash_pieces, columns=columns, num_partitions=count)
        return SparkXShards(_shuffle(self.rdd, pieces, count))

    def __getitem__(self, key: Any) -> "SparkXShards":
        """``shard[key]`` of every shard, e.g. a column of pandas shards as Series shards."""
        return self._map(functools.partial(_select_key, key=key))

    def select(self, cols: Union[Hashable, Sequence[Hashable]]) -> "SparkXShards":
        """Only the columns ``cols`` of pandas shards."""
        return self._map(functools.partial(_select_columns, columns=_as_list(cols)))

    def sort_values(self, col_names: Union[Hashable, Sequence[Hashable]], ascending: bool = True) -> "SparkXShards":
        """Sort the rows of each pandas shard (Orca's per-shard semantics)."""
        return self._map(functools.partial(_sort_values, columns=_as_list(col_names), ascending=ascending))

    def drop_missing_value(self) -> "SparkXShards":
        """Drop rows with a missing value from each pandas shard."""
        return self._map(_drop_missing)

    def sample(self, frac: float, replace: bool = False, random_state: Optional[int] = None) -> "SparkXShards":
        """A fraction ``frac`` of each shard's rows; with ``random_state`` the same every time."""
        if not 0 <= frac <= (float("inf") if replace else 1):
            raise InvalidArgumentError(f"frac={frac!r} must be in [0, 1] without replace")
        return self._map(functools.partial(_sample, frac=frac, replace=replace, seed=random_state), with_index=True)

    def assembleFeatureLabelCols(self, featureCols: Sequence[Hashable], labelCols: Sequence[Hashable]) -> "SparkXShards":
        """Each pandas shard as ``{"x": features, "y": labels}`` (2-D arrays), Orca's training form."""
        return self._map(functools.partial(convert.pandas_to_feature_label, feature_cols=_as_list(featureCols), label_cols=_as_list(labelCols)))

    def group_by(self, columns: Union[Hashable, Sequence[Hashable]], agg: Any, join: bool = False) -> "SparkXShards":
        """Aggregate rows by ``columns`` (pandas ``groupby(...).agg(agg)``), exactly across shards;
        with ``join=True`` the aggregates are joined back onto every row."""
        keys = _as_list(columns)
        grouped = functools.partial(partition_ops.group_aggregate, columns=keys, agg=agg, join=join)
        return self.partition_by(keys)._map(grouped)

    def merge(self, right: "SparkXShards", how: str = "inner", on: Union[Hashable, Sequence[Hashable], None] = None) -> "SparkXShards":
        """``pd.merge`` of two pandas collections on the key columns ``on``, exactly across shards."""
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
        """Drop duplicate rows across all shards."""
        return self.partition_by_all_columns()._map(partition_ops.deduplicate)

    def partition_by_all_columns(self) -> "SparkXShards":
        """Hash-partition pandas shards by every column (used to find duplicates)."""
        columns = list(self.get_schema()["columns"])
        return self.partition_by(columns)

    def split(self) -> list["SparkXShards"]:
        """For shards that are tuples/lists of k items: k collections, one per position."""
        first = self.first()
        if not isinstance(first, (list, tuple)):
            raise InvalidArgumentError(f"split() needs list or tuple shards, but a shard is a {type(first).__name__}")
        checked = self._map(functools.partial(partition_ops.split_tuple_shard, expected_length=len(first)))
        return [checked._map(functools.partial(_item, position=i)) for i in range(len(first))]

    def zip(self, other: "SparkXShards") -> "SparkXShards":
        """Pair shards position by position: shards become ``(self_shard, other_shard)`` tuples.

        Raises
        ------
        ShardMismatchError
            Different partition counts (at once), or different shard or row counts in a
            partition (at the next action).
        """
        if not isinstance(other, SparkXShards):
            raise InvalidArgumentError(f"other={other!r} must be a SparkXShards")
        if self.num_partitions() != other.num_partitions():
            raise ShardMismatchError(
                f"zip: this XShards has {self.num_partitions()} partitions and other has "
                f"{other.num_partitions()}; repartition one of them to match"
            )
        pairs = self.rdd.glom().zip(other.rdd.glom())
        return SparkXShards(pairs.mapPartitionsWithIndex(_per_shard(_zip_pair, with_index=True)).flatMap(_identity_list))

    # -- caching ------------------------------------------------------------------------------------

    def cache(self) -> "SparkXShards":
        """Keep the shards in memory after the next action computes them."""
        self.rdd.cache()
        self._cached = True
        return self

    def uncache(self) -> "SparkXShards":
        """Drop the shards from memory."""
        self.rdd.unpersist()
        self._cached = False
        return self

    def is_cached(self) -> bool:
        """Whether :meth:`cache` is in effect."""
        return self._cached

    # -- actions ------------------------------------------------------------------------------------

    def collect(self) -> list[Any]:
        """All shards on the driver, in partition order."""
        return _run(self._sc, self.rdd.collect)

    def take(self, n: int) -> list[Any]:
        """The first ``n`` shards (scanning as few partitions as it can)."""
        return _run(self._sc, functools.partial(self.rdd.take, check_positive_int(n, "n")))

    def first(self) -> Any:
        """The first shard."""
        shards = self.take(1)
        if not shards:
            raise InvalidArgumentError("first() of an XShards with no shards")
        return shards[0]

    def num_partitions(self) -> int:
        """Number of partitions of the underlying RDD."""
        _ensure_alive(self._sc)
        return self.rdd.getNumPartitions()

    def __len__(self) -> int:
        """Total rows of row-tree shards (pandas, ndarray, dicts of them); ``len`` or 1 of others."""
        return int(sum(self._gather(partition_ops.shard_length)))

    def get_schema(self) -> dict[str, Any]:
        """Layout of the first shard: columns and dtypes for pandas shards, leaf dtypes and shapes
        for array shards."""
        return partition_ops.schema_of(self.first())

    def unique(self) -> np.ndarray:
        """Distinct values of Series shards, in order of first appearance.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context, stop_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> frame = pd.DataFrame({"city": ["a", "b", "a", "c"]})
        >>> XShards.partition(frame, 2)["city"].unique().tolist()
        ['a', 'b', 'c']
        >>> stop_orca_context()
        """
        return partition_ops.combine_unique(self._gather(partition_ops.unique_values))

    def max_values(self, col_name: Hashable) -> Any:
        """Largest value of a column across pandas shards."""
        maxima = [value for value in self._gather(functools.partial(_column_max, column=col_name)) if pd.notna(value)]
        return max(maxima) if maxima else np.nan

    def get_null_sum(self) -> pd.Series:
        """Missing values per column across pandas shards."""
        counts = self._gather(partition_ops.null_counts)
        return functools.reduce(lambda a, b: a.add(b, fill_value=0), counts) if counts else pd.Series(dtype="int64")

    def describe(self, cols: Optional[Sequence[Hashable]] = None) -> pd.DataFrame:
        """Exact count, mean, std, min and max of numeric columns across pandas shards."""
        columns = None if cols is None else _as_list(cols)
        return partition_ops.combine_moments(self._gather(functools.partial(partition_ops.moments, columns=columns)))

    def head(self, n: int = 5) -> pd.DataFrame:
        """The first ``n`` rows across pandas shards, in order, as one pandas frame."""
        count = check_positive_int(n, "n")
        heads = self.rdd.mapPartitionsWithIndex(_per_shard(functools.partial(_head, n=count)))

        def first_frames() -> list[pd.DataFrame]:
            frames: list[pd.DataFrame] = []
            for frame in heads.toLocalIterator(prefetchPartitions=False):   # errors surface while iterating
                frames.append(frame)
                if sum(len(f) for f in frames) >= count:
                    break
            return frames

        frames = _run(self._sc, first_frames)
        return pd.concat(frames).head(count) if frames else pd.DataFrame()

    def concat_to_pdf(self) -> pd.DataFrame:
        """All pandas shards as one frame on the driver."""
        frames = [partition_ops.require_pandas(shard, "concat_to_pdf") for shard in self.collect()]
        return partition_ops.concat_shards(frames)[0] if frames else pd.DataFrame()

    def save_pickle(self, path: str, batchSize: int = 10) -> "SparkXShards":
        """Save the shards as pickle files under ``path`` (must not exist); see :meth:`XShards.load_pickle`."""
        from zoo_lite.data.paths import path_exists

        if path_exists(path):
            raise InvalidArgumentError(f"path={path!r} already exists; remove it or choose a new path")
        _run(self._sc, functools.partial(self.rdd.saveAsPickleFile, path, check_positive_int(batchSize, "batchSize")))
        return self

    def __repr__(self) -> str:
        return f"SparkXShards(num_partitions={self.rdd.getNumPartitions()}, cached={self._cached})"


# Module-level shard functions (shipped to executors; they capture plain values only).

def _even_pieces(shard: Any, partition_index: int, num_partitions: int) -> list[tuple[int, Any]]:
    return partition_ops.even_pieces(shard, num_partitions, partition_index)


def _hash_pieces(shard: Any, partition_index: int, columns: list[Hashable], num_partitions: int) -> list[tuple[int, Any]]:
    return partition_ops.hash_pieces(shard, columns, num_partitions)


def _select_key(shard: Any, key: Any) -> Any:
    try:
        return shard[key]
    except (KeyError, IndexError) as error:
        if isinstance(shard, pd.DataFrame):
            partition_ops.check_columns(shard, [key], "key")
        raise InvalidArgumentError(f"key={key!r} is not in a shard of type {type(shard).__name__}") from error


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


def _column_max(shard: Any, column: Hashable) -> Any:
    frame = partition_ops.require_pandas(shard, "max_values")
    partition_ops.check_columns(frame, [column], "col_name")
    return frame[column].max()


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
