"""One file into one pandas frame, as pandas reads it, by pyarrow's faster parsers where that gives
pandas' frame: :func:`read_csv_file` and :func:`read_json_file`, the per-file readers of the pandas
backend (:mod:`~zoo_lite.data.pandas.pandas_backend`).

pyarrow reads only with keywords whose meaning it shares with pandas (:func:`pyarrow_can_read`,
:func:`pyarrow_can_read_json`), and its frame is kept only when checks show it is pandas' frame;
otherwise pandas reads the file, and gives its own answer or error.
"""

from __future__ import annotations

import functools
import json
import warnings
from typing import Any, Mapping, Optional

import pandas as pd

from zoo_lite.data.pandas.pandas_rules import DATE_LIKE, missing_strings_as_nan

__all__ = ["PYARROW_CSV_KWARGS", "pyarrow_can_read", "read_csv_file", "PYARROW_JSON_KWARGS", "pyarrow_can_read_json",
           "read_json_file"]


#: pandas ``read_csv`` keywords with which pyarrow's parser gives pandas' frame (after the checks in
#: :func:`read_csv_file`). Any other keyword keeps pandas' C parser: measured, pandas' pyarrow
#: engine differs from it on ``names`` (the implicit index), ``usecols`` and ``dtype`` by
#: position, ``dtype=str`` (leading zeros, missing values) and rows with fewer fields
PYARROW_CSV_KWARGS = frozenset({"sep", "delimiter", "header"})


def pyarrow_can_read(kwargs: Mapping[str, Any]) -> bool:
    """Whether pyarrow's CSV parser can read with these pandas keywords and give pandas' frame:
    only :data:`PYARROW_CSV_KWARGS`, with a one-character separator and ``header`` 0 or "infer".

    Examples
    --------
    >>> pyarrow_can_read({"sep": ";"}), pyarrow_can_read({"usecols": ["a"]}), pyarrow_can_read({"sep": " +"})
    (True, False, False)
    """
    if not set(kwargs) <= PYARROW_CSV_KWARGS:
        return False
    separator = kwargs.get("sep", kwargs.get("delimiter", ","))
    return isinstance(separator, str) and len(separator) == 1 and kwargs.get("header", "infer") in (0, "infer")


def read_csv_file(path: str, **kwargs: Any) -> pd.DataFrame:
    """One CSV file as pandas reads it. Where the keywords allow (:func:`pyarrow_can_read`),
    pyarrow's multi-threaded parser reads it (1.75x faster in the workers, benchmarks/RESULTS.md),
    and its frame is kept when it is pandas' frame: pandas' C parser reads the file instead when
    pyarrow cannot parse it (pandas then gives its own answer or error), found dates or times
    (pandas keeps them as text), repeated header names (pandas renames them), integers beyond
    int64 (pandas keeps them exact), or the file has no rows. Missing strings are NaN, as pandas
    gives them. Floats are correctly rounded (pandas' C parser can be off by one unit in the last
    place; Spark's reader is correctly rounded too).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.csv"
    >>> _ = path.write_text("k,name,day\\n1,x,2024-01-02\\n2,,2024-01-03\\n")
    >>> frame = read_csv_file(str(path))
    >>> frame.dtypes.astype(str).tolist(), frame["name"].tolist(), frame["day"].tolist()
    (['int64', 'object', 'object'], ['x', nan], ['2024-01-02', '2024-01-03'])
    """
    if pyarrow_can_read({name: value for name, value in kwargs.items() if name != "storage_options"}):
        try:
            frame = pd.read_csv(path, engine="pyarrow", **kwargs)
        except (ValueError, TypeError, pd.errors.ParserError):   # pyarrow's parse errors are ValueErrors
            frame = None
        # pandas renames repeated header names ("a", "a.1"); pyarrow keeps them repeated
        if frame is not None and len(frame) and frame.columns.is_unique and not _has_temporal_columns(frame) \
                and not _has_huge_numbers(frame):
            return missing_strings_as_nan(frame)
    return pd.read_csv(path, **kwargs)


def _has_temporal_columns(frame: pd.DataFrame) -> bool:
    """Whether pyarrow typed a column as dates or times, which pandas' C parser leaves as text."""
    import datetime

    for position in range(frame.shape[1]):
        values = frame.iloc[:, position]
        if values.dtype.kind in "mM":
            return True
        if values.dtype == object:
            first = values.first_valid_index()
            if first is not None and isinstance(values.at[first], (datetime.date, datetime.time)):
                return True
    return False


def _has_huge_numbers(frame: pd.DataFrame) -> bool:
    """Whether a float column holds a magnitude of 2**63 or more: pyarrow reads an integer beyond
    int64 as a (rounded) double, where pandas keeps it exact (uint64 or text)."""
    floats = frame.select_dtypes("floating")
    return bool(floats.shape[1]) and bool((floats.abs() >= 2.0 ** 63).to_numpy().any())


#: pandas ``read_json`` keywords with which pyarrow's JSON reader can give pandas' frame (after the
#: checks in :func:`read_json_file`): pyarrow reads JSON Lines only, its floats are correctly rounded
#: (pandas' ``precise_float=True``), and any other keyword changes pandas' parse or conversions
PYARROW_JSON_KWARGS = frozenset({"lines", "orient", "precise_float"})
# endings pandas decompresses by (compression="infer"); pyarrow would take the bytes as they are
_COMPRESSED_ENDINGS = (".gz", ".bz2", ".zip", ".xz", ".zst", ".tar")


def pyarrow_can_read_json(kwargs: Mapping[str, Any]) -> bool:
    """Whether pyarrow's JSON reader can read with these pandas ``read_json`` keywords: only
    ``lines=True``, with ``orient`` absent or "records" (the one layout of JSON Lines), and
    ``precise_float`` absent or True.

    Examples
    --------
    >>> pyarrow_can_read_json({"lines": True}), pyarrow_can_read_json({"lines": True, "orient": "records"})
    (True, True)
    >>> pyarrow_can_read_json({}), pyarrow_can_read_json({"lines": True, "dtype": False})
    (False, False)
    """
    return (set(kwargs) <= PYARROW_JSON_KWARGS and kwargs.get("lines") is True and kwargs.get("orient") in (None, "records")
            and kwargs.get("precise_float", True) is True)


def read_json_file(path: str, **kwargs: Any) -> pd.DataFrame:
    """One JSON file as ``pandas.read_json(path, **kwargs)`` reads it. A local, uncompressed JSON
    Lines file read with :func:`pyarrow_can_read_json` keywords, whose records are flat objects of
    numbers, booleans and text, is parsed by pyarrow (faster, see ``docs/guides/xshards.md``) when that gives
    pandas' frame; pandas reads it instead when a column holds nulls in text or booleans, nested
    values, numbers as text, floats that are all whole numbers (pandas makes them integers), or has
    a date-like name; when the column names would become numbers or dates; when the first record
    lacks a column; or when a line is not exactly one object or pyarrow fails (so errors are
    pandas' own). Floats are correctly rounded, as with pandas' ``precise_float=True`` and Spark's
    reader (pandas' default parser can be one unit off in the last place).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "rows.json"
    >>> _ = path.write_text('{"k": 1, "name": "x", "ok": true}\\n{"k": 2, "name": "y", "ok": false}\\n')
    >>> read_json_file(str(path), lines=True).equals(pd.read_json(path, lines=True))
    True
    >>> _ = path.write_text('{"code": "01"}\\n{"code": "02"}\\n')  # pandas turns numeric text into numbers
    >>> read_json_file(str(path), lines=True)["code"].tolist()
    [1, 2]
    """
    if pyarrow_can_read_json(kwargs) and "://" not in path and not path.lower().endswith(_COMPRESSED_ENDINGS):
        frame = _json_lines_by_pyarrow(path)
        if frame is not None:
            return frame
    return pd.read_json(path, **kwargs)


def _json_lines_by_pyarrow(path: str) -> Optional[pd.DataFrame]:
    """The JSON Lines file at ``path`` parsed by pyarrow, if that is pandas' frame; else None."""
    import pyarrow as pa
    from pyarrow import json as pa_json

    if pd.get_option("future.infer_string"):  # pandas would give its str dtype, pyarrow object
        return None
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        first = _first_json_record(data)
        # cheap checks on the first record first, so a file pandas must read costs little extra
        if not first or not all(isinstance(value, (int, float, str)) for value in first.values()) \
                or _pandas_converts_json_columns(list(first)):
            return None
        table = pa_json.read_json(pa.BufferReader(data))
    except (OSError, ValueError, pa.ArrowException):  # pandas reads it, and gives its own answer or error
        return None
    # pandas orders columns by first appearance: the first record must hold them all, in pyarrow's order
    if table.column_names != list(first) or not _arrow_json_types_as_pandas(table) \
            or _json_record_lines(data) != table.num_rows:
        return None
    frame = table.to_pandas()
    return None if _has_numeric_text(frame) else frame


def _first_json_record(data: bytes) -> Optional[dict]:
    """The object on the first non-blank line of ``data``, or None if that line is not one."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        line = data[start:end].strip()
        if line:
            try:
                record = json.loads(line.decode("utf-8"))  # str, not bytes: json.loads would skip a BOM pandas refuses
            except ValueError:
                return None
            return record if isinstance(record, dict) else None
        start = end + 1
    return None


def _pandas_converts_json_columns(names: list[str]) -> bool:
    """Whether pandas' ``read_json`` converts by name: column names that all parse as numbers or
    dates become them (``convert_axes``), and a date-like column is parsed as dates
    (``keep_default_dates``)."""
    if any(DATE_LIKE.search(name) for name in names):
        return True
    labels = pd.Series(names, dtype=object)
    conversions = [lambda: labels.astype("float64")]
    conversions += [functools.partial(pd.to_datetime, labels, errors="raise", unit=unit) for unit in ("s", "ms", "us", "ns")]
    for conversion in conversions:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                conversion()
        except (ValueError, TypeError, OverflowError):
            continue
        return True
    return False


def _arrow_json_types_as_pandas(table: Any) -> bool:
    """Whether each column of pyarrow's ``table`` converts to pandas' dtype and values: integers
    (with nulls they become float NaN, as in pandas), floats unless all are whole numbers without
    nulls (pandas makes those integers), and booleans and text without nulls (pandas turns
    booleans with nulls into floats, and gives None for a null but NaN for a missing key). Not
    timestamps (pandas keeps text), nested values (pandas keeps dicts and lists) or all-null columns."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for column, kind in zip(table.columns, table.schema.types):
        if kind == pa.float64():
            whole_numbers = column.null_count == 0 and pc.all(pc.equal(pc.floor(column), column)).as_py()
            if whole_numbers:
                return False
        elif not (kind == pa.int64() or (kind in (pa.bool_(), pa.string()) and column.null_count == 0)):
            return False
    return True


def _json_record_lines(data: bytes) -> Optional[int]:
    """The number of non-blank lines of ``data`` (as pandas splits them) if each starts with "{"
    and ends with "}", else None. pyarrow also reads objects split over lines, or several on one
    line, where pandas fails; in a file pyarrow parsed, a line break between "}" and "{" can only
    fall between records, so these lines are its records when they are as many."""
    body = data[:-1] if data.endswith(b"\n") else data
    if body[:1] == b"{" and body[-1:] == b"}" and body.count(b"\n") == body.count(b"}\n{"):
        return body.count(b"\n") + 1  # the usual layout, counted without splitting
    lines = [line for line in (line.strip() for line in data.split(b"\n")) if line]
    return len(lines) if all(line[:1] == b"{" and line[-1:] == b"}" for line in lines) else None


def _has_numeric_text(frame: pd.DataFrame) -> bool:
    """Whether a text column parses as numbers, as pandas' ``read_json`` then converts it."""
    for name in frame.columns[frame.dtypes == object]:
        try:
            frame[name].astype("float64")
        except (ValueError, TypeError):
            continue
        return True
    return False
