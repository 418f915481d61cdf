"""A worker host's processes die mid-fit: only that host's Ray node is replaced (the head, with
the driver, and the other host's node live on), the fit resumes from its last epoch on the host
left, grows back once Spark gives the host a new executor, and ends with the uninterrupted run's
weights, no epoch twice. A host cut off, and an executor that comes back on a host with no Ray
node while data moves into Ray, are survived as well; a host cut off for a moment loses nothing."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from tests.cluster import jobs

pytestmark = pytest.mark.timeout(600)

EPOCHS = 3


def wait_for(path, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return path.exists()


def kill_every_process_of(cluster, host: str) -> list[str]:
    """SIGKILL whatever runs on ``host`` but its Spark worker daemon: the executor JVM, its Python
    workers, the Ray node and its watchdog, all at once, as when a host's processes are lost."""
    pids = [int(line.split()[0]) for line in cluster.processes(host)]
    victims = [full_command_line(pid) for pid in pids]   # cluster.processes() cuts them at 200 characters
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return victims


def what_the_logs_say(cluster, driver, lines: int = 120) -> str:
    """The driver's log and each host's Spark worker log, their last ``lines``: what a failed
    check about lost executors needs."""
    parts = [f"--- driver\n{driver.log_tail(lines)}"]
    for log in sorted(cluster.logs.glob("*-worker.log")):
        parts.append(f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:]))
    return "\n".join(parts)


def full_command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "?"


def wait_for_no_process(cluster, host: str, marker: str, timeout_s: float) -> list[str]:
    """Wait up to ``timeout_s`` for no process on ``host`` to have ``marker`` in its command line;
    the command lines of those left."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = [line for line in (full_command_line(int(entry.split()[0])) for entry in cluster.processes(host)) if marker in line]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


def remove_orphaned_pyspark_sockets(cluster, host: str) -> None:
    """Delete the socket files of ``/tmp`` on ``host`` that no process has bound any more, after
    checking that each is a PySpark daemon's (``/tmp/.<uuid>.sock``, made by an executor JVM, which
    removes it on a clean exit but cannot after SIGKILL): Spark's leftover of the kill, not
    zoo_lite's; the stop test then checks that nothing else is left."""
    bound = set(cluster.run(host, ["cat", "/proc/net/unix"]).stdout.split())
    orphaned = [name for name in cluster.files(host, "/tmp", ".*.sock") if f"/tmp/{name}" not in bound]
    assert all(re.fullmatch(r"\.[0-9a-f-]{36}\.sock", name) for name in orphaned), orphaned
    for name in orphaned:
        (cluster.hosts[host].path("/tmp") / name).unlink()


def test_a_fit_survives_a_worker_hosts_processes_dying_and_only_that_node_is_replaced(cluster_driver, laptop,
                                                                                       simulated_cluster) -> None:
    marker = simulated_cluster.shared / "paused-before-host2-dies"
    marker.unlink(missing_ok=True)
    expected = laptop.submit(jobs.small_torch_fit, epochs=EPOCHS)
    pending = cluster_driver.submit(jobs.small_torch_fit_through_a_pause, str(marker), EPOCHS)
    assert wait_for(marker, 240), f"no worker paused\n{cluster_driver.log_tail()}"
    victims = kill_every_process_of(simulated_cluster, "host2")
    got = pending.result(timeout_s=420)   # first: a failed check must not leave the fit running for the next test
    remove_orphaned_pyspark_sockets(simulated_cluster, "host2")
    assert any("CoarseGrainedExecutorBackend" in line for line in victims), victims
    assert any("zoo_lite.ray_on_spark.watchdog" in line for line in victims), victims
    assert got["same_ray"], "Ray on Spark was restarted instead of replacing the lost node"
    assert got["epochs"] == list(range(1, EPOCHS + 1)), "an epoch was trained twice, or skipped"
    for mine, theirs in zip(got["weights"], expected.result(timeout_s=120)):
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-5)
    [host1_node] = [node for node in got["nodes_before"] if node[0] == "host1"]
    assert host1_node in got["nodes_at_end"], f"host1's node was replaced too: {got}\n{what_the_logs_say(simulated_cluster, cluster_driver)}"
    assert [host for host, _ in got["nodes_at_end"]] == ["host1", "host2"], got
    assert set(got["nodes_at_end"]) != set(got["nodes_before"]), "host2's node was not replaced"
    # the killed node's temp dir (its sockets) went with the launch of its replacement on host2
    assert len(simulated_cluster.files("host2", "/tmp", "zl-ray-*")) == 1, simulated_cluster.files("host2", "/tmp", "zl-ray-*")


def test_a_fit_survives_a_worker_host_cut_off_and_the_host_rejoins_once_its_link_is_back(cluster_driver, laptop,
                                                                                         simulated_cluster) -> None:
    marker = simulated_cluster.shared / "paused-before-host2-is-cut-off"
    marker.unlink(missing_ok=True)
    expected = laptop.submit(jobs.small_torch_fit, epochs=EPOCHS)
    # the worker heartbeat (3 s) runs out before the node's (10 s): host2's worker is still the node's to report
    pending = cluster_driver.submit(jobs.small_torch_fit_through_a_pause, str(marker), EPOCHS, regrow_timeout_s=0,
                                    worker_heartbeat_timeout_s=3)
    assert wait_for(marker, 240), f"no worker paused\n{cluster_driver.log_tail()}"
    with simulated_cluster.link_cut("host2"):
        # nothing closes: the driver hears of it by the missing heartbeats (heartbeat_timeout_s=10 on this
        # cluster), and the fit ends on host1 while host2 is still cut off
        got = pending.result(timeout_s=300)
        # and host2's node ends itself, cut off as it is: its watchdog's heartbeats went unacknowledged as long
        watchdogs_left = wait_for_no_process(simulated_cluster, "host2", "zoo_lite.ray_on_spark.watchdog", timeout_s=60)
    assert not watchdogs_left, f"host2's node did not end while cut off: {watchdogs_left}"
    assert got["same_ray"] and got["epochs"] == list(range(1, EPOCHS + 1))
    for mine, theirs in zip(got["weights"], expected.result(timeout_s=120)):
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-5)
    assert [host for host, _ in got["nodes_after_fit"]] == ["host1"], got
    log = cluster_driver.log_tail(400)
    assert "its host was silent for" in log, log
    assert not re.search(r"its process \(pid \d+ on [^)]*\) sent no heartbeat", log), \
        f"host2's worker was reported as a silent process, not a lost node\n{log}"
    # idle workers were started on host1 while host2 was quiet, and the resumed group took them over
    assert re.search(r"resuming from epoch \d+ on 1 standby workers", log), log
    # back on the network, host2 ends its old node and executor, and Spark's new executor there gets a node
    back = cluster_driver.call(jobs.ray_nodes_once_back_to, 2, 240, timeout_s=300)
    assert [host for host, _ in back] == ["host1", "host2"], f"{back}\n{cluster_driver.log_tail(200)}"
    assert not set(back) & {node for node in got["nodes_before"] if node[0] == "host2"}, "host2's old node came back"


def test_a_host_quiet_for_less_than_the_heartbeat_timeout_loses_nothing_and_its_idle_spares_are_ended(
        cluster_driver, simulated_cluster) -> None:
    """host2 cut off for a few seconds, under the node heartbeat's 10 s: idle workers are started
    on host1 while host2 is quiet (ready should it be lost), and ended once it is heard again; the
    fit goes on with its group, as if nothing happened."""
    paused, go_on = simulated_cluster.shared / "paused-before-a-short-cut", simulated_cluster.shared / "short-cut-over"
    for marker in (paused, go_on):
        marker.unlink(missing_ok=True)
    nodes = cluster_driver.call(jobs.ray_nodes_once_back_to, 2, 240, timeout_s=300)
    assert [host for host, _ in nodes] == ["host1", "host2"], f"{nodes}\n{cluster_driver.log_tail()}"
    pending = cluster_driver.submit(jobs.small_torch_fit_through_a_pause, str(paused), EPOCHS, regrow_timeout_s=0,
                                    until=str(go_on))
    started, ended = "quiet for 3 s; starting idle workers", "idle workers started meanwhile are ended"
    try:
        assert wait_for(paused, 240), f"no worker paused\n{cluster_driver.log_tail()}"
        before = cluster_driver.log_tail(100_000)   # the module's earlier tests share the log
        with simulated_cluster.link_cut("host2"):
            assert wait_for_log(cluster_driver, started, before.count(started) + 1, 15), cluster_driver.log_tail()
        assert wait_for_log(cluster_driver, ended, before.count(ended) + 1, 15), cluster_driver.log_tail()
    finally:
        go_on.touch()
    got = pending.result(timeout_s=300)
    log = cluster_driver.log_tail(100_000)
    assert got["epochs"] == list(range(1, EPOCHS + 1)), got["epochs"]
    assert got["nodes_after_fit"] == got["nodes_before"], "a node was lost"
    assert "lost in epoch" not in log.split(started)[-1], log
    assert got["training_actors_left"] == 0, "idle workers outlived the fit"


def wait_for_log(agent, text: str, times: int, timeout_s: float) -> bool:
    """Whether the agent's log has ``text`` ``times`` times within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while agent.log_tail(100_000).count(text) < times and time.monotonic() < deadline:
        time.sleep(0.2)
    return agent.log_tail(100_000).count(text) >= times


def test_an_executor_that_joins_on_a_host_without_a_node_while_data_moves_into_ray_gets_one_and_no_data_is_lost(
        cluster_driver, simulated_cluster) -> None:
    """The race of a lost host: Spark gives host2 an executor again after zoo_lite looked for
    hosts without a Ray node, and the job that moves data into Ray sends a task there, which fails
    every attempt. Without the retry, to_ray (and the reload of a resumed fit) raised NoRayNodeError."""
    started, joined = simulated_cluster.shared / "to-ray-started", simulated_cluster.shared / "host2-executor-joined"
    for marker in (started, joined):
        marker.unlink(missing_ok=True)
    [worker_daemon] = [daemon.pid for daemon in simulated_cluster.daemons if daemon.host == "host2" and daemon.role == "worker"]
    os.kill(worker_daemon, signal.SIGSTOP)   # it cannot start host2's new executor before the job runs
    try:
        victims = kill_every_process_of(simulated_cluster, "host2")
        assert any("CoarseGrainedExecutorBackend" in line for line in victims), victims
        pending = cluster_driver.submit(jobs.to_ray_while_an_executor_joins, str(started), str(joined), 180)
        assert wait_for(started, 120), f"the job did not start\n{cluster_driver.log_tail()}"
    finally:
        os.kill(worker_daemon, signal.SIGCONT)
    got = pending.result(timeout_s=300)
    remove_orphaned_pyspark_sockets(simulated_cluster, "host2")
    assert len(got["spark_hosts_before"]) == 1, got
    assert joined.exists(), "Spark never gave host2 an executor again"
    assert got["values"] == list(range(20)), "partitions were lost or put twice"
    assert len(got["ray_hosts"]) == 2 and "host2" in got["ray_hosts"], got
    assert "a Spark executor joined on a host without a Ray node while data moved into Ray" in cluster_driver.log_tail(400)
