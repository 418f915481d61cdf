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


@pytest.mark.parametrize("module", ["zoo_lite.ray_on_spark", "zoo_lite.data.ray_xshards"])
def test_ray_on_spark_imports_no_ml_framework_and_not_ray_itself_until_used(module):
    imported = _imported_after(f"import {module}")
    assert not imported & {"torch", "tensorflow", "keras", "ray"}


def test_the_watchdog_imports_only_the_standard_library_and_psutil():
    imported = _imported_after("import zoo_lite.ray_on_spark.watchdog")
    assert not imported & set(HEAVY) and not imported & {"pandas", "numpy", "pyarrow"}


@pytest.mark.parametrize("module", ["zoo_lite.learn.base.steps", "zoo_lite.learn.base.worker_group",
                                    "zoo_lite.learn.base.data_inputs", "zoo_lite.learn.base.callbacks",
                                    "zoo_lite.learn.base.checkpoints", "zoo_lite.learn.base.progress",
                                    "zoo_lite.learn.base.estimator", "zoo_lite.learn.base.predict",
                                    "zoo_lite.learn.base.creators", "zoo_lite.learn.base.host_exchange"])
def test_the_shared_learn_machinery_imports_no_ml_framework(module):
    assert not _imported_after(f"import {module}") & {"torch", "tensorflow", "keras"}


def test_the_pytorch_estimator_imports_no_tensorflow_or_keras():
    assert not _imported_after("import zoo_lite.learn.pytorch") & {"tensorflow", "keras"}


def test_the_keras_estimator_imports_no_torch():
    assert not _imported_after("import zoo_lite.learn.tf2") & {"torch"}


def test_shipping_user_code_imports_no_engine_until_used():
    assert not _imported_after("import zoo_lite.user_code") & set(HEAVY)
