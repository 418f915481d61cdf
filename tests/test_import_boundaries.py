"""The package's import boundaries (DESIGN.md): each checked in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pyspark", "ray", "torch", "tensorflow", "keras")


def _imported_after(statement: str) -> set[str]:
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(json.loads(output.strip().splitlines()[-1]))


def test_importing_zoo_lite_imports_no_engine_or_ml_framework():
    assert not _imported_after("import zoo_lite") & set(HEAVY)


@pytest.mark.parametrize("module", ["zoo_lite.data", "zoo_lite.data.pandas"])
def test_the_data_package_imports_no_ray_or_ml_framework(module):
    assert not _imported_after(f"import {module}") & {"ray", "torch", "tensorflow", "keras"}


def test_the_data_package_imports_nothing_from_learn():
    code = "import sys, zoo_lite.data, zoo_lite.data.pandas; print([m for m in sys.modules if m.startswith('zoo_lite.learn')])"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"
