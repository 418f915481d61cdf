"""Ray on Spark on real Spark (local, local-cluster, loopback standalone) and real Ray."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import numpy as np
import psutil
import pytest

from tests.conftest import ray_watchdogs_since
from tests.ray_on_spark.helpers import alive, assert_nodes_match_executors, describe, ray_processes, run_on_every_node, stop_and_check_clean, wait_until_gone
from zoo_lite import OrcaContext, init_orca_context, stop_orca_context
from zoo_lite.data import XShards
from zoo_lite.data.convert import Columns
from zoo_lite.data.ray_xshards import ObjectStoreFullError
from zoo_lite.errors import ClusterStartError, ContextError, InvalidArgumentError, RayNodeStartError
from zoo_lite.learn.base.data_inputs import rows_in_ray
from zoo_lite.ray_on_spark.node_launch import NodePlan, ray_start_command

pytestmark = pytest.mark.timeout(600)


def test_local_mode_starts_one_node_with_the_local_cores_and_stops_it_all() -> None:
    import ray

    stop_orca_context()
    init_orca_context(cluster_mode="local", cores=2, init_ray_on_spark=True)
    ray_context = OrcaContext.get_ray_context()
    assert ray.is_initialized()
    assert_nodes_match_executors(expected_nodes=1, cpus_per_node=2)
    assert ray.get(ray.remote(lambda: 41 + 1).remote(), timeout=60) == 42
    stop_and_check_clean(ray_context)
    assert not ray.is_initialized()


def test_a_driver_on_a_host_without_executor_nodes_joins_through_a_zero_cpu_node() -> None:
    import ray

    stop_orca_context()
    # executors register as 127.0.0.1; a driver host of "localhost" is a different address to zoo_lite
    init_orca_context(cluster_mode="local-cluster", num_nodes=2, cores=1, memory="1g", init_ray_on_spark=True,
                      conf={"spark.driver.host": "localhost", "spark.driver.bindAddress": "127.0.0.1"})
    ray_context = OrcaContext.get_ray_context()
    assert ray_context.driver_node is not None and ray_context.driver_node["num_cpus"] == 0
    alive_nodes = {node["NodeName"]: node["Resources"].get("CPU", 0) for node in ray.nodes() if node["Alive"]}
    assert alive_nodes[ray_context.driver_node["node_name"]] == 0 and len(alive_nodes) == 3
    assert len(run_on_every_node()) == 2
    stop_and_check_clean(ray_context)


@pytest.mark.cluster
def test_loopback_standalone_with_two_workers_gets_one_node_per_executor() -> None:
    stop_orca_context()
    init_orca_context(cluster_mode="standalone", num_nodes=2, cores=1, memory="1g", init_ray_on_spark=True)
    ray_context = OrcaContext.get_ray_context()
    assert_nodes_match_executors(expected_nodes=2, cpus_per_node=1)
    stop_and_check_clean(ray_context)


#: every cycle's Ray processes must be gone; a few cycles find a leak as ten would, in less of the suite's time
INIT_STOP_CYCLES = 4


def test_repeated_init_stop_cycles_leave_nothing() -> None:
    stop_orca_context()
    every_process: list[psutil.Process] = []
    for _ in range(INIT_STOP_CYCLES):
        init_orca_context(cluster_mode="local", cores=1, init_ray_on_spark=True)
        every_process += ray_processes(OrcaContext.get_ray_context())
        stop_orca_context()
    left = wait_until_gone(every_process, timeout_s=30)
    assert not left, f"Ray processes left after {INIT_STOP_CYCLES} init/stop cycles: {describe(left)}"


def test_ray_started_on_demand_uses_the_context_options() -> None:
    import ray

    from zoo_lite.context import ray_context_started_on_demand

    stop_orca_context()
    init_orca_context(cluster_mode="local", cores=2, ray_node_cpu_cores=1, env={"ZOO_LITE_PROBE": "from-env"},
                      system_config={"object_timeout_milliseconds": 150})
    assert OrcaContext.get_ray_context() is None
    ray_context = ray_context_started_on_demand()
    assert OrcaContext.get_ray_context() is ray_context and ray_context.nodes[0]["num_cpus"] == 1
    assert ray_context_started_on_demand() is ray_context
    assert ray.get(ray.remote(lambda: __import__("os").environ.get("ZOO_LITE_PROBE")).remote(), timeout=60) == "from-env"
    stop_and_check_clean(ray_context)


def test_token_authentication_stays_on_and_the_dashboard_is_off() -> None:
    stop_orca_context()
    init_orca_context(cluster_mode="local", cores=1, init_ray_on_spark=True)
    ray_context = OrcaContext.get_ray_context()
    try:
        processes = ray_processes(ray_context)
        commands = [" ".join(p.cmdline()) for p in alive(processes)]
        assert not any("dashboard.py" in command and "--minimal" not in command and "include" in command for command in commands)
        raylet = next(command for command in commands if "/raylet " in command or command.endswith("/raylet"))
        assert raylet  # the node runs
        # a client without the token is refused
        probe = textwrap.dedent(f"""
            import os, ray
            os.environ["RAY_AUTH_MODE"] = "disabled"
            os.environ.pop("RAY_AUTH_TOKEN", None)
            try:
                ray.init(address="{ray_context.address}", _temp_dir="{ray_context.nodes[0]['temp_dir']}")
                print("CONNECTED")
            except Exception as error:
                print("REFUSED", type(error).__name__)
        """)
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
        env["RAY_AUTH_TOKEN_PATH"] = "/nonexistent/token"
        env["RAY_NUM_REDIS_GET_RETRIES"] = "2"   # Ray's driver retries a refused connection once a second, 20 times
        result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=180, env=env)
        assert "REFUSED" in result.stdout, result.stdout + result.stderr[-2000:]
    finally:
        stop_orca_context()


def test_ray_start_command_keeps_the_dashboard_off_unless_asked() -> None:
    plan = NodePlan("127.0.0.1", 1, "secret", "token", cpus_per_node=2, start_timeout_s=60)
    head = ray_start_command(plan, "127.0.0.1", "n0", "/tmp/x", head_address=None)
    assert "--include-dashboard=false" in head and "--no-monitor" in head
    worker = ray_start_command(plan, "127.0.0.1", "n1", "/tmp/y", head_address="127.0.0.1:6390")
    assert "--address=127.0.0.1:6390" in worker and "--head" not in worker
    with_ui = ray_start_command(NodePlan("127.0.0.1", 1, "s", "t", 1, 60, include_dashboard=True), "127.0.0.1", "n", "/t", None)
    assert "--include-dashboard=true" in with_ui and "--dashboard-host=127.0.0.1" in with_ui


# -- bad input and failures ---------------------------------------------------------------------


def test_more_ray_nodes_than_executors_is_refused_and_spark_is_stopped() -> None:
    stop_orca_context()
    with pytest.raises(InvalidArgumentError, match=r"num_ray_nodes=3 is more than the 2 Spark executor"):
        init_orca_context(cluster_mode="local-cluster", num_nodes=2, cores=1, memory="1g", init_ray_on_spark=True, num_ray_nodes=3)
    assert not OrcaContext.is_active()


def test_several_nodes_in_local_mode_are_refused() -> None:
    stop_orca_context()
    with pytest.raises(InvalidArgumentError, match=r"num_ray_nodes=2 with cluster_mode='local'"):
        init_orca_context(cluster_mode="local", init_ray_on_spark=True, num_ray_nodes=2)


def test_bad_option_values_are_refused_before_anything_starts() -> None:
    stop_orca_context()
    with pytest.raises(InvalidArgumentError, match=r"ray_start_timeout_s=0 must be a positive number"):
        init_orca_context(init_ray_on_spark=True, ray_start_timeout_s=0)
    with pytest.raises(InvalidArgumentError, match=r"heartbeat_timeout_s=1 must be a number of seconds of at least 3"):
        init_orca_context(init_ray_on_spark=True, heartbeat_timeout_s=1)
    with pytest.raises(InvalidArgumentError, match=r"object_store_memory='10m' is below Ray's minimum"):
        init_orca_context(cores=1, init_ray_on_spark=True, object_store_memory="10m")
    assert not OrcaContext.is_active()


def test_a_fixed_port_in_use_is_named_before_ray_starts_and_leaves_nothing() -> None:
    stop_orca_context()
    test_started = time.time()
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        started = time.monotonic()
        # a raylet that cannot bind hangs until ray_start_timeout_s: the probe before it tells at once
        with pytest.raises(ClusterStartError, match=rf"extra_params=\{{'node_manager_port': {port}\}} fixes a port that is not free"):
            init_orca_context(cluster_mode="local-cluster", num_nodes=2, cores=1, memory="1g", init_ray_on_spark=True,
                              extra_params={"node_manager_port": port}, ray_start_timeout_s=120)
        assert time.monotonic() - started < 60   # well inside ray_start_timeout_s
    assert not OrcaContext.is_active()
    assert not wait_until_gone(ray_watchdogs_since(test_started), timeout_s=30)


def test_a_node_not_running_within_ray_start_timeout_s_is_ended_with_the_ray_output() -> None:
    stop_orca_context()
    test_started = time.time()
    with pytest.raises(ClusterStartError, match=r"(?s)did not (start|bind its GCS port) within 1 s \(ray_start_timeout_s\); last lines of `ray start`:"):
        init_orca_context(cluster_mode="local", cores=1, init_ray_on_spark=True, ray_start_timeout_s=1)
    assert not OrcaContext.is_active()
    assert not wait_until_gone(ray_watchdogs_since(test_started), timeout_s=30)


def test_an_unknown_ray_start_option_is_reported_with_its_output_after_one_more_attempt(caplog) -> None:
    """``ray start`` exiting by itself is retried once (a node that misses Ray's 30 s registration
    wait on a loaded machine starts the next time); a setting that fails twice reports both."""
    stop_orca_context()
    with pytest.raises(RayNodeStartError, match=r"(?si)Ray failed to start twice.*first attempt:.*no such option.*second attempt:.*no such option"):
        init_orca_context(cluster_mode="local", cores=1, init_ray_on_spark=True, extra_params={"no_such_option": 1})
    assert not OrcaContext.is_active()
    assert "starting Ray once more" in caplog.text


def test_dynamic_allocation_gets_a_clear_error() -> None:
    stop_orca_context()
    with pytest.raises(ContextError, match=r"spark.dynamicAllocation.enabled=true"):
        init_orca_context(cluster_mode="local-cluster", num_nodes=2, cores=1, memory="1g", init_ray_on_spark=True,
                          conf={"spark.dynamicAllocation.enabled": "true", "spark.dynamicAllocation.shuffleTracking.enabled": "true"})
    assert not OrcaContext.is_active()


def test_barrier_mode_off_is_refused_from_the_settings_ray_was_started_with() -> None:
    stop_orca_context()
    OrcaContext.barrier_mode = False
    try:
        with pytest.raises(ContextError, match=r"OrcaContext.barrier_mode=False"):
            init_orca_context(cluster_mode="local-cluster", num_nodes=1, cores=1, memory="1g", init_ray_on_spark=True)
    finally:
        OrcaContext.barrier_mode = True
    assert not OrcaContext.is_active()


def test_an_already_connected_ray_is_refused() -> None:
    import ray

    stop_orca_context()
    ray.init(num_cpus=1, include_dashboard=False)
    try:
        with pytest.raises(ContextError, match=r"already connected to Ray"):
            init_orca_context(cores=1, init_ray_on_spark=True)
    finally:
        ray.shutdown()
    assert not OrcaContext.is_active()


def test_a_partition_larger_than_the_object_store_names_object_store_memory() -> None:
    stop_orca_context()
    init_orca_context(cluster_mode="local", cores=1, init_ray_on_spark=True, object_store_memory="80m")
    try:
        shards = XShards.partition({"x": np.zeros((4, 5_000_000))}, num_shards=1)  # 160 MB in one partition
        with pytest.raises(ObjectStoreFullError, match=r"partition 0 holds 153 MiB, more than the 80 MiB object store.*object_store_memory"):
            shards.to_ray()
        with pytest.raises(ObjectStoreFullError, match=r"piece 0 of partition 0 holds 153 MiB, more than the 80 MiB"):
            rows_in_ray(shards, Columns.of(), need_labels=False)   # a fit's feed, read in pieces
        assert len(XShards.partition({"x": np.zeros((4, 100))}, num_shards=2).to_ray()) == 4  # still usable
    finally:
        stop_orca_context()


# -- crashes --------------------------------------------------------------------------------------

_DRIVER = textwrap.dedent("""
    import json, sys, time
    import psutil
    from zoo_lite import OrcaContext, init_orca_context
    init_orca_context(cluster_mode=sys.argv[1], num_nodes=2, cores=1, memory="1g", init_ray_on_spark=True)
    pids = []
    for node in OrcaContext.get_ray_context().nodes:
        watchdog = psutil.Process(node["watchdog_pid"])
        pids += [[p.pid, p.create_time()] for p in [watchdog, *watchdog.children(recursive=True)]]
    print("PIDS " + json.dumps(pids), flush=True)
    time.sleep(600)
""")


def test_a_driver_killed_with_sigkill_leaves_no_ray_process() -> None:
    driver = subprocess.Popen([sys.executable, "-c", _DRIVER, "local-cluster"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        deadline = time.monotonic() + 240
        line = ""
        while not line.startswith("PIDS ") and time.monotonic() < deadline:
            line = driver.stdout.readline()
            if not line and driver.poll() is not None:
                break
        assert line.startswith("PIDS "), "the driver did not start Ray"
        processes = []
        for pid, started in json.loads(line[5:]):
            try:
                process = psutil.Process(pid)
                if abs(process.create_time() - started) < 1:
                    processes.append(process)
            except psutil.Error:
                pass
        assert len(processes) >= 4  # two watchdogs, each with ray start, raylet, ...
        driver.send_signal(signal.SIGKILL)
        driver.wait(30)
        left = wait_until_gone(processes, timeout_s=30)
        assert not left, f"Ray processes outlived the SIGKILLed driver: {describe(left)}"
    finally:
        if driver.poll() is None:
            driver.kill()


def test_an_executor_lost_during_start_up_fails_or_recovers_within_the_bound_and_leaves_no_stray_node() -> None:
    """Kill a non-head executor as soon as its node's watchdog appears. Spark 4 does not retry a
    failed barrier result stage, so zoo_lite fails with ClusterStartError well within its bound (if a
    Spark did retry, zoo_lite would keep one node per executor and end the failed attempt's nodes);
    either way no Ray process of the failed attempt survives."""
    import threading

    stop_orca_context()
    started = time.time()
    killed: dict[str, psutil.Process] = {}

    def kill_first_worker_executor() -> None:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not killed:
            for process in ray_watchdogs_since(started):
                with open(process.info["cmdline"][-1]) as spec_file:
                    spec = json.load(spec_file)
                if "--head" not in spec["command"]:
                    executor = psutil.Process(spec["executor_pid"])
                    killed["watchdog"] = process
                    executor.kill()
                    return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_first_worker_executor, daemon=True)
    killer.start()
    try:
        init_orca_context(cluster_mode="local-cluster", num_nodes=2, cores=1, memory="1g", init_ray_on_spark=True,
                          ray_start_timeout_s=60)
    except ClusterStartError as error:
        assert "a launching task or its executor was lost" in str(error)
        assert time.time() - started < 60 * 2 + 30 + 120
    else:
        import ray

        ray_context = OrcaContext.get_ray_context()
        alive_nodes = [node for node in ray.nodes() if node["Alive"] and node["Resources"].get("CPU", 0) > 0]
        assert len(alive_nodes) == len(ray_context.nodes) == 2, alive_nodes
    finally:
        killer.join(5)
        stop_orca_context()
    assert "watchdog" in killed, "the test did not get to kill an executor during the start-up"
    assert not wait_until_gone([killed["watchdog"]], timeout_s=30)
    assert not wait_until_gone(ray_watchdogs_since(started), timeout_s=30)
    assert not OrcaContext.is_active()
