"""The user's own modules travel by value, so executors and workers need not have the project."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark import cloudpickle

from zoo_lite.user_code import user_code_by_value, user_modules

MODULE = '''
import json

SCALE = 3


class Scaler:
    def __call__(self, value):
        return json.dumps(value * SCALE)
'''


@pytest.fixture
def project_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A module importable on this driver only, like a project file next to the user's script."""
    (tmp_path / "my_project_model.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("my_project_model")
    yield module
    sys.modules.pop("my_project_model", None)


def _load_elsewhere(payload: bytes) -> subprocess.CompletedProcess:
    """Unpickle ``payload`` and call it in a fresh interpreter that cannot import the project."""
    code = "import pickle, sys; print(pickle.loads(sys.stdin.buffer.read())(2))"
    return subprocess.run([sys.executable, "-c", code], input=payload, capture_output=True, cwd="/")


def test_project_modules_are_user_code_and_installed_ones_are_not(project_module) -> None:
    found = user_modules()
    assert project_module in found
    assert not [m for m in found if m.__name__.split(".")[0] in {"json", "numpy", "pyspark", "zoo_lite", "pytest"}]


def test_an_object_of_a_project_class_loads_where_the_project_is_missing(project_module) -> None:
    by_reference = _load_elsewhere(cloudpickle.dumps(project_module.Scaler()))
    assert by_reference.returncode != 0 and b"No module named 'my_project_model'" in by_reference.stderr
    with user_code_by_value():
        payload = cloudpickle.dumps(project_module.Scaler())
    by_value = _load_elsewhere(payload)
    assert by_value.returncode == 0, by_value.stderr.decode()
    assert by_value.stdout.decode().strip() == "6"


def test_the_registration_ends_with_the_block(project_module) -> None:
    with user_code_by_value():
        assert "my_project_model" in cloudpickle.list_registry_pickle_by_value()
    assert "my_project_model" not in cloudpickle.list_registry_pickle_by_value()
