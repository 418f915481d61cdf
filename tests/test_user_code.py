"""The user's own modules travel by value, so executors and workers need not have the project."""

from __future__ import annotations

import importlib
import subprocess
import sys
import threading
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


def test_the_user_modules_follow_imports_and_removals_between_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan of sys.modules is reused while nothing was imported or removed; an import, a
    removal, or a module put back under the name of the last one is seen by the next call."""
    monkeypatch.syspath_prepend(str(tmp_path))
    names = ["my_first_project_module", "my_second_project_module"]
    for name in names:
        (tmp_path / f"{name}.py").write_text(MODULE)
    before = user_modules()
    first = importlib.import_module(names[0])
    try:
        assert first in user_modules() and first not in before
        second = importlib.import_module(names[1])
        assert {first, second} <= set(user_modules())
        del sys.modules[names[0]]
        assert first not in user_modules() and second in user_modules()
        del sys.modules[names[1]]
        again = importlib.import_module(names[1])   # same length and last name, another module
        found = user_modules()
        assert again in found and second not in found
    finally:
        for name in names:
            sys.modules.pop(name, None)
    assert not {first, second, again} & set(user_modules())


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


def test_blocks_overlapping_on_two_threads_keep_the_registration_until_the_last_ends(project_module) -> None:
    # a fit's calls and the rows loading beside it open blocks on two threads (CI failed on this)
    both_inside, first_ended = threading.Barrier(2, timeout=30), threading.Event()
    seen_after_first_ended: list[bool] = []

    def first() -> None:
        with user_code_by_value():
            both_inside.wait()
        first_ended.set()

    def second() -> None:
        with user_code_by_value():
            both_inside.wait()
            assert first_ended.wait(timeout=30)
            seen_after_first_ended.append("my_project_model" in cloudpickle.list_registry_pickle_by_value())

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    errors: list[BaseException] = []
    threading.excepthook = lambda args: errors.append(args.exc_value)
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        threading.excepthook = threading.__excepthook__
    assert not errors and seen_after_first_ended == [True]
    assert "my_project_model" not in cloudpickle.list_registry_pickle_by_value()


def test_a_module_the_user_registered_stays_registered_after_the_block(project_module) -> None:
    cloudpickle.register_pickle_by_value(project_module)
    try:
        with user_code_by_value():
            pass
        assert "my_project_model" in cloudpickle.list_registry_pickle_by_value()
    finally:
        cloudpickle.unregister_pickle_by_value(project_module)


TARGET_PACKAGE = '''
import threading

LOCK = threading.Lock()   # module state that cannot be pickled, as tensorflow-datasets holds


def double(value):
    with LOCK:
        return 2 * value
'''


def _install_like_pip_target(folder: Path, name: str, editable: bool = False) -> None:
    """What ``pip install --target folder`` leaves for a one-package distribution (``-e`` when
    ``editable``): the package and its ``.dist-info``."""
    (folder / name).mkdir(parents=True)
    (folder / name / "__init__.py").write_text(TARGET_PACKAGE)
    info = folder / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "top_level.txt").write_text(f"{name}\n")
    (info / "RECORD").write_text(f"{name}/__init__.py,,\n{info.name}/METADATA,,\n")
    if editable:
        (info / "direct_url.json").write_text('{"url": "file:///src", "dir_info": {"editable": true}}')


@pytest.fixture
def package_on_pythonpath(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A distribution installed with ``pip install --target`` into a folder on the search path."""
    _install_like_pip_target(tmp_path, "target_installed_pkg")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module("target_installed_pkg")
    sys.modules.pop("target_installed_pkg", None)


def test_a_distribution_installed_into_a_folder_on_the_path_is_not_user_code(package_on_pythonpath) -> None:
    assert package_on_pythonpath not in user_modules()
    with user_code_by_value():   # pickled by reference: its lock does not travel
        payload = cloudpickle.dumps(package_on_pythonpath.double)
    assert b"target_installed_pkg" in payload and len(payload) < 200


def test_an_editable_install_is_the_users_project_and_goes_by_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install_like_pip_target(tmp_path, "editable_project_pkg", editable=True)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("editable_project_pkg")
    try:
        assert module in user_modules()
    finally:
        sys.modules.pop("editable_project_pkg", None)


def test_a_shard_function_of_a_module_only_the_driver_has_runs_on_the_executors(sc, project_module) -> None:
    """The executors' Python workers do not have the driver's search path (as on a cluster)."""
    import numpy as np

    from zoo_lite.data import XShards

    shards = XShards.partition(np.arange(4), num_shards=2)
    scaler = project_module.Scaler()
    assert shards.transform_shard(lambda shard: [scaler(int(v)) for v in shard]).collect() == [["0", "3"], ["6", "9"]]
    assert shards.map_partitions(lambda shard: scaler(int(shard.sum()))).collect() == ["3", "15"]


def test_a_function_that_cannot_travel_is_refused_when_it_is_given(sc) -> None:
    import threading

    import numpy as np

    from zoo_lite.data import XShards
    from zoo_lite.errors import InvalidArgumentError

    lock = threading.Lock()
    with pytest.raises(InvalidArgumentError, match=r"func=<function .*<lambda>.*> cannot be sent to the executors: "
                                                   r"pickling it failed with TypeError: cannot pickle '_thread.lock'"):
        XShards.partition(np.arange(4), num_shards=2).transform_shard(lambda shard: lock.locked())
