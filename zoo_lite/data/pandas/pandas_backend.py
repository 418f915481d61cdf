"""The pandas backend of the readers: pandas' own reader (or :mod:`~zoo_lite.data.pandas.pyarrow_fast_path`'s
per-file readers, which give pandas' frame) runs in the executors, one partition per group of
consecutive files (:func:`~zoo_lite.data.pandas.file_listing.file_groups`), in file order.

``nrows`` counts rows over all files and ``squeeze`` is applied after reading; Orca's read_json
extras come from :mod:`~zoo_lite.data.pandas.pandas_rules`. Any pandas keyword argument works.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from zoo_lite.data.filesystems import is_object_store, storage_errors
from zoo_lite.data.pandas.file_listing import file_groups, spark_session
from zoo_lite.data.pandas.pandas_rules import ORCA_JSON_KWARGS, checked_nrows, orca_json_extras, squeezed
from zoo_lite.data.pandas.pyarrow_fast_path import read_json_file
from zoo_lite.data.paths import file_sizes, missing_on_executor, this_host
from zoo_lite.data.shard import SparkXShards
from zoo_lite.errors import DataReadError, raising_transportably
from zoo_lite.user_code import ByValue

__all__ = ["read_files_with_pandas", "read_text_with_pandas", "read_json_pandas"]


def _for_file(kwargs: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    """The reader's keywords for one file: pandas refuses ``storage_options`` with a local path."""
    if "storage_options" in kwargs and not is_object_store(path):
        return {name: value for name, value in kwargs.items() if name != "storage_options"}
    return kwargs


def read_files_with_pandas(files: list[str], reader: Callable[..., pd.DataFrame], kwargs: Mapping[str, Any], argument: str) -> SparkXShards:
    """``files`` read by ``reader(path, **kwargs)`` in the executors: one partition per group of
    consecutive files (:func:`~zoo_lite.data.pandas.file_listing.file_groups`), in file order."""
    sc = spark_session().sparkContext
    sizes = file_sizes(files, kwargs.get("storage_options"))
    groups = [[files[index] for index in group] for group in file_groups(sizes, sc.defaultParallelism)]
    options = ByValue(dict(kwargs), "keyword arguments")   # converters and other functions of the user's own modules
    listed_on = this_host()

    @raising_transportably
    def read_partition(file_lists: Iterator[list[str]]) -> list[pd.DataFrame]:
        frames = []
        for path in (path for paths in file_lists for path in paths):
            try:
                with storage_errors(path, argument):
                    frames.append(reader(path, **_for_file(options.value, path)))
            except FileNotFoundError as error:
                raise DataReadError(missing_on_executor(argument, path, listed_on)) from error
            except (ValueError, OSError) as error:
                hint = "; pass on_bad_lines='skip' to drop malformed rows" if isinstance(error, pd.errors.ParserError) else ""
                raise DataReadError(f"{argument}: reading {path!r} failed: {type(error).__name__}: {str(error).strip()}{hint}") from error
        if not frames:
            return []
        return [pd.concat(frames, ignore_index=_all_default_index(frames)) if len(frames) > 1 else frames[0]]

    # one group per partition, in file order
    return SparkXShards(sc.parallelize(groups, len(groups)).mapPartitions(read_partition))


def _all_default_index(frames: Sequence[pd.DataFrame]) -> bool:
    return all(isinstance(frame.index, pd.RangeIndex) for frame in frames)


def read_text_with_pandas(files: list[str], reader: Callable[..., pd.DataFrame], kwargs: Mapping[str, Any], argument: str) -> SparkXShards:
    """The pandas backend of a text reader: ``nrows`` counts rows over all files, in file order;
    ``squeeze`` (gone from pandas 2) is applied to each shard after reading."""
    kwargs = dict(kwargs)
    squeeze = bool(kwargs.pop("squeeze", False))
    shards = read_files_with_pandas(files, reader, kwargs, argument)
    nrows = kwargs.get("nrows")
    shards = _first_rows(shards, checked_nrows(nrows)) if nrows is not None else shards
    if not squeeze:
        return shards
    return SparkXShards(shards.rdd.map(functools.partial(squeezed, squeeze=True), preservesPartitioning=True))


def _first_rows(shards: SparkXShards, nrows: int) -> SparkXShards:
    """The first ``nrows`` rows of shards that hold one frame per partition, in partition order."""
    lengths = shards._gather(len)
    budgets = np.clip(nrows - np.concatenate([[0], np.cumsum(lengths)[:-1]]), 0, lengths).astype(int).tolist()

    def head(index: int, frames: Iterator[pd.DataFrame]) -> list[pd.DataFrame]:
        return [frame.head(budgets[index]) for frame in frames]

    return SparkXShards(shards.rdd.mapPartitionsWithIndex(head, preservesPartitioning=True))


def read_json_pandas(files: list[str], kwargs: dict[str, Any]) -> SparkXShards:
    """pandas' read_json on each file (:func:`read_json_file`), with Orca's extras applied to each frame."""
    extras = {name: kwargs.pop(name, None) for name in ORCA_JSON_KWARGS}
    shards = read_text_with_pandas(files, read_json_file, kwargs, "read_json")
    if all(value is None for value in extras.values()):
        return shards
    post = functools.partial(orca_json_extras, names=extras["names"], usecols=extras["usecols"],
                             index_col=extras["index_col"], squeeze=bool(extras["squeeze"]))
    return SparkXShards(shards.rdd.map(raising_transportably(post), preservesPartitioning=True))
