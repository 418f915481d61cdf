"""Packing a Python environment (zoo_lite.env_packing) on tiny venvs made here: the archive
unpacks into a working environment elsewhere, is cached by the environment's fingerprint, is
packed once by two processes at once, and carries editable installs as files.

The venvs have no pip (``--without-pip``): distributions are installed into them by this
environment's pip (``pip --python``) from wheels written here, without a network."""

from __future__ import annotations

import fcntl
import logging
import os
import py_compile
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import pytest

from tests.environments import BASE_PYTHON, ROOT, make_venv, make_wheel, pip_install
from zoo_lite.env_packing import archive_path, environment_fingerprint, pack_environment, resolve_penv_archive
from zoo_lite.errors import EnvironmentPackingError, InvalidArgumentError

THIS_SITE_PACKAGES = sysconfig.get_paths()["purelib"]
LOGGER = "zoo_lite.env_packing"

pytestmark = pytest.mark.timeout(120)


def unpack(archive: Path, folder: Path) -> Path:
    with tarfile.open(archive) as packed:
        packed.extractall(folder, filter="fully_trusted")   # our own archive; bin/python links outside it
    return folder


def run_python(env: Path, code: str) -> str:
    # from the environment's own folder: a Python given -c imports from its working folder first
    done = subprocess.run([str(env / "bin" / "python"), "-c", code], capture_output=True, text=True, timeout=60, cwd=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture(scope="module")
def pristine_tiny_venv(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("pristine")
    venv = make_venv(folder / "tiny_env")
    pip_install(venv, str(make_wheel(folder, "tiny")))
    run_python(venv, "import tiny")
    return venv


@pytest.fixture
def tiny_venv(pristine_tiny_venv, tmp_path) -> Path:
    """A venv with one tiny distribution, ``tiny``, whose byte-code caches exist (it was imported);
    a copy for each test, which may change it (a venv names no path of its own but in scripts)."""
    return Path(shutil.copytree(pristine_tiny_venv, tmp_path / "tiny_env", symlinks=True))


def test_a_packed_venv_unpacks_elsewhere_into_a_python_that_imports_its_packages(tiny_venv, tmp_path, caplog, capfd):
    caplog.set_level(logging.INFO, logger=LOGGER)
    archive = pack_environment(tiny_venv, cache_dir=tmp_path / "cache", progress=True)
    assert archive.parent == tmp_path / "cache" and archive.name.endswith(".tar.gz")
    with tarfile.open(archive) as packed:
        members = packed.getnames()
    assert any(name.endswith("site-packages/tiny/__init__.py") for name in members), members
    unpacked = unpack(archive, tmp_path / "elsewhere")
    assert run_python(unpacked, "import tiny; print(tiny.VALUE, tiny.__file__)") == \
        f"tiny 1.0 {unpacked}/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages/tiny/__init__.py"
    [packed_line] = [record.getMessage() for record in caplog.records if record.getMessage().startswith("packed ")]
    assert f"into {archive} (" in packed_line and " KB) in " in packed_line and packed_line.endswith(" s"), packed_line
    out = capfd.readouterr().out
    assert "\r" not in out and "Completed" not in out, out   # no progress bar where stdout is no terminal


def test_where_unpacked_a_package_imports_from_its_packed_byte_code_without_compiling(tiny_venv, tmp_path):
    archive = pack_environment(tiny_venv, cache_dir=tmp_path / "cache", progress=False)
    with tarfile.open(archive) as packed:
        cached = [name for name in packed.getnames() if "/tiny/__pycache__/__init__." in name]
    assert cached, "tiny's byte code is not in the archive"
    unpacked = unpack(archive, tmp_path / "elsewhere")
    # -v names where each module's code object came from: its cached byte code, or its source
    done = subprocess.run([str(unpacked / "bin" / "python"), "-v", "-c", "import tiny"], capture_output=True, text=True,
                          timeout=60, cwd=unpacked, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0, done.stderr
    [loaded] = [line for line in done.stderr.splitlines() if line.startswith("# code object from") and "/tiny/" in line]
    assert "/site-packages/tiny/__pycache__/__init__." in loaded and str(unpacked) in loaded, loaded


def test_sparks_jars_and_c_headers_stay_out_of_the_archive_and_the_packages_python_code_goes_in(tiny_venv, tmp_path):
    site = tiny_venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    for name in ("pyspark/__init__.py", "pyspark/jars/spark-core.jar", "torch/include/ATen.h", "torch/__init__.py",
                 "tensorflow/include/tf.h", "pyarrow/include/arrow.h", "mylib/include/kept.h"):
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text("x")
    with tarfile.open(pack_environment(tiny_venv, cache_dir=tmp_path / "cache", progress=False)) as packed:
        members = {name.split("site-packages/", 1)[1] for name in packed.getnames() if "site-packages/" in name}
    assert {"pyspark/__init__.py", "torch/__init__.py", "mylib/include/kept.h", "tiny/__init__.py"} <= members, members
    assert not [name for name in members if "/jars/" in name or name.split("/")[0] != "mylib" and "/include/" in name], members


def test_an_unchanged_environment_is_packed_once_and_its_archive_reused(tiny_venv, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    archive = pack_environment(tiny_venv, cache_dir=tmp_path / "cache", progress=False)
    before = archive.stat()
    caplog.clear()
    again = pack_environment(tiny_venv, cache_dir=tmp_path / "cache", progress=False)
    after = again.stat()
    assert again == archive and (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    messages = [record.getMessage() for record in caplog.records]
    assert not [m for m in messages if m.startswith(("packing ", "packed "))], messages
    assert [m for m in messages if m.startswith(f"reused {archive} (") and " KB), packed earlier from " in m], messages


def test_installing_a_distribution_changes_the_fingerprint_and_the_environment_is_repacked(tiny_venv, tmp_path):
    first = pack_environment(tiny_venv, cache_dir=tmp_path / "cache", progress=False)
    fingerprint = environment_fingerprint(tiny_venv)
    pip_install(tiny_venv, str(make_wheel(tmp_path, "other", "2.0")))
    assert environment_fingerprint(tiny_venv) != fingerprint
    second = pack_environment(tiny_venv, cache_dir=tmp_path / "cache", progress=False)
    assert second != first and first.exists()   # the one before is kept for a running application
    assert run_python(unpack(second, tmp_path / "unpacked"), "import other; print(other.VALUE)") == "other 2.0"


def test_two_processes_packing_at_once_pack_one_archive_and_both_return_it(tiny_venv, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    archive = archive_path(tiny_venv, cache_dir=cache)
    code = ("import logging, sys; logging.basicConfig(level=logging.INFO, stream=sys.stderr, format='%(message)s')\n"
            "from zoo_lite.env_packing import pack_environment\n"
            "print(pack_environment(sys.argv[1], cache_dir=sys.argv[2], progress=False))\n")
    with open(archive.with_name(archive.name.replace(".tar.gz", ".lock")), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)   # both start while the lock is held, so both find it taken
        processes = [subprocess.Popen([sys.executable, "-c", code, str(tiny_venv), str(cache)], cwd=ROOT, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=str(ROOT)))
                     for _ in range(2)]
        for process in processes:   # each waits for the lock before it is let go
            lines = iter(process.stderr.readline, "")
            assert any(line.startswith("waiting for another process packing") for line in lines), process.wait()
        fcntl.flock(lock, fcntl.LOCK_UN)
    results = [process.communicate(timeout=60) for process in processes]
    assert [process.returncode for process in processes] == [0, 0], results
    assert [out.strip() for out, _ in results] == [str(archive)] * 2
    said = [[line.split(" ", 1)[0] for line in err.splitlines() if line.startswith(("packed ", "reused "))]
            for _, err in results]
    assert sorted(said) == [["packed"], ["reused"]], results   # one packed, and the other reused its archive
    assert sorted(path.name for path in cache.iterdir()) == sorted([archive.name, archive.name.replace(".tar.gz", ".lock")])


def test_waiting_longer_than_lock_timeout_s_for_another_packer_fails_naming_its_lock(tiny_venv, tmp_path):
    archive = archive_path(tiny_venv, cache_dir=tmp_path)
    lock_file = archive.with_name(archive.name.replace(".tar.gz", ".lock"))
    with open(lock_file, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with pytest.raises(EnvironmentPackingError, match=rf"another process has been packing prefix='{tiny_venv}' for "
                                                          rf"longer than lock_timeout_s=0.3 \(it holds {lock_file}\)"):
            pack_environment(tiny_venv, cache_dir=tmp_path, progress=False, lock_timeout_s=0.3)
    assert not archive.exists()


def copy_of_zoo_lite(folder: Path) -> Path:
    """What an editable install of zoo_lite needs of the checkout."""
    folder.mkdir()
    for name in ("setup.py", "README.md", "zoo_lite_startup.py", "zoo_lite_startup.pth"):
        shutil.copy2(ROOT / name, folder / name)
    shutil.copytree(ROOT / "zoo_lite", folder / "zoo_lite", ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def test_an_editable_install_is_packed_as_its_files_and_imports_without_its_checkout(tmp_path):
    venv = make_venv(tmp_path / "dev_env")
    checkout = copy_of_zoo_lite(tmp_path / "checkout")
    # the venv has no setuptools: the build (no isolation, no index) borrows this environment's
    build_tools = tmp_path / "build_tools"
    build_tools.mkdir()
    for path in Path(THIS_SITE_PACKAGES).glob("*"):   # its commands are entry points of its dist-info
        if path.name.split("-")[0] in ("setuptools", "_distutils_hack", "pkg_resources"):
            (build_tools / path.name).symlink_to(path)
    pip_install(venv, "--no-build-isolation", "-e", str(checkout), env=dict(os.environ, PYTHONPATH=str(build_tools)))
    site_packages = next((venv / "lib").glob("python3*")) / "site-packages"
    assert list(site_packages.glob("__editable__*finder.py")) and (site_packages / "zoo_lite_startup.pth").exists()

    fingerprint = environment_fingerprint(venv)
    py_compile.compile(str(checkout / "zoo_lite" / "errors.py"), doraise=True)   # a working copy's byte code
    assert environment_fingerprint(venv) == fingerprint
    archive = pack_environment(venv, cache_dir=tmp_path / "cache", progress=False)
    checkout.rename(tmp_path / "moved_away")   # the hosts cannot see the checkout

    with tarfile.open(archive) as packed:
        members = packed.getnames()
    assert not [name for name in members if "__editable__" in name], members
    assert not [name for name in members if "/zoo_lite/__pycache__/" in name], members
    unpacked = unpack(archive, tmp_path / "host")
    found = run_python(unpacked, "import importlib.util, sys, zoo_lite_startup\n"
                                 "print(zoo_lite_startup.__file__)\n"
                                 "print(importlib.util.find_spec('zoo_lite.env_packing').origin)\n"
                                 "print(any(type(f).__name__ == 'BeforeFirstImport' for f in sys.meta_path))\n")
    site = site_packages.relative_to(venv)
    assert found.splitlines() == [f"{unpacked}/{site}/zoo_lite_startup.py", f"{unpacked}/{site}/zoo_lite/env_packing.py",
                                  "True"]   # True: zoo_lite_startup.pth ran at the start and installed the hooks

    (tmp_path / "moved_away").rename(checkout)
    edited = checkout / "zoo_lite" / "errors.py"
    os.utime(edited, ns=(edited.stat().st_atime_ns, edited.stat().st_mtime_ns + 1_000_000_000))
    assert environment_fingerprint(venv) != fingerprint   # an edited source file is a new state to pack


def test_a_folder_with_conda_meta_is_packed_by_conda_pack(tiny_venv, tmp_path):
    # a conda environment whose files no conda package owns; conda writes the history of each one
    (tiny_venv / "conda-meta").mkdir()
    (tiny_venv / "conda-meta" / "history").write_text("==> 2026-01-01 00:00:00 <==\n")
    archive = pack_environment(tiny_venv, cache_dir=tmp_path / "cache", progress=False)
    with tarfile.open(archive) as packed:
        members = packed.getnames()
    assert "bin/conda-unpack" in members, members   # conda-pack's, for fixing prefixes on the host
    assert run_python(unpack(archive, tmp_path / "unpacked"), "import tiny; print(tiny.VALUE)") == "tiny 1.0"


def test_auto_packs_the_running_pythons_environment(tiny_venv, tmp_path):
    # the tiny venv's Python runs the packing, finding zoo_lite and the packing library after its own packages
    code = (f"import sys; sys.path[1:1] = [{str(ROOT)!r}]; sys.path.append({THIS_SITE_PACKAGES!r})\n"
            "from zoo_lite.env_packing import resolve_penv_archive\n"
            f"print(resolve_penv_archive('auto', cache_dir={str(tmp_path / 'cache')!r}))\n")
    archive = run_python(tiny_venv, code)
    assert archive == str(archive_path(tiny_venv, cache_dir=tmp_path / "cache")) and Path(archive).is_file()


def test_without_the_packing_library_the_error_says_what_to_install(tiny_venv, tmp_path):
    code = (f"import sys; sys.path[1:1] = [{str(ROOT)!r}]\n"
            "from zoo_lite.env_packing import pack_environment\n"
            f"pack_environment(sys.prefix, cache_dir={str(tmp_path)!r})\n")
    done = subprocess.run([str(tiny_venv / "bin" / "python"), "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 1
    assert (f"zoo_lite.errors.EnvironmentPackingError: packing the venv at prefix='{tiny_venv}' needs venv-pack2, "
            "which is not installed here (No module named 'venv_pack'); install it with: pip install venv-pack2==0.9.2"
            ) in done.stderr, done.stderr


def test_resolve_penv_archive_returns_an_archive_or_uri_as_it_is_and_packs_an_environment_folder(tiny_venv, tmp_path,
                                                                                                  monkeypatch):
    archive = tmp_path / "env.tgz"
    archive.write_bytes(b"")
    assert resolve_penv_archive(str(archive)) == str(archive)
    assert resolve_penv_archive(f"file://{archive}") == f"file://{archive}"
    assert resolve_penv_archive("hdfs:///envs/env.zip") == "hdfs:///envs/env.zip"
    monkeypatch.setenv("ZOO_LITE_CACHE_DIR", str(tmp_path / "default_cache"))
    packed = resolve_penv_archive(str(tiny_venv), progress=False)
    assert Path(packed).parent == tmp_path / "default_cache" and Path(packed).is_file()


@pytest.mark.parametrize("value, complaint", [
    ("{folder}", r" is neither a venv nor a conda environment \(a folder with neither pyvenv.cfg nor conda-meta: {folder}\); "
                 r"give the folder of one \(python -m venv makes a venv\), or an archive of one"),
    ("{folder}/env.tar.gz", r": no such file on the driver's host \({folder}/env.tar.gz\); pack the environment first"),
    ("{folder}/env.whl", r" must name an archive of a Python environment \(\.tar\.gz, \.tgz, \.tar, \.zip, \.jar\)"),
    ("s3a://bucket/env", r" must name an archive of a Python environment"),
])
def test_resolve_penv_archive_refuses_what_is_no_archive_or_environment_naming_it(tmp_path, value, complaint):
    value = value.format(folder=tmp_path)
    expected = rf"^penv_archive='{re.escape(value)}'{complaint.format(folder=re.escape(str(tmp_path)))}"
    with pytest.raises(InvalidArgumentError, match=expected):
        resolve_penv_archive(value)


def test_packing_a_folder_that_is_no_environment_is_refused_naming_prefix(tmp_path):
    with pytest.raises(InvalidArgumentError, match=rf"^prefix='{tmp_path}/missing' is neither a venv nor a conda "
                                                   rf"environment \(no such folder: {tmp_path}/missing\)"):
        pack_environment(tmp_path / "missing", cache_dir=tmp_path)


def test_auto_from_a_python_outside_any_environment_is_refused_naming_penv_archive(tmp_path):
    code = (f"import sys; sys.path[1:1] = [{str(ROOT)!r}]\n"
            "from zoo_lite.env_packing import resolve_penv_archive\n"
            f"resolve_penv_archive('auto', cache_dir={str(tmp_path)!r})\n")
    done = subprocess.run([BASE_PYTHON, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    base_prefix = str(Path(BASE_PYTHON).parents[1])   # the interpreter's own installation: no venv, no conda
    assert (f"zoo_lite.errors.InvalidArgumentError: penv_archive='auto' packs this Python's environment, but "
            f"sys.prefix={base_prefix!r}, which is neither a venv nor a conda environment") in done.stderr, done.stderr
