"""The launcher that unpacks ``penv_archive`` once per host (zoo_lite.host_unpack), run as Spark
runs it: from an executor's working folder (``<work>/<application>/<executor>``) holding the
fetched archive and the launcher, with the arguments of a Python. ``tar`` is counted by a script
put first on ``PATH`` that runs the real one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.environments import make_venv, make_wheel, pip_install
from zoo_lite.env_packing import pack_environment
from zoo_lite.host_unpack import (ARCHIVE_LINK_PREFIX, HOST_ENVS_FOLDER, STALE_AFTER_S, environment_key,
                                  host_unpacked_conf, link_archive, write_launcher)

pytestmark = pytest.mark.timeout(180)

PRINT_PREFIX = "import sys, tiny; print(sys.prefix)"


@pytest.fixture(scope="module")
def tiny_archive(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tiny")
    venv = make_venv(folder / "tiny_env")
    pip_install(venv, str(make_wheel(folder, "tiny")))
    return pack_environment(venv, cache_dir=folder / "cache", progress=False)


@pytest.fixture
def counted_tar(tmp_path) -> tuple[dict[str, str], Path]:
    """An environment whose ``tar`` appends a line to a file, then runs the real ``tar``."""
    shims, count = tmp_path / "shims", tmp_path / "tar-runs"
    shims.mkdir()
    (shims / "tar").write_text(f"#!/bin/sh\necho run >> {count}\nexec {shutil.which('tar')} \"$@\"\n")
    (shims / "tar").chmod(0o755)
    return {**os.environ, "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"}, count


def executor_folder(work: Path, application: str, executor: str, archive: Path, launcher: Path) -> Path:
    """An executor's working folder as Spark fills it: the fetched files (the archive under the
    name it is shipped as), the launcher executable."""
    folder = work / application / executor
    folder.mkdir(parents=True)
    shutil.copy(archive, folder / (ARCHIVE_LINK_PREFIX + environment_key(str(archive))))
    shutil.copy(launcher, folder)
    return folder


def run_launcher(folder: Path, launcher: Path, env: dict[str, str], code: str = PRINT_PREFIX) -> str:
    done = subprocess.run([f"./{launcher.name}", "-c", code], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def runs(count: Path) -> int:
    return len(count.read_text().splitlines()) if count.exists() else 0


def test_the_first_executor_on_a_host_unpacks_and_later_applications_reuse_it(tiny_archive, tmp_path, counted_tar):
    env, count = counted_tar
    launcher = write_launcher(str(tiny_archive), tmp_path / "launchers")
    work = tmp_path / "work"
    first = run_launcher(executor_folder(work, "app-1", "0", tiny_archive, launcher), launcher, env)
    assert Path(first).resolve() == (work / HOST_ENVS_FOLDER / environment_key(str(tiny_archive))).resolve()
    second = run_launcher(executor_folder(work, "app-2", "3", tiny_archive, launcher), launcher, env)
    assert Path(second).resolve() == Path(first).resolve() and runs(count) == 1


def test_executors_starting_at_once_unpack_once_and_all_run_the_environment(tiny_archive, tmp_path, counted_tar):
    env, count = counted_tar
    launcher = write_launcher(str(tiny_archive), tmp_path / "launchers")
    folders = [executor_folder(tmp_path / "work", "app-1", str(index), tiny_archive, launcher) for index in range(4)]
    with ThreadPoolExecutor(4) as pool:
        prefixes = list(pool.map(lambda folder: Path(run_launcher(folder, launcher, env)).resolve(), folders))
    assert len(set(prefixes)) == 1 and runs(count) == 1


def test_a_half_unpacked_environment_is_unpacked_again(tiny_archive, tmp_path, counted_tar):
    env, count = counted_tar
    launcher = write_launcher(str(tiny_archive), tmp_path / "launchers")
    half = tmp_path / "work" / HOST_ENVS_FOLDER / environment_key(str(tiny_archive))
    (half / "bin").mkdir(parents=True)   # an unpack killed half-way: no marker written
    run_launcher(executor_folder(tmp_path / "work", "app-1", "0", tiny_archive, launcher), launcher, env)
    assert runs(count) == 1


def test_a_changed_archive_gets_a_folder_of_its_own(tiny_archive, tmp_path):
    copy = tmp_path / tiny_archive.name
    shutil.copy(tiny_archive, copy)
    before = environment_key(str(copy))
    with open(copy, "ab") as file:
        file.write(b"\0" * 512)   # tar's end-of-archive padding: still the same files
    assert environment_key(str(copy)) != before


def test_a_launcher_that_cannot_unpack_fails_with_tars_message_and_leaves_no_environment(tmp_path):
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(b"not an archive")
    launcher = write_launcher(str(broken), tmp_path / "launchers")
    folder = executor_folder(tmp_path / "work", "app-1", "0", broken, launcher)
    done = subprocess.run([f"./{launcher.name}", "-c", "pass"], cwd=folder, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "tar" in done.stderr, done.stderr
    key = environment_key(str(broken))
    assert not (tmp_path / "work" / HOST_ENVS_FOLDER / key / ".zoo_lite-unpacked").exists()


def test_the_conf_ships_the_archive_under_a_name_spark_leaves_packed_and_runs_the_launcher(tiny_archive, tmp_path):
    conf = host_unpacked_conf(str(tiny_archive), tmp_path / "launchers")
    link, launcher = (Path(path) for path in conf["spark.files"].split(","))
    assert conf["spark.pyspark.python"] == f"./{launcher.name}" and launcher.parent == link.parent == tmp_path / "launchers"
    # Spark untars a fetched file named *.tar.gz, *.tgz or *.tar: in the driver's folder and each executor's
    assert not link.name.endswith((".tar.gz", ".tgz", ".tar")) and link.samefile(tiny_archive)
    assert os.access(launcher, os.X_OK) and launcher.name.endswith(environment_key(str(tiny_archive)))
    assert sys.executable not in launcher.read_text() and link.name in launcher.read_text()


def test_the_shipped_file_of_an_archive_that_is_gone_is_removed_an_hour_later(tiny_archive, tmp_path, monkeypatch):
    older, newer = tmp_path / "env-1.tar.gz", tmp_path / "env-2.tar.gz"
    shutil.copy(tiny_archive, older)
    shutil.copy(tiny_archive, newer)
    old_link = link_archive(str(older), tmp_path / "launchers")
    older.unlink()   # as zoo_lite's cache removes an environment's older archives
    link_archive(str(newer), tmp_path / "launchers")
    assert old_link.is_file(), "removed at once: an application started before may still serve it"
    an_hour_later = time.time() + STALE_AFTER_S + 1
    monkeypatch.setattr(time, "time", lambda: an_hour_later)   # a file's change time cannot be set back
    new_link = link_archive(str(newer), tmp_path / "launchers")
    assert new_link.samefile(newer) and not old_link.exists()
