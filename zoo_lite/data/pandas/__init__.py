"""Distributed pandas readers (Orca's ``zoo.orca.data.pandas``).

:func:`read_csv`, :func:`read_json` and :func:`read_parquet` are defined in
:mod:`~zoo_lite.data.pandas.readers`; their two backends in
:mod:`~zoo_lite.data.pandas.pandas_backend` (with :mod:`~zoo_lite.data.pandas.pyarrow_fast_path`)
and :mod:`~zoo_lite.data.pandas.spark_backend`, the files and partitions in
:mod:`~zoo_lite.data.pandas.file_listing`, and pandas' conventions both follow in
:mod:`~zoo_lite.data.pandas.pandas_rules`.
"""

from zoo_lite.data.pandas.readers import read_csv, read_json, read_parquet

__all__ = ["read_csv", "read_json", "read_parquet"]
