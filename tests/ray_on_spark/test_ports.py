"""No port is picked by binding and closing: every Ray process binds its own, so parallel starts
on one host never collide (a benchmark once failed with the dashboard and the Ray Client server
both given port 35777)."""

from __future__ import annotations

import re
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

from zoo_lite.ray_on_spark.lease import LeaseServer
from zoo_lite.ray_on_spark.node_launch import NodePlan, ray_environment, ray_start_command, start_node, this_process

_PARALLEL_HEADS = 4


def _plan(lease: LeaseServer, **options) -> NodePlan:
    return NodePlan(lease.host, lease.port, lease.secret, "token-of-the-port-tests", cpus_per_node=0,
                    start_timeout_s=120, **options)


def _port_options(command: list[str]) -> dict[str, str]:
    return dict(re.fullmatch(r"--([a-z-]*port)=(.*)", part).groups() for part in command
                if re.fullmatch(r"--[a-z-]*port=.*", part))


def test_every_port_of_a_node_is_left_to_the_process_that_binds_it() -> None:
    plan = NodePlan("127.0.0.1", 1, "s", "t", cpus_per_node=1, start_timeout_s=60)
    head = ray_start_command(plan, "127.0.0.1", "n0", "/tmp/x", head_address=None)
    worker = ray_start_command(plan, "127.0.0.1", "n1", "/tmp/y", head_address="127.0.0.1:6390")
    for command in (head, worker):
        ports = _port_options(command)
        assert ports and set(ports.values()) == {"0"}, ports
    assert _port_options(head)["port"] == "0"
    assert "dashboard-port" not in _port_options(head)   # the dashboard tries 8265 and up by itself


def test_a_port_in_extra_params_wins_and_keeps_the_client_server_it_names() -> None:
    plan = NodePlan("127.0.0.1", 1, "s", "t", cpus_per_node=1, start_timeout_s=60,
                    extra_params={"dashboard_agent_listen_port": 52400, "ray_client_server_port": 10011})
    command = ray_start_command(plan, "127.0.0.1", "n0", "/tmp/x", head_address=None)
    # click takes the last of a repeated option
    assert command.index("--dashboard-agent-listen-port=52400") > command.index("--dashboard-agent-listen-port=0")
    assert "RAY_START_HOOK" not in ray_environment(plan)
    assert ray_environment(NodePlan("127.0.0.1", 1, "s", "t", 1, 60))["RAY_START_HOOK"].endswith(".start_without_client_server")


def _tree(pid: int) -> list[psutil.Process]:
    try:
        watchdog = psutil.Process(pid)
        return [watchdog, *watchdog.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_heads_started_in_parallel_on_one_host_all_run_on_ports_of_their_own() -> None:
    lease = LeaseServer.start("127.0.0.1")
    plan = _plan(lease)
    nodes, trees = [], {}
    try:
        with ThreadPoolExecutor(_PARALLEL_HEADS) as pool:
            nodes = list(pool.map(lambda rank: start_node(plan, rank, "127.0.0.1", None, owner=this_process()),
                                  range(_PARALLEL_HEADS)))
        addresses = [node.gcs_address for node in nodes]
        assert len(set(addresses)) == _PARALLEL_HEADS, addresses
        for address in addresses:
            host, port = address.rsplit(":", 1)
            with socket.create_connection((host, int(port)), timeout=5):
                pass   # each GCS listens where its node says
        trees = {node.node_name: _tree(node.watchdog_pid) for node in nodes}
        command_lines = [" ".join(process.cmdline()) for tree in trees.values() for process in tree if process.is_running()]
        assert not [line for line in command_lines if "ray.util.client.server" in line]
        listening = {connection.laddr.port for tree in trees.values() for process in tree
                     for connection in process.net_connections("tcp") if connection.status == psutil.CONN_LISTEN}
        assert 10001 not in listening
    finally:
        unconfirmed = lease.stop_all(timeout_s=30)
    assert unconfirmed == []
    # a watchdog confirms once its node's processes are gone, then exits itself
    _, alive = psutil.wait_procs([process for tree in trees.values() for process in tree if _alive(process)], timeout=10)
    assert alive == []
    assert not [node.temp_dir for node in nodes if Path(node.temp_dir).exists()]


def test_a_head_port_given_in_extra_params_is_the_gcs_address() -> None:
    with socket.socket() as probe:   # a port for the user to name (the test's own pick)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    lease = LeaseServer.start("127.0.0.1")
    try:
        node = start_node(_plan(lease, extra_params={"port": port}), 0, "127.0.0.1", None, owner=this_process())
        assert node.gcs_address == f"127.0.0.1:{port}"
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    finally:
        assert lease.stop_all(timeout_s=30) == []
