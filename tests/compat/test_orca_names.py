"""Every row of docs/orca.md's "Every Orca name in scope" tables, checked against zoo_lite's code.

A ``same`` or ``different`` row names a zoo_lite attribute that must exist; a ``not provided``
row names one that must not (unless its notes begin with "raises": then it exists and raises a
zoo_lite error saying what to use). One test case per row, named by the Orca module and name, so a
failure points at the row to fix: the table or the code. Imports only: no Spark, no Ray.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from pathlib import Path
from typing import Any, NamedTuple

import pytest

pytestmark = pytest.mark.timeout(120)

API_MD = Path(__file__).resolve().parents[2] / "docs" / "orca.md"
SECTION = "### Every Orca name in scope"
STATUSES = ("same", "different", "not provided")
_HEADING = re.compile(r"^#### `(?P<orca>[\w.]+)` → `(?P<zoo>[\w.]+)`\s*$")
_NAME = re.compile(r"^`(?P<name>[\w.]+)`$")


class Row(NamedTuple):
    orca_module: str
    orca_name: str
    zoo_lite_name: str   # in full: zoo_lite.<module>.<attribute chain>
    status: str
    notes: str

    @property
    def id(self) -> str:
        return f"{self.orca_module}:{self.orca_name}"


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def parse_rows(text: str) -> list[Row]:
    """The rows of every table under ``SECTION`` (up to the next ``##`` or ``###`` heading)."""
    start = text.index(SECTION)
    lines = text[start:].splitlines()[1:]
    rows: list[Row] = []
    orca_module = zoo_module = None
    for number, line in enumerate(lines, 1):
        if re.match(r"^#{2,3} ", line):
            break
        heading = _HEADING.match(line)
        if heading:
            orca_module, zoo_module = heading["orca"], heading["zoo"]
            continue
        if not line.startswith("|"):
            continue
        cells = _cells(line)
        if cells[0] == "Orca name" or set(cells[0]) <= {"-", " "}:
            continue
        where = f"docs/orca.md, {SECTION!r} line {number}: {line!r}"
        assert orca_module is not None, f"a table row before any '#### `zoo...` → `zoo_lite...`' heading: {where}"
        assert len(cells) == 4, f"a row needs 4 cells (Orca name, zoo_lite name, status, notes): {where}"
        orca, zoo, status, notes = cells
        orca_match, zoo_match = _NAME.match(orca), _NAME.match(zoo)
        assert orca_match and zoo_match, f"names must be one `dotted.name` each: {where}"
        assert status in STATUSES, f"status {status!r} is not one of {STATUSES}: {where}"
        assert status == "same" or notes, f"a {status!r} row needs notes: {where}"
        name = zoo_match["name"]
        full = name if name.split(".")[0] == "zoo_lite" else f"{zoo_module}.{name}"
        rows.append(Row(orca_module, orca_match["name"], full, status, notes))
    return rows


ROWS = parse_rows(API_MD.read_text(encoding="utf-8"))


def _import_longest_module(parts: list[str]) -> tuple[Any, list[str]]:
    """The deepest importable module named by a prefix of ``parts``, and the attribute chain left.
    Only "no such module" moves on to a shorter prefix; any other import failure is raised."""
    for end in range(len(parts), 0, -1):
        name = ".".join(parts[:end])
        try:
            return importlib.import_module(name), parts[end:]
        except ModuleNotFoundError as error:
            if error.name is None or not (name == error.name or name.startswith(error.name + ".")):
                raise
    raise AssertionError(f"no module of {'.'.join(parts)!r} can be imported")


def _declared_on_class(cls: type, name: str) -> bool:
    """An instance attribute a class declares without a class-level value: a dataclass field, an
    annotation, or a ``self.<name> =`` assignment in its source (or a base class's)."""
    for klass in inspect.getmro(cls):
        if klass is object:
            continue
        if dataclasses.is_dataclass(klass) and name in {f.name for f in dataclasses.fields(klass)}:
            return True
        if name in vars(klass).get("__annotations__", {}):
            return True
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        if re.search(rf"\bself\.{re.escape(name)}\s*(:[^=\n]*)?=(?!=)", source):
            return True
    return False


def resolve(full_name: str) -> tuple[bool, str]:
    """Whether ``full_name`` exists in zoo_lite, and where the lookup stopped if it does not."""
    parts = full_name.split(".")
    target, chain = _import_longest_module(parts)
    for index, attribute in enumerate(chain):
        if hasattr(target, attribute):
            target = getattr(target, attribute)
            continue
        last = index == len(chain) - 1
        if last and inspect.isclass(target) and _declared_on_class(target, attribute):
            return True, ""
        return False, f"{'.'.join(parts[:len(parts) - len(chain) + index])} has no attribute {attribute!r}"
    return True, ""


def test_the_tables_cover_every_module_in_scope() -> None:
    modules = {row.orca_module for row in ROWS}
    assert modules >= {
        "zoo.orca", "zoo", "zoo.ray", "zoo.orca.data", "zoo.orca.data.ray_xshards", "zoo.orca.data.pandas",
        "zoo.orca.data.image", "zoo.orca.learn.pytorch", "zoo.orca.learn.tf2", "zoo.orca.learn.tf.estimator",
        "zoo.orca.learn.metrics",
    }
    ids = [row.id for row in ROWS]
    assert len(ids) == len(set(ids)), f"rows listed twice: {sorted({i for i in ids if ids.count(i) > 1})}"


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_orca_name(row: Row) -> None:
    exists, missing = resolve(row.zoo_lite_name)
    if row.status in ("same", "different"):
        assert exists, (f"docs/orca.md says Orca's {row.orca_name} ({row.orca_module}) is {row.status!r} as "
                        f"{row.zoo_lite_name}, but {missing}: add it, or mark the row 'not provided'")
    elif row.notes.startswith("raises"):
        assert exists, (f"docs/orca.md says {row.zoo_lite_name} exists and raises, but {missing}")
    else:
        assert not exists, (f"docs/orca.md says Orca's {row.orca_name} ({row.orca_module}) is not provided, but "
                            f"{row.zoo_lite_name} exists: update the row's status and notes")
