"""Every format conversion of zoo_lite, and the only place where formats change: pandas ⇄ Arrow ⇄
Spark, and user data (Spark DataFrame, pandas, dict, Arrow, Vector columns) → model arrays.

Every conversion is vectorised through Arrow: no Row objects and no per-row Python. The Spark
side exchanges Arrow IPC bytes with the executors' Python workers, so data never passes through
the driver.

Model arrays are the per-shard form the Estimators train on: ``{"x": (ndarray, ...), "y":
ndarray}``, one array per model input, ``"y"`` absent for prediction. The columns they are made
of are normalised once, into :class:`Columns`, and checked once per kind of data: on the driver
from the schema for a Spark DataFrame, per shard for pandas and dict shards.

One module per boundary; import the names from this package (``from zoo_lite.data.convert
import Columns``):

- :mod:`~zoo_lite.data.convert.pandas_arrow`: pandas frames, NumPy arrays and dict shards ⇄ Arrow tables;
- :mod:`~zoo_lite.data.convert.ipc_payloads`: Arrow tables ⇄ the Arrow IPC bytes shards cross into Spark in;
- :mod:`~zoo_lite.data.convert.to_spark`: an RDD of shards → a Spark DataFrame (decoded in Python or by the JVM helper);
- :mod:`~zoo_lite.data.convert.from_spark`: a Spark DataFrame → RDDs of Arrow tables, pandas frames or model
  arrays, and the column references and checks that go with it;
- :mod:`~zoo_lite.data.convert.model_arrays`: :class:`Columns`, Arrow → model arrays, joining model arrays;
- :mod:`~zoo_lite.data.convert.tensor_cells`: one pandas column (numbers or array cells) → one model input;
- :mod:`~zoo_lite.data.convert.shard_model_arrays`: one shard (a pandas frame or a dict of arrays) → model arrays.
"""

from typing import TYPE_CHECKING

from zoo_lite.lazy_exports import lazy_exports

if TYPE_CHECKING:   # imported on first use (see zoo_lite.lazy_exports): a worker needs only model_arrays
    from zoo_lite.data.convert.from_spark import (check_spark_columns, is_spark_df, spark_column, spark_df_to_arrow_rdd,
                                                  spark_df_to_model_arrays_rdd, spark_df_to_pandas_rdd)
    from zoo_lite.data.convert.ipc_payloads import ipc_payloads_to_batches, pandas_to_ipc_payloads
    from zoo_lite.data.convert.model_arrays import (Columns, arrow_to_model_arrays, concat_model_arrays, dense_vectors_of_arrow,
                                                    model_arrays_rows)
    from zoo_lite.data.convert.pandas_arrow import cast_table, ndarray_to_arrow, record_batches_to_pandas
    from zoo_lite.data.convert.shard_model_arrays import (dict_to_model_arrays, pandas_to_feature_label, pandas_to_model_arrays,
                                                          shard_to_model_arrays)
    from zoo_lite.data.convert.to_spark import pandas_rdd_to_spark_df, spark_arrow_schema

__all__ = [
    "Columns",
    "is_spark_df",
    "check_spark_columns",
    "spark_column",
    "spark_df_to_model_arrays_rdd",
    "dense_vectors_of_arrow",
    "shard_to_model_arrays",
    "record_batches_to_pandas",
    "pandas_to_ipc_payloads",
    "ipc_payloads_to_batches",
    "spark_arrow_schema",
    "cast_table",
    "pandas_to_feature_label",
    "spark_df_to_pandas_rdd",
    "spark_df_to_arrow_rdd",
    "pandas_rdd_to_spark_df",
    "arrow_to_model_arrays",
    "pandas_to_model_arrays",
    "dict_to_model_arrays",
    "concat_model_arrays",
    "model_arrays_rows",
    "ndarray_to_arrow",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
