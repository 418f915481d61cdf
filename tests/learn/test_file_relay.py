"""Callbacks' files land at the driver's paths: staged on a host that does not see them, copied by
the driver, and a resumed fit's appended log keeps its earlier lines. The cross-host case itself
runs in tests/cluster; here rank 0's host is told apart by the marker file, as there."""

from __future__ import annotations

import os
from pathlib import Path

from zoo_lite.learn.base.file_relay import FitFiles, StagedFiles, declared_output_paths


class CsvLog:
    """A callback of the user's own that appends a line per epoch to its file."""

    output_paths = ("filename", "folder")

    def __init__(self, filename: str, folder: str) -> None:
        self.filename, self.folder = filename, folder

    def epoch(self, number: int) -> None:
        with open(self.filename, "a") as file:
            file.write(f"epoch {number}\n")
        os.makedirs(self.folder, exist_ok=True)
        Path(self.folder, f"{number}.bin").write_bytes(bytes([number]))


def worker_copy(callback: CsvLog) -> CsvLog:
    """The copy a worker gets (pickled with the fit's plan)."""
    import pickle

    return pickle.loads(pickle.dumps(callback))


def test_a_host_that_sees_the_path_writes_there_and_nothing_is_staged(tmp_path: Path) -> None:
    files = FitFiles([CsvLog(str(tmp_path / "log.csv"), str(tmp_path / "parts"))], declared_output_paths)
    plan = files.plan()
    worker = [worker_copy(files.callbacks[0])]
    staged = StagedFiles.redirect(worker, plan)
    plan.remove_markers()
    assert not staged.active and worker[0].filename == str(tmp_path / "log.csv")
    assert os.listdir(tmp_path) == []   # the markers are gone


def test_another_host_writes_into_staging_and_the_driver_copies_each_change(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    files = FitFiles([CsvLog("logs/log.csv", "parts")], declared_output_paths)   # relative: the driver's
    plan = files.plan()
    plan.remove_markers()   # as on a host that does not see the driver's disk
    worker = [worker_copy(files.callbacks[0])]
    staged = StagedFiles.redirect(worker, plan)
    assert staged.active and worker[0].filename.startswith(staged.root) and not (tmp_path / "logs").exists()
    worker[0].epoch(1)
    files.copy(staged.changed_files())
    assert (tmp_path / "logs" / "log.csv").read_text() == "epoch 1\n" and (tmp_path / "parts" / "1.bin").read_bytes() == b"\x01"
    assert staged.changed_files() == []   # nothing changed since
    worker[0].epoch(2)
    files.copy(staged.changed_files())
    assert (tmp_path / "logs" / "log.csv").read_text() == "epoch 1\nepoch 2\n"
    assert sorted(p.name for p in (tmp_path / "parts").iterdir()) == ["1.bin", "2.bin"]
    root = staged.root
    staged.close()
    assert not os.path.exists(root)

    # the fit loses rank 0 and resumes on a new host: its log goes on from the driver's copy
    resumed_plan = files.plan(resumed=True)
    resumed_plan.remove_markers()
    resumed = [worker_copy(files.callbacks[0])]
    restaged = StagedFiles.redirect(resumed, resumed_plan)
    resumed[0].epoch(3)
    files.copy(restaged.changed_files())
    assert (tmp_path / "logs" / "log.csv").read_text() == "epoch 1\nepoch 2\nepoch 3\n"
    restaged.close()


def test_paths_of_other_file_systems_are_left_as_they_are() -> None:
    files = FitFiles([CsvLog("s3://bucket/log.csv", "hdfs://namenode/parts")], declared_output_paths)
    assert files.plan().paths == [] and not files.relaying


def test_rank_0_stages_in_the_folder_the_plan_names_when_its_host_has_it(tmp_path: Path) -> None:
    node_temp_dir = tmp_path / "zl-ray-node"
    node_temp_dir.mkdir()
    files = FitFiles([CsvLog(str(tmp_path / "log.csv"), str(tmp_path / "parts"))], declared_output_paths)
    plan = files.plan(staging_parent=str(node_temp_dir))
    plan.remove_markers()
    staged = StagedFiles.redirect([worker_copy(files.callbacks[0])], plan)
    assert Path(staged.root).parent == node_temp_dir
    staged.close()
    elsewhere = files.plan(staging_parent=str(tmp_path / "not-on-this-host"))
    elsewhere.remove_markers()
    fallback = StagedFiles.redirect([worker_copy(files.callbacks[0])], elsewhere)
    assert Path(fallback.root).parent != tmp_path / "not-on-this-host"
    fallback.close()
