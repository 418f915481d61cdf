"""pandas' (and Orca's) reading rules that both backends apply, as pure functions: ``names`` and
``usecols`` mapped onto a file's columns, ``parse_dates``, ``index_col``, ``squeeze`` and
``nrows``; NaN for missing text; Orca's read_json extras; and whether a JSON file is JSON Lines.

:mod:`~zoo_lite.data.pandas.spark_backend` applies them to the frames Spark gives,
:mod:`~zoo_lite.data.pandas.pandas_backend` and :mod:`~zoo_lite.data.pandas.pyarrow_fast_path`
where pandas alone does not.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, Hashable, Mapping, Optional, Sequence, Union

import numpy as np
import pandas as pd

from zoo_lite.errors import InvalidArgumentError

__all__ = [
    "ORCA_JSON_KWARGS",
    "DATE_LIKE",
    "missing_strings_as_nan",
    "checked_nrows",
    "select_usecols",
    "names_layout",
    "DateSpec",
    "date_spec",
    "as_dates",
    "with_dates",
    "dated_index",
    "squeezed",
    "set_index",
    "orca_json_extras",
    "json_layout",
]


# Orca's read_json took names, usecols, index_col and squeeze (pandas' read_json takes none of them)
ORCA_JSON_KWARGS = ("names", "usecols", "index_col", "squeeze")
# pandas' rule for columns read_json converts to dates by default (keep_default_dates).
DATE_LIKE = re.compile(r"(_at|_time)$|^timestamp|^(modified|date|datetime)$", re.IGNORECASE)


def missing_strings_as_nan(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with NaN for missing values in its object columns, as pandas' reader gives them
    (Spark and pyarrow give None); changed in place."""
    for column in frame.columns[frame.dtypes == object]:
        values = frame[column]
        if values.isna().any():
            frame[column] = values.where(values.notna(), np.nan)
    return frame


def checked_nrows(value: Any) -> int:
    """``nrows`` as an int, or an error naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise InvalidArgumentError(f"nrows={value!r} must be a non-negative integer")
    return int(value)


def select_usecols(columns: list[str], usecols: Any) -> list[str]:
    """The columns ``usecols`` (names, positions or a callable) selects, in file order."""
    if usecols is None:
        return columns
    if callable(usecols):
        return [column for column in columns if usecols(column)]
    chosen = []
    for item in usecols:
        if isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            if not 0 <= item < len(columns):
                raise InvalidArgumentError(f"usecols={list(usecols)!r}: position {item} is outside the {len(columns)} columns")
            chosen.append(columns[item])
        elif item in columns:
            chosen.append(item)
        else:
            raise InvalidArgumentError(f"usecols={list(usecols)!r}: column {item!r} is not in the file's columns {columns}")
    return [column for column in columns if column in chosen]  # pandas keeps file order


_UNNAMED = "_zoo_lite_unnamed_{}"


@dataclasses.dataclass(frozen=True)
class _Layout:
    """How a list of ``names`` maps onto a file's columns (pandas' rules).

    ``file_names`` names every file column (placeholders for columns the names do not cover),
    ``selected`` are the columns kept, in file order, ``index`` the placeholders that become
    pandas' implicit index, ``extra`` the names past the file's last column (all missing)."""

    file_names: tuple
    selected: tuple
    index: tuple = ()
    extra: tuple = ()


def _usecols_positions(names: list, width: int, usecols: Any) -> list[int]:
    items = list(dict.fromkeys(usecols))
    if all(isinstance(item, (int, np.integer)) and not isinstance(item, bool) for item in items):
        outside = [int(item) for item in items if not 0 <= item < width]
        if outside:
            raise InvalidArgumentError(f"usecols={list(usecols)!r}: position(s) {outside} are outside the {width} columns")
        return sorted(int(item) for item in items)
    if all(isinstance(item, str) for item in items):
        missing = [item for item in items if item not in names]
        if missing:
            raise InvalidArgumentError(f"usecols={list(usecols)!r}: column(s) {missing} are not in names={names!r}")
        return sorted(names.index(item) for item in items)
    raise InvalidArgumentError(f"usecols={list(usecols)!r} must be all column names, all positions, or a callable")


def names_layout(names: Sequence[Hashable], width: int, usecols: Any, index_col: Any, implicit_index: bool = True) -> _Layout:
    """pandas' reading of ``names`` for a file of ``width`` columns.

    - as many names as columns: they replace the column names;
    - fewer names, no ``usecols``: the leading columns left over become the (unnamed) index,
      or are dropped from the end with ``index_col=False``;
    - more names: the columns past the file's end are all missing;
    - with a list ``usecols``: one name per file column, or one per selected column (names given
      in ``usecols`` are looked up in ``names``); a callable ``usecols`` filters the names.
    """
    names = list(names)
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"names={names!r} has duplicate names; pandas refuses them too")
    count = len(names)
    placeholders = [_UNNAMED.format(position) for position in range(width)]
    if usecols is None or callable(usecols):
        index: list = []
        if count >= width:
            file_names, extra = names[:width], names[width:]
        elif index_col is False or not implicit_index:
            if not implicit_index and index_col is not False:
                raise InvalidArgumentError(f"names={names!r} has {count} names but the data has {width} columns; "
                                           "pass one name per column, or usecols= with one name per selected column")
            file_names, extra = names + placeholders[count:], []
        else:
            if index_col is not None:
                raise InvalidArgumentError(
                    f"names={names!r} has {count} names for {width} columns, so the first {width - count} column(s) "
                    f"become the index; index_col={index_col!r} cannot be used with that: pass one name per column")
            index = placeholders[:width - count]
            file_names, extra = index + names, []
        kept = [name for name in names if usecols is None or usecols(name)]
        return _Layout(tuple(file_names), tuple(index + [n for n in file_names if n in kept]), tuple(index),
                       tuple(n for n in extra if n in kept))
    positions = _usecols_positions(names, width, usecols)
    if count == width:
        return _Layout(tuple(names), tuple(names[position] for position in positions))
    if count > width or len(positions) != count:
        raise InvalidArgumentError(
            f"Passed names did not match usecols: names={names!r} has {count} names for {width} columns and "
            f"usecols={list(usecols)!r} selects {len(positions)}; give one name per column or one per selected column")
    file_names = list(placeholders)
    for position, name in zip(positions, names):
        file_names[position] = name
    return _Layout(tuple(file_names), tuple(names))


@dataclasses.dataclass(frozen=True)
class DateSpec:
    """A resolved ``parse_dates``: columns parsed in place, (new name, sources) combinations put
    first as pandas does, and whether the index is parsed (``parse_dates=True``)."""

    columns: tuple = ()
    combos: tuple = ()
    index: bool = False

    def sources(self) -> list:
        return [*self.columns, *(source for _, group in self.combos for source in group)]


def date_spec(parse_dates: Any, labels: Sequence[Hashable]) -> DateSpec:
    """Resolve ``parse_dates`` against the output columns ``labels``; a number that is not a label
    is a position, as in pandas."""
    if parse_dates is None or parse_dates is False:
        return DateSpec()
    if parse_dates is True:
        return DateSpec(index=True)
    labels = list(labels)

    def label(item: Any) -> Hashable:
        if isinstance(item, Hashable) and item in labels:
            return item
        if isinstance(item, (int, np.integer)) and not isinstance(item, bool) and 0 <= item < len(labels):
            return labels[item]
        raise InvalidArgumentError(f"parse_dates={parse_dates!r}: column {item!r} is not among the columns {labels}")

    def group(items: Any) -> tuple:
        if isinstance(items, (str, bytes)) or not isinstance(items, (list, tuple)):
            raise InvalidArgumentError(f"parse_dates={parse_dates!r}: {items!r} must be a list of columns to combine")
        return tuple(label(item) for item in items)

    if isinstance(parse_dates, Mapping):
        return DateSpec(combos=tuple((name, group(items)) for name, items in parse_dates.items()))
    if isinstance(parse_dates, (list, tuple)):
        columns, combos = [], []
        for item in parse_dates:
            if isinstance(item, (list, tuple)):
                sources = group(item)
                combos.append(("_".join(str(source) for source in sources), sources))
            else:
                columns.append(label(item))
        return DateSpec(tuple(columns), tuple(combos))
    raise InvalidArgumentError(
        f"parse_dates={parse_dates!r}: pass True (parse the index), a list of columns or positions, "
        "lists of columns to combine, or a dict of new name -> columns")


def as_dates(values: Union[pd.Series, pd.Index], keep_text: bool = False) -> Union[pd.Series, pd.Index]:
    """pandas' parse_dates conversion: the text parsed as dates, or when it does not parse, the
    values unchanged (or as text with ``keep_text``, as pandas leaves an implicit index)."""
    import warnings

    if values.dtype.kind in "Mm":
        return values
    text = values if values.dtype == object else values.astype(str)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "Could not infer format": pandas' own reading warns
            return pd.to_datetime(text)
    except (ValueError, TypeError, OverflowError):
        return text if keep_text else values


def with_dates(df: pd.DataFrame, spec: DateSpec) -> pd.DataFrame:
    """``df`` with the columns of ``spec`` parsed as dates, and its combinations put first."""
    if not spec.columns and not spec.combos:
        return df
    df = df.copy()
    for column in spec.columns:
        df[column] = as_dates(df[column])
    if spec.combos:
        combined = {}
        for name, sources in spec.combos:
            text = df[list(sources)].astype(str).agg(" ".join, axis=1) if len(df) else df[sources[0]].astype(object)
            combined[name] = as_dates(text)
        used = list(dict.fromkeys(source for _, sources in spec.combos for source in sources))
        df = pd.concat([pd.DataFrame(combined, index=df.index), df.drop(columns=used)], axis=1)
    return df


def dated_index(df: pd.DataFrame) -> pd.DataFrame:
    """``parse_dates=True``: parse each level of the index as pandas does."""
    if isinstance(df.index, pd.RangeIndex):
        return df
    if isinstance(df.index, pd.MultiIndex):
        levels = [as_dates(df.index.get_level_values(level)) for level in range(df.index.nlevels)]
        return df.set_axis(pd.MultiIndex.from_arrays(levels, names=df.index.names), axis=0)
    return df.set_axis(as_dates(df.index), axis=0)


def squeezed(frame: Any, squeeze: bool) -> Any:
    """pandas 1's ``squeeze=True``: a frame of one column becomes that column as a Series."""
    if squeeze and isinstance(frame, pd.DataFrame) and len(frame.columns) == 1:
        return frame.iloc[:, 0]
    return frame


def set_index(df: pd.DataFrame, index_col: Any) -> pd.DataFrame:
    """pandas' ``index_col``: the columns named (or at the positions given) become the index."""
    if index_col is None or index_col is False:
        return df
    keys = index_col if isinstance(index_col, list) else [index_col]
    names = [df.columns[key] if isinstance(key, (int, np.integer)) else key for key in keys]  # ints are positions
    return df.set_index(names)


def orca_json_extras(frame: pd.DataFrame, names: Any, usecols: Any, index_col: Any, squeeze: bool) -> Any:
    """Orca's read_json extras on one frame: ``usecols`` and ``names`` with read_csv's rules (one
    name per column, or one per selected column), then ``index_col``, then ``squeeze``."""
    if names is not None:
        if isinstance(names, str):
            raise InvalidArgumentError(f"names={names!r}: read_json takes a list of names, not a schema string")
        layout = names_layout(names, len(frame.columns), usecols, index_col, implicit_index=False)
        frame = frame.set_axis(list(layout.file_names), axis=1)[list(layout.selected)]
    elif usecols is not None:
        frame = frame[select_usecols(list(frame.columns), usecols)]
    return squeezed(set_index(frame, index_col), squeeze)


def json_layout(files: list[str], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Settle ``lines``: Spark's ``multiLine`` (Orca passed Spark options) is its opposite; when
    neither is given, a file of several lines that each hold one JSON object is JSON Lines (what
    Orca's Spark backend read by default, where pandas would fail), anything else is one document
    per file (pandas' default)."""
    kwargs = dict(kwargs)
    if "multiLine" in kwargs:
        multi_line = kwargs.pop("multiLine")
        if "lines" in kwargs and bool(kwargs["lines"]) == bool(multi_line):
            raise InvalidArgumentError(f"multiLine={multi_line!r} contradicts lines={kwargs['lines']!r}; pass only one of them")
        kwargs["lines"] = not multi_line
    if "lines" not in kwargs and kwargs.get("orient") is None and _looks_like_json_lines(files[0], kwargs.get("storage_options")):
        kwargs["lines"] = True
    return kwargs


def _looks_like_json_lines(path: str, storage_options: Optional[Mapping[str, Any]] = None) -> bool:
    import fsspec

    found = 0
    with fsspec.open(path, "rt", **(storage_options or {})) as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                if not isinstance(json.loads(line), dict):
                    return False
            except ValueError:
                return False
            found += 1
            if found == 2:
                return True
    return False
