"""Distributed pandas readers (Orca's ``zoo.orca.data.pandas``)."""

from zoo_lite.data.pandas.readers import read_csv, read_json, read_parquet

__all__ = ["read_csv", "read_json", "read_parquet"]
