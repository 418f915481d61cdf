"""Conversions of :class:`~zoo_lite.data.shard.SparkXShards`: the shards handed on to what comes
next, a Spark DataFrame (``to_spark_df``), Ray's object store (``to_ray``) or a model's arrays
(``to_model_arrays``).

:class:`ConversionMethods` is one of the bases of :class:`~zoo_lite.data.shard.SparkXShards` (see
:mod:`zoo_lite.data.shard`): its methods are called, documented and referenced as
``SparkXShards.<method>``, and reach the collection's RDD and plumbing through ``self``.

The format work itself is :mod:`zoo_lite.data.convert`'s (Arrow-based, on the executors) and
:mod:`zoo_lite.data.ray_xshards`'s; the ways in, ``SparkXShards.from_spark_df`` and
:func:`~zoo_lite.data.shard.model_arrays_of`, build a collection and so stay with the class.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Optional

from zoo_lite.data import convert
from zoo_lite.data.convert import Columns
from zoo_lite.data.spark_jobs import ensure_alive

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame as SparkDataFrame

    from zoo_lite.data.ray_xshards import RayXShards
    from zoo_lite.data.shard import SparkXShards

__all__ = ["ConversionMethods"]


class ConversionMethods:
    """The conversion methods of :class:`~zoo_lite.data.shard.SparkXShards`, which inherits them
    (see :mod:`zoo_lite.data.shard`)."""

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

        return spark_to_ray(self.rdd, self._new_collection)

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
