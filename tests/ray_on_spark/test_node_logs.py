"""The rotation of the Ray nodes' log folder, on real files (no cluster)."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from zoo_lite.ray_on_spark.node_launch import KEPT_NODE_LOGS, node_log_path, node_name_for, rotate_node_logs


def node_log(log_dir: Path, temp_root: Path, age_s: float, running: bool) -> Path:
    """The log of a node started as ``start_node`` starts one, last written ``age_s`` ago; the
    node's temp dir stays while it runs (its watchdog deletes it once every process ended)."""
    temp_dir = tempfile.mkdtemp(prefix="zl-ray-", dir=temp_root)
    path = Path(node_log_path(str(log_dir), node_name_for("10.0.0.1", 4242, temp_dir), temp_dir))
    path.write_text("ray start output\n")
    stamp = time.time() - age_s
    os.utime(path, (stamp, stamp))
    if not running:
        os.rmdir(temp_dir)
    return path


def test_the_newest_logs_and_those_of_running_nodes_are_kept(tmp_path) -> None:
    log_dir, temp_root = tmp_path / "zoo_lite_ray_logs", tmp_path / "tmp"
    log_dir.mkdir()
    temp_root.mkdir()
    ended = [node_log(log_dir, temp_root, age_s=100 + 10 * i, running=False) for i in range(8)]   # newest first
    old_but_running = node_log(log_dir, temp_root, age_s=10_000, running=True)
    newest_running = node_log(log_dir, temp_root, age_s=1, running=True)
    not_logs = [log_dir / "notes.txt", log_dir / "other.log", log_dir / "zl-ray-dir.log"]
    not_logs[0].write_text("mine")
    not_logs[1].write_text("not a node's")
    not_logs[2].mkdir()
    for path in not_logs[:2]:
        os.utime(path, (0, 0))

    deleted = rotate_node_logs(str(log_dir), keep=5, temp_root=str(temp_root))

    # the newest 5 logs are the running node's and 4 ended ones; older ended ones go, the old running one stays
    assert sorted(deleted) == sorted(str(path) for path in ended[4:])
    assert set(log_dir.iterdir()) == {newest_running, *ended[:4], old_but_running, *not_logs}
    assert rotate_node_logs(str(log_dir), keep=5, temp_root=str(temp_root)) == []

    # once the old node has ended, its log goes too
    os.rmdir(temp_root / old_but_running.name[old_but_running.name.rfind("zl-ray-"):-len(".log")])
    assert rotate_node_logs(str(log_dir), keep=5, temp_root=str(temp_root)) == [str(old_but_running)]


def test_start_node_keeps_a_few_logs_and_a_missing_folder_is_no_error(tmp_path) -> None:
    assert KEPT_NODE_LOGS == 5
    assert rotate_node_logs(str(tmp_path / "missing")) == []
    temp_root = tmp_path / "tmp"
    temp_root.mkdir()
    logs = [node_log(tmp_path, temp_root, age_s=i, running=False) for i in range(7)]
    assert sorted(rotate_node_logs(str(tmp_path), temp_root=str(temp_root))) == sorted(map(str, logs[5:]))
