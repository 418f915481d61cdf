"""The package's import boundaries (DESIGN.md): each checked in a fresh interpreter."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Optional

import pytest

HEAVY = ("pyspark", "ray", "torch", "tensorflow", "keras")


def _imported_after(statement: str, env: Optional[dict[str, str]] = None) -> set[str]:
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env=None if env is None else {**os.environ, **env}).stdout
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


@pytest.mark.parametrize("module", sorted(f"zoo_lite.learn.base.{path.stem}" for path in
                                           (Path(__file__).resolve().parent.parent / "zoo_lite/learn/base").glob("[a-z]*.py")))
def test_the_shared_learn_machinery_imports_no_ml_framework(module):
    assert not _imported_after(f"import {module}") & {"torch", "tensorflow", "keras"}


def test_the_pytorch_estimator_imports_no_tensorflow_or_keras():
    assert not _imported_after("import zoo_lite.learn.pytorch") & {"tensorflow", "keras"}


def test_the_keras_estimator_imports_no_torch():
    assert not _imported_after("import zoo_lite.learn.tf2") & {"torch"}


def test_a_worker_imports_keras_without_its_sklearn_and_matplotlib_hooks_and_can_still_import_them():
    from zoo_lite.learn.base.warm_up import WORKER_PROCESS_ENV

    in_driver = _imported_after("import zoo_lite.learn.tf2")
    assert {"sklearn", "matplotlib"} <= in_driver, "the driver's Keras keeps its optional hooks (both are installed here)"
    in_worker = _imported_after("import zoo_lite.learn.tf2, keras", env={WORKER_PROCESS_ENV: "1"})
    assert {"tensorflow", "keras"} <= in_worker and not in_worker & {"sklearn", "matplotlib"}
    later = _imported_after("import zoo_lite.learn.tf2, sklearn.base, matplotlib.pyplot", env={WORKER_PROCESS_ENV: "1"})
    assert {"sklearn", "matplotlib"} <= later


def test_shipping_user_code_imports_no_engine_until_used():
    assert not _imported_after("import zoo_lite.user_code") & set(HEAVY)


# -- the import graph inside zoo_lite: no cycles, no private names across modules (AST, no import) ----

def _load_import_graph() -> Any:
    """scripts/import_graph.py, the one implementation of the graph (shared with the diagram)."""
    path = Path(__file__).resolve().parent.parent / "scripts" / "import_graph.py"
    spec = importlib.util.spec_from_file_location("zoo_lite_import_graph", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # dataclasses and annotations look their module up
    spec.loader.exec_module(module)
    return module


_graph = _load_import_graph()
_package_sources, _import_edges, _find_cycle, _private_uses = (_graph.package_sources, _graph.import_edges, _graph.find_cycle,
                                                               _graph.private_uses)


def _synthetic(files: dict[str, str]) -> dict[str, tuple[str, str]]:
    return {module: (f"{module.replace('.', '/')}.py", textwrap.dedent(source)) for module, source in files.items()}


def test_the_cycle_finder_finds_module_and_function_level_cycles_but_not_type_checking_ones():
    cyclic = _synthetic({
        "zoo_lite": "",
        "zoo_lite.a": "from zoo_lite import b\n",
        "zoo_lite.b": "def f():\n    from zoo_lite.c import thing\n",
        "zoo_lite.c": "import zoo_lite.a as alias\n",
    })
    assert _find_cycle(_import_edges(cyclic)) == ["zoo_lite.a", "zoo_lite.b", "zoo_lite.c", "zoo_lite.a"]
    hinted_only = _synthetic({
        "zoo_lite": "",
        "zoo_lite.a": "from zoo_lite.b import B\n",
        "zoo_lite.b": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from zoo_lite.a import A\n",
    })
    assert _find_cycle(_import_edges(hinted_only)) is None


def test_the_private_name_finder_finds_private_imports_and_attributes_across_modules():
    sources = _synthetic({
        "zoo_lite": "",
        "zoo_lite.a": "_own = 1\nfrom zoo_lite.a import _own\nfrom zoo_lite.b import __version__, public\n",
        "zoo_lite.b": "def f():\n    from zoo_lite.a import _own\n",
        "zoo_lite.c": "import zoo_lite.a as a_module\nfrom zoo_lite import a\nx = a_module._own + a._own + a.public\n",
    })
    assert _private_uses(sources) == [
        "zoo_lite/b.py:2 zoo_lite.a._own", "zoo_lite/c.py:3 zoo_lite.a._own", "zoo_lite/c.py:3 zoo_lite.a._own",
    ]


def test_zoo_lite_has_no_import_cycle():
    cycle = _find_cycle(_import_edges(_package_sources()))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_module_uses_another_modules_private_names():
    uses = _private_uses(_package_sources())
    assert not uses, "private names used across modules:\n" + "\n".join(uses)


@pytest.mark.parametrize("package", ["zoo_lite", "zoo_lite.data", "zoo_lite.data.pandas", "zoo_lite.ray_on_spark"])
def test_every_public_name_of_a_package_is_importable_and_public(package):
    import importlib

    module = importlib.import_module(package)
    assert "__all__" in vars(module), f"{package} has no explicit __all__"
    private = [name for name in module.__all__ if name.startswith("_")]
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert not private and not missing, f"{package}.__all__: private {private}, not importable {missing}"


def test_ray_partitions_and_their_errors_are_importable_from_the_data_package():
    from zoo_lite.data import ObjectStoreFullError, PartitionLostError, PartitionReleasedError, RayXShards
    from zoo_lite.data.ray_xshards import RayXShards as defined_here
    from zoo_lite.errors import ZooLiteError

    assert RayXShards is defined_here
    assert all(issubclass(error, ZooLiteError) for error in (ObjectStoreFullError, PartitionLostError, PartitionReleasedError))
