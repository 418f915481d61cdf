"""The watchdog and the driver's lease server, on real processes that stand in for a Ray node
(a command that starts a child and prints Ray's start-up line), so these run in seconds."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from tests.ray_on_spark.helpers import describe, wait_until_gone
from zoo_lite.ray_on_spark.lease import LeaseServer
from zoo_lite.ray_on_spark.watchdog import WatchdogSpec

pytestmark = pytest.mark.timeout(120)

# a "node": one child that keeps running, one grandchild whose parent exits (an orphan that only a
# subreaper still sees), then the start-up line
_NODE = """
import subprocess, sys, time
subprocess.Popen(["sleep", "600"])
subprocess.Popen([sys.executable, "-c", "import subprocess; subprocess.Popen(['sleep', '601'])"]).wait()
print("Ray runtime started.", flush=True)
time.sleep(600)
"""


def start_watchdog(lease_host: str, lease_port: int, secret: str, owner: psutil.Process) -> tuple[subprocess.Popen, WatchdogSpec]:
    temp_dir = tempfile.mkdtemp(prefix="zl-test-")
    spec = WatchdogSpec(
        command=[sys.executable, "-c", _NODE], env={}, log_path=os.path.normpath(os.path.join(temp_dir, "..", Path(temp_dir).name + ".log")),
        temp_dir=temp_dir, node_name="test-node", lease_host=lease_host, lease_port=lease_port, lease_secret=secret,
        executor_pid=owner.pid, executor_create_time=owner.create_time(), kill_deadline_s=10,
    )
    spec_path = os.path.join(temp_dir, "spec.json")
    spec.dump(spec_path)
    watchdog = subprocess.Popen([sys.executable, "-m", "zoo_lite.ray_on_spark.watchdog", spec_path], start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if os.path.exists(spec.log_path) and "Ray runtime started." in Path(spec.log_path).read_text():
            return watchdog, spec
        assert watchdog.poll() is None, Path(spec.log_path).read_text() if os.path.exists(spec.log_path) else "no log"
        time.sleep(0.05)
    raise AssertionError("the stand-in node did not start")


def run_watchdog_to_its_end(tmp_path: Path, lease_port: int, secret: str, owner: psutil.Process, command: list[str],
                            **spec_options: float) -> tuple[subprocess.CompletedProcess, Path]:
    """Run a watchdog that is expected to end on its own; return its result and its log."""
    spec = WatchdogSpec(command=command, env={}, log_path=str(tmp_path / "node.log"), temp_dir=str(tmp_path / "t"),
                        node_name="n", lease_host="127.0.0.1", lease_port=lease_port, lease_secret=secret,
                        executor_pid=owner.pid, executor_create_time=owner.create_time(), **spec_options)
    spec.dump(str(tmp_path / "spec.json"))
    result = subprocess.run([sys.executable, "-m", "zoo_lite.ray_on_spark.watchdog", str(tmp_path / "spec.json")], timeout=60)
    return result, tmp_path / "node.log"


def node_tree(watchdog: subprocess.Popen) -> list[psutil.Process]:
    process = psutil.Process(watchdog.pid)
    deadline = time.monotonic() + 10
    tree = process.children(recursive=True)
    while len(tree) < 3 and time.monotonic() < deadline:  # node, sleep 600, orphaned sleep 601
        time.sleep(0.05)
        tree = process.children(recursive=True)
    return [process, *tree]


@pytest.fixture
def owner():
    """A process standing in for the executor JVM."""
    process = subprocess.Popen(["sleep", "600"])
    yield psutil.Process(process.pid)
    process.kill()
    process.wait()


def test_stop_ends_the_whole_tree_including_orphans_and_confirms(owner) -> None:
    lease = LeaseServer.start("127.0.0.1")
    watchdog, spec = start_watchdog("127.0.0.1", lease.port, lease.secret, owner)
    tree = node_tree(watchdog)
    assert len(tree) >= 4 and any("601" in " ".join(p.cmdline()) for p in tree)
    assert lease.node_names() == ["test-node"]
    started = time.monotonic()
    assert lease.stop_all(timeout_s=30) == []
    assert time.monotonic() - started < 5
    assert not wait_until_gone(tree, 10), describe(tree)
    assert not os.path.exists(spec.temp_dir) and not os.path.exists(spec.log_path)
    assert watchdog.wait(10) == 0


def test_a_dropped_driver_connection_ends_the_node_and_keeps_the_log(owner) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    watchdog, spec = start_watchdog("127.0.0.1", server.getsockname()[1], "any", owner)
    connection, _ = server.accept()
    tree = node_tree(watchdog)
    connection.close()  # what the kernel does when the driver process dies
    server.close()
    assert not wait_until_gone(tree, 15), describe(tree)
    assert "the driver's connection closed" in Path(spec.log_path).read_text()
    os.unlink(spec.log_path)


def test_a_dead_executor_ends_the_node(owner) -> None:
    lease = LeaseServer.start("127.0.0.1")
    watchdog, spec = start_watchdog("127.0.0.1", lease.port, lease.secret, owner)
    tree = node_tree(watchdog)
    owner.kill()
    assert not wait_until_gone(tree, 15), describe(tree)
    assert f"the executor process {owner.pid} exited" in Path(spec.log_path).read_text()
    assert lease.stop_all(timeout_s=1) in ([], ["test-node"])
    os.unlink(spec.log_path)


def test_a_wrong_secret_is_refused_and_the_node_ends(owner, tmp_path) -> None:
    lease = LeaseServer.start("127.0.0.1")
    result, log = run_watchdog_to_its_end(tmp_path, lease.port, "not-the-secret", owner, [sys.executable, "-c", _NODE])
    assert result.returncode == 0 and lease.node_names() == []
    assert "the driver's connection closed" in log.read_text()
    assert lease.stop_all(timeout_s=1) == []


def test_a_node_that_fails_keeps_the_tails_of_ray_process_logs_and_the_start_error_shows_them(owner, tmp_path) -> None:
    """A ``ray start`` that fails after its raylet wrote why: the watchdog copies the tails of the
    raylet's and the GCS' logs into the node log before it deletes the temp dir, and the start
    error's log tail shows them below the last lines of ``ray start``."""
    from zoo_lite.ray_on_spark.node_launch import _log_tail

    failing_start = f"""
import os, sys
logs = os.path.join({str(tmp_path / "t")!r}, "session_latest", "logs")
os.makedirs(logs)
open(os.path.join(logs, "raylet.err"), "w").write("\\n".join(f"raylet line {{i}}" for i in range(30)))
open(os.path.join(logs, "gcs_server.out"), "w").write("gcs: bind failed: Address already in use\\n")
print("The current node timed out during startup.", flush=True)
sys.exit(1)
"""
    lease = LeaseServer.start("127.0.0.1")
    result, log = run_watchdog_to_its_end(tmp_path, lease.port, lease.secret, owner, [sys.executable, "-c", failing_start])
    assert result.returncode == 0 and not (tmp_path / "t").exists()
    shown = _log_tail(str(log))
    assert shown.index("timed out during startup") < shown.index("ray start exited with code 1") < shown.index("--- gcs_server.out")
    assert "gcs: bind failed: Address already in use" in shown
    assert "raylet line 29" in shown and "raylet line 17" not in shown   # a bounded tail of each log
    lease.stop_all(timeout_s=1)


def test_no_driver_means_no_node(owner, tmp_path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    result, log = run_watchdog_to_its_end(tmp_path, closed_port, "s", owner, ["sleep", "600"], connect_timeout_s=2)
    assert result.returncode == 2
    assert "cannot reach the driver" in log.read_text()


def test_stop_others_ends_only_the_nodes_not_kept(owner) -> None:
    lease = LeaseServer.start("127.0.0.1")
    kept, kept_spec = start_watchdog("127.0.0.1", lease.port, lease.secret, owner)
    deadline = time.monotonic() + 10
    while lease.node_names() != ["test-node"] and time.monotonic() < deadline:
        time.sleep(0.05)
    stray = subprocess.Popen([sys.executable, "-c", "import socket, json, time; s = socket.create_connection(('127.0.0.1', %d)); "
                              "s.sendall(json.dumps({'secret': '%s', 'node_name': 'stray', 'pid': 0}).encode() + b'\\n'); "
                              "print(s.recv(64), flush=True)" % (lease.port, lease.secret)], stdout=subprocess.PIPE, text=True)
    while "stray" not in lease.node_names() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lease.stop_others({"test-node"}, timeout_s=5) == ["stray"]
    assert "stop" in stray.communicate(timeout=10)[0]
    assert kept.poll() is None and lease.node_names() == ["test-node"]
    assert lease.stop_all(timeout_s=30) == []
    assert kept.wait(15) == 0


def _poll_until(condition, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_silent_host_is_lost_within_the_heartbeat_timeout_stays_lost_and_is_not_waited_for(owner) -> None:
    lease = LeaseServer.start("127.0.0.1", silence_timeout_s=3)
    watchdog, spec = start_watchdog("127.0.0.1", lease.port, lease.secret, owner)
    tree = node_tree(watchdog)
    assert _poll_until(lambda: lease.node_names() == ["test-node"], 10)
    # a watchdog that sends its heartbeats is not lost, however long its node runs, nor quiet
    assert not _poll_until(lambda: lease.lost_nodes() != [] or lease.quiet_nodes(1.5) != [], 4.5)

    os.kill(watchdog.pid, signal.SIGSTOP)   # the host stalls: nothing closes, nothing is sent
    stalled = time.monotonic()
    try:
        # quiet before it is lost (a silent worker there is the node's to report), and still once lost
        assert _poll_until(lambda: lease.quiet_nodes(1.5) == ["test-node"], 3)
        assert lease.lost_nodes() == []
        assert _poll_until(lambda: lease.lost_nodes() == ["test-node"], 10)
        assert lease.quiet_nodes(1.5) == ["test-node"]
        detected_s = time.monotonic() - stalled
        assert 2.5 <= detected_s <= 5.0, detected_s   # the 3 s bound, checked once a second
        reason = lease.lost_node_reasons()["test-node"]
        assert "silent for" in reason and "heartbeat_timeout_s=3" in reason
    finally:
        os.kill(watchdog.pid, signal.SIGCONT)
    # heard again, the node stays lost, and its watchdog ends it: the driver closed the lease
    assert not wait_until_gone(tree, 15), describe(tree)
    assert "the driver's connection closed" in Path(spec.log_path).read_text()
    assert lease.lost_nodes() == ["test-node"]
    started = time.monotonic()
    assert lease.stop_all(timeout_s=30) == ["test-node"]
    assert time.monotonic() - started < 2
    os.unlink(spec.log_path)


def test_a_stopped_executor_loses_its_node_within_the_heartbeat_timeout(owner) -> None:
    lease = LeaseServer.start("127.0.0.1", silence_timeout_s=3)
    watchdog, spec = start_watchdog("127.0.0.1", lease.port, lease.secret, owner)
    tree = node_tree(watchdog)
    assert _poll_until(lambda: lease.node_names() == ["test-node"], 10)
    try:
        owner.send_signal(signal.SIGSTOP)   # the executor stalls; the watchdog and its node run on
        stopped = time.monotonic()
        assert _poll_until(lambda: lease.lost_nodes() == ["test-node"], 10)
        assert 2.5 <= time.monotonic() - stopped <= 6.0, time.monotonic() - stopped
        reason = lease.lost_node_reasons()["test-node"]
        assert "its executor JVM was stopped for" in reason and "heartbeat_timeout_s=3" in reason, reason
        assert lease.silent_nodes() == ["test-node"]   # so its executor is dropped from Spark
        assert not wait_until_gone(tree, 15), describe(tree)   # the driver closed the lease: the node ended
    finally:
        owner.send_signal(signal.SIGCONT)
    assert lease.stop_all(timeout_s=30) == ["test-node"]
    os.unlink(spec.log_path)


def test_a_stop_with_a_stalled_host_returns_without_waiting_for_it(owner) -> None:
    lease = LeaseServer.start("127.0.0.1", silence_timeout_s=3)
    watchdog, spec = start_watchdog("127.0.0.1", lease.port, lease.secret, owner)
    tree = node_tree(watchdog)
    assert _poll_until(lambda: lease.node_names() == ["test-node"], 10)
    os.kill(watchdog.pid, signal.SIGSTOP)
    try:
        assert _poll_until(lambda: lease.lost_nodes() == ["test-node"], 10)
        started = time.monotonic()
        assert lease.stop_all(timeout_s=30) == ["test-node"]
        assert time.monotonic() - started < 2
    finally:
        os.kill(watchdog.pid, signal.SIGCONT)
    assert not wait_until_gone(tree, 15), describe(tree)
    os.unlink(spec.log_path)


def test_the_temp_dirs_of_nodes_whose_watchdog_was_killed_are_removed_and_no_other(tmp_path) -> None:
    from zoo_lite.ray_on_spark.node_launch import remove_orphaned_temp_dirs

    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    me = psutil.Process()
    dirs = {name: tmp_path / f"zl-ray-{name}" for name in ("killed", "running", "launching", "garbled")}
    for folder in dirs.values():
        (folder / "session_1" / "sockets").mkdir(parents=True)
    (dirs["killed"] / "watchdog.pid").write_text(f"{ended.pid} {time.time() - 5}")
    (dirs["running"] / "watchdog.pid").write_text(f"{me.pid} {me.create_time()}")
    (dirs["garbled"] / "watchdog.pid").write_text("not a pid")
    other = tmp_path / "not-a-node"
    other.mkdir()
    assert remove_orphaned_temp_dirs(str(tmp_path)) == [str(dirs["killed"])]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-a-node", "zl-ray-garbled", "zl-ray-launching", "zl-ray-running"]
    # a pid reused by a later process is not the watchdog: its start time tells them apart
    (dirs["running"] / "watchdog.pid").write_text(f"{me.pid} {me.create_time() - 100}")
    assert remove_orphaned_temp_dirs(str(tmp_path)) == [str(dirs["running"])]
